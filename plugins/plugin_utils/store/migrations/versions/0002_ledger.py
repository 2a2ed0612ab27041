# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service ledger (issue 15): runs, node service periods, finding history, incidents and their clocks, reviews,
changes, tickets, allocation samples, maintenance windows (``_db/ledger_schema.py``).

Revision ID: 0002_ledger
Revises: 0001_base
"""

from __future__ import annotations

try:
    import sqlalchemy as sa
    from alembic import op
except ImportError:  # sanity import test
    sa = op = None

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_schema

revision = "0002_ledger"
down_revision = "0001_base"
branch_labels = None
depends_on = None


def upgrade() -> None:
    ledger_schema.define(sa.MetaData()).create_all(op.get_bind())


def downgrade() -> None:
    meta = ledger_schema.define(sa.MetaData())
    for name in reversed(ledger_schema.LEDGER_TABLES):
        op.drop_table(meta.tables[name].name)
