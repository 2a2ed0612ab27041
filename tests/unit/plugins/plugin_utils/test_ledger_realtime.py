# -*- coding: utf-8 -*-
"""The real-time entry of the ledger (ledger_incidents.record_realtime, docs/service.md "Real-time events") on
SQLite and PostgreSQL: an alert and an inspection of one fault are one incident, the earlier detection wins, a
repeated alert does not act twice, a maintenance window suppresses the action, bad events are refused.

Expected values are hand-timed: the ids follow INC-YYYYMMDD-NNNN of the UTC day (docs/service.md), the finding id
``host:check:component:code`` is the checks' own (docs/findings.md), T0 is 2026-10-05 08:00 UTC."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger as _ledger
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_incidents as _inc
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store
from ledger_reports import T0, finding, report

HOUR = 3600.0
INC1 = "INC-20261005-0001"


def rows(store, table, order="id"):
    t = _ledger.tables()[table]
    with store.read() as conn:
        return [dict(r) for r in conn.execute(sa.select(t).order_by(t.c[order])).mappings()]


def alert(host="b", **kw):
    ev = {
        "host": host,
        "check_id": "gpu.xid",
        "component": "gpu:0",
        "code": "79",
        "severity": "P1",
        "detected_at": T0 - 600,
        "source": "alertmanager",
        "summary": "GpuopsXid79 on %s" % host,
    }
    ev.update(kw)
    return {k: v for k, v in ev.items() if v is not None}


def test_alert_then_inspection_is_one_incident_detected_at_the_alerts_start(store_kw):
    store = open_store(**store_kw)
    got = _inc.record_realtime(store, [alert()], now=T0 - 540)
    assert [r["incident_id"] for r in got["opened"]] == [INC1] and got["refused"] == []
    assert got["opened"][0]["detected_at"] == T0 - 600
    # the inspection an hour later finds the same fault (no evidence time: the run's time would be its detection)
    bad = {"status": "faulty", "findings": [finding("b")]}
    run = _ledger.record_run(store, report(T0 + HOUR, {"a": {}, "b": bad}))
    assert run["incidents_opened"] == []
    inc = rows(store, "incidents", "incident_id")
    assert [(i["incident_id"], i["detected_at"], i["source"]) for i in inc] == [(INC1, T0 - 600, "alertmanager")]
    assert inc[0]["fingerprint"] == "b|b:gpu.xid:gpu:0:79" and inc[0]["component"] == "gpu"
    steps = [(e["step"], e["actor"], e["at"]) for e in rows(store, "incident_events")]
    assert steps == [("detected", "alertmanager", T0 - 600)]


def test_an_inspections_older_evidence_moves_the_alerts_detection_back(store_kw):
    store = open_store(**store_kw)
    _inc.record_realtime(store, [alert()], now=T0 - 540)
    older = finding("b")
    older["evidence"] = {"first": "2026-10-05T07:45:00Z"}  # the kernel-log line, before the alert fired
    _ledger.record_run(store, report(T0, {"b": {"status": "faulty", "findings": [older]}}))
    inc = rows(store, "incidents", "incident_id")
    assert [(i["incident_id"], i["detected_at"]) for i in inc] == [(INC1, T0 - 900)]
    assert [(e["step"], e["at"]) for e in rows(store, "incident_events")] == [("detected", T0 - 900)]


def test_a_health_check_series_without_a_code_is_the_same_incident_as_the_inspections_finding(store_kw):
    store = open_store(**store_kw)
    got = _inc.record_realtime(store, [alert(code=None, source="health_check")], now=T0 - 500)
    assert got["opened"][0]["fingerprint"] == "b|b:gpu.xid:gpu:0:"
    run = _ledger.record_run(store, report(T0, {"b": {"status": "faulty", "findings": [finding("b")]}}))
    assert run["incidents_opened"] == []
    assert len(rows(store, "incidents", "incident_id")) == 1
    steps = [(e["step"], e["detail"]) for e in rows(store, "incident_events")]
    assert steps == [("detected", "b|b:gpu.xid:gpu:0:"), ("joined", "b|b:gpu.xid:gpu:0:79")]
    # and the other way round on another node: the inspection first, the code-less series joins it
    _ledger.record_run(store, report(T0 + HOUR, {"c": {"status": "faulty", "findings": [finding("c")]}}))
    again = _inc.record_realtime(store, [alert("c", code=None, source="health_check")], now=T0 + HOUR + 60)
    assert [r["incident_id"] for r in again["joined"]] == ["INC-20261005-0002"]


def test_inspection_then_alert_joins_and_an_earlier_start_wins(store_kw):
    store = open_store(**store_kw)
    _ledger.record_run(store, report(T0, {"b": {}}))  # clean sighting at T0
    bad = {"status": "faulty", "findings": [finding("b")]}
    assert _ledger.record_run(store, report(T0 + HOUR, {"b": bad}))["incidents_opened"] == [INC1]
    # the alert fired 20 minutes before that run saw it
    got = _inc.record_realtime(store, [alert(detected_at=T0 + 40 * 60)], now=T0 + HOUR + 30)
    assert [(r["incident_id"], r["outcome"]) for r in got["results"]] == [(INC1, "joined")]
    assert got["results"][0]["detected_at"] == T0 + 40 * 60
    # a startsAt before the clean sighting at T0 is bounded there, never earlier (record_run's floor)
    _inc.record_realtime(store, [alert(detected_at=T0 - HOUR)], now=T0 + HOUR + 60)
    inc = rows(store, "incidents", "incident_id")
    assert [(i["incident_id"], i["detected_at"]) for i in inc] == [(INC1, T0)]


def test_a_detection_after_now_is_now(store_kw):
    store = open_store(**store_kw)
    got = _inc.record_realtime(store, [alert(detected_at=T0 + 90)], now=T0)
    assert got["opened"][0]["detected_at"] == T0


def test_a_repeated_alert_acts_once_per_incident(store_kw):
    store = open_store(**store_kw)
    first = _inc.record_realtime(store, [alert(runbook="gpu_fell_off_bus")], now=T0)
    assert first["act"] == {"b": INC1} and first["results"][0]["outcome"] == "opened"
    # Alertmanager repeats the group every group_interval: recorded as a repeat, not acted on again
    again = _inc.record_realtime(store, [alert(runbook="gpu_fell_off_bus")], now=T0 + 300)
    assert again["act"] == {} and [r["outcome"] for r in again["repeats"]] == ["repeat"]
    assert again["repeats"][0]["acted_at"] == T0
    # another runbook of the same incident is its own action
    other = _inc.record_realtime(store, [alert(runbook="inspect")], now=T0 + 360)
    assert other["act"] == {"b": INC1}
    steps = [(e["step"], e["detail"]) for e in rows(store, "incident_events")]
    assert steps == [
        ("detected", "b|b:gpu.xid:gpu:0:79"),
        ("acted", "gpu_fell_off_bus"),
        ("repeat", "b|b:gpu.xid:gpu:0:79"),
        ("repeat", "b|b:gpu.xid:gpu:0:79"),
        ("acted", "inspect"),
    ]
    # two series of one fault in one payload: one incident, one action
    two = _inc.record_realtime(
        store,
        [alert("d", runbook="isolate"), alert("d", check_id="gpu.missing", code="gone", runbook="isolate")],
        now=T0,
    )
    assert [r["outcome"] for r in two["results"]] == ["opened", "joined"] and two["act"] == {"d": "INC-20261005-0002"}


def test_a_maintenance_window_or_a_rollout_suppresses_the_action_and_says_so(store_kw):
    store = open_store(**store_kw)
    mw = _ledger.tables()["maintenance_windows"]
    with store.begin() as conn:
        conn.execute(
            mw.insert(),
            [
                {
                    "window_id": "w1",
                    "name": "rack7-fw",
                    "starts_at": T0 - HOUR,
                    "ends_at": T0 + HOUR,
                    "scope": {"hosts": ["b"]},
                },
                {
                    "window_id": "w2",
                    "name": "later",
                    "starts_at": T0 + HOUR,
                    "ends_at": T0 + 2 * HOUR,
                    "scope": {"all": True},
                },
            ],
        )
    got = _inc.record_realtime(
        store,
        [alert(runbook="gpu_fell_off_bus"), alert("c", runbook="gpu_fell_off_bus", suppress="rolling upgrade CHG-7")],
        now=T0,
    )
    assert got["act"] == {}
    assert [(r["host"], r["suppressed"]) for r in got["suppressed"]] == [
        ("b", "maintenance window rack7-fw"),
        ("c", "rolling upgrade CHG-7"),
    ]
    assert [r["outcome"] for r in got["results"]] == ["opened", "opened"]  # the fault is still recorded
    sup = [(e["incident_id"], e["detail"]) for e in rows(store, "incident_events") if e["step"] == "suppressed"]
    assert sup == [
        (INC1, "gpu_fell_off_bus: maintenance window rack7-fw"),
        ("INC-20261005-0002", "gpu_fell_off_bus: rolling upgrade CHG-7"),
    ]
    # the window ended: the next repeat acts
    after = _inc.record_realtime(store, [alert(runbook="gpu_fell_off_bus")], now=T0 + HOUR + 1)
    assert after["act"] == {} and after["suppressed"][0]["suppressed"] == "maintenance window later"
    done = _inc.record_realtime(store, [alert(runbook="gpu_fell_off_bus")], now=T0 + 3 * HOUR)
    assert done["act"] == {"b": INC1}


def test_p3_opens_nothing(store_kw):
    store = open_store(**store_kw)
    got = _inc.record_realtime(store, [alert(severity="P3", runbook="inspect")], now=T0)
    assert [r["outcome"] for r in got["results"]] == ["below"] and got["act"] == {}
    assert rows(store, "incidents", "incident_id") == []


@pytest.mark.parametrize(
    "change,words",
    [
        ({"host": "b;reboot"}, "host 'b;reboot' is not a host name"),
        ({"host": "all"}, "host 'all' names no node"),
        ({"host": "{{ lookup('pipe','id') }}"}, "is not a host name"),
        ({"host": "b\n"}, "is not a host name"),
        ({"check_id": "GPU.XID"}, "check_id 'GPU.XID' is not a check id"),
        ({"check_id": "gpu"}, "check_id 'gpu' is not a check id"),
        ({"component": "gpu 0"}, "component 'gpu 0' is not a component"),
        ({"code": "{{ x }}"}, "code '{{ x }}' is not a finding code"),
        ({"severity": "P5"}, "severity 'P5' is not one of P0, P1, P2, P3"),
        ({"severity": None}, "missing field(s) severity"),
        ({"detected_at": True}, "detected_at True is not epoch seconds"),
        ({"detected_at": "2026-10-05T07:50:00Z"}, "is not epoch seconds"),
        ({"detected_at": float("nan")}, "detected_at nan is not epoch seconds"),
        ({"detected_at": -1}, "detected_at -1 is not epoch seconds"),
        ({"source": "Alert Manager"}, "source 'Alert Manager' is not a source name"),
        ({"summary": None}, "missing field(s) summary"),
        ({"summary": "x" * 4001}, "summary must be text of at most 4000 characters"),
        ({"runbook": "../isolate"}, "runbook '../isolate' is not a runbook catalogue id"),
        ({"startsAt": "2026-10-05T07:50:00Z"}, "unknown field(s) startsAt"),
    ],
)
def test_a_bad_event_is_refused_with_its_reason_and_the_others_go_on(tmp_path, change, words):
    store = open_store(state_dir=str(tmp_path / "state"))
    bad = {k: v for k, v in dict(alert(), **change).items() if v is not None}
    got = _inc.record_realtime(store, [alert("ok"), bad], now=T0)
    assert [r["outcome"] for r in got["results"]] == ["opened", "refused"]
    assert got["refused"][0]["error"].startswith("event 1: ") and words in got["refused"][0]["error"], got["refused"]
    assert [i["host"] for i in rows(store, "incidents", "incident_id")] == ["ok"]


def test_not_a_list_and_not_a_mapping(tmp_path):
    store = open_store(state_dir=str(tmp_path / "state"))
    with pytest.raises(_inc.IncidentError, match="needs a list of events, not dict"):
        _inc.record_realtime(store, alert(), now=T0)
    got = _inc.record_realtime(store, ["b"], now=T0)
    assert got["refused"][0]["error"] == "event 0: an event is a mapping, not str"
