# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Xid checks aligned with NVIDIA's Xid catalog (issue 20): Xid 74 register decode (WORKFLOW_NVLINK_ERR), NVLink5
decode cases, Xid 13/31 diagnostic runs, the bucket severity, and Xid faults that persist until handled.

Kernel lines are real ones (tests/fixtures/xid-kmsg) parsed by the real kernel-log parser; Xid 74 variants keep
the real line's format and substitute the registers."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.kernel_log import parse_kernel_log
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as S
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import xid_decode
from checks_helpers import BUS, HOST, facts, only, run, xid

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "xid-kmsg")


def _read(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return fh.read()


REAL74 = _read("nvsentinel022-xid74-nvlink-registers.log").strip()


def line74(bus_index, regs, link=14):
    """The real Xid 74 line for another GPU, link and register values."""
    pci = BUS[bus_index][4:-2].lower()
    text = REAL74.replace("PCI:0003:00:00", "PCI:%s" % pci).replace("link 14(", "link %d(" % link)
    return text.replace("(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)", "(%s)" % ", ".join("0x%x" % r for r in regs))


def events(text, ts="2026-12-02T09:50:00Z"):
    evs = parse_kernel_log(text)
    for e in evs:
        e["timestamp"] = ts  # the fixture's monotonic stamps: place them in this boot's window
    return evs


def regs(r0=0, r2=0, r3=0, r4=0):
    return [r0, 0, r2, r3, r4, 0, 0]


# ------------------------------------------------------------------------------- decode


def test_decode_the_real_line():
    (ev,) = parse_kernel_log(REAL74)
    d = xid_decode.decode_xid74(ev["message"])
    assert d["link"] == 14 and d["registers"] == [0, 0, 0x10000, 0, 0, 0, 0]
    assert d["bits"] == [(2, 16, "repeat_diag")]
    assert xid_decode.decode_xid74("NVLink: fatal error detected on link 14") is None  # older drivers: no dump
    assert xid_decode.decode_xid74("link 3(0x1, 0x2)") is None  # truncated dump
    assert xid_decode.gpc_tpc("Graphics SM Warp Exception on (GPC 8, TPC 5, SM 0): Out Of Range Address") == (8, 5)


@pytest.mark.parametrize(
    "registers,peer,expected",
    [
        (regs(r0=1 << 0 | 1 << 23 | 1 << 30), False, ("P3", "none")),  # "can be safely ignored"
        (regs(r4=1 << 20 | 1 << 26), False, ("P3", "none")),  # ECC threshold crossed, no uncorrectable error
        # link hardware: "a GPU reset or node reboot is needed to clear"; reseat only if a field resolution is required
        (regs(r0=1 << 8), False, ("P1", "reset_gpu")),
        (regs(r0=1 << 21), False, ("P1", "reset_gpu")),  # marginal signal integrity
        (regs(r0=1 << 1), True, ("P3", "monitor")),  # sympathetic, another error explains it
        (regs(r0=1 << 20), False, ("P2", "contact_vendor")),  # sympathetic alone: report a bug
        (regs(r3=1 << 18), False, ("P2", "reset_gpu")),  # sympathetic alone: fabric reset required
        (regs(r2=1 << 13), False, ("P2", "contact_vendor")),  # not expected in production
        (regs(r0=1 << 2), False, ("P2", "contact_vendor")),  # a bit NVIDIA lists nowhere: report a bug
        (regs(r0=1 << 4), False, ("P2", "reset_gpu")),  # ECC/parity once: no bug report yet, but a reset clears it
        (regs(r2=1 << 16), False, ("P2", "reset_gpu")),  # field diag only when repeated; a reset clears it
    ],
)
def test_xid74_bit_rules(registers, peer, expected):
    d = xid_decode.decode_xid74(line74(0, registers))
    assert xid_decode.xid74_verdict([d], peer)[:2] == expected


def test_xid74_repeats_count_per_link():
    parity = xid_decode.decode_xid74(line74(0, regs(r4=1 << 18), link=3))
    other_link = xid_decode.decode_xid74(line74(0, regs(r4=1 << 18), link=4))
    assert xid_decode.xid74_verdict([parity, parity, other_link, other_link], False)[:2] == ("P2", "reset_gpu")
    assert xid_decode.xid74_verdict([parity] * 3, False)[:2] == ("P1", "contact_vendor")
    diag = xid_decode.decode_xid74(line74(0, regs(r2=1 << 19)))
    assert xid_decode.xid74_verdict([diag, diag], False)[:2] == ("P2", "diagnose")


# ------------------------------------------------------------------------------- gpu.xid


def test_sympathetic_xid74_on_a_healthy_peer_is_not_p1():
    text = "\n".join([line74(2, regs(r0=1 << 16)), line74(5, regs(r0=1 << 1)), line74(6, regs(r3=1 << 16))])
    fs, _unused = run(facts(events=events(text)))
    bad = only(fs, "gpu.xid", "gpu2", 74)[0]
    assert (bad["severity"], bad["action"]) == ("P1", "reset_gpu")
    assert "WORKFLOW_NVLINK_ERR" in bad["rule"] and bad["evidence"]["nvlink_registers"][0]["link"] == 14
    assert "reg0.bit16:hardware" in bad["evidence"]["nvlink_registers"][0]["bits"]
    for comp in ("gpu5", "gpu6"):
        peer = only(fs, "gpu.xid", comp, 74)[0]
        assert (peer["severity"], peer["action"]) == ("P3", "monitor"), comp


def test_sympathetic_xid74_follows_an_sxid_and_alone_is_a_bug_report():
    sxid = "nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 62 LTSSM Fault Up"
    fs, _unused = run(facts(events=events(line74(1, regs(r0=1 << 1)) + "\n" + sxid)))
    assert only(fs, "gpu.xid", "gpu1", 74)[0]["severity"] == "P3"
    fs, _unused = run(facts(events=events(line74(1, regs(r0=1 << 1)))))
    f = only(fs, "gpu.xid", "gpu1", 74)[0]
    assert (f["severity"], f["action"]) == ("P2", "contact_vendor")


def test_xid74_without_registers_keeps_the_dcgm_fail_default_and_the_real_line_is_a_p2_reset():
    fs, _unused = run(facts(events=[xid(74, index=3, message="NVLink: fatal error detected on link 2")]))
    assert (only(fs, "gpu.xid", "gpu3", 74)[0]["severity"], only(fs, "gpu.xid", "gpu3", 74)[0]["action"]) == (
        "P1",
        "reset_gpu",
    )
    fs, _unused = run(facts(events=events(line74(3, [0, 0, 0x10000, 0, 0, 0, 0]))))
    f = only(fs, "gpu.xid", "gpu3", 74)[0]
    assert (f["severity"], f["action"]) == ("P2", "reset_gpu")


def test_reseat_persists_until_a_new_boot():
    # Xid 79 twice: the second asks for a reseat (escalation step 2)
    fs, st = run(facts(events=[xid(79, index=2)]))
    fs, st = run(facts(boot="b2"), state=st, now="2026-12-03T10:00:00Z")
    fs, st = run(
        facts(boot="b2", events=[xid(79, index=2, ts="2026-12-04T09:59:00Z")]), state=st, now="2026-12-04T10:00:00Z"
    )
    assert only(fs, "gpu.xid", "gpu2", 79)[0]["action"] == "reseat"
    # 6 h later the line is outside the 2 h window: the link was never looked at, the fault stays (resume gate)
    fs, st = run(facts(boot="b2"), state=st, now="2026-12-04T16:00:00Z")
    f = only(fs, "gpu.xid", "gpu2", 79)[0]
    assert f["evidence"]["still_active"] is True and "clears after a reboot" in f["message"]
    S.record_gpu_reset(st, HOST, BUS[2], "S2", "2026-12-04T16:10:00Z")  # a reset is not a reseat
    fs, st = run(facts(boot="b2"), state=st, now="2026-12-04T16:20:00Z")
    assert only(fs, "gpu.xid", "gpu2", 79)
    fs, st = run(facts(boot="b3"), state=st, now="2026-12-04T18:00:00Z")
    assert not only(fs, "gpu.xid")


def test_reset_and_contact_vendor_persist_until_their_clear_rule():
    fs, st = run(facts(events=[xid(64, index=1)]))
    assert only(fs, "gpu.xid", "gpu1", 64)[0]["action"] == "reset_gpu"
    fs, st = run(facts(), state=st, now="2026-12-02T16:00:00Z")  # the line aged out; no reset recorded yet
    assert only(fs, "gpu.xid", "gpu1", 64)[0]["evidence"]["still_active"] is True
    S.record_gpu_reset(st, HOST, BUS[1], "S1", "2026-12-02T16:10:00Z")
    fs, st = run(facts(), state=st, now="2026-12-02T16:20:00Z")
    assert not only(fs, "gpu.xid", "gpu1", 64)
    fs, st = run(facts(events=events(line74(4, regs(r0=1 << 20)))))
    assert only(fs, "gpu.xid", "gpu4", 74)[0]["action"] == "contact_vendor"
    fs, st = run(facts(), state=st, now="2026-12-02T15:00:00Z")
    assert only(fs, "gpu.xid", "gpu4", 74)
    S.record_gpu_reset(st, HOST, BUS[4], "S4", "2026-12-02T15:10:00Z")
    fs, st = run(facts(), state=st, now="2026-12-02T15:20:00Z")
    assert not only(fs, "gpu.xid")


# ------------------------------------------------------------------------------- Xid 13 / 31


def test_real_xid13_burst_of_one_process_is_an_application_fault():
    text = _read("gpud-xid13-43-sm-warp-exception.log")
    fs, _unused = run(facts(events=events(text)))
    for f in only(fs, "gpu.xid"):
        assert f["severity"] == "P3", f


def test_xid13_on_the_same_gpc_tpc_from_two_processes_calls_for_diag():
    line = "NVRM: Xid (PCI:%s): 13, pid=%d, name=%s, Graphics SM Warp Exception on (GPC 8, TPC 5, SM 0): Out Of Range"
    pci = BUS[0][4:-2].lower()
    text = "\n".join([line % (pci, 4100, "python3"), line % (pci, 5200, "torchrun")])
    fs, _unused = run(facts(events=events(text)))
    f = only(fs, "gpu.xid", "gpu0", 13)[0]
    assert (f["severity"], f["action"]) == ("P2", "diagnose")
    assert "GPC 8 TPC 5" in f["rule"] and f["evidence"]["gpc_tpc"] == {"GPC 8 TPC 5": 2}
    # different TPCs from different processes: two application bugs
    text = "\n".join([line % (pci, 4100, "python3"), (line % (pci, 5200, "torchrun")).replace("TPC 5", "TPC 6")])
    assert only(run(facts(events=events(text)))[0], "gpu.xid", "gpu0", 13)[0]["severity"] == "P3"


def test_xid31_on_one_gpu_from_three_processes_calls_for_diag():
    evs = [xid(31, pid=p, process="app%d" % p) for p in (1, 2, 3)]
    f = only(run(facts(events=evs))[0], "gpu.xid", "gpu0", 31)[0]
    assert (f["severity"], f["action"]) == ("P2", "diagnose") and "WORKFLOW_XID_31" in f["rule"]


# ------------------------------------------------------------------------------- buckets, NVLink5


@pytest.mark.parametrize("code", [46, 62, 109, 136, 119, 120, 143, 158])
def test_reset_gpu_bucket_is_p1_for_every_code(code):
    f = only(run(facts(events=[xid(code)]))[0], "gpu.xid", "gpu0", code)[0]
    assert (f["severity"], f["action"]) == ("P1", "reset_gpu")


def test_real_nvlink5_lines_nonfatal_ignore_fatal_reset():
    text = _read("gpud-pr1160-1174-nvlink5-xid144-145-149.log").replace("PCI:0000:01:00", "PCI:" + BUS[0][4:-2])
    evs = [e for e in events(text) if e.get("code") == 144]
    f = only(run(facts(events=evs))[0], "gpu.xid", "gpu0", 144)[0]
    assert (f["severity"], f["action"]) == ("P3", "monitor")  # SAW_MVB Nonfatal: IGNORE in NVIDIA's decode sheet
    # NETIR_LINK_EVT IntrInfo 0x025001c6: V1 link-down reason 100101 -> RESET_GPU (INVESTIGATE_PEER_DEVICE)
    fatal = [dict(e, code=149, bus_id=BUS[1], gpu_index=1) for e in events(text) if e.get("code") == 149][1:2]
    f = only(run(facts(events=fatal))[0], "gpu.xid", "gpu1", 149)[0]
    assert (f["severity"], f["action"]) == ("P1", "reset_gpu") and "WORKFLOW_NVLINK5_ERR" in f["rule"]


@pytest.mark.parametrize("code,severity", [(167, "P1"), (169, "P1"), (173, "P1"), (39, "P3"), (141, "P3")])
def test_codes_that_fell_to_the_default_have_their_own_rows(code, severity):
    f = only(run(facts(events=[xid(code)]))[0], "gpu.xid", "gpu0", code)[0]
    assert f["severity"] == severity and "xid_catalog[%d]" % code in f["rule"]


def test_events_by_action_is_validated_and_overridable():
    from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P

    with pytest.raises(P.PolicyError, match="clear_rules.events_by_action.reseat"):
        P.merge_policy(P.DEFAULT_POLICY, {"clear_rules": {"events_by_action": {"reseat": "whenever"}}})
    pol = P.merge_policy(P.DEFAULT_POLICY, {"clear_rules": {"events_by_action": {"power_cycle": "needs_reset_record"}}})

    fs, st = run(facts(events=[xid(110, index=2)]), policy=pol)
    assert only(fs, "gpu.xid", "gpu2", 110)[0]["action"] == "power_cycle"
    S.record_gpu_reset(st, HOST, BUS[2], "S2", "2026-12-02T12:00:00Z")
    fs, _unused = run(facts(), state=st, now="2026-12-02T16:00:00Z", policy=pol)
    assert not only(fs, "gpu.xid")
