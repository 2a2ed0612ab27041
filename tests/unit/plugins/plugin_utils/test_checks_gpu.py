# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU checks (_checks/gpu.py): inventory, ECC, row remap, retired pages, recovery, temperature, throttle, driver, diag."""

from __future__ import annotations


import pytest

from checks_helpers import PROFILE, facts, gpu, only, run, xid


# ------------------------------------------------------------------------------- gpu.missing


def test_gpu_missing_needs_a_profile_for_counts_but_not_for_unreadable():
    seven = facts(gpus=[gpu(i) for i in range(7)])
    assert run(seven)[0] == []  # unknown hardware: no "missing" alarm
    m = only(run(seven, PROFILE)[0], "gpu.missing")
    assert m[0]["severity"] == "P1" and m[0]["code"] == "count" and m[0]["evidence"] == {"count": 7, "expected": 8}
    lost = facts(gpus=[gpu(0, readable=False, error="GPU is lost")] + [gpu(i) for i in range(1, 8)])
    f = only(run(lost)[0], "gpu.missing", "gpu0", "unreadable")[0]
    assert f["severity"] == "P1" and f["action"] == "reboot"


def test_gpu_model_mismatch_is_drift():
    fs = run(facts(gpus=[gpu(0, name="NVIDIA A100-SXM4-80GB")] + [gpu(i) for i in range(1, 8)]), PROFILE)[0]
    assert only(fs, "gpu.drift", "gpu0", "model")[0]["severity"] == "P3"


# ------------------------------------------------------------------------------- ECC, remap, pages, recovery


def test_aggregate_ecc_alone_is_at_most_p3_volatile_is_an_alarm():
    agg = [gpu(0, ecc={"aggregate": {"corrected": 10**9, "uncorrected": 7}})] + [gpu(i) for i in range(1, 8)]
    fs, _unused = run(facts(gpus=agg))
    assert [f["severity"] for f in only(fs, "gpu.ecc")] == ["P3"]
    vol = [gpu(0, ecc={"volatile": {"uncorrected": 2}})] + [gpu(i) for i in range(1, 8)]
    f = only(run(facts(gpus=vol))[0], "gpu.ecc", "gpu0", "volatile_uncorrected")[0]
    assert (f["severity"], f["action"]) == ("P1", "reset_gpu")
    cor = [gpu(0, ecc={"volatile": {"corrected": 20000}})] + [gpu(i) for i in range(1, 8)]
    assert only(run(facts(gpus=cor))[0], "gpu.ecc", "gpu0", "volatile_corrected")[0]["severity"] == "P2"


def test_row_remap_pending_is_p2_reset_and_p1_with_uncorrectable_xid():
    g = [gpu(0, remapped_rows={"pending": True, "uncorrectable": 4})] + [gpu(i) for i in range(1, 8)]
    f = only(run(facts(gpus=g))[0], "gpu.row_remap", "gpu0", "pending")[0]
    assert (f["severity"], f["action"]) == ("P2", "reset_gpu")
    f = only(run(facts(gpus=g, events=[xid(48)]))[0], "gpu.row_remap", "gpu0", "pending")[0]
    assert f["severity"] == "P1" and f["evidence"]["xids"] == [48]
    # an uncorrectable Xid on ANOTHER GPU does not make it P1
    f = only(run(facts(gpus=g, events=[xid(48, index=1)]))[0], "gpu.row_remap", "gpu0", "pending")[0]
    assert f["severity"] == "P2"


def test_row_remap_rma_limit_and_histogram():
    g = [gpu(0, remapped_rows={"uncorrectable": 512})] + [gpu(i) for i in range(1, 8)]
    f = only(run(facts(gpus=g))[0], "gpu.row_remap", "gpu0", "rma_limit")[0]
    assert (f["severity"], f["action"]) == ("P1", "replace")
    h = {"max": 0, "high": 0, "partial": 100, "low": 2000, "none": 460}
    g = [gpu(0, remapped_rows={"histogram": h})] + [gpu(i) for i in range(1, 8)]
    f = only(run(facts(gpus=g))[0], "gpu.row_remap", "gpu0", "histogram_exhausted")[0]
    assert (f["severity"], f["action"]) == ("P3", "replace")
    g = [gpu(0, remapped_rows={"supported": False, "failure": True})] + [gpu(i) for i in range(1, 8)]
    assert not only(run(facts(gpus=g))[0], "gpu.row_remap")


def test_retired_pages_only_where_supported():
    na = [gpu(0, retired_pages={"supported": False, "sbe": None, "dbe": None, "pending": None})]
    assert not only(run(facts(gpus=na))[0], "gpu.retired_pages")
    old = [gpu(0, retired_pages={"supported": True, "sbe": 40, "dbe": 23, "pending": True})]
    fs = run(facts(gpus=old))[0]
    assert only(fs, "gpu.retired_pages", "gpu0", "max")[0]["action"] == "replace"
    assert only(fs, "gpu.retired_pages", "gpu0", "pending")[0]["severity"] == "P2"


@pytest.mark.parametrize(
    "ra, sev, action",
    [
        ("node_reboot", "P1", "reboot"),
        ("gpu_reset", "P1", "reset_gpu"),
        # NVIDIA (memory error management, issue 38): DRAIN_P2P = quiesce P2P and query again, not a GPU reset
        ("drain_p2p", "P2", "drain_p2p"),
        ("recover_imex_domain", "P1", "recover_imex_domain"),
        ("bus_reset", "P1", "reboot"),
    ],
)
def test_recovery_action(ra, sev, action):
    f = only(run(facts(gpus=[gpu(0, recovery_action=ra)]))[0], "gpu.recovery_action")[0]
    assert (f["severity"], f["action"], f["code"]) == (sev, action, ra)


# ------------------------------------------------------------------------------- throttle, temperature, pcie


def test_sw_power_cap_at_load_is_not_an_alarm():
    busy = [gpu(i, throttle={"active": ["sw_power_cap"]}, utilization={"gpu_pct": 100}) for i in range(8)]
    assert run(facts(gpus=busy), PROFILE)[0] == []


def test_hw_throttle_per_gpu_also_when_on_every_gpu():
    one = [gpu(0, throttle={"active": ["hw_thermal_slowdown"]})] + [gpu(i) for i in range(1, 8)]
    f = only(run(facts(gpus=one))[0], "gpu.throttle")
    assert [(x["component"], x["severity"]) for x in f] == [("gpu0", "P2")]
    brake = [gpu(i, throttle={"active": ["hw_power_brake_slowdown"]}) for i in range(8)]
    f = only(run(facts(gpus=brake))[0], "gpu.throttle")
    assert [(x["component"], x["code"]) for x in f] == [("gpu%d" % i, "hw_power_brake_slowdown") for i in range(8)]
    assert all(x["evidence"]["on_every_gpu"] for x in f) and "external signal" in f[0]["message"]


def test_power_cap_below_default_is_p3_tune():
    g = [gpu(0, power={"enforced_limit_w": 400.0})]
    f = only(run(facts(gpus=g))[0], "gpu.throttle", "gpu0", "power_cap")[0]
    assert (f["severity"], f["action"]) == ("P3", "tune")


@pytest.mark.parametrize(
    "temp, sev, action",
    [
        ({"gpu_c": 84}, "P2", "tune"),
        ({"gpu_c": 91}, "P1", "emergency_shutdown"),
        ({"gpu_c": 83}, None, None),
        ({"memory_c": 96}, "P2", "tune"),
        ({"memory_c": 106}, "P1", "emergency_shutdown"),
        ({"gpu_c": 86, "slowdown_c": None, "shutdown_c": None}, "P2", "tune"),
    ],
)
def test_temperature(temp, sev, action):
    fs = only(run(facts(gpus=[gpu(0, temperature=temp)]))[0], "gpu.temperature")
    if sev is None:
        assert fs == []
    else:
        assert (fs[0]["severity"], fs[0]["action"]) == (sev, action)


def test_driver_vs_profile():
    f = facts(
        gpu={"driver_version": "550.54.15"},
        node={"fabric_manager_version": "550.54.15", "services": {"nvidia-fabricmanager": {"version": None}}},
    )
    fs = run(f, PROFILE)[0]
    assert only(fs, "gpu.driver")[0]["severity"] == "P3"
    assert not only(fs, "node.fabric_manager")


def test_dcgm_diag():
    d = {
        "level": 3,
        "overall": "fail",
        "gpus": {"0": "pass", "3": "fail", "4": "warn"},
        "tests": [{"name": "Memory Bandwidth", "gpus": {"3": "fail", "4": "warn"}}],
    }
    fs = run(facts(dcgm=d))[0]
    f = only(fs, "gpu.diag", "gpu3", "fail")[0]
    assert f["severity"] == "P1" and f["evidence"]["tests"] == ["Memory Bandwidth:fail"]
    assert only(fs, "gpu.diag", "gpu4", "warn")[0]["severity"] == "P2"
    assert not only(fs, "gpu.diag", "gpu0")


def test_contained_ecc_is_p2_uncontained_or_unexplained_is_p1():
    g = [gpu(0, ecc={"volatile": {"uncorrected": 1}})] + [gpu(i) for i in range(1, 8)]
    f = only(run(facts(gpus=g, events=[xid(94, pid=1, process="python3")]))[0], "gpu.ecc", "gpu0")[0]
    assert (f["severity"], f["action"]) == ("P2", "monitor") and "contained" in f["rule"]
    f = only(run(facts(gpus=g, events=[xid(94), xid(95)]))[0], "gpu.ecc", "gpu0")[0]
    assert f["severity"] == "P1"
    f = only(run(facts(gpus=g))[0], "gpu.ecc", "gpu0")[0]
    assert (f["severity"], f["action"]) == ("P1", "reset_gpu")


def test_reset_status_of_v12_xml_stands_in_for_the_recovery_action():
    g = [gpu(0, recovery_action=None, reset_status={"reset_required": True, "drain_and_reset_recommended": False})]
    f = only(run(facts(gpus=g))[0], "gpu.recovery_action", "gpu0")[0]
    assert (f["code"], f["severity"], f["action"]) == ("gpu_reset", "P1", "reset_gpu")
    g = [gpu(0, recovery_action=None, reset_status={"drain_and_reset_recommended": True})]
    assert only(run(facts(gpus=g))[0], "gpu.recovery_action")[0]["code"] == "drain_and_reset"
    # the reset a pending row remap needs is reported by gpu.row_remap (P2), not as a P1 recovery action
    g = [gpu(0, recovery_action=None, reset_status={"reset_required": True}, remapped_rows={"pending": True})]
    fs = run(facts(gpus=g))[0]
    assert not only(fs, "gpu.recovery_action") and only(fs, "gpu.row_remap", "gpu0", "pending")[0]["severity"] == "P2"


def test_gpu_count_is_skipped_when_the_listing_is_incomplete():
    f = facts(gpus=[gpu(0, readable=False, error="GPU is lost")])
    f["gpu"]["errors"] = [
        {"domain": "gpu", "kind": "tool_error", "message": "nvidia-smi -q -x: exit 15"},
        {"domain": "gpu", "kind": "unreadable", "message": "GPU 0 lost"},
    ]
    fs = run(f, PROFILE)[0]
    assert not only(fs, "gpu.missing", "node", "count")
    assert only(fs, "gpu.missing", "gpu0", "unreadable")
    assert not only(fs, "collector.error", "collector:gpu", "unreadable")  # said by gpu.missing already
    assert only(fs, "collector.error", "collector:gpu", "tool_error")
