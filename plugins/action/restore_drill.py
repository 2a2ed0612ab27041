# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.restore_drill: restore a sample of snapshots into a scratch directory, compare,
measure restore time and data age against the policy's RTO/RPO, write the drill report (json + md, 0600)."""

from __future__ import annotations

import json
import os

from ansible_collections.gpuops.cluster.plugins.module_utils._files import write_private_atomic
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import drill as _backup_drill, store as _backup
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup.gather import signing_key, templated_var
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy_defaults import DEFAULT_POLICY


class ActionModule(ControllerAction):
    NAME = "restore_drill"
    ARGUMENT_SPEC = {
        "backup_dir": {"type": "path", "required": True},
        "report_dir": {"type": "path", "required": True},
        "scratch": {"type": "path"},
        "nodes": {"type": "list", "elements": "str", "default": []},
        "count": {"type": "int", "default": 3},
        "rto_minutes": {"type": "float"},
        "rpo_hours": {"type": "float"},
        "keep_scratch": {"type": "bool", "default": False},
        "fail": {"type": "bool", "default": True},
        "sources": {"type": "list", "elements": "dict"},
        "extra_paths": {"type": "list", "elements": "str"},
        "signing_key": {"type": "str", "no_log": True},
        "key_file": {"type": "path"},
    }

    def step(self, args, check_mode, task_vars):
        policy = dict(DEFAULT_POLICY["backup"])
        for k in ("rto_minutes", "rpo_hours"):
            if args[k] is not None:
                policy[k] = args[k]
        now = utcnow()
        stamp = now.strftime("%Y%m%dT%H%M%SZ")
        if check_mode:
            return {"changed": False, "msg": "check mode: no restore drill (it writes a scratch copy and a report)"}
        scratch = args["scratch"] or os.path.join(args["report_dir"], ".scratch-" + stamp)
        try:
            key = signing_key(self, args, task_vars, create=False, outside=[args["report_dir"]])
        except _backup.BackupError as exc:
            raise StepError("restore drill FAILED: %s" % exc) from None
        extra = args["extra_paths"]
        if extra is None:
            extra = templated_var(self, task_vars, "gpuops_backup_extra_paths") or []
        try:
            rules = _backup.restore_rules(args["sources"], extra)
        except _backup.BackupError as exc:
            raise StepError("restore drill FAILED: %s" % exc) from None
        rep = _backup_drill.run(args["backup_dir"], scratch, policy, now, args["nodes"], args["count"],
                                args["keep_scratch"], key=key, rules=rules)  # fmt: skip
        base = os.path.join(args["report_dir"], "drill-" + stamp)
        write_private_atomic(base + ".json", json.dumps(rep, indent=1, sort_keys=True) + "\n")
        write_private_atomic(base + ".md", _backup_drill.render_markdown(rep))
        out = {"changed": True, "report": rep, "report_json": base + ".json", "report_md": base + ".md",
               "ok": rep["ok"], "max_restore_seconds": rep["max_restore_seconds"],
               "max_data_age_hours": rep["max_data_age_hours"]}  # fmt: skip
        if not rep["ok"] and args["fail"]:
            raise StepError("restore drill FAILED (RTO %ss, RPO %sh): see %s.md" % (rep["rto_seconds"], rep["rpo_hours"],
                                                                                    base), **out)  # fmt: skip
        return out
