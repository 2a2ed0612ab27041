# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.backup: store, verify, copy off-site and prune one node's configuration snapshot.

Thin glue over ``plugin_utils/backup/store``: the entries read by ``gpuops.cluster.config_snapshot`` on the node, the
BMC and the Slurm controller, plus the controller's state directory and audit trail, go into the content-addressed
store under a manifest signed with the backup key (``gpuops_backup_signing_key``, else the key file); the snapshot
is re-verified (signature, every object re-hashed) before the step reports success. What the node returned is
bounded (``max_*``) and checked against its configured sources; no object holding a configured secret is stored.
A failure or a snapshot that does not verify fails the task (the role refuses the change), writes
``status/<node>.json`` (the ``backup.failed`` finding reads it) and one ``backup`` audit record. Check mode writes
nothing.
"""

from __future__ import annotations

import os
import time

from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow, utcnow_iso
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import store as _backup
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import objects as _backup_objects
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import secrets as _backup_secrets
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import outcome as _outcome
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy_defaults import DEFAULT_POLICY
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError, plain
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup.gather import secrets_of, signing_key


class ActionModule(ControllerAction):
    NAME = "backup"
    ARGUMENT_SPEC = {
        "node": {"type": "str", "required": True},
        "entries": {"type": "list", "elements": "dict", "default": []},
        "extra_entries": {"type": "list", "elements": "dict", "default": []},
        "backup_dir": {"type": "path", "required": True},
        "state_dir": {"type": "path"},
        "include_state": {"type": "bool", "default": True},
        "change_id": {"type": "str", "default": ""},
        "ticket": {"type": "str", "default": ""},
        "workflow": {"type": "str", "default": "backup"},
        "fail_on": {"type": "list", "elements": "str", "default": list(_backup_objects.FAIL_KINDS)},
        "offsite": {"type": "path"},
        "keep_count": {"type": "int"},
        "keep_days": {"type": "float"},
        "sources": {"type": "list", "elements": "dict"},
        "extra_paths": {"type": "list", "elements": "str", "default": []},
        "signing_key": {"type": "str", "no_log": True},
        "key_file": {"type": "path"},
        "max_entry_bytes": {"type": "int", "default": _backup_objects.LIMITS["entry_bytes"]},
        "max_snapshot_bytes": {"type": "int", "default": _backup_objects.LIMITS["snapshot_bytes"]},
        "max_entries": {"type": "int", "default": _backup_objects.LIMITS["entries"]},
    }

    def step(self, args, check_mode, task_vars):
        t0 = time.monotonic()
        node, bdir = args["node"], args["backup_dir"]
        entries = [plain(e) for e in args["entries"]] + [plain(e) for e in args["extra_entries"]]
        meta = {k: args[k] for k in ("change_id", "ticket", "workflow")}
        limits = {"entry_bytes": args["max_entry_bytes"], "snapshot_bytes": args["max_snapshot_bytes"],
                  "entries": args["max_entries"]}  # fmt: skip
        try:
            outside = [args["state_dir"], args["offsite"]]
            try:
                key = signing_key(self, args, task_vars, create=not check_mode, outside=outside)
            except _backup_objects.BackupError:
                if not check_mode:
                    raise
                key = None  # check mode writes nothing: no key needed (none is created)
            state = []
            if args["include_state"] and args["state_dir"] and os.path.isdir(args["state_dir"]):
                state = _backup_secrets.state_entries(
                    args["state_dir"], bdir, skip_dirs=[d for d in [args["offsite"]] if d]
                )
            if not entries and not state:
                raise _backup_objects.BackupError("nothing to back up for %s (no entries)" % node)
            rules = _backup_objects.restore_rules(args["sources"], args["extra_paths"], limits)
            prepared = _backup.prepare(node, entries, state, rules, secrets_of(self, task_vars, key))
            manifest = _backup.write_snapshot(bdir, node, prepared, meta, key=key, check_mode=check_mode, now=utcnow())
            bad = [e for e in manifest["errors"] if e.get("kind") in args["fail_on"]]
            if bad:
                what = "; ".join("%s (%s)" % (e["file"], e["error"]) for e in bad[:5])
                raise _backup_objects.BackupError("could not read %s" % what)
            verified = {"ok": None, "problems": []} if check_mode else _backup.verify(bdir, manifest["id"], key)
            if verified["ok"] is False:
                raise _backup_objects.BackupError(_backup.refusal(verified))
        except (_backup_objects.BackupError, OSError) as exc:
            msg = "backup of %s failed, the change is refused: %s" % (node, exc)
            self._record(args, check_mode, {"ok": False, "error": msg, "time": utcnow_iso()}, None)
            raise StepError(msg, node=node, backup_ok=False) from None
        for w in manifest["withheld"] + manifest["excluded"]:
            self._display.warning("backup of %s: %s is not stored: %s" % (node, w["file"], w.get("reason")))
        sid = manifest["id"]
        out = {
            "changed": not check_mode,
            "backup_ok": True,
            "snapshot_id": sid,
            "manifest": os.path.join(_backup_objects.snapshot_dir(bdir, sid), "manifest.json"),
            "files": len(manifest["files"]),
            "bytes": manifest["total_bytes"],
            "stored_bytes": manifest["stored_bytes"],
            "stored_objects": manifest["stored_objects"],
            "absent": [a["file"] for a in manifest["absent"]],
            "errors": manifest["errors"],
            "excluded": manifest["excluded"],
            "withheld": manifest["withheld"],
            "verified": verified["ok"],
            "signed_by": manifest["signed_by"],
            "restore_command": _backup.restore_command(sid, node),
        }
        if not check_mode:
            out.update(self._after(args, sid, key))
        out["seconds"] = round(time.monotonic() - t0, 3)
        self._record(args, check_mode, {"ok": True, "id": sid, "time": utcnow_iso(), "seconds": out["seconds"],
                                        "offsite": out.get("offsite")}, out)  # fmt: skip
        return out

    def _after(self, args, sid, key):
        """Off-site copy (verified there) and retention; a failed copy fails the backup (backup.failed)."""
        out = {}
        bdir = args["backup_dir"]
        if args["offsite"]:
            try:
                res = _backup.copy_offsite(bdir, args["offsite"], sid, key)
            except (_backup_objects.BackupError, OSError) as exc:
                res = {"dest": args["offsite"], "id": sid, "ok": False, "copied": 0,
                       "problems": [{"file": "manifest.json", "problem": str(exc)}]}  # fmt: skip
            out["offsite"] = res
            if not res["ok"]:
                msg = "off-site copy of %s to %s does not verify: %s" % (sid, args["offsite"], res["problems"][:3])
                self._record(args, False, {"ok": False, "id": sid, "error": msg, "time": utcnow_iso()}, None)
                raise StepError(msg, snapshot_id=sid, backup_ok=False)
        policy = DEFAULT_POLICY["backup"]
        keep = args["keep_count"] if args["keep_count"] is not None else policy["keep_count"]
        days = args["keep_days"] if args["keep_days"] is not None else policy["keep_days"]
        drop = _backup.retention_plan(_backup.list_snapshots(bdir, args["node"], key), keep, days, utcnow())
        out["pruned"] = _backup.prune(bdir, [d for d in drop if d != sid])
        return out

    def _record(self, args, check_mode, status, out):
        """``status/<node>.json`` and one ``backup`` audit record (not in check mode)."""
        if check_mode:
            return
        status = dict(status, node=args["node"], change_id=args["change_id"] or None, workflow=args["workflow"])
        try:
            _backup.write_status(args["backup_dir"], args["node"], status)
        except (OSError, ValueError) as exc:
            self._display.warning("backup: cannot write the status file: %s" % exc)
        if not args["state_dir"]:
            return
        rec = {"event": "backup", "run_id": args["change_id"] or status.get("id") or "backup", "host": args["node"],
               "node": args["node"], "workflow": args["workflow"], "change_id": args["change_id"] or None,
               "ticket": args["ticket"] or None, "ok": status["ok"], "snapshot_id": status.get("id"),
               "error": status.get("error"), "user": _outcome.controller_user()}  # fmt: skip
        if out:
            rec.update({k: out.get(k) for k in ("files", "bytes", "stored_bytes", "restore_command")})
        try:
            _outcome.append_audit(args["state_dir"], [rec])
        except (OSError, ValueError) as exc:
            self._display.warning("backup: cannot append the audit record: %s" % exc)
