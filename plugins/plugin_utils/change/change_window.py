# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The change-window decision: may this change start now, on these hosts? (pure; controller side).

:func:`decide` is the whole decision as a plain function (the k8s_drain pattern): the action plugin
``gpuops.cluster.change_window`` gathers the hosts' windows, the clock and whether the audit callback is live,
and hands them here. Window arithmetic is in ``_windows``; the rules are in docs/windows.md:

* planned disruptive work needs a change reference and an open window common to every host (or an emergency
  override with ticket and reason);
* corrective work needs the hosts' own P0/P1 findings (a cluster-wide P0 covers every host) and may run any time;
* disruptive work needs the audit callback, unless the operator opts out (``allow_unaudited``, itself recorded).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import windows as _windows
from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson

#: Exported by the gpuops.cluster.audit callback while it records the run.
MARKER_ENV = "GPUOPS_AUDIT_ACTIVE"
#: Severities that justify corrective work.
SEVERE = ("P0", "P1")
_UNAUDITED = (
    "the audit callback gpuops.cluster.audit is not enabled (set "
    "ANSIBLE_CALLBACKS_ENABLED=gpuops.cluster.audit or callbacks_enabled in ansible.cfg); "
    "opting out with allow_unaudited=true is itself recorded"
)


def audit_marker() -> Optional[Dict[str, Any]]:
    """The live audit callback's marker, or None. Valid only when exported by this controller process:
    workers are forked from it, so the marker's pid is our parent (or ourselves when not forked)."""
    raw = os.environ.get(MARKER_ENV)
    if not raw:
        return None
    try:
        marker = _safejson.loads(raw, what="the change-window marker")
    except ValueError:
        return None
    if not isinstance(marker, dict) or marker.get("pid") not in (os.getppid(), os.getpid()):
        return None
    if marker.get("broken"):
        return None
    return marker


def _finding_summary(f: Dict[str, Any]) -> Dict[str, Any]:
    return {k: f.get(k) for k in ("id", "check", "severity", "host", "component", "code")}


def _base_result(args: Dict[str, Any], hosts: List[str], now: Any, audited: bool, check_mode: bool) -> Dict[str, Any]:
    return {
        "changed": False,
        "allowed": False,
        "decision": "refused",
        "change_class": args["change_class"],
        "hosts": hosts,
        "ticket": (args.get("ticket") or "").strip() or None,
        "change_id": (args.get("change_id") or "").strip() or None,
        "override": None,
        "findings": [],
        "window": None,
        "window_start": None,
        "window_end": None,
        "remaining_s": None,
        "next_window": None,
        "freeze": None,
        "clock": now.isoformat(),
        "clock_override": bool(args.get("now")) and not check_mode,
        "check_mode": check_mode,
        "audited": audited,
        "unaudited_opt_out": False,
        "hosts_outside": [],
        "hosts_without_windows": [],
    }


def _apply_windows(res: Dict[str, Any], common: Dict[str, Any]) -> None:
    active = common["active"]
    res.update(
        next_window=common["next"],
        freeze=common["freeze"],
        hosts_outside=common["hosts_outside"],
        hosts_without_windows=common["hosts_without_windows"],
    )
    if active:
        res.update(
            window=active["name"],
            window_start=active["start"],
            window_end=active["end"],
            remaining_s=active["remaining_s"],
        )


def _corrective(args: Dict[str, Any], res: Dict[str, Any], problems: List[str]) -> Optional[str]:
    """Corrective work: only on hosts with their own P0/P1 finding (or under a cluster-wide P0)."""
    findings = [f for f in (args.get("findings") or []) if isinstance(f, dict)]
    res["findings"] = [_finding_summary(f) for f in findings][:200]
    severe = [f for f in findings if str(f.get("severity", "")).upper() in SEVERE]
    cluster_p0 = any(str(f.get("severity", "")).upper() == "P0" and not f.get("host") for f in severe)
    covered = {str(f.get("host")) for f in severe if f.get("host")}
    lacking = [h for h in res["hosts"] if not cluster_p0 and h not in covered]
    if not severe:
        problems.append("corrective work needs the triggering P0/P1 findings (findings=...)")
    elif lacking:
        problems.append(
            "corrective work only on hosts with their own P0/P1 finding; none for: %s" % ", ".join(lacking[:20])
        )
    return "corrective"


def _planned(args: Dict[str, Any], res: Dict[str, Any], problems: List[str], common: Dict[str, Any]) -> Optional[str]:
    """Planned disruptive work: a change reference, and a common window or an emergency override."""
    emergency = args.get("emergency") or {}
    if not (res["ticket"] or res["change_id"] or emergency.get("ticket")):
        problems.append("planned disruptive work needs a change_id or ticket")
    if common["active"]:
        return "window"
    if emergency.get("ticket") and emergency.get("reason"):
        res["override"] = {"ticket": str(emergency["ticket"]), "reason": str(emergency["reason"])}
        return "emergency_override"
    if emergency:
        problems.append("an emergency override needs both ticket and reason")
    problems.append(_outside_message(common, common["next"]))
    return None


def decide(
    args: Dict[str, Any], windows_by_host: Dict[str, Any], now: Any, audited: bool, check_mode: bool
) -> Dict[str, Any]:
    """The whole decision as a plain function (unit-testable): returns the result dict (no Ansible).

    ``args`` are the action's validated arguments (``change_class``, ``change_id``, ``ticket``, ``emergency``,
    ``findings``, ``now``, ``disruptive``, ``allow_unaudited``); ``windows_by_host`` maps each target host to its
    window definitions; ``now`` is an aware datetime (``_windows.parse_now``); ``audited`` says whether the audit
    callback is live. Never raises for bad windows: the result is a refusal naming the offending key.
    """
    res = _base_result(args, sorted(windows_by_host), now, audited, check_mode)
    try:
        common = _windows.common_windows(windows_by_host, now)
    except _windows.WindowError as e:
        res["msg"] = "invalid maintenance window definition: %s" % e
        return res
    _apply_windows(res, common)
    problems: List[str] = []
    if args["disruptive"] and not audited:
        if args.get("allow_unaudited"):
            res["unaudited_opt_out"] = True
        else:
            problems.append(_UNAUDITED)
    if not res["hosts"]:
        problems.append("no target hosts")
    if args["change_class"] == "corrective":
        decision = _corrective(args, res, problems)
    elif args["disruptive"]:
        decision = _planned(args, res, problems, common)
    else:
        decision = "not_disruptive"
    if problems:
        res["msg"] = "; ".join(problems)
    elif decision:
        res.update(allowed=True, decision=decision)
        res["msg"] = _allowed_message(res)
    return res


def _outside_message(common: Dict[str, Any], nxt: Optional[Dict[str, Any]]) -> str:
    parts = []
    if common["hosts_without_windows"]:
        parts.append("no maintenance windows defined for: %s" % ", ".join(common["hosts_without_windows"][:20]))
    elif common["freeze"]:
        fr = common["freeze"]
        parts.append("change freeze '%s' is in force until %s" % (fr["name"], fr["end_local"]))
    else:
        outside = common["hosts_outside"] or ["the target hosts together"]
        parts.append("outside the maintenance window for: %s" % ", ".join(outside[:20]))
    if nxt:
        parts.append(
            "next window '%s' opens %s (%s, in %dh%02dm) and closes %s"
            % (
                nxt["name"],
                nxt["start_local"],
                nxt["start"],
                nxt["starts_in_s"] // 3600,
                nxt["starts_in_s"] % 3600 // 60,
                nxt["end_local"],
            )
        )
    elif not common["hosts_without_windows"]:
        parts.append("no common window in the next %d days" % _windows.HORIZON_DAYS)
    return "refused: " + "; ".join(parts)


def _allowed_message(res: Dict[str, Any]) -> str:
    if res["decision"] == "window":
        return "allowed: inside window '%s' until %s (%ds left)" % (
            res["window"],
            res["window_end"],
            res["remaining_s"],
        )
    if res["decision"] == "emergency_override":
        return "allowed: emergency override, ticket %s: %s" % (res["override"]["ticket"], res["override"]["reason"])
    if res["decision"] == "corrective":
        return "allowed: corrective work on %d host(s) for %d finding(s)" % (len(res["hosts"]), len(res["findings"]))
    return "allowed: not disruptive"


def opt_out_record(res: Dict[str, Any], task_vars: Dict[str, Any]) -> Dict[str, Any]:
    """The audit record written when disruptive work runs without the audit callback (the opt-out)."""
    return {
        "event": "unaudited_opt_out",
        "run_id": None,
        "user": os.environ.get("USER") or str(os.getuid()),
        "playbook": task_vars.get("playbook_dir"),
        "play": task_vars.get("ansible_play_name"),
        "change_class": res["change_class"],
        "decision": res["decision"],
        "hosts": res["hosts"][:200],
        "ticket": res["ticket"],
        "change_id": res["change_id"],
        "window": res["window"],
        "override": res["override"],
        "clock": res["clock"],
        "clock_override": res["clock_override"],
    }
