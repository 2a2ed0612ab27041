# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.resume_outcome: what a return to service did, node by node.

Thin glue over ``plugin_utils/change/resume_outcome.py`` (the logic, free of Ansible).
"""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, plain
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import isolate_outcome as _iso
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import resume_outcome as _res


class ActionModule(ControllerAction):
    NAME = "resume_outcome"
    ARGUMENT_SPEC = {
        "step": {"type": "str", "required": True, "choices": ["pending", "gate", "backend"]},
        "nodes": {"type": "list", "elements": "str", "required": True},
        "inspection": {"type": "dict", "default": {}},
        "ignore_checks": {"type": "list", "elements": "str", "default": []},
        "blocked": {"type": "dict", "default": {}},
        "slurm": {"type": "dict", "default": {}},
        "force": {"type": "bool", "default": False},
        "inspect": {"type": "bool", "default": True},
        "ticket": {"type": "str", "default": ""},
    }

    def step(self, args, check_mode, task_vars):
        nodes = _iso.check_nodes(args["nodes"])
        if args["step"] == "pending":
            return {"outcome": _res.pending(nodes)}
        if args["step"] == "gate":
            return {"blocked": _res.gate(nodes, plain(args["inspection"]), args["ignore_checks"])}
        context = {
            "force": args["force"],
            "inspect": args["inspect"],
            "check_mode": check_mode,
            "ticket": args["ticket"],
        }
        return _res.backend(nodes, plain(args["blocked"]) or {}, plain(args["slurm"]) or {}, context)
