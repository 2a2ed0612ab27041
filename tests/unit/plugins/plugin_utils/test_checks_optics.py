# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Optics and link quality checks (_checks/optics.py, gpu_links.check_nvlink_speed) on real-format evidence."""

from __future__ import annotations

import copy
import os

from checks_helpers import facts, gpu, only, port, run

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import ib_optics as O
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.normpath(os.path.join(HERE, "..", "..", "..", "fixtures"))
T0 = 1764669600.0  # checks_helpers ib_at


def fx(kind, name):
    with open(os.path.join(FIX, kind, name), encoding="utf-8") as fh:
        return fh.read()


def rec_mlx(name, hca="mlx5_0"):
    errors = []
    r = O.mlxlink_record(fx("mlxlink", name), hca, "mlxlink-%s.txt" % hca, errors)
    assert not errors
    return r


def rec_eth(name, ifname="ens1f0np0"):
    errors = []
    r = O.ethtool_record(fx("ethtool-m", name), ifname, "ethtool-m-%s.txt" % ifname, errors)
    assert not errors
    return r


def with_optics(records, ib_at=T0, **kw):
    f = facts(ib_at=ib_at, **kw)
    f["ib"]["optics"] = records
    return f


def test_healthy_and_sentinels_raise_nothing():
    recs = [
        rec_mlx("derived-osfp-ndr-healthy.txt"),
        rec_mlx("sigcomm26-bf3-qsfp28-dac-no-ddm.txt", "mlx5_1"),  # N/A DDM, 15E-255
        rec_mlx("csegpu-cx7-osfp-ndr-dac-zero-ddm.txt", "mlx5_2"),  # 0 [0..0]
        rec_eth("cumulus-qsfp28-sr4-mellanox.txt"),
        rec_eth("unsupported-netlink.txt", "ens2f0np0"),
    ]
    fs = run(with_optics(recs))[0]
    assert not [x for x in fs if x["check"] in ("ib.optics", "ib.ber", "ib.congestion")], fs


def test_rx_warning_vs_alarm_mlxlink_and_ethtool():
    fs = run(with_optics([rec_mlx("derived-osfp-ndr-rx-low-warning.txt")]))[0]
    (w,) = only(fs, "ib.optics", "mlx5_0/1", "rx_power")
    assert (w["severity"], w["action"]) == ("P2", "reseat")
    assert w["evidence"]["lane"] == 2 and w["evidence"]["thresholds"]["low_warning"] == -10.41 + 3.0
    assert "CLT T-F4GS-BV0" in w["message"]
    fs = run(with_optics([rec_mlx("derived-osfp-ndr-rx-low-alarm.txt")]))[0]
    assert only(fs, "ib.optics", "mlx5_0/1", "rx_power")[0]["severity"] == "P1"
    fs = run(with_optics([rec_eth("derived-qsfp28-sr4-rx-low-warning.txt")]))[0]
    (w,) = only(fs, "ib.optics", "net:ens1f0np0", "rx_power")
    assert w["severity"] == "P2" and w["evidence"]["thresholds"]["low_warning"] == -10.3  # the module's own
    fs = run(with_optics([rec_eth("derived-qsfp28-sr4-rx-low-alarm.txt")]))[0]
    assert only(fs, "ib.optics", "net:ens1f0np0", "rx_power")[0]["severity"] == "P1"


def test_temperature_warning_and_margin_policy():
    f = with_optics([rec_mlx("derived-osfp-ndr-temp-high-warning.txt")])
    (t,) = only(run(f)[0], "ib.optics", "mlx5_0/1", "temperature")
    assert t["severity"] == "P2" and t["evidence"]["value"] == 72.0
    pol = P.merge_policy(None, {"thresholds": {"optics": {"temperature_warning_margin_c": 2}}})
    assert not only(run(f, policy=pol)[0], "ib.optics", "mlx5_0/1", "temperature")


def test_no_light_lane_is_a_sentinel():
    r = rec_mlx("derived-osfp-ndr-healthy.txt")
    r["module"]["rx_power_dbm"] = [1.9, -40.0, 2.0, 1.9]  # 0 mW on one lane (an unused lane of a split port)
    assert not only(run(with_optics([r]))[0], "ib.optics")


def test_ber_fail_and_fec_advice():
    fs = run(with_optics([rec_mlx("derived-osfp-ndr-high-effective-ber.txt")]))[0]
    (b,) = only(fs, "ib.ber", "mlx5_0/1")
    assert (b["severity"], b["action"], b["code"]) == ("P1", "reseat", "ber")
    assert b["evidence"]["fec_uncorrectable"] == 96512
    fs = run(with_optics([rec_mlx("derived-osfp-ndr-fec-corrected-raw-ber.txt")]))[0]
    (a,) = only(fs, "ib.ber", "mlx5_0/1")
    assert (a["severity"], a["code"]) == ("P3", "raw_ber")
    down = rec_mlx("derived-osfp-ndr-high-effective-ber.txt")
    down["state"] = "Down"
    assert not only(run(with_optics([down]))[0], "ib.ber")


def test_attenuation_trend_from_two_states():
    day = 86400.0
    r0 = rec_mlx("derived-osfp-ndr-healthy.txt")
    _f, hs = run(with_optics([r0], ib_at=T0))
    assert hs["optics"]["rx_history"]["mlx5_0/1"][0][0] == T0
    r1 = copy.deepcopy(r0)
    r1["module"]["rx_power_dbm"] = [1.886, 1.989 - 2.5, 2.281, 1.976]  # lane 2 lost 2.5 dB in 10 days
    fs, hs2 = run(with_optics([r1], ib_at=T0 + 10 * day), state=hs, now="2026-12-12T10:00:00Z")
    (t,) = only(fs, "ib.optics", "mlx5_0/1", "attenuation")
    assert t["severity"] == "P3" and t["evidence"]["lane"] == 2
    assert t["evidence"]["slope_db_per_day"] == -0.25 and t["evidence"]["drop_db"] == 2.5
    assert len(hs2["optics"]["rx_history"]["mlx5_0/1"]) == 2
    # the same fall within one hour: under min_span_hours, no trend yet
    fs, _hs = run(with_optics([r1], ib_at=T0 + 3600), state=hs)
    assert not only(fs, "ib.optics", "mlx5_0/1", "attenuation")
    # a small fall is not a trend
    r2 = copy.deepcopy(r0)
    r2["module"]["rx_power_dbm"][1] -= 0.5
    fs, _hs = run(with_optics([r2], ib_at=T0 + 10 * day), state=hs, now="2026-12-12T10:00:00Z")
    assert not only(fs, "ib.optics", "mlx5_0/1", "attenuation")


def roce_facts(ib_at, cnp=0, ecn=0, pause=0):
    p = port("mlx5_8", link_layer="Ethernet", rate_gbps=400.0)
    p["counters"] = dict(p.get("counters") or {}, np_cnp_sent=cnp, rp_cnp_handled=cnp, np_ecn_marked_roce_packets=ecn)
    hcas = [{"name": "mlx5_%d" % i, "fw_version": "28.39.1002", "ports": [port("mlx5_%d" % i)]} for i in range(2)]
    hcas.append({"name": "mlx5_8", "fw_version": "28.39.1002", "ports": [p]})
    f = facts(hcas=hcas, ib_at=ib_at)
    f["ib"]["netdev_counters"] = {
        "ens9f0np0": {"source": "ethtool-S-ens9f0np0.txt", "counters": {"rx_prio3_pause": pause, "tx_prio3_pause": 0}}
    }
    return f


def test_congestion_rates_between_two_readings():
    _f, hs = run(roce_facts(T0, cnp=1000, ecn=1000, pause=5000))
    assert not only(_f, "ib.congestion")  # one reading: no rate
    fs, hs2 = run(roce_facts(T0 + 300, cnp=1000 + 300 * 6000, ecn=1000, pause=5000 + 300 * 4000), state=hs)
    (pfc,) = only(fs, "ib.congestion", "net:ens9f0np0", "pfc_pause")
    assert (pfc["severity"], pfc["action"]) == ("P2", "tune") and pfc["evidence"]["per_second"] == 4000.0
    (cnp,) = only(fs, "ib.congestion", "mlx5_8/1", "cnp")
    assert cnp["evidence"]["per_second"] == 12000.0
    assert not only(fs, "ib.congestion", "mlx5_8/1", "ecn_marked")
    # quiet: small rates raise nothing; counters cleared (lower values): a new baseline, no finding
    fs, _hs = run(roce_facts(T0 + 600, cnp=1000 + 300 * 6000 + 10, ecn=1000, pause=5000 + 300 * 4000 + 5), state=hs2)
    assert not only(fs, "ib.congestion")
    fs, _hs = run(roce_facts(T0 + 600, cnp=3, ecn=1, pause=2), state=hs2)
    assert not only(fs, "ib.congestion")
    # too short an interval keeps the older reading
    fs, hs3 = run(roce_facts(T0 + 10, cnp=10**9, ecn=1000, pause=10**9), state=hs)
    assert not only(fs, "ib.congestion") and hs3["optics"]["congestion"]["net:ens9f0np0"]["collected_at"] == T0


def test_nvlink_speed_downshift():
    slow = gpu(3)
    for lk in slow["nvlink"]["links"][:4]:
        lk["speed_gbps"] = 13.281
    gl = [gpu(i) for i in range(8)]
    gl[3] = slow
    fs = run(facts(gpus=gl))[0]
    (f,) = only(fs, "gpu.nvlink", "gpu3", "speed")
    assert (f["severity"], f["action"]) == ("P2", "reset_gpu")
    assert f["evidence"]["expected_gbps"] == 26.562 and len(f["evidence"]["slow_links"]) == 4
    assert not only(run(facts())[0], "gpu.nvlink")
    # an unknown model: the fastest link of the node is the expectation (peer inference)
    for g in gl:
        g["name"] = "NVIDIA Future GPU"
    (f,) = only(run(facts(gpus=gl))[0], "gpu.nvlink", "gpu3", "speed")
    assert "fastest link" in f["rule"]


def test_policy_rejects_a_bad_optics_action():
    import pytest

    with pytest.raises(P.PolicyError, match="thresholds.optics.alarm.action"):
        P.merge_policy(None, {"thresholds": {"optics": {"alarm": {"action": "explode"}}}})
    pol = P.merge_policy(None, {"thresholds": {"nvlink_speed": {"expected_gbps": {"X9": 40.0}}}})
    assert pol["thresholds"]["nvlink_speed"]["expected_gbps"]["X9"] == 40.0


def test_ethtool_no_light_and_unprogrammed_thresholds_are_sentinels():
    r = rec_eth("cumulus-qsfp-plus-sr4-finisar-no-light-inf.txt", "swp13")
    assert r["module"]["rx_power_dbm"] == [-40.0] * 4
    assert r["module"]["thresholds"]["rx_power_dbm"]["low_alarm"] == -40.0
    assert not [x for x in run(with_optics([r]))[0] if x["check"].startswith("ib.")]


# ------------------------------------------------------------------ issue 37: optics by the tools' own words


def test_mlxlink_recommendation_is_a_finding_without_a_profile():
    # rsthowto sample: Status Opcode 25 (cable stamping class, MLNX-OS list), "Cable speed not enabled", IB-SDR
    r = rec_mlx("rsthowto-cx5-edr-ib-sdr-cable-speed-not-enabled.txt")
    fs = run(with_optics([r]))[0]
    (f,) = only(fs, "ib.optics", "mlx5_0/1", "status")
    assert (f["severity"], f["action"]) == ("P2", "replace")
    assert "Cable speed not enabled" in f["message"] and "25" in f["message"] and "IB-SDR" in f["message"]
    assert f["evidence"]["status_opcode"] == 25 and f["evidence"]["group_opcode"] == "PHY FW"
    # enabled and cable speeds both read SDR: no downshift beside the tool's verdict
    assert not only(fs, "ib.link_speed")
    # healthy real outputs, both spellings of "No issue was observed", the -E- line: nothing
    for name in ("brev-cx6-hdr100-2x-show-ber-monitor-unsupported.txt", "sonic-spectrum-25gbe-port2.txt"):
        fs = run(with_optics([rec_mlx(name)]))[0]
        assert not [x for x in fs if x["check"] in ("ib.optics", "ib.link_speed")], (name, fs)


def test_mlxlink_opcode_classes_from_policy():
    r = rec_mlx("derived-osfp-ndr-healthy.txt")
    for opcode, words, want in (
        (1, "Port closed by command", ("P3", "monitor")),
        (17, "Bad signal integrity", ("P2", "reseat")),
        (None, "Check the cable", ("P2", "reseat")),
    ):
        x = dict(r, status_opcode=opcode, recommendation=words)
        (f,) = only(run(with_optics([x]))[0], "ib.optics", "mlx5_0/1", "status")
        assert (f["severity"], f["action"]) == want, opcode
    # a truncated file says nothing: no status finding
    assert not only(run(with_optics([rec_mlx("broken-truncated-in-troubleshooting.txt")]))[0], "ib.optics")


def test_link_speed_below_enabled_and_cable_speed():
    fs = run(with_optics([rec_mlx("derived-cx6-hdr-enabled-active-sdr.txt")]))[0]
    (f,) = only(fs, "ib.link_speed", "mlx5_0/1", "speed")
    assert (f["severity"], f["action"]) == ("P2", "reseat") and "IB-SDR" in f["message"]
    assert not only(fs, "ib.optics")  # mlxlink said "No issue was observed": only the comparison speaks
    down = rec_mlx("derived-cx6-hdr-enabled-active-sdr.txt")
    down["state"] = "Down"
    assert not only(run(with_optics([down]))[0], "ib.link_speed")


def test_link_width_1x_and_against_peers():
    fs = run(with_optics([rec_mlx("derived-cx6-hdr-width-1x.txt")]))[0]
    assert only(fs, "ib.link_speed", "mlx5_0/1", "width")[0]["severity"] == "P2"
    # eight HCAs at 2x (the brev node's HDR100 design): nothing; one of three NDR ports at 2x while two run 4x: width
    brev = [rec_mlx("brev-cx6-hdr100-2x-show-ber-monitor-unsupported.txt", "mlx5_%d" % i) for i in range(8)]
    assert not only(run(with_optics(brev))[0], "ib.link_speed")
    ndr = [rec_mlx("derived-osfp-ndr-healthy.txt", "mlx5_%d" % i) for i in range(3)]
    ndr[2]["width"] = "2x"
    fs = run(with_optics(ndr))[0]
    assert [f["component"] for f in only(fs, "ib.link_speed")] == ["mlx5_2/1"]


def test_ethtool_without_identifier_gives_loss_of_light_not_a_parse_error():
    for name in (
        "netdev-derived-sfp-from-transceiver-type-no-light.txt",
        "netdev-cx3pro-sfp-rx-no-light-elided.txt",
        "broken-from-transceiver-type-truncated.txt",  # no flags, no thresholds: all Rx dark, Tx lit
    ):
        fs = run(with_optics([rec_eth(name, "eth2")]))[0]
        (f,) = only(fs, "ib.optics", "net:eth2")
        assert (f["code"], f["severity"], f["action"]) == ("no_light", "P1", "reseat"), name
        assert f["evidence"]["lanes"] == [1]
    # dark on both sides (laser off, thresholds not programmed: cumulus sample): a sentinel
    assert not only(run(with_optics([rec_eth("cumulus-qsfp-plus-sr4-finisar-no-light-inf.txt")]))[0], "ib.optics")


def test_garbage_eeprom_is_one_unreadable_finding():
    for name in ("netdev-cx2-sfp-a2h-zeroes-garbage.txt", "derived-sfp-identifier-0xff-all-ones.txt"):
        fs = only(run(with_optics([rec_eth(name, "eth1")]))[0], "ib.optics")
        assert [(f["code"], f["severity"], f["action"]) for f in fs] == [("unreadable", "P3", "monitor")], name


def test_garbled_ethtool_is_a_collector_error():
    errors = []
    assert O.ethtool_record(fx("ethtool-m", "broken-garbled.txt"), "eth3", "ethtool-m-eth3.txt", errors) is None
    assert errors and errors[0]["kind"] == "parse"
