# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared state's tables (docs/state.md "Backends", docs/isolation.md): what the health policy and the
blast-radius guard remember between runs when several controllers or AWX execution nodes share one store.

- ``host_state``: one row per host, ``doc`` the same JSON document the file backend keeps in
  ``<state_dir>/hosts/<host>.json`` (schema ``gpuops.state/v1``: counter readings, boot ids, clear markers,
  resets, escalation history, active faults, golden baseline); ``updated_at`` UTC epoch seconds.
- ``guard_claims``: the isolation guard's claims, one row per claimed node, the same fields as an entry of
  ``<state_dir>/isolation/history.json`` (``time`` and ``released_at`` UTC epoch seconds; ``state`` claimed,
  done or failed).

Created by the migration ``0003_state`` (a branch from ``0001_base``); later changes come as new revisions.
"""

from __future__ import annotations

from typing import Any

try:
    import sqlalchemy as sa
except ImportError:  # sanity import test
    sa = None

STATE_TABLES = ("host_state", "guard_claims")


def define(meta: Any) -> Any:
    """Define the shared-state tables (revision 0003_state) on ``meta``; returns ``meta``."""
    sa.Table(
        "host_state",
        meta,
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("doc", sa.JSON, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    sa.Table(
        "guard_claims",
        meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("node", sa.String(255), nullable=False),
        sa.Column("time", sa.Float, nullable=False),
        sa.Column("run_id", sa.String(255), nullable=False, server_default=""),
        sa.Column("ticket", sa.String(255), nullable=False, server_default=""),
        sa.Column("state", sa.String(16), nullable=False),  # claimed | done | failed
        sa.Column("released_at", sa.Float),
        sa.Column("override_reason", sa.Text),
        sa.Index("ix_guard_claims_time", "time"),
        sa.Index("ix_guard_claims_run", "run_id", "state"),
    )
    return meta


_TABLES: dict = {}


def tables() -> Any:
    """The tables bound to one module-level MetaData (for queries)."""
    if not _TABLES:
        _TABLES["meta"] = define(sa.MetaData())
    return _TABLES["meta"].tables
