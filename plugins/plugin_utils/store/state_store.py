# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller state (docs/state.md): per-host state documents and the isolation guard's claims, in ONE
backend, the store (``store/engine.py``, docs/store.md).

``open_state(state_dir, db_url)`` opens it: :class:`DbStateStore`, tables ``host_state`` and ``guard_claims``
(``state_schema.py``), on

- the embedded SQLite file ``<state_dir>/gpuops.db`` (``gpuops_state_dir`` alone: one controller, zero set-up), or
- the database ``db_url`` names (``gpuops_db_url``: PostgreSQL for several controllers or AWX execution nodes);
- neither: None (no state: check mode, or a run that keeps none), or StateError when the caller ``need``s one.

Every read-modify-write runs in one database transaction under a database lock (PostgreSQL advisory transaction
lock, SQLite's write lock), so it holds across processes, controllers and execution nodes; a batch of host states
(``save_hosts``) is one transaction: all of it or none of it. Methods: ``load_host``, ``load_hosts``,
``save_host``, ``save_hosts``, ``update_host(host, fn)``, ``guard_and_claim``, ``release_claims``,
``load_history``, ``host_names``. The guard's decision is ``_guard.decide`` (pure). Errors are
``_state.StateError`` (a ``StoreError`` of the database included).

The JSON files an older collection kept in the state directory (``<state_dir>/hosts/<host>.json``,
``<state_dir>/isolation/history.json``) are imported once, on the first open that finds them
(:func:`import_state_files`), then moved aside.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
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


def open_state(state_dir: Optional[str] = None, db_url: Optional[str] = None, need: Optional[str] = None) -> Any:
    """The controller state: the store ``db_url`` names, else the embedded SQLite file in ``state_dir``; None
    without either (StateError naming ``need``, e.g. "the guard", when the caller cannot do without). On the
    first open that finds an older collection's JSON files in ``state_dir`` they are imported (StateError naming
    the file when one cannot be read: the store is then not used). A store that cannot be used raises
    StateError with the store's reason."""
    if not db_url and not state_dir:
        if need:
            raise _state.StateError(
                "%s needs a state directory (gpuops_state_dir) or a database (gpuops_db_url) to keep its state" % need
            )
        return None
    try:
        store = open_store(state_dir=None if db_url else state_dir, db_url=db_url)
    except StoreError as exc:
        raise _state.StateError(str(exc)) from None
    states = DbStateStore(store)
    if state_dir:
        try:
            states.imported = import_state_files(state_dir, states)
        except BaseException:
            states.close()
            raise
    return states


def _need_dict(states: Any) -> None:
    if not hasattr(states, "items"):
        raise _state.StateError("host states must be a mapping host -> state")


def _plain(data: Any) -> Any:
    """A JSON-clean copy (what ``json.dumps(default=str)`` keeps: a key given as an int is stored as its str)."""
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
    """The controller state: tables ``host_state`` and ``guard_claims`` in the store (SQLite or PostgreSQL)."""

    backend = "db"

    def __init__(self, store: Any) -> None:
        self.store = store
        self.tables = state_schema.tables()
        self.imported: Optional[Dict[str, Any]] = None  # what open_state imported from the old files (None: nothing)

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
                bad = self._corrupt_host(conn, hosts[i : i + CHUNK])
                raise _state.StateError("corrupt state row of %s in %s: %s" % (bad, self.store.url, exc)) from None
        return out

    def _corrupt_host(self, conn: Any, hosts: List[str]) -> str:
        """The first of ``hosts`` whose row cannot be read (for the message; only after a batch read failed)."""
        t = self.tables["host_state"]
        for host in hosts:
            try:
                conn.execute(sa.select(t.c.doc).where(t.c.host == host)).all()
            except ValueError:
                return host
        return "a host"

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
        """The guard's release (docs/isolation.md): this run's open claims of the nodes in ``outcomes`` become done
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


# -- the one-time import of an older collection's state files --------------------------------------------------
IMPORTED_SUFFIX = (
    ".imported-"  # <state_dir>/hosts.imported-<UTC stamp>, <state_dir>/isolation/history.json.imported-...
)


def _old_paths(state_dir: str) -> Dict[str, str]:
    return {"hosts": os.path.join(state_dir, "hosts"), "history": _guard.history_path(state_dir)}


def _refuse(path: str, why: Any, store: Any) -> _state.StateError:
    return _state.StateError(
        "cannot import the old state file %s into the store %s: %s. Nothing was imported, and no run uses the state "
        "until it is (the guard's claims must not read as none): repair the file, or move it aside if its state may be lost (docs/state.md "
        '"The state files of older versions")' % (path, store.store.url, why)
    )


def _read_old(path: str, what: str) -> Any:
    """The JSON document of an old state file; None when it is gone (another process imported it)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise ValueError("cannot read it: %s" % (exc.strerror or exc)) from None
    try:
        data = _safejson.loads(raw, what=what)  # not UTF-8, not JSON, nested too deep: a ValueError
    except ValueError as exc:
        raise ValueError("not readable JSON (%s)" % exc) from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def _old_hosts(state_dir: str, dst: DbStateStore) -> Dict[str, Dict[str, Any]]:
    """Every ``<state_dir>/hosts/<host>.json``, normalized; any file that cannot be read refuses the import."""
    directory = _old_paths(state_dir)["hosts"]
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise _refuse(directory, "cannot list it: %s" % (exc.strerror or exc), dst) from None
    out: Dict[str, Dict[str, Any]] = {}
    for name in names:
        if not name.endswith(".json") or name.startswith("."):  # staged or temporary files, *.corrupt-<epoch>
            continue
        path = os.path.join(directory, name)
        host = name[: -len(".json")]
        try:
            _state._check_name(host)  # pylint: disable=protected-access
            data = _read_old(path, "state file")
        except (ValueError, _state.StateError) as exc:
            raise _refuse(path, exc, dst) from None
        if data is not None:
            out[host] = _state.normalize_host_state(data, host)
    return out


def _old_claims(state_dir: str, dst: DbStateStore) -> List[Dict[str, Any]]:
    """The guard's entries of ``<state_dir>/isolation/history.json`` as guard_claims rows. An entry the guard never
    counted (no node, no finite time) is left out, as the guard left it out; a file that cannot be read, or that is
    not ``{"entries": [...]}``, refuses the import (its claims must not become "no claims")."""
    path = _old_paths(state_dir)["history"]
    try:
        data = _read_old(path, "isolation history")
        if data is not None and not isinstance(data.get("entries", []), list):
            raise ValueError('"entries" is not a list')
    except ValueError as exc:
        raise _refuse(path, exc, dst) from None
    rows = []
    for e in (data or {}).get("entries") or []:
        when = _guard._entry_time(e) if isinstance(e, dict) else None  # pylint: disable=protected-access
        node = e.get("node") if when is not None else None
        if not isinstance(node, str) or not node or len(node) > 255:  # never a node of the cluster: never counted
            continue
        state = e.get("state", _guard.CLAIMED)  # a claim without a state counted as claimed
        released = e.get("released_at")
        rows.append(
            {
                "node": node,
                "time": when,
                "run_id": str(e.get("run_id") or "")[:255],
                "ticket": str(e.get("ticket") or "")[:255],
                # a state the guard does not know stays one it does not count as a claim (only the flap window)
                "state": state if isinstance(state, str) and len(state) <= 16 else "unknown",
                "released_at": _guard._entry_time({"time": released}),  # pylint: disable=protected-access
                "override_reason": e["override_reason"] if isinstance(e.get("override_reason"), str) else None,
            }
        )
    return rows


def _move_aside(path: str, stamp: str) -> Optional[str]:
    """Rename an imported file or directory to ``<path>.imported-<stamp>``; None when it is gone already."""
    target = path + IMPORTED_SUFFIX + stamp
    if os.path.lexists(target):
        target = "%s.%d" % (target, os.getpid())
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _state.StateError("imported %s into the store but cannot move it aside: %s" % (path, exc)) from None
    return target


def import_state_files(state_dir: str, dst: DbStateStore) -> Optional[Dict[str, Any]]:
    """Import an older collection's state files into the store, once (docs/state.md "The state files of older
    versions"): every ``<state_dir>/hosts/<host>.json`` and the guard's claims of
    ``<state_dir>/isolation/history.json``, in ONE transaction under the ``isolation-guard`` lock (no guard decision
    runs half-way through it). A host the store already has keeps the store's document (listed in ``skipped``); a
    claim the store already has (same node, time and run) is not added again. Once committed, the files are moved
    aside (``hosts.imported-<stamp>``, ``history.json.imported-<stamp>``): the next open finds nothing to import; a
    run killed between the commit and the move imports nothing new the next time. A file that cannot be read refuses
    the whole import (StateError naming it; nothing written, nothing moved). Returns None when there was nothing to
    import, else ``{hosts, skipped, claims, moved}``."""
    paths = _old_paths(state_dir)
    if not (os.path.lexists(paths["hosts"]) or os.path.lexists(paths["history"])):
        return None  # every open but the first: two stat calls
    gc = dst.tables["guard_claims"]
    with dst._tx(_guard.LOCK_NAME) as conn:  # pylint: disable=protected-access
        states = _old_hosts(state_dir, dst)  # read under the lock: another controller may be importing them
        claims = _old_claims(state_dir, dst)
        have = set(dst._docs(conn, sorted(states)))  # pylint: disable=protected-access
        hosts = sorted(h for h in states if h not in have)
        known = {(e["node"], e["time"], e["run_id"]) for e in dst._history(conn)}  # pylint: disable=protected-access
        new = [c for c in claims if (c["node"], c["time"], c["run_id"]) not in known]
        now, stamp = time.time(), utcnow_iso()
        rows = [{"host": h, "doc": _host_doc(h, states[h], states[h].get("updated_at") or stamp), "updated_at": now}
                for h in hosts]  # fmt: skip
        for i in range(0, len(rows), CHUNK):
            dst._upsert(conn, rows[i : i + CHUNK])  # pylint: disable=protected-access
        for i in range(0, len(new), CHUNK):
            conn.execute(sa.insert(gc), new[i : i + CHUNK])
    tag = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moved = [m for m in (_move_aside(paths["hosts"], tag), _move_aside(paths["history"], tag)) if m]
    return {"hosts": hosts, "skipped": sorted(set(states) - set(hosts)), "claims": len(new), "moved": moved}
