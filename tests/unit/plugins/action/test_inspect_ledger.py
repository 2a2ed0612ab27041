# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.inspect_cluster and the service ledger (issue 15): the run recorded, SLA clocks in the report and
in gpuops.prom, the audit trail loaded, check mode and a broken store."""

from __future__ import annotations

import json
import time

import sqlalchemy as sa

from ansible_collections.gpuops.cluster.plugins.action import inspect_cluster
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as _audit, ledger as _ledger
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store

HV = {
    "ok": {"__inspect_collect": {"facts": {"schema": "gpuops.facts/v1", "mode": "live", "errors": []}}},
    "down": {"__inspect_collect": {"unreachable": True, "msg": "ssh: no route"}},
}


def _args(tmp_path, **extra):
    args = {"targets": sorted(HV), "report_dir": str(tmp_path / "r"), "state_dir": str(tmp_path / "state")}
    args.update(extra)
    return args


def _table(store, name):
    t = _ledger.tables()[name]
    with store.read() as conn:
        return [dict(r) for r in conn.execute(sa.select(t)).mappings()]


def test_a_run_is_recorded_and_a_late_incident_is_a_finding_and_a_metric(run_action, tmp_path):
    res = run_action(inspect_cluster, _args(tmp_path), task_vars={"hostvars": HV})
    assert res["ledger"]["recorded"] is True
    store = open_store(state_dir=str(tmp_path / "state"))
    periods = {p["host"]: p["state"] for p in _table(store, "node_periods")}
    assert periods["down"] == "unknown"
    opened = res["ledger"]["incidents_opened"]
    incidents = _table(store, "incidents")
    assert sorted(i["incident_id"] for i in incidents) == sorted(opened)
    # the minimal inspection has P0-P2 findings: no incident means incidents stopped opening (a regression)
    assert incidents, "no incident opened from this inspection's P0-P2 findings"
    # make the first incident a day old: its respond clock is breached at the next run
    inc = _ledger.tables()["incidents"]
    with store.begin() as conn:
        conn.execute(inc.update().values(detected_at=inc.c.detected_at - 86400))
    res = run_action(inspect_cluster, _args(tmp_path), task_vars={"hostvars": HV})
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    sla = [f for f in report["summary"]["cluster_findings"] if f["check"] == "service.sla"]
    assert sla and {f["evidence"]["clock"] for f in sla} >= {"respond"}
    assert report["service"]["open_incidents"] == len(incidents)
    # the checkup handed to a customer reads its open incidents and recurring faults from the ledger
    assert report["fleet_summary"]["faults_source"] == "store"
    assert report["fleet_summary"]["open_incidents"]["total"] == len(incidents)
    assert "Open incidents: %d" % len(incidents) in (tmp_path / "r" / "report.md").read_text()
    prom = (tmp_path / "r" / "gpuops.prom").read_text()
    first = sorted(opened)[0]
    assert 'gpuops_incident_sla_breached{incident="%s"' % first in prom
    assert any(
        line.startswith('gpuops_incident_sla_breached{incident="%s"' % first)
        and 'clock="respond"' in line
        and line.endswith(" 1")
        for line in prom.splitlines()
    )
    assert res["ledger"]["incidents_opened"] == []  # the same findings: no second incident


def test_check_mode_records_nothing(run_action, tmp_path):
    run_action(inspect_cluster, _args(tmp_path), check_mode=True, task_vars={"hostvars": HV})
    assert not (tmp_path / "state" / "gpuops.db").exists()


def test_ledger_off_records_nothing(run_action, tmp_path):
    res = run_action(inspect_cluster, _args(tmp_path, ledger=False), task_vars={"hostvars": HV})
    # the host states live in the store of the state directory (issue 36); the ledger's tables stay empty
    store = open_store(state_dir=str(tmp_path / "state"))
    assert "ledger" not in res and not _table(store, "incidents") and not _table(store, "node_periods")


def test_a_corrupt_store_stops_the_run_before_anything_is_judged(run_action, tmp_path):
    (tmp_path / "state").mkdir(mode=0o700)
    (tmp_path / "state" / "gpuops.db").write_bytes(b"this is not a database" * 100)
    res = run_action(inspect_cluster, _args(tmp_path), task_vars={"hostvars": HV})
    msg = res["msg"]
    assert res["failed"] and msg.startswith("inspect_cluster: "), res
    # the store holds the host states too (issue 36): without them nothing is judged, never "no state"
    assert "corrupt" in msg and "gpuops.db" in msg and "Traceback" not in msg
    assert not (tmp_path / "r" / "report.json").exists()


def test_the_audit_trail_is_loaded_and_an_isolation_mitigates(run_action, tmp_path):
    run_action(inspect_cluster, _args(tmp_path), task_vars={"hostvars": HV})
    store = open_store(state_dir=str(tmp_path / "state"))
    hosts = {i["host"] for i in _table(store, "incidents")}
    assert "down" in hosts, "the unreachable node opened no incident: %s" % sorted(hosts)
    log = _audit.default_log_path(str(tmp_path / "state"))
    _audit.append(log, {"event": "outcome", "workflow": "isolate", "node": "down", "outcome": "done", "user": "bob"})
    res = run_action(inspect_cluster, _args(tmp_path), task_vars={"hostvars": HV})
    assert res["ledger"]["audit_loaded"] == 1
    assert [m["step"] for m in res["ledger"]["clocks_moved_by_audit"]] == ["mitigated"]
    res = run_action(inspect_cluster, _args(tmp_path), task_vars={"hostvars": HV})
    assert res["ledger"]["audit_loaded"] == 0  # each record loads once
    mitigated = [i for i in _table(store, "incidents") if i["host"] == "down"]
    assert mitigated[0]["mitigated_at"] is not None


def test_each_recorded_run_trims_what_fell_out_of_the_retention(run_action, tmp_path):
    run_action(inspect_cluster, _args(tmp_path), task_vars={"hostvars": HV})
    store = open_store(state_dir=str(tmp_path / "state"))
    periods = _ledger.tables()["node_periods"]
    long_ago = time.time() - 500 * 86400.0  # beyond the default 400 days
    with store.begin() as conn:
        conn.execute(
            periods.insert(),
            {"host": "gone-node", "state": "up", "gpus": 8, "started_at": long_ago - 3600, "ended_at": long_ago,
             "last_seen": long_ago},
        )  # fmt: skip
    res = run_action(inspect_cluster, _args(tmp_path), task_vars={"hostvars": HV})
    assert res["ledger"]["pruned"]["node_periods"] == 1
    assert "gone-node" not in {p["host"] for p in _table(store, "node_periods")}
    assert {p["host"] for p in _table(store, "node_periods")}  # this run's periods stay


# ---------------------------------------------------------------------------------------------- maintenance windows
def _berlin(text):
    import datetime  # pylint: disable=import-outside-toplevel
    import zoneinfo  # pylint: disable=import-outside-toplevel

    return datetime.datetime.fromisoformat(text).replace(tzinfo=zoneinfo.ZoneInfo("Europe/Berlin")).timestamp()


def test_an_inventory_window_reaches_the_ledger_and_makes_downtime_planned(run_action, tmp_path, store_kw):
    """Issue 39: the inspection writes the windows in force (gpuops_maintenance_windows) into the ledger, so the
    service report counts a drain inside one as planned downtime."""
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import report as sr  # pylint: disable=import-outside-toplevel

    now = time.time()
    day = time.strftime(
        "%Y-%m-%d", time.gmtime(now - 86400)
    )  # yesterday, 10:00-14:00 Berlin (CET in winter: 09-13 UTC)
    window = [{"name": "rack-a-rollout", "start": day + "T10:00", "end": day + "T14:00", "timezone": "Europe/Berlin"}]
    hv = {h: dict(v, gpuops_maintenance_windows=window) for h, v in HV.items()}
    hv["elsewhere"] = {"__inspect_collect": HV["ok"]["__inspect_collect"]}  # no window: not in its scope
    args = dict(_args(tmp_path), targets=sorted(hv), **store_kw)  # SQLite under the state dir, or PostgreSQL
    res = run_action(inspect_cluster, args, task_vars={"hostvars": hv})
    assert res["ledger"]["maintenance_windows"] == {"written": 1, "widened": 0, "invalid": {}}
    store = open_store(**store_kw)
    try:
        rows = _table(store, "maintenance_windows")
        assert len(rows) == 1 and rows[0]["name"] == "rack-a-rollout"
        # the interval read from the definition, with the time zone database as the oracle (not the window code)
        assert rows[0]["starts_at"] == _berlin(day + "T10:00:00") and rows[0]["ends_at"] == _berlin(day + "T14:00:00")
        assert rows[0]["scope"] == {"hosts": ["down", "ok"]}
        # the same window seen again: still one row
        res = run_action(inspect_cluster, args, task_vars={"hostvars": hv})
        assert res["ledger"]["maintenance_windows"]["written"] == 0 and len(_table(store, "maintenance_windows")) == 1
        # a node of its scope drained for 3 h inside the window and 1 h after it: 3 h planned, 1 h unplanned
        start = rows[0]["starts_at"] + 3600.0
        periods = _ledger.tables()["node_periods"]
        with store.begin() as conn:
            conn.execute(
                periods.insert(),
                [
                    {"host": "ok", "state": "down", "status": "faulty", "partition": "a", "gpus": 8, "started_at": start,
                     "ended_at": start + 4 * 3600.0, "last_seen": start + 4 * 3600.0},
                ],
            )  # fmt: skip
        lo = time.strftime("%Y-%m-%d", time.gmtime(start - 86400))
        hi = time.strftime("%Y-%m-%d", time.gmtime(start + 86400))
        rep = sr.compute(store, sr.parse_period("%s/%s" % (lo, hi), now=now), now=now)
        assert rep["availability"]["planned_gpu_hours"] == 3 * 8
        assert rep["availability"]["unplanned_gpu_hours"] == 1 * 8
    finally:
        store.close()


def test_a_window_that_does_not_validate_is_reported_not_dropped(run_action, tmp_path):
    hv = {
        h: dict(v, gpuops_maintenance_windows=[{"name": "bad", "weekly": {"days": ["someday"], "start": "02:00"}}])
        for h, v in HV.items()
    }
    res = run_action(inspect_cluster, dict(_args(tmp_path), targets=sorted(hv)), task_vars={"hostvars": hv})
    invalid = res["ledger"]["maintenance_windows"]["invalid"]
    assert sorted(invalid) == ["down", "ok"] and "someday" in invalid["ok"]


# ---------------------------------------------------------------------------------------------- down, not unknown
def test_a_rack_that_lost_power_is_downtime_not_unknown_time(run_action, tmp_path):
    """Issue 39: every node of rack r7 unreachable (a rack power loss, a P0 in the service terms) is `down` in the
    ledger, so it costs availability; a lone unreachable node nothing else speaks for stays `unknown`."""
    unreachable = {"__inspect_collect": {"unreachable": True, "msg": "ssh: no route to host"}}
    hv = {
        "r7-a": dict(unreachable, gpuops_rack="r7"),
        "r7-b": dict(unreachable, gpuops_rack="r7"),
        "r7-c": dict(unreachable, gpuops_rack="r7"),
        "lonely": dict(unreachable, gpuops_rack="r9"),
    }
    res = run_action(inspect_cluster, dict(_args(tmp_path), targets=sorted(hv)), task_vars={"hostvars": hv})
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    p0 = [f for f in report["summary"]["cluster_findings"] if f["check"] == "cluster.rack" and f["severity"] == "P0"]
    assert len(p0) == 1 and sorted(p0[0]["evidence"]["hosts"]) == ["r7-a", "r7-b", "r7-c"]
    assert res["ledger"]["recorded"] is True
    store = open_store(state_dir=str(tmp_path / "state"))
    try:
        periods = {p["host"]: p for p in _table(store, "node_periods")}
    finally:
        store.close()
    assert {h: periods[h]["state"] for h in hv} == {
        "r7-a": "down",
        "r7-b": "down",
        "r7-c": "down",
        "lonely": "unknown",
    }
    assert "domain down: cluster:cluster.rack:rack:r7" in periods["r7-a"]["reason"]


def test_the_schedulers_word_makes_an_unreadable_node_down():
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger  # pylint: disable=import-outside-toplevel

    report = {"platform": {"nodes_out": {"gpu-07": "not_responding"}}, "summary": {"cluster_findings": []}}
    view = ledger.cluster_view(report)
    got = ledger.node_state("gpu-07.example.org", {"status": "unreachable"}, view)
    assert got["state"] == "down" and "scheduler: not_responding" in got["reason"]
    assert ledger.node_state("gpu-08", {"status": "unreachable"}, view)["state"] == "unknown"
    assert ledger.node_state("gpu-08", {"status": "error"}, {})["state"] == "unknown"
