# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Upgrade baseline validation, current versions from facts, per-node plans, and the upgrade_plan glue."""

from __future__ import annotations

import copy
import json
import os

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import ib as _ib
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import (
    nvsmi_xml as _nvsmi_xml,
    redfish as _redfish,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import planner as _planner
from ansible_collections.gpuops.cluster.plugins.plugin_utils.upgrade import plan as U
from ansible_collections.gpuops.cluster.plugins.plugin_utils.upgrade import report as R

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
FIX = os.path.join(ROOT, "tests", "fixtures")
EXAMPLE = os.path.join(ROOT, "inventories", "example", "group_vars", "all", "upgrade_baseline.yml")

MATRIX = {
    "fabric_manager_matches_driver": True,
    "driver": {
        "550": {"cuda": {"max": "12.4"}, "hca_fw": {"min": "28.39", "max": "28.43"}, "ofed": {"min": "23.10"}},
        "535": {"cuda": {"max": "12.2"}, "hca_fw": {"min": "28.36", "max": "28.39"}},
    },
}
BASELINE = {
    "h100-sxm-8": {
        "driver": "550.127.05",
        "fabric_manager": "550.127.05",
        "cuda": "12.4",
        "vbios": "96.00.99.00.01",
        "hca_fw": "28.41.1000",
        "bmc": "1.50.0",
        "bios": "2.4.1",
    }
}
AT_TARGET = {
    "driver": "550.127.05",
    "fabric_manager": "550.127.05",
    "cuda": "12.4",
    "vbios": ["96.00.99.00.01"] * 8,
    "gpu_indexes": list(range(8)),
    "hca_fw": ["28.41.1000"] * 4,
    "hca_names": ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"],
    "bmc": "1.50.0",
    "bios": "2.4.1",
}


def keys(problems):
    return [p["key"] for p in problems]


# ---- versions ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "left,right,want",
    [
        ("550.127.05", "550.54.15", 1),
        ("550.127.05", "550.127.5", 0),
        ("28.39.1002", "28.41.1000", -1),
        ("1.45.455b66-rev4", "1.45.455b66-rev4", 0),
        ("96.00.89.00.01", "96.00.99.00.01", -1),
        ("2.10", "2.9", 1),
        ("1.a", "1.2", 1),  # text after numbers: no TypeError
    ],
)
def test_compare_versions(left, right, want):
    assert U.compare_versions(left, right) == want
    assert U.compare_versions(right, left) == -want


def test_in_range_compares_on_the_bounds_length():
    assert U.in_range("28.43.2100", {"max": "28.43"})
    assert not U.in_range("28.44.0001", {"max": "28.43"})
    assert U.in_range("28.39.1002", {"min": "28.39"})
    assert not U.in_range("28.38.9999", {"min": "28.39"})
    assert U.in_range("12.4", {"max": "12.4"}) and not U.in_range("12.5", {"max": "12.4"})


# ---- validation ---------------------------------------------------------------------------------------------------
def test_valid_baseline_has_no_problems():
    assert U.validate_baseline(BASELINE, MATRIX) == []


def test_driver_fabric_manager_mismatch_is_refused_with_reason():
    b = copy.deepcopy(BASELINE)
    b["h100-sxm-8"]["fabric_manager"] = "550.127.04"
    problems = U.validate_baseline(b, MATRIX)
    assert keys(problems) == ["h100-sxm-8.fabric_manager"]
    msg = problems[0]["message"]
    assert "550.127.04" in msg and "must equal the driver 550.127.05" in msg


def test_fm_equality_can_be_switched_off():
    b = copy.deepcopy(BASELINE)
    b["h100-sxm-8"]["fabric_manager"] = "550.127.04"
    m = dict(MATRIX, fabric_manager_matches_driver=False)
    assert U.validate_baseline(b, m) == []


def test_fabric_manager_without_driver_is_refused():
    problems = U.validate_baseline({"c": {"fabric_manager": "550.127.05"}}, MATRIX)
    assert keys(problems) == ["c.fabric_manager"] and "needs a driver target" in problems[0]["message"]


def test_cuda_above_the_drivers_max_is_refused():
    b = copy.deepcopy(BASELINE)
    b["h100-sxm-8"]["cuda"] = "12.6"
    problems = U.validate_baseline(b, MATRIX)
    assert keys(problems) == ["h100-sxm-8.cuda"]
    assert "12.6 is outside <= 12.4 for driver 550.127.05" in problems[0]["message"]


def test_hca_firmware_outside_the_drivers_range_is_refused():
    b = copy.deepcopy(BASELINE)
    b["h100-sxm-8"]["hca_fw"] = "28.36.1010"
    problems = U.validate_baseline(b, MATRIX)
    assert keys(problems) == ["h100-sxm-8.hca_fw"] and "28.39..28.43" in problems[0]["message"]


def test_ofed_range_is_checked():
    b = copy.deepcopy(BASELINE)
    b["h100-sxm-8"]["ofed"] = "5.8-1.0.1.1"
    assert keys(U.validate_baseline(b, MATRIX)) == ["h100-sxm-8.ofed"]
    b["h100-sxm-8"]["ofed"] = "24.01-0.3.3.1"
    assert U.validate_baseline(b, MATRIX) == []


def test_driver_without_matrix_entry_is_refused_unless_allowed():
    b = {"c": {"driver": "570.86.15"}}
    problems = U.validate_baseline(b, MATRIX)
    assert keys(problems) == ["c.driver"] and "no entry in gpuops_compat_matrix.driver" in problems[0]["message"]
    assert "535, 550" in problems[0]["message"]
    assert U.validate_baseline(b, dict(MATRIX, require_driver_entry=False)) == []


def test_most_specific_driver_branch_wins():
    m = {"driver": {"550": {"cuda": {"max": "12.4"}}, "550.127": {"cuda": {"max": "12.6"}}}}
    assert U.matrix_entry("550.127.05", m["driver"]) == "550.127"
    assert U.matrix_entry("550.54.15", m["driver"]) == "550"
    assert U.matrix_entry("5501.1", m["driver"]) is None
    assert U.validate_baseline({"c": {"driver": "550.127.05", "cuda": "12.6"}}, m) == []
    assert keys(U.validate_baseline({"c": {"driver": "550.54.15", "cuda": "12.6"}}, m)) == ["c.cuda"]


def test_unknown_keys_are_named():
    b = copy.deepcopy(BASELINE)
    b["h100-sxm-8"]["nvswitch_fw"] = "1.0"
    m = copy.deepcopy(MATRIX)
    m["drivers"] = {}
    m["driver"]["550"]["cuda"]["maximum"] = "12.4"
    m["driver"]["550"]["gpu"] = {"min": "1"}
    got = keys(U.validate_baseline(b, m))
    assert got == [
        "gpuops_compat_matrix.drivers",
        "gpuops_compat_matrix.driver.550.cuda.maximum",
        "gpuops_compat_matrix.driver.550.gpu",
        "h100-sxm-8.nvswitch_fw",
    ]
    msgs = " ".join(p["message"] for p in U.validate_baseline(b, m))
    assert "unknown component (known: bmc, bios" in msgs and "unknown key (known: max, min)" in msgs


def test_yaml_floats_are_refused_with_a_hint():
    b = yaml.safe_load("c: {driver: '550.127.05', cuda: 12.10}")
    problems = U.validate_baseline(b, MATRIX)
    assert keys(problems) == ["c.cuda"] and "quote it" in problems[0]["message"] and "12.1" in problems[0]["message"]
    m = yaml.safe_load("driver: {550.1: {cuda: {max: '12.4'}}}")
    assert "was read as a number" in U.validate_baseline({"c": {"driver": "550.1"}}, m)[0]["message"]


@pytest.mark.parametrize("bad", [None, [], "x", {}, {"c": None}, {"c": []}, {"c": {"driver": ["550"]}}])
def test_malformed_baselines_are_problems_not_exceptions(bad):
    assert U.validate_baseline(bad, MATRIX)


def test_vendor_bios_strings_are_versions():
    assert U.validate_baseline({"c": {"bios": "U32 v2.52 (11/17/2021)", "bmc": "1.45.455b66-rev4"}}, None) == []
    assert keys(U.validate_baseline({"c": {"bios": "bad\nversion"}}, None)) == ["c.bios"]


def test_example_inventory_baseline_validates():
    with open(EXAMPLE, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    assert set(data) >= {"gpuops_upgrade_baseline", "gpuops_compat_matrix", "gpuops_upgrade_constraints"}
    assert U.validate_baseline(data["gpuops_upgrade_baseline"], data["gpuops_compat_matrix"]) == []


# ---- current versions -------------------------------------------------------------------------------------------
def _read(*parts):
    with open(os.path.join(FIX, *parts), encoding="utf-8") as fh:
        return fh.read()


def test_current_versions_from_real_samples():
    """nvidia-smi XML (A100 SXM4, 510.47.03), ibstat (H100 + CX7 + BF3), Redfish FirmwareInventory/BMC + System."""
    gpu = _nvsmi_xml.parse(_read("nvidia-smi-xml", "netdata-a100-sxm4-40gb-510.47.03-mig.xml"))
    hcas = _ib.parse_ibstat(_read("ibstat", "gpud-h100-cx7-ib-all-active-bf3.txt"))
    redfish = _redfish.empty()
    for f in ("dmtf-rackmount1-fwinv-bmc.json", "dmtf-rackmount1-system.json"):
        _redfish.merge(redfish, _redfish.parse_document(json.loads(_read("redfish", f))))
    facts = {
        "gpu": gpu,
        "ib": {"hcas": hcas},
        "bmc": {"redfish": redfish},
        "node": {"fabric_manager_version": None},
    }
    cur = U.current_versions(facts)
    assert cur["driver"] == "510.47.03"
    assert cur["cuda"] == "11.6"
    assert cur["vbios"] and all(v == cur["vbios"][0] for v in cur["vbios"])
    assert len(cur["vbios"]) == len(gpu["gpus"]) == len(cur["gpu_indexes"])
    assert cur["bmc"] == "1.45.455b66-rev4"
    assert cur["bios"] == "P79 v1.45 (12/06/2017)"
    assert cur["fabric_manager"] is None
    assert len(cur["hca_fw"]) == len(hcas) > 0 and all(cur["hca_fw"])
    assert cur["hca_names"] == sorted(h["name"] for h in hcas)


@pytest.mark.parametrize(
    "firmware,bmc,bios",
    [
        # hand-made, shaped like vendor inventories (no real sample of these in reference/). Dell: previous images
        ([{"id": "Previous-25227-6.10.00.00__iDRAC.Embedded.1-1", "name": "Integrated Dell Remote Access Controller",
           "version": "6.10.00.00"},
          {"id": "Installed-25227-7.00.00.00__iDRAC.Embedded.1-1", "name": "Integrated Dell Remote Access Controller",
           "version": "7.00.00.00"},
          {"id": "Previous-159-2.18.0__BIOS.Setup.1-1", "name": "BIOS", "version": "2.18.0"},
          {"id": "Installed-159-2.19.1__BIOS.Setup.1-1", "name": "BIOS", "version": "2.19.1"}], "7.00.00.00", "2.19.1"),
        # Lenovo XCC: primary and backup banks, UEFI
        ([{"id": "BMC-Backup", "name": "XCC Backup", "version": "1.10"},
          {"id": "BMC-Primary", "name": "XCC Primary", "version": "2.10"},
          {"id": "UEFI", "name": "UEFI", "version": "ESE118"}], "2.10", "ESE118"),
        # NVIDIA HGX/DGX: the host BMC, not the GPU tray's
        ([{"id": "HGX_FW_BMC_0", "name": "HGX_FW_BMC_0", "version": "24.01"},
          {"id": "HostBMC_0", "name": "HostBMC_0", "version": "24.09.17"},
          {"id": "HGX_FW_GPU_SXM_1", "name": "HGX_FW_GPU_SXM_1", "version": "96.00.99.00.01"},
          {"id": "HostBIOS_0", "name": "HostBIOS_0", "version": "1.3.7"}], "24.09.17", "1.3.7"),
        # HPE iLO
        ([{"id": "1", "name": "iLO 5", "version": "2.78 Feb 23 2023"},
          {"id": "2", "name": "System ROM", "version": "U32 v2.52 (11/17/2021)"}], "2.78 Feb 23 2023",
         "U32 v2.52 (11/17/2021)"),
    ],
)  # fmt: skip
def test_bmc_and_bios_from_vendor_firmware_inventories(firmware, bmc, bios):
    cur = U.current_versions({"bmc": {"redfish": {"firmware": firmware}}})
    assert (cur["bmc"], cur["bios"]) == (bmc, bios)


def test_current_versions_fallbacks():
    facts = {
        "gpu": {"driver_version": None, "gpus": [{"index": 1, "vbios_version": "B", "driver_version": "535.1"},
                                                 {"index": 0, "vbios_version": "A"}]},
        "bmc": {
            "mc": {"firmware_revision": "3.10"},
            "redfish": {"systems": [], "firmware": [
                {"id": "HGX_FW_BMC_0", "name": "HGX BMC", "version": "hgx-1"},   # the GPU tray's BMC, not ours
                {"id": "Installed-25227__iDRAC.Embedded.1-1", "name": "Integrated Remote Access Controller",
                 "version": "7.00.00.00"},
                {"id": "BIOS", "name": "BIOS", "version": "2.19.1"},
            ]},
        },
        "node": {"services": {"nvidia-fabricmanager": {"running": True, "version": "535.1"}}},
    }  # fmt: skip
    cur = U.current_versions(facts)
    assert cur["vbios"] == ["A", "B"] and cur["gpu_indexes"] == [0, 1]
    assert cur["driver"] == "535.1" and cur["fabric_manager"] == "535.1"
    assert cur["bmc"] == "7.00.00.00" and cur["bios"] == "2.19.1"
    facts["bmc"]["redfish"]["firmware"] = []
    assert U.current_versions(facts)["bmc"] == "3.10"
    facts["bmc"]["redfish"]["managers"] = [{"id": "1", "firmware_version": "2.80"}]
    assert U.current_versions(facts)["bmc"] == "2.80"


@pytest.mark.parametrize("facts", [None, {}, [], "x", {"gpu": "x", "ib": [1], "bmc": {"redfish": "y"}, "node": 3}])
def test_current_versions_of_garbage(facts):
    cur = U.current_versions(facts)
    assert cur["driver"] is None and cur["vbios"] == [] and cur["hca_fw"] == [] and cur["bmc"] is None


# ---- plans ---------------------------------------------------------------------------------------------------------
def outdated():
    cur = copy.deepcopy(AT_TARGET)
    cur.update(driver="535.161.08", fabric_manager="535.161.08", bmc="1.40.0", bios="2.3.0")
    cur["vbios"][3] = "96.00.89.00.01"
    cur["hca_fw"][1] = "28.39.1002"
    return cur


def test_plan_order_and_tools():
    steps = U.plan_node(outdated(), BASELINE["h100-sxm-8"], "h100-sxm-8")
    assert [s["component"] for s in steps] == ["bmc", "bios", "vbios", "hca_fw", "driver"]
    assert [s["tool"] for s in steps] == ["redfish_simple_update", "redfish_simple_update", "nvfwupd",
                                          "mlxfwmanager", "apt"]  # fmt: skip
    assert [s["activation"] for s in steps] == ["reset", "reboot", "dc_power_cycle", "reboot", "reboot"]
    assert all(s["action"] == "upgrade" and not s["downgrade"] for s in steps)
    drv = steps[-1]
    assert drv["components"] == ["driver", "fabric_manager"]
    assert drv["from"] == {"driver": "535.161.08", "fabric_manager": "535.161.08"}
    assert drv["to"] == {"driver": "550.127.05", "fabric_manager": "550.127.05"}
    assert steps[2]["targets"] == [3] and steps[2]["from"] == ["96.00.89.00.01"]
    assert steps[3]["targets"] == ["mlx5_1"]
    summ = U.summarize(steps)
    assert summ["activation"] == "dc_power_cycle" and summ["est_duration_s"] == 900 + 1200 + 1800 + 900 + 900


def test_at_target_node_has_an_empty_plan():
    assert U.plan_node(AT_TARGET, BASELINE["h100-sxm-8"], "h100-sxm-8") == []
    same = dict(AT_TARGET, driver="550.127.5")  # same version, other spelling
    assert U.plan_node(same, BASELINE["h100-sxm-8"]) == []
    assert U.summarize([]) == {"est_duration_s": 0, "activation": "none", "components": [], "downgrade": False,
                               "verify": []}  # fmt: skip


def test_applying_the_plan_reaches_target():
    cur = outdated()
    target = BASELINE["h100-sxm-8"]
    for step in U.plan_node(cur, target):
        for comp in step["components"]:
            if isinstance(cur.get(comp), list):
                cur[comp] = [target[comp]] * len(cur[comp])
            else:
                cur[comp] = target[comp]
    assert U.plan_node(cur, target) == []


def test_only_the_driver_changes():
    cur = dict(AT_TARGET, driver="550.90.07", fabric_manager="550.90.07")
    steps = U.plan_node(cur, BASELINE["h100-sxm-8"])
    assert [(s["component"], s["components"]) for s in steps] == [("driver", ["driver", "fabric_manager"])]


def test_fm_alone_behind_reinstalls_both():
    cur = dict(AT_TARGET, fabric_manager="550.90.07")
    steps = U.plan_node(cur, BASELINE["h100-sxm-8"])
    assert len(steps) == 1 and steps[0]["to"] == {"driver": "550.127.05", "fabric_manager": "550.127.05"}


def test_unknown_versions_are_verified_not_flashed():
    cur = dict(AT_TARGET, bmc=None, hca_fw=["28.41.1000", None, "28.41.1000", "28.41.1000"])
    steps = U.plan_node(cur, BASELINE["h100-sxm-8"])
    assert [(s["component"], s["action"]) for s in steps] == [("bmc", "verify"), ("hca_fw", "verify")]
    assert steps[1]["targets"] == ["mlx5_1"]
    assert U.unknown_components(steps) == ["bmc", "hca_fw"]
    no_gpus = dict(AT_TARGET, vbios=[], gpu_indexes=[])
    assert [(s["component"], s["action"]) for s in U.plan_node(no_gpus, BASELINE["h100-sxm-8"])] == [
        ("vbios", "verify")
    ]


def test_downgrade_is_flagged():
    cur = dict(AT_TARGET, bios="2.5.0")
    steps = U.plan_node(cur, BASELINE["h100-sxm-8"])
    assert [(s["component"], s["action"], s["downgrade"]) for s in steps] == [("bios", "downgrade", True)]
    assert U.summarize(steps)["downgrade"] is True


def test_components_without_target_are_left_alone():
    assert U.plan_node(outdated(), {"driver": "535.161.08"}) == []
    steps = U.plan_node(outdated(), {"bmc": "1.50.0"})
    assert [s["component"] for s in steps] == ["bmc"]


def test_method_overrides_and_errors():
    steps = U.plan_node(outdated(), BASELINE["h100-sxm-8"], methods={"vbios": {"activation": "ac_power_cycle",
                                                                               "est_duration_s": 3000}})  # fmt: skip
    v = [s for s in steps if s["component"] == "vbios"][0]
    assert (v["activation"], v["est_duration_s"], v["tool"]) == ("ac_power_cycle", 3000, "nvfwupd")
    for bad, key in (
        ({"gpu": {}}, "methods.gpu"),
        ({"vbios": {"activation": "kick"}}, "methods.vbios.activation"),
        ({"vbios": {"est_duration_s": -1}}, "methods.vbios.est_duration_s"),
        ({"vbios": {"est_duration_s": float("nan")}}, "methods.vbios.est_duration_s"),
        ({"vbios": {"color": 1}}, "methods.vbios.color"),
        ({"bmc": {"tool": "curl"}}, "methods.bmc.tool"),
    ):
        with pytest.raises(U.UpgradeError) as ei:
            U.plan_node(outdated(), BASELINE["h100-sxm-8"], methods=bad)
        assert ei.value.key == key


# ---- the plan of gpuops.cluster.upgrade_plan (_planner.plan_hosts) ---------------------------------------------------
def _facts(cur, slurm_state="IDLE"):
    return {
        "gpu": {"driver_version": cur["driver"],
                "gpus": [{"index": i, "vbios_version": v} for i, v in enumerate(cur["vbios"])]},
        "ib": {"hcas": [{"name": n, "fw_version": v} for n, v in zip(cur["hca_names"], cur["hca_fw"])]},
        "bmc": {"redfish": {"systems": [{"bios_version": cur["bios"]}], "firmware": [
            {"id": "BMC", "name": "BMC", "version": cur["bmc"]}]}},
        "node": {"fabric_manager_version": cur["fabric_manager"]},
        "slurm": {"nodes": [{"state": slurm_state, "partitions": ["gpu"]}]},
    }  # fmt: skip


def test_plan_hosts_end_to_end():
    hosts = {}
    for i in range(12):
        cur = outdated() if i % 3 else copy.deepcopy(AT_TARGET)
        hosts["n%02d" % i] = {"node_class": "h100-sxm-8", "rack": "r%d" % (i % 4), "facts": _facts(cur)}
    hosts["n01"]["facts"] = _facts(outdated(), "IDLE+DRAIN")
    hosts["n02"]["facts"]["bmc"] = {}
    hosts["n04"]["node_class"] = "a100"
    hosts["n05"]["facts"] = None
    hosts["n05"].update(facts_error="no facts: not collected", partition="gpu")  # gpuops_partition
    res = _planner.plan_hosts(
        hosts, BASELINE, MATRIX, None, {"max_offline_share": 0.25, "max_per_rack": 1}, None, False
    )
    assert res["problems"] == []
    assert res["skipped"] == ["n00", "n03", "n06", "n09"]
    assert res["blocked"] == [
        {"host": "n02", "reason": "current version unknown for: bmc, bios"},
        {"host": "n04", "reason": "no baseline for node class 'a100' (gpuops_node_class)"},
        {"host": "n05", "reason": "no facts: not collected"},
    ]
    planned = ["n01", "n07", "n08", "n10", "n11"]
    assert sorted(res["ordered_hosts"]) == planned
    assert sum(res["batch_sizes"]) == len(planned) and res["batch_sizes"][0] == 1
    assert res["host_batches"]["n01"] == [b["index"] for b in res["batches"] if "n01" in b["hosts"]][0]
    assert res["stats"]["capacity"] == {"gpu": 12} and res["stats"]["already_offline"] == {"gpu": 1}
    for b in res["batches"]:
        assert b["offline"]["gpu"] <= 3
    with pytest.raises(U.UpgradeError) as ei:
        _planner.plan_hosts(hosts, BASELINE, MATRIX, {"h100-sxm-8": {"bios": {"activation": "x"}}}, {}, None, False)
    assert ei.value.key == "gpuops_upgrade_methods.h100-sxm-8.bios.activation"
    bad = copy.deepcopy(BASELINE)
    bad["h100-sxm-8"]["fabric_manager"] = "550.54.15"
    res = _planner.plan_hosts(hosts, bad, MATRIX, None, {}, None, False)
    assert keys(res["problems"]) == ["h100-sxm-8.fabric_manager"] and "batches" not in res


# ---- fuzz: any input gives problems/plans or UpgradeError, never a traceback -------------------------------------
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 600), st.floats(allow_nan=True), st.text(max_size=12))
_tree = st.recursive(
    _scalar, lambda ch: st.one_of(st.lists(ch, max_size=4), st.dictionaries(st.text(max_size=8), ch, max_size=4)),
    max_leaves=12,
)  # fmt: skip
_comp = st.sampled_from(U.COMPONENTS + ("x",))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    baseline=st.one_of(_tree, st.dictionaries(st.text(max_size=5), st.dictionaries(_comp, _scalar), max_size=3)),
    matrix=st.one_of(_tree, st.fixed_dictionaries({"driver": st.dictionaries(st.text(max_size=5), _tree)})),
    facts=_tree,
)
def test_fuzz_never_raises_unexpectedly(baseline, matrix, facts):
    problems = U.validate_baseline(baseline, matrix)
    assert isinstance(problems, list) and all("message" in p for p in problems)
    cur = U.current_versions(facts)
    target = baseline.get(next(iter(baseline), None)) if isinstance(baseline, dict) and baseline else {}
    if not problems and isinstance(target, dict):
        steps = U.plan_node(cur, target)
        assert isinstance(U.summarize(steps)["est_duration_s"], (int, float))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(current=_tree, target=st.dictionaries(_comp, st.one_of(_scalar, st.sampled_from(["1.0", "550.127.05"]))))
def test_fuzz_plan_node(current, target):
    steps = U.plan_node(current, target)
    order = [U.STEP_ORDER.index(s["component"]) for s in steps]
    assert order == sorted(order)
    assert all(s["activation"] in U.ACTIVATIONS for s in steps)


# ---- the run report (_upgrade_report) --------------------------------------------------------------------------------

REC_OK = {
    "host": "gpu-node-02", "batch": 0, "result": "upgraded", "stage": "resume", "message": "upgraded: driver",
    "duration_s": "61.27", "change_id": "CHG-1",
    "steps": [
        {"component": "vbios", "from": ["96.00.74.00.0D", "96.00.74.00.0D"], "to": "96.00.99.00.01"},
        {"component": "driver", "from": {"driver": "535.161.08", "fabric_manager": "535.161.08"},
         "to": {"driver": "550.54.15", "fabric_manager": "550.54.15"}},
    ],
    "applied": [{"component": "vbios", "seconds": 1.5}, {"component": "driver", "seconds": 3.2}],
}  # fmt: skip
REC_BAD = {
    "host": "gpu-node-01", "batch": 1, "result": "failed", "stage": "apply:hca_fw",
    "message": "non-zero return code (rc 1): -E- Burning FW image failed | x", "duration_s": 20,
    "steps": [{"component": "hca_fw", "from": ["28.39.1002"], "to": "28.41.1000"}], "applied": [],
    "evidence": "/state/upgrades/CHG-1/evidence/gpu-node-01",
    "slurm": {"state": "IDLE+DRAIN", "reason": "gpuops: upgrade CHG-1 failed at apply:hca_fw"},
    "rollback": {"ok": True},
}  # fmt: skip


def test_build_report_lists_every_node_once_with_not_started_and_blocked():
    rep = R.build_report("CHG-1", [REC_OK, REC_BAD, "junk", {"no": "host"}],
                         planned=["gpu-node-02", "gpu-node-01", "gpu-node-03"],
                         blocked=[{"host": "gpu-node-09", "reason": "current version unknown for: bmc"}],
                         deferred=[{"name": "gpu-node-07", "reason": "node is down"}])  # fmt: skip
    by = {n["host"]: n for n in rep["nodes"]}
    assert set(by) == {"gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-09"}
    assert rep["counts"] == {"upgraded": 1, "failed": 1, "not_started": 1, "blocked": 1} and rep["ok"] is False
    assert by["gpu-node-02"]["duration_s"] == 61.3
    assert by["gpu-node-02"]["components"][1] == {
        "component": "driver", "from": {"driver": "535.161.08", "fabric_manager": "535.161.08"},
        "to": {"driver": "550.54.15", "fabric_manager": "550.54.15"}, "applied": True, "seconds": 3.2}  # fmt: skip
    assert by["gpu-node-01"]["components"][0]["applied"] is False
    assert R.build_report("C", [REC_OK])["ok"] is True
    json.loads(R.render_json(rep))


def test_markdown_has_a_row_per_component_and_the_failures():
    md = R.render_markdown(R.build_report("CHG-1", [REC_OK, REC_BAD], planned=["gpu-node-03"]))
    assert md.startswith("# Upgrade run CHG-1\n")
    assert "Result: **INCOMPLETE** - 1 failed, 1 not_started, 1 upgraded" in md
    assert "| gpu-node-02 | 0 | upgraded | vbios | 96.00.74.00.0D | 96.00.99.00.01 | 61.3 |" in md
    assert (
        "|  |  |  | driver | driver 535.161.08, fabric_manager 535.161.08 | driver 550.54.15, fabric_manager 550.54.15 |  |"
        in md
    )
    assert "| gpu-node-03 | - | not_started | - | - | - | - |" in md
    assert "-E- Burning FW image failed \\| x" in md  # pipes escaped in cells
    assert (
        "stage apply:hca_fw" in md
        and "rollback ok" in md
        and "evidence /state/upgrades/CHG-1/evidence/gpu-node-01" in md
    )
    assert "Result: **complete** - no nodes" in R.render_markdown(R.build_report("", []))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.lists(st.dictionaries(st.sampled_from(["host", "result", "steps", "applied", "duration_s", "slurm",
                                                 "rollback", "batch"]),
                                st.one_of(st.none(), st.text(max_size=4), st.integers(), st.lists(st.text(max_size=3))),
                                max_size=8), max_size=5))  # fmt: skip
def test_fuzz_report_never_raises_on_odd_records(records):
    try:
        rep = R.build_report("X", records)
        R.render_markdown(rep)
        R.render_json(rep)
    except ParseError:
        pass
