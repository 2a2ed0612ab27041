# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Does Ansible run the hosts in exactly the planned batches and order?

tests/integration/playbooks/upgrade_plan/rolling.yml plans with gpuops.cluster.upgrade_plan on localhost, builds a
group in planned order with the upgrade role's entry point ``order`` (add_host) and rolls over it with
``serial: <planned batch sizes>`` (fake hosts, local connection). Each host appends ``<batch_index> <host> <ansible_play_batch>`` to a file (throttle 1).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.path.join(ROOT, "tests", "integration", "playbooks", "upgrade_plan")
BIN = os.path.join(ROOT, ".venv", "bin")


def playbook(tmp_path, out, check=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "GPUOPS_"))}
    env.update(
        PATH=BIN + os.pathsep + env.get("PATH", ""),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_HOST_KEY_CHECKING="0",
    )
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", "inventory.yml", "rolling.yml", "-e", "out=%s" % out]
    if check:
        cmd.append("--check")
    p = subprocess.run(cmd, cwd=TARGET, env=env, capture_output=True, text=True, timeout=300, check=False)
    return p.returncode, p.stdout + p.stderr


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not os.path.exists(os.path.join(BIN, "ansible-playbook")):
        pytest.skip("no .venv with ansible-playbook")
    tmp = tmp_path_factory.mktemp("upgrade_plan")
    out = tmp / "order.txt"
    rc, log = playbook(tmp, out)
    assert rc == 0, log
    with open(str(out) + ".plan.json", encoding="utf-8") as fh:
        plan = json.load(fh)
    with open(out, encoding="utf-8") as fh:
        lines = [line.split() for line in fh.read().splitlines()]
    return plan, lines


def test_plan_is_not_inventory_order(run):
    plan, _lines = run
    with open(os.path.join(TARGET, "inventory.yml"), encoding="utf-8") as fh:
        inv = list(yaml.safe_load(fh)["all"]["children"]["gpu_nodes"]["hosts"])
    assert plan["skipped"] == ["node03"] and plan["blocked"] == [] and plan["deferred"] == []
    assert plan["ordered_hosts"] != [h for h in inv if h in plan["ordered_hosts"]]  # the test can tell orders apart
    assert plan["batches"][0]["canary"] and plan["batch_sizes"][0] == 1
    assert plan["changed"] is False
    assert plan["window_s"] == 86400 and plan["stats"]["window_s"] == 86400  # from gpuops_change_window


def test_hosts_run_in_exactly_the_planned_batches_and_order(run):
    plan, lines = run
    assert [host for _i, host, _b in lines] == plan["ordered_hosts"]
    ran_batches = []
    for idx, host, batch in lines:
        assert int(idx) == plan["host_batches"][host]
        members = batch.split(",")
        assert members == plan["batches"][int(idx)]["hosts"], "Ansible's batch differs from the plan"
        if not ran_batches or ran_batches[-1] != members:
            ran_batches.append(members)
    assert ran_batches == [b["hosts"] for b in plan["batches"]]
    assert [len(b) for b in ran_batches] == plan["batch_sizes"]


def test_check_mode_plans_and_changes_nothing(tmp_path):
    out = tmp_path / "order.txt"
    rc, log = playbook(tmp_path, out, check=True)
    assert rc == 0, log
    assert not out.exists() and not os.path.exists(str(out) + ".plan.json")
    assert "node04" in log  # the rolling play still ran over the planned hosts (canary first)


def test_plan_from_capture_directories(tmp_path):
    """The simulated cluster (tools/simcluster): facts from capture dirs, topology from its inventory."""
    gen = os.path.join(ROOT, "tools", "simcluster", "generate.py")
    if not os.path.exists(gen) or not os.path.exists(os.path.join(BIN, "ansible-playbook")):
        pytest.skip("no simcluster generator or no .venv")
    sim = tmp_path / "sim"
    subprocess.run(
        [os.path.join(BIN, "python"), gen, "--nodes", "16", "--out", str(sim), "--faults", "none"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    out = tmp_path / "plan.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "GPUOPS_"))}
    env.update(PATH=BIN + os.pathsep + env.get("PATH", ""), ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"), ANSIBLE_NOCOLOR="1")  # fmt: skip
    p = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", str(sim / "inventory"), "plan_capture.yml", "-e", "out=%s" % out],
        cwd=TARGET, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    with open(out, encoding="utf-8") as fh:
        plan = json.load(fh)
    assert plan["problems"] == [] and plan["blocked"] == [] and plan["skipped"] == []
    steps = plan["nodes"]["gpu-node-01"]["steps"]
    assert [s["component"] for s in steps] == ["hca_fw", "driver"]  # the BMC (ipmitool mc info) is at target
    assert steps[1]["from"] == {"driver": "535.161.08", "fabric_manager": "535.161.08"}
    assert len(steps[0]["targets"]) == len(plan["nodes"]["gpu-node-01"]["current"]["hca_fw"]) > 0
    # 16 nodes in 2 racks, 25% share (4), 1 per rack: canary + batches of 2; 7200 s window of 1800 s nodes
    assert plan["batch_sizes"] == [1, 2, 2, 2]
    assert plan["stats"]["capacity"] == {"gpu": 16} and plan["window_s"] == 7200
    assert len(plan["deferred"]) == 9 and all(d["reason"].startswith("window:") for d in plan["deferred"])
    for b in plan["batches"]:  # one node per rack per batch (the simulator puts 8 nodes in a rack)
        assert len(b["hosts"]) == len({(int(h[-2:]) - 1) // 8 for h in b["hosts"]})
