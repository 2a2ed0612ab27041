# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fault lifecycle: escalation of repeated incidents, clear rules, the active faults kept in the state."""

from __future__ import annotations

import copy
import datetime
from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_list,
    as_str,
    gpu_by_bus,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import ACTIONS, SEVERITIES, severity_rank


def escalate(ctx: Ctx, hs: Dict[str, Any]) -> None:
    esc = ctx.policy["escalation"]
    active = as_dict(hs.get("active_faults"))
    history = [h for h in as_list(hs.get("escalation")) if isinstance(h, dict)]
    longest = max([r.get("window_days", 30) for codes in esc.values() for r in codes.values()] + [30])
    oldest = ctx.ref - datetime.timedelta(days=longest)
    history = [h for h in history if (parse_time(h.get("time")) or oldest - datetime.timedelta(days=1)) >= oldest]
    for fid, f in sorted(ctx.findings.items()):
        codes = as_dict(esc.get(f["check"]))
        rule = codes.get(f["code"]) if f["code"] is not None else None
        rule = rule or codes.get("*")
        if not isinstance(rule, dict) or severity_rank(f["severity"]) > 2:
            continue
        steps = rule["steps"]
        meta = ctx.meta.get(fid, {})
        serial = meta.get("serial") or meta.get("bus_id") or f["component"]
        known = as_dict(active.get(fid))
        known_step = known.get("escalation_step")
        if isinstance(known_step, int) and not isinstance(known_step, bool) and known_step > 0:
            step = known_step
        else:
            window = ctx.ref - datetime.timedelta(days=rule["window_days"])
            prior = [
                h
                for h in history
                if h.get("check") == f["check"]
                and h.get("code") == f["code"]
                and h.get("serial") == serial
                and (parse_time(h.get("time")) or window - datetime.timedelta(days=1)) >= window
            ]
            step = len(prior) + 1
            history.append(
                {"check": f["check"], "code": f["code"], "serial": serial, "time": iso_z(ctx.ref), "step": step}
            )
        meta["escalation_step"] = step
        s = steps[min(step, len(steps)) - 1]
        f["severity"], f["action"] = s.get("severity", f["severity"]), s.get("action", f["action"])
        f["rule"] += "; escalation[%s][%s] step %d/%d within %s days (%s)" % (
            f["check"],
            f["code"],
            min(step, len(steps)),
            len(steps),
            rule["window_days"],
            f["action"],
        )
        f["evidence"]["escalation_step"] = step
    hs["escalation"] = history


def _clear_rule(policy: Dict[str, Any], f: Dict[str, Any], meta: Dict[str, Any]) -> str:
    cr = policy["clear_rules"]
    rule = cr["checks"].get("%s:%s" % (f["check"], f["code"])) or cr["checks"].get(f["check"])
    if not rule and f["check"] in cr["event_checks"]:
        rule = cr["events_by_action"].get(f["action"])  # a log line ages out; the fault it raised must not
    rule = rule or cr["by_action"].get(f["action"]) or "facts"
    if not meta.get("bus_id"):  # not a GPU: resets and serial changes do not apply
        rule = {"needs_reset_record": "needs_new_boot", "needs_serial_change": "facts"}.get(rule, rule)
    return rule


def _is_cleared(fault: Dict[str, Any], hs: Dict[str, Any], boot_id: Optional[str], facts: Dict[str, Any]) -> bool:
    rule = fault.get("clear")
    new_boot = bool(boot_id and fault.get("boot_id") and boot_id != fault.get("boot_id"))
    if rule == "needs_new_boot":
        return new_boot
    if rule == "needs_reset_record":
        if new_boot:
            return True
        since = parse_time(fault.get("raised_at")) or parse_time(fault.get("first_seen"))
        for r in as_list(hs.get("resets")):
            if not isinstance(r, dict) or normalize_bus_id(r.get("bus_id")) != fault.get("bus_id"):
                continue
            if r.get("serial") and fault.get("serial") and r.get("serial") != fault.get("serial"):
                continue
            t = parse_time(r.get("time"))
            if t and (since is None or t >= since):
                return True
        return False
    if rule == "needs_serial_change":
        g = gpu_by_bus(facts).get(fault.get("bus_id"))
        serial = as_str(g.get("serial")) if g and g.get("readable") is not False else None
        return bool(serial and fault.get("serial") and serial != fault.get("serial"))
    return True


def _stored_finding(f: Any, fid: str) -> Optional[Dict[str, Any]]:
    """A remembered finding from the state, checked and copied; None when it is not a usable finding."""
    if not isinstance(f, dict) or f.get("severity") not in SEVERITIES or f.get("action") not in ACTIONS:
        return None
    if not isinstance(f.get("check"), str) or f.get("id") != fid:
        return None
    out = copy.deepcopy(f)
    if not isinstance(out.get("evidence"), dict):
        out["evidence"] = {}
    out["message"] = str(out.get("message") or "")
    for key in ("component", "code", "rule", "host", "cause"):
        out[key] = as_str(out.get(key))
    return out


_CLEAR_TEXT = {
    "needs_new_boot": "clears after a reboot",
    "needs_reset_record": "clears after a recorded GPU reset or a reboot",
    "needs_serial_change": "clears when the GPU is replaced (serial changes)",
}


def apply_active_faults(
    ctx: Ctx, hs: Dict[str, Any], boot_id: Optional[str], facts: Dict[str, Any], reachable: bool
) -> None:
    old = as_dict(hs.get("active_faults"))
    new: Dict[str, Any] = {}
    for fid, f in ctx.findings.items():
        meta = ctx.meta.get(fid, {})
        rule = _clear_rule(ctx.policy, f, meta)
        prev = as_dict(old.get(fid))
        first = prev.get("first_seen") or iso_z(ctx.now)
        if prev:
            f["evidence"]["active_since"] = first
        if rule == "facts" and not meta.get("escalation_step"):
            continue  # facts-derived: it clears when the facts do (escalated ones are kept to count incidents)
        new[fid] = {
            "finding": copy.deepcopy(f),
            "first_seen": first,
            "last_seen": iso_z(ctx.now),
            "boot_id": prev.get("boot_id") or boot_id,
            "clear": rule,
            "bus_id": meta.get("bus_id") or prev.get("bus_id"),
            "serial": meta.get("serial") or prev.get("serial"),
            "raised_at": iso_z(meta.get("raised_at")) or prev.get("raised_at") or iso_z(ctx.now),
            "escalation_step": meta.get("escalation_step") or prev.get("escalation_step"),
        }
    for fid, fault in old.items():
        if fid in new or not isinstance(fault, dict):
            continue
        f = _stored_finding(fault.get("finding"), fid)
        if f is None:
            continue  # not a finding (a hand-edited or damaged state file): nothing to re-report
        fault = dict(fault, clear=as_str(fault.get("clear")))
        if reachable and _is_cleared(fault, hs, boot_id, facts):
            continue
        f["message"] = "%s [still active since %s; %s]" % (
            f.get("message", "").split(" [still active")[0],
            fault.get("first_seen"),
            _CLEAR_TEXT.get(fault.get("clear"), fault.get("clear")),
        )
        f.setdefault("evidence", {})["still_active"] = True
        f["evidence"]["active_since"] = fault.get("first_seen")
        ctx.findings[fid] = f
        ctx.meta[fid] = {"bus_id": fault.get("bus_id"), "serial": fault.get("serial")}
        kept = dict(fault)
        kept["finding"] = copy.deepcopy(f)
        new[fid] = kept
    hs["active_faults"] = new
