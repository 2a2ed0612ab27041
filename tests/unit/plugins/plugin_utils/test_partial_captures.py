# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Partial captures (issue 20): any subset of a capture's files is analysed on its own.

The full capture is what the demo's simulated node writes (tools/simnode: real tool output formats). Every
single file, and a few multi-file subsets, is copied into a capture of its own and inspected: no traceback,
no collector error caused only by a sibling file being absent, and what the file shows is still found.
"""

from __future__ import annotations

import os
import random
import shutil
import sys

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import collect_all
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import evaluate_node

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "tools"))

from simnode import faults as F  # noqa: E402
from simnode.capture import capture  # noqa: E402
from simnode.state import default_state  # noqa: E402

HOST = "gpu-node-07"
NOW = "2026-12-02T10:05:00Z"


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """A full capture of a node with an Xid 48 (kernel log, nvidia-smi, dcgmi) and a PSU failure (SEL, SDR)."""
    state = default_state(HOST, seed=7)
    F.apply(state, "xid48", random.Random(1), gpu=2)
    F.apply(state, "psu_failure", random.Random(1))
    out = tmp_path_factory.mktemp("full") / "capture"
    capture(state, str(out))
    return out


def _subset(full, names, dest):
    dest.mkdir()
    for name in names:
        src = full / name
        if src.is_dir():
            shutil.copytree(src, dest / name)
        else:
            shutil.copy2(src, dest / name)
    return str(dest)


def _inspect(cap):
    facts = collect_all(capture_dir=cap)
    findings, dummy_state = evaluate_node(facts, None, None, None, NOW, HOST)
    return facts, findings


def _sibling_errors(facts):
    """Collector errors of the subset (a missing sibling must never be one)."""
    return [e for e in facts.get("errors") or [] if e.get("kind") != "missing" or e.get("domain") != "capture"]


def test_every_single_file_alone(full, tmp_path):
    names = sorted(os.listdir(full))
    assert "capture.json" in names and "kernel.log" in names and len(names) > 12
    for name in names:
        cap = _subset(full, [name], tmp_path / ("only-" + name))
        facts, findings = _inspect(cap)
        assert _sibling_errors(facts) == [], (name, _sibling_errors(facts))
        errors = [f for f in findings if f["check"] == "collector.error"]
        if name == "capture.json":  # metadata without any evidence: said once, as "no evidence file"
            assert [f["component"] for f in errors] == ["collector:capture"], errors
            continue
        assert not errors, (name, errors)
        # what the file alone shows is still found
        checks = {f["check"] for f in findings}
        if name == "kernel.log":
            assert "gpu.xid" in checks
        if name == "ipmitool-sel.txt":
            assert "bmc.sel" in checks


@pytest.mark.parametrize(
    "names",
    [
        ["kernel.log", "capture.json"],
        ["nvidia-smi-nvlink-s.txt", "nvidia-smi-nvlink-e.txt"],
        ["nvidia-smi-q.xml", "kernel.log"],
        ["ipmitool-sdr.txt", "ipmitool-sel.txt", "scontrol-show-node.txt"],
        ["ibstat.txt", "infiniband-sysfs.txt", "node.json"],
        ["dcgmi-diag.txt", "nvidia-smi-nvlink-s.txt", "capture.json"],
    ],
)
def test_multi_file_subsets(full, tmp_path, names):
    facts, findings = _inspect(_subset(full, names, tmp_path / "subset"))
    assert _sibling_errors(facts) == [], _sibling_errors(facts)
    assert not [f for f in findings if f["check"] == "collector.error"], findings


def test_nvlink_alone_makes_gpu_records_from_its_headers(full, tmp_path):
    facts, dummy = _inspect(_subset(full, ["nvidia-smi-nvlink-s.txt"], tmp_path / "nv"))
    gpus = facts["gpu"]["gpus"]
    assert [g["index"] for g in gpus] == list(range(8))
    assert gpus[0]["name"] == "NVIDIA H100 80GB HBM3" and gpus[0]["uuid"].startswith("GPU-")
    assert len(gpus[3]["nvlink"]["links"]) == 18 and facts["gpu"]["source"] == "capture:nvidia-smi-nvlink-s.txt"


@pytest.mark.parametrize("headers", [True, False])
def test_all_links_inactive_is_a_finding_not_a_collector_error(tmp_path, headers):
    """nvidia-smi nvlink -s on an HGX node whose GPU 4 has no link up: per-GPU NVML line under its header, or
    the NVML line alone (nvidia-smi nvlink -s -i 4; open-gpu-kernel-modules #1150)."""
    state = default_state(HOST, seed=7)
    for lk in state["gpus"][4]["nvlinks"]:
        lk["up"] = False
    capture(state, str(tmp_path / "cap"))
    cap = tmp_path / "cap"
    if not headers:
        (cap / "nvidia-smi-nvlink-s.txt").write_text(
            "NVML: Unable to retrieve NVLink information as all links are inactive\n"
        )
        (cap / "nvidia-smi-nvlink-e.txt").unlink()
    else:
        assert "all links are inactive" in (cap / "nvidia-smi-nvlink-s.txt").read_text()
    facts, findings = _inspect(str(cap))
    assert facts["errors"] == []
    assert not [f for f in findings if f["check"] == "collector.error"]
    nv = sorted((f["component"], f["code"]) for f in findings if f["check"] == "gpu.nvlink")
    # with headers only GPU 4 says so, while its siblings' links are up: the peer check's all_down; the NVML
    # line alone is about every GPU the inventory lists
    assert nv == ([("gpu4", "all_down")] if headers else [("gpu%d" % i, "all_inactive") for i in range(8)])
