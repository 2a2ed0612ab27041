# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_node
short_description: Drain, resume or read Slurm nodes (one, or a list in one call), keeping other people's drain reasons
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Runs C(scontrol) where it reaches slurmctld (the controller or the Slurm head node, usually with C(delegate_to)).
  - Drains set by this module carry O(reason_prefix). A drain someone else set is never cleared without O(force);
    draining a node a person already drained keeps their reason and appends the gpuops part; resuming removes only
    the gpuops part and leaves the node drained while another reason remains.
  - A node is drained (RV(drained)) when it is IDLE+DRAIN or DOWN+DRAIN with no job and nothing COMPLETING;
    before that it is draining (RV(draining)).
  - With O(names) (a list) one call isolates every node of a batch - per node, in order, read, drain (or down)
    and requeue; then O(keep_drained), the O(requeue_after) grace period, O(cancel_unrequeueable), O(wait)
    (one deadline for all) and O(verify) - and returns one entry per node in RV(node_results). A node Slurm
    refuses fails only its own entry; the task fails (after doing everything it could) when any entry failed
    or could not be read back, with each node's error in its message.
  - Names (O(name), O(names) and the values of O(slurm_names)) must fully match a host name
    (C([A-Za-z0-9][A-Za-z0-9._-]*)) - a host list, a space or an C(=) is refused before anything runs.
extends_documentation_fragment: [gpuops.cluster.common.attributes_action]
options:
  name:
    description: Slurm node name (one node). Exactly one of O(name) and O(names).
    type: str
    aliases: [node]
  names:
    description:
      - The nodes of one batch (inventory names, or Slurm node names); each is looked up in O(slurm_names).
      - Exactly one of O(name) and O(names).
    type: list
    elements: str
  slurm_names:
    description:
      - With O(names), a name to its Slurm NodeName, for hosts named differently in Slurm
        (C(gpuops_slurm_node_name)); a name not in it is its own Slurm name.
    type: dict
    default: {}
  state:
    description:
      - V(drained) drains the node (running jobs finish unless O(requeue)); V(down) sets it DOWN (Slurm kills
        its jobs); V(resumed) removes the gpuops drain; V(present) only reads.
    type: str
    choices: [drained, resumed, down, present]
    default: present
  reason:
    description: Why (required for V(drained) and V(down)); O(reason_prefix) is added in front.
    type: str
  reason_prefix:
    description: Marks the part of a node's reason that gpuops owns.
    type: str
    default: "gpuops:"
  force:
    description: With V(resumed), also clear a drain or DOWN set by someone else.
    type: bool
    default: false
  requeue:
    description:
      - With V(drained) or V(down), requeue the node's running batch jobs that allow it (C(scontrol requeue));
        jobs that cannot be requeued are reported in RV(not_requeueable) with their other nodes.
    type: bool
    default: false
  wait:
    description: With V(drained), wait until the node is drained (no job left on it).
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds to wait with O(wait); the module fails when the node is still draining then.
      - With O(names), one deadline for the whole batch; a node still draining then fails its entry.
    type: int
    default: 600
  requeue_after:
    description:
      - With O(names) and V(drained), a grace period (seconds) for the draining nodes, after which the jobs still
        running on them are requeued (those that cannot be are reported in their RV(node_results) entry).
        V(0) never.
    type: int
    default: 0
  cancel_unrequeueable:
    description:
      - With O(names), C(scancel) the running jobs that could not be requeued (C(scancel) next to O(scontrol_path)).
    type: bool
    default: false
  keep_drained:
    description: With O(names) and V(down), drain the DOWN nodes as well (with ReturnToService=2 Slurm puts a
      DOWN node whose slurmd answers back to IDLE; a drained one stays out of service).
    type: bool
    default: false
  verify:
    description: With O(names), read every node back at the end (C(verified) in RV(node_results)); not in check mode.
    type: bool
    default: false
  scontrol_path:
    description: The scontrol program (a wrapper may reach a remote controller).
    type: str
    default: scontrol
  timeout:
    description: Seconds each scontrol call may run.
    type: float
    default: 30
"""

EXAMPLES = r"""
- name: Isolate the node after a failed health check, requeueing what can be requeued
  gpuops.cluster.slurm_node:
    name: "{{ inventory_hostname }}"
    state: drained
    reason: "gpu.xid 79 T-123"
    requeue: true
  delegate_to: "{{ gpuops_slurm_controller.host }}"

- name: Isolate a batch in one call (inventory names mapped to Slurm names), wait and read back
  gpuops.cluster.slurm_node:
    names: [gpu-node-03, gpu-node-07]
    slurm_names: {gpu-node-07: gn07}
    state: drained
    reason: "gpu.xid 79 T-123"
    requeue_after: 300
    wait: true
    verify: true
  delegate_to: "{{ gpuops_slurm_controller.host }}"

- name: Return it to service (someone else's drain stays)
  gpuops.cluster.slurm_node:
    name: "{{ inventory_hostname }}"
    state: resumed
  delegate_to: "{{ gpuops_slurm_controller.host }}"
"""

RETURN = r"""
node: {description: Node name., returned: with name, type: str, sample: gpu-node-01}
slurm_state:
  description: State as scontrol prints it, after the change.
  returned: with name
  type: str
  sample: IDLE+DRAIN
reason: {description: Node reason after the change (user and time stripped)., returned: with name, type: str, sample: "gpuops: gpu.xid 79"}
drained: {description: DRAIN flag set and nothing left running., returned: with name, type: bool, sample: true}
draining: {description: DRAIN flag set and jobs still running or completing., returned: with name, type: bool, sample: false}
jobs:
  description: Active jobs on the node.
  returned: with name
  type: list
  elements: dict
  sample: [{job_id: 12, state: RUNNING, requeueable: true, other_nodes: []}]
requeued: {description: Job ids requeued (or that would be in check mode)., returned: with name, type: list, elements: int, sample: [12]}
not_requeueable:
  description: Running jobs that could not be requeued.
  returned: with name
  type: list
  elements: dict
  sample: [{job_id: 13, other_nodes: [gpu-node-02]}]
message: {description: What was (or would be) done., returned: with name, type: str, sample: "drain gpu-node-01: gpuops: gpu.xid 79"}
commands: {description: scontrol command lines run., returned: always, type: list, elements: list, sample: [[scontrol, show, node, gpu-node-01]]}
node_results:
  description:
    - With O(names), one entry per node in the order given - C(name) (as given), C(node) (the Slurm name),
      C(changed), C(failed), C(msg) (the error), C(state_before), C(reason_before), C(slurm_state) and C(reason)
      (after the drain), C(drained), C(draining), C(jobs) (active jobs before, with C(other_nodes)),
      C(requeued) (job ids), C(not_requeueable), C(cancelled), C(message), C(warnings), C(verified) (what
      Slurm showed at the end - C(slurm_state), C(reason), C(drained), C(draining), C(down) - or null) and
      C(verify_error).
  returned: with names
  type: list
  elements: dict
  sample: [{name: gpu-node-03, node: gpu-node-03, changed: true, failed: false, state_before: IDLE,
            slurm_state: IDLE+DRAIN, requeued: [], verified: {slurm_state: IDLE+DRAIN, drained: true}}]
diff:
  description: Node state and reason before and after.
  returned: when diff mode
  type: dict
  sample: {before: {reason: null}, after: {reason: "gpuops: x"}}
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cluster.plugins.module_utils._slurm import (
    STATES,
    Scontrol,
    SlurmError,
    plan,
    read_status,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils._slurm_batch import check_name, pairs, run_batch


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", aliases=["node"]),
            names=dict(type="list", elements="str"),
            slurm_names=dict(type="dict", default={}),
            state=dict(type="str", choices=list(STATES), default="present"),
            reason=dict(type="str"),
            reason_prefix=dict(type="str", default="gpuops:"),
            force=dict(type="bool", default=False),
            requeue=dict(type="bool", default=False),
            wait=dict(type="bool", default=False),
            wait_timeout=dict(type="int", default=600),
            scontrol_path=dict(type="str", default="scontrol"),
            timeout=dict(type="float", default=30),
            requeue_after=dict(type="int", default=0),
            cancel_unrequeueable=dict(type="bool", default=False),
            keep_drained=dict(type="bool", default=False),
            verify=dict(type="bool", default=False),
        ),
        required_one_of=[("name", "names")],
        mutually_exclusive=[("name", "names")],
        required_if=[("state", "drained", ["reason"]), ("state", "down", ["reason"])],
        supports_check_mode=True,
    )
    p = module.params
    sc = Scontrol(p["scontrol_path"], p["timeout"])
    if p["names"] is not None:
        batch(module, sc)
    name, prefix = p["name"], p["reason_prefix"]
    try:
        check_name(name)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    try:
        before = read_status(sc, name, prefix)
        todo = plan(p["state"], before, p["reason"], prefix, p["force"], p["requeue"])
        changed = bool(todo["updates"] or todo["requeue"])
        after = before
        if changed and not module.check_mode:
            for values in todo["updates"]:
                sc.update_node(name, values)
            for job_id in todo["requeue"]:
                sc.requeue(job_id)
            after = read_status(sc, name, prefix)
        deadline = time.monotonic() + p["wait_timeout"]
        while p["wait"] and p["state"] == "drained" and not module.check_mode and not after["drained"]:
            if time.monotonic() >= deadline:
                module.fail_json(
                    msg="node %s still %s after %s s" % (name, after["state"], p["wait_timeout"]),
                    node=name,
                    slurm_state=after["state"],
                    jobs=after["jobs"],
                    commands=sc.commands,
                )
            time.sleep(1)
            after = read_status(sc, name, prefix)
    except (SlurmError, ParseError, ValueError) as exc:
        module.fail_json(msg=str(exc), node=name, commands=sc.commands)
    for warning in todo["warnings"]:
        module.warn(warning)
    result = dict(
        changed=changed,
        node=name,
        slurm_state=after["state"],
        reason=after["reason"] if after is not before or not changed else todo["after_reason"],
        drained=after["drained"],
        draining=after["draining"],
        jobs=after["jobs"],
        requeued=todo["requeue"],
        not_requeueable=todo["not_requeueable"],
        message=todo["message"],
        commands=sc.commands,
    )
    if module._diff:
        result["diff"] = dict(
            before=dict(state=before["state"], reason=before["reason"]),
            after=dict(state=after["state"], reason=result["reason"]),
        )
    module.exit_json(**result)


def batch(module, sc):
    """``names``: every node of the batch in one call, one entry per node (module_utils/_slurm_batch.py)."""
    p = module.params
    try:
        names = pairs(p["names"], p["slurm_names"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if not names:
        module.fail_json(msg="names is empty: give at least one node")
    res = run_batch(sc, names, p, module.check_mode)
    warnings = res.pop("warnings")
    for warning in warnings:
        module.warn(warning)
    res["commands"] = sc.commands
    if module._diff:
        res["diff"] = dict(
            before={e["node"]: dict(state=e["state_before"], reason=e["reason_before"]) for e in res["node_results"]},
            after={e["node"]: dict(state=e["slurm_state"], reason=e["reason"]) for e in res["node_results"]},
        )
    if res["failed"]:
        module.fail_json(**res)
    module.exit_json(**res)


if __name__ == "__main__":
    main()
