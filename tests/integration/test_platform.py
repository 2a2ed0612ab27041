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

from ansible_collections.gpuops.cluster.plugins.plugin_utils._checks.platform import check_platform  # noqa: E402
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


@pytest.fixture(scope="module")
def history(testbed):
    """Real jobs through slurmctld into slurmdbd; returns (bad node, failed job ids)."""
    good, bad = testbed.nodes[0], testbed.nodes[-1]
    for host in testbed.nodes:
        if host != bad:
            testbed.on_node(host, "mkdir", "-p", SCRATCH)
    # The finding needs the bad node to fail at least half its jobs (node_failure_share) and at least twice the
    # other nodes' rate (node_failure_ratio) over the accounting window. On a bed shared with the tests that ran
    # jobs before this one (isolate, fault matrix, onboard), what they left decides both, so the jobs here are sized
    # from it: more failures on the bad node than all it ran before, and at least four good jobs per job that did
    # not complete elsewhere.
    before = _finished(testbed)
    bad_before = sum(1 for nodes, _state in before if bad in nodes)
    others_failed = sum(1 for nodes, state in before if bad not in nodes and state != "COMPLETED")
    ids = [testbed.sbatch("-w", good, "--wrap", "cd %s && true" % SCRATCH) for n in range(max(2, 4 * others_failed))]
    ids.append(testbed.sbatch("-w", good, "--wrap", "exit 3"))
    fails = max(3, bad_before + 1)
    failed = [testbed.sbatch("-w", bad, "--gres=gpu:1", "--wrap", "cd %s && true" % SCRATCH) for n in range(fails)]
    ids += failed

    def finished():
        out = testbed.slurm("sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", ",".join(map(str, ids)))
        states = dict(line.split("|") for line in out.split() if "|" in line)
        return len(states) == len(ids) and all(s in ("COMPLETED", "FAILED") for s in states.values())

    testbed.wait_for(finished, timeout=120, what="the history jobs finished and recorded by slurmdbd")
    return bad, [str(i) for i in failed]


def _finished(testbed):
    """(nodes, state) of every job the accounting window holds that ended (what check_job_failures counts). A
    multi-node job's NodeList is compressed (``gpu-node-[05-08]``): expanded by scontrol, as the check expands it."""
    out = testbed.slurm("sacct", "-n", "-X", "-P", "-a", "-S", "now-24hours", "-o", "NodeList,State")
    rows, expanded = [], {}
    for line in out.split("\n"):
        nodes, sep, state = line.strip().partition("|")
        state = state.split()[0] if state.split() else ""
        if sep and state and state not in ("PENDING", "RUNNING", "REQUEUED") and not state.startswith("CANCELLED"):
            if nodes not in expanded:
                names = testbed.scontrol("show", "hostnames", nodes, check=False).split() if nodes else []
                expanded[nodes] = frozenset(names or [nodes])
            rows.append((expanded[nodes], state))
    return rows


def test_a_node_that_fails_its_jobs_is_named_from_real_accounting(testbed, tmp_path, history):
    bad, failed = history
    report = _inspect(testbed, tmp_path, bad, "r1")
    plat = report["platform"]
    assert plat["accounting"]["state"] == "up" and plat["jobs_in_history"] >= 6
    assert [c["state"] for c in plat["controllers"]] == ["UP"]
    node = report["nodes"][bad]
    found = [f for f in node["findings"] if f["check"] == "scheduler.job_failures"]
    # the window is read only when the finding is missing (the message is evaluated on failure only)
    assert len(found) == 1, "no finding for %s (failed jobs %s); the window: %s" % (
        bad,
        failed,
        [(sorted(nodes), state) for nodes, state in _finished(testbed)],
    )
    (f,) = found
    assert f["host"] == bad and f["code"] == "failures" and f["severity"] == "P2"
    # the latest failed jobs, from slurmdbd (a bed kept up between runs has older ones too)
    assert set(failed[-3:]) <= set(f["evidence"]["job_ids"]) and f["evidence"]["states"]["FAILED"] >= 3
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
