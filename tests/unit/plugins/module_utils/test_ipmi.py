from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import ipmi as _ipmi
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")


def fx(folder, name):
    with open(os.path.join(FIX, folder, name), encoding="utf-8") as fh:
        return fh.read()


def by_name(sensors, name):
    return [s for s in sensors if s["name"] == name]


# ------------------------------------------------------------------------------------------ sdr

# file -> (sensor count, not_present count, statuses other than ok/not_present)
SDR_SAMPLES = {
    "datakit-dell-r620-sdr-elist.txt": (139, 63),
    "datakit-dell-r620-sdr.txt": (139, 63),
    "datakit-dell-r740-sdr.txt": (199, 98),
    "datakit-huawei-rh2288v3-sdr-elist.txt": (146, 65),
    "hpe-proliant-sdr-type-power-supply.txt": (3, 0),
    "intel-s2600-sdr-v1.txt": (89, 15),
    "telegraf-ibm-systemx-sdr-v1.txt": (133, 2),
    "telegraf-sdr-elist-v2-with-unable-to-send.txt": (7, 1),
    "telegraf-sdr-v1-with-unable-to-send.txt": (9, 2),
    "openipmi-sim-sdr-elist-faults.txt": (8, 0),
    "openipmi-sim-sdr-faults.txt": (8, 0),
}
FAULTY = ("openipmi-sim-sdr-elist-faults.txt", "openipmi-sim-sdr-faults.txt")


def test_every_sdr_sample_is_listed():
    names = {f for f in os.listdir(os.path.join(FIX, "ipmitool-sdr")) if not f.endswith(".source.txt")}
    assert names == set(SDR_SAMPLES)
    for f in names:
        assert os.path.exists(os.path.join(FIX, "ipmitool-sdr", f[:-4] + ".source.txt"))


@pytest.mark.parametrize("name", sorted(SDR_SAMPLES))
def test_sdr_samples(name):
    count, ns = SDR_SAMPLES[name]
    sensors = _ipmi.parse_sdr(fx("ipmitool-sdr", name))
    assert len(sensors) == count
    assert sum(s["status"] == "not_present" for s in sensors) == ns
    if name not in FAULTY:  # these hosts are healthy: nothing worse than ok / not_present
        assert {s["status"] for s in sensors} <= {"ok", "not_present"}
    for s in sensors:
        assert set(s) >= {"name", "type", "reading", "unit", "status", "states", "thresholds"}


def test_sdr_elist_values():
    sensors = _ipmi.parse_sdr(fx("ipmitool-sdr", "datakit-dell-r620-sdr-elist.txt"))
    fan = by_name(sensors, "Fan1A RPM")[0]
    assert (fan["type"], fan["reading"], fan["unit"], fan["number"], fan["entity"]) == (
        "fan",
        2160.0,
        "RPM",
        0x30,
        "7.1",
    )
    temps = by_name(sensors, "Temp")
    assert [t["entity"] for t in temps] == ["3.1", "3.2"]  # duplicate names stay apart
    sel = by_name(sensors, "SEL")[0]
    assert sel["status"] == "not_present" and sel["reading"] is None
    vcore = by_name(sensors, "VCORE PG")[0]
    assert vcore["states"] == ["State Deasserted"] and vcore["status"] == "ok"


def test_sdr_unable_to_send_lines_skipped_and_multi_value_reading():
    sensors = _ipmi.parse_sdr(fx("ipmitool-sdr", "telegraf-sdr-elist-v2-with-unable-to-send.txt"))
    psu = by_name(sensors, "Power Supply 1")[0]
    assert psu["type"] == "power_supply"
    assert psu["reading"] == 110.0 and psu["unit"] == "W"
    assert psu["states"] == ["Presence detected"] and psu["status"] == "ok"
    intr = by_name(sensors, "Intrusion")[0]
    assert intr["type"] == "intrusion" and intr["status"] == "ok" and intr["states"] == []
    cur = by_name(sensors, "Current 1")[0]
    assert (cur["type"], cur["reading"], cur["unit"]) == ("current", 7.2, "A")


def test_sdr_three_ns_spellings_and_negative_temps():
    sensors = _ipmi.parse_sdr(fx("ipmitool-sdr", "intel-s2600-sdr-v1.txt"))
    margin = by_name(sensors, "P1 Therm Margin")[0]
    assert margin["reading"] == -65.0 and margin["unit"] == "C" and margin["type"] == "temperature"
    assert by_name(sensors, "System Airflow")[0]["unit"] == "CFM"


# described in formats.md 7.2 (the real sample is kept back): a failed PSU with status 'ok'
PSU_FAILED = """\
Power Supply 1   | 06h | ok  | 10.1 | 0 Watts, Presence detected, Failure detected
Power Supply 2   | 07h | ok  | 10.2 | 140 Watts, Presence detected
Power Supplies   | 08h | ok  | 10.3 | Redundancy Lost
Fan 1            | 30h | lcr | 29.1 | 0 RPM
Fan 2            | 31h | ns  | 29.2 | No Reading
Temp 4           | 11h | ns  |  8.1 | Disabled
GPU Temp         | 12h | unr |  3.1 | 105 degrees C
CPU Temp         | 13h | unc |  3.2 | 88 degrees C
Leak Detect      | 40h | ok  | 30.1 | State Deasserted, State Asserted
Coolant Leak     | 41h | ok  | 30.2 | State Deasserted
"""


def test_failed_psu_with_ok_status_is_critical():
    sensors = _ipmi.parse_sdr(PSU_FAILED)
    psu1 = by_name(sensors, "Power Supply 1")[0]
    assert psu1["status"] == "critical"
    assert psu1["states"] == ["Presence detected", "Failure detected"]
    assert psu1["type"] == "power_supply" and psu1["reading"] == 0.0
    assert by_name(sensors, "Power Supply 2")[0]["status"] == "ok"
    assert by_name(sensors, "Power Supplies")[0]["status"] == "non_critical"
    assert by_name(sensors, "Fan 1")[0]["status"] == "critical"
    assert by_name(sensors, "Fan 2")[0]["status"] == "not_present"
    assert by_name(sensors, "Temp 4")[0]["status"] == "not_present"
    assert by_name(sensors, "GPU Temp")[0]["status"] == "non_recoverable"
    assert by_name(sensors, "CPU Temp")[0]["status"] == "non_critical"
    leak = by_name(sensors, "Leak Detect")[0]
    assert leak["type"] == "leak" and leak["status"] == "critical"
    assert by_name(sensors, "Coolant Leak")[0]["status"] == "ok"


def test_sdr_three_column_statuses_and_raw_discrete():
    text = (
        "fan1_rpm         | 0 RPM             | cr\n"
        "FAN3             | no reading        | ns\n"
        "Chassis Intru    | 0x01              | ok\n"
        "PS1 Status       | 0x03              | ok\n"
        "PS2 Status       | 0x01              | ok\n"
        "Leak Sensor      | 0x02              | ok\n"
        "VBAT             | 2.50 Volts        | nc\n"
    )
    s = {x["name"]: x for x in _ipmi.parse_sdr(text)}
    assert s["fan1_rpm"]["status"] == "critical" and s["fan1_rpm"]["type"] == "fan"
    assert s["FAN3"]["status"] == "not_present"
    assert s["Chassis Intru"]["status"] == "non_critical" and s["Chassis Intru"]["type"] == "intrusion"
    assert s["PS1 Status"]["status"] == "critical" and "Failure detected" in s["PS1 Status"]["states"]
    assert s["PS2 Status"]["status"] == "ok"
    assert s["Leak Sensor"]["status"] == "critical"
    assert s["VBAT"]["status"] == "non_critical" and s["VBAT"]["unit"] == "V"


def test_sensor_ten_columns():
    sensors = _ipmi.parse_sdr(fx("ipmitool-sensor", "smfc-supermicro-x11-sensor-fans.txt"))
    assert len(sensors) == 6
    fan1 = sensors[0]
    assert fan1["reading"] == 500.0 and fan1["unit"] == "RPM" and fan1["status"] == "ok"
    assert fan1["thresholds"] == {"lnr": 0.0, "lcr": 100.0, "lnc": 200.0, "unc": 1600.0, "ucr": 1700.0, "unr": 1800.0}
    fan3 = by_name(sensors, "FAN3")[0]
    assert fan3["status"] == "not_present" and fan3["reading"] is None and fan3["thresholds"] == {}


@pytest.mark.parametrize("name", FAULTY + ("openipmi-sim-sensor-faults.txt",))
def test_emulator_faults_in_every_layout(name):
    folder = "ipmitool-sensor" if "sensor-" in name else "ipmitool-sdr"
    s = {x["name"]: x for x in _ipmi.parse_sdr(fx(folder, name))}
    expect = {
        "Inlet Temp": "ok",
        "GPU0 Temp": "critical",
        "GPU1 Temp": "ok",
        "FAN1": "critical",
        "FAN2": "ok",
        "PSU1 Status": "critical",  # status column 'ok' (or a raw state word), failure in the states
        "PSU2 Status": "ok",
        "Leak Detect": "critical",
    }
    assert {k: v["status"] for k, v in s.items()} == expect
    assert "Failure detected" in s["PSU1 Status"]["states"] and s["Leak Detect"]["type"] == "leak"
    assert s["FAN1"]["reading"] == 800.0 and s["GPU0 Temp"]["reading"] == 90.0


def test_sensor_discrete_hex_status():
    line = "PS1 Status       | 0x1        | discrete   | 0x0100| na      | na      | na      | na      | na  | na\n"
    s = _ipmi.parse_sdr(line)[0]
    assert s["type"] == "power_supply" and s["states"] == ["Presence detected"] and s["status"] == "ok"
    word_only = _ipmi.parse_sdr("PS2 Status | na | discrete | 0x0300| na | na | na | na | na | na\n")[0]
    assert word_only["status"] == "critical"


# ------------------------------------------------------------------------------------------ sel

SEL_SAMPLES = {
    "fluentd-comment-sel-elist-cmos-battery-lcr.txt": 2,
    "hp-dl360-ilo-sel-list-memory-ecc.txt": 2,
    "intel-s2600-sel-elist-fan-psu-redundancy.txt": 49,
    "openbmc-npcm7xx-sel-list-preinit-fans.txt": 4,
    "supermicro-x10-sel-list-12h-tz-fans.txt": 23,
    "openipmi-sim-sel-elist.txt": 4,
    "openipmi-sim-sel-list.txt": 4,
}


@pytest.mark.parametrize("name", sorted(SEL_SAMPLES))
def test_sel_samples(name):
    text = fx("ipmitool-sel", name)
    assert _ipmi.looks_like(text) == "sel"
    events = _ipmi.parse_sel(text)
    assert len(events) == SEL_SAMPLES[name]
    for e in events:
        assert e["direction"] in ("asserted", "deasserted")
        assert e["severity"] in ("ok", "non_critical", "critical", "non_recoverable")


def test_sel_hex_ids_and_types():
    events = _ipmi.parse_sel(fx("ipmitool-sel", "intel-s2600-sel-elist-fan-psu-redundancy.txt"))
    assert [e["id"] for e in events] == list(range(1, 50))
    e = events[0x29 - 1]
    assert (e["sensor_type"], e["sensor"], e["event"], e["severity"]) == (
        "Power Supply",
        "PS1 Status",
        "Power Supply AC lost",
        "critical",
    )
    fan = events[0xC - 1]
    assert (fan["sensor_type"], fan["sensor"], fan["sensor_number"]) == ("Fan", "#0x38", 0x38)
    assert events[3]["sensor"] == "#0x0c"  # another fan: SEL pairing by (sensor, event) keeps them apart
    assert fan["event"] == "Lower Critical going low" and fan["severity"] == "critical"
    assert events[0xB - 1]["severity"] == "non_critical"  # Lower Non-critical going low
    assert events[0x1A - 1]["direction"] == "deasserted" and events[0x1A - 1]["severity"] == "ok"
    mgmt = events[0xD - 1]
    assert mgmt["sensor_type"] == "Management Subsystem Health" and mgmt["sensor"] == "BMC FW Health"
    empty = events[0x12 - 1]
    assert empty["event"] is None and empty["sensor_type"] == "Version Change"
    assert events[0]["time"] == "2014-06-03T17:38:05"
    assert events[0x1B - 1]["severity"] == "ok"  # Power off/down is an operator action


def test_sel_preinit_and_12h_tz():
    pre = _ipmi.parse_sel(fx("ipmitool-sel", "openbmc-npcm7xx-sel-list-preinit-fans.txt"))
    assert all(e["time"] is None and e["preinit_seconds"] == 53 for e in pre)
    tz = _ipmi.parse_sel(fx("ipmitool-sel", "supermicro-x10-sel-list-12h-tz-fans.txt"))
    assert tz[0]["id"] == 0x23 and tz[0]["time"] == "2024-12-06T22:06:50-05:00"
    assert tz[1]["severity"] == "non_recoverable"
    last = tz[-1]
    assert last["time"] == "2025-09-11T18:57:38-04:00" and last["event"] == "General Chassis intrusion"
    unknown = [e for e in tz if e["sensor_type"] == "Unknown"]
    assert unknown and unknown[0]["sensor_number"] == 0xFF and unknown[0]["event"] is None


def test_sel_reading_threshold_column():
    events = _ipmi.parse_sel(fx("ipmitool-sel", "fluentd-comment-sel-elist-cmos-battery-lcr.txt"))
    assert [e["id"] for e in events] == [0x842, 0x843]
    assert events[1]["reading"] == 2.70 and events[1]["threshold"] == 2.70
    assert events[1]["sensor"] == "P3V_BAT" and events[1]["severity"] == "critical"


def test_sel_interleaved_errors_oem_and_times():
    text = (
        "Unable to send command: Invalid argument\n"
        "   1 | 12/06/24 | 22:06:50 | Power Supply PSU1 Status | Failure detected | Asserted\n"
        "   2 | 12/06/2024 | 12:00:01 AM UTC | Fan FAN1 | Lower Critical going low  | Asserted\n"
        "   3 | Unspecified | Unspecified | Memory #0x10 | Uncorrectable ECC | Asserted\n"
        "   4 | 06/03/2014 | 17:38:05 | OEM record e0 | 000157 | 01020304\n"
        "garbage | here\n"
    )
    ev = _ipmi.parse_sel(text)
    assert [e["id"] for e in ev] == [1, 2, 3, 4]
    assert ev[0]["time"] == "2024-12-06T22:06:50" and ev[0]["severity"] == "critical"
    assert ev[1]["time"] == "2024-12-06T00:00:01Z"
    assert ev[2]["time"] is None
    assert ev[3]["sensor_type"] == "OEM" and ev[3]["direction"] is None


def test_sel_leak_sensor_state_asserted_is_critical():
    text = (
        "   5 | 12/02/26 | 13:00:30 UTC | Cooling Device Leak Detect | State Asserted | Asserted\n"
        "   6 | 12/02/26 | 13:05:30 UTC | Cooling Device Leak Detect | State Asserted | Deasserted\n"
        "   7 | 12/02/26 | 13:05:30 UTC | Cooling Device Pump Status | State Asserted | Asserted\n"
    )
    ev = _ipmi.parse_sel(text)
    assert [e["severity"] for e in ev] == ["critical", "ok", "ok"]
    assert (
        ev[0]["sensor_type"] == "Cooling Device"
        and ev[0]["sensor"] == "Leak Detect"
        and ev[0]["time"] == "2026-12-02T13:00:30Z"
    )


def test_sel_empty_and_no_entries():
    assert _ipmi.parse_sel("") == []
    assert _ipmi.parse_sel("SEL has no entries\n") == []
    with pytest.raises(ParseError):
        _ipmi.parse_sel("xyz | b | c | d\n")


def test_emulator_sel_c_locale():
    ev = _ipmi.parse_sel(fx("ipmitool-sel", "openipmi-sim-sel-elist.txt"))
    assert [e["time"] is None for e in ev] == [True, True, False, False]
    assert ev[0]["reading"] == 85.0 and ev[0]["threshold"] == 80.0 and ev[0]["preinit_seconds"] == 1723
    assert (
        ev[2]["time"] == "2026-12-02T13:10:42Z" and ev[2]["sensor"] == "PSU1 Status" and ev[2]["severity"] == "critical"
    )
    assert ev[3]["sensor"] == "Leak Detect" and ev[3]["severity"] == "critical"
    plain = _ipmi.parse_sel(fx("ipmitool-sel", "openipmi-sim-sel-list.txt"))
    assert (plain[2]["sensor_type"], plain[2]["sensor_number"]) == ("Power Supply", 6)


def test_sel_info():
    info = _ipmi.parse_sel_info(fx("ipmitool-sel", "supermicro-x10-sel-info.txt"))
    assert info["entries"] == 104 and info["percent_used"] == 16 and info["overflow"] is False
    assert info["free_space_bytes"] == 8160
    emu = _ipmi.parse_sel_info(fx("ipmitool-sel", "openipmi-sim-sel-info.txt"))
    assert (emu["entries"], emu["free_space_bytes"], emu["overflow"]) == (4, 15936, False)
    full = _ipmi.parse_sel_info("SEL Information\nEntries : 3639\nPercent Used : 100%\nOverflow : true \n")
    assert full["overflow"] is True and full["percent_used"] == 100


# ------------------------------------------------------------------------------------------ mc info / fru


def test_mc_info_samples():
    cisco = _ipmi.parse_mc_info(fx("ipmitool-mc-info", "cisco-ucs-c200m2-mc-info.txt"))
    assert cisco["firmware_revision"] == "1.04" and cisco["manufacturer_id"] == 5771
    assert cisco["manufacturer"] == "Cisco Systems"  # 'Unknown (0x168B)' resolved by IANA id
    assert cisco["product"] is None and cisco["product_id"] == 5
    assert cisco["aux_firmware_rev_info"] == ["0x00", "0x01", "0xb4", "0x0a"]
    assert len(cisco["additional_device_support"]) == 6
    hp = _ipmi.parse_mc_info(fx("ipmitool-mc-info", "hp-ilo-mc-info.txt"))
    assert (hp["manufacturer"], hp["firmware_revision"], hp["product_id"]) == ("Hewlett-Packard", "1.28", 8192)
    assert hp["aux_firmware_rev_info"] == []
    emu = _ipmi.parse_mc_info(fx("ipmitool-mc-info", "openipmi-sim-mc-info.txt"))
    assert (emu["manufacturer"], emu["manufacturer_id"], emu["firmware_revision"]) == (
        "MontaVista Software, Inc.",
        4753,
        "9.08",
    )
    assert emu["product"] is None and emu["product_id"] == 3842


# hand-made in the layout of ipmitool lib/ipmi_fru.c (no real sample was found)
FRU = """\
FRU Device Description : Builtin FRU Device (ID 0)
 Chassis Type          : Rack Mount Chassis
 Chassis Part Number   : CSE-420GP
 Chassis Serial        : C420GP12345
 Board Mfg Date        : Mon Jan  1 00:00:00 2024
 Board Mfg             : Supermicro
 Board Product         : X13DEG-OAD
 Board Serial          : BOARD-SN-1
 Board Part Number     : X13DEG-OAD
 Product Manufacturer  : Supermicro
 Product Name          : SYS-821GE-TNHR
 Product Part Number   : SYS-821GE-TNHR
 Product Version       : 0123456789
 Product Serial        : PROD-SN-1
 Product Asset Tag     : N/A

FRU Device Description : PSU1 (ID 1)
 Board Mfg             : Delta
 Board Product         : PWS-3K05
 Board Serial          : P3K05AB123
 Board Part Number     : PWS-3K05-1R

FRU Device Description : PSU2 (ID 2)
 Device not present (Requested sensor, data, or record not found)
"""


def test_fru_real_output():
    fru = _ipmi.parse_fru(fx("ipmitool-fru", "openipmi-sim-fru-print.txt"))
    assert len(fru) == 1
    f = fru[0]
    assert (f["name"], f["id"], f["present"]) == ("Builtin FRU Device", 0, True)
    assert (f["serial"], f["board_serial"], f["chassis_serial"]) == ("PRD-0001", "BRD-0001", "CHS-0001")
    assert (f["product"], f["part"], f["manufacturer"], f["version"]) == (
        "GPU-NODE-8X",
        "GN8X-PN",
        "gpuops emulator",
        "1.0",
    )


def test_fru_blocks():
    fru = _ipmi.parse_fru(FRU)
    assert [f["name"] for f in fru] == ["Builtin FRU Device", "PSU1", "PSU2"]
    assert fru[0]["serial"] == "PROD-SN-1" and fru[0]["board_serial"] == "BOARD-SN-1"
    assert fru[0]["product"] == "SYS-821GE-TNHR" and fru[0]["asset_tag"] is None
    assert fru[1]["serial"] == "P3K05AB123" and fru[1]["product"] == "PWS-3K05" and fru[1]["present"] is True
    assert fru[2]["present"] is False and fru[2]["serial"] is None
    assert _ipmi.looks_like(FRU) == "fru"


# ------------------------------------------------------------------------------------------ broken input


@pytest.mark.parametrize(
    "fn", [_ipmi.parse_sdr, _ipmi.parse_sel, _ipmi.parse_mc_info, _ipmi.parse_fru, _ipmi.parse_sel_info]
)
def test_broken_inputs(fn):
    assert fn("") in ([], {})
    assert fn("\n\n  \n") in ([], {})
    with pytest.raises(ParseError):
        fn(None)  # type: ignore[arg-type]
    for bad in ("\x00\xff garbage without structure\n", "\ufffd\ufffd\n"):
        try:
            fn(bad)
        except ParseError:
            pass


def test_truncated_and_huge():
    text = fx("ipmitool-sdr", "datakit-dell-r620-sdr-elist.txt")
    cut = _ipmi.parse_sdr(text[: len(text) // 2])
    assert 0 < len(cut) < 139
    huge = _ipmi.parse_sdr("\n".join([text] * 200))
    assert len(huge) == 139 * 200
    with pytest.raises(ParseError):
        _ipmi.parse_sdr("Unable to send command: Invalid argument\n")


@seed(20261202)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(list("|:0123456789abx ., \n-/APMhnsokcr") + ["Pre-Init", " | ", "0x", "\n"]), max_size=80)
)
def test_fuzz_only_results_or_parse_error(parts):
    text = "".join(parts)
    for fn in (_ipmi.parse_sdr, _ipmi.parse_sel, _ipmi.parse_mc_info, _ipmi.parse_fru, _ipmi.parse_sel_info):
        try:
            out = fn(text)
        except ParseError:
            continue
        assert isinstance(out, (list, dict))


def test_every_fixture_has_a_sidecar():
    folders = [d for d in os.listdir(FIX) if d.startswith("ipmitool-")]
    assert {"ipmitool-sdr", "ipmitool-sel", "ipmitool-sensor", "ipmitool-mc-info", "ipmitool-fru"} <= set(folders)
    for d in folders:
        for f in os.listdir(os.path.join(FIX, d)):
            if not f.endswith(".source.txt"):
                assert os.path.exists(os.path.join(FIX, d, f.rsplit(".", 1)[0] + ".source.txt")), (d, f)
