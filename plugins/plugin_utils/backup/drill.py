# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Restore drills (docs/backup.md "Drills"): restore a sample of snapshots into a scratch directory, compare every
file with the manifest, and measure restore time and data age against the policy's RTO and RPO.

A snapshot that is unsigned, not signed with the controller's key, or that the restore would refuse (a file
outside the node's backup sources, a link, a setuid mode) fails the drill, naming the file.

Pure Python, no Ansible imports; runs on the controller. :func:`run` does the drill, :func:`render_markdown`
writes the human report; the action ``gpuops.cluster.restore_drill`` stores both (0600).
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._files import ensure_private_dir, write_private_atomic
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import store as _backup
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import keys as _backup_keys
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import objects as _backup_objects
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import restore as _backup_restore

SCHEMA = "gpuops.backup-drill/v1"


def sample(snaps: List[Dict[str, Any]], nodes: Optional[List[str]], count: int) -> List[Dict[str, Any]]:
    """The newest snapshot of each node (of ``nodes``, or every node), at most ``count`` of them (oldest data
    first: the drill tests what a restore today would rely on)."""
    newest: Dict[str, Dict[str, Any]] = {}
    for s in snaps:
        if s.get("node") and (not nodes or s["node"] in nodes):
            newest[s["node"]] = s  # list_snapshots is oldest first: the last one wins
    picked = sorted(newest.values(), key=lambda s: (s.get("created") or "", s["id"]))
    return picked[: max(count, 0)]


def restore_one(backup_dir: str, snap_id: str, scratch: str, key: _backup_keys.SigningKey,
                rules: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:  # fmt: skip
    """Verify (signature, every object), check what a restore would write (``rules``: ``_backup_objects.restore_rules``; a
    snapshot the restore would refuse fails the drill), restore every file of the snapshot under
    ``scratch/<id>/`` and re-hash what was written."""
    t0 = time.monotonic()
    res: Dict[str, Any] = {"id": snap_id, "ok": False, "files": 0, "bytes": 0, "problems": []}
    ver = _backup.verify(backup_dir, snap_id, key)
    if not ver["ok"]:
        res["problems"] = ver["problems"]
        res["seconds"] = round(time.monotonic() - t0, 3)
        return res
    m = _backup.load_manifest(backup_dir, snap_id, key)
    res["problems"] = _backup_restore.plan_problems(m, rules)
    root = ensure_private_dir(os.path.join(scratch, snap_id))
    for f in m["files"]:
        target = os.path.join(root, f["file"])
        if not os.path.realpath(target).startswith(os.path.realpath(root) + os.sep):
            res["problems"].append({"file": f["file"], "problem": "outside the scratch directory"})
            continue
        try:
            data = _backup_objects.read_object(backup_dir, f["sha256"], max(f.get("size") or 0, 0))
        except (_backup_objects.BackupError, OSError) as exc:
            res["problems"].append({"file": f["file"], "problem": str(exc)})
            continue
        write_private_atomic(target, data)
        sha, size = _backup_objects.sha256_file(target)
        if sha != f["sha256"] or size != f["size"]:
            res["problems"].append({"file": f["file"], "problem": "restored copy differs (%s, %d bytes)" % (sha, size)})
        res["files"] += 1
        res["bytes"] += size
    res["ok"] = not res["problems"]
    res["seconds"] = round(time.monotonic() - t0, 3)
    return res


def run(  # noqa: PLR0913 - the drill's inputs: store, scratch, policy, time, selection, key and restore rules
    backup_dir: str,
    scratch: str,
    policy: Dict[str, Any],
    now,
    nodes: Optional[List[str]] = None,
    count: int = 3,
    keep_scratch: bool = False,
    *,
    key: _backup_keys.SigningKey,
    rules: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """The drill report: per snapshot restored (files, bytes, seconds, data age), against RTO/RPO."""
    rto_s = float(policy.get("rto_minutes", 30)) * 60
    rpo_h = float(policy.get("rpo_hours", 24))
    picked = sample(_backup.list_snapshots(backup_dir), nodes, count)
    results = []
    try:
        for s in picked:
            r = restore_one(backup_dir, s["id"], scratch, key, rules)
            created = parse_time(s.get("created"))
            age_h = round((now - created).total_seconds() / 3600.0, 3) if created else None
            r.update(node=s["node"], created=s.get("created"), data_age_hours=age_h,
                     rto_ok=r["seconds"] <= rto_s, rpo_ok=age_h is not None and age_h <= rpo_h)  # fmt: skip
            results.append(r)
    finally:
        if not keep_scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    missing = sorted(set(nodes or []) - {r["node"] for r in results})
    ok = bool(results) and not missing and all(r["ok"] and r["rto_ok"] and r["rpo_ok"] for r in results)
    return {
        "schema": SCHEMA,
        "generated_at": iso_z(now),
        "backup_dir": backup_dir,
        "rto_seconds": rto_s,
        "rpo_hours": rpo_h,
        "restores": results,
        "nodes_without_snapshot": missing,
        "max_restore_seconds": max((r["seconds"] for r in results), default=None),
        "max_data_age_hours": max((r["data_age_hours"] or 0 for r in results), default=None),
        "ok": ok,
    }


def render_markdown(rep: Dict[str, Any]) -> str:
    lines = ["# Restore drill %s" % rep["generated_at"], "",
             "Result: **%s** - RTO %ss, RPO %sh; slowest restore %ss, oldest data %sh." % (
                 "PASS" if rep["ok"] else "FAIL", rep["rto_seconds"], rep["rpo_hours"], rep["max_restore_seconds"],
                 rep["max_data_age_hours"]), "",
             "| node | snapshot | files | bytes | restore s | data age h | verified | RTO | RPO |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rep["restores"]:
        lines.append("| %s | %s | %d | %d | %s | %s | %s | %s | %s |" % (
            r["node"], r["id"], r["files"], r["bytes"], r["seconds"], r["data_age_hours"],
            "yes" if r["ok"] else "NO", "ok" if r["rto_ok"] else "MISSED", "ok" if r["rpo_ok"] else "MISSED"))  # fmt: skip
        for p in r["problems"]:
            lines.append("|  | %s: %s |  |  |  |  |  |  |  |" % (p["file"], str(p["problem"]).replace("|", "/")))
    if rep["nodes_without_snapshot"]:
        lines += ["", "No snapshot: %s" % ", ".join(rep["nodes_without_snapshot"])]
    return "\n".join(lines) + "\n"
