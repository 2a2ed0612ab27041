# -*- coding: utf-8 -*-
"""What the roles keep in the controller state of a state directory, read for the tests with Python's sqlite3 module
(not with the collection's code): the embedded store ``<state_dir>/gpuops.db`` (docs/state.md "Backends"), tables
``host_state`` (host, doc JSON) and ``guard_claims`` (node, time, run_id, ticket, state, released_at,
override_reason)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Dict, List, Optional

CLAIM_COLUMNS = ("node", "time", "run_id", "ticket", "state", "released_at", "override_reason")


def _rows(state_dir: Any, sql: str, args: tuple = ()) -> List[tuple]:
    db = Path(state_dir) / "gpuops.db"
    if not db.exists():
        return []
    conn = sqlite3.connect("file:%s?mode=rw" % db, uri=True, timeout=30)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def host_state(state_dir: Any, host: str) -> Optional[Dict[str, Any]]:
    """The host's state document (None: the store has none)."""
    rows = _rows(state_dir, "SELECT doc FROM host_state WHERE host = ?", (host,))
    return json.loads(rows[0][0]) if rows else None


def host_names(state_dir: Any) -> List[str]:
    return sorted(r[0] for r in _rows(state_dir, "SELECT host FROM host_state"))


def claims(state_dir: Any) -> List[Dict[str, Any]]:
    """The isolation guard's claims in the order they were made (the entries history.json held before issue 36)."""
    sql = "SELECT %s FROM guard_claims ORDER BY id" % ", ".join(CLAIM_COLUMNS)
    return [dict(zip(CLAIM_COLUMNS, r)) for r in _rows(state_dir, sql)]


def open_incidents(state_dir: Any, host: str) -> List[Dict[str, Any]]:
    """The host's open incidents in the ledger of the embedded store (table ``incidents``: incident_id, fingerprint
    ``<host>|<finding id>``, severity, detected_at), oldest first."""
    rows = _rows(
        state_dir,
        "SELECT incident_id, fingerprint, severity, detected_at FROM incidents WHERE host = ? AND state = 'open' "
        "ORDER BY detected_at",
        (host,),
    )
    return [dict(zip(("incident_id", "fingerprint", "severity", "detected_at"), r)) for r in rows]
