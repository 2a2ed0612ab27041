# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issues 38 and 41 through the real playbook (playbooks/inspect.yml over a simulated cluster's capture
directories; no test bed): one crashing job is one finding, auto-isolation drains every P0/P1 node fault, and
gpuops_fail_on counts the nodes that could not be judged.

Fixtures and where their shapes come from:
- Xid lines: the line grammar of /work/shared/reference/formats.md section 4.1 (``NVRM: Xid (PCI:<dddd:bb:dd>):
  <code>, pid=<pid>, name=<comm>, <message>``) with the syslog prefix the simulator's kernel.log uses; the Xid 45
  line has the shape of the real Xid 43 line of samples/xid-kmsg/gpud-xid13-43-sm-warp-exception.log
  (``43, pid=2815167, name=pt_main_thread, Ch 00000008``) with NVIDIA's code 45; the Xid 79 message is NVIDIA's
  catalogue text ("GPU has fallen off the bus").
- squeue/sacct: the text forms of docs/capture.md "Cluster capture directory" (``squeue -h -o
  '%i|%P|%u|%T|%r|%V|%S|%D|%b|%N'``, ``sacct -a -X -P -n -o JobID,...,End``), with a compressed hostlist
  (``gpu-node-[01-40]``, cluster-formats.md 1.5) and sacct's ``Unknown`` end of a running job.
- Expected nodes: the job's node list written here, and the simulator's answer key (answer_key.json) for the demo.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from playbook_env import playbook_env

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
GENERATE = REPO / "tools" / "simcluster" / "generate.py"
OPEN_GUARD = {"max_share_cluster": 1, "max_share_partition": 1, "max_share_rack": 1}
JOB = "7001"
JOB_NODES = ["gpu-node-%02d" % i for i in range(1, 41)]  # 40 nodes of one job, over five racks of eight
XID45 = "2026-12-02T09:41:%02d+00:00 %s kernel: NVRM: Xid (PCI:%s): 45, pid=%d, name=pt_main_thread, Ch 00000008\n"
XID79 = (
    "2026-12-02T09:43:10+00:00 %s kernel: NVRM: Xid (PCI:%s): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.\n"
)
SQUEUE = (
    "%s|gpu|mallory|RUNNING|None|2026-12-02T08:58:00|2026-12-02T09:00:00|40|gres:gpu:8|gpu-node-[01-40]\n"
    "7002|gpu|alice|PENDING|Resources|2026-12-02T09:30:00|Unknown|8|gres:gpu:8|\n" % JOB
)
SACCT = (
    "6990|gpu|bob|COMPLETED|0:0|gpu-node-[01-08]|2026-12-02T05:00:00|2026-12-02T05:01:00|2026-12-02T07:01:00\n"
    "%s|gpu|mallory|RUNNING|0:0|gpu-node-[01-40]|2026-12-02T08:58:00|2026-12-02T09:00:00|Unknown\n"
    "7002|gpu|alice|PENDING|0:0|None assigned|2026-12-02T09:30:00|Unknown|Unknown\n" % JOB
)
# records every call; 'show node' lists every simulated node IDLE (a stand-in for Slurm: no test bed here)
FAKE_SCONTROL = """#!/bin/sh
echo "$*" >> "%(log)s"
if [ "$1" = "show" ] && [ "$2" = "node" ]; then
  for n in %(nodes)s; do
    printf 'NodeName=%%s Arch=x86_64 CoresPerSocket=1\\n   State=IDLE ThreadsPerCore=1\\n   Partitions=gpu\\n\\n' "$n"
  done
fi
exit 0
"""


def _generate(out: Path, nodes: int, faults: str) -> Path:
    cmd = [sys.executable, str(GENERATE), "--nodes", str(nodes), "--out", str(out), "--seed", "7", "--faults", faults]
    subprocess.run(cmd, check=True, capture_output=True, text=True, env=playbook_env())
    return out


def _inspect(sim: Path, tmp: Path, *extra: str, wrapper: bool = True) -> subprocess.CompletedProcess:
    """ansible-playbook inspect.yml (wrapped: isolate_result saved to tmp/isolate.json)."""
    playbook = REPO / "playbooks" / "inspect.yml"
    if wrapper:
        save = {"content": "{{ isolate_result | default({}) | to_json }}", "dest": str(tmp / "isolate.json")}
        wrap = [
            {"ansible.builtin.import_playbook": str(playbook)},
            {"hosts": "localhost", "gather_facts": False, "tasks": [{"ansible.builtin.copy": save}]},
        ]
        playbook = tmp / "wrapper.yml"
        playbook.write_text(json.dumps(wrap))
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(sim / "inventory"), str(playbook)]
    cmd += ["-e", "gpuops_report_dir=%s" % (tmp / "report"), "-e", "gpuops_state_dir=%s" % (tmp / "state")]
    return subprocess.run(
        cmd + list(extra), capture_output=True, text=True, env=playbook_env(), cwd=str(REPO), timeout=600, check=False
    )


def _auto_isolate(tmp: Path, hosts) -> list:
    log = tmp / "scontrol.log"
    scontrol = tmp / "scontrol"
    scontrol.write_text(FAKE_SCONTROL % {"log": log, "nodes": " ".join(sorted(hosts))})
    scontrol.chmod(0o755)
    controller = {"gpuops_slurm_controller": {"host": "localhost", "scontrol_path": str(scontrol)}}
    # auto-isolation needs the audit trail (issue 41): opted out here, recorded in the run's state directory
    extra = dict(controller, gpuops_isolation_guard=OPEN_GUARD, gpuops_allow_unaudited=True)
    return ["-e", "gpuops_auto_isolate=true", "-e", json.dumps(extra)]


def _drained(tmp: Path) -> list:
    """The nodes the isolate role was asked to take out (its result), and checks scontrol was told exactly those."""
    res = json.loads((tmp / "isolate.json").read_text() or "{}") if (tmp / "isolate.json").exists() else {}
    asked = sorted((res or {}).get("nodes") or {})
    log = (tmp / "scontrol.log").read_text() if (tmp / "scontrol.log").exists() else ""
    updated = sorted({w.split("=", 1)[1] for ln in log.splitlines() if ln.startswith("update") for w in ln.split()
                      if w.startswith("NodeName=")})  # fmt: skip
    assert updated == asked, (updated, asked, log[-2000:])
    return asked


def _bus(capture: Path) -> str:
    """The PCI id (``dddd:bb:dd``) of the node's first GPU, from its own kernel log's ``NVRM: GPU at PCI:`` line."""
    for line in (capture / "kernel.log").read_text().splitlines():
        if "NVRM: GPU at PCI:" in line:
            return ":".join(line.split("GPU at PCI:", 1)[1].split(":")[:3])
    raise AssertionError("no 'NVRM: GPU at PCI:' line in %s" % capture)


def _storm(sim: Path, xid79_on=None) -> None:
    """Xid 45 on the first GPU of each of the job's 40 nodes between 09:41:00 and 09:41:39 (a storm well inside the
    10-minute window), the job in squeue/sacct; with ``xid79_on`` an Xid 79 on that node two minutes later."""
    for i, host in enumerate(JOB_NODES):
        cap = sim / "captures" / host
        with (cap / "kernel.log").open("a") as fh:
            fh.write(XID45 % (i, host, _bus(cap), 40000 + i))
            if host == xid79_on:
                fh.write(XID79 % (host, _bus(cap)))
    cluster = sim / "cluster"
    (cluster / "squeue.txt").write_text(SQUEUE)
    (cluster / "sacct.txt").write_text(SACCT)


def _findings(report: dict, check: str) -> list:
    return [f for f in report["summary"]["cluster_findings"] if f["check"] == check]


def test_xid45_storm_of_one_job_is_one_finding_and_isolates_no_node(tmp_path):
    """Issue 38: Xid 45 on 40 nodes of one job. Each node alone reads as a solo Xid 45 (NVIDIA's WORKFLOW_XID_45:
    "Solo: RESTART_FM", health-policy-facts.md section 4): 40 fabric-manager restarts. With the job view: one
    job.xid_storm finding naming the job and its user, every node's Xid 45 explained by it (action monitor), and
    auto-isolation drains nothing."""
    sim = _generate(tmp_path / "sim", 48, "none")
    _storm(sim)
    hosts = ["gpu-node-%02d" % i for i in range(1, 49)]
    proc = _inspect(sim, tmp_path, *_auto_isolate(tmp_path, hosts))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    storms = _findings(report, "job.xid_storm")
    assert len(storms) == 1, storms
    storm = storms[0]
    assert storm["component"] == "job:%s" % JOB and storm["action"] == "restart_app", storm
    assert storm["evidence"]["user"] == "mallory" and storm["evidence"]["job_id"] == JOB, storm
    assert storm["evidence"]["hosts"] == JOB_NODES and storm["evidence"]["nodes"] == 40, storm
    assert "job %s" % JOB in storm["message"] and "mallory" in storm["message"], storm["message"]
    for host in JOB_NODES:
        xids = [f for f in report["nodes"][host]["findings"] if f["check"] == "gpu.xid"]
        assert [f["code"] for f in xids] == ["45"], (host, xids)
        assert xids[0]["cause"] == storm["id"] and xids[0]["action"] == "monitor", xids[0]
        assert xids[0]["evidence"]["original_action"] == "restart_fabric_manager", xids[0]  # the solo verdict
    # no rack/leaf correlation claims the job's crash, and nobody is drained
    assert not [f for f in report["summary"]["cluster_findings"] if f["check"].startswith("cluster.")
                and f["code"] == "gpu.xid"]  # fmt: skip
    assert _drained(tmp_path) == []


def test_xid79_on_a_storm_node_still_isolates_that_node(tmp_path):
    """Issue 38: the same storm (default policy) plus an Xid 79 on gpu-node-07: the job finding still names the
    job; the Xid 79 stands alone (no cause, its own action) and auto-isolation drains gpu-node-07 only."""
    sim = _generate(tmp_path / "sim", 48, "none")
    _storm(sim, xid79_on="gpu-node-07")
    hosts = ["gpu-node-%02d" % i for i in range(1, 49)]
    proc = _inspect(sim, tmp_path, *_auto_isolate(tmp_path, hosts))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    storms = _findings(report, "job.xid_storm")
    assert [s["component"] for s in storms] == ["job:%s" % JOB], storms
    xid79 = [f for f in report["nodes"]["gpu-node-07"]["findings"] if f["check"] == "gpu.xid" and f["code"] == "79"]
    assert len(xid79) == 1 and xid79[0]["cause"] is None and xid79[0]["severity"] == "P1", xid79
    assert xid79[0]["action"] != "monitor", xid79
    assert report["nodes"]["gpu-node-07"]["status"] == "faulty"
    assert _drained(tmp_path) == ["gpu-node-07"]


def test_auto_isolation_drains_every_p0_p1_faulty_node_of_the_demo(tmp_path):
    """Issue 41: of the demo's faulty nodes only those whose action was `isolate` were drained (3 of 7); now every
    node the answer key gives a P0/P1 fault is drained, whatever the repair action (reboot, reseat ...)."""
    sim = _generate(tmp_path / "sim", 64, "default")
    key = json.loads((sim / "answer_key.json").read_text())
    expected = sorted(h for h, faults in key["hosts"].items() if any(f.get("severity_hint") in ("P0", "P1")
                                                                     for f in faults))  # fmt: skip
    assert len(expected) >= 5, key["hosts"]
    proc = _inspect(sim, tmp_path, *_auto_isolate(tmp_path, key["hosts"]))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert _drained(tmp_path) == expected
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    actions = {f["action"] for h in expected for f in report["nodes"][h]["findings"] if f["severity"] in ("P0", "P1")}
    assert actions - {"isolate"}, actions  # not only `isolate`: reboot/reseat faults are drained too


def test_fail_on_p1_fails_when_every_node_could_not_be_judged(tmp_path):
    """Issue 41: `-e gpuops_fail_on=P1` exited 0 when 16 of 16 nodes were in `error` (capture directories that do
    not exist): now it exits 2, and the message says how many nodes could not be judged; `off` keeps the old way."""
    sim = _generate(tmp_path / "sim", 16, "none")
    path = sim / "inventory" / "hosts.yml"
    inv = yaml.safe_load(path.read_text())
    for host, hv in inv["all"]["children"]["gpu_nodes"]["hosts"].items():
        hv["gpuops_capture_dir"] = str(tmp_path / "typo" / host)
    path.write_text(yaml.safe_dump(inv))
    proc = _inspect(sim, tmp_path, "-e", "gpuops_fail_on=P1", wrapper=False)
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["summary"]["status"]["error"] == 16, report["summary"]
    assert report["summary"]["severity"]["P0"] + report["summary"]["severity"]["P1"] == 0, report["summary"]
    assert proc.returncode == 2, proc.stdout[-3000:]
    body = proc.stdout.split("PLAY RECAP")[0].strip().splitlines()
    assert body[-1].startswith("fatal: [localhost]: FAILED!"), body[-3:]
    assert "16 of 16 nodes could not be judged" in body[-1] and "gpuops_fail_on_unknown=10%" in body[-1], body[-1]
    assert body[-1].endswith('0 finding(s) at or above P1"}'), body[-1]
    off = _inspect(sim, tmp_path, "-e", "gpuops_fail_on=P1", "-e", "gpuops_fail_on_unknown=off", wrapper=False)
    assert off.returncode == 0, off.stdout[-3000:]
