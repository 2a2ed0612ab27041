# Tests for the scontrol parsers (plugins/module_utils/parsers/slurm.py).
from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import slurm as sp
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "scontrol-show-node")


def fixture(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return fh.read()


def test_multi_record_with_trailing_spaces_and_blank_separators():
    nodes = sp.parse_show_node(fixture("cshuji-slurm-4nodes-gpu-m60-rtx2080-drain.txt"))
    assert [n["name"] for n in nodes] == ["cortex-01", "dumfries-002", "oxygen-04", "cricket"]
    cortex, _unused, oxygen, cricket = nodes
    assert cortex["raw"]["OS"] == "Linux 4.14.61-aufs-1 #1 SMP Tue Aug 7 18:13:22 IDT 2018"
    assert cortex["partitions"] == ["short", "killable"]
    assert (cortex["gres"], cortex["gres_gpus"], cortex["base_state"], cortex["flags"]) == (
        "gpu:m60:8",
        8,
        "ALLOCATED",
        [],
    )
    assert cortex["raw"]["CfgTRES"] == "cpu=16,mem=257860M,billing=16,gres/gpu=8"
    assert cortex["raw"]["GresUsed"] == "gpu:m60:8(IDX:0-7)"
    assert (oxygen["state"], oxygen["base_state"], oxygen["flags"]) == ("IDLE+DRAIN", "IDLE", ["DRAIN"])
    assert (oxygen["reason"], oxygen["reason_user"], oxygen["reason_time"]) == (
        "memory issues?",
        "root",
        "2019-01-29T10:42:12",
    )
    assert oxygen["gres"] is None and oxygen["gres_gpus"] is None
    assert cricket["gres"] == "gpu:quadro:1(S:0),vmem:2G" and cricket["gres_gpus"] == 1
    assert "Version" not in cricket["raw"] and cricket["raw"]["NodeHostName"] == "cricket"
    assert cricket["boot_time"] == "2019-11-06T16:17:37" and cricket["slurmd_start_time"] == "2019-11-17T07:39:50"


def test_down_drain_not_responding():
    (node,) = sp.parse_show_node(fixture("cn-docs-cpu-node-down-drain-not-responding.txt"))
    assert (node["name"], node["base_state"], node["flags"]) == ("node1", "DOWN", ["DRAIN"])
    assert (node["reason"], node["reason_user"], node["reason_time"]) == (
        "Not responding",
        "slurm",
        "2021-10-19T12:56:19",
    )
    assert node["raw"]["CfgTRES"] == "cpu=48,mem=187.50G,billing=48" and node["raw"]["AllocTRES"] == ""
    assert len(node["raw"]) == 37


def test_slurmd_never_registered():
    (node,) = sp.parse_show_node(fixture("yokota-rtx6000ada-down-not-responding.txt"))
    assert (node["base_state"], node["flags"]) == ("DOWN", ["NOT_RESPONDING"])
    assert node["boot_time"] is None and node["slurmd_start_time"] is None
    assert node["gres_gpus"] == 8 and node["partitions"] == ["rtx6000-ada"]
    assert "OS" not in node["raw"] and node["raw"]["FreeMem"] == "N/A"


def test_oneliner_reason_with_equals_and_three_space_separator():
    text = (
        "NodeName=gpu-node-01 Arch=x86_64 OS=Linux 6.1.0-18-amd64 #1 SMP Debian State=MIXED+DRAIN "
        "Gres=gpu:h100:8(S:0-1) Partitions=gpu,debug Reason=gpuops: gpu.xid code=79 T-123 [root@2026-12-02T10:00:00] "
        "Comment=x\n   \n"
        "NodeName=gpu-node-02 State=IDLE* Partitions=gpu\n"
    )
    a, b = sp.parse_show_node(text)
    assert a["raw"]["OS"] == "Linux 6.1.0-18-amd64 #1 SMP Debian"
    assert a["reason"] == "gpuops: gpu.xid code=79 T-123" and a["reason_user"] == "root"
    assert a["raw"]["Comment"] == "x" and a["partitions"] == ["gpu", "debug"]
    assert (b["base_state"], b["flags"]) == ("IDLE", ["NOT_RESPONDING"])
    assert b["reason"] is None


def test_errors_instead_of_output():
    for text in ("", "Node gpu-node-09 not found", "slurm_load_node error: Unable to contact slurm controller"):
        with pytest.raises(ParseError):
            sp.parse_show_node(text)
    with pytest.raises(ParseError):
        sp.parse_show_node(None)


def test_truncated_and_non_utf8():
    text = fixture("cn-docs-cpu-node-down-drain-not-responding.txt")
    (node,) = sp.parse_show_node(text[: text.index("State=")])
    assert node["name"] == "node1" and node["state"] is None and node["base_state"] is None
    (node,) = sp.parse_show_node(b"NodeName=n\xff1 State=IDLE".decode("utf-8", errors="replace"))
    assert node["base_state"] == "IDLE"


JOBS = """JobId=4242 JobName=train llm
   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A
   Priority=4294901759 Nice=0 Account=(null) QOS=normal
   JobState=RUNNING Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   Partition=gpu AllocNode:Sid=tb-head:1234
   NodeList=gpu-node-[01-02]
   NumNodes=2-2 NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:*

JobId=4243 JobName=interactive
   UserId=bob(1001) GroupId=bob(1001)
   JobState=PENDING Reason=Resources Dependency=(null)
   Requeue=0 Restarts=0 BatchFlag=0 Reboot=0 ExitCode=0:0
   NodeList=(null)
   NumNodes=1 NumCPUs=1
"""


def test_show_job():
    a, b = sp.parse_show_job(JOBS)
    assert (a["job_id"], a["name"], a["user"], a["state"], a["reason"]) == (4242, "train llm", "alice", "RUNNING", None)
    assert (a["node_list"], a["requeue"], a["batch_flag"], a["num_nodes"], a["partition"]) == (
        "gpu-node-[01-02]",
        True,
        True,
        2,
        "gpu",
    )
    assert a["raw"]["CPUs/Task"] == "1" and a["raw"]["AllocNode:Sid"] == "tb-head:1234"
    assert (b["state"], b["reason"], b["node_list"], b["requeue"], b["batch_flag"], b["num_nodes"]) == (
        "PENDING",
        "Resources",
        None,
        False,
        False,
        1,
    )
    assert sp.parse_show_job("No jobs in the system\n") == []
    assert sp.parse_show_job("") == []
    with pytest.raises(ParseError):
        sp.parse_show_job("slurm_load_jobs error: Invalid job id specified")


def test_json_nodes_2205_and_newer():
    obj = {
        "nodes": [
            {
                "name": "gpu-node-01",
                "state": "idle",
                "state_flags": ["DRAIN"],
                "reason": "xid 79",
                "reason_set_by_user": "root",
                "reason_changed_at": 1764669600,
                "gres": "gpu:h100:8",
                "partitions": ["gpu"],
                "boot_time": 1764660000,
            },
            {
                "name": "gpu-node-02",
                "state": ["MIXED", "DRAIN"],
                "reason": "",
                "reason_changed_at": {"set": True, "infinite": False, "number": 0},
                "gres": "",
                "partitions": "x",
            },
            "garbage",
        ]
    }
    a, b = sp.parse_json_nodes(obj)
    assert (a["state"], a["base_state"], a["flags"], a["reason"], a["reason_user"]) == (
        "IDLE+DRAIN",
        "IDLE",
        ["DRAIN"],
        "xid 79",
        "root",
    )
    assert a["reason_time"] == "2025-12-02T10:00:00Z" and a["gres_gpus"] == 8 and a["partitions"] == ["gpu"]
    assert (b["base_state"], b["flags"], b["reason"], b["reason_time"], b["partitions"]) == (
        "MIXED",
        ["DRAIN"],
        None,
        None,
        [],
    )
    for bad in (None, [], {"nodes": "x"}):
        with pytest.raises(ParseError):
            sp.parse_json_nodes(bad)


def test_collect_capture(tmp_path):
    assert sp.collect(capture_dir=str(tmp_path)) == {"source": None, "nodes": [], "errors": []}
    (tmp_path / "scontrol-show-node.txt").write_text(fixture("yokota-rtx6000ada-down-not-responding.txt"))
    r = sp.collect(capture_dir=str(tmp_path))
    assert r["source"] == "capture:scontrol-show-node.txt" and r["errors"] == []
    assert r["nodes"][0]["name"] == "rtx6000-ada"
    (tmp_path / "scontrol-show-node.txt").write_text("Node gpu-node-09 not found\n")
    r = sp.collect(capture_dir=str(tmp_path))
    assert r["nodes"] == [] and r["errors"][0]["kind"] == "tool_error"


def test_collect_live_without_scontrol(monkeypatch):
    monkeypatch.setattr(sp, "which", lambda name: None)
    assert sp.collect(node="gpu-node-01") == {"source": None, "nodes": [], "errors": []}


def test_collect_live_with_fake_scontrol(tmp_path, monkeypatch):
    exe = tmp_path / "scontrol"
    exe.write_text(
        '#!/bin/sh\necho "$@" > %s/args\ncat %s\n'
        % (tmp_path, os.path.join(os.path.abspath(FIX), "yokota-rtx6000ada-down-not-responding.txt"))
    )
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (tmp_path, os.environ.get("PATH", "")))
    r = sp.collect(node="rtx6000-ada", timeout=5)
    assert (tmp_path / "args").read_text().split() == ["show", "node", "rtx6000-ada"]
    assert r["source"] == "scontrol" and r["nodes"][0]["flags"] == ["NOT_RESPONDING"]


@seed(20261202)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.text(max_size=40),
            st.sampled_from(
                [
                    "NodeName=",
                    "JobId=",
                    "State=",
                    "+DRAIN",
                    "Reason=",
                    " [root@",
                    "]",
                    "\n",
                    "   ",
                    "Gres=gpu:",
                    "(S:0)",
                    "Partitions=",
                    ",",
                    "=",
                    "Requeue=",
                    "NumNodes=",
                ]
            ),
        ),
        max_size=30,
    )
)
def test_fuzz_never_raises_anything_but_parse_error(parts):
    text = "".join(parts)
    for fn in (sp.parse_show_node, sp.parse_show_job):
        try:
            json.dumps(fn(text))
        except ParseError:
            pass
