# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.isolate_outcome: what an isolation did, node by node.

Thin glue over ``plugin_utils/change/isolate_outcome.py`` (the logic, free of Ansible): the isolate role and
playbook keep the order of the steps and ask this action what each step's results mean.
"""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, plain
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import isolate_outcome as _iso


class ActionModule(ControllerAction):
    NAME = "isolate_outcome"
    ARGUMENT_SPEC = {
        "step": {"type": "str", "required": True, "choices": ["guard", "backend", "rescue"]},
        "nodes": {"type": "list", "elements": "str", "required": True},
        "guard": {"type": "dict", "default": {}},
        "slurm": {"type": "dict", "default": {}},
        "request": {"type": "dict", "default": {}},
        "mode": {"type": "str", "default": "drain", "choices": list(_iso.MODES)},
        "change_class": {"type": "str", "default": "corrective", "choices": ["corrective", "planned"]},
        "cancel_unrequeueable": {"type": "bool", "default": False},
        "findings": {"type": "list", "elements": "raw", "default": []},
        "run_id": {"type": "str", "default": ""},
        "outcome": {"type": "dict", "default": {}},
        "failed_task": {"type": "str", "default": ""},
        "failed_result": {"type": "raw", "default": {}},
    }

    def step(self, args, check_mode, task_vars):
        nodes = _iso.check_nodes(args["nodes"])
        guard = plain(args["guard"]) or {}
        if args["step"] == "guard":
            return {"outcome": _iso.partial(nodes, guard)}
        if args["step"] == "rescue":
            return {
                "outcome": _iso.rescue(nodes, plain(args["outcome"]), args["failed_task"], plain(args["failed_result"]))
            }
        context = {
            "mode": args["mode"],
            "check_mode": check_mode,
            "cancel_unrequeueable": args["cancel_unrequeueable"],
            "change_class": args["change_class"],
            "run_id": args["run_id"],
            "findings": plain(args["findings"]),
        }
        return _iso.backend(nodes, guard, plain(args["slurm"]) or {}, plain(args["request"]) or {}, context)
