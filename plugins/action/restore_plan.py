# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.restore_plan: verify a snapshot (signature, every checksum) and list what a restore
writes.

Thin glue over ``plugin_utils/backup/store.restore_plan``: a snapshot that is unsigned, not signed with this controller's
key, whose manifest or any object does not verify, that belongs to another node, or that would write anything but
a plain file produced by the node's configured backup sources (with its captured owner and a mode without
setuid/setgid/sticky bits) is refused (the task fails naming the files) before the restore writes anything. The
verified objects are copied to a private staging directory (``staging``), which the restore reads and then removes.
``sign_unsigned``: an intact unsigned (gpuops.backup/v1) snapshot that passes every other check is signed with this
controller's key (in check mode: planned, not signed).
"""

from __future__ import annotations

import shutil
import tempfile
import time

from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import objects as _backup_objects

from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import restore as _backup_restore
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup.gather import signing_key, templated_var


class ActionModule(ControllerAction):
    NAME = "restore_plan"
    ARGUMENT_SPEC = {
        "backup_dir": {"type": "path", "required": True},
        "snapshot_id": {"type": "str", "required": True},
        "node": {"type": "str"},
        "sources": {"type": "list", "elements": "dict"},
        "extra_paths": {"type": "list", "elements": "str"},
        "signing_key": {"type": "str", "no_log": True},
        "key_file": {"type": "path"},
        "stage": {"type": "bool", "default": True},
        "sign_unsigned": {"type": "bool", "default": False},
        "max_entry_bytes": {"type": "int", "default": _backup_objects.LIMITS["entry_bytes"]},
        "max_snapshot_bytes": {"type": "int", "default": _backup_objects.LIMITS["snapshot_bytes"]},
        "max_entries": {"type": "int", "default": _backup_objects.LIMITS["entries"]},
    }

    def step(self, args, check_mode, task_vars):
        t0 = time.monotonic()
        extra = args["extra_paths"]
        if extra is None:
            extra = templated_var(self, task_vars, "gpuops_backup_extra_paths") or []
        stage = tempfile.mkdtemp(prefix="gpuops-restore-") if args["stage"] else None
        try:
            key = signing_key(self, args, task_vars, create=False)
            limits = {"entry_bytes": args["max_entry_bytes"], "snapshot_bytes": args["max_snapshot_bytes"],
                      "entries": args["max_entries"]}  # fmt: skip
            rules = _backup_objects.restore_rules(args["sources"], extra, limits)
            plan = _backup_restore.restore_plan(
                args["backup_dir"], args["snapshot_id"], args["node"], key=key, rules=rules, stage_dir=stage,
                accept_unsigned=args["sign_unsigned"],
            )  # fmt: skip
            if plan["unsigned"] and not check_mode:
                _backup_restore.sign_legacy(args["backup_dir"], args["snapshot_id"], key)
                plan["signed_now"] = key.key_id
        except (_backup_objects.BackupError, OSError) as exc:
            if stage:
                shutil.rmtree(stage, ignore_errors=True)
            raise StepError("restore refused: %s" % exc, refused=True) from None
        plan["staging"] = stage
        plan["seconds"] = round(time.monotonic() - t0, 3)
        plan["refused"] = False
        plan["changed"] = bool(plan.get("signed_now"))
        return plan
