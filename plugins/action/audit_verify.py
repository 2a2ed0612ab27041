# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.audit_verify: verify the controller's hash-chained audit log."""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.audit import default_head_path, verify


class ActionModule(ControllerAction):
    NAME = "audit_verify"
    ARGUMENT_SPEC = {
        "path": {"type": "path", "required": True},
        "head": {"type": "path"},
        "chain_only": {"type": "bool", "default": False},
        "anchor": {"type": "str"},
        "fail_on_broken": {"type": "bool", "default": True},
    }

    def step(self, args, check_mode, task_vars):
        path = args["path"]
        chain_only = args["chain_only"]
        head = None if chain_only else (args["head"] or default_head_path(path))
        res = verify(path, head, chain_only=chain_only, anchor=args["anchor"])
        res["expected_head"] = head
        res.pop("path", None)
        if not res["ok"] and args["fail_on_broken"]:
            raise StepError("audit log %s does not verify: %s" % (path, res["reason"]), **res)
        return dict(res, changed=False)
