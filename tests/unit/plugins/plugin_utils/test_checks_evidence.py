# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 20 checks: Xid root causes named by dependent lines, Slurm reasons with meaning, partial evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.kernel_log import parse_kernel_log
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm import parse_show_node
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.xid import xid_row
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform.slurm_reasons import interpret_reason, known_keys
from checks_helpers import BUS, HOST, PROFILE, facts, gpu, only, run, xid

FIX = Path(__file__).resolve().parents[3] / "fixtures"
NVML_INACTIVE = "NVML: Unable to retrieve NVLink information as all links are inactive"


# ------------------------------------------------------------------------------------ Xid root causes


def test_xid45_caused_by_previous_xid_absent_from_the_log_reports_the_root():
    """open-gpu-kernel-modules #1150: only the Xid 45 lines name 149 and 145; each root is reported per GPU,
    with its own catalogue severity and action, its evidence the dependent lines."""
    text = (FIX / "xid-kmsg" / "ogkm1150-h100-xid45-caused-by-previous-xid149-145.log").read_text()
    events = parse_kernel_log(text, "kernel.log")
    assert {e["caused_by"] for e in events} == {145, 149}
    fs, dummy = run(facts(gpus=[gpu(0)], events=events))
    roots = only(fs, "gpu.xid")
    assert sorted((f["component"], f["code"]) for f in roots) == [
        ("gpu:00000000:97:00.0", "145"),
        ("gpu:00000000:BA:00.0", "145"),
        ("gpu:00000000:DC:00.0", "149"),
        ("gpu:00000000:ED:00.0", "145"),
    ]
    for f in roots:
        row, dummy_notes = xid_row(P.DEFAULT_POLICY, int(f["code"]))
        assert (f["severity"], f["action"]) == (row["severity"], row["action"])
        assert "not in the log" in f["message"] and "caused by previous Xid" in f["rule"]
        assert f["evidence"]["inferred_from"] == [45] and f["evidence"]["lines"]
        assert all("caused by previous Xid %s" % f["code"] in line for line in f["evidence"]["lines"])
    dc = [f for f in roots if f["code"] == "149"][0]
    assert dc["evidence"]["count"] == 2 and dc["evidence"]["processes"] == ["python3"]


def test_root_xid_in_the_log_is_reported_once_by_its_own_line():
    events = [xid(119, index=2, message="Timeout after 6s"), xid(45, index=2, caused_by=119, raw="Ch 1 caused by 119")]
    fs, dummy = run(facts(events=events))
    (f,) = only(fs, "gpu.xid", "gpu2", 119)
    assert "not in the log" not in f["message"]
    assert not only(fs, "gpu.xid", "gpu2", 45)  # the cleanup itself is not a finding


def test_dependent_lines_on_a_known_gpu_use_its_component_and_window():
    events = [
        xid(45, index=5, caused_by=119, raw="NVRM: Xid (PCI:0000:ab:00): 45, Ch 00000001 caused by previous Xid 119")
    ]
    fs, dummy = run(facts(events=events))
    (f,) = only(fs, "gpu.xid", "gpu5", 119)
    assert (f["severity"], f["action"]) == tuple(xid_row(P.DEFAULT_POLICY, 119)[0][k] for k in ("severity", "action"))
    # outside the lookback window (3 h before the evidence time): nothing
    old = [dict(events[0], timestamp="2026-12-02T07:00:00Z")]
    fs, dummy = run(facts(events=old))
    assert not only(fs, "gpu.xid")


def test_due_to_previous_xid_wording_is_a_chain_too():
    line = "2026-12-02T09:50:00+00:00 n kernel: NVRM: Xid (PCI:0000:18:00): 45, pid=7, name=x, Preemptive Cleanup, due to previous Xid 48"
    (ev,) = parse_kernel_log(line, "kernel.log")
    assert ev["caused_by"] == 48
    fs, dummy = run(facts(events=[ev]))
    assert only(fs, "gpu.xid", "gpu0", 48)


# ------------------------------------------------------------------------------------ Slurm reasons


@pytest.mark.parametrize(
    "reason, key",
    [
        ("Kill task failed [root@2026-11-30T02:11:09]", "kill_task_failed"),
        ("Not responding [slurm@2021-10-19T12:56:19]", "not_responding"),
        ("Node unexpectedly rebooted boot_time=1733120000 last response=1733119000", "unexpected_reboot"),
        ("Prolog error", "prolog_error"),
        ("Epilog error", "epilog_error"),
        ("Low RealMemory (reported:128000 < 100.00% of configured:256000)", "low_memory"),
        ("Low socket*core*thread count, Low CPUs", "low_cpus"),
        ("gres/gpu count reported lower than configured (0 < 8)", "gres_count_low"),
        ("batch job complete failure", "batch_job_failure"),
        ("NHC: check_fs_mount:  /lustre not mounted", "nhc"),
        ("gpuops: gpu.xid 79 P1", "gpuops"),
        ("Reboot ASAP", "reboot_requested"),
        ("reboot timed out", "reboot_timed_out"),
        ("flaky NCCL, checking cables T-4711", "operator"),
    ],
)
def test_well_known_reasons_have_a_cause_and_a_next_step(reason, key):
    m = interpret_reason(reason)
    assert m is not None and m["key"] == key, m
    assert m["cause"] and m["next_step"] and m["source"]
    assert key in known_keys()


@pytest.mark.parametrize("reason", [None, "", "none", "memory issues? [root@2019-01-29T10:42:12]", 42])
def test_unknown_reasons_are_not_interpreted(reason):
    assert interpret_reason(reason) is None


def _slurm(*nodes):
    return {"source": "capture:scontrol-show-node.txt", "nodes": list(nodes), "errors": []}


def test_not_responding_fixture_gives_cause_and_next_step_in_the_finding():
    text = (FIX / "scontrol-show-node" / "cn-docs-cpu-node-down-drain-not-responding.txt").read_text()
    (node,) = parse_show_node(text)
    node["name"] = HOST
    fs, dummy = run(facts(slurm=_slurm(node)))
    (f,) = only(fs, "scheduler.node_state")
    assert f["severity"] == "P1" and "cause: slurmctld got no answer" in f["message"] and "next:" in f["message"]
    assert f["evidence"]["reason_meaning"]["key"] == "not_responding"


def test_kill_task_failed_drain_says_unkillable_process():
    n = {"name": HOST, "state": "IDLE+DRAIN", "base_state": "IDLE", "flags": ["DRAIN"], "reason": "Kill task failed"}
    fs, dummy = run(facts(slurm=_slurm(n)))
    (f,) = only(fs, "scheduler.node_state")
    assert f["severity"] == "P3" and "D-state" in f["message"] and "hung GPU" in f["message"]


def test_single_record_of_a_capture_is_the_hosts_whatever_its_nodename():
    n = {"name": "n07", "state": "IDLE+DRAIN", "base_state": "IDLE", "flags": ["DRAIN"], "reason": "Prolog error"}
    fs, dummy = run(facts(slurm=_slurm(n), mode="capture"))
    (f,) = only(fs, "scheduler.node_state")
    assert f["evidence"]["slurm_node_name"] == "n07" and "NodeName=n07" in f["message"]
    # a live listing of several nodes, or of another node only: not this host's record
    fs, dummy = run(facts(slurm=_slurm(n, dict(n, name="n08")), mode="capture"))
    assert not only(fs, "scheduler.node_state")
    fs, dummy = run(facts(slurm=_slurm(n), mode="live"))
    assert not only(fs, "scheduler.node_state")


# ------------------------------------------------------------------------------------ NVLink: all inactive


def _inactive(name, fabric="Completed"):
    return gpu(0, name=name, nvlink={"links": [], "error": NVML_INACTIVE}, fabric={"state": fabric, "status": None})


@pytest.mark.parametrize(
    "name, fabric", [("NVIDIA H100 80GB HBM3", "Completed"), ("NVIDIA A100-SXM4-80GB", "N/A"), ("NVIDIA H200", None)]
)
def test_all_links_inactive_on_an_sxm_board_is_a_gpu_nvlink_finding_without_profile(name, fabric):
    fs, dummy = run(facts(gpus=[_inactive(name, fabric)]))
    (f,) = only(fs, "gpu.nvlink", "gpu0")
    assert (f["severity"], f["code"], f["action"]) == ("P1", "all_inactive", "reset_gpu")
    assert not only(fs, "collector.error")
    # one GPU down while its siblings are up: the zero-config peer check says it, once
    fs, dummy = run(facts(gpus=[_inactive(name, fabric)] + [gpu(i) for i in range(1, 8)]))
    assert [(f["component"], f["code"]) for f in only(fs, "gpu.nvlink")] == [("gpu0", "all_down")]


@pytest.mark.parametrize("name", ["NVIDIA H100 PCIe", "NVIDIA A10G", "NVIDIA H100 NVL"])
def test_all_links_inactive_on_a_pcie_board_is_normal(name):
    fs, dummy = run(facts(gpus=[_inactive(name, fabric="N/A")]))
    assert not only(fs, "gpu.nvlink")


def test_with_a_profile_the_missing_links_finding_says_it_once():
    fs, dummy = run(facts(gpus=[_inactive("NVIDIA A100-SXM4-80GB")] + [gpu(i) for i in range(1, 8)]), profile=PROFILE)
    assert [f["code"] for f in only(fs, "gpu.nvlink", "gpu0")] == ["missing"]
    assert BUS[0]
