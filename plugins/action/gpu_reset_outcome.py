# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.gpu_reset_outcome: what a GPU reset rollout did, node by node.

Thin glue over ``plugin_utils/change/gpu_reset_outcome.py``: reads each requested node's ``gpu_reset_result``
(and ``__gpu_reset_error``) from its host variables, once.
"""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import (
    ControllerAction,
    HostVarsOnce,
    host_var,
    plain,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import gpu_reset_outcome as _gr
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import isolate_outcome as _iso


class ActionModule(ControllerAction):
    NAME = "gpu_reset_outcome"
    ARGUMENT_SPEC = {
        "step": {"type": "str", "default": "outcome", "choices": ["outcome", "error_text"]},
        "nodes": {"type": "list", "elements": "str", "default": []},
        "resume": {"type": "bool", "default": True},
        "failed_result": {"type": "raw", "default": {}},
    }

    def step(self, args, check_mode, task_vars):
        if args["step"] == "error_text":
            return {"error_text": _gr.error_text(plain(args["failed_result"]))}
        nodes = _iso.check_nodes(args["nodes"])
        hostvars = HostVarsOnce(task_vars.get("hostvars") or {})
        results, errors = {}, {}
        for n in nodes:
            if n in hostvars:
                results[n] = host_var(hostvars, n, "gpu_reset_result", {})
                errors[n] = host_var(hostvars, n, "__gpu_reset_error", None)
        return {"outcome": _gr.outcome(nodes, results, errors, args["resume"])}
