# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 12 item 7: only a leak is a leak. Coolant flow, pressure, level and temperature sensors are cooling
findings (``bmc.coolant``: isolate or monitor), never the leak response's power-off path; a real leak detector
still is."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import bmc as _bmc
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import ipmi as _ipmi, redfish as _redfish

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils import checks as _checks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.leak import response as _leak

INV = {"n1": {"gpuops_leak_domain": "cdu-a"}, "n2": {"gpuops_leak_domain": "cdu-a"}, "n3": {"gpuops_leak_domain": "b"}}
NOW = 1_764_669_600.0


def bmc(**kw):
    out = _bmc.empty_result("test")
    out.update(kw)
    return out


def sensor(rtype, health="Critical", name="Coolant Flow", context=None, reading=0.2):
    doc = {"@odata.type": "#Sensor.v1_7_0.Sensor", "Id": name.replace(" ", ""), "Name": name, "ReadingType": rtype,
           "Reading": reading, "Status": {"State": "Enabled", "Health": health}}  # fmt: skip
    if context:
        doc["PhysicalContext"] = context
    return doc


def detector(state):
    doc = {"@odata.type": "#LeakDetector.v1_1_0.LeakDetector", "Id": "ColdPlate0", "Name": "Cold Plate 0 Leak Detector",
           "DetectorState": state, "Status": {"Health": state, "State": "Enabled"}}  # fmt: skip
    return _redfish.parse_document(doc)


COOLANT_DOCS = [
    sensor("LiquidFlow"),
    sensor("LiquidFlowLPM", name="CDU Loop Flow"),
    sensor("Pressure", name="Coolant Pressure", reading=80000),
    sensor("PressurekPa", name="Supply Pressure", reading=80),
    sensor("Temperature", name="Coolant Supply Temp", context="LiquidInlet", reading=52),
    sensor("LiquidLevel", name="Reservoir Level", reading=1),
]


def facts_with(sensors, redfish=None):
    return {"schema": "gpuops.facts/v1", "hostname": "n1", "collected_at": NOW,
            "bmc": bmc(sensors=sensors, redfish=redfish or _redfish.empty())}  # fmt: skip


def inspect(sensors, redfish=None, policy=None):
    findings = _checks.evaluate_node(facts_with(sensors, redfish), None, policy or _policy.DEFAULT_POLICY, None, NOW,
                                     "n1")[0]  # fmt: skip
    return [f for f in findings if f["check"].startswith("bmc.")]


@pytest.mark.parametrize("doc", COOLANT_DOCS, ids=[d["ReadingType"] for d in COOLANT_DOCS])
def test_critical_coolant_sensor_is_a_cooling_finding_never_a_power_off(doc):
    frag = _redfish.parse_document(doc)
    assert [s["type"] for s in frag["sensors"]] == ["coolant"]
    # the leak response: no leak, nothing fired, a P1 isolate cooling finding
    reading = _leak.detect(bmc(sensors=frag["sensors"]))
    assert reading["state"] != _leak.ASSERTED and reading["asserted"] == []
    assert [c["name"] for c in reading["cooling"]] == [doc["Name"]]
    sc = _leak.scope("n1", INV)
    assert _leak.guard_findings("A-1", reading, sc["targets"], "n1") == []
    res = _leak.result("A-1", "n1", reading, sc, None)
    assert res["fired"] is False and res["targets"] == [] and res["powered_off"] == []
    cool = [f for f in res["findings"] if f["check"] == "bmc.coolant"]
    assert [(f["severity"], f["action"], f["host"]) for f in cool] == [("P1", "isolate", "n1")]
    assert "not a leak" in cool[0]["message"]
    assert all(f["action"] != "emergency_shutdown" for f in res["findings"])
    # the inspection: bmc.coolant P1 isolate, no bmc.leak, nothing with emergency_shutdown
    fs = inspect(frag["sensors"])
    assert [(f["check"], f["severity"], f["action"]) for f in fs] == [("bmc.coolant", "P1", "isolate")]


def test_warning_coolant_sensor_is_monitor():
    frag = _redfish.parse_document(sensor("LiquidFlow", health="Warning"))
    fs = inspect(frag["sensors"])
    assert [(f["check"], f["severity"], f["action"], f["code"]) for f in fs] == [
        ("bmc.coolant", "P2", "monitor", "Warning")
    ]
    res = _leak.result("A-2", "n1", _leak.detect(bmc(sensors=frag["sensors"])), _leak.scope("n1", INV), None)
    assert [(f["severity"], f["action"]) for f in res["findings"] if f["check"] == "bmc.coolant"] == [("P2", "monitor")]


def test_real_leak_detector_critical_still_powers_off_its_domain_next_to_a_flow_fault():
    flow = _redfish.parse_document(sensor("LiquidFlow"))
    det = detector("Critical")
    redfish = dict(_redfish.empty(), leak_detectors=det["leak_detectors"])
    reading = _leak.detect(bmc(sensors=flow["sensors"] + det["sensors"], redfish=redfish))
    assert reading["state"] == _leak.ASSERTED
    assert [e["name"] for e in reading["asserted"]] == ["Cold Plate 0 Leak Detector"]
    sc = _leak.scope("n1", INV)
    gf = _leak.guard_findings("A-3", reading, sc["targets"], "n1")
    assert [(f["host"], f["action"]) for f in gf] == [("n1", "emergency_shutdown"), ("n2", "emergency_shutdown")]
    fs = inspect(flow["sensors"] + det["sensors"], dict(_redfish.empty(), leak_detectors=det["leak_detectors"]))
    leak = [f for f in fs if f["check"] == "bmc.leak"]
    assert leak and all(f["action"] == "emergency_shutdown" for f in leak)


def test_leak_detector_ok_and_a_flow_fault_reads_clear_with_the_cooling_entry():
    flow = _redfish.parse_document(sensor("LiquidFlow"))
    det = detector("OK")
    r = _leak.detect(bmc(sensors=flow["sensors"] + det["sensors"],
                         redfish=dict(_redfish.empty(), leak_detectors=det["leak_detectors"])))  # fmt: skip
    assert r["state"] == _leak.CLEAR and len(r["cooling"]) == 1


def test_legacy_thermal_coolant_temperature_is_coolant():
    doc = {"@odata.type": "#Thermal.v1_4_0.Thermal", "Id": "Thermal",
           "Temperatures": [{"Name": "Coolant Return", "ReadingCelsius": 71, "PhysicalContext": "LiquidOutlet",
                             "Status": {"State": "Enabled", "Health": "Critical"}},
                            {"Name": "CPU1 Temp", "ReadingCelsius": 99, "PhysicalContext": "CPU",
                             "Status": {"State": "Enabled", "Health": "Critical"}}]}  # fmt: skip
    types = {s["name"]: s["type"] for s in _redfish.parse_document(doc)["sensors"]}
    assert types == {"Coolant Return": "coolant", "CPU1 Temp": "temperature"}


SDR = """\
Coolant Flow     | 42h | cr  | 7.1 | 0.40 unspecified
Coolant Press    | 43h | cr  | 7.1 | 310 kPa
Coolant Temp     | 44h | nr  | 7.1 | 68 degrees C
Pump1            | 45h | cr  | 7.1 | 300 RPM
System Airflow   | 46h | ok  | 7.1 | 62 CFM
Leak Detect      | 08h | ok  | 30.1 | State Asserted
"""


def test_ipmi_coolant_sensors_are_coolant_and_only_the_leak_detector_is_a_leak():
    sensors = _ipmi.parse_sdr(SDR)
    types = {s["name"]: s["type"] for s in sensors}
    assert types == {"Coolant Flow": "coolant", "Coolant Press": "coolant", "Coolant Temp": "coolant",
                     "Pump1": "coolant", "System Airflow": "other", "Leak Detect": "leak"}  # fmt: skip
    r = _leak.detect(bmc(sensors=[s for s in sensors if s["name"] != "Leak Detect"]))
    assert r["state"] != _leak.ASSERTED and len(r["cooling"]) == 4
    fs = inspect([s for s in sensors if s["name"] != "Leak Detect"])
    assert {f["check"] for f in fs} == {"bmc.coolant"} and all(f["action"] == "isolate" for f in fs)
    # the leak detector on the same BMC still fires
    assert _leak.detect(bmc(sensors=sensors))["state"] == _leak.ASSERTED


def test_coolant_sel_and_redfish_log_events_are_not_leaks():
    sel = [{"id": 7, "sensor_type": "Cooling Device", "sensor": "Coolant Flow", "event": "Lower Critical going low",
            "direction": "asserted", "severity": "critical"}]  # fmt: skip
    assert _leak.detect(bmc(sel=sel))["asserted"] == []
    log = [{"id": "9", "severity": "Critical", "message": "Coolant flow below lower critical threshold",
            "entry_code": "Assert", "sensor_type": "Cooling Device", "resolved": None}]  # fmt: skip
    assert _leak.detect(bmc(redfish=dict(_redfish.empty(), log_entries=log)))["asserted"] == []
    log[0]["message"] = "Coolant leak detected"
    assert _leak.detect(bmc(redfish=dict(_redfish.empty(), log_entries=log)))["state"] == _leak.ASSERTED


def test_policy_refuses_emergency_shutdown_for_coolant():
    pol = copy.deepcopy(_policy.DEFAULT_POLICY)
    pol["thresholds"]["bmc"]["coolant"]["Critical"] = {"severity": "P1", "action": "emergency_shutdown"}
    with pytest.raises(_policy.PolicyError) as exc:
        _policy.validate_policy(pol)
    assert "thresholds.bmc.coolant.Critical.action" in str(exc.value)
