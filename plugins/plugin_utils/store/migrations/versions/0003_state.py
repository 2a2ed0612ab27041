# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared state (issue 17): per-host state documents and the isolation guard's claims
(``_db/state_schema.py``).

Revision ID: 0003_state
Revises: 0001_base
"""

from __future__ import annotations

try:
    import sqlalchemy as sa
    from alembic import op
except ImportError:  # sanity import test
    sa = op = None

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state_schema

revision = "0003_state"
down_revision = "0001_base"
branch_labels = None
depends_on = None


def upgrade() -> None:
    state_schema.define(sa.MetaData()).create_all(op.get_bind())


def downgrade() -> None:
    meta = state_schema.define(sa.MetaData())
    for name in reversed(state_schema.STATE_TABLES):
        op.drop_table(meta.tables[name].name)
