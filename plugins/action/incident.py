# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.incident: the operator's incident command (docs/service.md).

Thin glue over ``_ledger_incidents``: loads the audit trail's new records first (the roles' clock steps), then
takes one step on one incident (acknowledge, locate, mitigate, restore, close, note) or lists the open incidents
with their SLA clocks. Check mode writes nothing and says what would change.
"""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import (
    ledger_audit as _ledger_audit,
    ledger_incidents as _ledger_incidents,
    ledger_run as _ledger_run,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError, plain
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import StoreError, open_store


def clock_line(inc):
    """One line per open incident: id, severity, host, its steps and each running clock."""
    parts = []
    for c in inc.get("clocks") or []:
        if c["due"] is None:
            continue
        if c["at"] is not None:
            parts.append("%s %s" % (c["clock"], c["state"]))
        else:
            parts.append("%s %s due %s" % (c["clock"], c["state"], _ledger_incidents.iso(c["due"])))
    steps = [
        w
        for w in ("acknowledged", "onsite", "located", "planned", "mitigated", "restored")
        if inc.get(w + "_at") is not None
    ]
    return "%s %s %s detected %s%s: %s" % (
        inc["incident_id"],
        inc["severity"],
        inc.get("host") or "(cluster)",
        _ledger_incidents.iso(inc["detected_at"]),
        " [%s]" % ", ".join(steps) if steps else "",
        "; ".join(parts) or inc.get("clock_error") or "no clock running",
    )


class ActionModule(ControllerAction):
    NAME = "gpuops.cluster.incident"
    ARGUMENT_SPEC = {
        "step": {"type": "str", "required": True, "choices": ["list"] + list(_ledger_incidents.STEPS)},
        "incident": {"type": "str"},
        "by": {"type": "str"},
        "cause": {"type": "str"},
        "review": {"type": "dict", "default": {}},
        "state_dir": {"type": "path"},
        "db_url": {"type": "str"},
        "policy_overrides": {"type": "dict", "default": {}},
    }
    REQUIRED_IF = [("step", name, ("incident", "by")) for name in _ledger_incidents.STEPS]

    def step(self, args, check_mode, task_vars):
        try:
            sla = _policy.merge_policy(_policy.DEFAULT_POLICY, plain(args["policy_overrides"]))["sla"]
        except _policy.PolicyError as exc:
            raise StepError("invalid gpuops policy: %s" % exc) from None
        if not args["state_dir"] and not args["db_url"]:
            raise StepError("the incident ledger needs gpuops_state_dir (embedded store) or gpuops_db_url")
        try:
            store = open_store(state_dir=args["state_dir"], db_url=args["db_url"])
            try:
                log = _ledger_run.audit_log(args["state_dir"])
                if log and not check_mode:
                    _ledger_audit.ingest_audit(store, log)
                if args["step"] == "list":
                    incidents = _ledger_incidents.open_clocks(store, sla)
                    lines = [clock_line(i) for i in incidents] or ["no open incident"]
                    return {"changed": False, "incidents": incidents, "lines": lines, "msg": "\n".join(lines)}
                request = {k: args[k] for k in ("incident", "step", "by", "cause")}
                request["review"] = plain(args["review"])
                out = _ledger_incidents.apply_step(store, request, sla, check_mode)
            finally:
                store.close()
        except _ledger_incidents.IncidentError as exc:
            raise StepError(str(exc)) from None
        except StoreError as exc:
            raise StepError(str(exc)) from None
        out["lines"] = [out["msg"]]
        return out
