# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service terms' other two clocks (issue 39): ``incidents.onsite_at`` (on site) and ``incidents.planned_at``
(the P2 tuning plan).

A ledger created by 0002 from this collection's schema already has them (0002 creates the tables as
``ledger_schema`` defines them); one created by an older collection gets them here.

Revision ID: 0007_sla_clocks
Revises: 0006_ledger_hash
"""

from __future__ import annotations

try:
    import sqlalchemy as sa
    from alembic import op
except ImportError:  # sanity import test
    sa = op = None

revision = "0007_sla_clocks"
down_revision = "0006_ledger_hash"
branch_labels = None
depends_on = None

COLUMNS = ("onsite_at", "planned_at")


def _existing() -> set:
    return {c["name"] for c in sa.inspect(op.get_bind()).get_columns("incidents")}


def upgrade() -> None:
    have = _existing()
    for name in COLUMNS:
        if name not in have:
            op.add_column("incidents", sa.Column(name, sa.Float))


def downgrade() -> None:
    have = _existing()
    with op.batch_alter_table("incidents") as batch:
        for name in COLUMNS:
            if name in have:
                batch.drop_column(name)
