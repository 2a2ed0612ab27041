# Unit tests for plugins/module_utils/parsers/mlxlink.py and _ethtool_module.py (real outputs + broken variants).
from __future__ import annotations

import os

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import ethtool as E
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import mlxlink as M
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.normpath(os.path.join(HERE, "..", "..", "..", "fixtures"))


def fx(kind, name):
    with open(os.path.join(FIX, kind, name), encoding="utf-8") as fh:
        return fh.read()


def test_every_fixture_has_its_source_note():
    for kind in ("mlxlink", "ethtool-m", "ethtool-S"):
        names = os.listdir(os.path.join(FIX, kind))
        for n in names:
            if n.endswith(".txt") and not n.endswith(".source.txt"):
                assert n[:-4] + ".source.txt" in names, (kind, n)


def test_mlxlink_bf3_dac_real_sentinels_only():
    r = M.parse_mlxlink(fx("mlxlink", "sigcomm26-bf3-qsfp28-dac-no-ddm.txt"), "x")
    assert (r["state"], r["speed"], r["width"], r["fw_version"]) == ("Active", "100G", "4x", "32.43.2402")
    assert r["recommendation"] == "No issue was observed"
    mod = r["module"]
    assert mod["ddm"] is False and mod["rx_power_dbm"] == [] and mod["temperature_c"] is None
    assert (mod["vendor"], mod["part_number"], mod["cable_type"]) == ("FS", "Q28-PC03", "Passive copper cable")
    phy = r["phy"]
    # 15E-255 is mlxlink's "no error counted": BER 0, never 15e-255 as a rate
    assert phy["effective_ber"] == 0.0 and phy["raw_ber"] == 0.0
    assert phy["raw_errors_per_lane"] == [0, 0, 0, 0] and phy["fec_corrected"] == 0
    assert phy["time_since_clear_min"] == 25074.8 and phy["link_down"] == 0


def test_mlxlink_ndr_osfp_zero_ddm_page_is_no_ddm():
    r = M.parse_mlxlink(fx("mlxlink", "csegpu-cx7-osfp-ndr-dac-zero-ddm.txt"), "x")
    assert r["state"] == "Active" and r["speed"] == "IB-NDR"  # trailing spaces stripped
    assert r["module"]["ddm"] is False and r["module"]["thresholds"]["rx_power_dbm"] is None
    assert r["module"]["rx_los"] == [1, 0, 1, 1]
    assert r["phy"] is None  # no -c


def test_mlxlink_optical_values_and_thresholds():
    r = M.parse_mlxlink(fx("mlxlink", "sichek-osfp-optical-module-excerpt.txt"), "x")
    mod = r["module"]
    assert mod["ddm"] is True
    assert mod["rx_power_dbm"] == [1.886, 1.989, 2.281, 1.976]
    assert mod["thresholds"]["rx_power_dbm"] == {
        "low_alarm": -10.41, "high_alarm": 6.0, "low_warning": None, "high_warning": None
    }  # fmt: skip
    assert mod["temperature_c"] == 54.0 and mod["voltage_mv"] == 3261.2
    assert mod["bias_ma"] == [8.38] * 4 and mod["thresholds"]["tx_power_dbm"]["low_alarm"] == -8.508


def test_mlxlink_interleaved_error_and_switch_variant():
    r = M.parse_mlxlink(fx("mlxlink", "brev-cx6-hdr100-2x-show-ber-monitor-unsupported.txt"), "x")
    assert r["width"] == "2x" and r["unsupported"] is True and r["module"] is None
    assert r["messages"] == ['error: "--show_ber_monitor" option is not supported for HCA']
    s = M.parse_mlxlink(fx("mlxlink", "sonic-spectrum-25gbe-port2.txt"), "x")
    assert s["speed"] == "25GbE" and s["recommendation"] == "No issue was observed"  # trailing period dropped


def test_mlxlink_ber_variants():
    hi = M.parse_mlxlink(fx("mlxlink", "derived-osfp-ndr-high-effective-ber.txt"), "x")["phy"]
    assert hi["effective_ber"] == pytest.approx(2e-10) and hi["symbol_errors"] == 1834
    assert hi["fec_uncorrectable"] == 96512 and hi["fec_corrected"] == 91234567 + 102345678 + 88123456 + 95012345
    fec = M.parse_mlxlink(fx("mlxlink", "derived-osfp-ndr-fec-corrected-raw-ber.txt"), "x")["phy"]
    assert fec["raw_ber"] == pytest.approx(1e-7) and fec["effective_ber"] == 0.0


def test_mlxlink_ansi_and_broken_inputs():
    r = M.parse_mlxlink(fx("mlxlink", "derived-ansi-colour.txt"), "x")
    assert r["recommendation"] == "No issue was observed"
    t = M.parse_mlxlink(fx("mlxlink", "broken-truncated-mid-module.txt"), "x")
    assert t["module"]["rx_power_dbm"] == [1.886, 1.989, 2.281, 1.976]
    assert t["module"]["tx_power_dbm"] == []  # the half line has no range: not a reading
    assert t["phy"] is None
    with pytest.raises(ParseError, match="not supported"):
        M.parse_mlxlink(fx("mlxlink", "broken-not-supported-only.txt"), "x")
    with pytest.raises(ParseError):
        M.parse_mlxlink("", "x")
    garbled = fx("mlxlink", "broken-garbled.txt")
    try:
        g = M.parse_mlxlink(garbled, "x")
    except ParseError:
        return
    assert isinstance(g, dict)


@pytest.mark.parametrize(
    "text,value,zero",
    [("15E-255", 0.0, True), ("1E-7", 1e-07, False), ("4.5E-12", 4.5e-12, False), ("N/A", None, False),
     ("garbage", None, False), ("1E-99999", 0.0, True)],
)  # fmt: skip
def test_parse_ber(text, value, zero):
    r = M.parse_ber(text)
    assert r["zero"] is zero
    assert (r["value"] == pytest.approx(value)) if value is not None else r["value"] is None


def test_value_range_sentinels():
    assert M.value_range("54 [-5..75]") == ("54", (-5.0, 75.0))
    assert M.value_range("0 [0..0]") == ("0", None)
    assert M.value_range("N/A") == (None, None)
    assert M.value_range("1,2 [5..1]") == ("1,2", None)


# ------------------------------------------------------------------------------------------- ethtool -m


def test_ethtool_m_sff8636_real():
    r = E.parse_ethtool_module(fx("ethtool-m", "cumulus-qsfp28-sr4-mellanox.txt"), "x")
    assert (r["identifier"], r["vendor"], r["part_number"], r["serial"]) == (
        "0x11 (QSFP28)", "Mellanox", "MMA1B00-C100D", "MT1708FT01255"
    )  # fmt: skip
    assert r["rx_power_dbm"] == [-0.12, -0.09, 0.55, 0.55]
    assert r["tx_power_dbm"] == [1.44, 1.2, 1.26, 1.27] and r["bias_ma"] == [6.75] * 4
    assert r["temperature_c"] == 30.56 and r["voltage_v"] == 3.235
    assert r["thresholds"]["rx_power_dbm"] == {
        "high_alarm": 5.4, "low_alarm": -13.31, "high_warning": 2.4, "low_warning": -10.3
    }  # fmt: skip
    assert r["thresholds"]["temperature_c"]["high_warning"] == 70.0
    assert r["flags_on"] == [] and r["ddm"] is True and r["unsupported"] is False


def test_ethtool_m_flags_and_broken():
    r = E.parse_ethtool_module(fx("ethtool-m", "derived-qsfp28-sr4-rx-low-alarm.txt"), "x")
    assert {(f["quantity"], f["level"], f["lane"]) for f in r["flags_on"]} == {
        ("rx_power_dbm", "low_alarm", 1), ("rx_power_dbm", "low_warning", 1)
    }  # fmt: skip
    t = E.parse_ethtool_module(fx("ethtool-m", "broken-truncated.txt"), "x")
    assert t["rx_power_dbm"] == [-0.12, -0.09] and t["thresholds"] == {}
    for name in ("unsupported-netlink.txt", "unsupported-ioctl.txt"):
        u = E.parse_ethtool_module(fx("ethtool-m", name), "x")
        assert u["unsupported"] is True and u["message"]
    with pytest.raises(ParseError):
        E.parse_ethtool_module("Speed: 100000Mb/s\nDuplex: Full\n", "x")


def test_power_dbm_forms():
    assert E.power_dbm("0.9720 mW / -0.12 dBm") == -0.12
    assert E.power_dbm("0.0000 mW / -inf dBm") == -40.0
    assert E.power_dbm("0.5000 mW") == pytest.approx(-3.01)
    assert E.power_dbm("N/A") is None


def test_ethtool_stats():
    r = E.parse_ethtool_stats(fx("ethtool-S", "mlx5-roce-prio3-pfc.txt"), "x")
    assert r["rx_prio3_pause"] == 1523 and r["tx_prio3_pause"] == 2847 and r["rx_prio0_pause"] == 0
    with pytest.raises(ParseError):
        E.parse_ethtool_stats("Cannot get stats strings information: Operation not supported\n", "x")


# ------------------------------------------------------------------------ issue 37: the tools' own words


def test_mlxlink_troubleshooting_and_supported_info_as_printed():
    # rsthowto-cx5-...: a ConnectX-5 EDR HCA on IB-SDR; the values are the sample's own lines
    r = M.parse_mlxlink(fx("mlxlink", "rsthowto-cx5-edr-ib-sdr-cable-speed-not-enabled.txt"), "x")
    assert (r["state"], r["speed"], r["width"]) == ("Active", "IB-SDR", "4x")
    assert (r["status_opcode"], r["group_opcode"], r["recommendation"]) == (25, "PHY FW", "Cable speed not enabled")
    assert r["enabled_speeds"] == ["SDR"] and r["cable_speeds"] == ["SDR"]
    b = M.parse_mlxlink(fx("mlxlink", "brev-cx6-hdr100-2x-show-ber-monitor-unsupported.txt"), "x")
    assert b["enabled_speeds"] == ["HDR", "EDR", "FDR", "QDR", "SDR"]
    assert b["cable_speeds"] == ["HDR", "EDR", "FDR", "FDR10", "QDR", "DDR", "SDR"]
    assert (b["status_opcode"], b["group_opcode"], b["recommendation"]) == (0, None, "No issue was observed")
    s = M.parse_mlxlink(fx("mlxlink", "sonic-spectrum-25gbe-port2.txt"), "x")
    assert s["enabled_speeds"] == ["25G"] and s["cable_speeds"] == ["25G", "10G", "1G"]
    t = M.parse_mlxlink(fx("mlxlink", "broken-truncated-in-troubleshooting.txt"), "x")
    assert t["status_opcode"] is None and t["recommendation"] is None and t["speed"] == "IB-HDR"


@pytest.mark.parametrize(
    "text, want",
    [
        ("0x00000075 (HDR,EDR,FDR,QDR,SDR)", ["HDR", "EDR", "FDR", "QDR", "SDR"]),
        ("0x38000000 (25G)", ["25G"]),
        ("(NDR)", ["NDR"]),
        ("N/A", None),
        ("0x00000000 ()", None),
        ("0x0000007", None),
        (None, None),
    ],
)
def test_speed_list(text, want):
    assert M.speed_list(text) == want


def test_speed_gbps_orders_ib_and_ethernet_names():
    # IBTA per-lane signalling: SDR 2.5 < ... < HDR 53.125 < NDR 106.25 Gb/s; Ethernet names carry their rate
    assert M.speed_gbps("IB-SDR") == 2.5 and M.speed_gbps("HDR") == 53.125 and M.speed_gbps("IB-NDR") == 106.25
    assert M.speed_gbps("FDR10") < M.speed_gbps("FDR") < M.speed_gbps("EDR")
    assert M.speed_gbps("25GbE") == 25.0 and M.speed_gbps("100G_2X") == 100.0 and M.speed_gbps("100M") == 0.1
    assert M.speed_gbps("N/A") is None and M.speed_gbps("-") is None and M.speed_gbps(7) is None


def test_ethtool_m_without_identifier_is_read_from_its_fields():
    # issue 37: a paste that starts at "Transceiver type" (netdev thread, SOURCE in the sidecar)
    r = E.parse_ethtool_module(fx("ethtool-m", "netdev-derived-sfp-from-transceiver-type-no-light.txt"), "x")
    assert r["identifier"] is None and r["transceiver_type"] == "10G Ethernet: 10G Base-SR"
    assert r["vendor"] == "IBM-Avago" and r["rx_power_dbm"] == [-40.0] and r["tx_power_dbm"] == [-2.35]
    assert r["thresholds"]["rx_power_dbm"]["low_alarm"] == -15.02 and r["unreadable"] is None
    assert {(f["quantity"], f["level"]) for f in r["flags_on"]} == {
        ("rx_power_dbm", "low_alarm"), ("rx_power_dbm", "low_warning")
    }  # fmt: skip
    e = E.parse_ethtool_module(fx("ethtool-m", "netdev-cx3pro-sfp-rx-no-light-elided.txt"), "x")
    assert e["identifier"] == "0x03 (SFP)" and e["rx_power_dbm"] == [-40.0] and e["temperature_c"] == 32.13
    t = E.parse_ethtool_module(fx("ethtool-m", "broken-from-transceiver-type-truncated.txt"), "x")
    assert t["rx_power_dbm"] == [-40.0] and t["thresholds"] == {} and t["temperature_c"] is None
    with pytest.raises(ParseError):
        E.parse_ethtool_module(fx("ethtool-m", "broken-garbled.txt"), "x")
    with pytest.raises(ParseError):
        E.parse_ethtool_module("", "x")


def test_ethtool_m_garbage_eeprom_is_unreadable_not_alarms():
    z = E.parse_ethtool_module(fx("ethtool-m", "netdev-cx2-sfp-a2h-zeroes-garbage.txt"), "x")
    assert z["unreadable"] and "no threshold band is ordered" in z["unreadable"]
    f = E.parse_ethtool_module(fx("ethtool-m", "derived-sfp-identifier-0xff-all-ones.txt"), "x")
    assert f["unreadable"] == "identifier 0xff" and len(f["flags_on"]) == 20
    # Rx/Tx power thresholds not programmed but a real temperature/voltage band: readable (cumulus sample)
    c = E.parse_ethtool_module(fx("ethtool-m", "cumulus-qsfp-plus-sr4-finisar-no-light-inf.txt"), "x")
    assert c["unreadable"] is None
    assert E.parse_ethtool_module(fx("ethtool-m", "cumulus-qsfp28-sr4-mellanox.txt"), "x")["unreadable"] is None


def test_an_over_long_line_costs_that_line_not_the_file():
    # found by the fuzz targets: one line past MAX_LINE_CHARS used to refuse the whole output
    from ansible_collections.gpuops.cluster.plugins.module_utils._common import MAX_LINE_CHARS

    long_line = "State                           : " + "Active" * (MAX_LINE_CHARS // 6 + 1)
    base = fx("mlxlink", "rsthowto-cx5-edr-ib-sdr-cable-speed-not-enabled.txt")
    r = M.parse_mlxlink(base + long_line + "\n", "x")
    assert r["recommendation"] == "Cable speed not enabled" and r["state"] == "Active"
    e = E.parse_ethtool_module(fx("ethtool-m", "netdev-cx3pro-sfp-rx-no-light-elided.txt") + long_line + "\n", "x")
    assert e["rx_power_dbm"] == [-40.0]
