# End to end (issue 37, "Done means"): a cluster capture directory holding only what an operator had at hand -
# ``sinfo`` as typed (default format) and ``sacct`` (``-P`` with its header, or the default fixed width) - read
# through the real inspection: inventory variable -> platform plan -> collector -> parsers -> platform checks ->
# report. It must yield the faults that are in the files (out-of-service nodes by their expanded names, the nodes
# whose jobs fail) and nothing for the healthy nodes; the files it lacks are unknown, not collector errors.
#
# Expected values come from the outputs themselves read by Slurm's documented meaning (cluster-formats.md 1.3:
# ``fail*``, ``down*``, ``drng@`` are out of service, ``idle~`` is a powered-down idle node; section 2: NODE_FAIL
# is the node's, FAILED the job's) and from the policy's documented thresholds (docs/checks.md).
from __future__ import annotations

import json

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform import plan as _platform_plan

SINFO = """PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
gpu*         up 2-00:00:00      2  down* c[017-018]
gpu*         up 2-00:00:00      1  fail* c019
gpu*         up 2-00:00:00      1  drng@ c023
gpu*         up 2-00:00:00      3  idle~ c[020-022]
gpu*         up 2-00:00:00     12  alloc c[001-012]
gpu*         up 2-00:00:00      4   idle c[013-016]
debug        up      30:00      4   idle c[013-016]
debug        up      30:00      0    n/a
"""
OUT = ["c017", "c018", "c019", "c023"]


def _jobs():
    """(job id, name, user, state, exit code, node list) with their batch/extern steps, as sacct lists them."""
    rows = []
    n = 100
    for i in range(20):  # completed work spread over c001..c010
        rows.append((str(n + i), "train", "alice", "COMPLETED", "0:0", "c%03d" % (1 + i % 10)))
    for i in range(4):  # c005 fails what it runs (the node that kills jobs)
        rows.append((str(200 + i), "train", "bob", "FAILED", "1:0", "c005"))
    rows.append(("210", "train", "carol", "NODE_FAIL", "0:0", "c[017-018]"))  # Slurm blamed the nodes
    rows.append(("211", "train", "carol", "PENDING", "0:0", "None assigned"))
    out = []
    for r in rows:
        out.append(r)
        if r[3] != "PENDING":
            out.append((r[0] + ".batch", "batch", "", r[3] if r[3] != "NODE_FAIL" else "CANCELLED", r[4], r[5]))
            out.append((r[0] + ".extern", "extern", "", "COMPLETED", "0:0", r[5]))
    return out


def sacct_parsable():
    """``sacct -a -P -S now-24hours -o JobID,JobName,User,State,ExitCode,NodeList`` (a header, ``|``)."""
    return "JobID|JobName|User|State|ExitCode|NodeList\n" + "".join("|".join(r) + "\n" for r in _jobs())


def sacct_default():
    """``sacct -a`` as typed: JobID JobName Partition Account AllocCPUS State ExitCode, fixed width (section 2:
    ``%*.*s`` plus a space, a dashes row, long values cut with ``+``)."""
    cols = (("JobID", 12), ("JobName", 10), ("Partition", 10), ("Account", 10), ("AllocCPUS", 10), ("State", 10),
            ("ExitCode", 8))  # fmt: skip

    def cell(v, w):
        return "%*s " % (w, v if len(v) <= w else v[: w - 1] + "+")

    lines = ["".join(cell(c, w) for c, w in cols), "".join("-" * w + " " for dummy, w in cols)]
    for r in _jobs():
        vals = (r[0], r[1], "gpu", "ml", "8", r[3], r[4])
        lines.append("".join(cell(v, w) for v, (dummy, w) in zip(vals, cols)))
    return "\n".join(lines) + "\n"


def inspect(tmp_path, files):
    d = tmp_path / "cluster-capture"
    d.mkdir()
    for name, text in files.items():
        (d / name).write_text(text)
    hostvars = {"c005": {"gpuops_cluster_capture_dir": str(d)}, "c001": {}, "c017": {}}
    facts = _platform_plan.platform_facts(hostvars, sorted(hostvars), lambda hv, key: hv.get(key))
    hosts = {h: {"facts": {"schema": "gpuops.facts/v1", "mode": "live", "errors": []}} for h in hostvars}
    return facts, _inspect.inspect_nodes(hosts, platform=facts)


def sched_findings(report):
    cluster = [
        f
        for f in report["summary"]["cluster_findings"]
        if f["check"].startswith(("scheduler.", "collector.")) and f["component"] != "node:c018"
    ]
    nodes = {h: [f for f in e["findings"] if f["check"].startswith("scheduler.")] for h, e in report["nodes"].items()}
    return cluster, nodes


def test_sinfo_default_and_sacct_parsable_yield_their_faults_and_nothing_else(tmp_path):
    facts, report = inspect(tmp_path, {"sinfo.txt": SINFO, "sacct.txt": sacct_parsable()})
    cluster, nodes = sched_findings(report)
    assert [(f["check"], f["severity"]) for f in cluster] == [("scheduler.nodes", "P2")]  # no collector.error
    (out,) = cluster
    named = sorted(n for g in out["evidence"]["by_reason"].values() for n in g["nodes"])
    assert named == OUT and out["evidence"]["total"] == 23  # 4 of the 23 nodes sinfo listed
    assert all(n in out["message"] for n in OUT) and "c020" not in out["message"]  # idle~ is powered down, not out
    assert [(f["code"], f["evidence"]["failed"], f["evidence"]["user_side"]) for f in nodes["c005"]] == [
        ("failures", 4, 4)
    ]
    assert [(f["code"], f["evidence"]["node_side"]) for f in nodes["c017"]] == [("NODE_FAIL", 1)]
    assert nodes["c001"] == []  # a healthy node: nothing
    others = [f["id"] for f in report["summary"]["cluster_findings"] if f["check"] == "scheduler.job_failures"]
    assert others == ["cluster:scheduler.job_failures:node:c018:NODE_FAIL"]  # c018 was not inspected: on the cluster
    plat = report["platform"]
    assert plat["state"] == "partial" and plat["accounting"]["state"] == "up"
    assert [u["file"] for u in plat["unseen"]] == ["scontrol-ping.txt", "sdiag.txt", "squeue.json / squeue.txt"]
    assert facts["errors"] == []
    json.dumps(report)


def test_sacct_default_fixed_width_has_no_node_column(tmp_path):
    """The default columns name no node: the failures cannot be put on a node (unknown, not "none"), the job
    history still counts, and sinfo's faults are found as before."""
    facts, report = inspect(tmp_path, {"sinfo.txt": SINFO, "sacct.txt": sacct_default()})
    cluster, nodes = sched_findings(report)
    assert [f["check"] for f in cluster] == ["scheduler.nodes"] and all(v == [] for v in nodes.values())
    hist = facts["scheduler"]["history"]
    assert len(hist) == 26 and all(j["nodes"] is None for j in hist)
    assert {j["job_id"]: j["state"] for j in hist}["210"] == "NODE_FAIL" and facts["errors"] == []


@pytest.mark.parametrize("garbled", ["sinfo.txt", "sacct.txt"])
def test_a_file_that_is_there_but_unreadable_stays_a_collector_error(tmp_path, garbled):
    files = {"sinfo.txt": SINFO, "sacct.txt": sacct_parsable()}
    files[garbled] = "na1|none|Unknown|mixed\n" if garbled == "sinfo.txt" else "1|alice|x\n"
    facts, report = inspect(tmp_path, files)
    cluster, dummy = sched_findings(report)
    errors = [f for f in cluster if f["check"] == "collector.error"]
    assert [(f["component"], f["code"], f["severity"]) for f in errors] == [("collector:scheduler", "parse", "P2")]
    assert "readable forms" in errors[0]["message"]


def test_a_capture_with_no_scheduler_file_has_no_scheduler_part(tmp_path):
    facts, report = inspect(tmp_path, {"notes.txt": "ticket 4711\n"})
    assert facts["scheduler"] is None and sched_findings(report)[0] == []
