# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.replace_record: open, advance, stop or show a replacement record."""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils.replace import parts as _replace
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction


class ActionModule(ControllerAction):
    NAME = "replace_record"
    ARGUMENT_SPEC = {
        "action": {"type": "str", "choices": ["open", "step", "stop", "show"], "default": "show"},
        "state_dir": {"type": "path", "required": True},
        "ticket": {"type": "str", "required": True},
        "host": {"type": "str", "required": True},
        "part": {"type": "str", "choices": list(_replace.PARTS)},
        "component": {"type": "str"},
        "phase": {"type": "str", "choices": ["prepare", "return"]},
        "step": {"type": "str", "choices": list(_replace.STEPS)},
        "reason": {"type": "str"},
        "data": {"type": "dict", "default": {}},
        "done_before": {"type": "list", "elements": "str", "default": []},
    }
    REQUIRED_IF = [("action", "open", ["part"]), ("action", "step", ["step"]), ("action", "stop", ["step", "reason"])]

    def step(self, args, check_mode, task_vars):
        req = {k: args[k] for k in ("part", "component", "phase", "step", "reason", "data")}
        before, after, path = _replace.update_record(
            args["state_dir"], args["ticket"], args["host"], args["action"], req, check_mode=check_mode
        )
        changed = after != before
        out = dict(_replace.summary(after), changed=changed, path=path, record=after)
        if after is not None:
            out["outcome"] = _replace.outcome(after, args["phase"] or "prepare", args["done_before"])
        if changed and self._task.diff:
            out["diff"] = {"before": before or {}, "after": after, "before_header": path, "after_header": path}
        return out
