# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm MAINT reservations -> the ledger's maintenance windows (issue 39): the parser on scontrol's own text, the
window's life in the store (SQLite and PostgreSQL), the change guard's action, and the service report counting the
reserved nodes' downtime as planned.

The texts follow ``scontrol show reservation`` as Slurm prints it: the layout of Slurm's "Advanced Resource
Reservation Guide" (doc/html/reservations.shtml, SchedMD/slurm: ``ReservationName= StartTime=`` then indented lines,
records separated by a blank line) with the fields of 20.11+ (``TRES=``, ``State=``, ``MaxStartDelay=``) as sites
publish it (e.g. a site guide's ``ReservationName=maintenance weekend 2023-10-14 ... Flags=MAINT,IGNORE_JOBS,
SPEC_NODES,ALL_NODES``). Expected values are read off the text by hand: the times are UTC unless a zone is named.
"""

from __future__ import annotations

import datetime

import pytest
import sqlalchemy as sa

from ansible_collections.gpuops.cluster.plugins.action import reservation_window as _action
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import reservations as R
from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import report as _report
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger as _ledger
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_windows as LW
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store
from ledger_reports import report

UTC = datetime.timezone.utc
H = 3600.0


def _ts(*args):
    return datetime.datetime(*args, tzinfo=UTC).timestamp()


# the change guard's reservation as 23.11 prints it (TZ=UTC): four nodes, two of them in one bracket
GUARD = """ReservationName=gpuops-maint StartTime=2026-10-05T08:00:00 EndTime=2026-10-05T10:00:00 Duration=02:00:00
   Nodes=gpu-node-[01-02],gpu-node-07 NodeCnt=3 CoreCnt=672 Features=(null) PartitionName=(null) Flags=MAINT,IGNORE_JOBS,SPEC_NODES
   TRES=cpu=672
   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a
   MaxStartDelay=(null)
"""
# Slurm's guide, verbatim (2.x: Nodes=ALL, no State)
GUIDE_ALL = """ReservationName=root_3 StartTime=2009-02-06T16:00:00
   EndTime=2009-02-06T18:00:00 Duration=120
   Nodes=ALL NodeCnt=20
   Features=(null) PartitionName=(null)
   Flags=MAINT,SPEC_NODES,IGNORE_JOBS Licenses=(null)
   Users=root Accounts=(null)
"""
# Slurm's guide, verbatim: duration=infinite prints an EndTime before the StartTime
GUIDE_INFINITE = """ReservationName=root_5 StartTime=2009-02-04T16:22:57
   EndTime=2009-02-04T16:21:57 Duration=4294967295
   Nodes=sun000 NodeCnt=1
   Features=(null) PartitionName=(null)
   Flags=MAINT,SPEC_NODES Licenses=(null)
   Users=root Accounts=(null)
"""
# Slurm's guide, verbatim: a users' daily reservation (no MAINT)
GUIDE_DAILY = """ReservationName=alan_6 StartTime=2009-02-05T12:00:00
   EndTime=2009-02-05T13:00:00 Duration=60
   Nodes=sun[000-003,007,010-013,017] NodeCnt=10
   Features=(null) PartitionName=pdebug
   Flags=DAILY Licenses=(null)
   Users=alan,brenda Accounts=(null)
"""
# a name with spaces and the whole cluster as 23.x prints it (ALL_NODES, the nodes listed), then a second record
SPACES = """ReservationName=maintenance weekend 2023-10-14 StartTime=2023-10-13T20:00:00 EndTime=2023-10-16T09:00:00 Duration=2-13:00:00
   Nodes=gpu[01-11],cor1 NodeCnt=12 CoreCnt=2000 Features=(null) PartitionName=(null) Flags=MAINT,IGNORE_JOBS,SPEC_NODES,ALL_NODES
   TRES=cpu=4000
   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a
   MaxStartDelay=(null)

ReservationName=icra_iv StartTime=2023-09-09T00:00:00 EndTime=2023-09-16T00:00:00 Duration=7-00:00:00
   Nodes=cor1 NodeCnt=1 CoreCnt=32 Features=(null) PartitionName=cor Flags=
   TRES=cpu=64
   Users=(null) Groups=(null) Accounts=3me-cor Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a
   MaxStartDelay=(null)
"""  # noqa: E501  (scontrol's own line lengths)


# ---------------------------------------------------------------------------------------------- the parser
def test_the_guards_reservation_as_scontrol_prints_it():
    (rec,) = R.parse(GUARD)
    assert rec["ReservationName"] == "gpuops-maint" and rec["TRES"] == "cpu=672" and rec["State"] == "ACTIVE"
    win = R.window(rec)
    assert win["name"] == "gpuops-maint"
    assert (win["start"], win["end"]) == (_ts(2026, 10, 5, 8, 0), _ts(2026, 10, 5, 10, 0))
    assert win["hosts"] == ["gpu-node-01", "gpu-node-02", "gpu-node-07"] and win["all"] is False
    assert R.is_maintenance(rec) and win["flags"] == ["MAINT", "IGNORE_JOBS", "SPEC_NODES"]


def test_the_guides_records_all_nodes_infinite_and_not_maintenance():
    win = R.window(R.parse(GUIDE_ALL)[0])
    assert win["all"] is True and win["hosts"] == [] and win["end"] - win["start"] == 2 * H
    with pytest.raises(R.ReservationError, match="root_5 has no end after its start .Duration=4294967295"):
        R.window(R.parse(GUIDE_INFINITE)[0])
    daily = R.parse(GUIDE_DAILY)[0]
    assert not R.is_maintenance(daily) and len(R.window(daily)["hosts"]) == 10


def test_a_name_with_spaces_two_records_and_an_empty_flags_value():
    first, second = R.parse(SPACES)
    assert first["ReservationName"] == "maintenance weekend 2023-10-14" and second["Flags"] == ""
    win = R.window(first)
    assert win["all"] is True and len(win["hosts"]) == 12 and win["state"] == "INACTIVE"
    assert win["end"] - win["start"] == 2 * 86400 + 13 * H  # Duration=2-13:00:00
    assert R.find([first, second], "icra_iv") is second and R.find([first, second], "nope") is None
    assert not R.is_maintenance(second)


def test_times_in_the_controllers_zone():
    # 2026-10-05 08:00 in Berlin is CEST (UTC+2): 06:00 UTC
    assert R.window(R.parse(GUARD)[0], "Europe/Berlin")["start"] == _ts(2026, 10, 5, 6, 0)
    with pytest.raises(R.ReservationError, match="unknown time zone 'Mars/Olympus'"):
        R.window(R.parse(GUARD)[0], "Mars/Olympus")


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "no scontrol output"),
        ("Reservation gpuops-maint not found\n", "not a reservation record"),
        ("slurm_load_reservations error: Unable to contact slurm controller", "not a reservation record"),
        ("ReservationName=x StartTime=2026-10-05T08:0", "StartTime=2026-10-05T08:0 is not a time"),  # cut mid-line
        ("ReservationName=x StartTime=2026-10-05T08:00:00", "x has no EndTime"),  # cut after a field
        ("ReservationName=x StartTime=Unknown EndTime=2026-10-05T10:00:00 Nodes=a Flags=MAINT", "StartTime=Unknown is"),
        ("ReservationName=x StartTime=2026-10-05T08:00:00 EndTime=2026-10-05T10:00:00 Nodes=a[1-", "Nodes=a\\[1-"),
        ("ReservationName=x StartTime=2026-10-05T08:00:00 EndTime=2026-10-05T10:00:00 Nodes= Flags=MAINT", "no nodes"),
    ],
)
def test_broken_and_unexpected_text_is_a_clear_error(text, message):
    with pytest.raises(R.ReservationError, match=message):
        for rec in R.parse(text):
            R.window(rec)


def test_no_reservations_in_the_system():
    assert R.parse("No reservations in the system\n") == []


# ---------------------------------------------------------------------------------------------- the ledger
def _windows(store):
    mw = _ledger.tables()["maintenance_windows"]
    with store.read() as conn:
        q = sa.select(mw.c.name, mw.c.starts_at, mw.c.ends_at, mw.c.scope).order_by(mw.c.starts_at)
        return [tuple(r) for r in conn.execute(q)]


def test_created_recorded_again_extended_and_deleted_early(store_kw):
    store = open_store(**store_kw)
    try:
        s, e = _ts(2026, 10, 5, 8, 0), _ts(2026, 10, 5, 10, 0)
        hosts = {"hosts": ["gpu-node-01", "gpu-node-02", "gpu-node-07"]}
        out = LW.reservation_to_ledger(store, "gpuops-maint", "present", s - H, text=GUARD)
        assert out["changed"] and out["msg"] == "window slurm:gpuops-maint written"
        assert _windows(store) == [("slurm:gpuops-maint", s, e, hosts)]
        again = LW.reservation_to_ledger(store, "gpuops-maint", "present", s, text=GUARD)
        assert again["changed"] is False and again["msg"].endswith("unchanged")
        # scontrol update ReservationName=gpuops-maint Duration=180: EndTime 11:00, the same window
        longer = GUARD.replace(
            "EndTime=2026-10-05T10:00:00 Duration=02:00:00", "EndTime=2026-10-05T11:00:00 Duration=03:00:00"
        )
        assert LW.reservation_to_ledger(store, "gpuops-maint", "present", s, text=longer)["msg"].endswith("updated")
        assert _windows(store) == [("slurm:gpuops-maint", s, s + 3 * H, hosts)]
        # the guard deletes it at 09:30: the window ends then; deleting again changes nothing
        gone = LW.reservation_to_ledger(store, "gpuops-maint", "absent", s + 1.5 * H)
        assert gone["changed"] and (gone["ended"], gone["removed"]) == (1, 0)
        assert _windows(store) == [("slurm:gpuops-maint", s, s + 1.5 * H, hosts)]
        assert LW.reservation_to_ledger(store, "gpuops-maint", "absent", s + 2 * H)["changed"] is False
    finally:
        store.close()


def test_deleted_before_it_began_leaves_no_window_and_a_user_reservation_none(store_kw):
    store = open_store(**store_kw)
    try:
        LW.reservation_to_ledger(store, "gpuops-maint", "present", 0.0, text=GUARD)
        out = LW.reservation_to_ledger(store, "gpuops-maint", "absent", _ts(2026, 10, 5, 7, 0))
        assert (out["ended"], out["removed"]) == (0, 1) and _windows(store) == []
        daily = LW.reservation_to_ledger(store, "alan_6", "present", 0.0, text=GUIDE_DAILY)
        assert daily["window"] is None and "not a maintenance reservation (Flags=DAILY)" in daily["msg"]
        with pytest.raises(R.ReservationError, match="scontrol shows no reservation named gpuops-maint"):
            LW.reservation_to_ledger(store, "gpuops-maint", "present", 0.0, text=GUIDE_DAILY)
        assert _windows(store) == []
    finally:
        store.close()


def test_the_report_counts_the_reserved_nodes_downtime_as_planned(store_kw):
    """gpu-node-01 drained 08:00-12:00 under the guard's reservation 08:00-10:00: 2 h x 8 GPUs planned, 2 h x 8
    unplanned; gpu-node-02 (in the reservation, never down) loses nothing."""
    store = open_store(**store_kw)
    try:
        t0 = _ts(2026, 10, 5, 8, 0)
        LW.reservation_to_ledger(store, "gpuops-maint", "present", t0 - H, text=GUARD)
        for i in range(6):  # hourly inspections 08:00..13:00
            state = "IDLE+DRAIN" if i < 4 else "IDLE"
            _ledger.record_run(store, report(t0 + i * H, {"gpu-node-01": {"state": state}, "gpu-node-02": {}}))
        rep = _report.compute(store, {"start": t0, "end": t0 + 6 * H, "label": "t"}, now=t0 + 6 * H)
        assert rep["availability"]["planned_gpu_hours"] == 16.0
        assert rep["availability"]["unplanned_gpu_hours"] == 16.0
    finally:
        store.close()


# ---------------------------------------------------------------------------------------------- the action
def test_the_guards_action_maps_slurm_names_and_needs_a_store(run_action, tmp_path):
    hostvars = {"n1": {"gpuops_slurm_node_name": "gpu-node-01"}, "n2": {}}
    args = {"name": "gpuops-maint", "text": GUARD, "now": 0.0}
    none = run_action(_action, args, task_vars={"hostvars": hostvars})
    assert none["recorded"] is False and "no gpuops_state_dir or gpuops_db_url" in none["msg"]
    state = str(tmp_path / "state")
    task_vars = {"hostvars": hostvars}
    args["state_dir"] = state
    dry = run_action(_action, args, check_mode=True, task_vars=task_vars)
    assert dry["changed"] is False and dry["msg"].startswith("check mode: would record")
    res = run_action(_action, args, task_vars=task_vars)
    assert res["changed"] and res["recorded"]
    assert res["window"]["scope"] == {"hosts": ["gpu-node-02", "gpu-node-07", "n1"]}
    bad = run_action(_action, dict(args, text="Reservation gpuops-maint not found"), task_vars=task_vars)
    assert bad["failed"] and bad["msg"].startswith("gpuops.cluster.reservation_window: reservation gpuops-maint: not a")
    gone = run_action(
        _action,
        {"name": "gpuops-maint", "state": "absent", "now": _ts(2026, 10, 5, 9, 0), "state_dir": state},
        task_vars=task_vars,
    )
    assert gone["changed"] and gone["ended"] == 1
    store = open_store(state_dir=state)
    try:
        assert _windows(store)[0][1:3] == (_ts(2026, 10, 5, 8, 0), _ts(2026, 10, 5, 9, 0))
    finally:
        store.close()
