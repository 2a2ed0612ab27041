# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ControllerAction: a step that changes a defaulted argument never changes the next task's default.

An action plugin's class lives as long as the controller process. Before the fix the validator handed the
class's own default objects to the step: the leak step filled its defaulted ``inventory`` dict, and the next
task (and every test after it in the same worker) started with the previous task's inventory.
"""

from __future__ import annotations

from action_runner import _run_action

from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction


class _Filler(ControllerAction):
    NAME = "test.filler"
    ARGUMENT_SPEC = {"seen": {"type": "dict", "default": {}}, "items": {"type": "list", "default": []}}

    def step(self, args, check_mode, task_vars):
        before = {"seen": dict(args["seen"]), "items": list(args["items"])}
        args["seen"]["host"] = "gpu-node-01"  # what a step may do with its own arguments
        args["items"].append("x")
        return {"before": before}


class _Mod:
    ActionModule = _Filler


def test_a_changed_default_does_not_reach_the_next_task():
    first = _run_action(_Mod, {})
    second = _run_action(_Mod, {})
    assert first["before"] == {"seen": {}, "items": []}
    assert second["before"] == {"seen": {}, "items": []}, "the previous task's changes leaked into the default"
    assert _Filler.ARGUMENT_SPEC["seen"]["default"] == {} and _Filler.ARGUMENT_SPEC["items"]["default"] == []
