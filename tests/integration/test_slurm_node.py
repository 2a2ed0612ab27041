# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.slurm_node against the test bed's real Slurm 22.05 (delegated to the `slurm_head` host)."""

from __future__ import annotations

import pytest

M = "gpuops.cluster.slurm_node"


@pytest.fixture()
def node_module(testbed):
    def run(node, check=False, diff=False, **args):
        args = dict(args, name=node, scontrol_path=testbed.scontrol_path)
        return testbed.module("slurm_head", M, args, check=check, diff=diff)

    return run


def _ok(res):
    assert not res.get("failed"), res
    return res


def test_four_step_drain_then_resume(testbed):
    node = "gpu-node-03"
    common = dict(name=node, scontrol_path=testbed.scontrol_path)
    drain = dict(common, state="drained", reason="four-step")
    resume = dict(common, state="resumed")
    steps = testbed.module_steps(
        "slurm_head",
        M,
        [dict(drain, _check=True), drain, dict(drain, _check=True), drain]
        + [dict(resume, _check=True), resume, dict(resume, _check=True), resume],
        diff=True,
    )
    for res in steps:
        _ok(res)
    assert [r["changed"] for r in steps[:4]] == [True, True, False, False]
    assert steps[0]["slurm_state"] == "IDLE"  # check mode changed nothing
    assert steps[0]["diff"]["after"]["reason"] == "gpuops: four-step"
    assert steps[1]["diff"]["before"]["state"] == "IDLE"
    assert steps[1]["slurm_state"] == "IDLE+DRAIN" and steps[1]["drained"] is True
    assert steps[3]["reason"] == "gpuops: four-step" and steps[3]["drained"] is True
    assert [r["changed"] for r in steps[4:]] == [True, True, False, False]
    assert steps[4]["slurm_state"] == "IDLE+DRAIN"  # check mode: still drained
    assert "DRAIN" not in steps[5]["slurm_state"] and steps[5]["drained"] is False
    state = testbed.node_state(node)
    assert state.startswith("IDLE") and "DRAIN" not in state


def test_present_reads_only(testbed, node_module):
    res = _ok(node_module("gpu-node-01", state="present"))
    assert res["changed"] is False
    assert res["slurm_state"] == "IDLE" and res["drained"] is False and res["jobs"] == []
    res = node_module("gpu-node-99", state="present")
    assert res.get("failed") and "gpu-node-99" in res["msg"]


def test_busy_node_drains_after_its_job(testbed, node_module):
    node = "gpu-node-04"
    job = testbed.sbatch("-w", node, "--wrap", "sleep 4")
    testbed.wait_for(lambda: testbed.job_state(job) == "RUNNING", timeout=15, what="job running")
    res = _ok(node_module(node, state="drained", reason="busy"))
    assert res["changed"] and res["draining"] is True and res["drained"] is False
    assert res["slurm_state"] in ("MIXED+DRAIN", "ALLOCATED+DRAIN")
    assert [j["job_id"] for j in res["jobs"]] == [job]
    res = _ok(node_module(node, state="drained", reason="busy", wait=True, wait_timeout=30))
    assert res["changed"] is False and res["drained"] is True and res["jobs"] == []
    assert testbed.node_state(node) == "IDLE+DRAIN"


def test_wait_times_out(testbed, node_module):
    node = "gpu-node-08"
    job = testbed.sbatch("-w", node, "--wrap", "sleep 30")
    testbed.wait_for(lambda: testbed.job_state(job) == "RUNNING", timeout=15, what="job running")
    res = node_module(node, state="drained", reason="slow", wait=True, wait_timeout=2)
    assert res.get("failed") and "still" in res["msg"]
    assert "DRAIN" in testbed.node_state(node)


def test_requeue_and_report_unrequeueable(testbed, node_module):
    node, other = "gpu-node-05", "gpu-node-06"
    requeueable = testbed.sbatch("--requeue", "-w", node, "--wrap", "sleep 60")
    pinned = testbed.sbatch("--no-requeue", "-N2", "-w", "%s,%s" % (node, other), "--wrap", "sleep 60")
    for job in (requeueable, pinned):
        testbed.wait_for(lambda j=job: testbed.job_state(j) == "RUNNING", timeout=15, what="job %s running" % job)
    res = _ok(node_module(node, state="drained", reason="requeue test", requeue=True))
    assert res["changed"] is True
    assert res["requeued"] == [requeueable]
    assert [(j["job_id"], j["other_nodes"]) for j in res["not_requeueable"]] == [(pinned, [other])]
    assert any(str(pinned) in w for w in res.get("warnings", []))
    # the requeued job left the node (pending again, never back on a draining node); the pinned one still runs
    assert testbed.job_state(requeueable) in ("PENDING", "REQUEUED", "REQUEUE_HOLD", "CONFIGURING")
    assert testbed.job_state(pinned) == "RUNNING"
    on_node = {j["job_id"]: j["state"] for j in res["jobs"]}
    assert on_node[pinned] == "RUNNING" and on_node.get(requeueable, "GONE") != "RUNNING"


def test_someone_elses_reason_survives(testbed):
    node = "gpu-node-07"
    common = dict(name=node, scontrol_path=testbed.scontrol_path)
    testbed.scontrol("update", "NodeName=%s" % node, "State=DRAIN", "Reason=bad fan T-77")
    isolate, resume = dict(common, state="drained", reason="gpu.xid 79"), dict(common, state="resumed")
    r = testbed.module_steps("slurm_head", M, [isolate, resume, resume, dict(resume, force=True)])
    for res in r:
        _ok(res)
    # isolating keeps the person's reason and appends ours
    assert r[0]["changed"] and r[0]["reason"] == "bad fan T-77; gpuops: gpu.xid 79"
    assert any("someone else" in w for w in r[0].get("warnings", []))
    # resume removes only our part: still drained for the person's reason
    assert r[1]["changed"] and r[1]["reason"] == "bad fan T-77" and r[1]["drained"] is True
    # resuming again does not clear their drain without force
    assert r[2]["changed"] is False and any("use force" in w for w in r[2].get("warnings", []))
    assert r[2]["slurm_state"] == "IDLE+DRAIN"
    # force does, and says so
    assert r[3]["changed"] and r[3]["slurm_state"].startswith("IDLE") and "DRAIN" not in r[3]["slurm_state"]
    assert any("someone else" in w for w in r[3].get("warnings", []))


def test_down_and_back(testbed, node_module):
    node = "gpu-node-02"
    res = _ok(node_module(node, state="down", reason="bmc says psu lost"))
    assert res["changed"] and res["slurm_state"].startswith("DOWN")
    # idempotent while the node is DOWN. The bed's ReturnToService=2 may put a DOWN node whose slurmd answers back
    # to IDLE between two calls (the reason the isolate role also drains what it downs): then setting DOWN again is
    # a change. The module's own "before" tells which case each call saw; at least one of 3 calls must see DOWN.
    seen_down = False
    for _attempt in range(3):
        again = _ok(node_module(node, diff=True, state="down", reason="bmc says psu lost"))
        was_down = again["diff"]["before"]["state"].startswith("DOWN")
        assert again["changed"] is (not was_down), again
        if was_down:
            seen_down = True
            break
    assert seen_down, "the node never stayed DOWN between two calls"
    res = _ok(node_module(node, state="resumed"))
    assert res["changed"]
    testbed.wait_for(lambda: testbed.node_state(node) == "IDLE", timeout=15, what="node idle")


def test_a_batch_in_one_call(testbed):
    """names (issue 36): one call drains an idle and a busy node - check mode first, then for real, then again
    (nothing to do) - and resumes both; every entry agrees with what scontrol shows, and a name that is a host
    list is refused before anything runs."""
    idle, busy = "gpu-node-01", "gpu-node-03"
    job = testbed.sbatch("-w", busy, "--wrap", "sleep 30")
    testbed.wait_for(lambda: testbed.job_state(job) == "RUNNING", timeout=15, what="job running")
    drain = dict(names=[idle, busy], state="drained", reason="batch test", verify=True,
                 scontrol_path=testbed.scontrol_path)  # fmt: skip
    steps = testbed.module_steps("slurm_head", M, [dict(drain, _check=True), drain, drain])
    check, run, again = ({e["name"]: e for e in s["node_results"]} for s in steps)
    assert steps[0]["changed"] and check[idle]["slurm_state"] == "IDLE" and check[idle]["verified"] is None
    _ok(steps[1])
    assert run[idle]["state_before"] == "IDLE" and run[idle]["verified"]["slurm_state"] == "IDLE+DRAIN"
    assert run[idle]["verified"]["drained"] is True and run[idle]["reason"] == "gpuops: batch test"
    assert run[busy]["verified"]["draining"] is True and [j["job_id"] for j in run[busy]["jobs"]] == [job]
    assert run[busy]["verified"]["slurm_state"] == testbed.node_state(busy)
    _ok(steps[2])
    assert steps[2]["changed"] is False and not any(e["changed"] for e in again.values())
    testbed.slurm("scancel", str(job), check=False)
    res = _ok(
        testbed.module("slurm_head", M, dict(names=[idle, busy], state="resumed", scontrol_path=testbed.scontrol_path))
    )
    assert all(e["changed"] for e in res["node_results"])
    testbed.wait_for(
        lambda: all("DRAIN" not in testbed.node_state(n) for n in (idle, busy)), timeout=30, what="resumed"
    )
    bad = testbed.module(
        "slurm_head", M, dict(names=["gpu-node-[01-02]"], state="present", scontrol_path=testbed.scontrol_path)
    )
    assert bad.get("failed") and "invalid node name" in bad["msg"] and not bad.get("commands")
