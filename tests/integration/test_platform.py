# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster platform on the test bed (issue 19): real slurmctld, slurmdbd (MariaDB) and sacct.

History is made by real jobs: jobs that succeed, one that exits non-zero, and jobs sent to a node that lacks the
scratch directory every job needs (created on the other nodes only, in their private overlays): that node fails
every job sent to it, while all its hardware readings stay green. One inspection names it; a stopped slurmctld
is a cluster P0 within one inspection; a stopped slurmdbd is the accounting P2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "build"))

from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform.checks import check_platform  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import DEFAULT_POLICY  # noqa: E402

SCRATCH = "/srv/scratch"


def _inspect(testbed, tmp_path, target, name):
    out = tmp_path / name
    proc = testbed.playbook(
        str(REPO / "playbooks" / "inspect.yml"),
        "-e",
        "gpuops_targets=%s" % target,
        "-e",
        "gpuops_scheduler_host=slurm_head",
        "-e",
        "gpuops_scheduler_bin_dir=%s" % testbed.bin,
        "-e",
        "gpuops_report_dir=%s" % out,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return json.loads((out / "report.json").read_text())


#: The documented rule for a node that fails its jobs (docs/checks.md, scheduler.job_failures (node)), default
#: thresholds: >= 3 failed jobs, >= 50 % of its finished jobs, >= 2 x the failure rate of the jobs elsewhere.
#: Finished: Slurm's final states except CANCELLED (the user's); failed: the documented failure_states.
MIN_FAILURES, SHARE, RATIO = 3, 0.5, 2.0
FAILED_STATES = ("FAILED", "NODE_FAIL", "BOOT_FAIL", "OUT_OF_MEMORY")
FINISHED_STATES = FAILED_STATES + ("COMPLETED", "TIMEOUT", "PREEMPTED", "DEADLINE")


def _tally(window, node):
    """From sacct's own states: ((jobs, failed) of ``node``, (jobs, failed) of the jobs that did not run on it)."""
    own = [r["state"] for r in window if r["state"] in FINISHED_STATES and node in r["nodes"]]
    rest = [r["state"] for r in window if r["state"] in FINISHED_STATES and node not in r["nodes"]]
    return (
        (len(own), sum(s in FAILED_STATES for s in own)),
        (len(rest), sum(s in FAILED_STATES for s in rest)),
    )


@pytest.fixture(scope="module")
def history(testbed):
    """Real jobs through slurmctld into slurmdbd; returns (bad node, failed job ids, the settled window).

    The check reads the whole accounting window, which this module shares with the tests that ran jobs before it
    (isolate, fault matrix, onboard): their jobs decide the other nodes' rate. sacct lags slurmctld (job records
    reach slurmdbd through slurmctld's DBD agent queue), so the window is read only once slurmdbd has caught up
    (a condition with a deadline), before the jobs are sized from it and again once they have ended: what the
    inspection reads is then what Slurm recorded, and the documented rule holds in it."""
    good, bad = testbed.nodes[0], testbed.nodes[-1]
    for host in testbed.nodes:
        if host != bad:
            testbed.on_node(host, "mkdir", "-p", SCRATCH)
    before = testbed.accounting_settled(what="the window before the history jobs")
    (bad_jobs, _bad_failed), (other_jobs, other_failed) = _tally(before, bad)
    # more failures on the bad node than all it ran before (its share > 50 %), and the other jobs' failure rate,
    # with the failing job below, at most 1 in 4 (twice it at most 50 %)
    fails = max(MIN_FAILURES, bad_jobs + 1)
    goods = max(2, 4 * (other_failed + 1) - (other_jobs + 1))
    ok = [testbed.sbatch("-w", good, "--wrap", "cd %s && true" % SCRATCH) for n in range(goods)]
    exit3 = testbed.sbatch("-w", good, "--wrap", "exit 3")
    failed = [testbed.sbatch("-w", bad, "--gres=gpu:1", "--wrap", "cd %s && true" % SCRATCH) for n in range(fails)]
    # Slurm's semantics: exit 0 is COMPLETED, a non-zero exit (cd into a missing directory, exit 3) is FAILED
    expect = dict([(str(i), "COMPLETED") for i in ok] + [(str(i), "FAILED") for i in [exit3] + failed])

    def ended():
        states = {r["job_id"]: r["state"] for r in testbed.accounting_window()}
        return all(states.get(i) in FINISHED_STATES for i in expect)

    testbed.wait_for(ended, timeout=120, interval=0.5, what="the history jobs ended and recorded by slurmdbd")
    window = testbed.accounting_settled(what="the window after the history jobs")
    states = {r["job_id"]: r["state"] for r in window}
    assert {i: states.get(i) for i in expect} == expect, window
    (bad_jobs, bad_failed), (other_jobs, other_failed) = _tally(window, bad)
    assert bad_failed >= MIN_FAILURES and bad_failed >= SHARE * bad_jobs, window
    assert bad_failed * other_jobs >= RATIO * other_failed * bad_jobs, window
    return bad, [str(i) for i in failed], window


def test_a_node_that_fails_its_jobs_is_named_from_real_accounting(testbed, tmp_path, history):
    bad, failed, window = history
    (bad_jobs, bad_failed), others = _tally(window, bad)
    report = _inspect(testbed, tmp_path, bad, "r1")
    plat = report["platform"]
    assert plat["accounting"]["state"] == "up" and plat["jobs_in_history"] >= len(failed) + 3
    assert [c["state"] for c in plat["controllers"]] == ["UP"]
    node = report["nodes"][bad]
    found = [f for f in node["findings"] if f["check"] == "scheduler.job_failures"]
    # on failure the message also says whether the window changed after it settled (it must not: nothing runs)
    assert len(found) == 1, (
        "no finding for %s: %d of its %d jobs failed, %d of %d elsewhere (%d jobs read by the inspection); "
        "the settled window: %s; now: %s"
        % ((bad, bad_failed, bad_jobs) + others[::-1] + (plat["jobs_in_history"], window, testbed.accounting_window()))
    )
    (f,) = found
    assert f["host"] == bad and f["code"] == "failures" and f["severity"] == "P2"
    # the counts are Slurm's (the settled window), the latest failed jobs are this module's
    assert (f["evidence"]["jobs"], f["evidence"]["failed"]) == (bad_jobs, bad_failed), (f["evidence"], window)
    assert set(failed[-10:]) <= set(f["evidence"]["job_ids"]) and f["evidence"]["states"]["FAILED"] >= len(failed)
    assert node["status"] == "degraded"  # every hardware reading is green: the jobs name it
    assert not [c for c in report["summary"]["cluster_findings"] if c["severity"] == "P0"]


def test_stopped_slurmctld_is_a_cluster_p0_in_one_inspection(testbed, tmp_path):
    with testbed.slurmctld_down("stop"):
        report = _inspect(testbed, tmp_path, testbed.nodes[0], "r2")
    p0 = [c for c in report["summary"]["cluster_findings"] if c["severity"] == "P0"]
    assert [(c["check"], c["code"]) for c in p0] == [("scheduler.controller", "down")]
    assert p0[0]["host"] is None and "tb-head" in p0[0]["message"]
    # the other scheduler commands were not asked (nothing but the P0 about the scheduler)
    assert not [c for c in report["summary"]["cluster_findings"] if c["id"].startswith("cluster:collector.error")]


def test_stopped_slurmdbd_is_accounting_p2(testbed):
    testbed._run(["bash", str(REPO / "tests" / "testbed" / "testbed.sh"), "slurmdbd", "stop"], check=True, timeout=30)
    try:
        res = testbed.module("slurm_head", "gpuops.cluster.platform_info", {"bin_dir": str(testbed.bin), "timeout": 10})
    finally:
        testbed._run(
            ["bash", str(REPO / "tests" / "testbed" / "testbed.sh"), "slurmdbd", "start"], check=True, timeout=60
        )
    plat = res["platform"]
    assert plat["scheduler"]["accounting"]["state"] == "down", plat["scheduler"]["accounting"]
    findings = check_platform(plat, DEFAULT_POLICY, None)
    acct = [f for f in findings if f["check"] == "scheduler.accounting"]
    assert [(f["severity"], f["code"]) for f in acct] == [("P2", "unreachable")]
    assert not [f for f in findings if f["severity"] == "P0"]
