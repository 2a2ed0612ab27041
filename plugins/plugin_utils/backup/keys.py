# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The backup signing key (docs/backup.md "Signed snapshots"): HMAC-SHA256 with a key that lives outside the store.

Pure Python, no Ansible imports; runs on the controller.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets as _secrets
import stat
import tempfile
from typing import Any, List, Mapping, Optional, Sequence

from ansible_collections.gpuops.cluster.plugins.module_utils._files import ensure_private_dir
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup.objects import (
    BackupError,
    DEFAULT_KEY_FILE,
    KEY_FILE_ENV,
    KEY_VAR,
    MIN_KEY_BYTES,
    SIG_ALG,
    SIG_FILE,
    _open_regular,
    _read_small,
)


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
