# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``runs.policy_hash`` 128 characters wide: a policy hash is ``sha256:`` and 64 hex digits (71); the ledger cut
it to the 64 characters the column held, so a recorded run named its policy by a truncated digest.

SQLite does not enforce a VARCHAR's length, so nothing is changed there (no table copy). Runs recorded before
this revision keep their 64-character prefix.

Revision ID: 0006_ledger_hash
Revises: 0002_ledger
"""

from __future__ import annotations

try:
    import sqlalchemy as sa
    from alembic import op
except ImportError:  # sanity import test
    sa = op = None

revision = "0006_ledger_hash"
down_revision = "0002_ledger"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column("runs", "policy_hash", type_=sa.String(128), existing_type=sa.String(64))


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column("runs", "policy_hash", type_=sa.String(64), existing_type=sa.String(128))
