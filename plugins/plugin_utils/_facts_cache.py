# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A private cache of parsed capture directories (issue 17): skip parsing what cannot have changed.

An entry is keyed by (host, capture directory, the capture's fingerprint, the collector's version, the collect
options). The fingerprint is every entry of the capture directory (recursive, without following links): its
relative path, type, size, inode, mtime and ctime in nanoseconds. A file rewritten in place, replaced, added or
removed changes it; ctime cannot be set back by ``touch``. Hashing the contents (sha256) costs as much as a
third of the parse itself on this machine and buys nothing the stat fields miss for captures written by
``gpuops.cluster.capture``. The collector's version is a sha256 of the node-side parsers' sources
(``plugins/module_utils/*.py``): a new parser never reads an old parse.

Files live under ``<state_dir>/cache/facts/`` (directories 0700, files 0600, written to a temporary file and
renamed, never through a link). Without a state directory there is no cache. A file that cannot be read,
is not JSON or names another key is ignored and the capture is parsed again: a cache entry is never trusted
beyond being the facts it says it is of this exact key. The cache is not fsynced: a torn entry after a crash
reads as corrupt and is re-parsed.

Why files and not the store: the cache is read and written by the worker processes in parallel, one small
file per node with no lock and no connection per process, and a 10,000-node cache is ~650 MB of JSON that
the ledger's database has no reason to hold.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ensure_private_dir

CACHE_SCHEMA = "gpuops.facts-cache/v1"
_COLLECTOR_VERSION: Optional[str] = None


def collector_version() -> str:
    """sha256 of the node-side collectors' and parsers' sources (computed once per process)."""
    global _COLLECTOR_VERSION
    if _COLLECTOR_VERSION is None:
        here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
        h = hashlib.sha256()
        for name in sorted(os.listdir(here)):
            if name.endswith(".py"):
                with open(os.path.join(here, name), "rb") as fh:
                    h.update(name.encode("utf-8") + b"\0" + fh.read() + b"\0")
        _COLLECTOR_VERSION = h.hexdigest()
    return _COLLECTOR_VERSION


def capture_fingerprint(capture_dir: str) -> Optional[str]:
    """The fingerprint of a capture directory (see the module's doc); None when it cannot be listed."""
    h = hashlib.sha256()
    stack = [""]
    try:
        while stack:
            rel = stack.pop()
            with os.scandir(os.path.join(capture_dir, rel) if rel else capture_dir) as it:
                entries = sorted(it, key=lambda e: e.name)
            for e in entries:
                st = e.stat(follow_symlinks=False)
                name = rel + "/" + e.name if rel else e.name
                kind = "d" if stat.S_ISDIR(st.st_mode) else ("l" if stat.S_ISLNK(st.st_mode) else "f")
                h.update(
                    (
                        "%s\0%s\0%d\0%d\0%d\0%d\n" % (name, kind, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
                    ).encode("utf-8", "surrogateescape")
                )
                if kind == "d":
                    stack.append(name)
    except OSError:
        return None
    return h.hexdigest()


class FactsCache:
    """Parsed facts of capture directories under ``<state_dir>/cache/facts`` (see the module's doc)."""

    def __init__(self, state_dir: str, options: Optional[Dict[str, Any]] = None) -> None:
        self.dir = os.path.join(state_dir, "cache", "facts")
        self.options = json.dumps(options or {}, sort_keys=True, default=str)
        self.hits = 0
        self.misses = 0

    def _path(self, host: str, capture_dir: str) -> str:
        digest = hashlib.sha256(("%s\0%s" % (host, os.path.abspath(capture_dir))).encode("utf-8", "surrogateescape"))
        return os.path.join(self.dir, digest.hexdigest()[:40] + ".json")

    def _key(self, host: str, capture_dir: str, fingerprint: str) -> Dict[str, Any]:
        return {
            "schema": CACHE_SCHEMA,
            "host": host,
            "capture_dir": os.path.abspath(capture_dir),
            "fingerprint": fingerprint,
            "collector": collector_version(),
            "options": self.options,
        }

    def get(self, host: str, capture_dir: str, fingerprint: Optional[str]) -> Optional[Dict[str, Any]]:
        """The cached facts of this exact key, or None (missing, unreadable, corrupt or of another key)."""
        if fingerprint is None:
            return None
        try:
            fd = os.open(self._path(host, capture_dir), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as fh:
                entry = json.loads(fh.read())
        except (OSError, ValueError):
            entry = None
        key = self._key(host, capture_dir, fingerprint)
        if (
            not isinstance(entry, dict)
            or any(entry.get(k) != v for k, v in key.items())
            or not isinstance(entry.get("facts"), dict)
        ):
            self.misses += 1
            return None
        self.hits += 1
        return entry["facts"]

    def put(self, host: str, capture_dir: str, fingerprint: Optional[str], facts: Dict[str, Any]) -> None:
        """Store ``facts`` under this key (0600, atomic rename); a write error only costs the next run a parse."""
        if fingerprint is None:
            return
        entry = dict(self._key(host, capture_dir, fingerprint), facts=facts)
        try:
            data = json.dumps(entry, sort_keys=True, separators=(",", ":"), default=str).encode("utf-8")
            ensure_private_dir(self.dir)
            fd, tmp = tempfile.mkstemp(prefix=".facts.", suffix=".tmp", dir=self.dir)
        except (OSError, ValueError, TypeError):
            return
        try:
            with os.fdopen(fd, "wb") as fh:
                os.fchmod(fh.fileno(), 0o600)
                fh.write(data)
            os.replace(tmp, self._path(host, capture_dir))
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
