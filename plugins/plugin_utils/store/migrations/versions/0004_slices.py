# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sliced inspections (issue 17): each slice's evaluated nodes for the merge step (``_db/slices_schema.py``).

Revision ID: 0004_slices
Revises: 0001_base
"""

from __future__ import annotations

try:
    import sqlalchemy as sa
    from alembic import op
except ImportError:  # sanity import test
    sa = op = None

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import slices_schema

revision = "0004_slices"
down_revision = "0001_base"
branch_labels = None
depends_on = None


def upgrade() -> None:
    slices_schema.define(sa.MetaData()).create_all(op.get_bind())


def downgrade() -> None:
    meta = slices_schema.define(sa.MetaData())
    for name in reversed(slices_schema.SLICE_TABLES):
        op.drop_table(meta.tables[name].name)
