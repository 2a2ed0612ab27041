# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secrets kept out of the backup store (docs/backup.md): configured secret values, secret-looking files, and the
controller's state directory without tickets and runner data.

Pure Python, no Ansible imports; runs on the controller.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import quote, unquote

from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup.objects import (
    BackupError,
    MAX_STATE_BYTES,
    MAX_STATE_FILES,
    MIN_SECRET_LEN,
    SECRET_CONTENT,
    SECRET_FILE_NAME,
    SECRET_NAME,
    STATE_SKIP,
    STATE_SKIP_ANYWHERE,
    _NOT_SECRET_NAME,
    _URL_PASSWORD,
    _read_small,
)


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
