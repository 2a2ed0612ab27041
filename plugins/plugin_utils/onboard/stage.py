# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller step behind gpuops.cluster.onboard_stage: evaluate a stage, update the node's record.

``run(params, check_mode)`` returns the action's result (``changed``, ``record``, ``paths``, ``diff`` ...).
In check mode it evaluates and returns the same result and writes nothing (the record, the golden baseline,
the sign-off files): ``paths`` then names what would be written.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import slurm as _slurm_parse
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils._files import write_private_atomic
from ansible_collections.gpuops.cluster.plugins.plugin_utils import checks as _checks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as _state, state_store as _state_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard import burnin
from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard import checks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard import record as records
from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard import render


def _inventory(p: Dict[str, Any], _check_mode: bool) -> Dict[str, Any]:
    return checks.check_inventory(p["facts"], p["profile"], p["acceptance"])


def _compliance(p: Dict[str, Any], _check_mode: bool) -> Dict[str, Any]:
    return checks.check_compliance(
        p["facts"], p["baseline"], p["node_class"], p["host"], p["methods"], p["inventory"], p["ticket"]
    )


def _health(p: Dict[str, Any], _check_mode: bool) -> Dict[str, Any]:
    return checks.check_health(p["findings"], p["fail_severities"], p["ignore_checks"])


def _burnin(p: Dict[str, Any], _check_mode: bool) -> Dict[str, Any]:
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
    return burnin.check_burnin(p["before"], p["facts"], p["dcgm"], runs, th, p["stress"])


def _service(p: Dict[str, Any], _check_mode: bool) -> Dict[str, Any]:
    try:
        nodes = _slurm_parse.parse_show_node(p["slurm_text"] or "", "scontrol show node")
    except ParseError as exc:
        return checks.verdict("service", ["scontrol show node %s: %s" % (p["host"], exc)], {})
    return checks.check_slurm_node(nodes, p.get("slurm_name") or p["host"], p["profile"])


def _baseline(p: Dict[str, Any], check_mode: bool) -> Dict[str, Any]:
    """Stage 5: the golden baseline, saved to ``baselines/<host>.json`` and the host's policy state."""
    baseline = _checks.make_baseline(p["facts"] or {})
    if not baseline["gpu"]["gpus"]:
        return checks.verdict("baseline", ["no GPU facts to take a golden baseline from"], {})
    path = records.baseline_path(p["state_dir"], p["host"])
    if not check_mode:
        _state.atomic_write_json(path, baseline)
        store = _state_store.open_state(p["state_dir"], p.get("db_url"))  # the database when gpuops_db_url is set
        try:
            store.update_host(p["host"], lambda hs: dict(hs, baseline=baseline))
        finally:
            store.close()
    return checks.verdict("baseline", [], {"path": path, "taken_at": baseline["taken_at"], "baseline": baseline})


EVALUATORS: Dict[str, Callable[[Dict[str, Any], bool], Dict[str, Any]]] = {
    "inventory": _inventory,
    "compliance": _compliance,
    "health": _health,
    "burnin": _burnin,
    "baseline": _baseline,
    "service": _service,
}


def evaluate(p: Dict[str, Any], check_mode: bool) -> Dict[str, Any]:
    """The stage's verdict; ``problems`` given by the role (a failed collection) decide without evaluating."""
    if p["problems"]:
        return checks.verdict(p["stage"], list(p["problems"]), {})
    return EVALUATORS[p["stage"]](p, check_mode)


def _plain_json(rec: Dict[str, Any]) -> Dict[str, Any]:
    return json.loads(json.dumps(rec, default=str))


def run(p: Dict[str, Any], check_mode: bool) -> Dict[str, Any]:
    """One action (status, record, signoff) on the node's record. Writes only when not ``check_mode``."""
    host, sdir = p["host"], p["state_dir"]
    paths = {"record": records.record_path(sdir, host)}
    old = records.load_record(sdir, host)  # ValueError: a clear failed result
    rec = dict(old, node_class=p["node_class"] or old.get("node_class"))
    out: Dict[str, Any] = dict(changed=False, paths=paths)
    if p["action"] == "status" and p["restart"] and rec["stages"]:
        rec = records.new_record(host, p["node_class"])
        rec["history"] = old.get("history", []) + [{"stage": None, "status": "restarted", "at": records.now_iso()}]
        out["changed"] = True
    elif p["action"] == "record":
        result = evaluate(p, check_mode)
        rec = records.record_stage(rec, result, p["by"], ticket=p["ticket"])
        out.update(changed=True, result=result, reason=records.drain_reason(rec) if not result["passed"] else "")
    elif p["action"] == "left":
        rec["left"] = dict(p.get("left") or {}, at=records.now_iso())
        out["changed"] = rec != old
    elif p["action"] == "signoff":
        paths["signoff_json"] = os.path.join(sdir, "onboarding", "%s.signoff.json" % host)
        paths["signoff_md"] = os.path.join(sdir, "onboarding", "%s.signoff.md" % host)
        out["prometheus"] = render.prometheus_text(rec)
        if not check_mode:
            _state.atomic_write_json(paths["signoff_json"], rec)
            write_private_atomic(paths["signoff_md"], render.render_signoff(rec))  # 0600, never through a link
        out["changed"] = True
    if out["changed"]:
        if not check_mode:
            _state.atomic_write_json(paths["record"], rec)
        out["diff"] = {
            "before": json.dumps(_plain_json(old), indent=1, sort_keys=True) + "\n",
            "after": json.dumps(_plain_json(rec), indent=1, sort_keys=True) + "\n",
            "before_header": paths["record"],
            "after_header": paths["record"],
        }
    idx = records.resume_from(rec)
    out.update(
        record=_plain_json(rec),
        resume_from=idx,
        next_stage=records.STAGES[idx] if idx < len(records.STAGES) else None,
    )
    return out
