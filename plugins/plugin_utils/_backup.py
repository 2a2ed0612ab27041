# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The configuration backup store (docs/backup.md): content-addressed objects, snapshot manifests, verification.

Layout of ``gpuops_backup_dir`` (default ``<gpuops_state_dir>/backups``; directories 0700, files 0600)::

    objects/<sha256>                    every stored file once, named by its SHA-256 (identical files stored once)
    snapshots/<id>/manifest.json        schema gpuops.backup/v1: node, change id, time, every file's entry
    snapshots/<id>/manifest.sha256      the manifest's own SHA-256 (a changed manifest is a tampered snapshot)

Objects are written before the manifest, each atomically (temporary file, fsync, rename); a snapshot exists only
once its manifest does. :func:`verify` re-hashes every object of a snapshot; :func:`restore_plan` refuses a
snapshot that does not verify, naming the file. Pure Python, no Ansible imports; runs on the controller.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ensure_private_dir, write_private_atomic
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time, utcnow

SCHEMA = "gpuops.backup/v1"
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:+-]{0,200}")
_SHA = re.compile(r"[0-9a-f]{64}")
#: Entry kinds whose error fails the backup (what a restore needs); ``command`` errors are recorded as evidence.
FAIL_KINDS = ("file", "redfish", "controller")
#: Files of the state directory never copied into a snapshot (the backups themselves, lock files).
STATE_SKIP = ("backups", "locks")
MAX_STATE_BYTES = 256 * 1024 * 1024


class BackupError(ValueError):
    """A snapshot that cannot be written, read or trusted; the message names the file."""


def sha256_file(path: str) -> Tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def safe_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _SAFE.fullmatch(value) or value in (".", ".."):
        raise BackupError("invalid %s %r (letters, digits and _.@:+- only)" % (what, value))
    return value


def object_path(backup_dir: str, sha: str) -> str:
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise BackupError("invalid sha256 %r" % (sha,))
    return os.path.join(backup_dir, "objects", sha)


def snapshot_dir(backup_dir: str, snap_id: str) -> str:
    return os.path.join(backup_dir, "snapshots", safe_name(snap_id, "snapshot id"))


def new_id(backup_dir: str, node: str, now) -> str:
    base = "%s-%s" % (now.strftime("%Y%m%dT%H%M%S%fZ"), safe_name(node, "node"))
    sid, n = base, 1
    while os.path.exists(snapshot_dir(backup_dir, sid)):
        n += 1
        sid = "%s-%d" % (base, n)
    return sid


@contextlib.contextmanager
def store_lock(backup_dir: str, exclusive: bool) -> Iterator[None]:
    """The store's lock (``<backup_dir>/.lock``, flock on the controller's own disk): writers of snapshots hold it
    shared from their first object to their manifest, the object garbage collection of :func:`prune` holds it
    exclusively. Without it, a node's prune could delete the objects another node's backup has just stored but
    not yet named in its manifest (several hosts back up at once: one action per host, forks)."""
    ensure_private_dir(backup_dir)
    fd = os.open(os.path.join(backup_dir, ".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _store(backup_dir: str, data: bytes, sha: str, check_mode: bool) -> bool:
    """Write ``data`` as ``objects/<sha>`` unless an intact copy is there; True when written."""
    path = object_path(backup_dir, sha)
    if os.path.isfile(path) and sha256_file(path)[0] == sha:
        return False
    if not check_mode:
        write_private_atomic(path, data)
    return True


def state_entries(state_dir: str, backup_dir: str) -> List[Dict[str, Any]]:
    """The controller's state store and audit trail as entries (``controller/state/<relative path>``)."""
    out: List[Dict[str, Any]] = []
    root = os.path.realpath(state_dir)
    skip = {os.path.join(root, s) for s in STATE_SKIP} | {os.path.realpath(backup_dir)}
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if os.path.join(dirpath, d) not in skip)
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            entry = {"name": "controller/state/" + rel, "source": path, "path": path, "kind": "controller",
                     "restore": False, "status": "ok", "error": None}  # fmt: skip
            if os.path.islink(path) or not os.path.isfile(path) or name.endswith(".tmp"):
                continue
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError as exc:
                entry.update(status="error", error="cannot read: %s" % (exc.strerror or exc))
                out.append(entry)
                continue
            total += len(data)
            if total > MAX_STATE_BYTES:
                entry.update(status="error", error="state directory larger than %d bytes" % MAX_STATE_BYTES)
                out.append(entry)
                break
            entry.update(content=base64.b64encode(data).decode("ascii"), size=len(data))
            entry["sha256"] = hashlib.sha256(data).hexdigest()
            out.append(entry)
    return out


def _file_record(e: Dict[str, Any], node: str, change_id: str, when: str) -> Dict[str, Any]:
    keep = ("path", "kind", "mode", "uid", "gid", "owner", "group", "link")
    rec = {"file": e["name"], "sha256": e["sha256"], "size": e["size"], "source": e.get("source")}
    rec.update({k: e.get(k) for k in keep if e.get(k) is not None})
    rec.update(restore=bool(e.get("restore")), node=node, change_id=change_id or None, time=when)
    return rec


def _decode(e: Dict[str, Any]) -> bytes:
    try:
        data = base64.b64decode(e.get("content") or "", validate=True)
    except (ValueError, TypeError) as exc:
        raise BackupError("%s: content is not base64 (%s)" % (e.get("name"), exc)) from None
    if e.get("sha256") and hashlib.sha256(data).hexdigest() != e["sha256"]:
        raise BackupError("%s: content does not match the sha256 read on the node" % e.get("name"))
    return data


def write_snapshot(backup_dir: str, node: str, entries: List[Dict[str, Any]], meta: Dict[str, Any],
                   check_mode: bool = False, now=None) -> Dict[str, Any]:  # fmt: skip
    """Store every ``ok`` entry as an object and write the manifest (``meta``: change_id, ticket, workflow).

    Returns the manifest plus ``stored_bytes`` / ``stored_objects`` (new objects). Check mode writes nothing."""
    if check_mode:
        return _write_snapshot(backup_dir, node, entries, meta, check_mode, now)
    with store_lock(backup_dir, exclusive=False):
        return _write_snapshot(backup_dir, node, entries, meta, check_mode, now)


def _write_snapshot(backup_dir, node, entries, meta, check_mode, now) -> Dict[str, Any]:
    now = now or utcnow()
    when = iso_z(now)
    node = safe_name(node, "node")
    sid = new_id(backup_dir, node, now)
    files, absent, errors, seen = [], [], [], set()
    stored = stored_bytes = 0
    for e in entries:
        name = e.get("name")
        if not isinstance(name, str) or not name or name in seen or ".." in name.split("/"):
            raise BackupError("invalid or repeated entry name %r" % (name,))
        seen.add(name)
        if e.get("status") == "ok":
            data = _decode(e)
            e = dict(e, sha256=hashlib.sha256(data).hexdigest(), size=len(data))
            if _store(backup_dir, data, e["sha256"], check_mode):
                stored += 1
                stored_bytes += len(data)
            files.append(_file_record(e, node, meta.get("change_id"), when))
        elif e.get("status") == "absent":
            absent.append({"file": name, "source": e.get("source"), "note": e.get("error") or "not present"})
        else:
            errors.append({"file": name, "source": e.get("source"), "kind": e.get("kind"), "error": e.get("error")})
    manifest = {
        "schema": SCHEMA,
        "id": sid,
        "node": node,
        "change_id": meta.get("change_id") or None,
        "ticket": meta.get("ticket") or None,
        "workflow": meta.get("workflow") or None,
        "created": when,
        "files": sorted(files, key=lambda f: f["file"]),
        "absent": absent,
        "errors": errors,
        "total_bytes": sum(f["size"] for f in files),
    }
    if not check_mode:
        d = snapshot_dir(backup_dir, sid)
        ensure_private_dir(d)
        body = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
        write_private_atomic(os.path.join(d, "manifest.json"), body)
        write_private_atomic(os.path.join(d, "manifest.sha256"), hashlib.sha256(body.encode()).hexdigest() + "\n")
    return dict(manifest, stored_objects=stored, stored_bytes=stored_bytes)


def load_manifest(backup_dir: str, snap_id: str) -> Dict[str, Any]:
    """The manifest of a snapshot, checked against its ``manifest.sha256``; BackupError names what is wrong."""
    d = snapshot_dir(backup_dir, snap_id)
    path = os.path.join(d, "manifest.json")
    try:
        with open(path, "rb") as fh:
            body = fh.read()
        with open(os.path.join(d, "manifest.sha256"), encoding="ascii") as fh:
            want = fh.read().strip()
    except FileNotFoundError as exc:
        raise BackupError("snapshot %s is incomplete: %s is missing" % (snap_id, exc.filename)) from None
    except OSError as exc:
        raise BackupError("snapshot %s: cannot read %s: %s" % (snap_id, exc.filename, exc.strerror)) from None
    if hashlib.sha256(body).hexdigest() != want:
        raise BackupError("snapshot %s is tampered: %s does not match manifest.sha256" % (snap_id, path))
    try:
        doc = json.loads(body.decode("utf-8"))
    except ValueError as exc:
        raise BackupError("snapshot %s: %s is not JSON (%s)" % (snap_id, path, exc)) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or doc.get("id") != snap_id:
        raise BackupError("snapshot %s: %s is not a %s manifest of this snapshot" % (snap_id, path, SCHEMA))
    return doc


def verify(backup_dir: str, snap_id: str) -> Dict[str, Any]:
    """Re-hash every object of the snapshot: ``{ok, id, node, files, bytes, problems: [{file, problem}]}``."""
    try:
        m = load_manifest(backup_dir, snap_id)
    except BackupError as exc:
        return {"ok": False, "id": snap_id, "node": None, "files": 0, "bytes": 0,
                "problems": [{"file": "manifest.json", "problem": str(exc)}]}  # fmt: skip
    problems = []
    for f in m.get("files") or []:
        try:
            path = object_path(backup_dir, f.get("sha256"))
            sha, size = sha256_file(path)
        except BackupError as exc:
            problems.append({"file": f.get("file"), "problem": str(exc)})
            continue
        except FileNotFoundError:
            problems.append({"file": f.get("file"), "problem": "object %s is missing" % f.get("sha256")})
            continue
        except OSError as exc:
            problems.append({"file": f.get("file"), "problem": "object unreadable: %s" % exc.strerror})
            continue
        if sha != f["sha256"] or size != f.get("size"):
            problems.append({"file": f["file"], "problem": "checksum mismatch: object %s hashes to %s (%d bytes, "
                             "manifest %s bytes)" % (f["sha256"], sha, size, f.get("size"))})  # fmt: skip
    return {"ok": not problems, "id": snap_id, "node": m.get("node"), "files": len(m.get("files") or []),
            "bytes": m.get("total_bytes", 0), "problems": problems, "created": m.get("created"),
            "change_id": m.get("change_id")}  # fmt: skip


def refusal(result: Dict[str, Any]) -> str:
    """The one-line refusal of a snapshot that does not verify, naming the first files."""
    names = ", ".join("%s (%s)" % (p["file"], p["problem"]) for p in result["problems"][:3])
    more = len(result["problems"]) - 3
    return "snapshot %s does not verify: %s%s" % (result["id"], names, " and %d more" % more if more > 0 else "")


def list_snapshots(backup_dir: str, node: Optional[str] = None) -> List[Dict[str, Any]]:
    """``{id, node, created, change_id, ok}`` of every snapshot (newest last); an unreadable one has ok False."""
    root = os.path.join(backup_dir, "snapshots")
    try:
        ids = sorted(os.listdir(root))
    except FileNotFoundError:
        return []
    out = []
    for sid in ids:
        if not _SAFE.fullmatch(sid):
            continue
        try:
            m = load_manifest(backup_dir, sid)
            rec = {"id": sid, "node": m.get("node"), "created": m.get("created"), "change_id": m.get("change_id"),
                   "ok": True, "files": len(m.get("files") or []), "bytes": m.get("total_bytes", 0)}  # fmt: skip
        except BackupError as exc:
            rec = {"id": sid, "node": None, "created": None, "change_id": None, "ok": False, "error": str(exc)}
        if node is None or rec["node"] == node:
            out.append(rec)
    return sorted(out, key=lambda r: (r["created"] or "", r["id"]))


def restore_plan(backup_dir: str, snap_id: str, node: Optional[str] = None) -> Dict[str, Any]:
    """Verify the snapshot (every object) and list what a restore writes; refuses (BackupError) naming the file."""
    res = verify(backup_dir, snap_id)
    if not res["ok"]:
        raise BackupError(refusal(res))
    m = load_manifest(backup_dir, snap_id)
    if node is not None and m["node"] != node:
        raise BackupError("snapshot %s is of node %s, not %s" % (snap_id, m["node"], node))
    files = []
    for f in m["files"]:
        if f.get("restore") and f.get("kind") == "file" and str(f.get("path") or "").startswith("/"):
            files.append(dict(f, object=object_path(backup_dir, f["sha256"])))
    bios = None
    for f in m["files"]:
        if f["file"] == "redfish/bios.json":
            with open(object_path(backup_dir, f["sha256"]), "rb") as fh:
                bios = json.loads(fh.read().decode("utf-8")).get("Attributes")
    return {"id": snap_id, "node": m["node"], "created": m["created"], "change_id": m.get("change_id"),
            "files": files, "bios": bios, "verified": res}  # fmt: skip


def retention_plan(snaps: List[Dict[str, Any]], keep: int, max_age_days: float, now) -> List[str]:
    """Snapshot ids to delete: per node, beyond the newest ``keep``, or older than ``max_age_days`` (the newest
    verified snapshot of a node is always kept); unreadable snapshots are never deleted here (they are evidence)."""
    by_node: Dict[str, List[Dict[str, Any]]] = {}
    for s in snaps:
        if s.get("ok") and s.get("node"):
            by_node.setdefault(s["node"], []).append(s)
    drop = []
    for items in by_node.values():
        items = sorted(items, key=lambda r: (r["created"] or "", r["id"]), reverse=True)
        for i, s in enumerate(items):
            created = parse_time(s["created"])
            old = created is not None and (now - created).total_seconds() > max_age_days * 86400
            if i > 0 and (i >= keep or old):
                drop.append(s["id"])
    return sorted(drop)


def prune(backup_dir: str, ids: List[str], check_mode: bool = False) -> Dict[str, Any]:
    """Delete the snapshots ``ids`` and every object no remaining manifest references (under the store's exclusive
    lock: no other backup is between storing its objects and writing its manifest)."""
    if check_mode:
        return _prune(backup_dir, ids, check_mode)
    with store_lock(backup_dir, exclusive=True):
        return _prune(backup_dir, ids, check_mode)


def _prune(backup_dir: str, ids: List[str], check_mode: bool) -> Dict[str, Any]:
    if not check_mode:
        for sid in ids:
            shutil.rmtree(snapshot_dir(backup_dir, sid))
    keep_ids = {s["id"] for s in list_snapshots(backup_dir)} - set(ids)
    used = set()
    for sid in keep_ids:
        try:
            used |= {f["sha256"] for f in load_manifest(backup_dir, sid).get("files") or []}
        except BackupError:
            return {"snapshots": ids, "objects": [], "note": "an unreadable snapshot: objects kept"}
    root = os.path.join(backup_dir, "objects")
    unused = sorted(n for n in (os.listdir(root) if os.path.isdir(root) else []) if _SHA.fullmatch(n) and n not in used)
    if not check_mode:
        for n in unused:
            os.unlink(os.path.join(root, n))
    return {"snapshots": ids, "objects": unused}


def copy_offsite(backup_dir: str, dest: str, snap_id: str, check_mode: bool = False) -> Dict[str, Any]:
    """Copy one snapshot (its objects, then its manifest) to ``dest`` (another backup dir), then verify it there."""
    m = load_manifest(backup_dir, snap_id)
    if check_mode:
        return {"dest": dest, "id": snap_id, "ok": None, "copied": 0}
    copied = 0
    for f in m["files"]:
        target = object_path(dest, f["sha256"])
        if os.path.isfile(target) and sha256_file(target)[0] == f["sha256"]:
            continue
        with open(object_path(backup_dir, f["sha256"]), "rb") as fh:
            write_private_atomic(target, fh.read())
        copied += 1
    src = snapshot_dir(backup_dir, snap_id)
    for name in ("manifest.json", "manifest.sha256"):
        with open(os.path.join(src, name), "rb") as fh:
            write_private_atomic(os.path.join(snapshot_dir(dest, snap_id), name), fh.read())
    res = verify(dest, snap_id)
    return {"dest": dest, "id": snap_id, "ok": res["ok"], "copied": copied, "problems": res["problems"]}


def status(backup_dir: str, nodes: List[str], max_age_hours: float, now) -> Dict[str, Dict[str, Any]]:
    """Per node: the newest verified snapshot and its age (``stale`` when none is newer than ``max_age_hours``),
    and the last recorded failure (``<backup_dir>/status/<node>.json``, written by the backup step)."""
    snaps = list_snapshots(backup_dir)
    out = {}
    for node in nodes:
        mine = [s for s in snaps if s["node"] == node and s["ok"]]
        last = mine[-1] if mine else None
        created = parse_time(last["created"]) if last else None
        age_h = (now - created).total_seconds() / 3600.0 if created else None
        failed = read_status(backup_dir, node)
        out[node] = {"last": last["id"] if last else None, "created": last["created"] if last else None,
                     "age_hours": round(age_h, 2) if age_h is not None else None,
                     "stale": age_h is None or age_h > max_age_hours,
                     "failed": failed if failed and not failed.get("ok") else None}  # fmt: skip
    return out


def write_status(backup_dir: str, node: str, doc: Dict[str, Any]) -> str:
    path = os.path.join(backup_dir, "status", safe_name(node, "node") + ".json")
    return write_private_atomic(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")


def read_status(backup_dir: str, node: str) -> Optional[Dict[str, Any]]:
    try:
        with open(os.path.join(backup_dir, "status", safe_name(node, "node") + ".json"), encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def restore_command(snap_id: str, node: str) -> str:
    """The exact command that puts this snapshot back (add ``--check --diff`` first to see what it would write)."""
    return "ansible-playbook gpuops.cluster.restore -e gpuops_backup_id=%s -l %s --diff" % (snap_id, node)
