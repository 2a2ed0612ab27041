# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Evidence time (issue 20): a capture is judged at the time it was taken, not at the time of the inspection."""

from __future__ import annotations

import datetime
import json
import os
import random
import re
import shutil
import sys
from pathlib import Path

from ansible_collections.gpuops.cluster.plugins.module_utils import _evidence_time as E
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import collect_all
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import UTC, parse_time
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect, report as _report
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import evaluate_node

ROOT = Path(__file__).resolve().parents[4]
FIX = ROOT / "tests" / "fixtures"
sys.path.insert(0, str(ROOT / "tools"))

from simnode import faults as F  # noqa: E402
from simnode.capture import capture  # noqa: E402
from simnode.state import default_state  # noqa: E402

#: the inspection runs today; the evidence is older
TODAY = datetime.datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


def _copy(src: Path, dest: Path, name: str) -> None:
    dest.mkdir(exist_ok=True)
    shutil.copy2(src, dest / name)


# ------------------------------------------------------------------------------------------- resolve


def test_captured_at_wins_over_the_evidence():
    assert E.resolve({"captured_at": "2026-11-02T10:00:00Z"}, [("2026-11-30T00:00:00Z", "kernel.log")], TODAY) == (
        "2026-11-02T10:00:00Z",
        E.SOURCE_META,
    )


def test_newest_plausible_timestamp_else_the_inspection_time():
    cands = [
        ("2026-10-01T08:00:00", "scontrol-show-node.txt BootTime"),
        ("2026-10-02T09:30:00Z", "kernel.log"),
        ("2036-01-01T00:00:00Z", "ipmitool-sel.txt"),  # a BMC clock in the future is not when it was taken
        ("garbage", "ipmitool-sel.txt"),
        (None, "kernel.log"),
    ]
    assert E.resolve({}, cands, TODAY) == ("2026-10-02T09:30:00Z", "kernel.log")
    assert E.resolve({}, [], TODAY) == ("2026-12-03T08:00:00Z", E.SOURCE_NONE)


def test_nvidia_smi_timestamp_headers_are_evidence(tmp_path):
    _copy(FIX / "nvidia-smi-q-text" / "gpud-8xh100-535.161.08-hw-power-brake.txt", tmp_path, "nvidia-smi-q.txt")
    _copy(FIX / "nvidia-smi-xml" / "datakit-v100-pcie-460.39.xml", tmp_path, "nvidia-smi-q.xml")
    got = sorted(E.header_times(str(tmp_path)), key=lambda c: c[1])
    assert got == [
        (datetime.datetime(2024, 7, 31, 11, 22, 39, tzinfo=UTC), "nvidia-smi-q.txt Timestamp"),
        (datetime.datetime(2022, 9, 15, 13, 53, 22, tzinfo=UTC), "nvidia-smi-q.xml timestamp"),
    ]
    facts = collect_all(capture_dir=str(tmp_path))
    assert (facts["evidence_time"], facts["evidence_time_source"]) == (
        "2024-07-31T11:22:39Z",
        "nvidia-smi-q.txt Timestamp",
    )


def test_live_collection_is_judged_now():
    facts = collect_all(domains=["slurm"], timeout=2)
    assert facts["evidence_time"] == facts["collected_at"] and facts["evidence_time_source"] == E.SOURCE_LIVE


# ------------------------------------------------------------------------- real-format captures, no capture.json


def test_yearless_syslog_resolves_against_the_sel_of_the_same_capture(tmp_path):
    """An Intel S2600 SEL from June 2014 and a syslog-format kernel log without years: the Xid is June 2014's,
    inside the 2 h window before the evidence time (the SEL's newest entry), so it is found."""
    _copy(FIX / "ipmitool-sel" / "intel-s2600-sel-elist-fan-psu-redundancy.txt", tmp_path, "ipmitool-sel.txt")
    (tmp_path / "kernel.log").write_text(
        "Jun 10 15:31:02 gpu-node-07 kernel: NVRM: Xid (PCI:0000:02:00): 109, pid=8494,   name=RenderThread, "
        "channel 0x0000000d, CTX SWITCH TIMEOUT, Info 0x14c011\n"
    )
    facts = collect_all(capture_dir=str(tmp_path))
    assert (facts["evidence_time"], facts["evidence_time_source"]) == ("2014-06-10T16:14:04Z", "ipmitool-sel.txt")
    (ev,) = [e for e in facts["kernel"]["events"] if e["kind"] == "xid"]
    assert ev["timestamp"].startswith("2014-06-10T15:31:02")
    findings, dummy = evaluate_node(facts, None, None, None, TODAY, "gpu-node-07")
    assert [f["code"] for f in findings if f["check"] == "gpu.xid"] == ["109"]
    # respond_by still counts from now, not from 2014
    assert all(parse_time(f["respond_by"]) > TODAY for f in findings if f["respond_by"])


def test_a_dmesg_ctime_attachment_from_april_still_shows_its_xid(tmp_path):
    """The vLLM #40652 dmesg -T excerpt (8x A100, Xid 119 GSP timeout, April 2026) attached to a ticket."""
    _copy(FIX / "xid-kmsg" / "vllm40652-8xa100-xid119-gsp-timeout-45s.log", tmp_path, "kernel.log")
    facts = collect_all(capture_dir=str(tmp_path))
    assert facts["evidence_time"].startswith("2026-04-26T23:1") and facts["evidence_time_source"] == "kernel.log"
    findings, dummy = evaluate_node(facts, None, None, None, TODAY, "gpu-node-07")
    assert "119" in {f["code"] for f in findings if f["check"] == "gpu.xid"}
    # judged at the inspection time instead, the same file shows nothing: the bug this fixes
    stale = dict(facts, evidence_time=None, collected_at="2026-12-03T08:00:00Z")
    findings, dummy = evaluate_node(stale, None, None, None, TODAY, "gpu-node-07")
    assert not [f for f in findings if f["check"] == "gpu.xid"]


def _stale_cluster(tmp_path):
    """The simulator's stale_capture node: a month old, no capture.json, with its previous reading."""
    state = default_state("gpu-node-03", seed=7)
    res = F.apply(state, "stale_capture", random.Random(3))
    capture(state, str(tmp_path / "cur"))
    capture(res["previous"], str(tmp_path / "prev"))
    return res["expect"]


def test_last_month_capture_without_capture_json_shows_xids_sel_failures_and_link_flaps(tmp_path):
    expect = _stale_cluster(tmp_path)
    assert not (tmp_path / "cur" / "capture.json").exists() and not (tmp_path / "prev" / "capture.json").exists()
    report = _inspect.inspect_nodes(
        {"gpu-node-03": {"capture_dir": str(tmp_path / "cur"), "previous_capture_dir": str(tmp_path / "prev")}},
        now=TODAY,
    )
    node = report["nodes"]["gpu-node-03"]
    when = parse_time(node["evidence_time"])
    assert TODAY - datetime.timedelta(days=31) < when < TODAY - datetime.timedelta(days=29)
    assert node["evidence_time_source"] in ("kernel.log", "ipmitool-sel.txt", "nvidia-smi-q.xml timestamp")
    got = {(f["check"], f["component"]) for f in node["findings"]}
    assert {(e["check"], e["component"]) for e in expect} <= got
    checks = {f["check"] for f in node["findings"]}
    assert {"gpu.xid", "bmc.sel", "ib.link_flap"} <= checks
    # issue 41: respond-by counts from the evidence time (a month-old fault is overdue), and the age is shown
    dues = [parse_time(f["respond_by"]) for f in node["findings"] if f["respond_by"]]
    assert dues and all(when < due < TODAY for due in dues)
    assert re.fullmatch(r"stale evidence \((29|30|31) d old\)", node["stale_evidence"])
    assert node["stale_evidence"] in _report.to_html(report) and node["stale_evidence"] in _report.to_markdown(report)
    md = _report.to_markdown(report)
    assert "evidence time %s (%s)" % (node["evidence_time"], node["evidence_time_source"]) in md
    assert "evidence time" in _report.to_html(report)
    assert json.loads(_report.to_json(report))["nodes"]["gpu-node-03"]["evidence_time"] == node["evidence_time"]


def test_capture_json_captured_at_is_used_when_present(tmp_path):
    _stale_cluster(tmp_path)
    meta = {"schema": "gpuops.capture/v1", "hostname": "gpu-node-03", "captured_at": "2026-11-02T10:00:00Z"}
    (tmp_path / "cur" / "capture.json").write_text(json.dumps(meta))
    facts = collect_all(capture_dir=str(tmp_path / "cur"))
    assert (facts["evidence_time"], facts["evidence_time_source"]) == ("2026-11-02T10:00:00Z", E.SOURCE_META)
    assert facts["collected_at"] == "2026-11-02T10:00:00Z"
    assert os.path.isdir(tmp_path / "prev")


def test_sel_info_last_add_time_is_evidence_with_its_zone(tmp_path):
    """Supermicro X10 `ipmitool sel info` (12-hour clock, EDT): 06:57:38 PM EDT is 22:57:38 UTC."""
    _copy(FIX / "ipmitool-sel" / "supermicro-x10-sel-info.txt", tmp_path, "ipmitool-sel-info.txt")
    assert list(E.header_times(str(tmp_path))) == [
        (datetime.datetime(2025, 9, 11, 22, 57, 38, tzinfo=UTC), "ipmitool-sel-info.txt Last Add Time")
    ]
