# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host state documents (``gpuops.state/v1``, docs/state.md) and the state directory's fcntl locks.

The controller keeps the documents in ONE backend, the store (``state_store.py``: table ``host_state`` of the
embedded ``<state_dir>/gpuops.db`` or of ``gpuops_db_url``; issue 36). This module holds what works on a document
(``empty_host_state``, ``normalize_host_state``, ``document``, ``copy_state``, ``state_text``,
``record_gpu_reset``, ``record_clear``), ``StateError``, ``StateLock`` (``<state_dir>/locks/<name>.lock``, for
what is not in the store: replacement records, the guard's file functions) and the reader of an older
collection's ``<state_dir>/hosts/<host>.json`` (``load_host_state``). ``encode_if_changed``, ``stage_host_state``,
``discard_staged`` and ``save_host_states`` are the inspection's staged file writes of the former file backend:
``inspect/pipeline.py`` no longer takes that path (its ``file_states`` is None) and they go with it.

The node-side health check ships this module (``health_check/bundle.py``): pure Python, no Ansible imports, no
SQLAlchemy; the functions that touch a dict are pure and unit-testable. Files are written privately
(``_files.write_private_atomic``: 0600, fsync, rename; never through a link), directories 0700.
"""

from __future__ import annotations

import copy
import errno
import fcntl
import json
import os
import re
import time
from typing import Any, Dict, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._files import (
    ensure_private_dir,
    fsync_dir,
    open_private,
    write_private_atomic,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time, utcnow_iso
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _json

HOST_STATE_SCHEMA = "gpuops.state/v1"

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.@:+-]+$")


class StateError(Exception):
    """A state problem (bad name, corrupt document or file, lock timeout, the store unusable)."""


def empty_host_state(host: Optional[str] = None) -> Dict[str, Any]:
    """A host state with every section present and empty."""
    return {
        "schema": HOST_STATE_SCHEMA,
        "host": host,
        "updated_at": None,
        "boot_id": None,  # the boot id seen on the last run
        "boot_seen_at": None,  # when that boot id was first seen
        "ib": {"ports": {}},  # "<hca>/<port>": {collected_at, boot_id, fw_version, counters}
        "gpu": {"gpus": {}},  # bus_id: {serial, collected_at, boot_id, pcie_replay, nvlink: {link: errors}}
        "clears": {},  # bus_id: ISO time of the last recorded clear (kernel events before it no longer count)
        "resets": [],  # [{bus_id, serial, time}] recorded successful GPU resets
        "escalation": [],  # [{check, code, serial, time, step}] incidents, pruned after the longest window
        "active_faults": {},  # finding id -> {finding, first_seen, last_seen, boot_id, clear, bus_id, serial, ...}
        "baseline": None,  # golden baseline from onboarding (see _checks.make_baseline)
    }


def private_dir(path: str, tighten: bool = False) -> str:
    """``_files.ensure_private_dir``, tried once more when another process created a missing component at
    the same moment (the first try then sees it appear and takes it for a file); a real file still raises."""
    try:
        return ensure_private_dir(path, tighten=tighten)
    except NotADirectoryError:
        return ensure_private_dir(path, tighten=tighten)


def _check_name(name: str, what: str = "host") -> str:
    if not isinstance(name, str) or not name or name in (".", "..") or not _SAFE_NAME.match(name):
        raise StateError("invalid %s name for the state directory: %r" % (what, name))
    return name


def host_state_path(state_dir: str, host: str) -> str:
    return os.path.join(state_dir, "hosts", _check_name(host) + ".json")


_ATOMS = (str, int, float, bool, type(None))


def copy_state(data: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, tuples of strings, numbers, booleans, None), ~4x faster
    than ``copy.deepcopy`` on a host state; anything else inside is copied by ``copy.deepcopy``."""
    t = type(data)
    if t is dict:
        return {k: copy_state(v) for k, v in data.items()}
    if t is list:
        return [copy_state(v) for v in data]
    if t in _ATOMS:
        return data
    if t is tuple:
        return tuple(copy_state(v) for v in data)
    return copy.deepcopy(data)


def normalize_host_state(data: Any, host: Optional[str] = None) -> Dict[str, Any]:
    """Fill missing sections of a (possibly older or hand-made) host state; keeps unknown keys."""
    out = empty_host_state(host)
    if isinstance(data, dict):
        for key, value in data.items():
            if key in out and isinstance(out[key], dict) and not isinstance(value, dict) and key != "baseline":
                continue
            if key in out and isinstance(out[key], list) and not isinstance(value, list):
                continue
            out[key] = value
    for key in ("ib", "gpu"):
        sub = out[key]
        sub.setdefault("ports" if key == "ib" else "gpus", {})
    if host and not out.get("host"):
        out["host"] = host
    return out


def load_host_state(state_dir: Optional[str], host: str, on_corrupt: str = "raise") -> Dict[str, Any]:
    """Read ``<state_dir>/hosts/<host>.json`` (an older collection's layout); an empty state when the file (or
    state_dir) is absent.

    A file that is not valid JSON raises StateError (``on_corrupt="raise"``, the default: forgetting
    active faults silently would clear them), or is renamed to ``<file>.corrupt-<epoch>`` and replaced by
    an empty state (``on_corrupt="reset"``).
    """
    return load_host_state_file(state_dir, host, on_corrupt)[0]


def load_host_state_file(
    state_dir: Optional[str], host: str, on_corrupt: str = "raise"
) -> Tuple[Dict[str, Any], Optional[bytes]]:
    """:func:`load_host_state` and the file's bytes as read (None: no file), for :func:`encode_if_changed`'s
    ``previous_file``."""
    if not state_dir:
        return empty_host_state(host), None
    path = host_state_path(state_dir, host)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return empty_host_state(host), None
        raise StateError("cannot read %s: %s" % (path, exc)) from exc
    try:
        data = _safejson.loads(raw, what="state file")  # nested too deep, not UTF-8, not JSON: ValueError
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        if on_corrupt == "reset":
            os.replace(path, "%s.corrupt-%d" % (path, int(time.time())))
            return empty_host_state(host), None
        raise StateError("corrupt state file %s: %s" % (path, exc)) from exc
    return normalize_host_state(data, host), raw


def atomic_write_json(path: str, data: Any, mode: int = 0o600) -> None:
    """Write JSON to ``path`` atomically and privately (0600 unless ``mode`` says 0640): temporary file in the
    same directory, fsync, rename, fsync dir; a missing directory is created 0700."""
    text = json.dumps(data, sort_keys=True, indent=1, default=str) + "\n"
    write_private_atomic(path, text, mode)


def state_text(data: Dict[str, Any]) -> str:
    """A host state document as stored, ``updated_at`` left out: sorted keys, compact (:mod:`_json`)."""
    body = {k: v for k, v in data.items() if k != "updated_at"}
    return _json.dumps(body)


def document(host: str, state: Any) -> Dict[str, Any]:
    """``state`` normalized and named as a stored host document (schema, host; no ``updated_at``). The result is
    a new top-level dict whose nested sections are the caller's: copy first (:func:`copy_state`) to keep them."""
    data = normalize_host_state(state, host)
    data["schema"] = HOST_STATE_SCHEMA
    data["host"] = host
    return data


def _file_bytes(data: Dict[str, Any]) -> bytes:
    """A host state document as :func:`save_host_states` writes it: sorted keys, compact, a final newline."""
    return _json.dumps_bytes(data) + b"\n"


def encode_if_changed(
    host: str,
    state: Dict[str, Any],
    previous: Any,
    stamp: str,
    previous_file: Optional[Tuple[bytes, Any]] = None,
) -> Optional[bytes]:
    """The file :func:`save_host_states` would write for ``state`` (bytes, ``updated_at`` = ``stamp``), or None
    when it would store ``previous`` again (apart from ``updated_at``). For a worker process: the parent then
    holds ~30 KB of bytes a changed host instead of the decoded state, and nothing for an unchanged one.

    ``previous_file``: the previous state as its file's bytes and that file's ``updated_at``
    (:func:`load_host_state_file`), compared instead of ``previous``, which may then have been changed in place
    (``evaluate_node(own_state=True)``). ``state`` encoded with the file's ``updated_at`` is the file byte for byte
    when nothing changed; a file in another layout (an older collection's indented JSON) reads as changed and is
    rewritten, the same document in this layout."""
    data = document(host, state)
    if previous_file is not None:
        raw, updated_at = previous_file
        if isinstance(raw, bytes) and isinstance(updated_at, str):
            data["updated_at"] = updated_at
            if _file_bytes(data) == raw:
                return None
        data["updated_at"] = stamp
        return _file_bytes(data)
    text = state_text(data)
    if isinstance(previous, dict):
        try:
            if state_text(document(host, previous)) == text:
                return None
        except (TypeError, ValueError):
            pass
    data["updated_at"] = stamp
    return _file_bytes(data)


class Staged(str):
    """The path of a host state written by :func:`stage_host_state` and not yet in place: :func:`save_host_states`
    renames it over the host's file."""

    __slots__ = ()


_STAGE_TOKEN = re.compile(r"[0-9a-f]{32}")


def _staged_name(host: str, token: str) -> str:
    return ".%s.json.%s.staged" % (_check_name(host), token)


def stage_host_state(state_dir: str, host: str, body: bytes, token: str) -> Staged:
    """Write the file :func:`encode_if_changed` made for ``host`` next to the host's file, fsynced, under a name
    of this batch (``token``, 32 hex digits), without putting it in place: an inspection's worker writes its hosts'
    changed states in parallel, and the parent puts them all in place after every host was judged
    (:func:`save_host_states`), or removes them all (:func:`discard_staged`) when one failed. A run killed before
    the parent's renames leaves every host file as it was (the staged files are removed by the next batch)."""
    if not _STAGE_TOKEN.fullmatch(token):
        raise StateError("invalid staging token %r" % (token,))
    directory = os.path.join(state_dir, "hosts")
    path = os.path.join(directory, _staged_name(host, token))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileNotFoundError:
        private_dir(directory, tighten=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)
    return Staged(path)


def discard_staged(state_dir: str, token: Optional[str] = None, older_than_s: Optional[float] = None) -> int:
    """Remove staged host states: this batch's (``token``), or any batch's older than ``older_than_s`` (a run
    killed between staging and putting in place). Returns how many were removed."""
    directory = os.path.join(state_dir, "hosts")
    removed = 0
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        name = entry.name
        if not (name.startswith(".") and name.endswith(".staged")):
            continue
        try:
            if token is not None and not name.endswith(".%s.staged" % token):
                continue
            if older_than_s is not None and now - entry.stat(follow_symlinks=False).st_mtime <= older_than_s:
                continue
            os.unlink(entry.path)
            removed += 1
        except OSError:
            pass
    return removed


def save_host_states(
    state_dir: str, states: Dict[str, Any], previous: Optional[Dict[str, Dict[str, Any]]] = None
) -> int:
    """Write a batch of host states (an inspection's; the batch's own objects, not copied): each file
    atomically and fsynced (``_files.write_private_atomic``), ``<state_dir>/hosts`` fsynced once at the end
    instead of once a file, compact JSON. A host whose new state encodes exactly as ``previous[host]``
    (apart from ``updated_at``: a repeat run over unchanged evidence) is not rewritten: the file would hold
    the same document. A state given as bytes is the file as :func:`encode_if_changed` made it; a
    :class:`Staged` one is that file written already, renamed into place here. Returns how many files were
    written."""
    directory = os.path.join(state_dir, "hosts")
    private_dir(directory, tighten=True)
    stamp = utcnow_iso()
    written = 0
    for host, state in states.items():
        path = host_state_path(state_dir, host)
        # bytes: encoded already by a worker (encode_if_changed)
        if isinstance(state, Staged):
            if os.path.dirname(state) != directory or os.path.basename(state)[: len(host) + 7] != ".%s.json." % host:
                raise StateError("staged state %s is not %s's" % (state, host))
            os.replace(state, path)
            written += 1
            continue
        body = state if isinstance(state, bytes) else encode_if_changed(host, state, (previous or {}).get(host), stamp)
        if body is None:
            continue
        write_private_atomic(path, body, 0o600, sync_dir=False)
        written += 1
    if written:
        fsync_dir(directory)
    return written


class StateLock:
    """An exclusive fcntl lock on ``<state_dir>/locks/<name>.lock``.

    ``with StateLock(state_dir, "gpu-node-07"):`` ... . ``timeout`` seconds (None: wait forever, 0: try
    once) before StateError. Locks are per open file description, so two StateLock objects in the same
    process exclude each other too. Released on exit (and by the kernel if the process dies).
    """

    def __init__(self, state_dir: str, name: str, timeout: Optional[float] = 30.0, poll: float = 0.05) -> None:
        self.path = os.path.join(state_dir, "locks", _check_name(name, "lock") + ".lock")
        self.timeout = timeout
        self.poll = poll
        self._fh: Any = None

    def acquire(self) -> StateLock:
        private_dir(os.path.dirname(self.path), tighten=True)  # <state_dir>/locks is ours: 0700
        try:  # 0600, never through a link planted at the lock's path
            fh = os.fdopen(open_private(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND), "a+")
        except OSError as exc:
            raise StateError("cannot open lock %s: %s" % (self.path, exc)) from exc
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    fh.close()
                    raise StateError("cannot lock %s: %s" % (self.path, exc)) from exc
                if deadline is not None and time.monotonic() >= deadline:
                    fh.close()
                    raise StateError("timed out after %ss waiting for lock %s" % (self.timeout, self.path)) from None
                time.sleep(self.poll)
        self._fh = fh
        return self

    def release(self) -> None:
        if self._fh is not None:
            try:
                fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            finally:
                self._fh.close()
                self._fh = None

    def __enter__(self) -> StateLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _host_section(state: Dict[str, Any], host: str) -> Dict[str, Any]:
    """The host's state: ``state`` itself, or ``state['hosts'][host]`` for a whole-cluster mapping."""
    if isinstance(state.get("hosts"), dict):
        hs = state["hosts"].get(host)
        if not isinstance(hs, dict):
            hs = empty_host_state(host)
            state["hosts"][host] = hs
        return hs
    return state


def _record_time(value: Any) -> str:
    """A reset or clear time (ISO text, epoch or datetime) as the state records it: UTC with a ``Z``."""
    when = parse_time(value)
    if when is None:
        raise StateError("not a time: %r" % (value,))
    return iso_z(when, timespec="auto")  # type: ignore[return-value]


def record_gpu_reset(
    state: Dict[str, Any], host: str, bus_id: str, serial: Optional[str], time_: Any
) -> Dict[str, Any]:
    """Record a successful reset of the GPU at ``bus_id`` (serial when known) at ``time_`` (ISO, epoch or
    datetime; anything else raises StateError).

    A reset clears that GPU's reset-class faults (clear rule ``needs_reset_record``) raised before it, and
    is a clear marker: kernel events of that GPU before it no longer count. Mutates and returns the host
    state (``state`` may also be ``{"hosts": {host: ...}}``).
    """
    hs = _host_section(state, host)
    hs.setdefault("resets", []).append({"bus_id": bus_id, "serial": serial, "time": _record_time(time_)})
    hs["resets"] = hs["resets"][-50:]
    record_clear(hs, host, bus_id, time_)
    return hs


def record_clear(state: Dict[str, Any], host: str, bus_id: str, time_: Any) -> Dict[str, Any]:
    """Record an operator clear for the GPU at ``bus_id``: kernel events before ``time_`` stop counting."""
    hs = _host_section(state, host)
    hs.setdefault("clears", {})[bus_id] = _record_time(time_)
    return hs
