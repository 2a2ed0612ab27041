# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU checks aligned with NVIDIA/DCGM (issue 20): ECC by memory type and NVIDIA's RMA flags, the Xid 94 that
explains an uncorrectable count after it aged out, NVLink replay/recovery/CRC per DCGM, T.Limit margins.

GPU records come from real ``nvidia-smi -q -x`` captures (tests/fixtures/nvidia-smi-xml, their .source.txt say
where from) parsed by the real parser; where a case needs other values the same file is used with the values of
that element substituted (same driver layout)."""

from __future__ import annotations

import os

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import nvsmi_xml as _nvsmi_xml
from checks_helpers import facts, gpu, only, run, xid

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvidia-smi-xml")
V13 = "telegraf-2xrtxa5000-590.44.01-v13.xml"  # R590 layout: SRAM/DRAM split, sram_threshold_exceeded
TLIMIT = "netdata-rtx4090-535.86.05.xml"  # R535: temperatures only as T.Limit margins


def parsed(name, **subst):
    """GPU 0 of a real capture; ``subst``: element name -> new text (every occurrence in GPU 0's block)."""
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        text = fh.read()
    head, sep, rest = text.partition("</gpu>")
    for element, value in subst.items():
        tag = element.split("/")[-1]
        scope = element.split("/")[0] if "/" in element else None
        if scope:
            a = head.index("<%s>" % scope)
            b = head.index("</%s>" % scope, a)
            block = head[a:b]
            block = _set(block, tag, value)
            head = head[:a] + block + head[b:]
        else:
            head = _set(head, tag, value)
    g = _nvsmi_xml.parse(head + sep + rest, name)["gpus"][0]
    g["index"] = 0
    return g


def _set(text, tag, value):
    a = text.index("<%s>" % tag) + len(tag) + 2
    b = text.index("</%s>" % tag, a)
    return text[:a] + value + text[b:]


def only_gpu(g, **kw):
    return facts(gpus=[g], **kw)


# ------------------------------------------------------------------------------- ECC


def test_real_v13_capture_is_clean_and_keeps_the_split():
    g = parsed(V13)
    assert g["ecc"]["by_type"]["volatile"] == {
        "sram_corrected": None,
        "dram_corrected": None,
        "sram_uncorrected": None,
        "dram_uncorrected": None,
    }
    assert not only(run(only_gpu(g))[0], "gpu.ecc")


def test_dram_tolerates_far_more_correctable_errors_than_sram():
    # 50,000 correctable DRAM errors since driver load: row remapping's job, no finding (was a P2 on the total)
    g = parsed(V13, **{"volatile/dram_correctable": "50000", "volatile/sram_correctable": "12"})
    assert g["ecc"]["volatile"]["corrected"] == 50012
    assert not only(run(only_gpu(g))[0], "gpu.ecc")
    g = parsed(V13, **{"volatile/sram_correctable": "10400"})
    (f,) = only(run(only_gpu(g))[0], "gpu.ecc")
    assert (f["severity"], f["code"], f["action"]) == ("P2", "volatile_corrected_sram", "monitor")
    g = parsed(V13, **{"volatile/dram_correctable": "20000001"})
    assert only(run(only_gpu(g))[0], "gpu.ecc")[0]["code"] == "volatile_corrected_dram"


def test_totals_only_layouts_keep_the_single_threshold():
    g = gpu(0, ecc={"volatile": {"corrected": 10001, "uncorrected": 0}})
    fs = run(facts(gpus=[g]))[0]
    assert only(fs, "gpu.ecc", "gpu0", "volatile_corrected")[0]["severity"] == "P2"


def test_sram_threshold_exceeded_and_unrepairable_memory_are_rma():
    g = parsed(V13, **{"aggregate/sram_threshold_exceeded": "Yes", "aggregate/sram_correctable": "41000"})
    assert g["ecc"]["sram_threshold_exceeded"] is True
    fs, st = run(only_gpu(g))
    f = only(fs, "gpu.ecc", code="sram_threshold")[0]
    assert (f["severity"], f["action"]) == ("P1", "replace") and "RMA" in f["rule"]
    # the flag is in the InfoROM: it stays until the board is replaced (serial change), a reboot does not clear it
    fs, st = run(only_gpu(parsed(V13)), state=st, now="2026-12-03T10:00:00Z")
    assert only(fs, "gpu.ecc", code="sram_threshold")
    g = parsed(V13, unrepairable_memory="Yes")
    f = only(run(only_gpu(g))[0], "gpu.ecc", code="unrepairable")[0]
    assert (f["severity"], f["action"]) == ("P1", "replace")


def test_xid94_explanation_outlives_the_log_window_while_the_count_does_not_grow():
    bad = [gpu(0, ecc={"volatile": {"corrected": 0, "uncorrected": 1}})] + [gpu(i) for i in range(1, 8)]
    fs, st = run(facts(gpus=bad, events=[xid(94, pid=1248209, process="python3.10")]))
    assert only(fs, "gpu.ecc", "gpu0", "volatile_uncorrected")[0]["severity"] == "P2"
    # 5 h later: Xid 94 is out of the 2 h window, the volatile counter is still 1 -> still contained, P2
    fs, st = run(facts(gpus=bad), state=st, now="2026-12-02T15:00:00Z")
    f = only(fs, "gpu.ecc", "gpu0", "volatile_uncorrected")[0]
    assert f["severity"] == "P2" and "Xid 94 seen at 2026-12-02T10:00:00Z" in f["rule"]
    # the count grows with no Xid: those errors nobody explained -> P1
    worse = [gpu(0, ecc={"volatile": {"corrected": 0, "uncorrected": 3}})] + [gpu(i) for i in range(1, 8)]
    fs, st = run(facts(gpus=worse), state=st, now="2026-12-02T15:10:00Z")
    f = only(fs, "gpu.ecc", "gpu0", "volatile_uncorrected")[0]
    assert (f["severity"], f["action"]) == ("P1", "reset_gpu") and "no Xid explains it" in f["rule"]
    # another GPU (serial) in that slot: the memory does not carry over
    _unused, st = run(facts(gpus=bad, events=[xid(94)]))
    other = [gpu(0, serial="OTHER", ecc={"volatile": {"corrected": 0, "uncorrected": 1}})]
    fs, _unused = run(facts(gpus=other + [gpu(i) for i in range(1, 8)]), state=st, now="2026-12-02T15:00:00Z")
    assert only(fs, "gpu.ecc", "gpu0", "volatile_uncorrected")[0]["severity"] == "P1"


# ------------------------------------------------------------------------------- NVLink


def _with_link_errors(**errors):
    g = gpu(0)
    g["nvlink"]["links"][3]["errors"] = dict({"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}, **errors)
    return facts(gpus=[g] + [gpu(i) for i in range(1, 8)], collected_at="2026-12-02T10:15:00Z")


def test_nvlink_replay_and_recovery_deltas_per_dcgm():
    _unused, st = run(facts(collected_at="2026-12-02T10:00:00Z"))
    fs, _unused = run(_with_link_errors(replay=2), state=st, now="2026-12-02T10:15:00Z")
    f = only(fs, "gpu.nvlink", "gpu0/nvlink3", "replay")[0]
    assert (f["severity"], f["action"]) == ("P2", "monitor") and f["evidence"]["deltas"]["replay"] == 2
    fs, _unused = run(_with_link_errors(recovery=1), state=st, now="2026-12-02T10:15:00Z")
    f = only(fs, "gpu.nvlink", "gpu0/nvlink3", "recovery")[0]
    assert (f["severity"], f["action"]) == ("P1", "reset_gpu")


def test_nvlink_crc_burst_is_not_averaged_away_over_a_long_interval():
    # 7,000 CRC errors in 15 minutes: 7.8/s on average (the old rule: no finding), but one minute's worth at
    # DCGM's 100/s limit
    _unused, st = run(facts(collected_at="2026-12-02T10:00:00Z"))
    fs, _unused = run(_with_link_errors(crc_flit=7000), state=st, now="2026-12-02T10:15:00Z")
    f = only(fs, "gpu.nvlink", "gpu0/nvlink3", "crc")[0]
    assert f["severity"] == "P2" and "per minute" in f["rule"]
    fs, _unused = run(_with_link_errors(crc_flit=500), state=st, now="2026-12-02T10:15:00Z")
    assert not only(fs, "gpu.nvlink", "gpu0/nvlink3", "crc")


# ------------------------------------------------------------------------------- temperature


def test_real_tlimit_only_capture_is_cool():
    g = parsed(TLIMIT)
    t = g["temperature"]
    assert (t["slowdown_c"], t["tlimit_c"], t["slowdown_tlimit_c"], t["shutdown_tlimit_c"]) == (None, 43, -2, -7)
    assert not only(run(only_gpu(g))[0], "gpu.temperature")


def test_tlimit_margin_catches_a_slowdown_the_85c_fallback_missed():
    # 83 C is below the fixed 85 C fallback, but the GPU is 1 C from its own slowdown margin
    g = parsed(TLIMIT, gpu_temp="83 C", gpu_temp_tlimit="1 C")
    f = only(run(only_gpu(g))[0], "gpu.temperature")[0]
    assert (f["severity"], f["action"]) == ("P2", "tune") and "T.Limit" in f["message"]


def test_tlimit_margin_avoids_a_false_shutdown():
    # 93 C is above the fixed 92 C fallback (was P1 emergency_shutdown), the margin says slowdown only
    g = parsed(TLIMIT, gpu_temp="93 C", gpu_temp_tlimit="-3 C")
    f = only(run(only_gpu(g))[0], "gpu.temperature")[0]
    assert (f["severity"], f["action"]) == ("P2", "tune")
    g = parsed(TLIMIT, gpu_temp="99 C", gpu_temp_tlimit="-6 C")
    f = only(run(only_gpu(g))[0], "gpu.temperature")[0]
    assert (f["severity"], f["action"]) == ("P1", "emergency_shutdown")
