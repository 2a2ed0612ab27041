"""Slurm maintenance reservation on the real test bed (tests/testbed/testbed.sh up): a job whose time limit
crosses the reservation start stays pending while a short one runs. Skipped when the test bed is not up."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.path.join(ROOT, "tests", "integration", "playbooks", "change_guard")
BIN = os.path.join(ROOT, ".venv", "bin")
TB = os.environ.get("GPUOPS_TB", "/tmp/gpuops-tb")
SCONTROL = os.path.join(TB, "bin", "scontrol")
NAME = "gpuops-test-maint"
NODE = "gpu-node-01"

pytestmark = pytest.mark.testbed


def _slurm_up():
    if not os.access(SCONTROL, os.X_OK):
        return False
    try:
        return subprocess.run([SCONTROL, "ping"], capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _tool(name, *args):
    p = subprocess.run([os.path.join(TB, "bin", name), *args], capture_output=True, text=True, timeout=30, check=False)
    return p.returncode, p.stdout + p.stderr


def _apply(tmp_path, states, start="now", minutes=30):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        PATH=BIN + os.pathsep + env.get("PATH", ""),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"),
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
    )
    extra = {
        "change_guard_slurm_controller": {"host": "localhost", "scontrol_path": SCONTROL},
        "resv_name": NAME,
        "resv_nodes": [NODE],
        "resv_start": start,
        "resv_minutes": minutes,
        "resv_states": states,
    }
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", "inventory.yml", "reservation.yml", "-e", json.dumps(extra)]
    p = subprocess.run(cmd, cwd=TARGET, env=env, capture_output=True, text=True, timeout=180, check=False)
    return p.returncode, p.stdout + p.stderr


def _job_state(job):
    _unused, out = _tool("scontrol", "show", "job", job)
    for word in out.split():
        if word.startswith("JobState="):
            return word.split("=", 1)[1]
    return "GONE"  # finished and purged


@pytest.mark.skipif(not _slurm_up(), reason="test bed Slurm is not up (tests/testbed/testbed.sh up)")
def test_maintenance_reservation_holds_back_crossing_jobs(tmp_path):
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 240))  # slurmctld's local time
    jobs = []
    try:
        rc, out = _apply(tmp_path, ["present", "present"], start=start)
        assert rc == 0 and "changed=1" in out, out  # created once, then left alone
        rc, out = _tool("scontrol", "show", "reservation", NAME)
        assert rc == 0 and "MAINT" in out and "IGNORE_JOBS" in out and NODE in out, out
        for limit in ("20", "1"):  # 20 min crosses the start 4 min from now; 1 min does not
            rc, out = _tool("sbatch", "--parsable", "-w", NODE, "-N1", "-t", limit, "--wrap", "sleep 20")
            assert rc == 0, out
            jobs.append(out.strip().split(";")[0])
        deadline = time.time() + 40
        while time.time() < deadline and _job_state(jobs[1]) == "PENDING":
            time.sleep(2)
        assert _job_state(jobs[1]) in ("RUNNING", "COMPLETING", "COMPLETED", "GONE")
        assert _job_state(jobs[0]) == "PENDING"
        _unused, out = _tool("scontrol", "show", "job", jobs[0])
        reason = [w for w in out.split() if w.startswith("Reason=")]
        assert reason and "ReqNodeNotAvail" in reason[0], out  # held back by the reservation, not merely unseen
    finally:
        for job in jobs:
            _tool("scancel", job)
        rc, out = _apply(tmp_path, ["absent", "absent"])
    assert rc == 0 and "changed=1" in out, out
    assert _tool("scontrol", "show", "reservation", NAME)[0] != 0
