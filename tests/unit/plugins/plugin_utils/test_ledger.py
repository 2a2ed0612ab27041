# -*- coding: utf-8 -*-
"""The write side of the service ledger (plugin_utils/store/ledger, docs/service.md) on SQLite and PostgreSQL."""

from __future__ import annotations

import multiprocessing
import time

import pytest
import sqlalchemy as sa

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger as _ledger
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store
from ledger_reports import T0, finding, report

HOUR = 3600.0


def rows(store, table, order="id"):
    t = _ledger.tables()[table]
    with store.read() as conn:
        return [dict(r) for r in conn.execute(sa.select(t).order_by(t.c[order])).mappings()]


def test_node_state_follows_the_contract():
    assert _ledger.node_state("a", {"status": "healthy"})["state"] == "up"
    assert _ledger.node_state("a", {"status": "degraded"})["state"] == "up"
    assert _ledger.node_state("a", {"status": "faulty"})["state"] == "down"
    assert _ledger.node_state("a", {"status": "error"})["state"] == "unknown"
    assert _ledger.node_state("a", {"status": "unreachable"})["state"] == "unknown"
    rep = report(T0, {"a": {"state": "IDLE+DRAIN"}, "b": {"state": "MAINT"}, "c": {"state": "MIXED"}})
    states = {h: _ledger.node_state(h, n) for h, n in rep["nodes"].items()}
    assert [states[h]["state"] for h in "abc"] == ["down", "down", "up"]
    assert states["c"]["gpus"] == 8 and states["c"]["partition"] == "batch"
    # no facts (include_facts false): the scheduler's finding still says drained
    drained = {"status": "healthy", "findings": [finding("d", "scheduler.node_state", "P3", "DRAIN")]}
    assert _ledger.node_state("d", drained) == dict(state="down", status="healthy", reason=None, partition=None, gpus=0)


@pytest.mark.parametrize(
    "check,component,cls",
    [
        ("gpu.xid", "gpu:0", "gpu"),
        ("gpu.row_remap", "gpu:0", "hbm"),
        ("gpu.ecc", None, "hbm"),
        ("gpu.nvlink", None, "nvlink"),
        ("nvswitch.sxid", None, "nvlink"),
        ("ib.link_flap", "ib:mlx5_0", "ib_link"),
        ("bmc.sensor", "psu:PSU1", "psu"),
        ("bmc.sensor", "fan:FAN3", "fan"),
        ("bmc.health", "bmc", "node"),
        ("node.unreachable", None, "node"),
        ("storage.health", None, "storage"),
        ("scheduler.node_state", None, "scheduler"),
        ("backup.stale", None, "other"),
    ],
)
def test_component_classes(check, component, cls):
    assert _ledger.component_class(check, component) == cls


def test_periods_extend_while_unchanged_and_split_on_a_change(store_kw):
    store = open_store(**store_kw)
    _ledger.record_run(store, report(T0, {"a": {}, "b": {}}))
    _ledger.record_run(store, report(T0 + HOUR, {"a": {}, "b": {}}))
    bad = {"status": "faulty", "findings": [finding("b")]}
    _ledger.record_run(store, report(T0 + 2 * HOUR, {"a": {}, "b": bad}))
    _ledger.record_run(store, report(T0 + 3 * HOUR, {"a": {}, "b": {"status": "error"}}))
    got = [
        (p["host"], p["state"], p["started_at"] - T0, p["ended_at"] and p["ended_at"] - T0, p["last_seen"] - T0)
        for p in rows(store, "node_periods")
    ]
    assert got == [
        ("a", "up", 0, None, 3 * HOUR),
        ("b", "up", 0, 2 * HOUR, 2 * HOUR),
        ("b", "down", 2 * HOUR, 3 * HOUR, 3 * HOUR),
        ("b", "unknown", 3 * HOUR, None, 3 * HOUR),
    ]
    assert {p["gpus"] for p in rows(store, "node_periods")} == {8}
    assert len(rows(store, "runs", "run_id")) == 4


def test_a_finding_opens_one_incident_and_a_healthy_node_restores_it(store_kw):
    store = open_store(**store_kw)
    bad = {"status": "faulty", "findings": [finding("b")]}
    first = _ledger.record_run(store, report(T0, {"a": {}, "b": bad}))
    assert first["incidents_opened"] == ["INC-20261005-0001"]
    again = _ledger.record_run(store, report(T0 + HOUR, {"a": {}, "b": bad}))
    assert again["incidents_opened"] == [] and again["incidents_restored"] == []
    # finding gone but the node still drained: not restored yet
    drained = _ledger.record_run(store, report(T0 + 2 * HOUR, {"a": {}, "b": {"state": "IDLE+DRAIN"}}))
    assert drained["incidents_restored"] == []
    back = _ledger.record_run(store, report(T0 + 3 * HOUR, {"a": {}, "b": {}}))
    assert back["incidents_restored"] == ["INC-20261005-0001"]
    inc = rows(store, "incidents", "incident_id")
    assert len(inc) == 1
    assert inc[0]["severity"] == "P1" and inc[0]["component"] == "gpu" and inc[0]["host"] == "b"
    assert inc[0]["detected_at"] == T0 and inc[0]["restored_at"] == T0 + 3 * HOUR
    events = [(e["step"], e["source"]) for e in rows(store, "incident_events")]
    assert events == [("detected", "inspection"), ("restored", "inspection")]
    hist = rows(store, "finding_history")
    assert len(hist) == 1
    assert (hist[0]["first_seen"], hist[0]["last_seen"], hist[0]["cleared_at"]) == (T0, T0 + HOUR, T0 + 2 * HOUR)
    assert hist[0]["part_serial"] == "SN-b"


def test_p3_findings_and_service_findings_open_no_incident(store_kw):
    store = open_store(**store_kw)
    sla_finding = dict(finding("", "service.sla", "P1"), host=None, id="cluster:service.sla:incident:x:respond")
    out = _ledger.record_run(store, report(T0, {"a": {"findings": [finding("a", severity="P3")]}}, [sla_finding]))
    assert out["incidents_opened"] == [] and out["findings_new"] == 2


def test_recording_the_same_report_twice_writes_nothing_new(store_kw):
    store = open_store(**store_kw)
    rep = report(T0, {"a": {"status": "faulty", "findings": [finding("a")]}})
    assert _ledger.record_run(store, rep)["recorded"] is True
    assert _ledger.record_run(store, rep)["recorded"] is False
    assert len(rows(store, "incidents", "incident_id")) == 1 and len(rows(store, "node_periods")) == 1


def test_allocation_samples_come_from_the_scheduler_only(store_kw):
    store = open_store(**store_kw)
    platform = {"capacity": {"batch": {"gpus": 16, "gpus_in_service": 16, "gpus_allocated": 12}}}
    _ledger.record_run(store, report(T0, {"a": {}, "b": {}}, platform=platform))
    _ledger.record_run(store, report(T0 + HOUR, {"a": {"alloc": 8}, "b": {"alloc": 2}}))
    _ledger.record_run(store, report(T0 + 2 * HOUR, {"a": {}, "b": {}}))  # no allocation figures: none invented
    got = [
        (s["at"] - T0, s["partition"], s["gpus_total"], s["gpus_alloc"])
        for s in rows(store, "allocation_samples", "at")
    ]
    assert got == [(0, "batch", 16, 12), (HOUR, "batch", 16, 10)]


def _record_many(store_kw, worker):
    store = open_store(**store_kw)
    for i in range(3):
        hosts = {
            "n%02d" % h: {"status": "faulty", "findings": [finding("n%02d" % h, code=str(worker))]} for h in range(3)
        }
        _ledger.record_run(store, report(T0 + worker * 10 + i, hosts), run_id="w%d-%d" % (worker, i))


def test_concurrent_runs_never_duplicate_or_corrupt(store_kw):
    open_store(**store_kw).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_record_many, args=(store_kw, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 4
    store = open_store(**store_kw)
    ids = [i["incident_id"] for i in rows(store, "incidents", "incident_id")]
    assert len(ids) == len(set(ids))
    assert len(rows(store, "runs", "run_id")) == 12
    open_periods = [p["host"] for p in rows(store, "node_periods") if p["ended_at"] is None]
    assert sorted(open_periods) == ["n00", "n01", "n02"]
    fps = [(h["fingerprint"], h["first_seen"]) for h in rows(store, "finding_history")]
    assert len(fps) == len(set(fps))
    per_fp = {}
    for i in rows(store, "incidents", "incident_id"):
        if i["state"] == "open" and i["restored_at"] is None:
            per_fp[i["fingerprint"]] = per_fp.get(i["fingerprint"], 0) + 1
    assert set(per_fp.values()) <= {1}


def test_ten_thousand_nodes_record_quickly(tmp_path):
    store = open_store(state_dir=str(tmp_path))
    hosts = {"n%05d" % i: {} for i in range(10000)}
    _ledger.record_run(store, report(T0, hosts))
    hosts["n00042"] = {"status": "faulty", "findings": [finding("n00042")]}
    t0 = time.process_time()  # CPU time: SQLite works in this process; a loaded CI machine does not skew it
    out = _ledger.record_run(store, report(T0 + HOUR, hosts))
    took = time.process_time() - t0
    assert out["periods"] == {"extended": 9999, "closed": 1, "opened": 1}
    assert took < 2.0, took


def test_retention_prunes_old_rows_but_keeps_half_a_year_of_audit_changes(store_kw):
    store = open_store(**store_kw)
    _ledger.record_run(store, report(T0, {"a": {}}))
    _ledger.record_run(store, report(T0 + HOUR, {"a": {"status": "faulty"}}))
    ch = _ledger.tables()["changes"]
    day = 86400.0
    with store.begin() as conn:
        conn.execute(
            ch.insert(),
            [
                {"digest": "old", "at": T0 - 10, "action": "isolate"},
                {"digest": "young", "at": T0 + 100 * day, "action": "isolate"},
            ],
        )
    with pytest.raises(_ledger.LedgerError, match="at least 183"):
        _ledger.prune(store, {"sla": {"retention_days": 90}}, now=T0 + 400 * day)
    done = _ledger.prune(store, {"sla": {"retention_days": 200}}, now=T0 + 250 * day)
    assert done["node_periods"] == 1 and done["runs"] == 2 and done["changes"] == 1
    assert [c["digest"] for c in rows(store, "changes")] == ["young"]
    assert [p["state"] for p in rows(store, "node_periods")] == ["down"]  # the open period stays


# ---------------------------------------------------------------------------------------------- clocks start at the fault
def _at(finding_, **evidence):
    out = dict(finding_)
    out["evidence"] = dict(out["evidence"], **evidence)
    return out


def test_an_incident_is_detected_at_its_first_evidence_not_at_the_run(store_kw):
    """Issue 39: the Xid line of 07:52 seen by the 08:00 run opens an incident detected at 07:52; the P0 respond
    clock (15 min) is due at 08:07, not 08:15."""
    store = open_store(**store_kw)
    xid = _at(finding("b"), first="2026-10-05T07:52:00Z")
    out = _ledger.record_run(store, report(T0, {"a": {}, "b": {"status": "faulty", "findings": [xid]}}))
    inc = rows(store, "incidents", "incident_id")
    assert out["incidents_opened"] == [inc[0]["incident_id"]]
    assert inc[0]["detected_at"] == T0 - 8 * 60
    assert [(e["step"], e["at"]) for e in rows(store, "incident_events")] == [("detected", T0 - 8 * 60)]


def test_detection_never_goes_back_past_the_previous_clean_run(store_kw):
    """A node seen clean at 08:00 whose 09:00 run finds an old line of 07:30 (e.g. a newly enabled check): the
    fault is not older than the clean 08:00 observation for the clocks."""
    store = open_store(**store_kw)
    _ledger.record_run(store, report(T0, {"a": {}, "b": {}}))
    old = _at(finding("b"), first="2026-10-05T07:30:00Z")
    _ledger.record_run(store, report(T0 + HOUR, {"a": {}, "b": {"status": "faulty", "findings": [old]}}))
    assert rows(store, "incidents", "incident_id")[0]["detected_at"] == T0


@pytest.mark.parametrize(
    "evidence,expected_offset",
    [
        ({}, 0.0),  # no time in the evidence: the run's time
        ({"first": "not a time"}, 0.0),
        ({"first": "2026-10-05T09:00:00Z"}, 0.0),  # later than the run (a clock ahead): the run's time
        ({"time": "2026-10-05T07:45:00+00:00", "reason_time": "2026-10-05T07:50:00"}, -15 * 60.0),  # the earliest
        ({"times": ["2026-10-05T07:58:00Z", "2026-10-05T07:55:00Z"]}, -5 * 60.0),
        ({"startsAt": "2026-10-05T07:59:30Z"}, -30.0),  # an alert's startsAt
    ],
)
def test_evidence_times_are_read_from_the_findings_own_words(store_kw, evidence, expected_offset):
    store = open_store(**store_kw)
    f = _at(finding("b"), **evidence)
    _ledger.record_run(store, report(T0, {"b": {"status": "faulty", "findings": [f]}}))
    assert rows(store, "incidents", "incident_id")[0]["detected_at"] == T0 + expected_offset


# ---------------------------------------------------------------------------------------------- one fault, one incident
def test_the_findings_of_one_fault_open_one_incident(store_kw):
    """A GPU that fell off the bus shows as gpu.xid, gpu.missing (P1) and a dcgm collector.error (P2) in the same run:
    one incident, P1, restored only when all three are gone."""
    store = open_store(**store_kw)
    xid = finding("b", "gpu.xid", "P1", "79")
    missing = finding("b", "gpu.missing", "P1", "unreadable")
    dcgm = finding("b", "collector.error", "P2", "tool_error", component="collector:dcgm")
    out = _ledger.record_run(store, report(T0, {"a": {}, "b": {"status": "faulty", "findings": [dcgm, xid, missing]}}))
    assert len(out["incidents_opened"]) == 1
    (inc,) = rows(store, "incidents", "incident_id")
    assert inc["severity"] == "P1" and inc["component"] == "gpu"
    assert sorted(e["step"] for e in rows(store, "incident_events")) == ["detected", "joined", "joined"]
    # two of the three gone, the node still reads faulty from the third: not restored
    half = _ledger.record_run(store, report(T0 + HOUR, {"a": {}, "b": {"status": "degraded", "findings": [dcgm]}}))
    assert half["incidents_restored"] == []
    back = _ledger.record_run(store, report(T0 + 2 * HOUR, {"a": {}, "b": {}}))
    assert back["incidents_restored"] == [inc["incident_id"]]


def test_a_later_finding_joins_the_running_incident_unless_it_is_more_severe(store_kw):
    store = open_store(**store_kw)
    p2 = finding("b", "gpu.throttle", "P2", "hw_slowdown")
    _ledger.record_run(store, report(T0, {"b": {"status": "degraded", "findings": [p2]}}))
    also_p2 = finding("b", "gpu.temperature", "P2", "hot")
    joined = _ledger.record_run(store, report(T0 + HOUR, {"b": {"status": "degraded", "findings": [p2, also_p2]}}))
    assert joined["incidents_opened"] == []
    worse = finding("b", "gpu.xid", "P1", "79")
    own = _ledger.record_run(
        store, report(T0 + 2 * HOUR, {"b": {"status": "faulty", "findings": [p2, also_p2, worse]}})
    )
    assert len(own["incidents_opened"]) == 1  # a P1 keeps its own, stricter clocks
    assert sorted(i["severity"] for i in rows(store, "incidents", "incident_id")) == ["P1", "P2"]


def test_findings_a_cluster_finding_explains_open_no_incident_of_their_own(store_kw):
    """A rack down: the members' node.unreachable findings carry the cluster finding as their cause; the rack's P0
    is the one incident."""
    store = open_store(**store_kw)
    p0 = dict(
        finding("", "cluster.rack", "P0", "node.unreachable", component="rack:r7"),
        host=None,
        id="cluster:cluster.rack:rack:r7",
    )
    members = {
        h: {
            "status": "unreachable",
            "findings": [dict(finding(h, "node.unreachable", "P1", "unreachable"), cause=p0["id"])],
        }
        for h in ("a", "b")
    }
    out = _ledger.record_run(store, report(T0, members, [p0]))
    incidents = rows(store, "incidents", "incident_id")
    assert len(out["incidents_opened"]) == 1 and [(i["severity"], i["host"]) for i in incidents] == [("P0", None)]


# ---------------------------------------------------------------------------------------------- when the state changed
def test_a_node_is_down_from_its_fault_and_up_from_its_reboot(store_kw):
    """Hourly runs: the Xid line of 08:20 makes b down from 08:20 (not from the 09:00 run); the repaired node booted
    at 10:35 is up from 10:35 (not from the 11:00 run). 2h15m of downtime, as it happened."""
    store = open_store(**store_kw)
    _ledger.record_run(store, report(T0, {"b": {}}))  # 08:00 clean
    xid = _at(finding("b"), first="2026-10-05T08:20:00Z")
    _ledger.record_run(store, report(T0 + HOUR, {"b": {"status": "faulty", "findings": [xid]}}))
    _ledger.record_run(store, report(T0 + 2 * HOUR, {"b": {"status": "faulty", "findings": [xid]}}))
    back = report(T0 + 3 * HOUR, {"b": {}})
    back["nodes"]["b"]["facts"]["slurm"]["nodes"][0]["boot_time"] = "2026-10-05T10:35:00"
    _ledger.record_run(store, back)
    periods = [(p["state"], p["started_at"], p["ended_at"]) for p in rows(store, "node_periods")]
    assert periods == [
        ("up", T0, T0 + 20 * 60),
        ("down", T0 + 20 * 60, T0 + 2 * HOUR + 35 * 60),
        ("up", T0 + 2 * HOUR + 35 * 60, None),
    ]


def test_evidence_outside_the_gap_between_sightings_is_not_the_change(store_kw):
    """A BootTime from before the node was last seen down (an old boot) or an Xid line older than the clean run
    does not move the change: the run's time it is."""
    store = open_store(**store_kw)
    _ledger.record_run(store, report(T0, {"b": {}}))
    old = _at(finding("b"), first="2026-10-05T07:00:00Z")
    _ledger.record_run(store, report(T0 + HOUR, {"b": {"status": "faulty", "findings": [old]}}))
    back = report(T0 + 2 * HOUR, {"b": {}})
    back["nodes"]["b"]["facts"]["slurm"]["nodes"][0]["boot_time"] = "2026-10-01T00:00:00"
    _ledger.record_run(store, back)
    periods = [(p["state"], p["started_at"]) for p in rows(store, "node_periods")]
    assert periods == [("up", T0), ("down", T0 + HOUR), ("up", T0 + 2 * HOUR)]
