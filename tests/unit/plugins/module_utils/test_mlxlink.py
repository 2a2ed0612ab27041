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
