# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Restoring a snapshot (docs/backup.md): only what the node's configured sources produced, from a snapshot that
verifies.

Pure Python, no Ansible imports; runs on the controller.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils import _backup as _node
from ansible_collections.gpuops.cluster.plugins.module_utils._files import write_private_atomic
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup.keys import (
    SigningKey,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup.objects import (
    BackupError,
    LEGACY_SCHEMAS,
    MAX_MANIFEST_BYTES,
    SIG_FILE,
    UnsignedSnapshot,
    _read_small,
    object_path,
    read_object,
    restore_rules,
    snapshot_dir,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup.store import (
    _result,
    _verify_objects,
    load_manifest,
    refusal,
)


# ---- restoring ------------------------------------------------------------------------------------------------


def plan_problems(m: Dict[str, Any], rules: Optional[Mapping[str, Any]] = None) -> List[Dict[str, Any]]:
    """Why a restore of manifest ``m`` must not write its files (empty: it may): every record marked restorable
    must be a plain file the rules' sources produce, with its captured owner and a plain mode, within the limits."""
    rules = rules or restore_rules()
    lim, sources = rules["limits"], rules["sources"]
    problems: List[Dict[str, Any]] = []
    restorable = [f for f in m.get("files") or [] if f.get("restore")]
    paths: Dict[str, str] = {}
    total = 0
    for f in restorable:
        name = f.get("file")
        why = [] if f.get("kind") == "file" else ["marked restorable but of kind %r" % f.get("kind")]
        why += _node.restorable_problems(f, sources)
        size = f.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            why.append("size %r is not a byte count" % (size,))
        elif size > lim["entry_bytes"]:
            why.append("%d bytes: more than the limit of %d per entry" % (size, lim["entry_bytes"]))
        else:
            total += size
        if isinstance(f.get("path"), str) and f["path"] in paths:
            why.append("%s is also written by %s" % (f["path"], paths[f["path"]]))
        paths.setdefault(str(f.get("path")), str(name))
        problems += [{"file": name, "problem": w} for w in why]
    if len(restorable) > lim["entries"]:
        problems.append({"file": "manifest.json", "problem": "%d restorable files: more than the limit of %d"
                         % (len(restorable), lim["entries"])})  # fmt: skip
    if total > lim["snapshot_bytes"]:
        problems.append({"file": "manifest.json", "problem": "%d bytes to restore: more than the limit of %d"
                         % (total, lim["snapshot_bytes"])})  # fmt: skip
    return problems


def _owner(f: Dict[str, Any], name: str, num: str) -> str:
    return f[name] if f.get(name) is not None else str(f[num])


def restore_plan(backup_dir: str, snap_id: str, node: Optional[str] = None, *, key: SigningKey,
                 rules: Optional[Mapping[str, Any]] = None, stage_dir: Optional[str] = None,
                 accept_unsigned: bool = False) -> Dict[str, Any]:  # fmt: skip
    """Verify the snapshot (signature, every object), check every restorable file against the node's configured
    sources and the limits (``rules``: :func:`restore_rules`; :func:`plan_problems`), and list what a restore
    writes; refuses (BackupError) naming the files, with nothing planned. ``stage_dir``: each verified object is
    copied there (0600) and the plan names that copy, so what the restore writes is what was verified, whatever
    happens to the store meanwhile. ``accept_unsigned``: an intact unsigned (v1) snapshot is planned too
    (``unsigned`` True): only for :func:`sign_legacy`, which signs it after this plan has passed."""
    rules = rules or restore_rules()
    unsigned = False
    try:
        m = load_manifest(backup_dir, snap_id, key)
    except UnsignedSnapshot:
        if not accept_unsigned:
            raise
        m = load_manifest(backup_dir, snap_id)
        unsigned = True
    problems = _verify_objects(backup_dir, m)
    if problems:
        raise BackupError(refusal(_result(snap_id, m, problems)))
    if node is not None and m.get("node") != node:
        raise BackupError("snapshot %s is of node %s, not %s" % (snap_id, m.get("node"), node))
    problems = plan_problems(m, rules)
    if problems:
        text = "; ".join("%s (%s)" % (p["file"], p["problem"]) for p in problems[:6])
        more = " and %d more" % (len(problems) - 6) if len(problems) > 6 else ""
        raise BackupError("snapshot %s is refused, nothing is restored: %s%s" % (snap_id, text, more))
    lim = rules["limits"]
    files = []
    for i, f in enumerate(rec for rec in m["files"] if rec.get("restore")):
        obj = object_path(backup_dir, f["sha256"])
        if stage_dir is not None:
            data = read_object(backup_dir, f["sha256"], lim["entry_bytes"])
            obj = write_private_atomic(os.path.join(stage_dir, "%04d-%s" % (i, os.path.basename(f["path"]))), data)
        files.append({"file": f["file"], "path": f["path"], "object": obj, "sha256": f["sha256"], "size": f["size"],
                      "mode": f["mode"], "owner": _owner(f, "owner", "uid"), "group": _owner(f, "group", "gid"),
                      "uid": f.get("uid"), "gid": f.get("gid")})  # fmt: skip
    bios = None
    for f in m["files"]:
        if f.get("file") == "redfish/bios.json":
            try:
                doc = json.loads(read_object(backup_dir, f.get("sha256"), lim["entry_bytes"]).decode("utf-8"))
            except (ValueError, RecursionError) as exc:
                raise BackupError(
                    "snapshot %s: redfish/bios.json is not JSON (%s)" % (snap_id, str(exc)[:200])
                ) from None
            bios = doc.get("Attributes") if isinstance(doc, dict) else None
            if bios is not None and not isinstance(bios, dict):
                raise BackupError("snapshot %s: redfish/bios.json Attributes is not a mapping" % snap_id)
    verified = _result(snap_id, m, [], unsigned=unsigned)
    return {"id": snap_id, "node": m["node"], "created": m["created"], "change_id": m.get("change_id"),
            "files": files, "bios": bios, "verified": verified, "unsigned": unsigned}  # fmt: skip


def sign_legacy(backup_dir: str, snap_id: str, key: SigningKey) -> str:
    """Sign an intact unsigned (gpuops.backup/v1) snapshot with ``key``, after :func:`restore_plan` with
    ``accept_unsigned`` has passed and an operator checked what it restores. Returns the signature file."""
    d = snapshot_dir(backup_dir, snap_id)
    body = _read_small(os.path.join(d, "manifest.json"), MAX_MANIFEST_BYTES)
    want = _read_small(os.path.join(d, "manifest.sha256"), 200).decode("ascii", "replace").strip()
    if hashlib.sha256(body).hexdigest() != want:
        raise BackupError("snapshot %s is tampered: manifest.json does not match manifest.sha256" % snap_id)
    doc = json.loads(body.decode("utf-8"))
    if not isinstance(doc, dict) or doc.get("schema") not in LEGACY_SCHEMAS or doc.get("id") != snap_id:
        raise BackupError("snapshot %s is not an unsigned legacy snapshot" % snap_id)
    if os.path.lexists(os.path.join(d, SIG_FILE)):
        raise BackupError("snapshot %s is already signed" % snap_id)
    return write_private_atomic(os.path.join(d, SIG_FILE), key.sign(body))
