# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""BMC checks (_checks/bmc.py): sensors, SEL, Redfish health, leak detectors."""

from __future__ import annotations


from checks_helpers import PROFILE, facts, only, run


# ------------------------------------------------------------------------------- BMC


def test_ns_sensors_are_not_alarms():
    sensors = [
        {"name": "Temp 4", "type": "temperature", "reading": None, "status": "unknown", "states": []},
        {"name": "SEL", "type": "event_logging", "reading": None, "status": None, "states": []},
        {"name": "PSU3", "type": "power_supply", "reading": None, "status": "not_present", "states": []},
    ]
    assert run(facts(bmc={"sensors": sensors}))[0] == []


def test_bmc_sensor_status_and_failure_state():
    sensors = [
        {"name": "PSU2 Status", "type": "power_supply", "status": "critical", "states": []},
        {
            "name": "PSU1 Status",
            "type": "power_supply",
            "status": "ok",
            "states": ["Presence detected", "Failure detected"],
        },
        {"name": "CPU Temp", "type": "temperature", "status": "non_recoverable", "reading": 105},
    ]
    fs = run(facts(bmc={"sensors": sensors}))[0]
    assert only(fs, "bmc.sensor", "bmc/PSU2 Status")[0]["action"] == "replace"
    assert only(fs, "bmc.sensor", "bmc/PSU1 Status", "Failure detected")[0]["action"] == "replace"
    f = only(fs, "bmc.sensor", "bmc/CPU Temp")[0]
    assert (f["severity"], f["action"]) == ("P1", "emergency_shutdown")


def test_bmc_sel_window_and_deassertion():
    sel = [
        {
            "id": 1,
            "time": "2026-12-02T09:00:00",
            "sensor": "PS1",
            "event": "Failure detected",
            "direction": "asserted",
            "severity": "critical",
        },
        {
            "id": 2,
            "time": "2026-11-01T09:00:00",
            "sensor": "FAN1",
            "event": "Lower Critical going low",
            "direction": "asserted",
            "severity": "critical",
        },
        {
            "id": 3,
            "time": "2026-12-02T09:10:00",
            "sensor": "PS2",
            "event": "Failure detected",
            "direction": "asserted",
            "severity": "critical",
        },
        {
            "id": 4,
            "time": "2026-12-02T09:20:00",
            "sensor": "PS2",
            "event": "Failure detected",
            "direction": "deasserted",
            "severity": "critical",
        },
        {"id": 5, "time": None, "sensor": "X", "event": "Y", "direction": "asserted", "severity": "critical"},
    ]
    fs = only(run(facts(bmc={"sel": sel}))[0], "bmc.sel")
    assert [f["code"] for f in fs] == ["PS1: Failure detected"]


def test_bmc_sel_entries_that_raise_nothing_and_odd_directions():
    """Issue 41: an entry's time is read only when its severity can raise a finding; what it raises is unchanged.
    ``ok``/informational entries with any time (none, garbage) raise nothing; a deassertion written in capitals
    still closes its sensor's event; a warning counts as P3; repeats of one event are counted."""
    base = {"sensor": "PS1", "event": "Failure detected", "direction": "asserted", "severity": "critical"}
    sel = [
        dict(base, id=1, time="2026-12-02T08:00:00"),
        dict(base, id=2, time="2026-12-02T08:30:00"),
        dict(base, id=3, time="not a time", severity="ok"),
        dict(base, id=4, time=None, severity="ok", sensor="FAN1"),
        dict(base, id=5, time="2026-12-02T09:00:00", sensor="FAN2", event="Lower Critical going low"),
        dict(
            base,
            id=6,
            time="2026-12-02T09:05:00",
            sensor="FAN2",
            event="Lower Critical going low",
            direction="Deasserted",
        ),
        dict(
            base,
            id=7,
            time="2026-12-02T09:10:00",
            sensor="VR1",
            event="Upper Non-critical going high",
            severity="warning",
        ),
        dict(base, id=8, time="2026-12-02T09:10:00", sensor="PSU9", event="Presence detected", severity="OK"),
    ]
    fs = only(run(facts(bmc={"sel": sel}))[0], "bmc.sel")
    assert [(f["code"], f["severity"]) for f in fs] == [
        ("PS1: Failure detected", "P2"),
        ("VR1: Upper Non-critical going high", "P3"),
    ]
    assert "2 entries" in fs[0]["message"]


def test_bmc_redfish_health_and_leak():
    rf = {
        "systems": [{"id": "1", "health": "OK", "health_rollup": "Critical"}],
        "leak_detectors": [{"name": "Tray1", "state": "Critical", "health": "Critical"}],
        "psus": [{"name": "PSU0", "health": "Critical"}],
    }
    fs = run(facts(bmc={"redfish": rf}))[0]
    assert only(fs, "bmc.health", "bmc", "systems:1")[0]["severity"] == "P2"
    assert only(fs, "bmc.health", "bmc/PSU0")[0]["action"] == "replace"
    f = only(fs, "bmc.leak", "bmc/Tray1")[0]
    assert (f["severity"], f["action"]) == ("P1", "emergency_shutdown")


def test_leak_sensor_from_ipmi_and_profile_extra_keys():
    sensors = [{"name": "Leak Detect", "type": "leak", "status": "critical", "states": ["State Asserted"]}]
    f = only(run(facts(bmc={"sensors": sensors}))[0], "bmc.leak", "bmc/Leak Detect")[0]
    assert (f["severity"], f["action"]) == ("P1", "emergency_shutdown")
    prof = dict(PROFILE, ib_link_layer="InfiniBand", fabric_manager_version="535.161.08", ib_ports=2)
    assert run(facts(), prof)[0] == []


# ---------------------------------------------------------- issue 37: Redfish LogEntry severity -> bmc.sel


def _redfish_facts(name, evidence_time, sel=None):
    import json
    import os

    from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import redfish as R

    fix = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures", "redfish", name)
    with open(fix, encoding="utf-8") as fh:
        frag = R.parse_document(json.load(fh), name)
    f = facts(bmc={"source": "capture", "sensors": [], "sel": sel or [], "redfish": frag})
    f["evidence_time"] = evidence_time
    return f


def test_redfish_critical_sel_entries_inside_the_window():
    # DMTF public-rackmount1 Log1: two Severity Critical Temperature entries (SensorNumber 1, 2) created
    # 2012-03-07T14:44:00Z and 14:45:00Z (SOURCE in the sidecar); the evidence time an hour later
    fs = only(run(_redfish_facts("dmtf-rackmount1-sel-log1-entries.json", "2012-03-07T15:45:00Z"))[0], "bmc.sel")
    assert [(f["code"], f["severity"], f["action"]) for f in fs] == [
        ("Temperature #1: Temperature threshold exceeded", "P2", "monitor"),
        ("Temperature #2: Temperature threshold exceeded", "P2", "monitor"),
    ]
    assert fs[0]["evidence"] == {
        "id": "1", "sensor_type": "Temperature", "time": "2012-03-07T14:44:00Z", "source": "redfish"
    }  # fmt: skip
    assert "Temperature" in fs[0]["message"] and "2012-03-07T14:44:00Z" in fs[0]["message"]
    # outside sel_lookback_hours (24 h) of the evidence time: history, nothing
    assert not only(run(_redfish_facts("dmtf-rackmount1-sel-log1-entries.json", "2012-03-09T15:45:00Z"))[0], "bmc.sel")


def test_redfish_ok_warning_deassert_and_ipmitool_precedence():
    # OpenBMC bmcweb SEL entry: Severity OK -> nothing
    assert not only(run(_redfish_facts("openbmc-bmcweb-sel-entries.json", "2024-08-20T15:00:00Z"))[0], "bmc.sel")
    base = {"entry_type": "SEL", "sensor_type": "Temperature", "sensor_number": 3, "message": "Inlet temp high"}
    entries = [
        dict(base, id="1", created="2026-12-02T09:00:00Z", severity="Warning", entry_code="Assert"),
        dict(base, id="2", created="2026-12-02T09:30:00Z", severity="OK", entry_code="Deassert", message="Inlet ok"),
        dict(base, id="3", created="2026-12-02T09:40:00Z", severity="Warning", sensor_number=4, entry_code="Assert"),
        dict(base, id="4", created="2026-12-02T09:41:00Z", severity="Critical", sensor_number=5, resolved=True),
        dict(base, id="5", created=None, severity="Critical", sensor_number=6),
        {"id": "6", "created": "garbage", "severity": 42},
        "not a dict",
    ]
    f = facts(bmc={"sensors": [], "sel": [], "redfish": {"log_entries": entries}})
    fs = only(run(f)[0], "bmc.sel")
    assert [(x["code"], x["severity"]) for x in fs] == [("Temperature #4: Inlet temp high", "P3")]
    # the same SEL read by ipmitool too: the Redfish SEL copy is left to it (no double count)
    sel = [{"id": 1, "time": "2026-12-02T09:00:00", "sensor": "PS1", "event": "Failure detected",
            "direction": "asserted", "severity": "critical"}]  # fmt: skip
    f = facts(bmc={"sensors": [], "sel": sel, "redfish": {"log_entries": entries}})
    assert [x["code"] for x in only(run(f)[0], "bmc.sel")] == ["PS1: Failure detected"]
