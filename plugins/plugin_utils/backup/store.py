# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The configuration backup store (docs/backup.md): content-addressed objects, signed snapshot manifests, verification.

Layout of ``gpuops_backup_dir`` (default ``<gpuops_state_dir>/backups``; directories 0700, files 0600)::

    objects/<sha256>                    every stored file once, named by its SHA-256 (identical files stored once)
    snapshots/<id>/manifest.json        schema gpuops.backup/v2: node, change id, time, every file's entry
    snapshots/<id>/manifest.sha256      the manifest's own SHA-256 (integrity: a damaged manifest)
    snapshots/<id>/manifest.sig         ``hmac-sha256 <key id> <mac>``: the manifest signed with a key that lives
                                        outside the store (authenticity: anyone who can write the store, or the
                                        off-site copy, cannot make a snapshot the restore accepts)

Objects are written before the manifest, each atomically (temporary file, fsync, rename); a snapshot exists only
once its manifest does. :func:`verify` checks the signature and re-hashes every object of a snapshot;
:func:`restore_plan` refuses a snapshot that does not verify, is unsigned, or would write anything but a plain
file that the node's configured sources produce (``module_utils/_backup.restorable_problems``), naming the file.
What a node returns is bounded (:data:`LIMITS`); the controller's state goes in without tickets, ansible-runner
artifacts and files that look like secrets, and no object holding a configured secret value is stored.
Pure Python, no Ansible imports; runs on the controller.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import shutil
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils import _backup as _node
from ansible_collections.gpuops.cluster.plugins.module_utils._files import ensure_private_dir, write_private_atomic
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time, utcnow
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup.keys import (
    SigningKey,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup.objects import (
    BackupError,
    LEGACY_SCHEMAS,
    MAX_MANIFEST_BYTES,
    NODE_KINDS,
    SCHEMA,
    SIG_FILE,
    UnsignedSnapshot,
    _LIMIT_VARS,
    _SAFE,
    _SHA,
    _read_small,
    _store,
    new_id,
    object_path,
    read_object,
    restore_rules,
    safe_name,
    sha256_file,
    snapshot_dir,
    store_lock,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup.secrets import (
    _scrub,
    secret_in,
)


# ---- writing a snapshot ---------------------------------------------------------------------------------------


def _b64_size(content: Any) -> int:
    """The decoded size of base64 ``content`` without decoding it."""
    n = len(content)
    return n * 3 // 4 - (2 if content.endswith("==") else 1 if content.endswith("=") else 0)


def _decode(e: Dict[str, Any]) -> bytes:
    try:
        data = base64.b64decode(e.get("content") or "", validate=True)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise BackupError("%s: content is not base64 (%s)" % (e.get("name"), exc)) from None
    if e.get("sha256") and hashlib.sha256(data).hexdigest() != e["sha256"]:
        raise BackupError("%s: content does not match the sha256 read on the node" % e.get("name"))
    return data


def _file_record(e: Dict[str, Any], node: str, change_id: str, when: str) -> Dict[str, Any]:
    keep = ("path", "kind", "mode", "uid", "gid", "owner", "group", "link", "note")
    rec = {"file": e["name"], "sha256": e["sha256"], "size": e["size"], "source": e.get("source")}
    rec.update({k: e.get(k) for k in keep if e.get(k) is not None})
    rec.update(restore=bool(e.get("restore")), node=node, change_id=change_id or None, time=when)
    return rec


def _check_name(name: Any, seen: set) -> str:
    if not isinstance(name, str) or not name or name in seen or ".." in name.split("/") or "\0" in name:
        raise BackupError("invalid or repeated entry name %r" % (name,))
    seen.add(name)
    return name


def _node_entry(node: str, e: Any, seen: set, rules: Mapping[str, Any], total: int,
                secrets: Sequence[Tuple[str, str]], out: Dict[str, Any]) -> int:  # fmt: skip
    """Check one entry a node returned and file it into ``out``; returns the bytes so far."""
    lim = rules["limits"]
    if not isinstance(e, dict):
        raise BackupError("%s returned an entry that is not a mapping: %r" % (node, type(e).__name__))
    name = _check_name(e.get("name"), seen)
    if e.get("kind") not in NODE_KINDS or name.startswith("controller/state/"):
        raise BackupError("%s returned %s of kind %r: a node returns only %s entries"
                          % (node, name, e.get("kind"), "/".join(NODE_KINDS)))  # fmt: skip
    if e.get("status") == "absent":
        out["absent"].append({"file": name, "source": _scrub(e.get("source"), secrets),
                              "note": _scrub(e.get("error"), secrets) or "not present"})  # fmt: skip
        return total
    if e.get("status") != "ok":
        out["errors"].append({"file": name, "source": _scrub(e.get("source"), secrets), "kind": e.get("kind"),
                              "error": _scrub(str(e.get("error"))[:500], secrets)})  # fmt: skip
        return total
    content = e.get("content")
    if not isinstance(content, str):
        raise BackupError("%s returned %s without content" % (node, name))
    size = _b64_size(content)
    if size > lim["entry_bytes"]:
        raise BackupError("%s returned %s of %d bytes: more than the controller's limit of %d bytes per entry (%s)"
                          % (node, name, size, lim["entry_bytes"], _LIMIT_VARS["entry_bytes"]))  # fmt: skip
    total += size
    if total > lim["snapshot_bytes"]:
        raise BackupError("%s returned more than the controller's limit of %d bytes per snapshot (%s), reached at %s"
                          % (node, lim["snapshot_bytes"], _LIMIT_VARS["snapshot_bytes"], name))  # fmt: skip
    data = _decode(e)
    rec = {k: v for k, v in e.items() if k != "content"}
    rec.update(sha256=hashlib.sha256(data).hexdigest(), size=len(data), restore=False)
    if e.get("restore") is True and e.get("kind") == "file":
        problems = _node.restorable_problems(e, rules["sources"])
        if problems:
            raise BackupError("%s returned %s as restorable, and a restore must not write it: %s"
                              % (node, name, "; ".join(problems)))  # fmt: skip
        rec["restore"] = True
    where = secret_in(data, secrets)
    if where and rec["restore"]:
        raise BackupError("%s: %s holds a configured secret value (%s); a restore needs that file whole, so the "
                          "backup is refused: take the secret out of the file" % (node, name, where))  # fmt: skip
    if where:
        out["withheld"].append({"file": name, "source": e.get("source"),
                                "reason": "it holds a configured secret value (%s)" % where})  # fmt: skip
    else:
        out["store"].append((rec, data))
    return total


def prepare(node: str, entries: List[Dict[str, Any]], state: List[Dict[str, Any]] = (),
            rules: Optional[Mapping[str, Any]] = None, secrets: Sequence[Tuple[str, str]] = ()) -> Dict[str, Any]:  # fmt: skip
    """Check what a snapshot would store, before anything is written; raises BackupError naming the node and entry.

    ``entries`` come from the node (and its BMC, the Slurm controller): untrusted. At most ``rules["limits"]``
    entries, bytes per entry and bytes in all; only the kinds a node returns; an entry marked restorable must be a
    plain file that ``rules["sources"]`` produce (:func:`module_utils._backup.restorable_problems`) and must hold no
    configured secret (the backup is refused: a restore needs it whole). ``rules``: :func:`restore_rules`.
    ``state``: the controller's own files (:func:`state_entries`). An evidence entry holding a configured secret is
    *withheld* (not stored, named in the manifest)."""
    rules = rules or restore_rules()
    lim = rules["limits"]
    out: Dict[str, Any] = {"store": [], "absent": [], "errors": [], "excluded": [], "withheld": []}
    if len(entries) > lim["entries"]:
        first_beyond = _name_of(entries[lim["entries"]])
        raise BackupError(
            "%s returned %d entries: more than the controller's limit of %d per snapshot (%s); the first beyond it: %s"
            % (node, len(entries), lim["entries"], _LIMIT_VARS["entries"], first_beyond)
        )
    seen: set = set()
    total = 0
    for e in entries:
        total = _node_entry(node, e, seen, rules, total, secrets, out)
    for e in state:
        name = _check_name(e.get("name"), seen)
        if e.get("status") == "excluded":
            out["excluded"].append({"file": name, "reason": e.get("error")})
            continue
        if e.get("status") != "ok":
            out["errors"].append(
                {"file": name, "source": e.get("source"), "kind": "controller", "error": e.get("error")}
            )
            continue
        data = e["data"] if isinstance(e.get("data"), bytes) else _decode(e)
        where = secret_in(data, secrets)
        if where:
            out["withheld"].append({"file": name, "source": e.get("source"),
                                    "reason": "it holds a configured secret value (%s)" % where})  # fmt: skip
            continue
        rec = {k: v for k, v in e.items() if k not in ("data", "content")}
        rec.update(sha256=hashlib.sha256(data).hexdigest(), size=len(data), restore=False)
        out["store"].append((rec, data))
    return out


def _name_of(e: Any) -> str:
    return str(e.get("name")) if isinstance(e, dict) else repr(e)[:80]


def write_snapshot(backup_dir: str, node: str, entries: Any, meta: Dict[str, Any], *, key: Optional[SigningKey],
                   check_mode: bool = False, now=None) -> Dict[str, Any]:  # fmt: skip
    """Store every entry that passed :func:`prepare` as an object and write the signed manifest (``meta``:
    change_id, ticket, workflow). ``entries``: what :func:`prepare` returned, or a node's entry list (checked with
    the default rules, no state). Returns the manifest plus ``stored_bytes`` / ``stored_objects`` (new objects).
    Check mode writes nothing (and needs no key)."""
    node = safe_name(node, "node")
    if key is None and not check_mode:
        raise BackupError("a snapshot is written only signed: no signing key")
    prepared = entries if isinstance(entries, dict) else prepare(node, entries)
    if check_mode:
        return _write_snapshot(backup_dir, node, prepared, meta, key, check_mode, now)
    with store_lock(backup_dir, exclusive=False):
        return _write_snapshot(backup_dir, node, prepared, meta, key, check_mode, now)


def _write_snapshot(backup_dir, node, prepared, meta, key, check_mode, now) -> Dict[str, Any]:
    now = now or utcnow()
    when = iso_z(now)
    sid = new_id(backup_dir, node, now)
    files = []
    stored = stored_bytes = 0
    for rec, data in prepared["store"]:
        if _store(backup_dir, data, rec["sha256"], check_mode):
            stored += 1
            stored_bytes += len(data)
        files.append(_file_record(rec, node, meta.get("change_id"), when))
    manifest = {
        "schema": SCHEMA,
        "id": sid,
        "node": node,
        "change_id": meta.get("change_id") or None,
        "ticket": meta.get("ticket") or None,
        "workflow": meta.get("workflow") or None,
        "created": when,
        "files": sorted(files, key=lambda f: f["file"]),
        "absent": prepared["absent"],
        "errors": prepared["errors"],
        "excluded": prepared["excluded"],
        "withheld": prepared["withheld"],
        "total_bytes": sum(f["size"] for f in files),
        "signed_by": key.key_id if key is not None else None,
    }
    if not check_mode:
        d = snapshot_dir(backup_dir, sid)
        ensure_private_dir(d)
        body = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode("utf-8")
        write_private_atomic(os.path.join(d, SIG_FILE), key.sign(body))
        write_private_atomic(os.path.join(d, "manifest.sha256"), hashlib.sha256(body).hexdigest() + "\n")
        write_private_atomic(os.path.join(d, "manifest.json"), body)  # last: the snapshot exists from here on
    return dict(manifest, stored_objects=stored, stored_bytes=stored_bytes)


# ---- reading and verifying ------------------------------------------------------------------------------------
def unsigned_message(snap_id: str, node: Any, backup_dir: str) -> str:
    return (
        "snapshot %s is unsigned (gpuops.backup/v1, taken before snapshots were signed): a restore does not trust it. "
        "Take a new snapshot: ansible-playbook gpuops.cluster.backup -l %s; or check this one and sign it with this "
        "controller's key: ansible localhost -m gpuops.cluster.restore_plan -a 'backup_dir=%s snapshot_id=%s node=%s "
        "sign_unsigned=true' (with --check first: it lists what a restore would write, and signs nothing)"
        % (snap_id, node or "NODE", backup_dir, snap_id, node or "NODE")
    )


def load_manifest(backup_dir: str, snap_id: str, key: Optional[SigningKey] = None) -> Dict[str, Any]:
    """The manifest of a snapshot, checked against its ``manifest.sha256`` and, with ``key``, its signature
    (an unsigned gpuops.backup/v1 snapshot: :class:`UnsignedSnapshot`); BackupError names what is wrong.
    Without ``key`` only the integrity is checked (listing, retention, the findings)."""
    d = snapshot_dir(backup_dir, snap_id)
    path = os.path.join(d, "manifest.json")
    try:
        body = _read_small(path, MAX_MANIFEST_BYTES)
        want = _read_small(os.path.join(d, "manifest.sha256"), 200).decode("ascii", "replace").strip()
    except FileNotFoundError as exc:
        raise BackupError("snapshot %s is incomplete: %s is missing" % (snap_id, exc.filename)) from None
    except BackupError as exc:
        raise BackupError("snapshot %s: %s" % (snap_id, exc)) from None
    except OSError as exc:
        raise BackupError("snapshot %s: cannot read %s: %s" % (snap_id, exc.filename, exc.strerror)) from None
    if hashlib.sha256(body).hexdigest() != want:
        raise BackupError("snapshot %s is tampered: %s does not match manifest.sha256" % (snap_id, path))
    try:
        doc = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise BackupError("snapshot %s: %s is not JSON (%s)" % (snap_id, path, str(exc)[:200])) from None
    if not isinstance(doc, dict) or doc.get("schema") not in (SCHEMA,) + LEGACY_SCHEMAS or doc.get("id") != snap_id:
        raise BackupError("snapshot %s: %s is not a %s manifest of this snapshot" % (snap_id, path, SCHEMA))
    if not isinstance(doc.get("files"), list) or not all(isinstance(f, dict) for f in doc["files"]):
        raise BackupError("snapshot %s: %s has no list of files" % (snap_id, path))
    if key is None:
        return doc
    try:
        sig = _read_small(os.path.join(d, SIG_FILE), 512)
    except FileNotFoundError:
        if doc["schema"] in LEGACY_SCHEMAS:
            raise UnsignedSnapshot(unsigned_message(snap_id, doc.get("node"), backup_dir)) from None
        raise BackupError("snapshot %s is not authentic: %s is missing" % (snap_id, SIG_FILE)) from None
    except (OSError, BackupError) as exc:
        raise BackupError("snapshot %s is not authentic: %s" % (snap_id, exc)) from None
    problem = key.check(body, sig)
    if problem:
        raise BackupError("snapshot %s is not authentic: %s" % (snap_id, problem))
    return doc


def _verify_objects(backup_dir: str, m: Dict[str, Any]) -> List[Dict[str, Any]]:
    problems = []
    for f in m.get("files") or []:
        try:
            sha, size = sha256_file(object_path(backup_dir, f.get("sha256")))
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
    return problems


def _result(snap_id: str, m: Optional[Dict[str, Any]], problems: List[Dict[str, Any]], **extra: Any) -> Dict[str, Any]:
    m = m or {}
    return dict({"ok": not problems, "id": snap_id, "node": m.get("node"), "files": len(m.get("files") or []),
                 "bytes": m.get("total_bytes", 0), "problems": problems, "created": m.get("created"),
                 "change_id": m.get("change_id"), "signed_by": m.get("signed_by")}, **extra)  # fmt: skip


def verify(backup_dir: str, snap_id: str, key: SigningKey) -> Dict[str, Any]:
    """Check the signature and re-hash every object of the snapshot:
    ``{ok, id, node, files, bytes, problems: [{file, problem}], unsigned}``."""
    try:
        m = load_manifest(backup_dir, snap_id, key)
    except BackupError as exc:
        return _result(snap_id, None, [{"file": "manifest.json", "problem": str(exc)}],
                       unsigned=isinstance(exc, UnsignedSnapshot))  # fmt: skip
    return _result(snap_id, m, _verify_objects(backup_dir, m), unsigned=False)


def refusal(result: Dict[str, Any]) -> str:
    """The one-line refusal of a snapshot that does not verify, naming the first files."""
    names = ", ".join("%s (%s)" % (p["file"], p["problem"]) for p in result["problems"][:3])
    more = len(result["problems"]) - 3
    return "snapshot %s does not verify: %s%s" % (result["id"], names, " and %d more" % more if more > 0 else "")


def list_snapshots(
    backup_dir: str, node: Optional[str] = None, key: Optional[SigningKey] = None
) -> List[Dict[str, Any]]:
    """``{id, node, created, change_id, ok, signed}`` of every snapshot (newest last). ``ok``: the manifest is
    intact (and, with ``key``, authentic or an intact unsigned legacy one); ``signed``: with ``key``, whether its
    signature is this key's (False for a legacy one), None without a key. An unreadable one has ok False."""
    root = os.path.join(backup_dir, "snapshots")
    try:
        ids = sorted(os.listdir(root))
    except FileNotFoundError:
        return []
    out = []
    for sid in ids:
        if not _SAFE.fullmatch(sid):
            continue
        signed = None
        try:
            try:
                m = load_manifest(backup_dir, sid, key)
                signed = True if key is not None else None
            except UnsignedSnapshot:
                m = load_manifest(backup_dir, sid)
                signed = False
            rec = {"id": sid, "node": m.get("node"), "created": m.get("created"), "change_id": m.get("change_id"),
                   "ok": True, "signed": signed, "files": len(m.get("files") or []),
                   "bytes": m.get("total_bytes", 0)}  # fmt: skip
        except BackupError as exc:
            rec = {"id": sid, "node": None, "created": None, "change_id": None, "ok": False, "signed": None,
                   "error": str(exc)}  # fmt: skip
        if node is None or rec["node"] == node:
            out.append(rec)
    return sorted(out, key=lambda r: (r["created"] or "", r["id"]))


# ---- retention, off-site, status ------------------------------------------------------------------------------
def retention_plan(snaps: List[Dict[str, Any]], keep: int, max_age_days: float, now) -> List[str]:
    """Snapshot ids to delete: per node, beyond the newest ``keep``, or older than ``max_age_days`` (the newest
    verified snapshot of a node is always kept); unreadable snapshots are never deleted here (they are evidence).
    Unsigned legacy snapshots (``signed`` False) are not counted and are deleted once older than ``max_age_days``."""
    by_node: Dict[str, List[Dict[str, Any]]] = {}
    drop = []
    for s in snaps:
        if not (s.get("ok") and s.get("node")):
            continue
        created = parse_time(s["created"])
        if s.get("signed") is False:
            if created is not None and (now - created).total_seconds() > max_age_days * 86400:
                drop.append(s["id"])
            continue
        by_node.setdefault(s["node"], []).append(s)
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
            used |= {f.get("sha256") for f in load_manifest(backup_dir, sid).get("files") or []}
        except BackupError:
            return {"snapshots": ids, "objects": [], "note": "an unreadable snapshot: objects kept"}
    root = os.path.join(backup_dir, "objects")
    unused = sorted(n for n in (os.listdir(root) if os.path.isdir(root) else []) if _SHA.fullmatch(n) and n not in used)
    if not check_mode:
        for n in unused:
            os.unlink(os.path.join(root, n))
    return {"snapshots": ids, "objects": unused}


def copy_offsite(backup_dir: str, dest: str, snap_id: str, key: SigningKey, check_mode: bool = False) -> Dict[str, Any]:
    """Copy one verified snapshot (its objects, each re-hashed as it is read, then its manifest and signature) to
    ``dest`` (another backup dir), then verify it there. Only what the snapshot stored is carried."""
    m = load_manifest(backup_dir, snap_id, key)
    if check_mode:
        return {"dest": dest, "id": snap_id, "ok": None, "copied": 0}
    copied = 0
    limit = max([f.get("size") or 0 for f in m["files"]] + [0])
    for f in m["files"]:
        target = object_path(dest, f["sha256"])
        try:
            if sha256_file(target)[0] == f["sha256"]:
                continue
        except (OSError, BackupError):
            pass
        write_private_atomic(target, read_object(backup_dir, f["sha256"], limit))
        copied += 1
    src = snapshot_dir(backup_dir, snap_id)
    for name in (SIG_FILE, "manifest.sha256", "manifest.json"):
        data = _read_small(os.path.join(src, name), MAX_MANIFEST_BYTES)
        write_private_atomic(os.path.join(snapshot_dir(dest, snap_id), name), data)
    res = verify(dest, snap_id, key)
    return {"dest": dest, "id": snap_id, "ok": res["ok"], "copied": copied, "problems": res["problems"]}


def status(backup_dir: str, nodes: List[str], max_age_hours: float, now,
           key: Optional[SigningKey] = None) -> Dict[str, Dict[str, Any]]:  # fmt: skip
    """Per node: the newest intact snapshot (with ``key``: the newest signed one) and its age (``stale`` when none
    is newer than ``max_age_hours``), and the last recorded failure (``<backup_dir>/status/<node>.json``, written
    by the backup step)."""
    snaps = list_snapshots(backup_dir, key=key)
    out = {}
    for node in nodes:
        mine = [s for s in snaps if s["node"] == node and s["ok"] and s.get("signed") is not False]
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
        doc = json.loads(_read_small(os.path.join(backup_dir, "status", safe_name(node, "node") + ".json"), 1 << 20))
    except (OSError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def restore_command(snap_id: str, node: str) -> str:
    """The exact command that puts this snapshot back (add ``--check --diff`` first to see what it would write)."""
    return "ansible-playbook gpuops.cluster.restore -e gpuops_backup_id=%s -l %s --diff" % (snap_id, node)
