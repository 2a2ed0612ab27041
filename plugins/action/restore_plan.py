# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.restore_plan: verify a snapshot (every checksum) and list what a restore writes.

Thin glue over ``plugin_utils/_backup.restore_plan``: a snapshot whose manifest or any object does not verify, or
that belongs to another node, is refused (the task fails naming the file) before the restore writes anything.
Reads only; the same in check mode.
"""

from __future__ import annotations

import time

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _backup
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError


class ActionModule(ControllerAction):
    NAME = "restore_plan"
    ARGUMENT_SPEC = {
        "backup_dir": {"type": "path", "required": True},
        "snapshot_id": {"type": "str", "required": True},
        "node": {"type": "str"},
    }

    def step(self, args, check_mode, task_vars):
        t0 = time.monotonic()
        try:
            plan = _backup.restore_plan(args["backup_dir"], args["snapshot_id"], args["node"])
        except _backup.BackupError as exc:
            raise StepError("restore refused: %s" % exc, refused=True) from None
        plan["seconds"] = round(time.monotonic() - t0, 3)
        plan["refused"] = False
        return plan
