# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.onboard_stage: evaluate and record one onboarding stage on the controller."""

from __future__ import annotations

import json
import os

from ansible_collections.gpuops.cluster.plugins.module_utils import _slurm_parse
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, write_private_atomic
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _checks, _onboard, _state
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction


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


class ActionModule(ControllerAction):
    NAME = "onboard_stage"
    ARGUMENT_SPEC = dict(
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
    REQUIRED_IF = [("action", "record", ["stage"])]

    def step(self, p, check_mode, task_vars):
        host, sdir = p["host"], p["state_dir"]
        paths = {"record": _onboard.record_path(sdir, host)}
        rec = _onboard.load_record(sdir, host)  # ValueError: a clear failed result
        rec["node_class"] = p["node_class"] or rec.get("node_class")
        out = dict(changed=False, paths=paths)
        if p["action"] == "status" and p["restart"] and rec["stages"]:
            old = rec
            rec = _onboard.new_record(host, p["node_class"])
            rec["history"] = old.get("history", []) + [
                {"stage": None, "status": "restarted", "at": _onboard._now_iso()}
            ]
            out["changed"] = True
        elif p["action"] == "record":
            result = _evaluate(p, check_mode)
            rec = _onboard.record_stage(rec, result, p["by"], ticket=p["ticket"])
            out.update(changed=True, result=result, reason=_onboard.drain_reason(rec) if not result["passed"] else "")
        elif p["action"] == "signoff":
            paths["signoff_json"] = os.path.join(sdir, "onboarding", "%s.signoff.json" % host)
            paths["signoff_md"] = os.path.join(sdir, "onboarding", "%s.signoff.md" % host)
            out["prometheus"] = _onboard.prometheus_text(rec)
            if not check_mode:
                _state.atomic_write_json(paths["signoff_json"], rec)
                write_private_atomic(paths["signoff_md"], _onboard.render_signoff(rec))  # 0600, never through a link
            out["changed"] = True
        if out["changed"] and not check_mode:
            _state.atomic_write_json(paths["record"], rec)
        idx = _onboard.resume_from(rec)
        out.update(
            record=json.loads(json.dumps(rec, default=str)),
            resume_from=idx,
            next_stage=_onboard.STAGES[idx] if idx < len(_onboard.STAGES) else None,
        )
        return out
