# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.run_outcome: the last task of every disruptive run.

Thin glue over ``_outcome``: validates the per-node outcomes, writes the outcome file and one audit record per
node under the state directory, merges the outcome into the run report, prints the summary, and fails the task
(``ansible-playbook`` exits 2) when any node is not a success. Check mode writes nothing.
"""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow_iso
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import outcome as _outcome
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as _audit
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError, plain
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change.change_window import audit_marker

#: task vars never searched for secret values (huge, or copies of the rest)
_SKIP_VARS = ("hostvars", "vars", "groups", "ansible_facts", "omit", "play_hosts", "environment")


class ActionModule(ControllerAction):
    NAME = "run_outcome"
    ARGUMENT_SPEC = {
        "workflow": {"type": "str", "required": True, "choices": list(_outcome.WORKFLOWS)},
        "run_id": {"type": "str", "required": True},
        "requested_state": {"type": "str", "default": ""},
        "requested": {"type": "list", "elements": "str", "default": []},
        "nodes": {"type": "dict", "default": {}},
        "ticket": {"type": "str", "default": ""},
        "change_id": {"type": "str", "default": ""},
        "state_dir": {"type": "path"},
        "report": {"type": "path"},
        "started": {"type": "str", "default": ""},
        "fail": {"type": "bool", "default": True},
    }

    def step(self, args, check_mode, task_vars):
        secrets = _audit.secret_values({k: plain(v) for k, v in task_vars.items() if k not in _SKIP_VARS})
        meta = {
            "ticket": args["ticket"],
            "change_id": args["change_id"],
            "requested_state": args["requested_state"],
            "check_mode": check_mode,
            "started": args["started"],
            "finished": utcnow_iso(),
        }
        try:
            doc = _outcome.build(
                args["workflow"], args["run_id"], args["requested"], plain(args["nodes"]), meta, secrets
            )
        except _outcome.OutcomeError as e:
            raise StepError(str(e)) from None
        lines = _outcome.node_lines(doc)
        out = {"changed": False, "outcome": doc, "summary": doc["summary"], "lines": lines, "path": None}
        warnings = []
        if args["state_dir"] and not check_mode:
            out["path"] = _outcome.write(args["state_dir"], doc)
            marker = audit_marker()
            try:
                recs = _outcome.audit_records(
                    doc, (marker or {}).get("run_id"), {"user": self._user(), "playbook": task_vars.get("playbook_dir")}
                )
                out["audit_log"] = _outcome.append_audit(args["state_dir"], recs)
            except (OSError, ValueError) as e:
                warnings.append("run_outcome: could not append the outcome to the audit log: %s" % e)
        if args["report"] and not check_mode:
            try:
                out["report"] = _outcome.merge_report(args["report"], doc)[0]
            except (OSError, ValueError) as e:
                warnings.append("run_outcome: %s" % e)
        for w in warnings:
            self._display.warning(w)
        if warnings:
            out["warnings"] = warnings
        # shown by the stdout callback like debug output (the default callback prints the result), never printed
        # around it: a JSON stdout callback (ansible-runner, AWX, tests) stays valid JSON
        out["_ansible_verbose_always"] = True
        if not doc["success"] and args["fail"]:
            out["failed"] = True
            out["msg"] = doc["summary"]
        return out

    @staticmethod
    def _user():
        return _outcome.controller_user()
