# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.health_check_install names the node by its Slurm name when the inventory's differs
(gpuops_slurm_node_name, issue 41): the program's ``node_name`` is what it asks ``scontrol`` about."""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.action.health_check_install import ActionModule
from ansible_collections.gpuops.cluster.plugins.plugin_utils.health_check import program as _health_check

ARGS = {"config": {}, "policy_overrides": {}, "node_class": None, "profiles": {}}


def test_the_slurm_name_becomes_node_name():
    tv = {"inventory_hostname": "gpu-node-01.example.org", "gpuops_slurm_node_name": "gpu-node-01"}
    cfg = ActionModule._config(None, dict(ARGS), tv)
    assert cfg["host"] == "gpu-node-01.example.org" and cfg["node_name"] == "gpu-node-01"
    assert _health_check.node_name(cfg, env={}) == "gpu-node-01"


def test_without_it_the_program_keeps_its_own_default_and_a_set_node_name_wins():
    cfg = ActionModule._config(None, dict(ARGS), {"inventory_hostname": "gpu-node-01"})
    assert not cfg.get("node_name")
    assert _health_check.node_name(cfg, env={"SLURMD_NODENAME": "n1"}) == "n1"
    tv = {"inventory_hostname": "h", "gpuops_slurm_node_name": "s"}
    cfg = ActionModule._config(None, dict(ARGS, config={"node_name": "mine"}), tv)
    assert cfg["node_name"] == "mine"
