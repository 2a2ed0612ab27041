# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 38: the ten disagreements with NVIDIA's Xid catalog, the NVLink5 decode, GSP timeouts without an Xid
line and the SXid catalogue.

Every expected action is NVIDIA's own words, quoted next to the assertion: the Xid catalog workbook
(Xid-Catalog.xlsx, sheets "Xids" trigger conditions, "Resolution Buckets", "Xid 144-150 Decode"; see
/work/shared/reference/gpu-knowledge-2026.md sections 2, 3.5, 3.6), the GPU memory error management guide [MEM]
and the Fabric Manager User Guide's SXid classes (section 4). Kernel lines are real ones (tests/fixtures/xid-kmsg,
each with its .source.txt) or keep a real line's format."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.kernel_log import parse_kernel_log
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as S
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import xid_decode
from checks_helpers import BUS, HOST, facts, gpu, only, run, xid

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "xid-kmsg")


def _read(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return fh.read()


def events(text, ts="2026-12-02T09:50:00Z"):
    evs = parse_kernel_log(text)
    for e in evs:
        e["timestamp"] = ts
    return evs


def pci(index):
    return BUS[index][4:-2].lower()


def sa(f):
    return f["severity"], f["action"]


REAL74 = _read("nvsentinel022-xid74-nvlink-registers.log").strip()
NVL5 = _read("gpud-pr1160-1174-nvlink5-xid144-145-149.log").splitlines()


def line74(index, r0=0, r2=0, r3=0, r4=0):
    regs = "(%s)" % ", ".join("0x%x" % r for r in (r0, 0, r2, r3, r4, 0, 0))
    return REAL74.replace("PCI:0003:00:00", "PCI:%s" % pci(index)).replace(
        "(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)", regs
    )


# ------------------------------------------------------------------------ 1. Xid 64: reset, then contact support


def test_d1_xid64_reset_then_contact_support_not_isolate():
    # NVIDIA: 64 RESET_GPU / CONTACT_SUPPORT ("GPU memory remapping failure": recording the remap failed)
    fs, st = run(facts(events=[xid(64, index=1)]))
    f = only(fs, "gpu.xid", "gpu1", 64)[0]
    assert sa(f) == ("P1", "reset_gpu") and "step 1/2" in f["rule"]
    S.record_gpu_reset(st, HOST, BUS[1], "S1", "2026-12-02T10:10:00Z")
    fs, st = run(facts(), state=st, now="2026-12-02T10:20:00Z")
    assert not only(fs, "gpu.xid", "gpu1", 64)  # the reset was done: no isolation until the serial changes
    fs, st = run(facts(events=[xid(64, index=1, ts="2026-12-05T09:59:00Z")]), state=st, now="2026-12-05T10:00:00Z")
    f = only(fs, "gpu.xid", "gpu1", 64)[0]
    assert sa(f) == ("P1", "contact_vendor") and "step 2/2" in f["rule"]


# ------------------------------------------------------------------------------------------ 2. Xid 74


def test_d2_xid74_hardware_bits_reset_and_reseat_only_for_field_resolution():
    # WORKFLOW_NVLINK_ERR bits 8, 9, 12, 16, 17, 24, 28: "Check link mechanical connections and re-seat if a
    # field resolution is required"; trigger conditions: "A GPU reset or node reboot is needed to clear this error"
    fs, _unused = run(facts(events=events(line74(2, r0=1 << 9))))
    f = only(fs, "gpu.xid", "gpu2", 74)[0]
    assert sa(f) == ("P1", "reset_gpu") and "field resolution" in f["rule"]


@pytest.mark.parametrize("r0,r2,r4", [(1 << 4, 0, 0), (0, 1 << 16, 0), (0, 1 << 17, 0), (0, 0, 1 << 18)])
def test_d2_xid74_decoded_faults_are_not_a_p3_monitor(r0, r2, r4):
    # ECC/parity and "if seen repeatedly" bits, seen once: no bug report yet, but "A GPU reset or node reboot is
    # needed to clear this error" (NVIDIA trigger conditions for Xid 74)
    fs, _unused = run(facts(events=events(line74(3, r0=r0, r2=r2, r4=r4))))
    assert sa(only(fs, "gpu.xid", "gpu3", 74)[0]) == ("P2", "reset_gpu")


def test_d2_xid74_benign_bits_stay_ignored():
    # "Bit 0, 23, 30: Can be safely ignored"; reg5 20/23/26/29: "Continue operation"
    fs, _unused = run(facts(events=events(line74(3, r0=1 | 1 << 23, r4=1 << 20))))
    assert sa(only(fs, "gpu.xid", "gpu3", 74)[0]) == ("P3", "none")


def test_d2_xid74_hopper_register_meanings_are_not_applied_to_a100_lines():
    # "The first, third, fourth and fifth registers are valid for Hopper-based products"
    a100 = [gpu(i, name="NVIDIA A100-SXM4-80GB", architecture="Ampere") for i in range(8)]
    fs, _unused = run(facts(gpus=a100, events=events(line74(3, r0=1 | 1 << 23))))  # "benign" on Hopper
    f = only(fs, "gpu.xid", "gpu3", 74)[0]
    assert sa(f) == ("P1", "reset_gpu") and "Hopper" in f["rule"]
    assert xid_decode.is_hopper({"name": "NVIDIA H100 80GB HBM3"}) is True
    assert xid_decode.is_hopper({"name": "NVIDIA A100-SXM4-80GB"}) is False
    assert xid_decode.is_hopper({"architecture": "Hopper", "name": "x"}) is True
    assert xid_decode.is_hopper(None) is None and xid_decode.is_hopper({}) is None


# --------------------------------------------------------------------------------- 3. Xid 79 step 3


def test_d3_xid79_third_incident_contacts_support_not_replace():
    # NVIDIA: 79 RESTART_BM / CONTACT_SUPPORT; no replacement on a count
    _fs, st = run(facts(events=[xid(79, index=3)]))
    _fs, st = run(facts(boot="b2"), state=st, now="2026-12-03T10:00:00Z")
    _fs, st = run(
        facts(boot="b2", events=[xid(79, index=3, ts="2026-12-04T09:59:00Z")]), state=st, now="2026-12-04T10:00:00Z"
    )
    _fs, st = run(facts(boot="b3"), state=st, now="2026-12-05T10:00:00Z")
    fs, _unused = run(
        facts(boot="b3", events=[xid(79, index=3, ts="2026-12-06T09:59:00Z")]), state=st, now="2026-12-06T10:00:00Z"
    )
    f = only(fs, "gpu.xid", "gpu3", 79)[0]
    assert sa(f) == ("P1", "contact_vendor") and "step 3/3" in f["rule"]


# ------------------------------------------------------------------------------------------ 4. Xid 94


def test_d4_xid94_resets_the_gpu_when_convenient():
    # trigger conditions: "It is recommended to reset the GPU when convenient. Applications can continue to be
    # run until the reset can be performed."
    text = _read("gpud-xid48-63-94-dbe-rowremap-contained.log")
    evs = [e for e in events(text) if e.get("code") == 94]
    assert evs, "the real fixture holds an Xid 94"
    for f in only(run(facts(events=evs))[0], "gpu.xid", code=94):
        assert sa(f) == ("P3", "reset_gpu") and "when convenient" in f["rule"]


# ------------------------------------------------------------------------------------------ 5. lone Xid 45


def test_d5_lone_xid45_restarts_the_fabric_manager():
    # WORKFLOW_XID_45: "Solo: RESTART_FM / Not Solo: IGNORE (follow guidance in other Xid)"
    fs, _unused = run(facts(events=[xid(45, index=2, pid="4242", process="python3")]))
    assert sa(only(fs, "gpu.xid", "gpu2", 45)[0]) == ("P2", "restart_fabric_manager")
    fs, _unused = run(facts(events=[xid(45, index=2), xid(13, index=2, pid="1", process="a")]))
    assert sa(only(fs, "gpu.xid", "gpu2", 45)[0]) == ("P3", "none")  # not solo: follow the other Xid
    # a node whose services were read and run no fabric manager (PCIe-only): nothing to restart
    f = facts(events=[xid(45, index=2)])
    f["node"]["services"] = {"nvidia-persistenced": {"running": True}}
    fs, _unused = run(f)
    assert sa(only(fs, "gpu.xid", "gpu2", 45)[0]) == ("P3", "none")


def test_d5_solo_xid45_honours_the_sites_xid_overrides():
    # docs/policy.md: xid.overrides.<code> replaces the catalogue row's severity/action; for a solo Xid 45 too
    for over, want in (
        ({"severity": "P3", "action": "monitor"}, ("P3", "monitor")),
        ({"severity": "P1", "action": "reboot"}, ("P1", "reboot")),
    ):
        pol = P.merge_policy(None, {"xid": {"overrides": {"45": over}}})
        fs, _unused = run(facts(events=[xid(45, index=2, pid="4242", process="python3")]), policy=pol)
        f = only(fs, "gpu.xid", "gpu2", 45)[0]
        assert sa(f) == want and "xid.overrides[45]" in f["rule"]
    # an override of another code leaves NVIDIA's WORKFLOW_XID_45 (Solo: RESTART_FM) in place
    pol = P.merge_policy(None, {"xid": {"overrides": {"94": {"severity": "P2", "action": "monitor"}}}})
    fs, _unused = run(facts(events=[xid(45, index=2)]), policy=pol)
    assert sa(only(fs, "gpu.xid", "gpu2", 45)[0]) == ("P2", "restart_fabric_manager")


def test_d5_xid45_caused_by_a_previous_xid_is_still_not_reported():
    text = "NVRM: Xid (PCI:%s): 45, pid=1, name=a, Ch 00000010, caused by previous Xid 79" % pci(2)
    fs, _unused = run(facts(events=events(text)))
    assert not only(fs, "gpu.xid", "gpu2", 45)


# ------------------------------------------------------------------------------------------ 6. Xid 110


def test_d6_xid110_cold_resets_the_system():
    # trigger conditions: "revert any recent system hardware modifications and cold reset the system"
    fs, st = run(facts(events=[xid(110, index=4)]))
    f = only(fs, "gpu.xid", "gpu4", 110)[0]
    assert sa(f) == ("P1", "power_cycle") and "cold reset" in f["rule"]
    fs, st = run(facts(), state=st, now="2026-12-02T16:00:00Z")  # the line aged out: still owed
    assert only(fs, "gpu.xid", "gpu4", 110)[0]["evidence"]["still_active"] is True
    S.record_gpu_reset(st, HOST, BUS[4], "S4", "2026-12-02T16:10:00Z")  # a GPU reset is not a cold reset
    fs, st = run(facts(), state=st, now="2026-12-02T16:20:00Z")
    assert only(fs, "gpu.xid", "gpu4", 110)
    fs, _unused = run(facts(boot="b2"), state=st, now="2026-12-02T18:00:00Z")
    assert not only(fs, "gpu.xid")


# ---------------------------------------------------------------------------------- 7. Xid 144-150 decode


@pytest.mark.parametrize(
    "code,line,expected",
    [
        # real lines (gpud PR 1160/1174); decode sheet rows in the comments
        (144, NVL5[0], ("P3", "monitor")),  # SAW_MVB V2 0000001, status 0x8: IGNORE
        (149, NVL5[1], ("P3", "monitor")),  # NETIR_LINK_EVT V1 reason 100110: IGNORE (INVESTIGATE_SW/USER)
        (149, NVL5[2], ("P1", "reset_gpu")),  # NETIR_LINK_EVT V1 reason 100101: RESET_GPU
        (149, NVL5[3], ("P1", "reset_gpu")),  # NETIR_INT V1 0000000110: RESET_GPU (Link Fatal)
        (145, NVL5[4], ("P3", "monitor")),  # RLW_RXPIPE V1 0011000010, status 0x8: IGNORE
    ],
)
def test_d7_nvlink5_real_lines_follow_the_decode_sheet(code, line, expected):
    text = line.replace("PCI:0000:01:00", "PCI:%s" % pci(0)).replace("PCI:0000:00:00", "PCI:%s" % pci(0))
    text = text.replace("PCI:0019:01:00", "PCI:%s" % pci(0)).replace("PCI:0018:01:00", "PCI:%s" % pci(0))
    f = only(run(facts(events=events(text)))[0], "gpu.xid", "gpu0", code)[0]
    assert sa(f) == expected and "WORKFLOW_NVLINK5_ERR" in f["rule"]


@pytest.mark.parametrize(
    "code,unit,intr,status,expected",
    [
        (145, "RLW_SRC_TRACK", 0x04082907, 0x10, ("P1", "reset_gpu")),  # V2 0000111, 0x10: RESET_GPU (Fatal)
        (146, "TLW_CTRL", 0x00000009, 0x4, ("P1", "reset_gpu")),  # V2 0001001, 0x4: RESET_GPU
        (146, "TLW_CTRL", 0x00000009, 0x2, ("P3", "monitor")),  # 0x2: IGNORE ("will lead to Xid 48")
        (149, "NETIR_MFDE_EVENT", 0x00000246, 0x5, ("P1", "reset_gpu")),  # V1 1001000110, 0x5: RESET_GPU
        (149, "NETIR_MFDE_EVENT", 0x00000246, 0x3, ("P3", "monitor")),  # 0x3: IGNORE
        (150, "MSE_WATCHDOG", 0x00000000, 0x0, ("P1", "reset_gpu")),  # always Fatal, RESET_GPU
        (147, "TREX", 0x00000184, 0x1, ("P3", "monitor")),  # V1 0110000100: IGNORE ("not in production code")
    ],
)
def test_d7_nvlink5_sub_cases_whose_action_is_a_gpu_reset(code, unit, intr, status, expected):
    word = "Fatal" if expected[0] == "P1" else "Nonfatal"
    text = "NVRM: Xid (PCI:%s): %d, %s %s XC0 i0 Link 07 (0x%08x 0x%08x 0x00000000 0x00000000 0x00000000 0x00000000)" % (
        pci(1), code, unit, word, intr, status)  # fmt: skip
    f = only(run(facts(events=events(text)))[0], "gpu.xid", "gpu1", code)[0]
    assert sa(f) == expected


def test_d7_nvlink5_xid154_eval_follows_the_xid154_else_restart_app():
    # RLW_SRC_TRACK 0x8 (the real line of gpu-knowledge 3.5): XID_154_EVAL: "If an XID 154 is seen along with
    # this error, take that action. If no XID 154 present, RESTART_APP"
    line = "NVRM: Xid (PCI:%s): 145, RLW_SRC_TRACK Nonfatal XC1 i0 Link 10 (0x04082907 0x00000008 0x0 0x0 0x0 0x0)"
    f = only(run(facts(events=events(line % pci(5))))[0], "gpu.xid", "gpu5", 145)[0]
    assert sa(f) == ("P3", "restart_app")
    x154 = "NVRM: Xid (PCI:%s): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)" % pci(5)
    f = only(run(facts(events=events(line % pci(5) + "\n" + x154)))[0], "gpu.xid", "gpu5", 145)[0]
    assert sa(f) == ("P1", "reset_gpu") and "XID_154_EVAL" in f["rule"]


def test_d7_nvlink5_driver_version_picks_v1_or_v2():
    # IntrInfo 0x00000009: V2 (>= R575) 0001001 = TLW_CTRL; V1 (< R575) needs 0100100011 -> no row
    text = "TLW_CTRL Fatal XC0 i0 Link 01 (0x00000009 0x00000004 0x0 0x0 0x0 0x0)"
    d = xid_decode.decode_nvlink5(146, text, "580.65.06")
    assert (d["version"], d["subcode"], d["bucket"]) == ("V2", "TLW_CTRL", "RESET_GPU")
    # a V1 line (NETIR_LINK_EVT 0x025001c6) under a driver the facts call R580: the other format is tried
    d = xid_decode.decode_nvlink5(149, NVL5[2], "580.65.06")
    assert (d["version"], d["bucket"], d["investigatory"]) == ("V1", "RESET_GPU", "INVESTIGATE_PEER_DEVICE")
    # an IntrInfo no row has: no bucket (the catalogue row and the Fatal word decide)
    assert xid_decode.decode_nvlink5(146, text.replace("0x00000009", "0x0000007f"), None)["bucket"] is None
    assert xid_decode.decode_nvlink5(146, "TLW_CTRL Fatal Link (truncated", None) is None
    assert xid_decode.decode_nvlink5(146, None, None) is None


def test_d7_undecodable_nvlink5_line_keeps_the_fatal_word():
    f = only(run(facts(events=[xid(145, message="RLW Fatal XC0 i0 Link 05")]))[0], "gpu.xid", code=145)[0]
    assert sa(f) == ("P1", "reset_gpu") and "'Fatal'" in f["rule"]


# ------------------------------------------------------------------------------------------ 8. Xid 154


@pytest.mark.parametrize(
    "number,label,expected",
    [
        # NVML recovery action enum: 3 DRAIN_P2P ("stop P2P processes and UVM persistence, then re-query"),
        # 5 RECOVER_IMEX_DOMAIN, 6 BUS_RESET (pynvml only: not an nvidia-smi GPU reset)
        ("0x3", "Drain P2P", ("P2", "drain_p2p")),
        ("0x5", "Recover IMEX Domain", ("P1", "recover_imex_domain")),
        ("0x6", "Bus Reset", ("P1", "reboot")),
        ("0x2", "OS Reboot", ("P1", "reboot")),
        ("0x1", "PF FLR", ("P1", "reset_gpu")),
        ("0x1", "Drain P2P", ("P1", "reset_gpu")),  # NVIDIA's number is authoritative, the words drift
    ],
)
def test_d8_xid154_acts_on_nvidias_number(number, label, expected):
    text = "NVRM: Xid (PCI:%s): 154, GPU recovery action changed from 0x0 (None) to %s (%s)" % (pci(6), number, label)
    f = only(run(facts(events=events(text)))[0], "gpu.xid", "gpu6", 154)[0]
    assert sa(f) == expected


def test_d8_xid154_real_lines_and_wrapped_lines():
    evs = parse_kernel_log(_read("gpuknowledge-xid154-recovery-action-labels.log"))
    assert [e["recovery_action"] for e in evs] == ["gpu_reset", "node_reboot", "gpu_reset"]
    wrapped = (
        "[Mon Dec  1 10:00:00 2026] NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) "
        "to 0x2 (Node Reboot\n"
        "[Mon Dec  1 10:00:00 2026] Required)\n"
        "NVRM: Xid (PCI:0000:02:00): 154, GPU recovery action changed from 0x0 (None) to\n"
        "NVRM: 0x5 (Recover IMEX Domain)\n"
        "NVRM: Xid (PCI:0000:03:00): 154, GPU recovery action changed from 0x0 (None) to 0x3\n"
        "NVRM: GPU0 _kgspRpcRecvPoll: GSP RM heartbeat timed out\n"
    )
    evs = parse_kernel_log(wrapped)
    assert [(e["kind"], e["recovery_action"]) for e in evs] == [
        ("xid", "node_reboot"),
        ("xid", "recover_imex_domain"),
        ("xid", "drain_p2p"),
        ("gsp_timeout", None),  # the next event is not joined into the Xid 154 line
    ]
    assert evs[0]["detail"]["new_action_text"] == "Node Reboot Required"
    # words only, no number (an older format): the words are the fallback
    ev = parse_kernel_log("NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from (None) to (Drain P2P)")[0]
    assert ev["recovery_action"] == "drain_p2p"
    # a line cut short for good: no action, no traceback
    ev = parse_kernel_log("NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to")[0]
    assert ev["recovery_action"] is None


# --------------------------------------------------------------------------------------- 9. Xid 119 / 120


@pytest.mark.parametrize("code", [119, 120])
def test_d9_xid119_120_reset_then_power_cycle_then_debug_guidelines(code):
    # trigger conditions (119/120): "A GPU reset or node power cycle may be needed if the error persists. If this
    # problem reoccurs after a power cycle, follow the NVIDIA GPU Debug Guidelines"
    fs, st = run(facts(events=[xid(code, index=5)]))
    assert sa(only(fs, "gpu.xid", "gpu5", code)[0]) == ("P1", "reset_gpu")  # never a power cycle first
    S.record_gpu_reset(st, HOST, BUS[5], "S5", "2026-12-02T10:10:00Z")
    fs, st = run(facts(), state=st, now="2026-12-02T10:20:00Z")
    assert not only(fs, "gpu.xid", "gpu5", code)
    fs, st = run(facts(events=[xid(code, index=5, ts="2026-12-03T09:59:00Z")]), state=st, now="2026-12-03T10:00:00Z")
    f = only(fs, "gpu.xid", "gpu5", code)[0]
    assert sa(f) == ("P1", "power_cycle") and "step 2/3" in f["rule"]
    fs, st = run(facts(boot="b2"), state=st, now="2026-12-03T12:00:00Z")
    fs, st = run(
        facts(boot="b2", events=[xid(code, index=5, ts="2026-12-04T09:59:00Z")]), state=st, now="2026-12-04T10:00:00Z"
    )
    assert sa(only(fs, "gpu.xid", "gpu5", code)[0]) == ("P1", "contact_vendor")


# ------------------------------------------------------------------------------------ GSP without an Xid


def test_gsp_heartbeat_and_rpc_timeout_without_an_xid_line_are_an_xid119():
    evs = parse_kernel_log(_read("ogkm1125-1230-gsp-heartbeat-rpc-timeout-no-xid.log"))
    assert [e["kind"] for e in evs] == ["gsp_timeout"] * 4
    assert [e["detail"]["gpu_instance"] for e in evs] == [None, None, 6, 6]
    for e in evs:
        e["timestamp"] = "2026-12-02T09:50:00Z"
    fs, _unused = run(facts(events=evs))
    (f,) = only(fs, "gpu.xid", code=119)
    assert sa(f) == ("P1", "reset_gpu") and f["evidence"]["gsp_timeouts"] == 4 and "GSP" in f["rule"]


def test_gsp_lines_around_a_real_xid119_are_not_counted_twice():
    text = _read("vllm40652-8xa100-xid119-gsp-timeout-45s.log") + _read(
        "ogkm1125-1230-gsp-heartbeat-rpc-timeout-no-xid.log"
    )
    fs, _unused = run(facts(events=events(text)))
    xids = only(fs, "gpu.xid", code=119)
    assert (
        xids and all(f["evidence"]["bus_id"] for f in xids) and not any(f["evidence"].get("gsp_timeouts") for f in xids)
    )


# ----------------------------------------------------------------------------------------------- SXid


def _sxid(code, word, link, dev=2, bus="0000:07:00.0"):
    return "nvidia-nvswitch%d: SXid (PCI:%s): %d, %s, Link %d LTSSM Fault Up" % (dev, bus, code, word, link)


@pytest.mark.parametrize(
    "code,word,expected",
    [
        (22003, "Non-fatal", ("P1", "reboot")),  # always fatal (minion halt): restart the host
        (23005, "Fatal", ("P1", "reboot")),
        (19084, "Non-fatal", ("P1", "reboot")),  # AN1 heartbeat timeout: reset all GPUs and NVSwitches
        (20034, "Fatal", ("P1", "reboot")),  # potentially fatal, the line says Fatal
        (20034, "Non-fatal", ("P2", "monitor")),  # potentially fatal, not this time
        (11012, "Non-fatal", ("P3", "monitor")),  # single-bit ECC: no recovery
        (31999, "Fatal", ("P1", "reboot")),  # not in the guide: the word decides
        (31999, "Non-fatal", ("P2", "monitor")),
    ],
)
def test_sxid_catalogue(code, word, expected):
    f = only(run(facts(events=events(_sxid(code, word, 48))))[0], "nvswitch.sxid", code=code)[0]
    assert sa(f) == expected and f["component"] == "nvswitch2"


def test_sxid_non_fatal_counted_per_link():
    text = "\n".join([_sxid(20001, "Non-fatal", 4), _sxid(20001, "Non-fatal", 4), _sxid(20001, "Non-fatal", 17)])
    (f,) = only(run(facts(events=events(text)))[0], "nvswitch.sxid", code=20001)
    assert f["evidence"]["links"] == {"17": 1, "4": 2} and f["evidence"]["count"] == 3 and sa(f) == ("P3", "monitor")
    assert "link 4: 2" in f["message"]


def test_gsp_wordings_with_and_without_an_xid_prefix():
    # formats.md: "Timeout after 6s of waiting for RPC response from GPU4 GSP!" is the Xid 119 text; printed alone
    # (no "Xid (PCI:...): 119," prefix) it is a GSP RPC timeout event of GPU4
    alone = "[Sun Feb 23 16:24:18 2025] NVRM: Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 76"
    (ev,) = parse_kernel_log(alone)
    assert (ev["kind"], ev["detail"]["gpu_instance"], ev["timestamp"]) == ("gsp_timeout", 4, "2025-02-23T16:24:18")
    with_xid = (
        "NVRM: Xid (PCI:0000:9b:00): 119, pid=3000, name=nvidia-smi, Timeout after 6s of waiting for RPC "
        "response from GPU4 GSP!"
    )
    (ev,) = parse_kernel_log(with_xid)
    assert (ev["kind"], ev["code"]) == ("xid", 119)
    # the banner that frames an Xid 119 line, a rate-limit notice and a mangled heartbeat line are no events
    noise = (
        "NVRM: _kgspLogXid119: ********** GSP Timeout **********\n"
        "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:9b:00 (printing 1 of every 30).\n"
        "NVRM: GPU0 _kgspIsHeartbeat: Heartbeat\n"
    )
    assert parse_kernel_log(noise) == []
