from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import redfish as _redfish
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "redfish")


def load(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return json.load(fh)


def parse(name):
    return _redfish.parse_document(load(name), name)


# file -> {key: count}
SAMPLES = {
    "bmclib-dell-r6515-system.json": {"systems": 1},
    "bmclib-lenovo-sr650-power-trimmed.json": {"sensors": 3, "psus": 2},
    "bmclib-lenovo-sr650-thermal-trimmed.json": {"sensors": 2},
    "bmclib-updateservice-multipart.json": {},
    "dmtf-rackmount1-chassis-thermal.json": {"sensors": 5},
    "dmtf-rackmount1-fwinv-bmc.json": {"firmware": 1},
    "dmtf-rackmount1-powersubsystem-psu-bay1.json": {"sensors": 1, "psus": 1},
    "dmtf-rackmount1-sel-log1-entries.json": {"log_entries": 2},
    "dmtf-rackmount1-system.json": {"systems": 1},
    "dmtf-rackmount1-thermalsubsystem-fan-bay1.json": {"sensors": 1},
    "dmtf-rackmount1-updateservice.json": {},
    "openbmc-bmcweb-sel-entries.json": {"log_entries": 1},
    "telegraf-dell-r640-chassis.json": {"chassis": 1},
    "telegraf-dell-r640-power.json": {"sensors": 5, "psus": 1},
    "telegraf-dell-r640-system.json": {"systems": 1},
    "telegraf-dell-r640-thermal.json": {"sensors": 17},
    "telegraf-hpe-dl360g10-system.json": {"systems": 1},
    "telegraf-hpe-dl360g10-thermal.json": {"sensors": 5},
    "telegraf-powersubsystem-psu-warning.json": {"sensors": 1, "psus": 1},
}


def test_every_sample_listed_with_sidecar():
    names = {f for f in os.listdir(FIX) if f.endswith(".json")}
    assert names == set(SAMPLES)
    for f in names:
        assert os.path.exists(os.path.join(FIX, f[:-5] + ".source.txt"))


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_samples_counts(name):
    out = parse(name)
    got = {k: len(v) for k, v in out.items() if v}
    assert got == SAMPLES[name]


def test_system_fields():
    s = parse("dmtf-rackmount1-system.json")["systems"][0]
    assert s["id"] == "437XR1138R2" and s["power_state"] == "On"
    assert s["health"] == "OK" and s["health_rollup"] in ("OK", "Warning", "Critical")
    assert s["bios_version"] and s["serial"]
    dell = parse("bmclib-dell-r6515-system.json")["systems"][0]
    assert dell["id"] == "System.Embedded.1" and dell["model"]


def test_thermal_absent_sensor_and_thresholds():
    sensors = parse("dmtf-rackmount1-chassis-thermal.json")["sensors"]
    cpu2 = [s for s in sensors if s["name"] == "CPU2 Temp"][0]
    assert cpu2["status"] == "not_present" and cpu2["reading"] is None
    intake = [s for s in sensors if s["name"] == "Chassis Intake Temp"][0]
    assert intake["thresholds"] == {"lnr": 0.0, "lcr": 5.0, "lnc": 10.0, "unc": 30.0, "ucr": 40.0, "unr": 50.0}
    assert intake["reading"] == 25.0 and intake["unit"] == "C" and intake["type"] == "temperature"


def test_fans_legacy_and_new():
    hpe = parse("telegraf-hpe-dl360g10-thermal.json")["sensors"]
    fan = [s for s in hpe if s["type"] == "fan"][0]
    assert fan["unit"] == "%" and fan["reading"] == 23.0
    new = parse("dmtf-rackmount1-thermalsubsystem-fan-bay1.json")["sensors"][0]
    assert (new["type"], new["reading"], new["unit"], new["status"]) == ("fan", 2200.0, "RPM", "ok")


def test_psus_health_and_serials():
    warn = parse("telegraf-powersubsystem-psu-warning.json")
    assert warn["psus"][0]["health"] == "Warning" and warn["sensors"][0]["status"] == "non_critical"
    assert warn["psus"][0]["serial"]
    dell = parse("telegraf-dell-r640-power.json")["psus"][0]
    assert dell["name"] == "PS1 Status" and dell["health"] == "OK" and dell["firmware_version"] == "00.1B.53"


def test_health_case_insensitive():
    assert _redfish.health("Ok") == "OK" and _redfish.health("ok") == "OK"
    assert _redfish.health("WARNING") == "Warning" and _redfish.health("critical") == "Critical"
    assert _redfish.health(None) is None and _redfish.health(3) is None and _redfish.health("weird") is None
    doc = {
        "@odata.type": "#ComputerSystem.v1_0_0.ComputerSystem",
        "Id": "1",
        "Status": {"Health": "ok", "HealthRollup": "CRITICAL"},
    }
    s = _redfish.parse_document(doc)["systems"][0]
    assert s["health"] == "OK" and s["health_rollup"] == "Critical"


def test_log_entries_and_expanded_collection():
    e = parse("openbmc-bmcweb-sel-entries.json")["log_entries"][0]
    assert e == {
        "id": "16",
        "created": "2024-08-20T14:41:39+00:00",
        "severity": "OK",
        "message": "BMC SW update",
        "message_id": "BMC SW update",
        "entry_type": "SEL",
        "entry_code": "Assert",
        "sensor_type": "Version Change",
        "sensor_number": 2,
        "resolved": False,
    }


def test_dmtf_sel_log_entries_keep_severity_sensor_and_time():
    """DMTF public-rackmount1 Log1 entries (SOURCE in the sidecar): the values are the mockup's own fields."""
    es = parse("dmtf-rackmount1-sel-log1-entries.json")["log_entries"]
    assert [(e["id"], e["severity"], e["sensor_type"], e["sensor_number"], e["created"]) for e in es] == [
        ("1", "Critical", "Temperature", 1, "2012-03-07T14:44:00Z"),
        ("2", "Critical", "Temperature", 2, "2012-03-07T14:45:00Z"),
    ]
    assert es[0]["entry_code"] == "Upper Critical - going high" and es[0]["message"] == "Temperature threshold exceeded"
    # garbled members: no traceback, nothing invented
    odd = {"Members": [{"@odata.type": "#LogEntry.v1_14_0.LogEntry", "Id": 7, "Severity": 42, "SensorNumber": "x"}]}
    (e,) = _redfish.parse_document(odd)["log_entries"]
    assert e["sensor_number"] is None and e["created"] is None and e["severity"] in (None, "42")


def test_firmware_inventory():
    fw = parse("dmtf-rackmount1-fwinv-bmc.json")["firmware"][0]
    assert fw["id"] == "BMC" and fw["version"] and fw["updateable"] in (True, False)


def test_leak_detector_and_group():
    det = {
        "@odata.type": "#LeakDetector.v1_1_0.LeakDetector",
        "Id": "CP0",
        "Name": "Cold plate 0",
        "DetectorState": "Critical",
        "Status": {"State": "Enabled", "Health": "critical"},
    }
    out = _redfish.parse_document(det)
    assert out["leak_detectors"][0]["state"] == "Critical" and out["leak_detectors"][0]["health"] == "Critical"
    assert out["sensors"][0]["type"] == "leak" and out["sensors"][0]["status"] == "critical"
    group = {
        "@odata.type": "#LeakDetection.v1_0_0.LeakDetection",
        "LeakDetectorGroups": [
            {
                "Detectors": [
                    {"DeviceName": "Tray 1", "DetectorState": "OK"},
                    {"DeviceName": "Tray 2", "DetectorState": "Warning"},
                ]
            }
        ],
    }
    g = _redfish.parse_document(group)
    assert [d["state"] for d in g["leak_detectors"]] == ["OK", "Warning"]
    assert [s["status"] for s in g["sensors"]] == ["ok", "non_critical"]


def test_memory_and_sensor_resources():
    mem = {
        "@odata.type": "#Memory.v1_17_0.Memory",
        "Id": "DIMM0",
        "SerialNumber": "ABC",
        "Status": {"Health": "Warning"},
    }
    assert _redfish.parse_document(mem)["memory"][0] == {
        "id": "DIMM0",
        "name": None,
        "serial": "ABC",
        "part": None,
        "capacity_mib": None,
        "health": "Warning",
        "state": None,
    }
    sensor = {
        "@odata.type": "#Sensor.v1_7_0.Sensor",
        "Name": "GPU0 Temp",
        "ReadingType": "Temperature",
        "Reading": 91,
        "ReadingUnits": "Cel",
        "Thresholds": {"UpperCritical": {"Reading": 90}},
        "Status": {"State": "Enabled", "Health": "Critical"},
    }
    s = _redfish.parse_document(sensor)["sensors"][0]
    assert (s["type"], s["reading"], s["unit"], s["status"], s["thresholds"]) == (
        "temperature",
        91.0,
        "C",
        "critical",
        {"ucr": 90.0},
    )


def test_line_input_loss_is_critical():
    psu = {
        "@odata.type": "#PowerSupply.v1_5_0.PowerSupply",
        "Id": "PSU1",
        "LineInputStatus": "LossOfInput",
        "Status": {"State": "Enabled", "Health": "OK"},
    }
    s = _redfish.parse_document(psu)["sensors"][0]
    assert s["status"] == "critical" and s["states"] == ["LineInputStatus: LossOfInput"]


def test_odata_type_and_unknown():
    assert _redfish.odata_type({"@odata.type": "#Power.v1_5_0.PowerSupply"}) == "PowerSupply"
    assert _redfish.odata_type({}) is None
    assert _redfish.parse_document({"@odata.type": "#Foo.v1.Foo"}) == _redfish.empty()
    for bad in (None, [], "x", 3):
        with pytest.raises(ParseError):
            _redfish.parse_document(bad)


def test_wrong_types_inside_resources():
    weird = {
        "@odata.type": "#Thermal.v1_0_0.Thermal",
        "Temperatures": [1, "x", {"Name": 5, "ReadingCelsius": "hot", "Status": "OK"}],
        "Fans": {"a": 1},
    }
    out = _redfish.parse_document(weird)
    assert len(out["sensors"]) == 1 and out["sensors"][0]["reading"] is None


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
_types = st.sampled_from(["#%s.v1_0_0.%s" % (t, t) for t in _redfish.PARSERS] + ["#X.Y", 3, None])


@seed(20261202)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _types,
    st.dictionaries(
        st.sampled_from(
            [
                "Status",
                "Temperatures",
                "Fans",
                "PowerSupplies",
                "Members",
                "Id",
                "Name",
                "SpeedPercent",
                "Thresholds",
                "LeakDetectorGroups",
                "Voltages",
                "PowerControl",
                "DetectorState",
            ]
        ),
        _json,
        max_size=6,
    ),
)
def test_fuzz(otype, body):
    doc = dict(body)
    doc["@odata.type"] = otype
    try:
        out = _redfish.parse_document(doc)
    except ParseError:
        return
    assert isinstance(out, dict) and isinstance(out["sensors"], list)
