# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.leak_assess: the coolant-leak reading, its scope and the run result."""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils.leak import response as _leak
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction


class ActionModule(ControllerAction):
    NAME = "leak_assess"
    ARGUMENT_SPEC = {
        "action": {"type": "str", "choices": ["assess", "finish", "detect"], "required": True},
        "alert_id": {"type": "str"},
        "source": {"type": "str"},
        "bmc": {"type": "dict", "default": {}},
        "inventory": {"type": "dict", "default": {}},
        "domains": {"type": "dict", "default": {}},
        "racks": {"type": "dict", "default": {}},
        "requested": {"type": "list", "elements": "str", "default": []},
        "reading": {"type": "dict"},
        "scope": {"type": "dict"},
        "power": {"type": "dict"},
        "slurm_down": {"type": "list", "elements": "str", "default": []},
        "state_dir": {"type": "path"},
        "ticket": {"type": "str"},
    }
    REQUIRED_IF = [
        ("action", "assess", ["alert_id", "source"]),
        ("action", "finish", ["alert_id", "source", "reading", "scope"]),
    ]

    def step(self, args, check_mode, task_vars):
        if args["action"] == "detect":
            return {"reading": _leak.detect(args["bmc"])}
        if args["action"] == "assess":
            return _leak.assess(args)
        res = _leak.finish(args)
        out = dict(res, changed=False)
        if args["state_dir"]:
            path = _leak.result_path(args["state_dir"], args["alert_id"])
            before = _leak.load_result(path)
            # the run outcome merged in by gpuops.cluster.run_outcome is not part of the result itself
            same = before is not None and {k: v for k, v in before.items() if k != "outcome"} == res
            out.update(changed=not same, path=path)
            if out["changed"] and not check_mode:
                _leak.save_result(path, res)
            if out["changed"] and self._task.diff:
                out["diff"] = {"before": before or {}, "after": res, "before_header": path, "after_header": path}
        return out
