# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/_slurm.py: hostlists, reason ownership, drain status, plan(), Scontrol."""

from __future__ import annotations

import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils import _slurm
from ansible_collections.gpuops.cluster.plugins.module_utils._slurm import (
    Scontrol,
    SlurmError,
    gpuops_reason,
    jobs_on_node,
    join_reason,
    node_status,
    plan,
    read_status,
    split_reason,
)

P = "gpuops:"

# Captured from the test bed (Debian Slurm 22.05.8, tests/testbed/slurm.sh): a node a person and gpuops both
# drained while a batch job runs on it, and `scontrol show job` with a requeueable running job and a
# --no-requeue pending one.
NODE_MIXED_DRAIN = """NodeName=gpu-node-01 Arch=x86_64 CoresPerSocket=1
   CPUAlloc=1 CPUEfctv=16 CPUTot=16 CPULoad=0.35
   AvailableFeatures=(null)
   ActiveFeatures=(null)
   Gres=gpu:h100:8
   NodeAddr=10.200.0.11 NodeHostName=gpu-node-01 Version=22.05.8
   OS=Linux 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0
   RealMemory=16000 AllocMem=16000 FreeMem=23288 Sockets=16 Boards=1
   State=MIXED+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=gpu
   BootTime=2026-12-02T12:41:51 SlurmdStartTime=2026-12-02T12:54:44
   LastBusyTime=2026-12-02T12:52:40
   CfgTRES=cpu=16,mem=16000M,billing=16
   AllocTRES=cpu=1,mem=16000M
   CapWatts=n/a
   CurrentWatts=0 AveWatts=0
   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s
   Reason=bad fan; gpuops: gpu.xid 79 [root@2026-12-02T12:56:07]

"""
JOBS = """JobId=1 JobName=wrap
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=4294901759 Nice=0 Account=(null) QOS=(null)
   JobState=RUNNING Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:05 TimeLimit=365-00:00:00 TimeMin=N/A
   SubmitTime=2026-12-02T12:56:04 EligibleTime=2026-12-02T12:56:04
   AccrueTime=2026-12-02T12:56:04
   StartTime=2026-12-02T12:56:05 EndTime=2027-12-02T12:56:05 Deadline=N/A
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-02T12:56:05 Scheduler=Backfill
   Partition=gpu AllocNode:Sid=localhost:8144
   ReqNodeList=gpu-node-01 ExcNodeList=(null)
   NodeList=gpu-node-01
   BatchHost=gpu-node-01
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=16000M,node=1,billing=1
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir=/work/main
   StdErr=/dev/null
   StdIn=/dev/null
   StdOut=/dev/null
   Power=


JobId=2 JobName=wrap
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=4294901758 Nice=0 Account=(null) QOS=(null)
   JobState=PENDING Reason=Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions Dependency=(null)
   Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A
   SubmitTime=2026-12-02T12:56:04 EligibleTime=2026-12-02T12:56:04
   AccrueTime=2026-12-02T12:56:04
   StartTime=Unknown EndTime=Unknown Deadline=N/A
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-02T12:56:10 Scheduler=Main
   Partition=gpu AllocNode:Sid=localhost:8144
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=
   NumNodes=2-2 NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=2,mem=32000M,node=2,billing=2
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir=/work/main
   StdErr=/dev/null
   StdIn=/dev/null
   StdOut=/dev/null
   Power=


"""  # noqa: E501 - captured verbatim (trailing blanks stripped)
NODE_IDLE = NODE_MIXED_DRAIN.replace("State=MIXED+DRAIN", "State=IDLE").replace(
    "   Reason=bad fan; gpuops: gpu.xid 79 [root@2026-12-02T12:56:07]\n", ""
)


def status(state, reason=None, jobs=()):
    base, _unused, rest = state.partition("+")
    flags = [f for f in rest.split("+") if f]
    node = {"name": "n1", "state": state, "base_state": base, "flags": flags, "reason": reason}
    return node_status(node, list(jobs), P)


def job(job_id=1, state="RUNNING", requeueable=True, others=()):
    return {"job_id": job_id, "state": state, "requeueable": requeueable, "other_nodes": list(others)}


def _running(node_list, job_id=7):
    return {"job_id": job_id, "state": "RUNNING", "node_list": node_list, "batch_flag": True, "requeue": True}


# node lists in Slurm's forms (cluster-formats.md 1.5, SchedMD hostlist.c): commas split only outside brackets,
# the width of a range is len(lo), text may follow a bracket, several brackets per name are read
@pytest.mark.parametrize(
    "text, node, others",
    [
        ("gpu-node-[01-03,07],login1", "gpu-node-07", ["gpu-node-01", "gpu-node-02", "gpu-node-03", "login1"]),
        ("e05-[42,76],e22-13", "e22-13", ["e05-42", "e05-76"]),
        ("c[020-022]", "c021", ["c020", "c022"]),
        ("n[8-10]", "n10", ["n8", "n9"]),
        ("n[08-10]", "n08", ["n09", "n10"]),
        ("node[1-2]-ib", "node2-ib", ["node1-ib"]),
        ("rack[1-2]n[01-02]", "rack2n01", ["rack1n01", "rack1n02", "rack2n02"]),
        ("gpu-node-01", "gpu-node-01", []),
    ],
)
def test_jobs_on_node_reads_slurm_node_lists(text, node, others):
    (j,) = jobs_on_node([_running(text)], node)
    assert j["other_nodes"] == others


@pytest.mark.parametrize("text", ["(null)", "", None, "None assigned"])
def test_jobs_on_node_no_hosts(text):
    assert jobs_on_node([_running(text)], "gpu-node-01") == []


# lists Slurm never prints (cluster-formats.md 1.5): a reversed range, an unbalanced bracket, a ClusterShell step,
# the legacy 3-D box, a typo that would expand to 100 million names. Before, the lax helper in _slurm.py
# guessed (broken[ -> a node named "broken[", n[0-99999999] -> a node named "n0-99999999").
@pytest.mark.parametrize("text", ["x[5-3]", "broken[", "n]1", "n[1-10/2]", "bgl[123x456]", "exe[1-100000000]"])
def test_jobs_on_node_refuses_a_node_list_slurm_never_prints(text):
    with pytest.raises(SlurmError, match="job 7: unreadable NodeList"):
        jobs_on_node([_running(text)], "gpu-node-01")


def test_one_hostlist_parser():
    assert not hasattr(_slurm, "expand_hostlist") and not hasattr(_slurm, "_expand_one")


@pytest.mark.parametrize(
    "reason, expected",
    [
        (None, (None, None)),
        ("gpuops: gpu.xid 79", (None, "gpuops: gpu.xid 79")),
        ("bad fan", ("bad fan", None)),
        ("bad fan; gpuops: gpu.xid 79", ("bad fan", "gpuops: gpu.xid 79")),
        ("gpuops:x", (None, "gpuops:x")),
        ("note about gpuops: not ours", ("note about gpuops: not ours", None)),
    ],
)
def test_split_reason(reason, expected):
    assert split_reason(reason, P) == expected


def test_reason_helpers():
    assert gpuops_reason("gpu.xid  79", P) == "gpuops: gpu.xid 79"
    assert gpuops_reason("gpuops: already", P) == "gpuops: already"
    assert join_reason("bad fan", "gpuops: x") == "bad fan; gpuops: x"
    assert join_reason(None, None) is None


@pytest.mark.parametrize(
    "state, jobs, drained, draining",
    [
        ("IDLE", (), False, False),
        ("IDLE+DRAIN", (), True, False),
        ("DOWN+DRAIN", (), True, False),
        ("DOWN*+DRAIN", (), True, False),
        ("MIXED+DRAIN", (job(),), False, True),
        ("ALLOCATED+DRAIN", (), False, True),
        ("IDLE+DRAIN+COMPLETING", (), False, True),
        ("IDLE+DRAIN", (job(state="COMPLETING"),), False, True),
        ("DRAINED", (), True, False),
        ("DOWN", (), False, False),
    ],
)
def test_node_status_drained_draining(state, jobs, drained, draining):
    node = status(state, "gpuops: x", jobs) if "*" not in state else None
    if node is None:  # the parser turns a trailing * into the NOT_RESPONDING flag
        node = node_status(
            {"name": "n1", "state": state, "base_state": "DOWN", "flags": ["NOT_RESPONDING", "DRAIN"]}, [], P
        )
    assert (node["drained"], node["draining"]) == (drained, draining)


def test_parsed_capture_status_and_jobs():
    from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm import parse_show_job, parse_show_node

    node = parse_show_node(NODE_MIXED_DRAIN)[0]
    jobs = jobs_on_node(parse_show_job(JOBS), "gpu-node-01")
    assert [j["job_id"] for j in jobs] == [1]  # job 2 is pending, not on the node
    assert jobs[0]["requeueable"] is True and jobs[0]["other_nodes"] == []
    st_ = node_status(node, jobs, P)
    assert st_["draining"] and not st_["drained"]
    assert st_["other_reason"] == "bad fan" and st_["gpuops_reason"] == "gpuops: gpu.xid 79"
    assert st_["reason_user"] == "root"


# plan() cases: (request, current state, current reason, jobs) -> (updates, requeue, warning substring)
PLAN_CASES = [
    (
        "drain idle",
        dict(state="drained", reason="gpu.xid 79"),
        "IDLE",
        None,
        (),
        [{"State": "DRAIN", "Reason": "gpuops: gpu.xid 79"}],
        [],
        None,
    ),
    (
        "drain again is a no-op",
        dict(state="drained", reason="gpu.xid 79"),
        "IDLE+DRAIN",
        "gpuops: gpu.xid 79",
        (),
        [],
        [],
        None,
    ),
    (
        "new gpuops reason replaces ours",
        dict(state="drained", reason="ib.down"),
        "IDLE+DRAIN",
        "gpuops: gpu.xid 79",
        (),
        [{"State": "DRAIN", "Reason": "gpuops: ib.down"}],
        [],
        None,
    ),
    (
        "person's drain kept, ours appended",
        dict(state="drained", reason="x"),
        "IDLE+DRAIN",
        "bad fan",
        (),
        [{"State": "DRAIN", "Reason": "bad fan; gpuops: x"}],
        [],
        "already drained by someone else",
    ),
    (
        "both present is a no-op",
        dict(state="drained", reason="x"),
        "IDLE+DRAIN",
        "bad fan; gpuops: x",
        (),
        [],
        [],
        None,
    ),
    (
        "busy node drains, requeue",
        dict(state="drained", reason="x", requeue=True),
        "MIXED",
        None,
        (job(1), job(2, requeueable=False, others=["n2"]), job(3, state="COMPLETING")),
        [{"State": "DRAIN", "Reason": "gpuops: x"}],
        [1],
        "2 (nodes n2)",
    ),
    ("down", dict(state="down", reason="x"), "IDLE", None, (), [{"State": "DOWN", "Reason": "gpuops: x"}], [], None),
    ("down again", dict(state="down", reason="x"), "DOWN", "gpuops: x", (), [], [], None),
    ("resume ours", dict(state="resumed"), "IDLE+DRAIN", "gpuops: x", (), [{"State": "RESUME"}], [], None),
    ("resume ours while down", dict(state="resumed"), "DOWN", "gpuops: x", (), [{"State": "RESUME"}], [], None),
    ("resume idle is a no-op", dict(state="resumed"), "IDLE", None, (), [], [], None),
    ("resume someone else's: refused", dict(state="resumed"), "IDLE+DRAIN", "bad fan", (), [], [], "use force"),
    (
        "resume someone else's with force",
        dict(state="resumed", force=True),
        "IDLE+DRAIN",
        "bad fan",
        (),
        [{"State": "RESUME"}],
        [],
        "cleared a drain set by someone else",
    ),
    (
        "resume leaves theirs",
        dict(state="resumed"),
        "IDLE+DRAIN",
        "bad fan; gpuops: x",
        (),
        [{"State": "DRAIN", "Reason": "bad fan"}],
        [],
        "stays drained",
    ),
    (
        "resume both with force",
        dict(state="resumed", force=True),
        "IDLE+DRAIN",
        "bad fan; gpuops: x",
        (),
        [{"State": "RESUME"}],
        [],
        "cleared",
    ),
    ("present reads only", dict(state="present"), "IDLE+DRAIN", "bad fan", (), [], [], None),
]


@pytest.mark.parametrize(
    "request_, state, reason, jobs, updates, requeue, warning",
    [c[1:] for c in PLAN_CASES],
    ids=[c[0] for c in PLAN_CASES],
)
def test_plan(request_, state, reason, jobs, updates, requeue, warning):
    req = dict(request_)
    result = plan(req.pop("state"), status(state, reason, jobs), prefix=P, **req)
    assert result["updates"] == updates
    assert result["requeue"] == requeue
    if warning is None:
        assert result["warnings"] == []
    else:
        assert any(warning in w for w in result["warnings"]), result["warnings"]


def test_plan_requires_reason_and_known_state():
    with pytest.raises(ValueError):
        plan("drained", status("IDLE"), reason=None)
    with pytest.raises(ValueError):
        plan("down", status("IDLE"), reason="  ")
    with pytest.raises(ValueError):
        plan("drain", status("IDLE"), reason="x")


def test_plan_is_idempotent_after_applying():
    """Applying the planned update and planning again gives nothing to do (the four-step contract)."""
    cases = [("drained", "IDLE", None), ("drained", "IDLE+DRAIN", "bad fan"), ("resumed", "IDLE+DRAIN", "gpuops: x")]
    for want, state, reason in cases:
        first = plan(want, status(state, reason), reason="x", prefix=P)
        assert first["updates"]
        upd = first["updates"][-1]
        new_state = {"DRAIN": "IDLE+DRAIN", "RESUME": "IDLE", "DOWN": "DOWN"}[upd["State"]]
        second = plan(want, status(new_state, upd.get("Reason")), reason="x", prefix=P)
        assert second["updates"] == [], (want, state, reason)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.text(max_size=60))
def test_fuzz_hostlist_and_reason(text):
    try:
        assert isinstance(jobs_on_node([_running(text)], "n1"), list)
    except SlurmError as exc:  # a list Slurm never prints: a clear error, never another exception
        assert "unreadable NodeList" in str(exc)
    others, ours = split_reason(text, P)
    assert others is None or isinstance(others, str)
    assert ours is None or ours.startswith(P)


# ----------------------------------------------------------------------------------------------------------
# Scontrol wrapper against a fake scontrol program


@pytest.fixture()
def fake_scontrol(tmp_path):
    (tmp_path / "node.txt").write_text(NODE_MIXED_DRAIN)
    (tmp_path / "jobs.txt").write_text(JOBS)
    script = tmp_path / "scontrol"
    script.write_text(
        "#!/bin/sh\n"
        'echo "$*" >> "%(d)s/calls.log"\n'
        'case "$1 $2" in\n'
        '  "show node") [ "$3" = gpu-node-01 ] && exec cat "%(d)s/node.txt"; echo "Node $3 not found"; exit 1 ;;\n'
        '  "show job") exec cat "%(d)s/jobs.txt" ;;\n'
        '  "update "*|"requeue "*) exit 0 ;;\n'
        '  "hang "*) sleep 5 ;;\n'
        "esac\n"
        "exit 2\n" % {"d": tmp_path}
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return tmp_path


def test_scontrol_read_update_requeue(fake_scontrol):
    sc = Scontrol(str(fake_scontrol / "scontrol"), timeout=5)
    st_ = read_status(sc, "gpu-node-01", P)
    assert st_["state"] == "MIXED+DRAIN" and st_["draining"]
    assert [j["job_id"] for j in st_["jobs"]] == [1]
    sc.update_node("gpu-node-01", {"State": "DRAIN", "Reason": "bad fan; gpuops: x y"})
    sc.requeue(1)
    calls = (fake_scontrol / "calls.log").read_text().splitlines()
    assert calls[-2:] == ["update NodeName=gpu-node-01 State=DRAIN Reason=bad fan; gpuops: x y", "requeue 1"]
    assert sc.commands[0][1:] == ["show", "node", "gpu-node-01"]


def test_scontrol_errors(fake_scontrol):
    sc = Scontrol(str(fake_scontrol / "scontrol"), timeout=5)
    with pytest.raises(SlurmError, match="not found"):
        sc.show_node("gpu-node-99")
    with pytest.raises(SlurmError, match="cannot run"):
        Scontrol(str(fake_scontrol / "missing"), timeout=5).show_jobs()
    with pytest.raises(SlurmError, match="timed out"):
        Scontrol(str(fake_scontrol / "scontrol"), timeout=0.3)._run(["hang", "x"])


def test_module_utils_has_no_ansible_imports():
    with open(_slurm.__file__, encoding="utf-8") as fh:
        assert "import ansible." not in fh.read().replace("ansible_collections", "")
    assert os.path.basename(_slurm.__file__) == "_slurm.py"


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    st.sampled_from(["drained", "resumed", "down", "present"]),
    st.text(alphabet="IDLEMXAOCRNGUDWP+*~", max_size=25),
    st.one_of(st.none(), st.text(max_size=40), st.just("bad fan; gpuops: x")),
    st.booleans(),
    st.booleans(),
)
def test_fuzz_plan(want, state, reason, force, requeue):
    node = {"name": "n1", "state": state, "base_state": state.split("+")[0], "flags": state.split("+")[1:]}
    node["reason"] = reason
    st_ = node_status(node, [job(1), job(2, requeueable=False)], P)
    assert not (st_["drained"] and st_["draining"])
    result = plan(want, st_, reason="x", prefix=P, force=force, requeue=requeue)
    for upd in result["updates"]:
        assert upd["State"] in ("DRAIN", "DOWN", "RESUME")
        if upd["State"] == "DRAIN" and want == "drained":
            assert upd["Reason"].endswith("gpuops: x")
    assert set(result["requeue"]) <= {1}


def test_read_status_with_a_node_list_slurm_never_prints_is_a_slurm_error(fake_scontrol):
    # the module (slurm_node) and the batch (_slurm_batch) turn a SlurmError into fail_json / a per-node error
    (fake_scontrol / "jobs.txt").write_text(JOBS.replace("NodeList=gpu-node-01\n", "NodeList=gpu-node-[01-10/2]\n", 1))
    sc = Scontrol(str(fake_scontrol / "scontrol"), timeout=5)
    with pytest.raises(SlurmError, match=r"job 1: unreadable NodeList: .*gpu-node-\[01-10/2\]"):
        read_status(sc, "gpu-node-01", P)
