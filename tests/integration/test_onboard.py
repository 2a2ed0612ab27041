# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/onboard.yml on the test bed (real Slurm, fake dcgmi/all_reduce_perf/nvidia-smi driven by state files).

Three playbook runs, each over several nodes at once (the runtime budget):
  A  gpu-node-01 clean -> accepted and resumed; -02 one GPU missing -> stops at stage 1; -03 old VBIOS -> stops at
     stage 2 with the upgrade command; -04 GPU 5 failing dcgmi diag -> stops at stage 4 naming GPU 5.
  B  after fixing 02/03/04: each resumes at its failed stage and is accepted; 01 (accepted) is left alone.
  C  onboard_restart on 01 with an Xid 48 and a symbol_error increase injected DURING burn-in (by the stress
     command), and on 02 with dcgmi hanging (5 s timeout) and NCCL bandwidth below the threshold: both stop at
     stage 4, naming what happened.
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "tools") not in sys.path:
    sys.path.insert(0, str(REPO / "tools"))

from simcluster.generate import NODE_CLASS  # noqa: E402
from simcluster.generate import PROFILE as SIM_PROFILE  # noqa: E402

import _state_db  # noqa: E402

# the hardware part of the simulated cluster's class (its service and version keys would add inspection checks)
HARDWARE = (
    "gpu_model",
    "gpu_count",
    "nvlinks_per_gpu",
    "pcie_gen",
    "pcie_width",
    "ib_ports",
    "ib_rate_gbps",
    "ib_link_layer",
)

NODES = ["gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-04"]
OLD_VBIOS = "96.00.30.00.01"

INJECT = """#!/bin/bash
# Runs on the node as the burn-in "stress" command: injects faults into THIS node's simulator state mid burn-in.
set -e
host=$(hostname)
[ "$host" = "{target}" ] || exit 0
state={root}/nodes/$host/state.json
export PYTHONPATH={repo}/tools
python3 -m simnode --state "$state" fault xid48 gpu=3 >/dev/null
python3 - "$state" <<'PY'
import json, sys
p = sys.argv[1]
s = json.load(open(p))
s["hcas"][2]["ports"][0]["counters"]["symbol_error"] += 7
json.dump(s, open(p, "w"))
PY
python3 {repo}/tests/testbed/lib/simstate.py sysfs "$state" {root}/nodes/$host/sysfs
"""


def _vars(bed, state_dir: Path) -> dict:
    now = datetime.datetime.now(datetime.timezone.utc)
    return {
        "gpuops_state_dir": str(state_dir),
        "gpuops_node_class": "h100-sxm-8",
        "gpuops_profiles": {"h100-sxm-8": {k: SIM_PROFILE[NODE_CLASS][k] for k in HARDWARE}},
        # the bed's nodes have no fabric manager package installed: the baseline names what they report
        "gpuops_upgrade_baseline": {
            "h100-sxm-8": {"driver": "535.161.08", "vbios": "96.00.74.00.0D", "hca_fw": "28.39.1002"}
        },
        "onboard_acceptance": {
            "h100-sxm-8": {
                "gpu_memory_mib": 81559,
                "hca_count": 8,
                "nccl_min_busbw_gbps": 400,
                "nccl_rail_min_busbw_gbps": 400,
                "dcgm_level": 2,
            }
        },
        "onboard_dcgm_timeouts": {"1": 5, "2": 5, "3": 10, "4": 10},
        "onboard_nccl_timeout": 20,
        "onboard_nccl_min_bytes": "1G",
        "onboard_nccl_max_bytes": "8G",
        "gpuops_maintenance_windows": [
            {
                "name": "onboarding-test",
                "start": (now - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M"),
                "end": (now + datetime.timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M"),
                "timezone": "UTC",
            }
        ],
        "gpuops_ticket": "OPS-42",
        "gpuops_change_id": "CHG-7",
    }


def _play(bed, tmp: Path, state_dir: Path, targets, *extra: str, timeout: float = 240):
    varfile = tmp / "vars.yml"
    varfile.write_text(yaml.safe_dump(_vars(bed, state_dir)), encoding="utf-8")
    env = dict(
        bed.env,
        ANSIBLE_CALLBACKS_ENABLED="gpuops.cluster.audit",
        GPUOPS_STATE_DIR=str(state_dir),
        ANSIBLE_STDOUT_CALLBACK="default",
    )
    cmd = [
        str(REPO / ".venv" / "bin" / "ansible-playbook"),
        "-i",
        str(bed.inventory),
        str(REPO / "playbooks" / "onboard.yml"),
        "-e",
        "@%s" % varfile,
        "-e",
        "gpuops_targets=%s" % ",".join(targets),
    ]
    for e in extra:
        cmd += ["-e", e]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(REPO), check=False)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - t0


def _record(state_dir: Path, host: str) -> dict:
    return json.loads((state_dir / "onboarding" / ("%s.json" % host)).read_text())


def _outcome(state_dir: Path) -> dict:
    """The newest run outcome of the onboarding (gpuops.cluster.run_outcome)."""
    runs = sorted((state_dir / "runs" / "onboard").glob("*.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(runs[-1].read_text())


def _reason(bed, host: str) -> str:
    out = bed.scontrol("show", "node", host)
    m = re.search(r"Reason=(.*?)(?: \[[^\]]*\])?\s*$", out, re.M)
    return m.group(1) if m else ""


def _attempts(rec: dict) -> dict:
    return {k: v["attempt"] for k, v in rec["stages"].items()}


@pytest.fixture(scope="module")
def bed(testbed):
    missing = [n for n in NODES if n not in testbed.nodes]
    if missing:
        pytest.skip("the bed lacks %s" % missing)
    testbed.reset()
    return testbed


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onboard-state")


def test_a_first_run_accepts_clean_and_stops_faulty_nodes(bed, state_dir, tmp_path):
    with bed.edit_state("gpu-node-02") as s:
        s["gpus"].pop()  # 7 GPUs
    with bed.edit_state("gpu-node-03") as s:
        for g in s["gpus"]:
            g["vbios"] = OLD_VBIOS
    with bed.edit_state("gpu-node-04") as s:
        s["dcgm"]["fail_gpus"]["5"] = "GPU 5 Memory test failed: 2 DBE errors"
    rc, log, took = _play(bed, tmp_path, state_dir, NODES)
    assert rc == 2, log  # three hosts failed: the run outcome is INCOMPLETE
    assert "gpu-node-01 accepted" in log, log[-4000:]
    out = _outcome(state_dir)
    assert {h: n["outcome"] for h, n in out["nodes"].items()} == {
        "gpu-node-01": "done", "gpu-node-02": "left_drained", "gpu-node-03": "left_drained",
        "gpu-node-04": "left_drained"}  # fmt: skip
    assert out["nodes"]["gpu-node-02"]["decision"] == "failed at inventory" and out["ticket"] == "OPS-42"
    left = _record(state_dir, "gpu-node-02")["left"]  # the final record says how the node was left
    assert left["drained"] is True and "DRAIN" in left["slurm_state"] and left["slurm_reason"].endswith("[OPS-42]")

    r1 = _record(state_dir, "gpu-node-01")
    assert r1["status"] == "accepted"
    assert [r1["stages"][s]["status"] for s in r1["stages"]] == ["passed"] * 6
    assert r1["stages"]["inventory"]["evidence"]["gpu_count"] == 8
    assert len(r1["stages"]["inventory"]["evidence"]["gpu_serials"]) == 8
    nccl = r1["stages"]["burnin"]["evidence"]["nccl"]
    assert [n["name"] for n in nccl][:2] == ["single-node", "rail mlx5_0"] and len(nccl) == 9  # 4 nodes: per rail
    assert all(n["busbw_gbps"] > 400 for n in nccl)
    assert bed.node_state("gpu-node-01").startswith("IDLE") and "DRAIN" not in bed.node_state("gpu-node-01")
    baseline = json.loads((state_dir / "baselines" / "gpu-node-01.json").read_text())
    assert len(baseline["gpu"]["gpus"]) == 8 and baseline["gpu"]["driver_version"] == "535.161.08"
    hs = _state_db.host_state(state_dir, "gpu-node-01")
    assert hs["baseline"] == baseline  # where every later inspection reads it (drift checks)
    md = (state_dir / "onboarding" / "gpu-node-01.signoff.md").read_text()
    assert md.count("| passed |") == 6 and "OPS-42" in md
    prom = bed.on_node("gpu-node-01", "cat", "/var/lib/node_exporter/textfile_collector/gpuops_onboard.prom").stdout
    assert prom.count("gpuops_onboard_stage_passed{") == 6 and 'gpuops_onboard_accepted{host="gpu-node-01"} 1' in prom

    r2 = _record(state_dir, "gpu-node-02")
    assert r2["status"] == "failed" and r2["failed_stage"] == "inventory"
    assert "GPU count 7, profile expects 8" in r2["stages"]["inventory"]["problems"]
    assert set(r2["stages"]) == {"inventory"}
    r3 = _record(state_dir, "gpu-node-03")
    assert r3["failed_stage"] == "compliance" and r3["stages"]["inventory"]["status"] == "passed"
    assert any(OLD_VBIOS in p and "96.00.74.00.0D" in p for p in r3["stages"]["compliance"]["problems"])
    remedy = r3["stages"]["compliance"]["remedy"]
    assert "playbooks/upgrade.yml" in remedy and "gpuops_targets=gpu-node-03" in remedy and remedy in log
    r4 = _record(state_dir, "gpu-node-04")
    # intermittent on a shared bed (stop 32: once "health"): the failed stage's own record says why
    assert r4["failed_stage"] == "burnin", json.dumps(r4["stages"].get(r4["failed_stage"]), indent=1)[:3000]
    diag = [p for p in r4["stages"]["burnin"]["problems"] if p.startswith("dcgmi diag")]
    assert len(diag) == 1 and "GPU 5 (" in diag[0] and " fail" in diag[0]
    for host, stage in (("gpu-node-02", "inventory"), ("gpu-node-03", "compliance"), ("gpu-node-04", "burnin")):
        assert "DRAIN" in bed.node_state(host), host
        assert ("gpuops: onboard %s failed" % stage) in _reason(bed, host), _reason(bed, host)
    marker = json.loads((state_dir / "isolation" / "gpu-node-04.json").read_text())
    assert marker["source"] == "gpuops.cluster.onboard" and marker["ticket"] == "OPS-42"
    assert marker["why"].startswith("onboard burnin failed: dcgmi diag GPU 5 (")
    on_node = json.loads(bed.on_node("gpu-node-04", "cat", "/var/lib/gpuops/maintenance.json").stdout)
    assert on_node == marker
    assert sorted(p.name for p in (state_dir / "isolation").iterdir()) == [
        "gpu-node-02.json",
        "gpu-node-03.json",
        "gpu-node-04.json",
    ]
    audit = (state_dir / "audit" / "audit.log").read_text()
    assert audit.count("gpuops.cluster.onboard_stage") >= 10
    print("run A took %.1f s" % took)


def test_b_rerun_after_fixing_resumes_at_the_failed_stage(bed, state_dir, tmp_path):
    before = {h: _attempts(_record(state_dir, h)) for h in NODES}
    bed.reset()  # defaults again: the GPU is back, the VBIOS current, the diag clean; nodes resumed
    for h in NODES[1:]:  # the failed ones are still drained in real life
        bed.scontrol("update", "NodeName=%s" % h, "State=DRAIN", "Reason=gpuops: onboarding failed")
    rc, log, took = _play(bed, tmp_path, state_dir, NODES)
    assert rc == 0, log[-5000:]
    assert "gpu-node-01 was accepted" in log
    out = _outcome(state_dir)
    assert out["exit_code"] == 0 and out["nodes"]["gpu-node-01"]["outcome"] == "already"
    assert all(out["nodes"][h]["outcome"] == "done" for h in NODES[1:]), out["nodes"]
    assert _attempts(_record(state_dir, "gpu-node-01")) == before["gpu-node-01"]  # nothing ran again
    a2 = _attempts(_record(state_dir, "gpu-node-02"))
    assert a2 == {s: (2 if s == "inventory" else 1) for s in a2} and len(a2) == 6
    a3 = _attempts(_record(state_dir, "gpu-node-03"))
    assert a3["inventory"] == 1 and a3["compliance"] == 2 and a3["burnin"] == 1
    a4 = _attempts(_record(state_dir, "gpu-node-04"))
    assert a4["inventory"] == a4["compliance"] == a4["health"] == 1 and a4["burnin"] == 2 and a4["service"] == 1
    assert list((state_dir / "isolation").iterdir()) == []  # onboarding's markers cleared on acceptance
    assert bed.on_node("gpu-node-04", "test", "-e", "/var/lib/gpuops/maintenance.json", check=False).returncode == 1
    for h in NODES:
        assert _record(state_dir, h)["status"] == "accepted", h
        st = bed.node_state(h)
        assert "DRAIN" not in st, (h, st)
    print("run B took %.1f s" % took)


def test_c_burnin_deltas_and_a_hung_dcgm_fail_stage_4(bed, state_dir, tmp_path):
    script = bed.root / "onb-inject.sh"
    script.write_text(INJECT.format(target="gpu-node-01", root=bed.root, repo=REPO), encoding="utf-8")
    script.chmod(0o755)
    had_record = (state_dir / "onboarding" / "gpu-node-01.json").exists()  # accepted by runs A/B
    with bed.edit_state("gpu-node-02") as s:
        s["dcgm"]["hang"] = True
        s["dcgm"]["hang_seconds"] = 120
        s["nccl"]["busbw_gbps"] = 210.0  # and a degraded fabric: below the class's 400 GB/s
    rc, log, took = _play(
        bed,
        tmp_path,
        state_dir,
        ["gpu-node-01", "gpu-node-02"],
        "onboard_restart=true",
        '{"onboard_stress_command": ["bash", "%s"], "onboard_stress_duration_s": 30}' % script,
    )
    assert rc != 0
    r1 = _record(state_dir, "gpu-node-01")
    assert r1["failed_stage"] == "burnin" and r1["status"] == "failed"
    probs = r1["stages"]["burnin"]["problems"]
    xid = [p for p in probs if p.startswith("new Xid 48 on GPU 3")]
    sym = [p for p in probs if p == "IB port mlx5_2/1 symbol_error +7 during burn-in"]
    assert len(xid) == 1 and len(sym) == 1, probs
    assert r1["stages"]["burnin"]["evidence"]["new_events"] >= 2  # Xid 48 and its Xid 63
    assert "Xid 48" in _reason(bed, "gpu-node-01") and "DRAIN" in bed.node_state("gpu-node-01")
    assert r1["stages"]["inventory"]["attempt"] == 1 and len(r1["stages"]) == 4  # restarted: a fresh record
    assert any(h.get("status") == "restarted" for h in r1["history"]) == had_record
    r2 = _record(state_dir, "gpu-node-02")
    hung = [p for p in r2["stages"]["burnin"]["problems"] if "timed out" in p]
    assert len(hung) == 1 and hung[0].startswith("dcgmi diag -r 2 timed out"), r2["stages"]["burnin"]["problems"]
    slow = [p for p in r2["stages"]["burnin"]["problems"] if "below the threshold 400 GB/s" in p]
    assert len(slow) == 9 and slow[0].startswith("NCCL single-node: avg bus bandwidth 20")  # + 8 rails
    assert "DRAIN" in bed.node_state("gpu-node-02")
    assert took < 150  # the hang cost seconds, not the hang's 120 s per GPU run
    print("run C took %.1f s" % took)
