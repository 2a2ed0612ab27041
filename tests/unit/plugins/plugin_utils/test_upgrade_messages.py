# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade role's plan and verify lines, now built in Python (issue 36: no Jinja loops in roles).

Oracle: the lines the role's Jinja templates showed before (roles/upgrade/tasks/plan.yml and verify.yml at
42a96c3, rendered by ansible-core 2.19 with the same steps): written out here by hand."""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.action import upgrade_plan
from ansible_collections.gpuops.cluster.plugins.plugin_utils.upgrade import plan as U


def test_pending_text_joins_the_steps_as_the_verify_message_did():
    steps = [
        {"component": "vbios", "from": ["96.00.5E.00.01", "96.00.5E.00.02"], "to": "96.00.89.00.01"},
        {
            "component": "driver",
            "from": {"driver": "535.1", "fabric_manager": None},
            "to": {"driver": "550.1", "fabric_manager": "550.1"},
        },  # fmt: skip
        {"component": "bmc", "from": None, "to": "1.2"},
    ]
    assert U.pending_text(steps) == (
        "vbios ['96.00.5E.00.01', '96.00.5E.00.02'] (want 96.00.89.00.01); "
        "driver {'driver': '535.1', 'fabric_manager': None} (want {'driver': '550.1', 'fabric_manager': '550.1'}); "
        "bmc  (want 1.2)"
    )
    assert U.pending_text([{"component": "bios", "from": "1.0", "to": "2.0"}]) == "bios 1.0 (want 2.0)"
    assert U.pending_text([]) == ""


def test_components_text_lists_the_nodes_with_steps_in_plan_order():
    nodes = {
        "n1": {"steps": [{}], "summary": {"components": ["vbios", "hca_fw"]}},
        "n2": {"steps": [], "summary": {"components": []}},
        "n3": {"steps": [{}], "summary": {"components": ["driver"]}},
    }
    assert U.components_text(nodes) == "n1: vbios+hca_fw, n3: driver"
    assert U.components_text({"n2": nodes["n2"]}) == ""
    assert U.components_text({}) == ""
    # a node without a summary (bad input) still gets its name, no traceback
    assert U.components_text({"n4": {"steps": [{}]}, "n5": "junk"}) == "n4: "


def test_the_action_returns_both_lines(run_action):
    def facts(driver):
        return {"schema": "gpuops.facts/v1", "gpu": {"driver_version": driver, "gpus": [{"index": 0}]},
                "node": {"fabric_manager_version": driver}, "slurm": {"nodes": [{"state": "IDLE"}]}}  # fmt: skip

    hv = {
        "a1": {"gpuops_node_class": "h100", "gpuops_upgrade_collect": {"facts": facts("535.161.08")}},
        "a2": {"gpuops_node_class": "h100", "gpuops_upgrade_collect": {"facts": facts("550.54.15")}},
    }
    args = {
        "hosts": ["a1", "a2"],
        "baseline": {"h100": {"driver": "550.54.15", "fabric_manager": "550.54.15"}},
        "matrix": {"driver": {"550.54": {}}},
        "constraints": {"max_offline_share": 1.0},
    }
    out = run_action(upgrade_plan, args, task_vars={"hostvars": hv})
    assert not out.get("failed"), out
    assert out["components_text"] == "a1: driver"
    assert out["pending_text"] == {
        "a1": "driver {'driver': '535.161.08', 'fabric_manager': '535.161.08'} "
        "(want {'driver': '550.54.15', 'fabric_manager': '550.54.15'})"
    }
