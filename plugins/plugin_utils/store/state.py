# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host state documents (``gpuops.state/v1``, docs/state.md) and the state directory's fcntl locks.

The controller keeps the documents in ONE backend, the store (``state_store.py``: table ``host_state`` of the
embedded ``<state_dir>/gpuops.db`` or of ``gpuops_db_url``; issue 36; an older collection's
``<state_dir>/hosts/<host>.json`` files are imported there once). This module holds what works on a document
(``empty_host_state``, ``normalize_host_state``, ``document``, ``copy_state``, ``state_text``,
``record_gpu_reset``, ``record_clear``), ``StateError``, ``StateLock`` (``<state_dir>/locks/<name>.lock``, for
what is not in the store: replacement records) and ``atomic_write_json`` (the replacement and onboarding records'
files).

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
from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._files import (
    ensure_private_dir,
    open_private,
    write_private_atomic,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time
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
