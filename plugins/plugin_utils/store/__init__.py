# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's database (docs/store.md): one store for the service ledger and the shared state.

SQLAlchemy 2 Core with Alembic migrations. By default an embedded SQLite file ``<gpuops_state_dir>/gpuops.db``
(WAL mode, 0600 in a 0700 directory, zero set-up); PostgreSQL when ``gpuops_db_url`` names one (AWX/AAP with
several execution nodes, several controllers). Controller side only.

    store = open_store(state_dir="/var/lib/gpuops/state")          # or db_url="postgresql://gpuops@db/gpuops"
    with store.begin(lock="isolation-guard") as conn:               # one transaction, a database lock held
        conn.execute(...)
    with store.read() as conn:                                       # a read-only snapshot
        ...

Every problem (driver missing, server unreachable, corrupt file, schema newer than this collection) is a
``StoreError`` with a clear message; nothing already committed is lost by a failed run (each write is one
transaction). Each area owns its tables in its own module and its own Alembic branch from ``0001_base``
(docs/store.md "Schema and migrations").
"""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.engine import (
    HAS_SQLALCHEMY,
    Store,
    StoreError,
    open_store,
    store_url,
)

__all__ = ["HAS_SQLALCHEMY", "Store", "StoreError", "open_store", "store_url"]
