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
