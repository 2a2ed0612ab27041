# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.upgrade_plan as Ansible runs it: host variables and facts in, the plan out, never a change."""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.action import upgrade_plan

BASELINE = {"h100": {"driver": "550.54.15", "fabric_manager": "550.54.15"}}
MATRIX = {"driver": {"550.54": {}}}
ROOMY = {"max_offline_share": 0.5}


def _facts(driver):
    return {
        "schema": "gpuops.facts/v1",
        "gpu": {"driver_version": driver, "gpus": [{"index": 0}]},
        "node": {"fabric_manager_version": driver},
        "slurm": {"nodes": [{"state": "IDLE", "partitions": ["gpu"]}]},
    }


def _hostvars():
    hv = {}
    for i, driver in enumerate(("535.161.08", "550.54.15", "535.161.08")):
        hv["n%d" % i] = {
            "gpuops_node_class": "h100",
            "gpuops_rack": "r%d" % i,
            "gpuops_upgrade_collect": {"facts": _facts(driver)},
        }
    hv["n3"] = {"gpuops_node_class": "h100", "gpuops_upgrade_collect": {"failed": True, "msg": "ssh: no route"}}
    return hv


def test_plan_from_registered_facts_and_play_variables(run_action):
    tv = {"hostvars": _hostvars(), "gpuops_change_window": {"remaining_s": 7200}}
    out = run_action(
        upgrade_plan,
        {"hosts": ["n0", "n1", "n2", "n3"], "baseline": BASELINE, "matrix": MATRIX, "constraints": ROOMY},
        task_vars=tv,
    )
    assert not out.get("failed"), out
    assert out["changed"] is False and out["window_s"] == 7200.0
    assert sorted(out["ordered_hosts"]) == ["n0", "n2"] and out["skipped"] == ["n1"]
    assert out["blocked"] == [{"host": "n3", "reason": "collection failed: ssh: no route"}]
    assert out["host_batches"]["n0"] in (0, 1) and out["msg"].startswith("2 host(s) in 2 batch(es); 1 at target")
    assert [s["component"] for s in out["nodes"]["n0"]["steps"]] == ["driver"]


def test_check_mode_plans_the_same(run_action):
    tv = {"hostvars": _hostvars()}
    args = {"hosts": ["n0", "n1"], "baseline": BASELINE, "matrix": MATRIX, "constraints": ROOMY}
    assert run_action(upgrade_plan, args, task_vars=tv, check_mode=True)["ordered_hosts"] == ["n0"]


def test_refusals_are_failed_results(run_action):
    tv = {"hostvars": _hostvars()}
    out = run_action(upgrade_plan, {"hosts": ["n0", "ghost"], "baseline": BASELINE, "matrix": MATRIX}, task_vars=tv)
    assert out["failed"] is True and out["msg"] == "upgrade_plan: host 'ghost' is not in the inventory"
    bad = {"h100": {"driver": "550.54.15", "fabric_manager": "550.54.14"}}
    out = run_action(upgrade_plan, {"hosts": ["n0"], "baseline": bad, "matrix": MATRIX}, task_vars=tv)
    assert out["failed"] is True and out["msg"].startswith("upgrade_plan: the baseline is refused: h100.fabric_manager")
    out = run_action(
        upgrade_plan,
        {"hosts": ["n0"], "baseline": BASELINE, "matrix": MATRIX, "constraints": {"max_per_rack": 0}},
        task_vars=tv,
    )
    assert out["failed"] is True and out["msg"].startswith("upgrade_plan: constraints.max_per_rack:")
    out = run_action(upgrade_plan, {"baseline": BASELINE, "matrix": MATRIX}, task_vars=tv)
    assert out["failed"] is True and "hosts" in out["msg"]


def test_the_collected_slurm_state_counts_before_the_inventory_one(run_action):
    hv = _hostvars()
    hv["n0"]["gpuops_slurm_state"] = "IDLE"
    hv["n0"]["upgrade_slurm_state"] = "IDLE+DRAIN"  # the upgrade role's collect entry point read it from Slurm
    tv = {"hostvars": hv}
    out = run_action(upgrade_plan, {"hosts": ["n0", "n2"], "baseline": BASELINE, "matrix": MATRIX}, task_vars=tv)
    assert not out.get("failed"), out
    assert out["stats"]["already_offline"] == {"gpu": 1}  # drained: costs no capacity, so n0 may go
    assert "n0" in out["ordered_hosts"]
