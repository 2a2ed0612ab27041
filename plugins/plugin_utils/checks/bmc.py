# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""BMC checks: sensors (leak and coolant apart), SEL, Redfish health and leak detectors."""

from __future__ import annotations

import datetime
from typing import Any, Dict, List, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_list,
    as_str,
    sev_action,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import severity_rank


_LIQUID_LEVEL = {"critical": "Critical", "non_recoverable": "Critical", "non_critical": "Warning"}


def check_bmc(ctx: Ctx, facts: Dict[str, Any]) -> None:
    bmc = as_dict(facts.get("bmc"))
    if not bmc:
        return
    th = ctx.policy["thresholds"]["bmc"]
    fail_states = _failure_states(th)
    for s in as_list(bmc.get("sensors")):
        if isinstance(s, dict):
            check_sensor(ctx, s, th, fail_states)
    check_sel(ctx, bmc, th)
    check_redfish(ctx, as_dict(bmc.get("redfish")), th)


def _failure_states(th: Dict[str, Any]) -> List[str]:
    return [st.lower() for st in th["failure_states"]]


def _evidence(s: Dict[str, Any]) -> Dict[str, Any]:
    return {k: s.get(k) for k in ("type", "reading", "unit", "status", "states")}


def check_sensor(ctx: Ctx, s: Dict[str, Any], th: Dict[str, Any], fail_states: Any = None) -> None:
    """One BMC sensor: leak and coolant sensors by their own tables, the others by status and failure states
    (``fail_states``: ``thresholds.bmc.failure_states`` in lower case, worked out once per node by the caller)."""
    name, status, typ = s.get("name"), s.get("status"), s.get("type")
    comp = "bmc/%s" % name
    if typ in ("coolant", "leak"):
        _check_liquid(ctx, s, th, comp, _evidence(s))
        return
    typed = sev_action(as_dict(th["sensor_type_status"].get(as_str(typ))), status)
    sa = typed or sev_action(th["sensor_status"], status)
    if fail_states is None:
        fail_states = _failure_states(th)
    states = s.get("states")
    bad = [str(st) for st in as_list(states) if str(st).lower() in fail_states] if states else []
    if not bad and not sa:
        return  # nothing to report: most sensors of a node
    ev = _evidence(s)
    if bad:  # an asserted failure state counts even when the status column says ok (a failed PSU can)
        fs = ("P2", "replace") if typ == "power_supply" else ("P2", "monitor")
        if sa is None or severity_rank(sa[0]) > severity_rank(fs[0]):
            sa = fs
        ctx.add(
            "bmc.sensor",
            sa[0],
            comp,
            bad[0],
            "BMC sensor %s: %s" % (name, ", ".join(bad)),
            sa[1],
            "thresholds.bmc.failure_states (asserted failure state)",
            evidence=ev,
        )
    elif sa:
        ctx.add(
            "bmc.sensor",
            sa[0],
            comp,
            status,
            "BMC sensor %s: %s (reading %s %s)" % (name, status, s.get("reading"), s.get("unit") or ""),
            sa[1],
            "thresholds.bmc.%s[%s]" % ("sensor_type_status.%s" % typ if typed else "sensor_status", status),
            evidence=ev,
        )


def _check_liquid(ctx: Ctx, s: Dict[str, Any], th: Dict[str, Any], comp: str, ev: Dict[str, Any]) -> None:
    """A leak sensor (bmc.leak, the power-off path) or a coolant sensor (bmc.coolant: flow, pressure, level,
    temperature: a cooling fault, isolate or monitor, never the leak power-off; the policy refuses
    emergency_shutdown there)."""
    name, status, typ = s.get("name"), s.get("status"), s.get("type")
    level = _LIQUID_LEVEL.get(as_str(status))
    sa = sev_action(th[typ], level)
    if not sa:
        return
    if typ == "coolant":
        message = "coolant sensor %s: %s (reading %s %s)" % (name, status, s.get("reading"), s.get("unit") or "")
    else:
        message = "leak sensor %s: %s (%s)" % (
            name,
            status,
            ", ".join(map(str, as_list(s.get("states")))) or s.get("reading"),
        )
    ctx.add("bmc.%s" % typ, sa[0], comp, level, message, sa[1], "thresholds.bmc.%s[%s]" % (typ, level), evidence=ev)


def redfish_sel(bmc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Redfish ``LogEntry`` records (``bmc.redfish.log_entries``) as SEL entries ``{sensor, event, time, severity,
    direction, sensor_type, id}``, oldest first. The entry's own ``Severity`` decides (Critical / Warning; OK is
    nothing); ``EntryCode: Deassert`` closes what the same sensor asserted; ``Resolved: true`` is closed. When the
    ipmitool SEL was read too, Redfish entries of type ``SEL`` are the same log and are left to it."""
    have_ipmi = bool(as_list(bmc.get("sel")))
    out = []
    for e in as_list(as_dict(bmc.get("redfish")).get("log_entries")):
        if not isinstance(e, dict) or (have_ipmi and str(e.get("entry_type") or "").upper() == "SEL"):
            continue
        stype = as_str(e.get("sensor_type")) or "Redfish log"
        num = e.get("sensor_number")
        sensor = (
            "%s #%s" % (stype, int(num) if isinstance(num, float) and num.is_integer() else num)
            if num is not None
            else stype
        )
        code = str(e.get("entry_code") or "")
        deassert = code.lower() == "deassert"
        out.append(
            {
                "id": e.get("id"),
                "time": e.get("created"),
                "sensor": sensor,
                "sensor_type": stype,
                "event": as_str(e.get("message")) or code or as_str(e.get("message_id")),
                "direction": "deasserted" if deassert or e.get("resolved") is True else "asserted",
                "severity": str(e.get("severity") or "").lower(),
                "source": "redfish",
            }
        )
    out.sort(key=lambda x: (parse_time(x["time"]) is None, parse_time(x["time"]) or 0))
    return out


_SEL_SEVERITY = {"critical": "P2", "non_recoverable": "P2", "warning": "P3", "non_critical": "P3"}


def check_sel(ctx: Ctx, bmc: Dict[str, Any], th: Dict[str, Any]) -> None:
    # SEL: asserted critical entries in the lookback that no later deassertion closed; ipmitool sel and the
    # Redfish log entries by the same window (ctx.ref = the evidence time, docs/capture.md)
    lookback = ctx.ref - datetime.timedelta(hours=th["sel_lookback_hours"])
    open_: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for e in as_list(bmc.get("sel")) + redfish_sel(bmc):
        if not isinstance(e, dict):
            continue
        direction = e.get("direction")
        if direction != "asserted" and str(direction or "").lower() == "deasserted":
            key = (str(e.get("sensor")), str(e.get("event")))
            open_.pop(key, None)
            if e.get("source") == "redfish":  # a Redfish deassertion's message differs: close the sensor
                for k in [k for k in open_ if k[0] == key[0]]:
                    open_.pop(k, None)
            continue
        severity = e.get("severity")
        sev = None if severity == "ok" else _SEL_SEVERITY.get(str(severity or "").lower())
        if not sev:
            continue  # an entry that raises nothing: its time is not read (most of a SEL)
        key = (str(e.get("sensor")), str(e.get("event")))
        ts = parse_time(e.get("time"))
        if ts is None or ts < lookback:
            continue
        cur = open_.setdefault(key, {"entry": e, "count": 0, "severity": sev})
        cur["count"] += 1
    for (sensor, event), o in sorted(open_.items()):
        e = o["entry"]
        ctx.add(
            "bmc.sel",
            o["severity"],
            "bmc",
            "%s: %s" % (sensor, event),
            "SEL: %s %s (%s, %d entr%s)"
            % (sensor, event, e.get("time"), o["count"], "y" if o["count"] == 1 else "ies"),
            "monitor",
            "bmc.sel: asserted %s %sentry within %sh"
            % (
                e.get("severity"),
                "Redfish LogEntry " if e.get("source") == "redfish" else "",
                th["sel_lookback_hours"],
            ),
            evidence={
                "id": e.get("id"),
                "sensor_type": e.get("sensor_type"),
                "time": e.get("time"),
                "source": e.get("source") or "ipmitool",
            },
        )


def check_redfish(ctx: Ctx, rf: Dict[str, Any], th: Dict[str, Any]) -> None:
    for kind in ("systems", "chassis", "managers"):
        for r in as_list(rf.get(kind)):
            if not isinstance(r, dict):
                continue
            h = r.get("health_rollup") or r.get("health")
            sa = sev_action(th["health"], h)
            if sa:
                ctx.add(
                    "bmc.health",
                    sa[0],
                    "bmc",
                    "%s:%s" % (kind, r.get("id")),
                    "Redfish %s %s health %s" % (kind, r.get("id"), h),
                    sa[1],
                    "thresholds.bmc.health[%s]" % h,
                    evidence={"health": h, "id": r.get("id")},
                )
    for kind, sev, action in (("psus", "P2", "replace"), ("memory", "P1", "replace")):
        for r in as_list(rf.get(kind)):
            if isinstance(r, dict) and r.get("health") == "Critical":
                name = r.get("name") or r.get("id")
                ctx.add(
                    "bmc.health",
                    sev,
                    "bmc/%s" % name,
                    kind,
                    "Redfish %s %s health Critical" % (kind, name),
                    action,
                    "bmc.health: %s Critical" % kind,
                    evidence={"serial": r.get("serial"), "health": "Critical"},
                )
    for d in as_list(rf.get("leak_detectors")):
        if not isinstance(d, dict):
            continue
        st = d.get("state") if as_str(d.get("state")) in th["leak"] else d.get("health")
        sa = sev_action(th["leak"], st)
        if sa:
            ctx.add(
                "bmc.leak",
                sa[0],
                "bmc/%s" % d.get("name"),
                st,
                "leak detector %s: %s" % (d.get("name"), st),
                sa[1],
                "thresholds.bmc.leak[%s]" % st,
                evidence={"state": d.get("state"), "health": d.get("health")},
            )
