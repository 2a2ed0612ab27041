# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service ledger's tables (docs/store.md, docs/service.md): what happened, when, and who acted.

Every time is UTC epoch seconds (a float): durations are plain subtraction on SQLite and PostgreSQL alike, and
no time zone is ever guessed. Free text from outside (ticket summaries, reasons, causes) is stored as data and
never templated. Created by the migration ``0002_ledger``; later changes come as new revisions.

- ``runs``: one row per inspection run (or slice, merge, loaded history day).
- ``node_periods``: each node's service state as run-length intervals: ``state`` is ``up`` (in service),
  ``down`` (out of service: drained, down, or a P0/P1 finding) or ``unknown`` (not seen: unreachable or no
  evidence); ``ended_at`` NULL = still open. A run extends the open period of an unchanged node, or closes it
  and opens a new one. Planned vs unplanned downtime is decided at report time from ``maintenance_windows``.
- ``finding_history``: each finding's life per node (fingerprint = host + finding id), first/last seen, cleared.
- ``incidents`` and ``incident_events``: the incident ledger and every clock step with who/what set it.
- ``reviews``: the post-incident review that closes a P0/P1 incident (cause, fix, the check/policy change).
- ``changes``: the audit trail's changes (isolate, resume, gpu_reset, upgrade, replace, leak_response ...).
- ``tickets``: tickets received by the hook.
- ``allocation_samples``: the scheduler's GPU allocation per partition at each run (capacity trend).
- ``maintenance_windows``: the windows in force (planned downtime).
"""

from __future__ import annotations

from typing import Any

try:
    import sqlalchemy as sa
except ImportError:  # sanity import test
    sa = None

LEDGER_TABLES = (
    "runs",
    "node_periods",
    "finding_history",
    "incidents",
    "incident_events",
    "reviews",
    "changes",
    "tickets",
    "allocation_samples",
    "maintenance_windows",
)


def define(meta: Any) -> Any:
    """Define the ledger tables (revision 0002_ledger) on ``meta``; returns ``meta``."""
    s = sa.String
    ts = sa.Float  # UTC epoch seconds
    sa.Table(
        "runs",
        meta,
        sa.Column("run_id", s(64), primary_key=True),
        sa.Column("kind", s(16), nullable=False),  # inspect | slice | merge | history
        sa.Column("started_at", ts, nullable=False),
        sa.Column("finished_at", ts),
        sa.Column("controller", s(255)),
        sa.Column("policy_version", s(64)),
        sa.Column("policy_hash", s(128)),  # "sha256:" + 64 hex digits (was 64 wide: 0006_ledger_hash)
        sa.Column("nodes_total", sa.Integer, nullable=False, server_default="0"),
        sa.Column("summary", sa.JSON),
        sa.Index("ix_runs_started", "started_at"),
    )
    sa.Table(
        "node_periods",
        meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("host", s(255), nullable=False),
        sa.Column("state", s(16), nullable=False),  # up | down | unknown
        sa.Column("status", s(32)),  # the inspection's node status (ok, degraded, critical, error ...)
        sa.Column("reason", sa.Text),
        sa.Column("partition", s(128)),
        sa.Column("gpus", sa.Integer, nullable=False, server_default="0"),
        sa.Column("started_at", ts, nullable=False),
        sa.Column("ended_at", ts),  # NULL: the current period
        sa.Column("last_seen", ts, nullable=False),
        sa.Column("last_run_id", s(64)),
        sa.Index("ix_node_periods_host", "host", "started_at"),
        sa.Index("ix_node_periods_time", "started_at", "ended_at"),
    )
    sa.Table(
        "finding_history",
        meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("fingerprint", s(512), nullable=False),  # host + "|" + finding id ("" host: cluster finding)
        sa.Column("host", s(255)),
        sa.Column("check_id", s(128), nullable=False),
        sa.Column("code", s(128)),
        sa.Column("severity", s(4), nullable=False),  # P0..P3
        sa.Column("domain", s(32)),
        sa.Column("component", s(32)),  # gpu | hbm | nvlink | ib_link | psu | fan | node | storage | scheduler | other
        sa.Column("part_serial", s(128)),
        sa.Column("action", s(32)),
        sa.Column("summary", sa.Text),
        sa.Column("first_seen", ts, nullable=False),
        sa.Column("last_seen", ts, nullable=False),
        sa.Column("cleared_at", ts),  # NULL: still present
        sa.Column("last_run_id", s(64)),
        sa.UniqueConstraint("fingerprint", "first_seen", name="uq_finding_history"),
        sa.Index("ix_finding_history_open", "fingerprint", "cleared_at"),
        sa.Index("ix_finding_history_host", "host", "first_seen"),
    )
    sa.Table(
        "incidents",
        meta,
        sa.Column("incident_id", s(64), primary_key=True),  # INC-YYYYMMDD-NNNN
        sa.Column("fingerprint", s(512)),  # the finding that opened it (NULL: opened by a ticket)
        sa.Column("host", s(255)),
        sa.Column("severity", s(4), nullable=False),
        sa.Column("domain", s(32)),
        sa.Column("component", s(32)),
        sa.Column("title", sa.Text),
        sa.Column("source", s(16), nullable=False),  # finding | ticket
        sa.Column("ticket_id", s(128)),
        sa.Column("sla_profile", s(64)),  # which target set applies (site/customer override), NULL: default
        sa.Column("state", s(16), nullable=False),  # open | closed
        sa.Column("detected_at", ts, nullable=False),
        sa.Column("acknowledged_at", ts),
        sa.Column("onsite_at", ts),  # the service terms' "on site" clock (migration 0007)
        sa.Column("located_at", ts),
        sa.Column("planned_at", ts),  # the P2 "tuning plan" clock (migration 0007)
        sa.Column("cause", sa.Text),
        sa.Column("mitigated_at", ts),
        sa.Column("restored_at", ts),
        sa.Column("closed_at", ts),
        sa.Index("ix_incidents_detected", "detected_at"),
        sa.Index("ix_incidents_open", "state", "fingerprint"),
    )
    sa.Table(
        "incident_events",
        meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("incident_id", s(64), sa.ForeignKey("incidents.incident_id", ondelete="CASCADE"), nullable=False),
        sa.Column("step", s(16), nullable=False),  # detected acknowledged located mitigated restored closed note
        sa.Column("at", ts, nullable=False),
        sa.Column("actor", s(255)),  # who or what: an operator, "inspection", "ticket-hook", a role name
        sa.Column("source", s(32)),  # operator | inspection | hook | role
        sa.Column("detail", sa.Text),
        sa.Index("ix_incident_events_incident", "incident_id", "at"),
    )
    sa.Table(
        "reviews",
        meta,
        sa.Column("incident_id", s(64), sa.ForeignKey("incidents.incident_id", ondelete="CASCADE"), primary_key=True),
        sa.Column("cause", sa.Text, nullable=False),
        sa.Column("fix", sa.Text, nullable=False),
        sa.Column("change_ref", s(255), nullable=False),  # a policy version or override reference
        sa.Column("checks", sa.JSON),  # check ids changed because of the review
        sa.Column("actor", s(255)),
        sa.Column("at", ts, nullable=False),
    )
    sa.Table(
        "changes",
        meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("digest", s(64), nullable=False, unique=True),  # of the audit record: a record is loaded once
        sa.Column("at", ts, nullable=False),
        sa.Column("action", s(32), nullable=False),  # isolate resume gpu_reset upgrade replace leak_response ...
        sa.Column("host", s(255)),
        sa.Column("ticket", s(128)),
        sa.Column("actor", s(255)),
        sa.Column("outcome", s(32)),
        sa.Column("detail", sa.JSON),
        sa.Index("ix_changes_at", "at"),
        sa.Index("ix_changes_host", "host", "at"),
    )
    sa.Table(
        "tickets",
        meta,
        sa.Column("ticket_id", s(128), primary_key=True),
        sa.Column("received_at", ts, nullable=False),
        sa.Column("source", s(64)),
        sa.Column("severity", s(4)),
        sa.Column("host", s(255)),
        sa.Column("summary", sa.Text),
        sa.Column("incident_id", s(64)),
    )
    sa.Table(
        "allocation_samples",
        meta,
        sa.Column("run_id", s(64), nullable=False),
        sa.Column("at", ts, nullable=False),
        sa.Column("partition", s(128), nullable=False),
        sa.Column("gpus_total", sa.Integer, nullable=False),
        sa.Column("gpus_alloc", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("run_id", "partition", name="pk_allocation_samples"),
        sa.Index("ix_allocation_samples_at", "at"),
    )
    sa.Table(
        "maintenance_windows",
        meta,
        sa.Column("window_id", s(128), primary_key=True),
        sa.Column("name", sa.Text),
        sa.Column("starts_at", ts, nullable=False),
        sa.Column("ends_at", ts, nullable=False),
        sa.Column("scope", sa.JSON),  # {"all": true} or {"hosts": [...]} or {"partitions": [...]}
    )
    return meta


def tables() -> Any:
    """A MetaData holding the ledger tables (for queries: ``tables().tables["incidents"]``)."""
    return define(sa.MetaData())
