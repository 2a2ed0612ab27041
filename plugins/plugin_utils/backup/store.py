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
import contextlib
import errno
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets as _secrets
import shutil
import stat
import tempfile
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import quote, unquote

from ansible_collections.gpuops.cluster.plugins.module_utils import _backup as _node
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ensure_private_dir, write_private_atomic
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time, utcnow

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


# ---- the signing key ------------------------------------------------------------------------------------------
class SigningKey:
    """An HMAC-SHA256 key; ``key_id`` (16 hex digits of a domain-separated hash) names it in signatures."""

    __slots__ = ("_secret", "origin", "key_id")

    def __init__(self, secret: bytes, origin: str) -> None:
        if len(secret) < MIN_KEY_BYTES:
            raise BackupError("the backup signing key from %s is too short (%d bytes, at least %d: openssl rand -hex 32)"
                              % (origin, len(secret), MIN_KEY_BYTES))  # fmt: skip
        self._secret = secret
        self.origin = origin
        self.key_id = hashlib.sha256(b"gpuops.backup key id\0" + secret).hexdigest()[:16]

    def __repr__(self) -> str:
        return "<SigningKey %s from %s>" % (self.key_id, self.origin)

    def secret_text(self) -> str:
        """The key as text: only for the search that keeps it out of every stored object."""
        return self._secret.decode("utf-8", "replace")

    def _mac(self, body: bytes) -> str:
        return hmac.new(self._secret, b"gpuops.backup manifest\0" + body, hashlib.sha256).hexdigest()

    def sign(self, body: bytes) -> str:
        return "%s %s %s\n" % (SIG_ALG, self.key_id, self._mac(body))

    def check(self, body: bytes, signature: bytes) -> Optional[str]:
        """None when ``signature`` is this key's signature of ``body``, else what is wrong."""
        parts = signature.decode("ascii", "replace").split()
        if len(parts) != 3 or parts[0] != SIG_ALG:
            return "%s is not an %s signature" % (SIG_FILE, SIG_ALG)
        if parts[1] != self.key_id:
            return ("it was signed with key %s, and this controller's key (%s) is %s: give the key that signed it "
                    "(%s or %s)" % (parts[1], self.origin, self.key_id, KEY_VAR, KEY_FILE_ENV))  # fmt: skip
        if not hmac.compare_digest(parts[2], self._mac(body)):
            return "%s does not match manifest.json (the manifest was changed after it was signed)" % SIG_FILE
        return None


def key_file_path(key_file: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> str:
    """The key file: ``key_file``, else ``$GPUOPS_BACKUP_KEY_FILE``, else ``~/.config/gpuops/backup.key``."""
    env = os.environ if env is None else env
    return os.path.abspath(os.path.expanduser(key_file or env.get(KEY_FILE_ENV) or DEFAULT_KEY_FILE))


def _inside(path: str, directory: str) -> bool:
    real, d = os.path.realpath(path), os.path.realpath(directory)
    return real == d or real.startswith(d.rstrip(os.sep) + os.sep)


def store_key_ids(backup_dir: str) -> List[str]:
    """The key ids that signed the snapshots of the store (each ``manifest.sig``'s second field)."""
    ids = set()
    root = os.path.join(backup_dir, "snapshots")
    try:
        names = os.listdir(root)
    except OSError:
        return []
    for sid in names:
        try:
            parts = _read_small(os.path.join(root, sid, SIG_FILE), 512).decode("ascii", "replace").split()
        except (OSError, BackupError):
            continue
        if len(parts) == 3 and re.fullmatch(r"[0-9a-f]{16}", parts[1]):
            ids.add(parts[1])
    return sorted(ids)


def _no_key(path: str) -> str:
    return ("no backup signing key: set %s (a vault variable), or put the key file at %s (%s); the key that signed "
            "the snapshots is needed to restore them" % (KEY_VAR, path, KEY_FILE_ENV))  # fmt: skip


def _create_key(path: str) -> SigningKey:
    """A new random key at ``path`` (0600, its directory 0700), created atomically: two backups starting at once
    both end with the one key that won."""
    directory = ensure_private_dir(os.path.dirname(path))
    secret = _secrets.token_hex(32).encode("ascii")
    fd, tmp = tempfile.mkstemp(prefix=".backup-key.", dir=directory)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, secret + b"\n")
        os.fsync(fd)
        os.close(fd)
        try:
            os.link(tmp, path)  # fails when the file exists: never replaces a key
        except FileExistsError:
            return load_key(key_file=path)
    finally:
        os.unlink(tmp)
    return SigningKey(secret, path)


def load_key(value: Any = None, key_file: Optional[str] = None, create: bool = False, outside: Sequence[str] = (),
             env: Optional[Mapping[str, str]] = None) -> SigningKey:  # fmt: skip
    """The signing key: ``value`` (``gpuops_backup_signing_key``, vault-able), else the key file (:func:`key_file_path`),
    which must be a regular file of this user, 0600 (no group or other bits), outside the directories ``outside``
    (the store, the state directory, the off-site copy). ``create``: a missing key file is created (first use)."""
    if value is not None and value != "":
        text = value.strip() if isinstance(value, str) else ""
        if not text:
            raise BackupError("%s must be a string" % KEY_VAR)
        return SigningKey(text.encode("utf-8"), KEY_VAR)
    path = key_file_path(key_file, env)
    for d in outside:
        if d and _inside(path, d):
            raise BackupError("the backup signing key must live outside the store: %s is inside %s" % (path, d))
    try:
        fd = _open_regular(path)
    except FileNotFoundError:
        if not create:
            raise BackupError(_no_key(path)) from None
        return _create_key(path)
    except OSError as exc:
        raise BackupError("cannot read the backup signing key %s: %s" % (path, exc.strerror or exc)) from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            raise BackupError("the backup signing key %s belongs to uid %d, not to this user (uid %d)"
                              % (path, st.st_uid, os.getuid()))  # fmt: skip
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise BackupError("the backup signing key %s is accessible to others (mode %04o): chmod 600 %s"
                              % (path, stat.S_IMODE(st.st_mode), path))  # fmt: skip
        data = os.read(fd, 4097)
    finally:
        os.close(fd)
    if len(data) > 4096:
        raise BackupError("the backup signing key %s is larger than 4096 bytes" % path)
    return SigningKey(data.strip(), path)


def resolve_key(value: Any, key_file: Optional[str], backup_dir: str, create: bool,
                outside: Sequence[str] = ()) -> SigningKey:  # fmt: skip
    """:func:`load_key` for a step on ``backup_dir``. A missing key file is created only when ``create`` and the
    store holds no signed snapshot yet: a store signed with a key that this controller lacks (lost, or a fresh
    execution environment) needs that key, not a new one."""
    outside = [backup_dir] + [d for d in outside if d]
    if create and (value is None or value == ""):
        path = key_file_path(key_file)
        ids = store_key_ids(backup_dir) if not os.path.lexists(path) else []
        if ids:
            raise BackupError(
                "the store %s holds snapshots signed with key %s and this controller has no key at %s: put that key "
                "there or set %s; to start a new key on purpose: umask 077; mkdir -p %s; openssl rand -hex 32 > %s"
                % (backup_dir, ", ".join(ids), path, KEY_VAR, os.path.dirname(path), path)
            )
    return load_key(value, key_file, create, outside)


# ---- secrets --------------------------------------------------------------------------------------------------
def _walk_secrets(label: str, value: Any, out: List[Tuple[str, str]], depth: int = 0) -> None:
    if depth > 5:
        return
    if isinstance(value, dict):
        for k, v in list(value.items())[:2000]:
            name = "%s.%s" % (label, k) if label else str(k)
            if isinstance(k, str) and SECRET_NAME.search(k) and not _NOT_SECRET_NAME.search(k):
                if isinstance(v, (str, int)) and not isinstance(v, bool):
                    out.append((name, str(v)))
                    continue
            _walk_secrets(name, v, out, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in list(value)[:1000]:
            _walk_secrets(label, v, out, depth + 1)
    elif isinstance(value, str):
        for m in _URL_PASSWORD.finditer(value):
            out.append(("the password in %s" % label, unquote(m.group(1))))
            out.append(("the password in %s" % label, m.group(1)))


def configured_secrets(env: Mapping[str, Any], variables: Mapping[str, Any] = None,
                       extra: Iterable[Tuple[str, str]] = ()) -> List[Tuple[str, str]]:  # fmt: skip
    """``(where, value)`` of every configured secret: environment variables and Ansible variables named like secrets
    (``GPUOPS_BMC_PASSWORD``, ``gpuops_bmc_password``, ``*_token`` ...), the password of any URL among them
    (``GPUOPS_DB_URL``), and ``extra`` (the signing key). Templates and values shorter than
    :data:`MIN_SECRET_LEN` are left out. ``where`` names the variable, never the value."""
    found: List[Tuple[str, str]] = []
    for name, value in sorted((env or {}).items()):
        if not isinstance(value, str):
            continue
        if SECRET_NAME.search(name) and not _NOT_SECRET_NAME.search(name):
            found.append((name, value))
        _walk_secrets(name, value, found)
    _walk_secrets("", variables or {}, found)
    found.extend(extra)
    out, seen = [], set()
    for where, value in found:
        if isinstance(value, str) and len(value) >= MIN_SECRET_LEN and "{{" not in value and value not in seen:
            seen.add(value)
            out.append((where, value))
    return out


def _variants(value: str) -> List[bytes]:
    """The forms a secret value takes in a file: as is, JSON-escaped, URL-encoded."""
    forms = {value, json.dumps(value)[1:-1], quote(value, safe="")}
    return [f.encode("utf-8") for f in forms if f]


def secret_in(data: bytes, secrets: Sequence[Tuple[str, str]]) -> Optional[str]:
    """The name of the first configured secret whose value ``data`` holds (None: none)."""
    for where, value in secrets:
        if any(v in data for v in _variants(value)):
            return where
    return None


def _scrub(text: Any, secrets: Sequence[Tuple[str, str]]) -> Any:
    if not isinstance(text, str):
        return text
    for _where, value in secrets:
        for v in _variants(value):
            text = text.replace(v.decode("utf-8"), "********")
    return text


def secret_pattern(name: str, data: bytes) -> Optional[str]:
    """Why a state file looks like it holds a secret (its name or its content), or None."""
    if SECRET_FILE_NAME.search(name):
        return "its name looks like a secret's"
    for what, pattern in SECRET_CONTENT:
        if pattern.search(data):
            return "it holds %s" % what
    return None


# ---- the controller's state -----------------------------------------------------------------------------------
def state_entries(state_dir: str, backup_dir: str, skip_dirs: Sequence[str] = (),
                  max_bytes: int = MAX_STATE_BYTES, max_files: int = MAX_STATE_FILES) -> List[Dict[str, Any]]:  # fmt: skip
    """The controller's state store and audit trail as entries (``controller/state/<relative path>``).

    Left out without an entry: ``backups/``, ``locks/``, ``tickets/`` at the top, every ``runner/``,
    ``artifacts/`` and ``env/`` directory, ``skip_dirs`` (the off-site copy), links, temporary files. A file whose
    name or content looks like a secret (:func:`secret_pattern`) is an ``excluded`` entry (no content): the
    manifest names it and why."""
    out: List[Dict[str, Any]] = []
    root = os.path.realpath(state_dir)
    skip = {os.path.join(root, s) for s in STATE_SKIP}
    skip |= {os.path.realpath(d) for d in [backup_dir] + list(skip_dirs) if d}
    total = files = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if os.path.join(dirpath, d) not in skip
            and d not in STATE_SKIP_ANYWHERE
            and not os.path.islink(os.path.join(dirpath, d))
        )
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            entry = {"name": "controller/state/" + rel, "source": path, "path": path, "kind": "controller",
                     "restore": False, "status": "ok", "error": None}  # fmt: skip
            if os.path.islink(path) or not os.path.isfile(path) or name.endswith(".tmp"):
                continue
            files += 1
            if files > max_files:
                out.append(dict(entry, status="error", error="state directory holds more than %d files" % max_files))
                return out
            try:
                data = _read_small(path, max(max_bytes - total, 0))
            except BackupError:
                out.append(dict(entry, status="error", error="state directory larger than %d bytes" % max_bytes))
                return out
            except OSError as exc:
                out.append(dict(entry, status="error", error="cannot read: %s" % (exc.strerror or exc)))
                continue
            why = secret_pattern(rel, data)
            if why:
                out.append(dict(entry, status="excluded", error=why))
                continue
            total += len(data)
            entry.update(data=data, size=len(data), sha256=hashlib.sha256(data).hexdigest())
            out.append(entry)
    return out


# ---- writing a snapshot ---------------------------------------------------------------------------------------
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


# ---- restoring ------------------------------------------------------------------------------------------------
def restore_rules(sources: Optional[List[Dict[str, Any]]] = None, extra_paths: Any = (),
                  limits: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:  # fmt: skip
    """What a snapshot may hold and a restore may write: ``sources``, the node's configured backup sources (default
    :data:`module_utils._backup.DEFAULT_SOURCES`) with its extra paths, and ``limits`` (:data:`LIMITS`)."""
    try:
        base = _node.DEFAULT_SOURCES if not sources else _node.check_sources(list(sources))
        return {"sources": _node.with_extra_paths(base, extra_paths), "limits": _limits(limits)}
    except _node.BackupSourceError as exc:
        raise BackupError(str(exc)) from None


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
