# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.change_window: decide, on the controller's clock, whether disruptive work may run."""

from __future__ import annotations

import datetime
import json
import os

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _audit, _windows

MARKER_ENV = "GPUOPS_AUDIT_ACTIVE"  # exported by the gpuops.cluster.audit callback
SEVERE = ("P0", "P1")

ARGS = {
    "change_class": {"type": "str", "choices": ["planned", "corrective"], "default": "planned"},
    "hosts": {"type": "list", "elements": "str"},
    "windows_var": {"type": "str", "default": "gpuops_maintenance_windows"},
    "windows": {"type": "raw"},
    "change_id": {"type": "str", "default": ""},
    "ticket": {"type": "str", "default": ""},
    "emergency": {"type": "dict", "default": {}},
    "findings": {"type": "list", "elements": "raw", "default": []},
    "now": {"type": "str", "default": ""},
    "disruptive": {"type": "bool", "default": True},
    "allow_unaudited": {"type": "bool", "default": False},
    "state_dir": {"type": "path"},
}


def audit_marker():
    """The live audit callback's marker, or None. Valid only when exported by this controller process:
    workers are forked from it, so the marker's pid is our parent (or ourselves when not forked)."""
    raw = os.environ.get(MARKER_ENV)
    if not raw:
        return None
    try:
        marker = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(marker, dict) or marker.get("pid") not in (os.getppid(), os.getpid()):
        return None
    if marker.get("broken"):
        return None
    return marker


def _finding_summary(f):
    return {k: f.get(k) for k in ("id", "check", "severity", "host", "component", "code")}


def decide(args, windows_by_host, now, audited, check_mode):
    """The whole decision as a plain function (unit-testable): returns the result dict (no Ansible)."""
    hosts = sorted(windows_by_host)
    emergency = args.get("emergency") or {}
    ticket = (args.get("ticket") or "").strip() or None
    change_id = (args.get("change_id") or "").strip() or None
    res = {
        "changed": False,
        "allowed": False,
        "decision": "refused",
        "change_class": args["change_class"],
        "hosts": hosts,
        "ticket": ticket,
        "change_id": change_id,
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
    problems = []
    try:
        common = _windows.common_windows(windows_by_host, now)
    except _windows.WindowError as e:
        res["msg"] = "invalid maintenance window definition: %s" % e
        return res
    active, nxt = common["active"], common["next"]
    res["next_window"] = nxt
    res["freeze"] = common["freeze"]
    res["hosts_outside"] = common["hosts_outside"]
    res["hosts_without_windows"] = common["hosts_without_windows"]
    if active:
        res.update(
            window=active["name"],
            window_start=active["start"],
            window_end=active["end"],
            remaining_s=active["remaining_s"],
        )
    if args["disruptive"] and not audited:
        if args.get("allow_unaudited"):
            res["unaudited_opt_out"] = True
        else:
            problems.append(
                "the audit callback gpuops.cluster.audit is not enabled (set "
                "ANSIBLE_CALLBACKS_ENABLED=gpuops.cluster.audit or callbacks_enabled in ansible.cfg); "
                "opting out with allow_unaudited=true is itself recorded"
            )
    if not hosts:
        problems.append("no target hosts")
    if args["change_class"] == "corrective":
        findings = [f for f in (args.get("findings") or []) if isinstance(f, dict)]
        res["findings"] = [_finding_summary(f) for f in findings][:200]
        severe = [f for f in findings if str(f.get("severity", "")).upper() in SEVERE]
        cluster_p0 = any(str(f.get("severity", "")).upper() == "P0" and not f.get("host") for f in severe)
        covered = {str(f.get("host")) for f in severe if f.get("host")}
        lacking = [h for h in hosts if not cluster_p0 and h not in covered]
        if not severe:
            problems.append("corrective work needs the triggering P0/P1 findings (findings=...)")
        elif lacking:
            problems.append(
                "corrective work only on hosts with their own P0/P1 finding; none for: %s" % ", ".join(lacking[:20])
            )
        if not problems:
            res.update(allowed=True, decision="corrective")
    elif args["disruptive"]:
        if not (ticket or change_id or emergency.get("ticket")):
            problems.append("planned disruptive work needs a change_id or ticket")
        if active:
            decision = "window"
        elif emergency.get("ticket") and emergency.get("reason"):
            decision = "emergency_override"
            res["override"] = {"ticket": str(emergency["ticket"]), "reason": str(emergency["reason"])}
        else:
            decision = None
            if emergency:
                problems.append("an emergency override needs both ticket and reason")
            problems.append(_outside_message(common, nxt))
        if not problems and decision:
            res.update(allowed=True, decision=decision)
    elif not problems:
        res.update(allowed=True, decision="not_disruptive")
    if problems:
        res["msg"] = "; ".join(problems)
    else:
        res["msg"] = _allowed_message(res)
    return res


def _outside_message(common, nxt):
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


def _allowed_message(res):
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


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=ARGS)
        check_mode = bool(self._play_context.check_mode)  # the task's check_mode keyword is folded in here
        hostvars = task_vars.get("hostvars", {})
        hosts = args.get("hosts")
        if not hosts:
            hosts = list(task_vars.get("ansible_play_hosts_all") or [])
        windows_by_host = {}
        for h in hosts:
            if args.get("windows") is not None:
                windows_by_host[h] = args["windows"]
                continue
            if h not in hostvars:
                raise AnsibleError("change_window: host %r is not in the inventory" % h)
            ws = hostvars[h].get(args["windows_var"])
            windows_by_host[h] = self._templar.template(ws) if ws is not None else None
        try:
            now = _windows.parse_now(args["now"]) if args["now"] else datetime.datetime.now(datetime.timezone.utc)
        except _windows.WindowError as e:
            result.update(failed=True, msg="change_window: %s" % e)
            return result
        marker = audit_marker()
        state_var = task_vars.get("gpuops_state_dir")
        if marker and isinstance(state_var, str) and state_var.strip():
            want = os.path.realpath(os.path.expanduser(self._templar.template(state_var)))
            got = os.path.realpath(str(marker.get("log") or ""))
            if not got.startswith(want.rstrip(os.sep) + os.sep):
                self._display.warning(
                    "change_window: the audit log %s is not under gpuops_state_dir %s; set GPUOPS_STATE_DIR "
                    "(or [gpuops_audit] state_dir) to the same directory" % (got, want)
                )
        res = decide(args, windows_by_host, now, audited=marker is not None, check_mode=check_mode)
        if res["clock_override"]:
            self._display.warning("change_window: the clock is overridden (now=%s); this is recorded" % args["now"])
        if res["unaudited_opt_out"] and res["allowed"]:
            self._display.warning("change_window: running disruptive work WITHOUT the audit callback (opt-out)")
            if not check_mode:
                self._record_opt_out(args, res, task_vars)
        facts = {k: v for k, v in res.items() if k not in ("changed", "msg")}
        result.update(res)
        result["ansible_facts"] = {"gpuops_change_window": facts}
        if not res["allowed"]:
            if check_mode:
                result["msg"] = "check mode: would refuse: " + res["msg"]
                self._display.display("change_window: " + result["msg"])
            else:
                result["failed"] = True
        elif check_mode:
            self._display.display("change_window: check mode: would be " + res["msg"])
        return result

    def _record_opt_out(self, args, res, task_vars):
        """Without the callback, write the opt-out itself into the audit chain."""
        try:
            state_var = task_vars.get("gpuops_state_dir")
            if not args.get("state_dir") and isinstance(state_var, str) and state_var.strip():
                state_var = self._templar.template(state_var)
            else:
                state_var = None
            state = _audit.state_dir(args.get("state_dir") or state_var)
            rec = {
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
            _audit.append(_audit.default_log_path(state), rec, head_path=os.path.join(state, "audit", "head.json"))
        except OSError as e:
            self._display.warning("change_window: could not record the audit opt-out: %s" % e)
