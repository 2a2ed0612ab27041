# Tests for the platform checks (plugins/plugin_utils/checks/platform*.py) and their place in the report.
from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect, report as _report
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform import plan as _platform_plan
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform.checks import check_platform
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform.jobs import percentile, platform_summary
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import DEFAULT_POLICY, PolicyError, merge_policy

NOW = 1796205600.0


def node(name, state="idle", alloc=0, reason=None, flags=(), part="gpu"):
    return {"name": name, "partitions": [part], "state": state, "flags": list(flags), "gpus": 8, "gpus_alloc": alloc,
            "reason": reason}  # fmt: skip


def job(jid, state="PENDING", reason="Resources", gpn=8, part="gpu", submit=NOW - 600, nodes=()):
    return {"job_id": str(jid), "partition": part, "user": "u", "state": state, "reason": reason, "submit": submit,
            "start": None, "node_count": 1, "gpus_per_node": gpn, "gpus": gpn, "nodes": list(nodes)}  # fmt: skip


def done(jid, host, state="COMPLETED"):
    return {"job_id": str(jid), "partition": "gpu", "user": "u", "state": state, "exit_code": 0, "nodes": [host],
            "submit": NOW - 9000, "start": NOW - 8000, "end": NOW - 7000, "restarts": 0}  # fmt: skip


def healthy(n=8):
    nodes = [node("n%02d" % i, "allocated" if i % 2 else "idle", 8 if i % 2 else 0) for i in range(n)]
    return {
        "schema": "gpuops.platform/v1",
        "collected_at": NOW,
        "scheduler": {
            "controllers": [
                {"role": "primary", "host": "h1", "state": "UP"},
                {"role": "backup", "host": "h2", "state": "UP"},
            ],
            "sdiag": {"server_thread_count": 3, "agent_queue_size": 0, "dbd_agent_queue_size": 0,
                      "rpc_types": [{"name": "REQUEST_JOB_INFO", "count": 900, "ave_time": 1400, "total_time": 1}],
                      "rpc_users": [{"name": "alice", "count": 900, "ave_time": 1400, "total_time": 1}]},  # fmt: skip
            "nodes": nodes,
            "jobs": [job(1, reason="Priority")],
            "history": [done(100 + i, "n%02d" % (i % n)) for i in range(40)],
            "accounting": {"state": "up", "message": "ok"},
            "errors": [],
        },
        "storage": None,
        "errors": [],
    }


def ids(findings):
    return sorted((f["check"], f["component"], f["code"], f["severity"], f["host"]) for f in findings)


def test_healthy_platform_has_no_findings():
    assert check_platform(healthy(), DEFAULT_POLICY, NOW) == []
    assert check_platform(None, DEFAULT_POLICY, NOW) == []


@pytest.mark.parametrize("state", ["DOWN", "UNRESPONSIVE"])
def test_controller_down_is_the_only_cluster_p0(state):
    p = healthy()
    p["scheduler"]["controllers"] = [{"role": "primary", "host": "h1", "state": state}]
    p["scheduler"].update(sdiag=None, nodes=None, jobs=None)
    p["errors"] = [{"domain": "scheduler", "kind": "parse", "message": "sdiag: cannot contact", "source": "sdiag.txt"}]
    fs = check_platform(p, DEFAULT_POLICY, NOW)
    assert ids(fs) == [("scheduler.controller", "controller", state.lower(), "P0", None)]
    assert fs[0]["id"] == "cluster:scheduler.controller:controller:%s" % state.lower() and fs[0]["respond_by"]


def test_backup_down_is_p2_not_p0():
    p = healthy()
    p["scheduler"]["controllers"][1]["state"] = "DOWN"
    assert ids(check_platform(p, DEFAULT_POLICY, NOW)) == [
        ("scheduler.controller", "controller:h2", "backup_down", "P2", None)
    ]


def test_unreadable_evidence_is_a_collector_error_never_p0():
    p = healthy()
    p["scheduler"]["controllers"] = None
    p["errors"] = [{"domain": "scheduler", "kind": "missing", "message": "scontrol-ping.txt is missing"}]
    fs = check_platform(p, DEFAULT_POLICY, NOW)
    assert ids(fs) == [("collector.error", "collector:scheduler", "missing", "P2", None)]


def test_rpc_storm_names_top_types_and_users():
    p = healthy()
    sd = p["scheduler"]["sdiag"]
    sd["server_thread_count"] = 200
    sd["rpc_types"].append({"name": "REQUEST_NODE_INFO", "count": 50, "ave_time": 2_000_000, "total_time": 10**8})
    sd["rpc_users"].append({"name": "bob", "count": 50, "ave_time": 2_000_000, "total_time": 10**8})
    (f,) = check_platform(p, DEFAULT_POLICY, NOW)
    assert (f["check"], f["severity"]) == ("scheduler.rpc", "P2")
    assert "REQUEST_NODE_INFO 2.00 s" in f["message"] and "200 server threads" in f["message"]
    assert f["evidence"]["top_rpc_users"][0]["name"] == "bob"


def test_accounting_down_and_dbd_queue():
    p = healthy()
    p["scheduler"]["accounting"] = {"state": "down", "message": "Problem talking to the database"}
    assert ids(check_platform(p, DEFAULT_POLICY, NOW)) == [("scheduler.accounting", "slurmdbd", "unreachable", "P2", None)]
    p = healthy()
    p["scheduler"]["sdiag"]["dbd_agent_queue_size"] = 9000
    assert ids(check_platform(p, DEFAULT_POLICY, NOW))[0][2] == "dbd_agent_queue"


def test_nodes_out_grouped_by_reason():
    p = healthy(10)
    ns = p["scheduler"]["nodes"]
    ns[0].update(state="drained", reason="bad fan")
    ns[2].update(state="drained", reason="bad fan")
    ns[4].update(state="down", flags=["*"], reason="Not responding")
    (f,) = [f for f in check_platform(p, DEFAULT_POLICY, NOW) if f["check"] == "scheduler.nodes"]
    assert f["severity"] == "P2"  # 3 of 10 >= 10 %
    assert f["evidence"]["by_reason"]["bad fan"]["nodes"] == ["n00", "n02"]
    assert f["evidence"]["by_reason"]["Not responding"]["states"] == {"not_responding": 1}
    strict = merge_policy(DEFAULT_POLICY, {"scheduler": {"nodes_out_share": 0.5}})
    assert [f["severity"] for f in check_platform(p, strict, NOW) if f["check"] == "scheduler.nodes"] == ["P3"]


def test_job_failures_name_the_node_and_node_fail():
    p = healthy()
    hist = p["scheduler"]["history"]
    hist += [done(900 + i, "n03", "FAILED") for i in range(6)]
    hist.append(done(999, "n05", "NODE_FAIL"))
    fs = check_platform(p, DEFAULT_POLICY, NOW)
    assert ids(fs) == [
        ("scheduler.job_failures", "slurm:jobs", "NODE_FAIL", "P2", "n05"),
        ("scheduler.job_failures", "slurm:jobs", "failures", "P2", "n03"),
    ]
    (n03,) = [f for f in fs if f["host"] == "n03"]
    assert n03["id"] == "n03:scheduler.job_failures:slurm:jobs:failures" and n03["evidence"]["failed"] == 6


@pytest.mark.parametrize("state", ["SUSPENDED", "RESIZING", "REVOKED", "REQUEUE_HOLD", "RUNNING", "CANCELLED"])
def test_job_failures_count_only_jobs_that_ended(state):
    """A job that has not ended (Slurm's non-final states, or sacct's RUNNING for a job whose end slurmdbd has not
    recorded yet) has no outcome: it neither dilutes a node's failures nor counts as finished. n03: 5 COMPLETED (of
    the 40), 6 FAILED and 5 in ``state`` -> 6 of its 11 finished jobs failed (55 %), against 0 of 35 elsewhere (the
    documented rule: >= 3 failures, >= 50 % of its jobs, >= 2 x the other nodes' rate); counting the 5 as
    finished would make it 6 of 16 (38 %) and hide the node."""
    p = healthy()
    hist = p["scheduler"]["history"]
    assert sum(1 for j in hist if j["nodes"] == ["n03"]) == 5
    hist += [done(900 + i, "n03", "FAILED") for i in range(6)]
    hist += [done(950 + i, "n03", state) for i in range(5)]
    fs = [f for f in check_platform(p, DEFAULT_POLICY, NOW) if f["check"] == "scheduler.job_failures"]
    assert [(f["host"], f["code"]) for f in fs] == [("n03", "failures")]
    assert fs[0]["evidence"]["jobs"] == 11 and fs[0]["evidence"]["failed"] == 6


def test_cluster_failure_rate():
    p = healthy()
    p["scheduler"]["history"] = [done(i, "n%02d" % (i % 8), "FAILED" if (i // 8) % 2 else "COMPLETED") for i in range(40)]
    fs = check_platform(p, DEFAULT_POLICY, NOW)
    assert ("scheduler.job_failures", "cluster", "rate", "P2", None) in ids(fs)
    assert not [f for f in fs if f["host"]]  # spread evenly: 2-3 of 5 per node, no node is singled out


def test_fragmentation_with_numbers_and_not_when_a_node_fits():
    p = healthy()
    for n in p["scheduler"]["nodes"]:
        n.update(state="mixed", gpus_alloc=5)
    p["scheduler"]["jobs"] = [job(1), job(2)]
    (f,) = check_platform(p, DEFAULT_POLICY, NOW)
    assert (f["check"], f["component"]) == ("scheduler.fragmentation", "partition:gpu")
    assert f["evidence"]["free_gpus"] == 24 and f["evidence"]["largest_free_on_one_node"] == 3
    p["scheduler"]["nodes"][0].update(state="idle", gpus_alloc=0)
    assert check_platform(p, DEFAULT_POLICY, NOW) == []


def test_capacity_trigger_and_queue_wait():
    p = healthy()
    for n in p["scheduler"]["nodes"][:6]:
        n.update(state="allocated", gpus_alloc=8)
    p["scheduler"]["jobs"] = [job(i, submit=NOW - 30 * 3600, gpn=0) for i in range(6)]
    fs = check_platform(p, DEFAULT_POLICY, NOW)
    assert ids(fs) == [
        ("scheduler.capacity", "partition:gpu", "trigger", "P3", None),
        ("scheduler.queue", "partition:gpu", "wait", "P2", None),
    ]
    summary = platform_summary(p, NOW)
    assert summary["capacity"]["gpu"]["allocated_share"] == 0.875
    assert summary["queue"]["partitions"]["gpu"]["p90_hours"] == 30.0


def test_percentile():
    assert percentile([], 0.5) is None and percentile([4.0], 0.9) == 4.0 and percentile([0, 10], 0.9) == 9.0


def test_a_bad_scheduler_table_is_a_policy_error():
    bad = copy.deepcopy(DEFAULT_POLICY)
    bad["scheduler"]["rpc"] = {"severity": "P9", "action": "monitor"}
    with pytest.raises(PolicyError, match="scheduler.rpc"):
        check_platform(healthy(), bad, NOW)


def test_inspection_puts_platform_findings_under_the_cluster_and_on_nodes(tmp_path):
    p = healthy()
    p["scheduler"]["controllers"][1]["state"] = "DOWN"
    p["scheduler"]["history"] += [done(900 + i, "n03", "FAILED") for i in range(6)]
    p["scheduler"]["history"] += [done(950 + i, "gone-01", "FAILED") for i in range(4)]
    hosts = {"n03": {"facts": {"schema": "gpuops.facts/v1", "mode": "live", "errors": []}}}
    report = _inspect.inspect_nodes(hosts, platform=p)
    cl = {f["id"] for f in report["summary"]["cluster_findings"]}
    assert "cluster:scheduler.controller:controller:h2:backup_down" in cl
    assert "cluster:scheduler.job_failures:node:gone-01:failures" in cl  # not inspected: stays a cluster finding
    assert [f["check"] for f in report["nodes"]["n03"]["findings"]].count("scheduler.job_failures") == 1
    assert report["platform"]["accounting"]["state"] == "up"
    md, html = _report.to_markdown(report), _report.to_html(report)
    prom = _report.to_prometheus(report, generated_ts=NOW)
    assert "scheduler.controller" in md and "scheduler.controller" in html
    assert "gpuops_cluster_findings 2" in prom
    json.dumps(report)
    with pytest.raises(TypeError):
        _inspect.inspect_nodes(hosts, platfrom=p)


def test_plan_reads_inventory_variables(tmp_path):
    def cap(hv, key):
        return hv.get(key)

    hv = {"a": {"gpuops_scheduler_host": "head", "gpuops_storage_probe_host": "login"}, "b": {}}
    plan = _platform_plan.platform_hosts(hv, ["a", "b"], cap)
    assert plan["hosts"] == ["head", "login"] and plan["capture_dir"] is None
    assert _platform_plan.platform_facts({"a": {}}, ["a"], cap) is None
    facts = _platform_plan.platform_facts(dict(hv, head={"__inspect_platform": {"unreachable": True, "msg": "x"}}),
                                          ["a"], cap)  # fmt: skip
    assert facts["scheduler"] is None and "platform_info on head: x" in facts["errors"][0]["message"]
    assert ids(check_platform(facts, DEFAULT_POLICY, NOW))[0][:2] == ("collector.error", "collector:platform")
    hv = {"a": {"gpuops_cluster_capture_dir": str(tmp_path / "none"), "gpuops_scheduler_host": "head"}}
    plan = _platform_plan.platform_hosts(hv, ["a"], cap)
    assert plan["hosts"] == [] and _platform_plan.platform_facts(hv, ["a"], cap)["errors"][0]["kind"] == "missing"


def test_a_short_history_still_names_the_node_against_the_others():
    # the test bed's case: 2 good + 1 failed job on one node, 3 failed on another (cluster rate 67 %)
    p = healthy()
    p["scheduler"]["history"] = [done(1, "a"), done(2, "a"), done(3, "a", "FAILED")]
    p["scheduler"]["history"] += [done(10 + i, "b", "FAILED") for i in range(3)]
    fs = [f for f in check_platform(p, DEFAULT_POLICY, NOW) if f["host"]]
    assert [(f["host"], f["code"]) for f in fs] == [("b", "failures")]
    assert fs[0]["evidence"]["other_nodes_rate"] == 0.333


def test_a_garbled_storage_capture_is_one_collector_error(tmp_path):
    """The storage collector's errors reach the platform facts once (domain storage): one finding, not two."""
    import datetime

    from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import platform as _platform
    from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform import checks as platform_checks

    (tmp_path / "lfs-df.txt").write_text("garbage \x00\x01 not lfs\n")
    facts = _platform.collect_platform(capture_dir=str(tmp_path))
    now = datetime.datetime(2026, 12, 3, tzinfo=datetime.timezone.utc)
    ids = [f["id"] for f in platform_checks.check_platform(facts, _policy.DEFAULT_POLICY, now)]
    assert ids.count("cluster:collector.error:collector:storage:parse") == 1, ids


# sacct in the collection's text form (docs/capture.md: sacct -a -X -P -n -o JobID,Partition,User,State,ExitCode,
# NodeList,Submit,Start,End) and plain sinfo (cluster-formats.md: PARTITION AVAIL TIMELIMIT NODES STATE NODELIST,
# folded host lists). Slurm calls the inspected hosts gpu-node-01/02 sn01/sn02; sn03 is not inspected, and a Slurm
# node that happens to be called gpu-node-02 is not the host gpu-node-02 (whose Slurm name is sn02).
_SACCT_SN = (
    "8001|gpu|alice|NODE_FAIL|0:0|sn01|2026-12-02T06:00:00|2026-12-02T06:01:00|2026-12-02T06:30:00\n"
    "8002|gpu|bob|FAILED|1:0|sn02|2026-12-02T06:00:00|2026-12-02T06:01:00|2026-12-02T06:10:00\n"
    "8003|gpu|bob|FAILED|1:0|sn02|2026-12-02T06:20:00|2026-12-02T06:21:00|2026-12-02T06:30:00\n"
    "8004|gpu|bob|FAILED|1:0|sn02|2026-12-02T06:40:00|2026-12-02T06:41:00|2026-12-02T06:50:00\n"
    "8005|gpu|carol|COMPLETED|0:0|sn03|2026-12-02T05:00:00|2026-12-02T05:01:00|2026-12-02T06:01:00\n"
    "8006|gpu|carol|COMPLETED|0:0|sn03|2026-12-02T06:00:00|2026-12-02T06:01:00|2026-12-02T07:01:00\n"
    "8007|gpu|carol|COMPLETED|0:0|sn03|2026-12-02T07:00:00|2026-12-02T07:01:00|2026-12-02T08:01:00\n"
    "8008|gpu|carol|COMPLETED|0:0|sn03|2026-12-02T08:00:00|2026-12-02T08:01:00|2026-12-02T09:01:00\n"
    "8009|gpu|dave|NODE_FAIL|0:0|gpu-node-02|2026-12-02T08:00:00|2026-12-02T08:01:00|2026-12-02T08:30:00\n"
)
_SINFO_SN = (
    "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
    "gpu*         up   infinite      1  drain sn01\n"
    "gpu*         up   infinite      2   idle sn[02-03]\n"
    "gpu*         up   infinite      1   idle gpu-node-02\n"
)


def test_platform_node_findings_follow_gpuops_slurm_node_name(tmp_path):
    """The inventory calls two nodes gpu-node-01/02, Slurm sn01/sn02 (gpuops_slurm_node_name, docs/inventory.md):
    sacct's node findings name sn01/sn02 and must reach those hosts through a real inspection of simulated captures.
    By hand from _SACCT_SN (docs/checks.md "scheduler.job_failures", defaults node_min_failures 3, share 50 %,
    ratio 2, failure_min_jobs 10): 9 finished jobs, 5 failed (8001-8004, 8009); sn01: 1 job, a NODE_FAIL (code
    NODE_FAIL); sn02: 3 of 3 failed, the others 2 of 6 (3 >= 3, 100 % >= 50 % and >= 2 x 33 %: code failures);
    sn03: none; Slurm's gpu-node-02: a NODE_FAIL, not inspected (a cluster finding node:gpu-node-02); 9 < 10 jobs:
    no cluster rate finding. sinfo: 1 of 4 nodes out (sn01 drained): a cluster finding, on no host."""
    import datetime
    import sys
    from pathlib import Path

    from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.platform import scheduler_from_capture

    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tools"))
    from simcluster import generate as G  # noqa: E402 pylint: disable=import-outside-toplevel

    sim = tmp_path / "sim"
    G.generate(3, str(sim), 7, "none")
    hosts = {
        "gpu-node-01": {"capture_dir": str(sim / "captures" / "gpu-node-01"), "slurm_node_name": "sn01"},
        "gpu-node-02": {"capture_dir": str(sim / "captures" / "gpu-node-02"), "slurm_node_name": "sn02"},
    }
    cluster_cap = tmp_path / "cluster"
    cluster_cap.mkdir()
    (cluster_cap / "sacct.txt").write_text(_SACCT_SN)
    (cluster_cap / "sinfo.txt").write_text(_SINFO_SN)
    plat = {"scheduler": scheduler_from_capture(str(cluster_cap)), "collected_at": 1796205600.0}  # 10:00:00Z
    now = datetime.datetime(2026, 12, 2, 10, 0, tzinfo=datetime.timezone.utc)
    report = _inspect.inspect_nodes(hosts, now=now, platform=plat, workers=1)

    def jobs_findings(host):
        return [f for f in report["nodes"][host]["findings"] if f["check"] == "scheduler.job_failures"]

    (f1,) = jobs_findings("gpu-node-01")
    assert f1["id"] == "gpu-node-01:scheduler.job_failures:slurm:jobs:NODE_FAIL" and f1["host"] == "gpu-node-01"
    assert (f1["severity"], f1["action"]) == ("P2", "monitor")
    assert {k: f1["evidence"][k] for k in ("jobs", "failed", "node_side", "job_ids")} == {
        "jobs": 1, "failed": 1, "node_side": 1, "job_ids": ["8001"]}  # fmt: skip
    (f2,) = jobs_findings("gpu-node-02")
    assert f2["id"] == "gpu-node-02:scheduler.job_failures:slurm:jobs:failures" and f2["host"] == "gpu-node-02"
    assert {k: f2["evidence"][k] for k in ("jobs", "failed", "node_side", "user_side", "job_ids")} == {
        "jobs": 3, "failed": 3, "node_side": 0, "user_side": 3, "job_ids": ["8002", "8003", "8004"]}  # fmt: skip
    assert f2["evidence"]["other_nodes_rate"] == 0.333
    cl = {f["id"]: f for f in report["summary"]["cluster_findings"]}
    assert "cluster:scheduler.job_failures:node:gpu-node-02:NODE_FAIL" in cl  # Slurm's gpu-node-02: not inspected
    assert not [i for i in cl if i.startswith("cluster:scheduler.job_failures:node:sn0")]
    assert "cluster:scheduler.job_failures:cluster:rate" not in cl
    assert cl["cluster:scheduler.nodes:cluster:out"]["evidence"]["out"] == 1
    assert cl["cluster:scheduler.nodes:cluster:out"]["evidence"]["total"] == 4
