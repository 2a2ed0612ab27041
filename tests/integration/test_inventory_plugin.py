# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The first day on the test bed's real Slurm 22.05 (issue 41): the gpuops.cluster.slurm inventory source builds the
bed's inventory live from slurmctld, the collection's Slurm calls use gpuops_slurm_node_name when the inventory names
differ, and gpuops.cluster.preflight is green on the bed and names each gap introduced (the audit callback off, a
tool missing from PATH, slurmctld unreachable).

Oracle: the bed's own hand-written inventory (tests/testbed/testbed.sh write_inventory: ansible_host 10.200.0.1X,
four nodes a rack, leaf-<rack>) and its slurm.conf (partition gpu, Gres=gpu:h100:8); what slurmctld reports is
read with the bed's scontrol, not with the plugin."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
OPEN = {"max_share_cluster": 1, "max_share_partition": 1, "max_share_rack": 1}


def _bed_inventory(testbed):
    return yaml.safe_load(testbed.inventory.read_text(encoding="utf-8"))


def _topology(testbed):
    """topology.conf from the bed's own racks: four nodes a leaf switch (leaf-1: gpu-node-01..04, ...)."""
    hosts = _bed_inventory(testbed)["all"]["children"]["gpu_nodes"]["hosts"]
    leaves = {}
    for host, hv in sorted(hosts.items()):
        leaves.setdefault(hv["gpuops_leaf_switch"], []).append(host)
    return "".join("SwitchName=%s Nodes=%s\n" % (leaf, ",".join(members)) for leaf, members in sorted(leaves.items()))


def _inventory_dir(testbed, tmp_path, extra=""):
    """An inventory directory as a user writes one: the Slurm source, the bed's connection vars, the Slurm head."""
    bed = _bed_inventory(testbed)
    d = tmp_path / "inv"
    (d / "group_vars").mkdir(parents=True, exist_ok=True)
    (tmp_path / "topology.conf").write_text(_topology(testbed), encoding="utf-8")
    (d / "10-bed.slurm.yml").write_text(
        "plugin: gpuops.cluster.slurm\nscontrol_path: %s\ntopology_file: %s\n"
        "node_classes:\n  - {class: h100-sxm-8, gres: 'gpu:h100:8'}\n%s"
        % (testbed.scontrol_path, tmp_path / "topology.conf", extra),
        encoding="utf-8",
    )
    (d / "group_vars" / "all.yml").write_text(yaml.safe_dump(bed["all"]["vars"]), encoding="utf-8")
    gpu_vars = dict(bed["all"]["children"]["gpu_nodes"]["vars"])
    (d / "group_vars" / "gpu_nodes.yml").write_text(yaml.safe_dump(gpu_vars), encoding="utf-8")
    (d / "20-head.yml").write_text(yaml.safe_dump({"slurm_controllers": bed["all"]["children"]["slurm_controllers"]}))
    return d


def _env(testbed, **extra):
    env = {k: v for k, v in testbed.env.items() if k != "ANSIBLE_INVENTORY"}
    env.update(ANSIBLE_INVENTORY_UNPARSED_FAILED="True")
    env.update(extra)
    return env


def _list(testbed, inv):
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-inventory"), "-i", str(inv), "--list", "--export"],
        capture_output=True, text=True, env=_env(testbed), cwd=str(REPO), timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)

    def members(group):
        g = data.get(group, {})
        out = set(g.get("hosts", []))
        for child in g.get("children", []):
            out |= members(child)
        return sorted(out)

    def plain(v):
        if isinstance(v, dict):
            return (
                v.get("__ansible_unsafe", v) if set(v) == {"__ansible_unsafe"} else {k: plain(x) for k, x in v.items()}
            )
        return [plain(x) for x in v] if isinstance(v, list) else v

    return {h: plain(v) for h, v in data["_meta"]["hostvars"].items()}, members


def test_the_inventory_is_built_live_from_the_beds_slurm(testbed, tmp_path):
    testbed.scontrol("update", "NodeName=gpu-node-02", "State=DRAIN", "Reason=inventory test")
    try:
        hv, members = _list(testbed, _inventory_dir(testbed, tmp_path))
    finally:
        testbed.scontrol("update", "NodeName=gpu-node-02", "State=RESUME", check=False)
    bed = _bed_inventory(testbed)["all"]["children"]["gpu_nodes"]["hosts"]
    nodes = sorted(bed)
    assert members("gpu_nodes") == nodes
    assert members("slurm_partition_gpu") == nodes
    assert members("slurm_gres_gpu_h100") == nodes
    assert members("slurm_class_h100_sxm_8") == nodes
    assert members("slurm_state_drain") == ["gpu-node-02"]
    for host in nodes:
        assert hv[host]["gpuops_slurm_node_name"] == host
        assert hv[host]["ansible_host"] == bed[host]["ansible_host"]  # NodeAddr in slurm.conf
        assert hv[host]["gpuops_leaf_switch"] == bed[host]["gpuops_leaf_switch"]
        assert hv[host]["gpuops_node_class"] == "h100-sxm-8"
        assert hv[host]["gpuops_slurm_partitions"] == ["gpu"]
    assert members("slurm_controllers") == ["slurm_head"]


def test_without_a_topology_plugin_live_topology_is_empty_not_an_error(testbed, tmp_path):
    d = _inventory_dir(testbed, tmp_path)
    src = d / "10-bed.slurm.yml"
    src.write_text("\n".join(ln for ln in src.read_text().splitlines() if not ln.startswith("topology_file")) + "\n")
    hv, members = _list(testbed, d)
    assert len(members("gpu_nodes")) == len(testbed.nodes)
    assert all("gpuops_leaf_switch" not in v for h, v in hv.items() if h.startswith("gpu-node"))


def test_isolate_drains_by_the_slurm_name_when_inventory_names_differ(testbed, tmp_path):
    inv = _inventory_dir(testbed, tmp_path, extra="hostname_suffix: .tb.example\n")
    hv, members = _list(testbed, inv)
    assert "gpu-node-03.tb.example" in members("gpu_nodes")
    assert hv["gpu-node-03.tb.example"]["gpuops_slurm_node_name"] == "gpu-node-03"
    state = tmp_path / "state"
    state.mkdir()
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [{"name": "isolate",
             "ansible.builtin.include_role": {"name": "gpuops.cluster.isolate"},
             "vars": {"isolate_nodes": ["gpu-node-03.tb.example"], "isolate_ticket": "T-41",
                      "isolate_reason": "inventory names differ", "isolate_state_dir": str(state),
                      "isolate_guard_policy": OPEN, "isolate_requeue_after": 0}}]}]  # fmt: skip
    path = tmp_path / "isolate.yml"
    path.write_text(json.dumps(play), encoding="utf-8")
    try:
        proc = subprocess.run(
            [str(VENV_BIN / "ansible-playbook"), "-i", str(inv), str(path)],
            capture_output=True, text=True, env=_env(testbed), cwd=str(REPO), timeout=240, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert "DRAIN" in testbed.node_state("gpu-node-03")
        assert "inventory names differ" in testbed.scontrol("show", "node", "gpu-node-03")
    finally:
        testbed.scontrol("update", "NodeName=gpu-node-03", "State=RESUME", check=False)


def _preflight(testbed, inv, tmp_path, audited=True):
    env = _env(testbed, GPUOPS_STATE_DIR=str(tmp_path / "state"))
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    if audited:
        env["ANSIBLE_CALLBACKS_ENABLED"] = "gpuops.cluster.audit"
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", str(inv), "gpuops.cluster.preflight"],
        capture_output=True, text=True, env=env, cwd=str(REPO), timeout=300, check=False,
    )  # fmt: skip
    return proc, proc.stdout + proc.stderr


@pytest.fixture
def inventory_dir(testbed, tmp_path):
    return _inventory_dir(testbed, tmp_path)


def test_preflight_is_green_on_the_bed(testbed, tmp_path, inventory_dir):
    proc, out = _preflight(testbed, inventory_dir, tmp_path)
    assert proc.returncode == 0, out[-4000:]
    assert "preflight: green - 0 required gap(s)" in out
    assert "%d of %d target node(s) sampled" % (min(8, len(testbed.nodes)), len(testbed.nodes)) in out
    assert "note mlxlink" in out  # the bed's nodes have no mlxlink: a note, not a gap


def test_preflight_names_the_audit_callback_off(testbed, tmp_path, inventory_dir):
    proc, out = _preflight(testbed, inventory_dir, tmp_path, audited=False)
    assert proc.returncode != 0
    assert "GAP  audit_callback" in out and "ANSIBLE_CALLBACKS_ENABLED=gpuops.cluster.audit" in out
    assert "GAP  slurm" not in out and "GAP  nvidia-smi" not in out


def test_preflight_names_a_tool_missing_from_path(testbed, tmp_path, inventory_dir):
    node = testbed.nodes[0]
    testbed.on_node(node, "mv", "/usr/local/bin/nvidia-smi", "/usr/local/bin/.nvidia-smi.away")
    try:
        proc, out = _preflight(testbed, inventory_dir, tmp_path)
    finally:
        testbed.on_node(node, "mv", "/usr/local/bin/.nvidia-smi.away", "/usr/local/bin/nvidia-smi", check=False)
    assert proc.returncode != 0
    line = next(ln for ln in out.splitlines() if "GAP  nvidia-smi" in ln)
    assert "on 1 sampled node(s): %s" % node in line


def test_preflight_names_the_controller_unreachable(testbed, tmp_path, inventory_dir):
    with testbed.slurmctld_down("kill"):
        proc, out = _preflight(testbed, inventory_dir, tmp_path)
    assert proc.returncode != 0
    line = next(ln for ln in out.splitlines() if "GAP  slurm_controller" in ln)
    assert "DOWN" in line or "rc 1" in line
