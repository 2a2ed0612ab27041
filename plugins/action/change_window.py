# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.change_window: decide, on the controller's clock, whether disruptive work may run.

Thin glue: gathers each host's windows, the clock and the audit callback's marker, then asks
``_change_window.decide`` (the decision) and records an audit opt-out when one is used.
"""

from __future__ import annotations

import os

from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import windows as _windows
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as _audit
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change.change_window import (
    audit_marker,
    decide,
    opt_out_record,
)


class ActionModule(ControllerAction):
    NAME = "change_window"
    ARGUMENT_SPEC = {
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

    def step(self, args, check_mode, task_vars):
        windows_by_host = self._windows_by_host(args, task_vars)
        try:
            now = _windows.parse_now(args["now"]) if args["now"] else utcnow()
        except _windows.WindowError as e:
            raise StepError(str(e)) from None
        marker = audit_marker()
        if marker:
            self._check_audit_log_location(marker, task_vars)
        res = decide(args, windows_by_host, now, audited=marker is not None, check_mode=check_mode)
        if res["clock_override"]:
            self._display.warning("change_window: the clock is overridden (now=%s); this is recorded" % args["now"])
        if res["unaudited_opt_out"] and res["allowed"]:
            self._display.warning("change_window: running disruptive work WITHOUT the audit callback (opt-out)")
            if not check_mode:
                self._record_opt_out(args, res, task_vars)
        result = dict(res)
        result["ansible_facts"] = {
            "gpuops_change_window": {k: v for k, v in res.items() if k not in ("changed", "msg")}
        }
        if not res["allowed"]:
            if check_mode:
                result["msg"] = "check mode: would refuse: " + res["msg"]
                self._display.display("change_window: " + result["msg"])
            else:
                result["failed"] = True
        elif check_mode:
            self._display.display("change_window: check mode: would be " + res["msg"])
        return result

    def _windows_by_host(self, args, task_vars):
        """Each target host's window definitions: ``windows`` for all, else the host variable ``windows_var``."""
        hostvars = task_vars.get("hostvars", {})
        hosts = args.get("hosts") or list(task_vars.get("ansible_play_hosts_all") or [])
        out = {}
        for h in hosts:
            if args.get("windows") is not None:
                out[h] = args["windows"]
                continue
            if h not in hostvars:
                raise StepError("host %r is not in the inventory" % h)
            ws = hostvars[h].get(args["windows_var"])
            out[h] = self._templar.template(ws) if ws is not None else None
        return out

    def _state_dir_var(self, task_vars):
        state_var = task_vars.get("gpuops_state_dir")
        if isinstance(state_var, str) and state_var.strip():
            return self._templar.template(state_var)
        return None

    def _check_audit_log_location(self, marker, task_vars):
        """Warn when the live audit log is not under gpuops_state_dir (two trails would be kept)."""
        state_var = self._state_dir_var(task_vars)
        if not state_var:
            return
        want = os.path.realpath(os.path.expanduser(state_var))
        got = os.path.realpath(str(marker.get("log") or ""))
        if not got.startswith(want.rstrip(os.sep) + os.sep):
            self._display.warning(
                "change_window: the audit log %s is not under gpuops_state_dir %s; set GPUOPS_STATE_DIR "
                "(or [gpuops_audit] state_dir) to the same directory" % (got, want)
            )

    def _record_opt_out(self, args, res, task_vars):
        """Without the callback, write the opt-out itself into the audit chain."""
        try:
            state = _audit.state_dir(args.get("state_dir") or self._state_dir_var(task_vars))
            _audit.append(
                _audit.default_log_path(state),
                opt_out_record(res, task_vars),
                head_path=os.path.join(state, "audit", "head.json"),
            )
        except OSError as e:
            self._display.warning("change_window: could not record the audit opt-out: %s" % e)
