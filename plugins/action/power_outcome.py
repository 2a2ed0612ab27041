# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.power_outcome: what a BMC power request did, node by node.

Thin glue over ``plugin_utils/replace/power.py`` (the logic, free of Ansible): the replace role's power step keeps
the requests and read-backs, and asks this action what their registered results mean.
"""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, plain
from ansible_collections.gpuops.cluster.plugins.plugin_utils.replace import power as _power


class ActionModule(ControllerAction):
    NAME = "power_outcome"
    ARGUMENT_SPEC = {
        "want": {"type": "str", "required": True, "choices": list(_power.STATES)},
        "nodes": {"type": "list", "elements": "str", "required": True},
        "with_bmc": {"type": "list", "elements": "str", "default": []},
        "redfish_set": {"type": "raw", "default": {}},
        "redfish_get": {"type": "raw", "default": {}},
        "ipmi_set": {"type": "raw", "default": {}},
        "ipmi_get": {"type": "raw", "default": {}},
    }

    def step(self, args, check_mode, task_vars):
        want = args["want"]
        result = _power.readings(
            want,
            args["nodes"],
            args["with_bmc"],
            *(plain(args[k]) for k in ("redfish_set", "redfish_get", "ipmi_set", "ipmi_get")),
        )
        left = _power.unconfirmed(want, result)
        return {
            "changed": False,
            "result": result,
            "unconfirmed": left,
            "message": _power.unconfirmed_text(want, result),
        }
