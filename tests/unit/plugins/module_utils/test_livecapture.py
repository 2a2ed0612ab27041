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

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    collect as _collect,
    livecapture as _livecapture,
)
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
    from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import node as _node

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


# --- capture_tree: the evidence of some domains, held in memory (collect_info parse_on=controller) ---------------


def _tree_capture(tmp_path, **kwargs):
    kwargs.setdefault("sysfs_root", str(tmp_path / "root"))
    kwargs.setdefault("node_options", {"services": []})
    return _livecapture.capture_tree(timeout=kwargs.pop("timeout", 10), **kwargs)


def test_capture_tree_runs_only_the_tools_of_the_domains_asked_for(tmp_path, fake_path):
    xml = os.path.join(XML, sorted(n for n in os.listdir(XML) if n.endswith(".xml"))[0])
    calls = tmp_path / "calls"
    _tool(fake_path, "nvidia-smi", 'echo "nvidia-smi $*" >>%s; [ "$2" = "-x" ] && cat "%s"; exit 0' % (calls, xml))
    _tool(fake_path, "ipmitool", 'echo "ipmitool $*" >>%s; echo "SEL has no entries"' % calls)
    _tool(fake_path, "ibstat", 'echo "ibstat $*" >>%s' % calls)
    res = _tree_capture(tmp_path, domains=["gpu"])
    tree, meta = res["tree"], res["meta"]
    assert meta["domains"] == ["gpu"]
    ran = calls.read_text().splitlines()
    # the XML printed GPUs: the text form (-q) is not run; NVLink status and errors are
    assert ran == ["nvidia-smi -q -x", "nvidia-smi nvlink -s", "nvidia-smi nvlink -e"]
    assert sorted(tree) == ["capture.json", "nvidia-smi-nvlink-e.txt", "nvidia-smi-nvlink-s.txt", "nvidia-smi-q.xml"]
    assert json.loads(tree["capture.json"]) == meta
    # nothing is written on the node: the temporary capture directory of capture() is not used
    assert not any(n.startswith("gpuops-capture-") for n in os.listdir(str(tmp_path)))


def test_capture_tree_takes_the_text_form_when_the_xml_failed(tmp_path, fake_path):
    _tool(fake_path, "nvidia-smi", '[ "$2" = "-x" ] && { echo "Failed to initialize NVML" >&2; exit 9; }; echo text')
    tree = _tree_capture(tmp_path, domains=["gpu"])["tree"]
    assert tree["nvidia-smi-q.xml"] == "Failed to initialize NVML\n" and tree["nvidia-smi-q.txt"] == "text\n"


def test_capture_tree_runs_ibstat_only_without_a_sysfs_listing(tmp_path, fake_path):
    ibstat = os.path.join(FIX, "ibstat", sorted(os.listdir(os.path.join(FIX, "ibstat")))[0])
    _tool(fake_path, "ibstat", 'cat "%s"' % ibstat)
    without = _tree_capture(tmp_path, domains=["ib"])["tree"]
    assert "ibstat.txt" in without and "infiniband-sysfs.txt" not in without
    root = tmp_path / "root" / "sys" / "class" / "infiniband" / "mlx5_0"
    (root / "ports" / "1").mkdir(parents=True)
    (root / "fw_ver").write_text("28.39.1002\n")
    (root / "ports" / "1" / "state").write_text("4: ACTIVE\n")
    with_listing = _tree_capture(tmp_path, domains=["ib"])["tree"]
    assert "ibstat.txt" not in with_listing
    assert "./mlx5_0/ports/1/state:4: ACTIVE" in with_listing["infiniband-sysfs.txt"]


def test_capture_tree_packs_into_what_the_controller_reads(tmp_path, fake_path):
    _tool(fake_path, "ibstat", "echo \"CA 'mlx5_0'\"")
    res = _tree_capture(tmp_path, domains=["ib", "node"])
    packed = _livecapture.pack(res["tree"])
    assert packed.isascii() and len(packed) < sum(len(v) for v in res["tree"].values()) * 2
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import livetree as _livetree

    assert _livetree.unpack(packed) == res["tree"]


def test_capture_options_are_checked(tmp_path):
    with pytest.raises(TypeError, match="unknown capture option"):
        _livecapture.capture_tree(sysfs_rot="/")


def test_tools_run_side_by_side_and_each_tools_calls_in_order(tmp_path, fake_path):
    """One thread a tool: nvidia-smi, ipmitool and the kernel log overlap; ipmitool's own calls never do (one BMC
    request at a time), and nvidia-smi's text form still waits for (and follows) its XML."""
    log = tmp_path / "spans"
    body = 'echo "start %s $* $(date +%%s.%%N)" >>{log}; sleep 0.3; echo "end %s $* $(date +%%s.%%N)" >>{log}'.format(
        log=log
    )
    for tool in ("nvidia-smi", "ipmitool", "journalctl"):
        _tool(fake_path, tool, (body % (tool, tool)) + ("; exit 3" if tool == "nvidia-smi" else ""))
    _tool(fake_path, "date", 'exec /bin/date "$@"')
    _livecapture.capture_tree(timeout=10, sysfs_root=str(tmp_path / "root"), domains=["gpu", "bmc", "kernel"])
    spans = {}
    for line in log.read_text().splitlines():
        edge, tool, rest = line.split(" ", 2)
        args, stamp = rest.rsplit(" ", 1)
        spans.setdefault((tool, args), {})[edge] = float(stamp)

    def overlap(a, b):
        return a["start"] < b["end"] and b["start"] < a["end"]

    xml, text = spans[("nvidia-smi", "-q -x")], spans[("nvidia-smi", "-q")]  # the XML failed (exit 3): text taken
    assert text["start"] >= xml["end"]
    ipmi = sorted((s for (tool, _a), s in spans.items() if tool == "ipmitool"), key=lambda s: s["start"])
    assert len(ipmi) == 5 and all(a["end"] <= b["start"] for a, b in zip(ipmi, ipmi[1:]))
    assert overlap(xml, ipmi[0]) and overlap(xml, spans[("journalctl", "-k -o short-iso --no-pager -b")])
