# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test bed itself (tests/testbed/): identity, isolation from the CI host, fake tools, packages, reboots, Slurm."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

HOST_BOOT_ID = Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def test_inventory_shape(testbed):
    inv = yaml.safe_load(testbed.inventory.read_text())
    hosts = inv["all"]["children"]["gpu_nodes"]["hosts"]
    assert sorted(hosts) == testbed.nodes and len(hosts) >= 2
    assert hosts["gpu-node-01"]["ansible_host"] == "10.200.0.11"
    racks = {}
    for name, hv in hosts.items():
        racks.setdefault(hv["gpuops_rack"], []).append(name)
        assert hv["gpuops_leaf_switch"] and hv["gpuops_power_domain"]
    assert all(len(members) <= 4 for members in racks.values())
    if len(hosts) == 8:
        assert sorted(len(m) for m in racks.values()) == [4, 4]
    head = inv["all"]["children"]["slurm_controllers"]["hosts"]["slurm_head"]
    assert head["ansible_connection"] == "local"
    assert inv["all"]["vars"]["gpuops_slurm_controller"]["scontrol_path"] == testbed.scontrol_path


def test_every_node_has_its_own_identity(testbed):
    res = testbed.adhoc(
        "gpu_nodes", "ansible.builtin.command", {"cmd": "cat /etc/hostname /proc/sys/kernel/random/boot_id"}
    )
    assert sorted(res) == testbed.nodes
    seen = set()
    for host, r in res.items():
        assert not r.get("failed") and not r.get("unreachable"), r
        hostname, boot_id = r["stdout"].split()
        assert hostname == host
        assert boot_id == testbed.boot_id(host) != HOST_BOOT_ID
        assert testbed.load_state(host)["boot_id"] == boot_id
        seen.add(boot_id)
    assert len(seen) == len(testbed.nodes)
    facts = testbed.module("gpu-node-02", "ansible.builtin.setup", {"gather_subset": ["!all", "network"]})
    assert facts["ansible_facts"]["ansible_hostname"] == "gpu-node-02"
    assert facts["ansible_facts"]["ansible_default_ipv4"]["address"] == "10.200.0.12"


def test_node_sees_only_its_own_processes(testbed):
    """Own PID namespace: collectors reading /proc on a node must not see other nodes' (or the host's) daemons."""
    out = testbed.on_node("gpu-node-01", "sh", "-c", "cat /proc/[0-9]*/comm 2>/dev/null").stdout.split()
    assert out.count("slurmd") == 1 and out.count("sshd") >= 1
    assert "slurmctld" not in out and "munged" not in out
    assert len(out) < 40
    assert testbed.on_node("gpu-node-01", "cat", "/proc/1/comm").stdout.strip() == "python3"


def test_ib_sysfs_has_the_real_layout(testbed):
    out = testbed.on_node(
        "gpu-node-01",
        "sh",
        "-c",
        "cd /sys/class/infiniband && ls && readlink mlx5_3 && cat mlx5_3/ports/1/state mlx5_3/ports/1/rate "
        "&& basename $(readlink -f mlx5_3/device) && ls mlx5_3/ports/1/counters | wc -l",
    ).stdout.split("\n")
    assert out[:8] == ["mlx5_%d" % i for i in range(8)]
    assert out[8].startswith("../../devices/pci0000:") and out[8].endswith("/infiniband/mlx5_3")
    assert out[9] == "4: ACTIVE" and "400 Gb/sec" in out[10]
    assert out[11].startswith("0000:") and out[11].endswith(":00.0")
    assert int(out[12]) >= 8
    # the real host has no such tree
    assert not Path("/sys/class/infiniband/mlx5_3").exists() or Path("/sys/class/infiniband").is_dir()


def test_fake_tools_follow_the_node_state(testbed):
    host = "gpu-node-04"
    assert testbed.on_node(host, "nvidia-smi", "-L").stdout.count("GPU ") == 8
    assert "CA 'mlx5_7'" in testbed.on_node(host, "ibstat").stdout
    with testbed.edit_state(host) as state:
        state["gpus"] = state["gpus"][:7]
    assert testbed.on_node(host, "nvidia-smi", "-L").stdout.count("GPU ") == 7
    # other nodes are untouched, and the host has no fake tools
    assert testbed.on_node("gpu-node-05", "nvidia-smi", "-L").stdout.count("GPU ") == 8
    assert not Path("/usr/local/bin/ibstat").exists() or "simnode" not in Path("/usr/local/bin/ibstat").read_text()


def test_packages_services_and_reboot_stay_on_the_node(testbed):
    host = "gpu-node-02"
    before = testbed.boot_id(host)
    play = textwrap.dedent(
        """\
        - hosts: gpu-node-02
          gather_facts: false
          tasks:
            - ansible.builtin.apt:
                name: [nvidia-driver-550, nvidia-fabricmanager-550, datacenter-gpu-manager]
                update_cache: true
            - ansible.builtin.service: {name: nvidia-fabricmanager, state: started, enabled: true}
            - ansible.builtin.apt: {name: nvidia-driver-550}
              register: again
            - ansible.builtin.assert: {that: [again is not changed]}
            - ansible.builtin.reboot:
                reboot_command: "{{ gpuops_reboot_command }}"
                boot_time_command: "{{ gpuops_boot_time_command }}"
                reboot_timeout: 60
            - ansible.builtin.command: /etc/init.d/nvidia-fabricmanager status
              changed_when: false
            - ansible.builtin.command: cat /opt/gpuops-sim/nvidia-driver-550/version
              changed_when: false
        """
    )
    proc = testbed.playbook(play, timeout=150)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    after = testbed.boot_id(host)
    assert after != before and after != HOST_BOOT_ID
    state = testbed.load_state(host)
    assert state["boot_id"] == after and state["driver_version"] == "550.54.15"
    # nothing reached the CI host or another node
    host_pkgs = subprocess.run(["dpkg-query", "-W", "nvidia-driver-550"], capture_output=True, check=False)
    assert host_pkgs.returncode != 0
    assert not Path("/etc/init.d/nvidia-fabricmanager").exists()
    assert not Path("/opt/gpuops-sim").exists()
    other = testbed.on_node("gpu-node-03", "dpkg-query", "-W", "nvidia-driver-550", check=False)
    assert other.returncode != 0
    # slurmd came back with the node
    testbed.wait_for(lambda: testbed.node_state(host).startswith("IDLE"), timeout=30, what="slurm node back")


def test_node_that_does_not_come_back(testbed):
    host = "gpu-node-06"
    nd = testbed.node_dir(host)
    (nd / "no_return").touch()
    testbed.on_node(host, "/usr/local/sbin/gpuops-sim-reboot")
    testbed.wait_for(lambda: not testbed.running_on(host, "sshd"), timeout=15, what="sshd gone")
    assert not testbed.running_on(host, "slurmd")
    res = testbed.module(host, "ansible.builtin.ping", timeout=60)
    assert res.get("unreachable") or res.get("failed")
    testbed.reset()
    res = testbed.module(host, "ansible.builtin.ping")
    assert res.get("ping") == "pong", {k: res.get(k) for k in ("msg", "module_stderr", "module_stdout", "rc")}


def test_slurm_is_real_and_reachable_from_nodes(testbed):
    out = testbed.slurm("sinfo", "-h", "-N", "-o", "%N %T %G %P")
    rows = [line.split() for line in out.splitlines()]
    assert sorted(r[0] for r in rows) == testbed.nodes
    assert all(r[1] == "idle" and r[2] == "gpu:h100:8" and r[3] == "gpu*" for r in rows)
    res = testbed.module("gpu-node-01", "ansible.builtin.command", {"cmd": "scontrol show node gpu-node-01"})
    assert "NodeName=gpu-node-01" in res["stdout"] and "Gres=gpu:h100:8" in res["stdout"]
    job = testbed.sbatch("-w", "gpu-node-03", "--gres=gpu:h100:2", "--wrap", "true")
    testbed.wait_for(lambda: testbed.job_state(job) == "GONE", timeout=20, what="job finished")


def test_ci_fails_instead_of_skipping_when_the_bed_is_down(tmp_path, testbed):
    env = dict(os.environ, CI="true", GPUOPS_TB=str(tmp_path / "nothing"))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__ + "::test_inventory_shape"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    assert proc.returncode != 0 and "CI=true" in proc.stdout, proc.stdout[-2000:]
    env["CI"] = "false"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", __file__ + "::test_inventory_shape"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    assert proc.returncode == 0 and "test bed not up" in proc.stdout, proc.stdout[-2000:]
