"""Leak detection, scope and run result (plugins/plugin_utils/leak/response.py)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import bmc as _bmc
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import ipmi as _ipmi, redfish as _redfish

from ansible_collections.gpuops.cluster.plugins.plugin_utils.leak import response as _leak

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")


def fx(folder, name):
    with open(os.path.join(FIX, folder, name), encoding="utf-8") as fh:
        return fh.read()


def bmc(**kw):
    out = _bmc.empty_result("test")
    out.update(kw)
    return out


def redfish_detector(state, health=None):
    doc = {"@odata.type": "#LeakDetector.v1_1_0.LeakDetector", "Id": "ColdPlate0", "Name": "Cold Plate 0 Leak Detector",
           "DetectorState": state, "Status": {"Health": health or state, "State": "Enabled"}}  # fmt: skip
    frag = _redfish.parse_leak_detector(doc)
    return bmc(sensors=frag["sensors"], redfish=dict(_redfish.empty(), leak_detectors=frag["leak_detectors"]))


# --------------------------------------------------------------------------------------- detect: real samples
def test_ipmi_sample_leak_asserted_although_status_column_says_ok():
    # real ipmitool output of the emulated BMC: 'Leak Detect | 08h | ok | 30.1 | State Asserted'
    sensors = _ipmi.parse_sdr(fx("ipmitool-sdr", "openipmi-sim-sdr-elist-faults.txt"))
    r = _leak.detect(bmc(sensors=sensors))
    assert r["state"] == _leak.ASSERTED
    assert [e["name"] for e in r["asserted"]] == ["Leak Detect"]
    assert "Leak Detect" in r["reason"]


@pytest.mark.parametrize(
    "name", ["datakit-dell-r740-sdr.txt", "intel-s2600-sdr-v1.txt", "datakit-huawei-rh2288v3-sdr-elist.txt"]
)
def test_ipmi_samples_without_a_leak_sensor_are_unreadable_never_asserted(name):
    r = _leak.detect(bmc(sensors=_ipmi.parse_sdr(fx("ipmitool-sdr", name))))
    assert r["state"] == _leak.UNREADABLE
    assert "no leak sensor" in r["reason"]


def test_sel_sample_leak_event_asserted():
    sel = _ipmi.parse_sel(fx("ipmitool-sel", "openipmi-sim-sel-elist.txt"))
    r = _leak.detect(bmc(sel=sel))
    assert r["state"] == _leak.ASSERTED
    assert r["asserted"][0]["source"] == "sel"


def test_sel_leak_deasserted_later_does_not_fire():
    sel = [
        {"id": 1, "sensor_type": "Cooling Device", "sensor": "Leak Detect", "event": "State Asserted",
         "direction": "asserted", "severity": "critical"},
        {"id": 2, "sensor_type": "Cooling Device", "sensor": "Leak Detect", "event": "State Asserted",
         "direction": "deasserted", "severity": "ok"},
    ]  # fmt: skip
    assert _leak.detect(bmc(sel=sel))["state"] == _leak.UNREADABLE  # no sensor reading, no active event


# --------------------------------------------------------------------------------------- detect: Redfish
@pytest.mark.parametrize(
    "state,expected", [("Critical", "asserted"), ("Warning", "warning"), ("OK", "clear"), (None, "unreadable")]
)
def test_redfish_detector_states(state, expected):
    assert _leak.detect(redfish_detector(state))["state"] == expected


def test_redfish_log_leak_entry_fires_until_resolved():
    entry = {"id": "4", "created": "2026-12-02T10:00:00Z", "severity": "Critical", "message": "Coolant leak detected",
             "entry_code": "Assert", "sensor_type": "Cooling Device", "resolved": None}  # fmt: skip
    red = dict(_redfish.empty(), log_entries=[entry])
    assert _leak.detect(bmc(redfish=red))["state"] == _leak.ASSERTED
    red["log_entries"] = [dict(entry, resolved=True)]
    assert _leak.detect(bmc(redfish=red))["state"] == _leak.UNREADABLE


def test_unreachable_bmc_is_unreadable_with_the_error():
    b = bmc(errors=[{"domain": "bmc", "kind": "tool_error", "message": "Connection refused"}])
    r = _leak.detect(b)
    assert r["state"] == _leak.UNREADABLE and "Connection refused" in r["reason"]


def test_ipmi_leak_sensor_no_reading_is_unreadable():
    s = {"name": "Leak Detect", "type": "leak", "status": "not_present", "states": []}
    assert _leak.detect(bmc(sensors=[s]))["state"] == _leak.UNREADABLE
    s2 = dict(s, status="ok", states=["State Deasserted"])
    assert _leak.detect(bmc(sensors=[s2]))["state"] == _leak.CLEAR


def test_one_readable_clear_and_one_unreadable_sensor_is_not_clear():
    ok = {"name": "Leak 1", "type": "leak", "status": "ok", "states": ["State Deasserted"]}
    bad = {"name": "Leak 2", "type": "leak", "status": "unknown", "states": []}
    assert _leak.detect(bmc(sensors=[ok, bad]))["state"] == _leak.UNREADABLE


# --------------------------------------------------------------------------------------- scope
INV = {
    "n1": {"gpuops_leak_domain": "cdu-a", "gpuops_rack": "r1"},
    "n2": {"gpuops_leak_domain": "cdu-a", "gpuops_rack": "r1"},
    "n3": {"gpuops_rack": "r1"},
    "n4": {"gpuops_leak_domain": "cdu-b", "gpuops_rack": "r2"},
    "n5": {},
}


def test_scope_is_the_leak_domain_not_the_rack():
    sc = _leak.scope("n1", INV)
    assert sc["domain"] == "cdu-a" and sc["targets"] == ["n1", "n2"] and sc["out_of_scope"] == []


def test_scope_falls_back_to_the_rack():
    sc = _leak.scope("n3", INV)
    assert sc["domain"] == "r1" and sc["targets"] == ["n3"]


def test_scope_refuses_requested_targets_outside_the_domain():
    sc = _leak.scope("n1", INV, ["n1", "n4"])
    assert sc["targets"] == ["n1"]
    assert sc["out_of_scope"] == [{"node": "n4", "domain": "cdu-b", "reason": "outside leak domain cdu-a"}]


def test_scope_without_any_domain_is_the_source_alone():
    assert _leak.scope("n5", INV)["targets"] == ["n5"]


# --------------------------------------------------------------------------------------- verdict and result
def test_power_verdict_unconfirmed_when_the_bmc_did_not_answer_or_is_missing():
    v = _leak.power_verdict(
        ["n1", "n2", "n3", "n4"],
        {"n1": {"state": "off"}, "n2": {"state": None, "error": "Connection refused", "bmc": True},
         "n3": {"state": None, "bmc": False, "error": None}, "n4": {"state": "on"}},
    )  # fmt: skip
    assert v["powered_off"] == ["n1"]
    assert {u["node"]: u["reason"] for u in v["unconfirmed"]} == {
        "n2": "Connection refused", "n3": "no BMC configured", "n4": "power state on"}  # fmt: skip


def test_result_p0_unconfirmed_and_p0_per_target():
    reading = _leak.detect(redfish_detector("Critical"))
    sc = _leak.scope("n1", INV)
    res = _leak.result("A-1", "n1", reading, sc, _leak.power_verdict(sc["targets"], {"n1": {"state": "off"}}), ["n1"])
    assert res["fired"] and res["targets"] == ["n1", "n2"] and res["powered_off"] == ["n1"]
    codes = sorted((f["host"], f["severity"], f["code"]) for f in res["findings"])
    assert codes == [("n1", "P0", "asserted"), ("n2", "P0", "asserted"), ("n2", "P0", "power_off_unconfirmed")]
    assert all(f["alert_id"] == "A-1" for f in res["findings"]) and res["severity"] == "P0"


def test_result_unreadable_is_p2_and_fires_nothing():
    reading = _leak.detect(bmc(errors=[{"message": "timeout"}]))
    res = _leak.result("A-2", "n1", reading, _leak.scope("n1", INV), None)
    assert not res["fired"] and res["targets"] == [] and res["powered_off"] == []
    assert [(f["severity"], f["code"]) for f in res["findings"]] == [("P2", "sensor_unreadable")]
    assert "sensor unreadable" in res["findings"][0]["message"]


def test_guard_findings_only_for_an_asserted_reading():
    assert _leak.guard_findings("A", {"state": "warning"}, ["n1"], "n1") == []
    f = _leak.guard_findings("A", {"state": "asserted", "reason": "x"}, ["n1", "n2"], "n1")
    assert [(x["host"], x["severity"]) for x in f] == [("n1", "P0"), ("n2", "P0")]


# --------------------------------------------------------------------------------------- result file
def test_result_path_keeps_the_alert_id_inside_the_leak_folder(tmp_path):
    p = _leak.result_path(str(tmp_path), "../../etc/x y")
    assert os.path.dirname(p) == str(tmp_path / "leak") and os.path.basename(p) == ".._.._etc_x_y.json"


def test_save_and_load_result(tmp_path):
    p = _leak.result_path(str(tmp_path), "A-9")
    assert _leak.load_result(p) is None
    _leak.save_result(p, {"alert_id": "A-9"})
    assert _leak.load_result(p) == {"alert_id": "A-9"} and os.stat(p).st_mode & 0o777 == 0o600


# --------------------------------------------------------------------------------------- fuzz
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(
        ["sensors", "sel", "redfish", "leak_detectors", "log_entries", "type", "status", "states", "name", "state",
         "errors", "message", "severity", "direction", "sensor", "event", "leak"]), c, max_size=5),
    max_leaves=20,
)  # fmt: skip


@seed(20261202)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json)
def test_fuzz_detect_and_scope_never_raise(data):
    r = _leak.detect(data)
    assert r["state"] in (_leak.ASSERTED, _leak.WARNING, _leak.CLEAR, _leak.UNREADABLE)
    sc = _leak.scope("n1", data if isinstance(data, dict) else {})
    assert "n1" in sc["members"]
