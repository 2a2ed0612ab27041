# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The backup store's objects (docs/backup.md): its constants and limits, content-addressed objects, snapshot
directories, the store lock.

Pure Python, no Ansible imports; runs on the controller.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import stat
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils import _backup as _node
from ansible_collections.gpuops.cluster.plugins.module_utils._files import ensure_private_dir, write_private_atomic


SCHEMA = "gpuops.backup/v2"
#: Manifests written before snapshots were signed: readable (listing, retention), never trusted for a restore.
LEGACY_SCHEMAS = ("gpuops.backup/v1",)
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:+-]{0,200}")
_SHA = re.compile(r"[0-9a-f]{64}")
#: Entry kinds whose error fails the backup (what a restore needs); ``command`` errors are recorded as evidence.
FAIL_KINDS = ("file", "redfish", "controller")
#: Entry kinds a node (or the BMC, or the Slurm controller) may return.
NODE_KINDS = ("file", "command", "redfish")

#: The controller's limits on what one node's snapshot holds (the node keeps the same ones,
#: ``module_utils/_backup.py``): bytes per entry, bytes in all, entries. Role variables ``backup_max_*``.
LIMITS = {
    "entry_bytes": _node.MAX_ENTRY_BYTES,
    "snapshot_bytes": _node.MAX_SNAPSHOT_BYTES,
    "entries": _node.MAX_ENTRIES,
}
_LIMIT_VARS = {"entry_bytes": "backup_max_entry_bytes", "snapshot_bytes": "backup_max_snapshot_bytes",
               "entries": "backup_max_entries"}  # fmt: skip
#: The controller's state directory in a snapshot: at most this many bytes and files.
MAX_STATE_BYTES = 256 * 1024 * 1024
MAX_STATE_FILES = 20000
#: Top-level directories of the state directory never copied into a snapshot: the backups themselves, lock files,
#: and the tickets (ansible-runner's private data dirs: command lines and environments of the hook's runs).
STATE_SKIP = ("backups", "locks", "tickets")
#: Directories skipped wherever they are: ansible-runner's artifacts and private data (``env/``).
STATE_SKIP_ANYWHERE = ("runner", "artifacts", "env")
#: A file of the state directory whose name looks like it holds a secret is not copied.
SECRET_FILE_NAME = re.compile(
    r"(pass(word|wd|phrase)?|secret|token|credential|private.?key|api.?key|vault|htpasswd|netrc|pgpass"
    r"|id_(rsa|dsa|ecdsa|ed25519)|\.(pem|key|p12|pfx|kdbx)$)",
    re.I,
)
#: Content that holds a secret in clear text (a masked value, ``********``, a template or a boolean does not count).
_VALUE = rb"(?![*]{3}|\{\{|(?:true|false|null|none|yes|no)\b)"
SECRET_CONTENT = (
    ("a private key", re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")),
    (
        "a URL with a password",
        re.compile(rb"[A-Za-z][A-Za-z0-9+.-]{0,30}://[^/\s:@\"']{1,200}:(?![*]{3})[^/\s@\"']{1,200}@"),
    ),
    # GPUOPS_BMC_PASSWORD=..., "GPUOPS_DB_TOKEN": "..." (environment files, runner env/envvars)
    (
        "a secret variable's value",
        re.compile(
            rb"\b[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY)[A-Z0-9_]*[\"']?\s*[=:]\s*[\"']?"
            + _VALUE
            + rb"[^\s\"'*,;}]{4,}"
        ),
    ),
    # "bmc_password": "...", password: '...' (JSON, YAML with a quoted value)
    (
        "a secret key's value",
        re.compile(
            rb"(?i)[a-z0-9_.-]*(?:password|passwd|passphrase|secret|api_?key|private_?key)[a-z0-9_.-]*[\"']?\s*[:=]\s*[\"']"
            + _VALUE
            + rb"[^\"'\s]{4,}[\"']"
        ),
    ),
    # gpuops_bmc_password=... (an extra var on a command line), ?token=... in a URL
    (
        "a secret key=value",
        re.compile(
            rb"(?i)\b[a-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api_?key)=" + _VALUE + rb"[^\s\"'&*,;]{4,}"
        ),
    ),
)
#: Names of environment variables and Ansible variables whose values are secrets (searched in every object).
SECRET_NAME = re.compile(r"(password|passwd|passphrase|(^|_)pass$|secret|token|api_?key|private_?key)", re.I)
_NOT_SECRET_NAME = re.compile(r"_(file|path|dir|url_file|cmd|command)$", re.I)
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}://[^/\s:@]*:([^/\s@]+)@")
#: Shorter values are not searched for (they would match ordinary text; such a password is too weak anyway).
MIN_SECRET_LEN = 6

#: The signing key (docs/backup.md "Signed snapshots").
SIG_FILE = "manifest.sig"
SIG_ALG = "hmac-sha256"
KEY_FILE_ENV = "GPUOPS_BACKUP_KEY_FILE"
KEY_VAR = "gpuops_backup_signing_key"
DEFAULT_KEY_FILE = os.path.join("~", ".config", "gpuops", "backup.key")
MIN_KEY_BYTES = 32
MAX_MANIFEST_BYTES = 64 * 1024 * 1024


class BackupError(ValueError):
    """A snapshot that cannot be written, read or trusted; the message names the file."""


class UnsignedSnapshot(BackupError):
    """A snapshot written before snapshots were signed (gpuops.backup/v1): never trusted for a restore."""


# ---- files ----------------------------------------------------------------------------------------------------
def _open_regular(path: str) -> int:
    """A read-only descriptor of the regular file ``path``, never through a symbolic link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BackupError("%s is a symbolic link (links are never followed)" % path) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BackupError("%s is not a regular file" % path)
    return fd


def _read_small(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``; BackupError when it holds more than ``limit``."""
    fd = _open_regular(path)
    try:
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise BackupError("%s is larger than %d bytes" % (path, limit))
    return data


def sha256_file(path: str) -> Tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    fd = _open_regular(path)
    try:
        with os.fdopen(fd, "rb", closefd=False) as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
                size += len(chunk)
    finally:
        os.close(fd)
    return h.hexdigest(), size


def safe_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _SAFE.fullmatch(value) or value in (".", ".."):
        raise BackupError("invalid %s %r (letters, digits and _.@:+- only)" % (what, value))
    return value


def object_path(backup_dir: str, sha: str) -> str:
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise BackupError("invalid sha256 %r" % (sha,))
    return os.path.join(backup_dir, "objects", sha)


def read_object(backup_dir: str, sha: str, limit: int) -> bytes:
    """The object's bytes, checked against its name (the hash the signed manifest gives); never through a link."""
    path = object_path(backup_dir, sha)
    try:
        data = _read_small(path, limit)
    except FileNotFoundError:
        raise BackupError("object %s is missing" % sha) from None
    if hashlib.sha256(data).hexdigest() != sha:
        raise BackupError("object %s does not match its checksum" % sha)
    return data


def snapshot_dir(backup_dir: str, snap_id: str) -> str:
    return os.path.join(backup_dir, "snapshots", safe_name(snap_id, "snapshot id"))


def new_id(backup_dir: str, node: str, now) -> str:
    base = "%s-%s" % (now.strftime("%Y%m%dT%H%M%S%fZ"), safe_name(node, "node"))
    sid, n = base, 1
    while os.path.lexists(snapshot_dir(backup_dir, sid)):
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
    """Write ``data`` as ``objects/<sha>`` unless an intact regular copy is there; True when written."""
    path = object_path(backup_dir, sha)
    try:
        if sha256_file(path)[0] == sha:
            return False
    except (OSError, BackupError):
        pass  # missing, a link or damaged: written again (the rename replaces a link, never writes through it)
    if not check_mode:
        write_private_atomic(path, data)
    return True


def restore_rules(sources: Optional[List[Dict[str, Any]]] = None, extra_paths: Any = (),
                  limits: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:  # fmt: skip
    """What a snapshot may hold and a restore may write: ``sources``, the node's configured backup sources (default
    :data:`module_utils._backup.DEFAULT_SOURCES`) with its extra paths, and ``limits`` (:data:`LIMITS`)."""
    try:
        base = _node.DEFAULT_SOURCES if not sources else _node.check_sources(list(sources))
        return {"sources": _node.with_extra_paths(base, extra_paths), "limits": _limits(limits)}
    except _node.BackupSourceError as exc:
        raise BackupError(str(exc)) from None


def _limits(limits: Optional[Mapping[str, Any]]) -> Dict[str, int]:
    out = dict(LIMITS)
    for k, v in (limits or {}).items():
        if k not in out:
            raise BackupError("unknown limit %r (%s)" % (k, ", ".join(sorted(out))))
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise BackupError("limit %s must be a positive number, got %r" % (k, v))
            out[k] = v
    return out
