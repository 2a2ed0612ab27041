# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.isolation_guard with inventory names that differ from Slurm's (gpuops_slurm_node_name, issue 41):
Slurm's view is read under the inventory names, so a node Slurm already drains counts as already isolated."""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.action import isolation_guard as A

# Slurm knows gpu-node-01..08 (gpu-node-08 drained); the inventory calls them gpu-node-XX.example.org
SHOW = "\n".join(
    "NodeName=gpu-node-%02d State=%s Partitions=gpu Gres=gpu:8" % (i, "IDLE+DRAIN" if i == 8 else "IDLE")
    for i in range(1, 9)
)
NAMES = {"gpu-node-%02d.example.org" % i: "gpu-node-%02d" % i for i in range(1, 9)}


def test_slurm_names_map_the_view_to_inventory_names(tmp_path, run_action, slurm_view):
    slurm_view.set(SHOW)
    args = {
        "nodes": ["gpu-node-08.example.org", "gpu-node-03.example.org"],
        "findings": [{"host": "gpu-node-03.example.org", "severity": "P0"}],
        "scontrol_path": slurm_view.path,
        "state_dir": str(tmp_path),
        "run_id": "r",
        "slurm_names": NAMES,
    }
    out = run_action(A, args)
    assert out["already_isolated"] == ["gpu-node-08.example.org"], out
    assert out["allowed"] == ["gpu-node-03.example.org"]


def test_without_the_mapping_the_inventory_names_are_unknown_to_slurm(tmp_path, run_action, slurm_view):
    slurm_view.set(SHOW)
    args = {
        "nodes": ["gpu-node-08.example.org"],
        "scontrol_path": slurm_view.path,
        "state_dir": str(tmp_path),
        "run_id": "r",
    }
    out = run_action(A, args)
    assert out.get("already_isolated") != ["gpu-node-08.example.org"], out
