# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ticket hook end to end: `gpuops-runbook run` runs playbooks/inspect.yml through ansible-runner on a
generated capture inventory (nothing is contacted), with the audit callback on, and writes the result JSON;
per-node locks make a second payload for the same node wait or refuse."""

from __future__ import annotations

import calendar
import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from gpuops_runbook import hook  # noqa: E402

BIN = os.path.dirname(sys.executable)


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    gen = os.path.join(ROOT, "tools", "simcluster", "generate.py")
    subprocess.run(
        [sys.executable, gen, "--nodes", "4", "--out", str(out), "--seed", "1", "--faults", "xid79:1", "--jobs", "1"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    key = json.loads((out / "answer_key.json").read_text())
    faulty = sorted(h for h, f in key["hosts"].items() if f)
    return {"inventory": str(out / "inventory" / "hosts.yml"), "faulty": faulty[0], "hosts": sorted(key["hosts"])}


def run_hook(payload, state_dir, *extra, wait=True):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tools"), PATH=BIN + os.pathsep + os.environ["PATH"])
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    cmd = [
        sys.executable,
        "-m",
        "gpuops_runbook",
        "run",
        "-i",
        payload.pop("_inventory"),
        "--state-dir",
        str(state_dir),
    ]
    proc = subprocess.Popen(
        [*cmd, *extra, "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    proc.stdin.write(json.dumps(payload))
    proc.stdin.close()
    if not wait:
        return proc
    return finish(proc)


def finish(proc):
    out = proc.stdout.read()
    proc.wait(180)
    assert out.strip(), proc.stderr.read()
    return proc.returncode, json.loads(out)


def test_inspect_through_the_hook(sim, tmp_path):
    state = tmp_path / "state"
    nodes = [sim["faulty"], sim["hosts"][0] if sim["hosts"][0] != sim["faulty"] else sim["hosts"][1]]
    payload = {"_inventory": sim["inventory"], "ticket": "OPS-4711", "runbook": "inspect", "nodes": nodes}
    payload["requester"] = "alice"
    rc, res = run_hook(payload, state)
    assert rc == 0, res
    assert res["status"] == "successful" and res["rc"] == 0 and res["errors"] == []
    assert res["ticket"] == "OPS-4711" and res["playbook"] == "playbooks/inspect.yml"
    for n in nodes:
        # capture hosts are analysed on the controller: their outcome is what the inspection found
        assert res["nodes"][n]["status"] == "ok" and res["nodes"][n]["failed"] == 0
    assert res["nodes"][sim["faulty"]]["inspection"] == "faulty"
    assert res["nodes"]["localhost"]["ok"] >= 1
    # only the requested nodes were inspected
    report = [p for p in res["reports"] if p.endswith("report.json")]
    assert len(report) == 1 and report[0].startswith(str(state / "tickets" / "OPS-4711" / "reports"))
    doc = json.loads(open(report[0], encoding="utf-8").read())
    assert sorted(doc["nodes"]) == sorted(nodes)
    assert doc["nodes"][sim["faulty"]]["status"] == "faulty"
    assert any(f["check"] == "gpu.xid" and f["code"] == "79" for f in doc["nodes"][sim["faulty"]]["findings"])
    # artifacts per ticket, the result file next to them
    assert os.path.isdir(res["artifact_dir"]) and res["artifact_dir"].startswith(str(state / "tickets" / "OPS-4711"))
    assert json.loads(open(res["result_file"], encoding="utf-8").read())["status"] == "successful"
    # the audit callback was on: the run's records carry the ticket
    assert res["audit_run_id"]
    records = [json.loads(line) for line in open(state / "audit" / "audit.log", encoding="utf-8")]
    ours = [r for r in records if r.get("run_id") == res["audit_run_id"]]
    assert ours[0]["event"] == "run_start" and ours[0]["playbook"].endswith("playbooks/inspect.yml")
    assert any(r["event"] == "play_start" and r.get("ticket") == "OPS-4711" for r in ours)


def test_unknown_host_runs_nothing(sim, tmp_path):
    payload = {"_inventory": sim["inventory"], "ticket": "OPS-1", "runbook": "inspect", "nodes": ["gpu-node-99"]}
    rc, res = run_hook(payload, tmp_path)
    assert rc == 2 and res["status"] == "invalid"
    assert "gpu-node-99" in res["errors"][0]
    assert not (tmp_path / "tickets").exists()


def test_same_node_never_runs_twice_at_once(sim, tmp_path):
    node = sim["faulty"]
    holder = hook.NodeLocks(str(tmp_path), [node], timeout=0)
    assert holder.acquire()
    try:
        payload = {"_inventory": sim["inventory"], "ticket": "OPS-2", "runbook": "inspect", "nodes": [node]}
        rc, res = run_hook(dict(payload), tmp_path, "--lock-timeout", "0")
        assert rc == 75 and res["status"] == "busy"
        assert "is locked by another runbook run (pid %d)" % os.getpid() in res["errors"][0]
        assert not os.path.exists(res["artifact_dir"])  # nothing was run
        # a waiting run starts once the lock is given back
        proc = run_hook(dict(payload), tmp_path, "--lock-timeout", "60", wait=False)
        time.sleep(1.5)
        assert proc.poll() is None
        released = time.time()
        holder.release()
        rc, res = finish(proc)
        assert rc == 0 and res["status"] == "successful"
        started = calendar.timegm(time.strptime(res["started_at"], "%Y-%m-%dT%H:%M:%SZ"))
        assert started >= int(released)
    finally:
        holder.release()


def test_two_hooks_for_one_node_serialize(sim, tmp_path):
    node = sim["faulty"]
    procs = []
    for t in ("OPS-10", "OPS-11"):
        payload = {"_inventory": sim["inventory"], "ticket": t, "runbook": "inspect", "nodes": [node]}
        procs.append(run_hook(payload, tmp_path, "--lock-timeout", "120", wait=False))
    results = [finish(p) for p in procs]
    assert [rc for rc, _unused in results] == [0, 0]
    spans = sorted((r["started_at"], r["finished_at"]) for _unused, r in results)
    assert spans[0][1] <= spans[1][0], "the two runs overlapped: %s" % spans
