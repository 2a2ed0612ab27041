# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``slice_runs.policy_hash`` 128 characters wide: a policy hash is ``sha256:`` and 64 hex digits (71), and the
64-character column refused every slice on PostgreSQL ("value too long for type character varying(64)").

SQLite does not enforce a VARCHAR's length, so nothing is changed there (no table copy).

Revision ID: 0005_slices_hash
Revises: 0004_slices
"""

from __future__ import annotations

try:
    import sqlalchemy as sa
    from alembic import op
except ImportError:  # sanity import test
    sa = op = None

revision = "0005_slices_hash"
down_revision = "0004_slices"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column("slice_runs", "policy_hash", type_=sa.String(128), existing_type=sa.String(64))


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column("slice_runs", "policy_hash", type_=sa.String(64), existing_type=sa.String(128))
