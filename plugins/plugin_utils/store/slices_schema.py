# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tables of sliced inspections (docs/scale-out.md): what each slice of a run group evaluated.

Created by the migration ``0004_slices``. A slice writes its ``slice_runs`` row and all its ``slice_nodes`` rows in
one transaction: a slice killed before it commits leaves nothing, and its rerun replaces its own rows. The merge
step reads every node of the group (``_slices.load_group``). Times are UTC epoch seconds (float).

- ``slice_runs``: one row per (group, slice): when it ran, how many hosts, where (controller), the slice count it
  was told (AWX ``job_slice_count``) and the policy hash it evaluated with.
- ``slice_nodes``: one row per (group, slice, host): the node's evaluated entry (status, findings, domains,
  rack/leaf/power, facts ...) as zlib-compressed JSON (``doc``). A host written by two slices is kept twice so
  that the merge can refuse the group by name instead of silently keeping one of them.
"""

from __future__ import annotations

from typing import Any

try:
    import sqlalchemy as sa
except ImportError:  # sanity import test
    sa = None

SLICE_TABLES = ("slice_runs", "slice_nodes")


def define(meta: Any) -> Any:
    """Define the slice tables (revision 0004_slices) on ``meta``; returns ``meta``."""
    s = sa.String
    sa.Table(
        "slice_runs",
        meta,
        sa.Column("group_id", s(128), primary_key=True),
        sa.Column("slice", s(64), primary_key=True),
        sa.Column("slice_count", sa.Integer),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float, nullable=False),
        sa.Column("host_count", sa.Integer, nullable=False),
        sa.Column("controller", s(255)),
        sa.Column("policy_hash", s(128)),  # "sha256:" + 64 hex digits (was 64 wide: 0005_slices_hash)
    )
    sa.Table(
        "slice_nodes",
        meta,
        sa.Column("group_id", s(128), primary_key=True),
        sa.Column("slice", s(64), primary_key=True),
        sa.Column("host", s(255), primary_key=True),
        sa.Column("doc", sa.LargeBinary, nullable=False),
        sa.Index("ix_slice_nodes_group_host", "group_id", "host"),
    )
    return meta
