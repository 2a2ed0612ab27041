"""Load a simulated history (OUT/history/, history.py) into the collection's store (issue 15).

    python3 tools/simcluster/history.py load --state-dir DIR | --store-url URL  OUT/history

Every file is read and checked first (JSON per line, the table's columns, the manifest's row counts): a bad line
stops the load with the file and line named and nothing written. Then each ledger table is written in one
transaction, in batches (SQLAlchemy Core ``insert(table)`` with a list of rows: executemany / insertmanyvalues).
A history already in the store (any of its run ids or incident ids present) is refused: load it into a fresh store.
A database error part-way stops the load and names the tables already committed.
This is the only part of the simulator that imports the collection (its store and ledger table definitions).
"""

from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCHEMA = "gpuops.sim_history/v1"
BATCH = 5000
LOCK = "gpuops-history-load"


class HistoryError(Exception):
    """A history directory that cannot be loaded (bad file, bad line, already loaded)."""


def _collection():
    """(sqlalchemy, ledger_schema module, open_store, StoreError) from the collection (build/ after make setup)."""
    try:
        import ansible_collections.gpuops.cluster.plugins.plugin_utils.store  # noqa: F401  pylint: disable=unused-import
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "build"))
    try:
        import sqlalchemy as sa  # pylint: disable=import-outside-toplevel
        from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import (  # pylint: disable=import-outside-toplevel
            StoreError,
            ledger_schema,
            open_store,
        )
    except ImportError as exc:
        raise HistoryError(
            "loading needs the collection's store (SQLAlchemy and gpuops.cluster importable: run `make setup` and "
            "use .venv/bin/python): %s" % exc
        ) from None
    return sa, ledger_schema, open_store, StoreError


def _columns(table) -> tuple:
    """(all column names, required names): required = NOT NULL without a server default or autoincrement."""
    names, required = set(), set()
    for col in table.columns:
        if col.autoincrement is True or (col.primary_key and col.name == "id"):
            continue
        names.add(col.name)
        if not col.nullable and col.server_default is None:
            required.add(col.name)
    return names, required


def _read_table(path: str, table) -> list:
    names, required = _columns(table)
    rows = []
    rel = os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise HistoryError(
                    "%s line %d: not a complete JSON object (truncated or damaged file?): %s" % (rel, lineno, exc)
                ) from None
            if not isinstance(row, dict):
                raise HistoryError("%s line %d: expected a JSON object, got %s" % (rel, lineno, type(row).__name__))
            unknown = sorted(set(row) - names)
            missing = sorted(c for c in required if row.get(c) is None)
            if unknown or missing:
                raise HistoryError(
                    "%s line %d: %s"
                    % (rel, lineno, "unknown column(s) %s" % unknown if unknown else "missing %s" % missing)
                )
            rows.append(row)
    return rows


def read_history(history_dir: str, ledger_schema) -> tuple:
    """(manifest, {table: rows}) after checking every file; raises HistoryError naming the file and line."""
    mpath = os.path.join(history_dir, "manifest.json")
    try:
        with open(mpath, encoding="utf-8") as fh:
            manifest = json.load(fh)
    except (OSError, ValueError) as exc:
        raise HistoryError("%s: not a readable history manifest: %s" % (mpath, exc)) from None
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        raise HistoryError("%s: schema is not %s" % (mpath, SCHEMA))
    meta = ledger_schema.tables()
    data = {}
    for name in manifest.get("tables") or []:
        if name not in meta.tables:
            raise HistoryError("%s: %r is not a ledger table" % (mpath, name))
        path = os.path.join(history_dir, name + ".jsonl")
        try:
            data[name] = _read_table(path, meta.tables[name])
        except OSError as exc:
            raise HistoryError("%s: cannot read: %s" % (path, exc.strerror or exc)) from None
        want = (manifest.get("counts") or {}).get(name)
        if want != len(data[name]):
            raise HistoryError(
                "%s: %d rows but the manifest says %s (a truncated or mixed-up history)" % (path, len(data[name]), want)
            )
    return manifest, data


def _already_loaded(conn, sa, meta, data: dict) -> str:
    checks = (("runs", "run_id"), ("incidents", "incident_id"))
    for table, col in checks:
        ids = [r[col] for r in data.get(table, [])[:1000]]
        if not ids:
            continue
        t = meta.tables[table]
        found = conn.execute(sa.select(sa.func.count()).select_from(t).where(t.c[col].in_(ids))).scalar()
        if found:
            return "%d of its %s (%s ...) are already in the store" % (found, table, ids[0])
    return ""


def load_history(store, history_dir: str) -> dict:
    """Load ``history_dir`` into ``store`` (an open _db.Store); returns {table: rows inserted}. Raises HistoryError
    for a bad file or a history already loaded (nothing written), StoreError when the database fails."""
    sa, ledger_schema, _open, store_error = _collection()
    manifest, data = read_history(history_dir, ledger_schema)
    meta = ledger_schema.tables()
    with store.read() as conn:
        dup = _already_loaded(conn, sa, meta, data)
    if dup:
        raise HistoryError(
            "this history (%s, seed %s) is already loaded in %s: %s; refusing to load it twice (use a fresh store)"
            % (manifest.get("period"), manifest.get("seed"), store.url, dup)
        )
    counts = {}
    for name in manifest["tables"]:  # the manifest's order: parents (incidents) before children (events, reviews)
        rows, table = data[name], meta.tables[name]
        try:
            with store.begin(lock=LOCK) as conn:
                for i in range(0, len(rows), BATCH):
                    conn.execute(sa.insert(table), rows[i : i + BATCH])
        except store_error as exc:
            raise store_error(
                "%s (loading %s; tables already loaded: %s)" % (exc, name, ", ".join(counts) or "none")
            ) from None
        counts[name] = len(rows)
    return counts


def cli(history_dir: str, store_url=None, state_dir=None) -> int:
    t0 = time.time()
    try:
        sa, ledger_schema, open_store, store_error = _collection()  # noqa: F841  pylint: disable=unused-variable
    except HistoryError as exc:
        print("history load: %s" % exc, file=sys.stderr)
        return 2
    try:
        store = open_store(state_dir=state_dir, db_url=store_url)
        try:
            counts = load_history(store, history_dir)
        finally:
            store.close()
    except (HistoryError, store_error) as exc:
        print("history load: %s" % exc, file=sys.stderr)
        return 2
    print(
        "history load: %s into %s in %.1f s"
        % (", ".join("%s %d" % kv for kv in counts.items()), store.url, time.time() - t0)
    )
    return 0
