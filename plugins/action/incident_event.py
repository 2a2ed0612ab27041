# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.incident_event: the real-time path's ledger step (docs/alerting.md "Incidents,
repeats and suppression").

Thin glue: the EDA source's alerts (or ready events) -> ``change/realtime.alert_events`` -> the hosts' suppressions
(inventory windows, rolling upgrades: ``change/realtime.suppressions``) -> ``ledger_incidents.record_realtime``.
Returns ``act`` (the hosts the playbook may act on: once per incident and runbook, none suppressed) and one line per
event. Alert data is used as data: nothing here templates it.
"""

from __future__ import annotations

import time

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError, host_var, plain
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import realtime as _realtime
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import StoreError, open_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_incidents as _ledger_incidents
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_keys as _keys
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.state import StateError


def _line(r):
    if r["outcome"] == "refused":
        return "REFUSED %s" % r["error"]
    if r["outcome"] == "below":
        return "%s: below the incident severities, not recorded" % r["host"]
    what = "%s %s (%s %s)" % (r["host"], r["outcome"], r["incident_id"], r["check_id"])
    if r.get("suppressed"):
        return "%s: suppressed, %s" % (what, r["suppressed"])
    if r.get("act"):
        return "%s: %s acts" % (what, r["runbook"])
    if r.get("runbook"):
        return "%s: %s already acted on this incident, skipped" % (what, r["runbook"])
    return what


class ActionModule(ControllerAction):
    NAME = "gpuops.cluster.incident_event"
    ARGUMENT_SPEC = {
        "alerts": {"type": "list", "elements": "dict"},
        "events": {"type": "list", "elements": "dict"},
        "leak_event": {"type": "dict"},
        "runbook": {"type": "str"},
        "state_dir": {"type": "path"},
        "db_url": {"type": "str"},
        "policy_overrides": {"type": "dict", "default": {}},
        "require_store": {"type": "bool", "default": False},
        "narrow": {"type": "bool", "default": True},
        "suppress": {"type": "bool", "default": True},
    }
    MUTUALLY_EXCLUSIVE = [("alerts", "events", "leak_event")]

    @staticmethod
    def _events(args, now, thresholds=None):
        if args["leak_event"] is not None:
            # no act-once for a leak: the watch emits on a state change only, so each event is a new onset, and a
            # power-off never waits on the ledger (the response itself is idempotent)
            events, problems = _realtime.leak_events(plain(args["leak_event"]), now, thresholds or {})
            if any(not isinstance(h, str) for h, _msg in problems):
                raise StepError("; ".join(msg for _h, msg in problems))
            return events, problems
        if args["alerts"] is None and args["events"] is None:
            raise StepError(
                "give the alerts (ansible_eda.event.payload.alerts), the leak watch's leak_event or the events to record"
            )
        if args["alerts"] is not None:
            events, problems = _realtime.alert_events(plain(args["alerts"]), now, args["runbook"])
            if any(not isinstance(h, str) for h, _msg in problems):
                raise StepError("; ".join(msg for _h, msg in problems))
            return events, problems
        return [dict(e, runbook=args["runbook"]) if args["runbook"] else dict(e) for e in plain(args["events"])], []

    @staticmethod
    def _all_or_none(store, events, hosts, why, now):
        """For a playbook that cannot leave a host of its payload out: when some hosts are suppressed (the ledger's
        windows too) and others not, nothing acts (the others are recorded without their runbook)."""
        with store.read() as conn:
            found = _keys.windows_in_force(conn, _ledger_incidents.tables()["maintenance_windows"], set(hosts), now)
        why.update((h, w) for h, w in found.items() if h not in why)
        mixed = sorted(h for h in hosts if h not in why) if why else []
        for e in events if mixed else []:
            e.pop("runbook", None)
            if e.get("host") in why:
                e["suppress"] = why[e["host"]]
        return mixed

    def _record(self, args, events, hosts, why, now, sla):
        mixed = []
        try:
            store = open_store(state_dir=args["state_dir"], db_url=args["db_url"])
            try:
                if not args["narrow"] and args["suppress"]:
                    mixed = self._all_or_none(store, events, hosts, why, now)
                out = _ledger_incidents.record_realtime(store, events, now=now, sla=sla)
            finally:
                store.close()
        except (_ledger_incidents.IncidentError, StoreError) as exc:
            raise StepError(str(exc)) from None
        return out, mixed

    def step(self, args, check_mode, task_vars):
        now = time.time()
        try:
            merged = _policy.merge_policy(_policy.DEFAULT_POLICY, plain(args["policy_overrides"]))
        except _policy.PolicyError as exc:
            raise StepError("invalid gpuops policy: %s" % exc) from None
        sla = merged["sla"]
        events, unrecorded = self._events(args, now, ((merged.get("thresholds") or {}).get("bmc") or {}).get("leak"))
        hosts = sorted({e.get("host") for e in events if isinstance(e.get("host"), str)} | {h for h, _m in unrecorded})
        hostvars = task_vars.get("hostvars") or {}
        windows = {h: plain(host_var(hostvars, h, "gpuops_maintenance_windows")) for h in hosts if h in hostvars}
        try:
            why, problems = (
                _realtime.suppressions(hosts, windows, args["state_dir"], now, args["db_url"])
                if args["suppress"]
                else ({}, [])
            )
        except (StateError, OSError) as exc:
            raise StepError("cannot read the isolation guard's claims: %s" % exc) from None
        for e in events:
            if not args["suppress"]:
                e["suppress"] = False
            elif e.get("host") in why and not e.get("suppress"):
                e["suppress"] = why[e["host"]]
        problems += [
            "%s: not recorded in the incident ledger (add the label to the alert rule)" % m for _h, m in unrecorded
        ]
        base = {"changed": False, "act_hosts": [], "suppressed": why, "results": [], "warnings": problems}
        if not args["state_dir"] and not args["db_url"]:
            if args["require_store"]:
                raise StepError("the incident ledger needs gpuops_state_dir (embedded store) or gpuops_db_url")
            msg = "no incident ledger (gpuops_state_dir / gpuops_db_url): nothing recorded, repeats not recognised"
            return dict(base, act_hosts=[h for h in hosts if h not in why], warnings=problems + [msg], msg=msg)
        if check_mode:
            return dict(base, msg="check mode: nothing recorded")
        out, mixed = self._record(args, events, hosts, why, now, sla)
        lines = [_line(r) for r in out["results"]]
        if out["refused"]:
            raise StepError("; ".join(r["error"] for r in out["refused"]), results=out["results"], lines=lines)
        act = sorted(set(out["act"]) | {h for h, _m in unrecorded if h not in why})  # unrecorded: never held back
        if not args["runbook"] or args["leak_event"] is not None:  # recording only (a leak: always): every host
            # not suppressed may be acted on by the caller
            act = sorted(h for h in hosts if not any(r.get("suppressed") for r in out["results"] if r.get("host") == h))
        if mixed:
            act = []
            lines.append(
                "not acting on %s either: the same alert names %s, which the real-time path leaves alone (one run "
                "cannot leave a node of its payload out)"
                % (", ".join(mixed), ", ".join(sorted(set(hosts) - set(mixed))))
            )
        elif not args["narrow"] and act:
            act = [h for h in hosts if h not in why]  # a repeat of an isolation is idempotent: the run acts on all
        return dict(
            base,
            changed=bool(out["opened"] or out["joined"] or out["repeats"] or out["suppressed"]),
            act_hosts=act,
            mixed=mixed,
            incidents=sorted({r["incident_id"] for r in out["results"] if r.get("incident_id")}),
            suppressed={r["host"]: r["suppressed"] for r in out["suppressed"]},
            results=out["results"],
            lines=lines,
            msg="\n".join(lines) or "no firing alert",
        )
