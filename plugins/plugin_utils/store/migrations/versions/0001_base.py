# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base of every branch: the store's own facts (who created it, with which collection version).

Revision ID: 0001_base
Revises: (none)
"""

from __future__ import annotations

try:
    import sqlalchemy as sa
    from alembic import op
except ImportError:  # sanity import test
    sa = op = None

revision = "0001_base"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gpuops_store_info",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.bulk_insert(
        sa.table("gpuops_store_info", sa.column("key", sa.String), sa.column("value", sa.Text)),
        [{"key": "created_by", "value": "gpuops.cluster"}, {"key": "schema", "value": "gpuops.store/v1"}],
    )


def downgrade() -> None:
    op.drop_table("gpuops_store_info")
