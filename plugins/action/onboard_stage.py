# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.onboard_stage: evaluate and record one onboarding stage on the controller.

Documentation: plugins/modules/onboard_stage.py; the step: plugins/plugin_utils/onboard/stage.py.
"""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard import (
    record as _onboard_record,
    stage as _onboard_stage,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction


class ActionModule(ControllerAction):
    NAME = "onboard_stage"
    ARGUMENT_SPEC = dict(
        action=dict(type="str", choices=["status", "record", "signoff", "left"], default="record"),
        left=dict(type="dict"),
        state_dir=dict(type="path", required=True),
        db_url=dict(type="str"),
        host=dict(type="str", required=True),
        node_class=dict(type="str"),
        restart=dict(type="bool", default=False),
        stage=dict(type="str", choices=list(_onboard_record.STAGES)),
        problems=dict(type="list", elements="str"),
        facts=dict(type="dict"),
        before=dict(type="dict"),
        profile=dict(type="dict"),
        acceptance=dict(type="dict"),
        baseline=dict(type="dict"),
        methods=dict(type="dict"),
        inventory=dict(type="str"),
        ticket=dict(type="str"),
        by=dict(type="str"),
        findings=dict(type="list", elements="dict"),
        fail_severities=dict(type="list", elements="str", choices=list(_policy.SEVERITIES), default=["P0", "P1", "P2"]),
        ignore_checks=dict(type="list", elements="str", default=[]),
        dcgm=dict(type="dict"),
        nccl=dict(type="dict"),
        nccl_rails=dict(type="list", elements="dict", default=[]),
        stress=dict(type="dict"),
        thresholds=dict(type="dict", default={}),
        slurm_text=dict(type="str"),
        slurm_name=dict(type="str"),
    )
    REQUIRED_IF = [("action", "record", ["stage"])]

    def step(self, args, check_mode, task_vars):
        out = _onboard_stage.run(args, check_mode)
        if not self._play_context.diff:
            out.pop("diff", None)
        return out
