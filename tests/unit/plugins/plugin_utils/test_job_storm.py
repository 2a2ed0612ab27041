# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Job-aware Xid attribution (issue 38, inspect/job_storm.py).

The job view is read from squeue/sacct text through the collection's own capture reader
(``collectors/platform.scheduler_from_capture``), in the forms docs/capture.md names (``squeue -h -o
'%i|%P|%u|%T|%r|%V|%S|%D|%b|%N'``, ``sacct -a -X -P -n -o JobID,Partition,User,State,ExitCode,NodeList,Submit,
Start,End``), with compressed hostlists (cluster-formats.md 1.5), sacct's ``Unknown`` end of a running job and its
``None assigned`` node list of a job that never ran (cluster-formats.md 2). The Xid node findings are written
here in the shape the Xid check gives them (docs/findings.md: check gpu.xid, code, evidence first/last). Which
codes are application-class comes from NVIDIA's catalog as quoted in health-policy-facts.md section 4 (13, 31:
RESTART_APP; 43: IGNORE "GPU stopped processing"; 45: WORKFLOW_XID_45; 69: RESTART_APP) and issue 38; 79
(RESTART_BM), 48 (WORKFLOW_XID_48), 94 (contained ECC: a memory fault) and 95 (RESET_GPU) are hardware-class.
"""

from __future__ import annotations

import copy
import datetime

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.platform import scheduler_from_capture
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import DEFAULT_POLICY, PolicyError
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import cluster, job_storm

NOW = "2026-12-02T10:00:00Z"
SQUEUE = (
    "7001|gpu|mallory|RUNNING|None|2026-12-02T08:58:00|2026-12-02T09:00:00|4|gres:gpu:8|n[01-04]\n"
    "7003|gpu|bob|RUNNING|None|2026-12-02T09:10:00|2026-12-02T09:20:00|2|gres:gpu:8|n[05-06]\n"
    "7002|gpu|alice|PENDING|Resources|2026-12-02T09:30:00|Unknown|8|gres:gpu:8|\n"
)
SACCT = (
    "6990|gpu|carol|COMPLETED|0:0|n[01-08]|2026-12-02T05:00:00|2026-12-02T05:01:00|2026-12-02T07:01:00\n"
    "7001|gpu|mallory|RUNNING|0:0|n[01-04]|2026-12-02T08:58:00|2026-12-02T09:00:00|Unknown\n"
    "7002|gpu|alice|PENDING|0:0|None assigned|2026-12-02T09:30:00|Unknown|Unknown\n"
)


def _platform(tmp_path, squeue=SQUEUE, sacct=SACCT):
    (tmp_path / "squeue.txt").write_text(squeue)
    (tmp_path / "sacct.txt").write_text(sacct)
    return {"scheduler": scheduler_from_capture(str(tmp_path)), "collected_at": 1796205600.0}  # 10:00:00Z


def _xid(host, code, first, last=None, action="none", severity="P3", comp="gpu0"):
    return {
        "check": "gpu.xid",
        "severity": severity,
        "component": comp,
        "code": str(code),
        "message": "GPU 0 Xid %s" % code,
        "action": action,
        "rule": "xid_catalog[%s]" % code,
        "evidence": {"code": code, "first": first, "last": last or first},
        "host": host,
        "cause": None,
        "id": "%s:gpu.xid:%s:%s" % (host, comp, code),
    }


def _nodes(*findings):
    out = {"n%02d" % i: {"findings": [], "status": "healthy"} for i in range(1, 9)}
    for f in findings:
        out[f["host"]]["findings"].append(f)
        if f["severity"] in ("P0", "P1"):
            out[f["host"]]["status"] = "faulty"
    return out


def test_app_class_codes_follow_nvidia_and_keep_hardware_out():
    codes = job_storm.app_class_codes()
    assert {13, 31, 43, 45, 69} <= codes
    assert {11, 25, 39} <= codes  # NVIDIA RESTART_APP: push buffer / copy engine exceptions
    assert not codes & {79, 48, 94, 95, 32, 74, 64, 63, 119}


def test_job_view_from_squeue_and_sacct_text(tmp_path):
    jobs = {j["job_id"]: j for j in job_storm.job_view(_platform(tmp_path))}
    assert sorted(jobs) == ["6990", "7001", "7003"]  # 7002 pending: no node, never ran
    assert jobs["7001"]["nodes"] == {"n01", "n02", "n03", "n04"}
    assert jobs["7001"]["user"] == "mallory" and jobs["7001"]["end"] is None  # running
    assert jobs["6990"]["end"] is not None and jobs["6990"]["user"] == "carol"
    assert job_storm.job_view(None) == [] and job_view_garbage() == []


def job_view_garbage():
    sched = {"jobs": ["x", {"job_id": None}, {"job_id": "1", "nodes": "n01"}], "history": "not a list"}
    return job_storm.job_view({"scheduler": sched})


def test_a_storm_on_one_job_is_one_finding_and_explains_its_nodes(tmp_path):
    fs = [_xid("n%02d" % i, 45, "2026-12-02T09:41:%02dZ" % i, action="isolate", severity="P1") for i in (1, 2, 3, 4)]
    fs.append(_xid("n01", 13, "2026-12-02T09:41:05Z", comp="gpu1"))
    nodes = _nodes(*fs)
    out = cluster.evaluate_cluster(nodes, DEFAULT_POLICY, NOW, platform=_platform(tmp_path))
    storms = [f for f in out if f["check"] == "job.xid_storm"]
    assert len(storms) == 1
    s = storms[0]
    assert s["component"] == "job:7001" and s["code"] == "13,45" and s["action"] == "restart_app"
    assert s["severity"] == "P2" and s["host"] is None and s["id"] == "cluster:job.xid_storm:job:7001:13,45"
    assert s["evidence"]["hosts"] == ["n01", "n02", "n03", "n04"] and s["evidence"]["user"] == "mallory"
    assert s["respond_by"] == "2026-12-02T12:00:00Z"  # P2: 2 h (policy response_times)
    for f in fs:
        assert f["cause"] == s["id"] and f["action"] == "monitor" and f["evidence"]["job_id"] == "7001"
    assert [f["evidence"]["original_action"] for f in fs[:4]] == ["isolate"] * 4
    assert fs[0]["severity"] == "P1"  # severities stay, as for a correlation


def test_hardware_xids_stand_alone(tmp_path):
    fs = [_xid("n%02d" % i, 45, "2026-12-02T09:41:%02dZ" % i) for i in (1, 2, 3)]
    hw = [_xid("n02", code, "2026-12-02T09:41:30Z", action="reboot", severity="P1", comp="gpu%d" % (code % 8))
          for code in (79, 48, 94, 95)]  # fmt: skip
    nodes = _nodes(*(fs + hw))
    out = cluster.evaluate_cluster(nodes, DEFAULT_POLICY, NOW, platform=_platform(tmp_path))
    assert [f["component"] for f in out if f["check"] == "job.xid_storm"] == ["job:7001"]
    assert all(f["cause"] is None and f["action"] == "reboot" for f in hw)


@pytest.mark.parametrize(
    "times, hosts, why",
    [
        (["09:41:00", "09:55:00"], ["n01", "n02"], "20 min apart: more than the 10-minute window"),
        (["09:41:00", "09:41:10"], ["n01", "n05"], "two nodes of two different jobs"),
        (["09:41:00"], ["n01"], "one node is a crash, not a storm"),
        (["08:00:00", "08:00:10"], ["n01", "n02"], "after job 6990 ended, before job 7001 started"),
    ],
)
def test_no_storm(tmp_path, times, hosts, why):
    fs = [_xid(h, 45, "2026-12-02T%sZ" % t) for h, t in zip(hosts, times)]
    nodes = _nodes(*fs)
    out = cluster.evaluate_cluster(nodes, DEFAULT_POLICY, NOW, platform=_platform(tmp_path))
    assert not [f for f in out if f["check"] == "job.xid_storm"], why
    assert all(f["cause"] is None for f in fs), why


def test_finished_job_within_its_allocation(tmp_path):
    # job 6990 held n01-n08 from 05:01 to 07:01: Xid 43 at its end on three nodes is its crash
    fs = [_xid("n%02d" % i, 43, "2026-12-02T07:01:%02dZ" % i) for i in (5, 6, 7)]
    out = cluster.evaluate_cluster(_nodes(*fs), DEFAULT_POLICY, NOW, platform=_platform(tmp_path))
    assert [f["component"] for f in out if f["check"] == "job.xid_storm"] == ["job:6990"]


def test_undated_withheld_or_already_explained_xids_are_left_alone(tmp_path):
    undated = _xid("n01", 45, None)
    withheld = _xid("n02", 45, "2026-12-02T09:41:00Z")
    withheld["evidence"]["withheld_action"] = "isolate"
    caused = _xid("n03", 45, "2026-12-02T09:41:00Z")
    caused["cause"] = "cluster:cluster.leaf:leaf:l1:gpu.xid"
    nodes = _nodes(undated, withheld, caused, _xid("n04", 45, "2026-12-02T09:41:00Z"))
    assert job_storm.attribute(nodes, _platform(tmp_path), DEFAULT_POLICY, NOW) == []


def test_no_job_view_or_disabled_is_the_old_behaviour(tmp_path):
    fs = [_xid("n%02d" % i, 45, "2026-12-02T09:41:%02dZ" % i) for i in (1, 2)]
    assert cluster.evaluate_cluster(_nodes(*copy.deepcopy(fs)), DEFAULT_POLICY, NOW) == []
    assert job_storm.attribute(_nodes(*fs), {"scheduler": None}, DEFAULT_POLICY, NOW) == []
    off = dict(DEFAULT_POLICY, job_storm=dict(DEFAULT_POLICY["job_storm"], enabled=False))
    assert job_storm.attribute(_nodes(*fs), _platform(tmp_path), off, NOW) == []


@pytest.mark.parametrize(
    "key, value", [("severity", "P5"), ("window_s", -1), ("min_nodes", 1), ("min_nodes", 2.5), ("window_s", True)]
)
def test_bad_policy_names_the_key(key, value):
    bad = dict(DEFAULT_POLICY, job_storm=dict(DEFAULT_POLICY["job_storm"], **{key: value}))
    with pytest.raises(PolicyError, match="job_storm.%s" % key):
        job_storm.config(bad)


def test_slurm_name_mapping_and_short_names(tmp_path):
    squeue = "7001|gpu|mallory|RUNNING|None|2026-12-02T08:58:00|2026-12-02T09:00:00|2|gres:gpu:8|n[01-02]\n"
    plat = _platform(tmp_path, squeue=squeue, sacct="")
    nodes = {
        "n01.example.org": {"findings": [_xid("n01.example.org", 31, "2026-12-02T09:41:00Z")]},
        "gpu-b": {"findings": [_xid("gpu-b", 31, "2026-12-02T09:41:09Z")]},
    }
    out = job_storm.attribute(nodes, plat, DEFAULT_POLICY, NOW, names={"gpu-b": "n02"})
    assert [f["evidence"]["hosts"] for f in out] == [["gpu-b", "n01.example.org"]]


# kernel line of formats.md section 4.1 with the syslog prefix of the simulator's kernel.log (see
# tests/integration/test_job_storm_inspect.py); Xid 45 is application-class (issue 38)
_SIM_XID45 = "2026-12-02T09:41:%02d+00:00 %s kernel: NVRM: Xid (PCI:%s): 45, pid=%d, name=pt_main_thread, Ch 00000008\n"


def test_inspection_passes_gpuops_slurm_node_name_to_the_job_view(tmp_path):
    """The inventory calls the nodes gpu-node-01/02, Slurm calls them sn01/sn02 (gpuops_slurm_node_name, docs/
    inventory.md): squeue's NodeList names sn[01-02] (cluster-formats.md 1.5). The inspection must map the job's
    Slurm names back to its hosts, as every other Slurm call of the collection does."""
    import sys
    from pathlib import Path

    from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline

    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tools"))
    from simcluster import generate as G  # noqa: E402 pylint: disable=import-outside-toplevel

    sim = tmp_path / "sim"
    G.generate(3, str(sim), 7, "none")
    hosts = {}
    for i, host in enumerate(("gpu-node-01", "gpu-node-02")):
        cap = sim / "captures" / host
        text = (cap / "kernel.log").read_text()
        bus = ":".join(text.split("NVRM: GPU at PCI:", 1)[1].split(":")[:3])
        with (cap / "kernel.log").open("a") as fh:
            fh.write(_SIM_XID45 % (i, host, bus, 40000 + i))
        hosts[host] = {"capture_dir": str(cap), "slurm_node_name": "sn%02d" % (i + 1)}
    squeue = "7001|gpu|mallory|RUNNING|None|2026-12-02T08:58:00|2026-12-02T09:00:00|2|gres:gpu:8|sn[01-02]\n"
    plat = _platform(tmp_path, squeue=squeue, sacct="")
    now = datetime.datetime(2026, 12, 2, 10, 0, tzinfo=datetime.timezone.utc)
    report = pipeline.inspect_nodes(hosts, now=now, platform=plat, workers=1)
    storms = [f for f in report["summary"]["cluster_findings"] if f["check"] == "job.xid_storm"]
    assert [f["evidence"]["hosts"] for f in storms] == [["gpu-node-01", "gpu-node-02"]], storms
    for host in hosts:
        (f,) = [f for f in report["nodes"][host]["findings"] if f["check"] == "gpu.xid" and f["code"] == "45"]
        assert f["cause"] == storms[0]["id"] and f["action"] == "monitor"
