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
renamed, never through a link). An entry is the key as one JSON line (with the length and sha256 of the
facts' text), then the facts' JSON text, returned without decoding (:class:`RawFacts`). Without a state
directory there is no cache. A file that cannot be read, is torn, fails its checksum or names another key is
ignored and the capture is parsed again: a cache entry is never trusted
beyond being the facts it says it is of this exact key. The cache is not fsynced: a torn entry after a crash
reads as corrupt and is re-parsed. The header's ``exact`` says the text was written by orjson (:class:`ExactRawFacts`:
read back with orjson, ``_json``); any other entry is read by the standard library.

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

from ansible_collections.gpuops.cluster.plugins.module_utils._files import ensure_private_dir
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _json

CACHE_SCHEMA = "gpuops.facts-cache/v2"
_COLLECTOR_VERSION: Optional[str] = None


def collector_version() -> str:
    """sha256 of the node-side collectors' and parsers' sources (computed once per process)."""
    global _COLLECTOR_VERSION
    if _COLLECTOR_VERSION is None:
        plugins = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        here = os.path.join(plugins, "module_utils")
        h = hashlib.sha256()
        for dirpath, dirnames, filenames in os.walk(here):  # its packages too (parsers/, collectors/)
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    rel = os.path.relpath(os.path.join(dirpath, name), here).replace(os.sep, "/")
                    with open(os.path.join(dirpath, name), "rb") as fh:
                        h.update(rel.encode("utf-8") + b"\0" + fh.read() + b"\0")
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

    def get(self, host: str, capture_dir: str, fingerprint: Optional[str]) -> Optional[RawFacts]:
        """The cached facts of this exact key as their JSON text, or None (missing, unreadable, torn, corrupt
        or of another key). The facts are not decoded here: the entry's header carries their length and
        sha256, so a torn or edited entry is a miss, and the text goes on as it is (:class:`RawFacts`)."""
        if fingerprint is None:
            return None
        try:
            fd = os.open(self._path(host, capture_dir), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as fh:
                data = fh.read()
            head, sep, body = data.partition(b"\n")
            entry = json.loads(head) if sep else None
        except (OSError, ValueError):
            entry = None
        key = self._key(host, capture_dir, fingerprint)
        if (
            not isinstance(entry, dict)
            or any(entry.get(k) != v for k, v in key.items())
            or entry.get("length") != len(body)
            or entry.get("sha256") != hashlib.sha256(body).hexdigest()
        ):
            self.misses += 1
            return None
        try:
            text = (ExactRawFacts if entry.get("exact") is True else RawFacts)(body.decode("utf-8"))
        except UnicodeDecodeError:
            self.misses += 1
            return None
        self.hits += 1
        return text

    def put(self, host: str, capture_dir: str, fingerprint: Optional[str], facts: Any) -> None:
        """Store ``facts`` (a dict or its :class:`RawFacts`) under this key (0600, atomic rename); a write error
        only costs the next run a parse. The file is the key as one JSON line, then the facts' JSON text."""
        if fingerprint is None:
            return
        try:
            raw = to_raw(facts)  # the text itself when it is one already
            body = raw.encode("utf-8")
            head = dict(
                self._key(host, capture_dir, fingerprint), length=len(body), exact=isinstance(raw, ExactRawFacts)
            )
            head["sha256"] = hashlib.sha256(body).hexdigest()
            data = json.dumps(head, sort_keys=True, separators=(",", ":")).encode("utf-8") + b"\n" + body
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


class RawFacts(str):
    """A node's facts as their compact JSON text (sorted keys): what an inspection holds per captured node
    between reading it and writing report.json (~65 KB of text where the decoded facts take ~240 KB of Python
    objects: 10,000 nodes fit in the 2 GiB of issue 17). :func:`facts_of` decodes it where the facts are
    judged; report.json takes the text as it is (``_report.iter_json``)."""

    __slots__ = ()


class ExactRawFacts(RawFacts):
    """:class:`RawFacts` that orjson wrote, so orjson reads them back exactly (``_json.loads(exact=True)``)."""

    __slots__ = ()


def to_raw(facts: Any) -> RawFacts:
    """``facts`` as :class:`RawFacts` (the encoding of report.json: sorted keys, compact, ``default=str``)."""
    if isinstance(facts, RawFacts):
        return facts
    text, exact = _json.dumps_exact(facts)
    return ExactRawFacts(text) if exact else RawFacts(text)


def facts_of(value: Any) -> Any:
    """Decoded facts: ``value`` itself unless it is :class:`RawFacts`."""
    return _json.loads(value, exact=isinstance(value, ExactRawFacts)) if isinstance(value, RawFacts) else value


class NodeFacts(dict):
    """The facts of a node in the report: a dict of the parts the controller reads after judging (top-level
    fields, per-GPU and per-HCA identity and versions, BMC firmware, Slurm and node records: the fleet checkup,
    the ledger, evidence times), with ``full`` the whole facts (:class:`RawFacts` or a dict) that report.json
    writes. ``_report.iter_json`` writes ``full``; everything else reads the dict."""

    def __init__(self, slim: Dict[str, Any], full: Any) -> None:
        super().__init__(slim)
        self.full = full

    def __reduce__(self) -> Any:
        return (NodeFacts, (dict(self), self.full))


def _scalars(d: Any) -> Any:
    if not isinstance(d, dict):
        return d
    return {k: v for k, v in d.items() if not isinstance(v, (dict, list))}


#: What :func:`slim_facts` keeps of each domain beyond its scalar fields: list name -> kept as scalar-only records
_SLIM_LISTS = {"gpu": ("gpus",), "ib": ("hcas",)}
#: Domains kept whole (small, and read field by field by the ledger, the checkup and the status reasons)
_SLIM_WHOLE = ("slurm", "node", "kernel", "dcgm")


def slim_facts(facts: Any) -> Dict[str, Any]:
    """The parts of ``facts`` the controller reads after the nodes are judged (see :class:`NodeFacts`): every
    top-level field, the Slurm, node, kernel and DCGM domains whole, the other domains' scalar fields and error
    lists, each GPU's and HCA's scalar fields (model, serial, VBIOS, firmware), the BMC's ``mc`` record and its
    Redfish systems' scalar fields. Counters, per-link and per-port tables and sensor lists are left out."""
    if not isinstance(facts, dict):
        return facts
    out: Dict[str, Any] = {}
    for key, value in facts.items():
        if not isinstance(value, dict) or key in _SLIM_WHOLE:
            out[key] = value
            continue
        dom = _scalars(value)
        if isinstance(value.get("errors"), list):
            dom["errors"] = value["errors"]
        for name in _SLIM_LISTS.get(key, ()):
            if isinstance(value.get(name), list):
                dom[name] = [_scalars(item) for item in value[name]]
        if key == "bmc":
            if isinstance(value.get("mc"), dict):
                dom["mc"] = value["mc"]
            redfish = value.get("redfish")
            if isinstance(redfish, dict) and isinstance(redfish.get("systems"), list):
                dom["redfish"] = dict(_scalars(redfish), systems=[_scalars(x) for x in redfish["systems"]])
        out[key] = dom
    return out
