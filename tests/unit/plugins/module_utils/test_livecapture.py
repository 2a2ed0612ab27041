# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Live capture (_livecapture.py) with fake tools on PATH: what is written, what is recorded for missing, failing
and hung tools, the kernel log fallback, and a capture that the collectors read back like a live node."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils import _collect, _livecapture
from tool_helpers import write_tool as _tool

FIX = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures"))
XML = os.path.join(FIX, "nvidia-smi-xml")


def _capture(tmp_path, **kwargs):
    kwargs.setdefault("sysfs_root", str(tmp_path / "root"))
    kwargs.setdefault("node_options", {"services": []})
    return _livecapture.capture(dest_dir=str(tmp_path / "cap"), timeout=kwargs.pop("timeout", 10), **kwargs)


def test_missing_tools_are_recorded_not_fatal(tmp_path, fake_path):
    res = _capture(tmp_path)
    meta = res["meta"]
    assert meta["schema"] == "gpuops.capture/v1" and meta["captured_at"].endswith("Z")
    assert meta["files"]["nvidia-smi-q.xml"] == {
        "argv": ["nvidia-smi", "-q", "-x"],
        "rc": None,
        "error": "nvidia-smi not found on PATH",
    }
    assert "kernel.log" not in meta["files"]  # neither journalctl nor dmesg
    assert sorted(res["files"]) == ["capture.json", "node.json"]
    on_disk = json.loads((tmp_path / "cap" / "capture.json").read_text())
    assert on_disk["files"]["ibstat.txt"]["error"] == "ibstat not found on PATH"
    assert stat.S_IMODE(os.stat(str(tmp_path / "cap")).st_mode) == 0o700


def test_tool_outputs_are_written_and_read_back_by_the_collectors(tmp_path, fake_path):
    xml = os.path.join(XML, sorted(n for n in os.listdir(XML) if n.endswith(".xml"))[0])
    _tool(fake_path, "nvidia-smi", 'if [ "$1" = "-q" ] && [ "$2" = "-x" ]; then cat "%s"; else exit 6; fi' % xml)
    _tool(fake_path, "journalctl", "echo 'journal is broken' >&2; exit 1")
    _tool(
        fake_path,
        "dmesg",
        "echo '2026-12-02T09:58:01,000000+00:00 NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.'",
    )
    res = _capture(tmp_path)
    files = res["meta"]["files"]
    assert files["nvidia-smi-q.xml"]["rc"] == 0 and files["nvidia-smi-q.txt"]["rc"] == 6
    # journalctl failed, dmesg is the fallback that is kept
    assert files["kernel.log"]["argv"] == ["dmesg", "--time-format=iso"] and files["kernel.log"]["rc"] == 0
    facts = _collect.collect_all(capture_dir=res["dir"], domains=["gpu", "kernel"])
    assert facts["gpu"]["count"] >= 1 and facts["gpu"]["source"].startswith("capture:")
    [event] = facts["kernel"]["events"]
    assert event["kind"] == "xid" and event["code"] == 79


def test_a_tool_that_prints_only_to_stderr_leaves_that_as_evidence(tmp_path, fake_path):
    _tool(fake_path, "ibstat", "echo 'ibpanic: [123] main: stat of IB device mlx5_0 failed' >&2; exit 1")
    res = _capture(tmp_path)
    assert (tmp_path / "cap" / "ibstat.txt").read_text().startswith("ibpanic:")
    assert res["meta"]["files"]["ibstat.txt"]["rc"] == 1


def test_a_hung_tool_is_killed_and_recorded(tmp_path, fake_path):
    _tool(fake_path, "ipmitool", "sleep 30")
    res = _capture(tmp_path, timeout=0.5)
    sdr = res["meta"]["files"]["ipmitool-sdr.txt"]
    assert sdr["timed_out"] is True and sdr["rc"] is None


def test_kernel_since_and_dcgm_and_slurm_commands(tmp_path, fake_path, monkeypatch):
    _tool(fake_path, "journalctl", 'echo "$@"')
    _tool(fake_path, "dcgmi", 'echo "$@"')
    _tool(fake_path, "scontrol", 'echo "$@"')
    _capture(tmp_path, kernel_since="-2h", dcgm_level=2, slurm_node="gpu-node-07")
    cap = tmp_path / "cap"
    assert (cap / "kernel.log").read_text() == "-k -o short-iso --no-pager --since -2h\n"
    assert (cap / "dcgmi-diag.txt").read_text() == "diag -r 2\n"
    assert (cap / "scontrol-show-node.txt").read_text() == "show node gpu-node-07\n"


def test_node_collector_failure_is_recorded(tmp_path, fake_path, monkeypatch):
    from ansible_collections.gpuops.cluster.plugins.module_utils import _node

    monkeypatch.setattr(_node, "collect", lambda **kw: 1 / 0)
    res = _capture(tmp_path)
    assert res["meta"]["files"]["node.json"] == {"rc": None, "error": "ZeroDivisionError: division by zero"}
    assert "node.json" not in res["files"]


def test_read_tree_leaves_links_out_and_remove_deletes(tmp_path):
    root = tmp_path / "cap"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("A")
    (root / "sub" / "b.txt").write_bytes(b"\xffB")
    os.symlink("/etc/passwd", str(root / "link.txt"))
    tree = _livecapture.read_tree(str(root))
    assert tree == {"a.txt": "A", os.path.join("sub", "b.txt"): "\ufffdB"}
    with pytest.raises(ValueError):
        _livecapture.read_tree(str(root), max_bytes=1)
    _livecapture.remove(str(root))
    assert not root.exists()
