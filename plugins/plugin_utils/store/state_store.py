# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared state behind one interface (docs/state.md "Backends"): per-host state documents and the isolation
guard's claims.

``open_state(state_dir, db_url)`` is the one place that picks the backend:

- ``db_url`` set (``gpuops_db_url``): :class:`DbStateStore` on the store (``_db``, docs/store.md), tables
  ``host_state`` and ``guard_claims`` (``_db/state_schema.py``). Every read-modify-write runs in one database
  transaction under a database lock (PostgreSQL advisory transaction lock, SQLite's write lock), so it holds
  across controllers and AWX execution nodes; a batch of host states (``save_hosts``) is one transaction: all of
  it or none of it.
- else ``state_dir`` (``gpuops_state_dir``): :class:`FileStateStore`, the embedded default for one controller:
  ``<state_dir>/hosts/<host>.json`` and ``<state_dir>/isolation/history.json`` under fcntl locks (``_state``,
  ``_guard``), exactly as before.
- neither: None (no state: check mode, or a run that keeps none).

Both have the same methods and the same answers: ``load_host``, ``load_hosts``, ``save_host``, ``save_hosts``,
``update_host(host, fn)``, ``guard_and_claim``, ``release_claims``, ``load_history``. The guard's decision is
``_guard.decide`` (pure) on both. Errors are ``_state.StateError`` (a ``StoreError`` of the database included).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow_iso
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import guard as _guard
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as _state
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import StoreError, open_store, state_schema
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import engine as _engine

try:
    import sqlalchemy as sa
    from sqlalchemy.dialects import postgresql as _pg, sqlite as _sqlite
except ImportError:  # the sanity import test; open_store says what is missing
    sa = _pg = _sqlite = None

CHUNK = 500  # rows per statement in a batch (one transaction whatever the batch size)

StateFn = Callable[[Dict[str, Any]], Optional[Dict[str, Any]]]


def open_state(state_dir: Optional[str] = None, db_url: Optional[str] = None) -> Any:
    """The state backend for (``state_dir``, ``db_url``): the database when ``db_url`` is set, else the state
    directory, else None. A database that cannot be used raises StateError with the store's reason."""
    if db_url:
        try:
            return DbStateStore(open_store(db_url=db_url))
        except StoreError as exc:
            raise _state.StateError(str(exc)) from None
    if state_dir:
        return FileStateStore(state_dir)
    return None


def _need_dict(states: Any) -> None:
    if not hasattr(states, "items"):
        raise _state.StateError("host states must be a mapping host -> state")


class FileStateStore:
    """The embedded default: JSON files in the state directory under fcntl locks (one controller)."""

    backend = "file"

    def __init__(self, state_dir: str) -> None:
        self.state_dir = state_dir

    def where(self, host: Optional[str] = None) -> str:
        """Where a host's state (or the state) lives, for messages and results."""
        return _state.host_state_path(self.state_dir, host) if host else self.state_dir

    def load_host(self, host: str, on_corrupt: str = "raise") -> Dict[str, Any]:
        return _state.load_host_state(self.state_dir, host, on_corrupt=on_corrupt)

    def load_host_file(self, host: str) -> Tuple[Dict[str, Any], Optional[bytes]]:
        """The host's state and its file's bytes (None: no file): ``_state.load_host_state_file``."""
        return _state.load_host_state_file(self.state_dir, host)

    def load_hosts(self, hosts: Iterable[str]) -> Dict[str, Dict[str, Any]]:
        return {host: self.load_host(host) for host in hosts}

    def save_host(self, host: str, state: Dict[str, Any]) -> None:
        _state.save_host_state(self.state_dir, host, state)

    def save_hosts(
        self, states: Dict[str, Dict[str, Any]], previous: Optional[Dict[str, Dict[str, Any]]] = None
    ) -> int:
        """Each host's file is written atomically (a killed run leaves every file whole: the old or the new
        document); the batch as a whole is not one transaction on this backend (docs/state.md). With
        ``previous`` (the states this run loaded) a host whose state did not change is not rewritten. Returns
        how many hosts were written."""
        _need_dict(states)
        return _state.save_host_states(self.state_dir, states, previous)

    def update_host(self, host: str, fn: StateFn, timeout: float = 30.0) -> Dict[str, Any]:
        return _state.update_host_state(self.state_dir, host, fn, timeout=timeout)

    def guard_and_claim(self, targets: Iterable[Any], cluster: Any, **kw: Any) -> Dict[str, Any]:
        """``_guard.guard_and_claim`` on ``<state_dir>/isolation/history.json`` (keywords: policy,
        override_reason, claim, now); a callable ``cluster`` is read under the lock."""
        return _guard.guard_and_claim(self.state_dir, targets, cluster, **kw)

    def release_claims(self, run_id: str, outcomes: Dict[str, str], **kw: Any) -> Dict[str, Any]:
        """``_guard.release_claims`` (keywords: lock_timeout, now, write)."""
        return _guard.release_claims(self.state_dir, run_id, outcomes, **kw)

    def load_history(self) -> List[Dict[str, Any]]:
        return _guard.load_history(self.state_dir)

    def host_names(self) -> List[str]:
        """The hosts that have a state file (``<state_dir>/hosts/<host>.json``)."""
        try:
            names = os.listdir(os.path.join(self.state_dir, "hosts"))
        except FileNotFoundError:
            return []
        return sorted(n[: -len(".json")] for n in names if n.endswith(".json") and not n.startswith("."))

    def close(self) -> None:
        """Nothing to close (the interface of DbStateStore)."""


def _plain(data: Any) -> Any:
    """A JSON-clean copy (what the file backend's ``json.dumps(default=str)`` would store)."""
    return json.loads(json.dumps(data, sort_keys=True, default=str))


def _host_doc(host: str, state: Dict[str, Any], stamp: str) -> Dict[str, Any]:
    data = _state.document(host, _state.copy_state(state))
    data["updated_at"] = stamp
    return _plain(data)


def _entry(row: Any) -> Dict[str, Any]:
    """A guard_claims row as a history entry (the fields of an entry of history.json)."""
    out = {"node": row.node, "time": row.time, "run_id": row.run_id, "ticket": row.ticket, "state": row.state}
    if row.released_at is not None:
        out["released_at"] = row.released_at
    if row.override_reason is not None:
        out["override_reason"] = row.override_reason
    return out


class DbStateStore:
    """The shared backend: tables ``host_state`` and ``guard_claims`` in the store (SQLite or PostgreSQL)."""

    backend = "db"

    def __init__(self, store: Any) -> None:
        self.store = store
        self.tables = state_schema.tables()

    def where(self, host: Optional[str] = None) -> str:
        return "%s host_state[%s]" % (self.store.url, host) if host else self.store.url

    # -- transactions and locks ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _tx(self, lock: Optional[str] = None, timeout: Optional[float] = None) -> Iterator[Any]:
        """One write transaction holding the database lock ``lock`` (PostgreSQL: an advisory transaction lock,
        waited for at most ``timeout`` s; SQLite: BEGIN IMMEDIATE already holds the database's write lock)."""
        try:
            with self.store.begin() as conn:
                if lock and self.store.dialect == "postgresql":
                    if timeout is not None:
                        ms = "%dms" % max(1, int(timeout * 1000))
                        conn.execute(sa.text("SELECT set_config('lock_timeout', :v, true)"), {"v": ms})
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _engine._lock_key(lock)})
                yield conn
        except StoreError as exc:
            if "lock timeout" in str(exc).lower():
                raise _state.StateError(
                    "timed out after %ss waiting for the database lock %s" % (timeout, lock)
                ) from None
            raise _state.StateError(str(exc)) from None

    @contextlib.contextmanager
    def _read(self) -> Iterator[Any]:
        try:
            with self.store.read() as conn:
                yield conn
        except StoreError as exc:
            raise _state.StateError(str(exc)) from None

    # -- host state ---------------------------------------------------------------------------------------
    def _docs(self, conn: Any, hosts: List[str], for_update: bool = False) -> Dict[str, Any]:
        t = self.tables["host_state"]
        out: Dict[str, Any] = {}
        for i in range(0, len(hosts), CHUNK):
            q = sa.select(t.c.host, t.c.doc).where(t.c.host.in_(hosts[i : i + CHUNK]))
            if for_update and self.store.dialect == "postgresql":
                q = q.with_for_update()
            try:
                out.update({row.host: row.doc for row in conn.execute(q)})
            except ValueError as exc:  # a row that is not JSON, or over the budget (_engine's json_deserializer)
                raise _state.StateError("corrupt state row in %s: %s" % (self.store.url, exc)) from None
        return out

    def _normalized(self, host: str, doc: Any) -> Dict[str, Any]:
        if doc is None:
            return _state.empty_host_state(host)
        if not isinstance(doc, dict):
            raise _state.StateError("corrupt state of %s in %s: not a JSON object" % (host, self.store.url))
        return _state.normalize_host_state(doc, host)

    def load_host(self, host: str, on_corrupt: str = "raise") -> Dict[str, Any]:  # pylint: disable=unused-argument
        return self.load_hosts([host])[host]

    def load_hosts(self, hosts: Iterable[str]) -> Dict[str, Dict[str, Any]]:
        """Every host's state in one read (an empty state for a host without one)."""
        names = [_state._check_name(h) for h in hosts]  # pylint: disable=protected-access
        with self._read() as conn:
            docs = self._docs(conn, names)
        return {host: self._normalized(host, docs.get(host)) for host in names}

    def _upsert(self, conn: Any, rows: List[Dict[str, Any]]) -> None:
        t = self.tables["host_state"]
        stmt = (_pg if self.store.dialect == "postgresql" else _sqlite).insert(t)
        stmt = stmt.on_conflict_do_update(
            index_elements=[t.c.host], set_={"doc": stmt.excluded.doc, "updated_at": stmt.excluded.updated_at}
        )
        conn.execute(stmt, rows)

    def save_host(self, host: str, state: Dict[str, Any]) -> None:
        self.save_hosts({host: state})

    def save_hosts(
        self, states: Dict[str, Dict[str, Any]], previous: Optional[Dict[str, Dict[str, Any]]] = None
    ) -> int:
        """Write a batch of host states in ONE transaction: a run killed half-way leaves none of the batch
        (the database rolls it back) and every host as the previous run left it. With ``previous`` (the states
        this run loaded) a host whose state did not change is not rewritten. Returns how many were written."""
        _need_dict(states)
        stamp, now = utcnow_iso(), time.time()
        count = 0
        with self._tx() as conn:
            rows: List[Dict[str, Any]] = []
            for host, state in states.items():
                _state._check_name(host)  # pylint: disable=protected-access
                doc = _host_doc(host, state, stamp)
                prev = (previous or {}).get(host)
                if isinstance(prev, dict) and _state.state_text(doc) == _state.state_text(_plain(prev)):
                    continue
                rows.append({"host": host, "doc": doc, "updated_at": now})
                if len(rows) >= CHUNK:
                    self._upsert(conn, rows)
                    count, rows = count + len(rows), []
            if rows:
                self._upsert(conn, rows)
                count += len(rows)
        return count

    def update_host(self, host: str, fn: StateFn, timeout: float = 30.0) -> Dict[str, Any]:
        """Load, apply ``fn`` (which mutates or returns the new state), save: one transaction under the database
        lock ``host:<host>`` (and the row locked on PostgreSQL). Returns the saved state."""
        _state._check_name(host)  # pylint: disable=protected-access
        with self._tx("host:%s" % host, timeout) as conn:
            state = self._normalized(host, self._docs(conn, [host], for_update=True).get(host))
            result = fn(state)
            if result is not None:
                state = result
            doc = _host_doc(host, state, utcnow_iso())
            self._upsert(conn, [{"host": host, "doc": doc, "updated_at": time.time()}])
        return _state.normalize_host_state(doc, host)

    def host_names(self) -> List[str]:
        t = self.tables["host_state"]
        with self._read() as conn:
            return sorted(r[0] for r in conn.execute(sa.select(t.c.host)))

    # -- the isolation guard's claims ---------------------------------------------------------------------
    def _history(self, conn: Any) -> List[Dict[str, Any]]:
        t = self.tables["guard_claims"]
        return [_entry(r) for r in conn.execute(sa.select(t).order_by(t.c.id))]

    def load_history(self) -> List[Dict[str, Any]]:
        with self._read() as conn:
            return self._history(conn)

    def guard_and_claim(
        self,
        targets: Iterable[Any],
        cluster: Any,
        policy: Optional[Dict[str, Any]] = None,
        override_reason: str = "",
        claim: Optional[Any] = None,
        now: Optional[float] = None,
    ) -> Dict[str, Any]:
        """``_guard.decide`` and the claims of the allowed nodes in one transaction under the database lock
        ``isolation-guard``: another controller's claims count at once. A callable ``cluster`` (the Slurm read)
        is called under that lock, so the decision also sees every drain another controller made before it."""
        claim = claim or _guard.Claim()
        pol = _guard.normalize_policy(policy)
        if not claim.record:  # decide only (check mode): read, lock and write nothing
            view = _guard.read_cluster(cluster)
            t = time.time() if now is None else float(now)
            result = _guard.decide(targets, view, self.load_history(), pol, t, override_reason)
            return dict(result, claim_ttl_s=pol["claim_ttl_s"])
        gc = self.tables["guard_claims"]
        with self._tx(_guard.LOCK_NAME, claim.lock_timeout) as conn:
            view = _guard.read_cluster(cluster)  # under the lock: Slurm as it is after every earlier decision
            t = time.time() if now is None else float(now)
            result = _guard.decide(targets, view, self._history(conn), pol, t, override_reason)
            if result["allowed"]:
                conn.execute(sa.delete(gc).where(gc.c.time < t - _guard.keep_s(pol)))
                conn.execute(sa.insert(gc), _guard.claim_entries(result["allowed"], claim, t, override_reason))
        result["claim_ttl_s"] = pol["claim_ttl_s"]
        return result

    def release_claims(
        self,
        run_id: str,
        outcomes: Dict[str, str],
        lock_timeout: float = 60.0,
        now: Optional[float] = None,
        write: bool = True,
    ) -> Dict[str, Any]:
        """``_guard.release_claims`` semantics: this run's open claims of the nodes in ``outcomes`` become done
        or failed, in one transaction under the ``isolation-guard`` lock; ``write=False`` writes nothing."""
        _guard.check_release(run_id, outcomes)
        if not write:
            t = time.time() if now is None else float(now)
            return _guard.release_answer(_guard.mark_released(self.load_history(), run_id, outcomes, t), outcomes)
        gc = self.tables["guard_claims"]
        released: Dict[str, str] = {}
        with self._tx(_guard.LOCK_NAME, lock_timeout) as conn:
            t = time.time() if now is None else float(now)
            q = sa.select(gc.c.id, gc.c.node).where(gc.c.run_id == run_id, gc.c.state == _guard.CLAIMED)
            for row in conn.execute(q).all():
                if row.node in outcomes:
                    outcome = outcomes[row.node]
                    conn.execute(sa.update(gc).where(gc.c.id == row.id).values(state=outcome, released_at=t))
                    released[row.node] = outcome
        return _guard.release_answer(released, outcomes)

    def close(self) -> None:
        self.store.close()


def import_file_state(state_dir: str, dst: DbStateStore, overwrite: bool = False, write: bool = True) -> Dict[str, Any]:
    """One-shot move of a controller's file state into the database (docs/state.md "Moving to the database"):
    every ``<state_dir>/hosts/<host>.json`` and the guard's claims of ``<state_dir>/isolation/history.json``, in
    ONE transaction under the ``isolation-guard`` lock. A host the database already has is kept (listed in
    ``skipped``) unless ``overwrite``; a claim already there (same node, time and run) is not doubled. A corrupt
    file stops the import before anything is written (StateError). ``write=False`` (check mode) only counts.
    The files are left in place. Returns ``{hosts, skipped, claims, changed}``."""
    src = FileStateStore(state_dir)
    names = src.host_names()
    states = {host: src.load_host(host) for host in names}  # StateError names a corrupt file
    history = src.load_history()
    gc = dst.tables["guard_claims"]
    with dst._tx(_guard.LOCK_NAME) as conn:  # pylint: disable=protected-access
        have = set(dst._docs(conn, names))  # pylint: disable=protected-access
        hosts = sorted(h for h in names if overwrite or h not in have)
        known = {(e["node"], e["time"], e["run_id"]) for e in dst._history(conn)}  # pylint: disable=protected-access
        claims = []
        for e in history:
            when = _guard._entry_time(e)  # pylint: disable=protected-access
            if when is None or not isinstance(e.get("node"), str) or (e["node"], when, e.get("run_id") or "") in known:
                continue
            row = {k: e.get(k) for k in ("released_at", "override_reason")}
            row.update(node=e["node"], time=when, run_id=e.get("run_id") or "", ticket=e.get("ticket") or "")
            row["state"] = e.get("state") or _guard.CLAIMED
            claims.append(row)
        if write and hosts:
            stamp = utcnow_iso()
            rows = [
                {
                    "host": h,
                    "doc": _host_doc(h, states[h], states[h].get("updated_at") or stamp),
                    "updated_at": time.time(),
                }
                for h in hosts
            ]
            for i in range(0, len(rows), CHUNK):
                dst._upsert(conn, rows[i : i + CHUNK])  # pylint: disable=protected-access
        if write and claims:
            conn.execute(sa.insert(gc), claims)
    skipped = sorted(set(names) - set(hosts))
    return {"hosts": hosts, "skipped": skipped, "claims": len(claims), "changed": bool(hosts or claims)}
