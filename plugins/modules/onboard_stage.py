# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: onboard_stage
short_description: Evaluate and record one node onboarding stage on the controller
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The controller half of the C(gpuops.cluster.onboard) role (run it delegated to C(localhost)). The stage
    logic is C(plugins/module_utils/_onboard.py); this module reads and writes the per-node onboarding record
    C(<state_dir>/onboarding/<host>.json) (C(docs/onboarding.md)).
  - O(action=status) returns the record and the first stage that has not passed (a rerun resumes there).
  - O(action=record) evaluates O(stage) from its inputs, records the verdict (passed or failed, the problems,
    the evidence, who and when) and returns it. It never fails the task for a failed stage; the role does.
  - O(stage=baseline) also saves the golden baseline (C(_checks.make_baseline)) to C(<state_dir>/baselines/<host>.json)
    and into the host's policy state (C(hosts/<host>.json) key C(baseline)), where every later inspection reads it.
  - O(action=signoff) writes the sign-off report C(<state_dir>/onboarding/<host>.signoff.json) and C(.md) and
    returns the node_exporter textfile metrics.
options:
  action:
    description: "What to do."
    type: str
    choices: [status, record, signoff]
    default: record
  state_dir:
    description: "The controller state directory (C(gpuops_state_dir))."
    type: path
    required: true
  host:
    description: "The node (inventory hostname)."
    type: str
    required: true
  node_class:
    description: "The node class (C(gpuops_node_class))."
    type: str
  restart:
    description: "With O(action=status), start a fresh record (the old one is kept in its history)."
    type: bool
    default: false
  stage:
    description: "The stage to record."
    type: str
    choices: [inventory, compliance, health, burnin, baseline, service]
  problems:
    description: "Record O(stage) as failed with these problems (e.g. a task that failed)."
    type: list
    elements: str
  facts:
    description: "The node's facts (docs/facts.md); the facts after burn-in for O(stage=burnin)."
    type: dict
  before:
    description: "Facts taken before burn-in."
    type: dict
  profile:
    description: "The node class's hardware profile."
    type: dict
  acceptance:
    description: "Onboarding acceptance data of the class (gpu_memory_mib, hca_count, ...)."
    type: dict
  baseline:
    description: "The upgrade baseline (C(gpuops_upgrade_baseline))."
    type: dict
  methods:
    description: "Upgrade methods (C(gpuops_upgrade_methods))."
    type: dict
  inventory:
    description: "Inventory path to print in the upgrade command."
    type: str
  ticket:
    description: "The change ticket."
    type: str
  by:
    description: "Who runs the onboarding."
    type: str
  findings:
    description: "The node's inspection findings (stage health)."
    type: list
    elements: dict
  fail_severities:
    description: "Severities that fail stage health."
    type: list
    elements: str
    default: [P0, P1, P2]
  ignore_checks:
    description: "Checks that never fail stage health."
    type: list
    elements: str
    default: []
  dcgm:
    description: "The dcgm_diag_info result (None = not run)."
    type: dict
  nccl:
    description: The single-node M(gpuops.cluster.nccl_test_info) C(nccl) result (threshold C(nccl_min_busbw_gbps)).
    type: dict
  nccl_rails:
    description: Its per-rail C(rails) results (threshold C(nccl_rail_min_busbw_gbps)).
    type: list
    elements: dict
    default: []
  stress:
    description: "The stress run result (None = not run)."
    type: dict
  thresholds:
    description: "Burn-in thresholds and counter limits."
    type: dict
    default: {}
  slurm_text:
    description: "C(scontrol show node <host>) output (stage service)."
    type: str
attributes:
  check_mode:
    description: "Evaluates and returns the verdict without writing anything."
    support: full
  diff_mode:
    description: "Not supported."
    support: none
  platform:
    description: "Runs on the controller."
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Record stage 1
  gpuops.cluster.onboard_stage:
    state_dir: /var/lib/gpuops/state
    host: "{{ inventory_hostname }}"
    stage: inventory
    facts: "{{ __onboard_collect.facts }}"
    profile: "{{ gpuops_profiles[gpuops_node_class] }}"
  delegate_to: localhost
"""

RETURN = r"""
record: {description: The onboarding record after the action., returned: always, type: dict, sample: {status: in_progress}}
resume_from: {description: Index of the first stage not passed (6 = all passed)., returned: always, type: int, sample: 3}
next_stage: {description: Name of that stage (null when all passed)., returned: always, type: str, sample: burnin}
result: {description: The stage verdict., returned: action=record, type: dict, sample: {stage: burnin, passed: false, problems: ["new Xid 48"]}}
reason: {description: Slurm drain reason for a failed stage., returned: action=record, type: str, sample: "onboard burnin failed: ..."}
paths: {description: Files written., returned: always, type: dict, sample: {record: /var/lib/gpuops/state/onboarding/n1.json}}
prometheus: {description: node_exporter textfile metrics., returned: action=signoff, type: str, sample: "gpuops_onboard_accepted{host=\"n1\"} 1"}
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cluster.plugins.module_utils import _checks, _onboard, _slurm_parse, _state
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, write_private_atomic


def _evaluate(p, check_mode):
    stage = p["stage"]
    if p["problems"]:
        return _onboard.verdict(stage, list(p["problems"]), {})
    if stage == "inventory":
        return _onboard.check_inventory(p["facts"], p["profile"], p["acceptance"])
    if stage == "compliance":
        return _onboard.check_compliance(
            p["facts"], p["baseline"], p["node_class"], p["host"], p["methods"], p["inventory"], p["ticket"]
        )
    if stage == "health":
        return _onboard.check_health(p["findings"], p["fail_severities"], p["ignore_checks"])
    if stage == "burnin":
        th = p["thresholds"]
        runs = [{"name": "single-node", "result": p["nccl"]}] if p["nccl"] is not None else []
        for r in p["nccl_rails"]:
            runs.append(
                {
                    "name": "rail %s" % r.get("rail"),
                    "result": r.get("result"),
                    "min_busbw_gbps": th.get("nccl_rail_min_busbw_gbps"),
                }
            )
        return _onboard.check_burnin(p["before"], p["facts"], p["dcgm"], runs, th, p["stress"])
    if stage == "service":
        try:
            nodes = _slurm_parse.parse_show_node(p["slurm_text"] or "", "scontrol show node")
        except ParseError as exc:
            return _onboard.verdict("service", ["scontrol show node %s: %s" % (p["host"], exc)], {})
        return _onboard.check_slurm_node(nodes, p["host"], p["profile"])
    baseline = _checks.make_baseline(p["facts"] or {})  # stage == "baseline"
    if not baseline["gpu"]["gpus"]:
        return _onboard.verdict("baseline", ["no GPU facts to take a golden baseline from"], {})
    path = _onboard.baseline_path(p["state_dir"], p["host"])
    if not check_mode:
        _state.atomic_write_json(path, baseline)
        _state.update_host_state(p["state_dir"], p["host"], lambda hs: dict(hs, baseline=baseline))
    return _onboard.verdict("baseline", [], {"path": path, "taken_at": baseline["taken_at"], "baseline": baseline})


def main():
    spec = dict(
        action=dict(type="str", choices=["status", "record", "signoff"], default="record"),
        state_dir=dict(type="path", required=True),
        host=dict(type="str", required=True),
        node_class=dict(type="str"),
        restart=dict(type="bool", default=False),
        stage=dict(type="str", choices=list(_onboard.STAGES)),
        problems=dict(type="list", elements="str"),
        facts=dict(type="dict"),
        before=dict(type="dict"),
        profile=dict(type="dict"),
        acceptance=dict(type="dict"),
        baseline=dict(type="dict"),
        methods=dict(type="dict"),
        inventory=dict(type="str"),
        ticket=dict(type="str"),
        by=dict(type="str"),
        findings=dict(type="list", elements="dict"),
        fail_severities=dict(type="list", elements="str", default=["P0", "P1", "P2"]),
        ignore_checks=dict(type="list", elements="str", default=[]),
        dcgm=dict(type="dict"),
        nccl=dict(type="dict"),
        nccl_rails=dict(type="list", elements="dict", default=[]),
        stress=dict(type="dict"),
        thresholds=dict(type="dict", default={}),
        slurm_text=dict(type="str"),
    )
    module = AnsibleModule(argument_spec=spec, required_if=[("action", "record", ["stage"])], supports_check_mode=True)
    p = module.params
    host, sdir = p["host"], p["state_dir"]
    paths = {"record": _onboard.record_path(sdir, host)}
    try:
        rec = _onboard.load_record(sdir, host)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    rec["node_class"] = p["node_class"] or rec.get("node_class")
    out = dict(changed=False, paths=paths)
    if p["action"] == "status" and p["restart"] and rec["stages"]:
        old = rec
        rec = _onboard.new_record(host, p["node_class"])
        rec["history"] = old.get("history", []) + [{"stage": None, "status": "restarted", "at": _onboard._now_iso()}]
        out["changed"] = True
    elif p["action"] == "record":
        result = _evaluate(p, module.check_mode)
        rec = _onboard.record_stage(rec, result, p["by"], ticket=p["ticket"])
        out.update(changed=True, result=result, reason=_onboard.drain_reason(rec) if not result["passed"] else "")
    elif p["action"] == "signoff":
        paths["signoff_json"] = os.path.join(sdir, "onboarding", "%s.signoff.json" % host)
        paths["signoff_md"] = os.path.join(sdir, "onboarding", "%s.signoff.md" % host)
        out["prometheus"] = _onboard.prometheus_text(rec)
        if not module.check_mode:
            _state.atomic_write_json(paths["signoff_json"], rec)
            write_private_atomic(paths["signoff_md"], _onboard.render_signoff(rec))  # 0600, never through a link
        out["changed"] = True
    if out["changed"] and not module.check_mode:
        _state.atomic_write_json(paths["record"], rec)
    idx = _onboard.resume_from(rec)
    out.update(
        record=json.loads(json.dumps(rec, default=str)),
        resume_from=idx,
        next_stage=_onboard.STAGES[idx] if idx < len(_onboard.STAGES) else None,
    )
    module.exit_json(**out)


if __name__ == "__main__":
    main()
