# -*- coding: utf-8 -*-
"""gpuops.cluster.incident_event (the real-time path's ledger step, docs/alerting.md "Incidents, repeats and
suppression"), the event source's new fields (startsAt, check/component/code/severity labels) and
change/realtime (alerts -> events, suppressions by window, guard claim and upgrade run).

Oracles outside the code: the Alertmanager webhook body (startsAt RFC 3339, labels as the collection's rules
write them: extensions/prometheus/gpuops-rules.yml), runbooks/catalog.yml (GpuXid79 -> gpu.xid:79), the windows
of docs/windows.md, hand-timed epochs (2026-12-07T12:00:00Z = 1796644800)."""

from __future__ import annotations

import datetime
import importlib.util
import json
import os

import pytest

from ansible_collections.gpuops.cluster.plugins.action import incident_event as action
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import realtime as rt
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_incidents as _inc
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store
from action_runner import _run_action

NOON = 1796644800.0  # 2026-12-07T12:00:00Z
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def _source():
    path = os.path.join(ROOT, "extensions", "eda", "plugins", "event_source", "alertmanager.py")
    spec = importlib.util.spec_from_file_location("am_source_incident", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def am_alert(node, name="GpuopsXid79", status="firing", starts="2026-12-07T11:58:30Z", **labels):
    labels.update(alertname=name, node=node)
    return {"status": status, "labels": labels, "startsAt": starts, "annotations": {"summary": "{{ x }}"}}


def test_the_source_keeps_starts_at_and_the_fault_labels_only_when_they_match():
    am = _source()
    body = {
        "status": "firing",
        "groupKey": "{}:{}",
        "alerts": [
            am_alert("n1", check="gpu.xid", component="gpu:0", code="79", severity="P0"),
            am_alert(
                "n2",
                starts="{{ lookup('pipe','id') }}",
                check="{{ x }}",
                component="gpu 0",
                code="7%9",
                severity="high",
            ),
        ],
    }
    payload, refused = am.sanitize(body)
    assert refused == 0
    assert payload["alerts"][0] == {
        "status": "firing",
        "labels": {
            "alertname": "GpuopsXid79",
            "node": "n1",
            "check": "gpu.xid",
            "component": "gpu:0",
            "code": "79",
            "severity": "P0",
        },
        "startsAt": "2026-12-07T11:58:30Z",
    }
    # every bad field dropped, the alert kept
    assert payload["alerts"][1] == {"status": "firing", "labels": {"alertname": "GpuopsXid79", "node": "n2"}}


def test_alert_events_name_the_fault_from_labels_or_the_catalogue():
    alerts = [
        {
            "status": "firing",
            "labels": {
                "alertname": "GpuopsXid79",
                "node": "n1",
                "check": "gpu.xid",
                "component": "gpu:0",
                "code": "79",
                "severity": "P0",
            },
            "startsAt": "2026-12-07T11:58:30Z",
        },
        {"status": "firing", "labels": {"alertname": "GpuXid79", "node": "n2", "severity": "P1"}},
        {"status": "resolved", "labels": {"alertname": "GpuXid79", "node": "n3", "severity": "P1"}},
        {"status": "firing", "labels": {"alertname": "GpuXid79", "node": "n4"}},
    ]
    events, problems = rt.alert_events(alerts, NOON, "gpu_fell_off_bus")
    assert events[0] == {
        "host": "n1",
        "check_id": "gpu.xid",
        "component": "gpu:0",
        "code": "79",
        "severity": "P0",
        "detected_at": NOON - 90,
        "source": "alertmanager",
        "summary": "GpuopsXid79 on n1",
        "runbook": "gpu_fell_off_bus",
    }
    # an exporter's alert: the catalogue's gpu_fell_off_bus codes ["gpu.xid:79"]; no startsAt: now
    assert (events[1]["check_id"], events[1]["code"], events[1]["detected_at"]) == ("gpu.xid", "79", NOON)
    assert len(events) == 2  # resolved: nothing
    assert problems == [("n4", "alert 3 (GpuXid79 on n4) names no severity")]


def test_suppressions_window_claim_and_upgrade(tmp_path):
    state = tmp_path / "state"
    (state / "isolation").mkdir(parents=True)
    (state / "isolation" / "history.json").write_text(
        json.dumps(
            {"entries": [{"node": "n3", "time": NOON - 60, "run_id": "r1", "ticket": "CHG-1", "state": "claimed"}]}
        )
    )
    run = state / "upgrades" / "CHG-7-20261207T110000"
    run.mkdir(parents=True)
    (run / "plan.json").write_text(json.dumps({"ordered_hosts": ["n4", "n5"]}))
    done = state / "upgrades" / "CHG-6-20261206T110000"
    done.mkdir(parents=True)
    (done / "plan.json").write_text(json.dumps({"ordered_hosts": ["n6"]}))
    (done / "report.json").write_text("{}")
    windows = {
        "n1": [{"name": "noon-slot", "start": "2026-12-07T12:00", "duration": "1h", "timezone": "UTC"}],
        "n2": [{"name": "later", "start": "2026-12-07T14:00", "duration": "1h", "timezone": "UTC"}],
        "n7": [{"name": "bad", "weekly": {"days": ["someday"], "start": "02:00", "duration": "4h"}, "timezone": "UTC"}],
    }
    why, problems = rt.suppressions(["n1", "n2", "n3", "n4", "n6", "n7"], windows, str(state), NOON + 60)
    assert why == {
        "n1": "maintenance window noon-slot (until 2026-12-07T13:00:00+00:00)",
        "n3": "claimed by another run's isolation (the isolation guard)",
        "n4": "rolling upgrade CHG-7-20261207T110000",
    }
    assert len(problems) == 1 and problems[0].startswith("n7: gpuops_maintenance_windows: ")
    # the claim was read from the store (the older history file imported on that first open, then moved aside)
    assert (state / "gpuops.db").is_file() and not (state / "isolation" / "history.json").exists()
    # a second look reads the store alone: the claim is still there
    assert rt.suppressions(["n3"], {}, str(state), NOON + 60)[0] == {
        "n3": "claimed by another run's isolation (the isolation guard)"
    }


def _alerts(*nodes, status="firing"):
    return [
        {
            "status": status,
            "labels": {
                "alertname": "GpuopsXid79",
                "node": n,
                "check": "gpu.xid",
                "component": "gpu:0",
                "code": "79",
                "severity": "P0",
            },
            "startsAt": "2026-12-07T11:58:30Z",
        }
        for n in nodes
    ]


def _hostvars(**windows):
    return {"hostvars": {h: {"gpuops_maintenance_windows": w} for h, w in windows.items()}}


def test_the_action_acts_once_per_incident_and_records_the_repeat(tmp_path):
    state = str(tmp_path / "state")
    args = {"alerts": _alerts("n1"), "runbook": "gpu_fell_off_bus", "state_dir": state}
    first = _run_action(action, args, task_vars=_hostvars(n1=[]))
    assert not first.get("failed"), first
    assert first["act_hosts"] == ["n1"] and first["changed"] is True
    again = _run_action(action, args, task_vars=_hostvars(n1=[]))
    assert again["act_hosts"] == [] and [r["outcome"] for r in again["results"]] == ["repeat"]
    assert "already acted on this incident, skipped" in again["msg"]
    store = open_store(state_dir=state)
    with store.read() as conn:
        inc = _inc.open_incidents(conn)
    store.close()
    assert len(inc) == 1 and inc[0]["detected_at"] == NOON - 90


def test_a_window_suppresses_and_a_mixed_payload_acts_on_nobody(tmp_path):
    state = str(tmp_path / "state")
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
    win = [{"name": "all-day", "start": start.strftime("%Y-%m-%dT%H:%M"), "duration": "2h", "timezone": "UTC"}]
    got = _run_action(
        action,
        {"alerts": _alerts("n1", "n2"), "runbook": "gpu_fell_off_bus", "state_dir": state, "narrow": False},
        task_vars=_hostvars(n1=win, n2=[]),
    )
    assert not got.get("failed"), got
    assert got["act_hosts"] == [] and got["mixed"] == ["n2"]
    assert got["suppressed"]["n1"].startswith("maintenance window all-day")
    # narrow (gpu_reset): n2 acts on its own, n1 stays suppressed
    got = _run_action(
        action,
        {"alerts": _alerts("n1", "n2"), "runbook": "gpu_reset_x", "state_dir": state},
        task_vars=_hostvars(n1=win, n2=[]),
    )
    assert got["act_hosts"] == ["n2"]
    # a leak is never held back (suppress: false)
    got = _run_action(
        action,
        {"alerts": _alerts("n1"), "runbook": "coolant_leak", "state_dir": state, "narrow": False, "suppress": False},
        task_vars=_hostvars(n1=win),
    )
    assert got["act_hosts"] == ["n1"] and got["suppressed"] == {}


def test_an_alert_without_severity_is_not_recorded_but_still_acts(tmp_path):
    alerts = [{"status": "firing", "labels": {"alertname": "GpuXid79", "node": "n9"}}]
    got = _run_action(
        action,
        {"alerts": alerts, "runbook": "gpu_fell_off_bus", "state_dir": str(tmp_path / "s")},
        task_vars=_hostvars(n9=[]),
    )
    assert not got.get("failed"), got
    assert got["act_hosts"] == ["n9"] and got["results"] == []
    assert got["warnings"] == [
        "alert 0 (GpuXid79 on n9) names no severity: not recorded in the incident ledger (add the label to the alert rule)"
    ]


@pytest.mark.parametrize(
    "args,words",
    [
        ({}, "give the alerts"),
        ({"alerts": [], "events": []}, "mutually exclusive"),
        (
            {
                "events": [
                    {
                        "host": "n1;x",
                        "check_id": "gpu.xid",
                        "severity": "P0",
                        "detected_at": NOON,
                        "source": "health_check",
                        "summary": "s",
                    }
                ]
            },
            "host 'n1;x' is not a host name",
        ),
        ({"alerts": "n1"}, "alerts"),
    ],
)
def test_bad_input_is_a_clear_failure(tmp_path, args, words):
    got = _run_action(action, dict(args, state_dir=str(tmp_path / "s")), task_vars=_hostvars())
    assert got.get("failed") and words in got["msg"], got
    assert "Traceback" not in got["msg"]


def test_check_mode_records_nothing_and_acts_on_nobody(tmp_path):
    state = tmp_path / "s"
    got = _run_action(
        action,
        {"alerts": _alerts("n1"), "runbook": "x", "state_dir": str(state)},
        check_mode=True,
        task_vars=_hostvars(n1=[]),
    )
    assert got["act_hosts"] == [] and not (state / "gpuops.db").exists()


def test_the_health_checks_alert_is_the_health_check_source_without_a_code():
    # the series labels render_textfile writes (docs/metrics.md "Node-side health check"): check, severity, action,
    # component; no code
    alerts = [
        {
            "status": "firing",
            "labels": {
                "alertname": "GpuopsNodeHealthFailed",
                "node": "n1",
                "check": "gpu.xid",
                "component": "gpu:0",
                "severity": "P0",
            },
            "startsAt": "2026-12-07T11:59:55Z",
        }
    ]
    events, problems = rt.alert_events(alerts, NOON)
    assert problems == []
    assert events == [
        {
            "host": "n1",
            "check_id": "gpu.xid",
            "component": "gpu:0",
            "severity": "P0",
            "detected_at": NOON - 5,
            "source": "health_check",
            "summary": "GpuopsNodeHealthFailed on n1",
        }
    ]


@pytest.mark.parametrize(
    "starts,expected",
    [
        ("2026-12-07T11:58:30.123456789Z", NOON - 89.876543211),  # Alertmanager: Go's RFC3339Nano
        ("2026-12-07T11:58:30.1234567Z", NOON - 89.8765433),
        ("2026-12-07T12:58:30+01:00", NOON - 90),
        ("2026-12-07 11:58:30", NOON),  # not RFC 3339 (no T, no zone): the call's time, never a guess
        ("2026-13-07T11:58:30Z", NOON),  # month 13
    ],
)
def test_starts_at_as_alertmanager_writes_it(starts, expected):
    alerts = [
        {
            "status": "firing",
            "labels": {"alertname": "GpuopsXid79", "node": "n1", "check": "gpu.xid", "severity": "P0"},
            "startsAt": starts,
        }
    ]
    events, _problems = rt.alert_events(alerts, NOON)
    assert events[0]["detected_at"] == pytest.approx(expected, abs=1e-6)


def _leak(state="Critical", detected="2026-12-07T11:59:00Z"):
    """An event as the gpuops.cluster.redfish_leak source emits it (its DOCUMENTATION: ids only, ISO 8601 UTC)."""
    return {
        "node": "n5",
        "chassis": "Chassis_1",
        "detector": "Leak_Tray_2",
        "state": state,
        "previous": "OK",
        "ticket": "leak-0123456789abcdef",
        "detected_at": detected,
    }


def test_the_leak_watchs_event_opens_one_incident_and_never_holds_the_response_back(tmp_path):
    state = str(tmp_path / "state")
    args = {"leak_event": _leak(), "runbook": "coolant_leak", "state_dir": state, "narrow": False, "suppress": False}
    first = _run_action(action, args, task_vars=_hostvars(n5=[]))
    assert not first.get("failed"), first
    assert first["act_hosts"] == ["n5"]
    # the watch emits on a state change only: a second event is a new onset, recorded on the open incident, and
    # the power-off never waits on the ledger
    again = _run_action(action, args, task_vars=_hostvars(n5=[]))
    assert again["act_hosts"] == ["n5"] and [r["outcome"] for r in again["results"]] == ["repeat"]
    store = open_store(state_dir=state)
    with store.read() as conn:
        inc = _inc.open_incidents(conn)
    store.close()
    # one incident, dated when the source read Critical (11:59:00Z = NOON - 60); docs/policy.md: a leak detector
    # Critical is P1 emergency_shutdown (thresholds.bmc.leak), the check the inspection raises is bmc.leak
    assert len(inc) == 1 and inc[0]["detected_at"] == NOON - 60
    assert (inc[0]["host"], inc[0]["severity"]) == ("n5", "P1")


def test_a_leak_event_back_to_ok_records_nothing_and_bad_ones_refuse(tmp_path):
    state = str(tmp_path / "state")
    ok = _run_action(action, {"leak_event": _leak("OK"), "state_dir": state}, task_vars=_hostvars(n5=[]))
    assert not ok.get("failed") and ok["act_hosts"] == [] and ok["results"] == [], ok
    bad = _run_action(action, {"leak_event": "Critical", "state_dir": state}, task_vars=_hostvars(n5=[]))
    assert bad.get("failed")
    both = _run_action(
        action, {"leak_event": _leak(), "alerts": _alerts("n1"), "state_dir": state}, task_vars=_hostvars(n5=[])
    )
    assert both.get("failed") and "mutually exclusive" in both["msg"], both
