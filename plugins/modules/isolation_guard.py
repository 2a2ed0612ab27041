# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/isolation_guard.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: isolation_guard
short_description: Decide which nodes an isolation may take out of service, and claim them (blast-radius guard)
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The blast-radius guard of the C(gpuops.cluster.isolate) role (C(docs/isolation.md)). It runs on the
    controller, next to the state directory; its only command on a host is C(scontrol show node), through the
    task's connection (delegate the task to the Slurm controller, as the isolate role does).
  - O(action=decide) takes the C(isolation-guard) lock, then reads Slurm (C(<scontrol_path> show node), every
    node with its partitions and state), and decides in that critical section which of O(nodes) may be isolated
    (worst severity of their O(findings) first) without taking more than the configured share or count of any
    partition, rack or the whole cluster out of service. It counts the nodes Slurm shows drained or down, the
    nodes other runs have claimed and not released, and the nodes isolated within the flap window. In the same
    critical section the allowed nodes are recorded as claims of O(run_id) in
    the controller state (the store C(<state_dir>/gpuops.db), or O(db_url)), so concurrent runs never pass the cap
    together - and because Slurm is read under the lock, a run never decides on a view from before another
    run's drain.
  - O(action=release) releases the claims of O(run_id) once the back end ran - O(done) (the drain went
    through; Slurm's view counts the node from now on) or O(failed) (no drain; the claim stops counting).
    A claim never released expires after C(claim_ttl_s).
  - Refused nodes are reported in RV(refused_by_guard), not failed. Bad guard settings (O(policy)) fail the
    task before anything is claimed, naming the key.
  - In check mode the decision is made and reported the same way but nothing is claimed, locked or written;
    C(changed) tells whether claims would be recorded (or released). With C(--diff) the open claims before and
    after are shown.
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
options:
  action:
    description: V(decide) (and claim) or V(release) the claims of O(run_id).
    type: str
    choices: [decide, release]
    default: decide
  state_dir:
    description: The controller state directory (C(gpuops_state_dir)) that keeps the claims.
    type: path
    required: true
  db_url:
    description:
      - The store's database URL (C(gpuops_db_url), C(docs/store.md)).
      - When set, the claims are kept in that database instead of O(state_dir),
        shared by every controller and AWX execution node (C(docs/state.md)).
    type: str
  run_id:
    description:
      - The run that makes the claims and later releases them (the isolate role makes one per run).
      - Required with O(action=release).
    type: str
  nodes:
    description: Inventory hostnames (= Slurm node names) to isolate. Required with O(action=decide).
    type: list
    elements: str
  findings:
    description: Findings (C(docs/findings.md)) that justify the isolation; each node's worst severity orders the guard.
    type: list
    elements: raw
    default: []
  scontrol_path:
    description:
      - The C(scontrol) command run (as C(scontrol_path show node), with C(LC_ALL=C)) on the task's host under
        the guard's lock, with O(action=decide). The isolate role passes C(gpuops_slurm_controller.scontrol_path).
      - It runs in check mode too (it only reads); a failure or unparseable output fails the task, nothing claimed.
    type: str
    default: scontrol
  racks:
    description: Node name to rack (the inventory's C(gpuops_rack)); nodes without a rack are in no rack scope.
    type: dict
    default: {}
  slurm_names:
    description:
      - Inventory name to Slurm NodeName (the inventory's C(gpuops_slurm_node_name)) for the hosts whose names
        differ; Slurm's view is read under the inventory names. Hosts not listed have the same name in both.
    type: dict
    default: {}
  policy:
    description:
      - Guard settings (C(gpuops_isolation_guard)) over the defaults - C(max_share_partition/rack/cluster) (a
        number in (0, 1] or null), C(max_count_*) (an integer >= 0 or null), C(min_allowed) (integer >= 0),
        C(window_s) (flap window, integer >= 0), C(claim_ttl_s) (integer > 0).
      - Unknown keys and bad values fail the task.
    type: dict
    default: {}
  override_reason:
    description: Allow what the guard would refuse; the reason is recorded with the claims and RV(would_refuse) lists them.
    type: str
    default: ''
  ticket:
    description: Ticket recorded with the claims.
    type: str
    default: ''
  done:
    description: With O(action=release), the nodes whose drain went through.
    type: list
    elements: str
    default: []
  failed:
    description: With O(action=release), the nodes whose drain did not happen.
    type: list
    elements: str
    default: []
  lock_timeout:
    description: Seconds to wait for the guard's lock before failing.
    type: float
    default: 60
notes:
  - The Slurm read happens under the same lock as the decision and the claims (the file lock, or the database
    lock with O(db_url)), so other runs wait to decide or release while it runs, for at most their O(lock_timeout).
  - The isolate role runs it with a run id of its own and releases the claims after the C(gpuops.cluster.slurm_node)
    calls; a run that dies leaves its claims counting until C(claim_ttl_s).
"""

EXAMPLES = r"""
- name: Decide and claim
  gpuops.cluster.isolation_guard:
    state_dir: /var/lib/gpuops-controller
    nodes: [gpu-node-03, gpu-node-07]
    findings: "{{ inspection.findings }}"
    scontrol_path: /usr/bin/scontrol
    racks: {gpu-node-03: rack-1, gpu-node-07: rack-2}
    policy: {max_share_cluster: 0.1}
    run_id: 20261202T100000Z-1a2b3c4d
    ticket: T-123
  register: guard
  delegate_to: slurm-head  # where scontrol reaches slurmctld; the claims stay on the controller

- name: Release the claims after the drain
  gpuops.cluster.isolation_guard:
    action: release
    state_dir: /var/lib/gpuops-controller
    run_id: 20261202T100000Z-1a2b3c4d
    done: "{{ guard.allowed }}"
  when: guard.allowed | length > 0
"""

RETURN = r"""
operator:
  description:
    - The controller user running the decision (C($USER), C($LOGNAME), else the passwd name of the uid); the
      maintenance marker's C(who) when no operator is named.
  returned: action=decide
  type: str
  sample: oncall
allowed:
  description: Nodes that may be isolated (claimed unless in check mode).
  returned: action=decide
  type: list
  elements: str
  sample: [gpu-node-03]
already_isolated:
  description: Targets Slurm already shows drained or down.
  returned: action=decide
  type: list
  elements: str
  sample: []
refused_by_guard:
  description: Refused targets and why.
  returned: action=decide
  type: list
  elements: dict
  sample: [{node: gpu-node-07, reason: 'blast-radius guard: cluster would have 3 of 8 nodes out of service (limit 2)'}]
overridden:
  description: O(override_reason) allowed nodes the guard would have refused.
  returned: action=decide
  type: bool
  sample: false
override_reason:
  description: The override reason (null without one).
  returned: action=decide
  type: str
  sample: null
would_refuse:
  description: What the guard would have refused without the override.
  returned: action=decide
  type: list
  elements: dict
  sample: []
limits:
  description: The node limit of every scope (null = no limit).
  returned: action=decide
  type: dict
  sample: {cluster: 2, 'partition:gpu': 2, 'rack:rack-1': 2}
out_of_service:
  description: Nodes Slurm shows drained or down.
  returned: action=decide
  type: list
  elements: str
  sample: [gpu-node-05]
recently_isolated:
  description: Nodes counted by the flap window.
  returned: action=decide
  type: list
  elements: str
  sample: []
claimed:
  description: Nodes with open claims of earlier runs (before this decision).
  returned: action=decide
  type: list
  elements: str
  sample: []
claim_ttl_s:
  description: Expiry of a claim never released.
  returned: action=decide
  type: int
  sample: 86400
released:
  description: Node to outcome (done or failed) of the claims released.
  returned: action=release
  type: dict
  sample: {gpu-node-03: done}
not_claimed:
  description: Nodes given without an open claim of O(run_id).
  returned: action=release
  type: list
  elements: str
  sample: []
diff:
  description: Open claims before and after (with C(--diff)).
  returned: diff mode
  type: dict
  sample: {before: {claimed: []}, after: {claimed: [gpu-node-03]}}
"""
