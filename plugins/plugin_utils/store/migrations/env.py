# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Alembic environment of the gpuops store: always run by ``_db.engine.migrate`` on the connection it holds
(inside its transaction and database lock), never from an ``alembic.ini``."""

from __future__ import annotations

try:
    from alembic import context
except ImportError:  # imported outside a migration (sanity import test)
    context = None

if context is not None and getattr(context, "config", None) is not None:
    _conn = context.config.attributes.get("connection")
    if _conn is None:
        raise RuntimeError("run the gpuops migrations through _db.engine.migrate (it passes the connection)")
    context.configure(connection=_conn, target_metadata=None, render_as_batch=True, transactional_ddl=True)
    with context.begin_transaction():
        context.run_migrations()
