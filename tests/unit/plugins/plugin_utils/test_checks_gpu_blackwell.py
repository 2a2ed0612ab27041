# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 38's GPU signals, each judged: SRAM vs DRAM limits, channel/TPC repair, DCGM diag per-error severity, HBM
against the GPU's own limit, cumulative throttle time between readings, NVLink5 counters and BER, fabric health,
C2C. Expected values come from gpu-knowledge-2026.md (sections 1, 3, 5, 6), the policy defaults' documented
numbers (AzNHC SRAM 10,000 / DRAM 20,000,000) and the dcgmi-diag samples in ../shared/reference/samples."""

from __future__ import annotations

import os

import pytest
from checks_helpers import facts, gpu, only, run

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import dcgm as D

SAMPLES = os.path.normpath(os.path.join(os.path.dirname(__file__), *[".."] * 4, "..", "shared", "reference", "samples"))
T1, T2 = "2026-12-02T10:00:00Z", "2026-12-02T10:10:00Z"


def _two(g1, g2):
    """Findings of the second of two readings ten minutes apart."""
    _unused, st = run(facts(gpus=[g1], collected_at=T1), now=T1)
    return run(facts(gpus=[g2], collected_at=T2), state=st, now=T2)[0]


# ------------------------------------------------------------------------------------------------ ECC, repair


def _split(sram, dram):
    return {"volatile": {"sram_corrected": sram, "dram_corrected": dram, "sram_uncorrected": 0, "dram_uncorrected": 0}}


def test_sram_and_dram_correctable_each_against_its_own_limit():
    at_sram = gpu(0, ecc={"by_type": _split(10000, 0), "volatile": {"corrected": 10000}})
    f = only(run(facts(gpus=[at_sram]))[0], "gpu.ecc")
    assert [(x["code"], x["severity"], x["action"]) for x in f] == [("volatile_corrected_sram", "P2", "monitor")]
    # the same 10,000 as DRAM errors is far under DRAM's 20,000,000 (row remapping handles them)
    dram = gpu(0, ecc={"by_type": _split(0, 10000), "volatile": {"corrected": 10000}})
    assert not only(run(facts(gpus=[dram]))[0], "gpu.ecc")
    # a driver that reports totals only: the total against the SRAM limit (the stricter)
    total = gpu(0, ecc={"by_type": {"volatile": None}, "volatile": {"corrected": 10000}})
    assert only(run(facts(gpus=[total]))[0], "gpu.ecc")[0]["code"] == "volatile_corrected"


@pytest.mark.parametrize(
    "flags, want",
    [
        ({"tpc_repair_pending": True}, [("repair_pending", "P2", "reset_gpu")]),
        ({"channel_repair_pending": True, "tpc_repair_pending": True}, [("repair_pending", "P2", "reset_gpu")]),
        ({"channel_repair_pending": None, "tpc_repair_pending": None}, []),  # N/A: unknown, no finding
        ({"channel_repair_pending": False}, []),
    ],
)
def test_channel_and_tpc_repair_pending(flags, want):
    f = only(run(facts(gpus=[gpu(0, ecc=flags)]))[0], "gpu.ecc")
    assert [(x["code"], x["severity"], x["action"]) for x in f] == want


# ------------------------------------------------------------------------------------------------ DCGM diag


def _diag_sample(name):
    with open(os.path.join(SAMPLES, "dcgmi-diag", name + ".txt"), encoding="utf-8") as fh:
        return D.from_text(fh.read(), "capture:dcgmi-diag.txt", 2)


def _diag(dcgm):
    return [(x["component"], x["severity"], x["action"]) for x in only(run(facts(dcgm=dcgm))[0], "gpu.diag")]


def test_diag_internal_error_is_no_gpu_verdict():
    """NVIDIA/DCGM#254: 'There was an internal error during the test' (a missing helper binary): DCGM_FR_INTERNAL,
    the diagnostic broke, not the GPU; formerly P1 isolate of the node."""
    d = _diag_sample("dcgm-issue254-v100-dcgm441-pcie-fail")
    assert d["tests"][0]["issues"][0]["code"] == "INTERNAL"
    assert _diag(d) == [("node", "P2", "monitor")]


def test_diag_pending_row_remap_is_reset_class():
    """'GPU 3 has uncorrectable memory errors and row remappings are pending': DCGM_FR_PENDING_ROW_REMAP, RESET."""
    d = _diag_sample("ml-engineering-deployment-error-row-remap-pending")
    assert _diag(d) == [("gpu3", "P1", "reset_gpu")]


def _json(severity=None, message="Detected 1 faulty memory elements on GPU 0", status="Fail"):
    warning = {"warning": message, "error_id": 83, "error_category": 10}
    if severity is not None:
        warning["error_severity"] = severity
    return {
        "DCGM GPU Diagnostic": {
            "test_categories": [
                {
                    "category": "Hardware",
                    "tests": [
                        {"name": "memory", "results": [{"gpu_id": "0", "status": status, "warnings": [warning]}]}
                    ],
                }
            ]
        }
    }


@pytest.mark.parametrize(
    "severity, message, want",
    [
        (2, "Detected 1 faulty memory elements on GPU 0", ("gpu0", "P1", "isolate")),  # ISOLATE
        (5, "Persistence mode for GPU 0 is disabled.", ("gpu0", "P2", "tune")),  # CONFIG: no isolation
        ("DCGM_ERROR_CONFIG", "Persistence mode for GPU 0 is disabled.", ("gpu0", "P2", "tune")),
        (6, "GPU 0 had memory errors and row remappings are pending", ("gpu0", "P1", "reset_gpu")),  # RESET
        (4, "Detected XID 79 for GPU 0", ("gpu0", "P2", "monitor")),  # TRIAGE
        (1, "There were thermal violations totaling 3.0 seconds for GPU 0", ("gpu0", "P3", "monitor")),  # MONITOR
        # no severity in the JSON: the message's DCGM_FR words decide; unknown words keep the fail's isolate
        (None, "Persistence mode for GPU 0 is disabled.", ("gpu0", "P2", "tune")),
        (None, "something DCGM never printed", ("gpu0", "P1", "isolate")),
    ],
)
def test_diag_json_per_error_severity(severity, message, want):
    d = D.parse_diag_json(_json(severity, message))
    assert _diag(d) == [want]


def test_diag_warn_never_p1_and_a_text_config_error_does_not_isolate():
    d = D.parse_diag_json(_json(2, status="Warn"))
    assert _diag(d) == [("gpu0", "P2", "isolate")]
    text = "\n".join(
        [
            "+---------------------------+------------------------------------------------+",
            "| Diagnostic                | Result                                         |",
            "+===========================+================================================+",
            "|-----  Deployment  --------+------------------------------------------------|",
            "| Persistence Mode          | Fail                                           |",
            "| Error                     | Persistence mode for GPU 0 is disabled.        |",
            "+---------------------------+------------------------------------------------+",
        ]
    )
    assert _diag(D.from_text(text, "dcgmi", 1)) == [("gpu0", "P2", "tune")]


# ------------------------------------------------------------------------------------------------ HBM


@pytest.mark.parametrize(
    "temperature, want",
    [
        ({"memory_c": 88, "memory_max_operating_c": 85}, [("memory", "P2", "tune")]),  # its own 85 C limit
        ({"memory_c": 96, "memory_max_operating_c": 85}, [("memory", "P1", "emergency_shutdown")]),  # 85 + (105-95)
        ({"memory_c": 88, "memory_max_operating_c": None}, []),  # no own limit: the fixed 95 C
        ({"memory_c": 96, "memory_max_operating_c": None}, [("memory", "P2", "tune")]),
        ({"memory_c": 88, "memory_max_operating_c": 0}, []),  # a T.Limit-style 0: not a limit in C, fixed 95 C
    ],
)
def test_hbm_against_the_gpus_own_limit(temperature, want):
    g = gpu(0, temperature=temperature)
    f = only(run(facts(gpus=[g]))[0], "gpu.temperature", code="memory")
    assert [(x["code"], x["severity"], x["action"]) for x in f] == want


# ------------------------------------------------------------------------------------------------ throttle time


def _counters(**us):
    base = {"sw_power_cap": 0, "sync_boost": 0, "sw_thermal_slowdown": 0, "hw_thermal_slowdown": 0}
    base["hw_power_brake_slowdown"] = 0
    base.update(us)
    return {"active": [], "counters_us": base}


@pytest.mark.parametrize(
    "after, want",
    [
        ({"hw_power_brake_slowdown": 2_000_000}, [("hw_power_brake_slowdown_time", "P2", "monitor")]),
        ({"hw_thermal_slowdown": 1}, [("hw_thermal_slowdown_time", "P2", "tune")]),
        ({"sw_thermal_slowdown": 1_000_000}, []),  # 1 s of 600 s: under the 1 % share
        ({"sw_thermal_slowdown": 30_000_000}, [("sw_thermal_slowdown_time", "P3", "tune")]),
        ({"sw_power_cap": 500_000_000}, []),  # power capping under load is normal
    ],
)
def test_cumulative_throttle_time_between_two_readings(after, want):
    fs = only(_two(gpu(0, throttle=_counters()), gpu(0, throttle=_counters(**after))), "gpu.throttle")
    assert [(x["code"], x["severity"], x["action"]) for x in fs] == want


def test_throttle_counter_restart_and_missing_counters_are_no_finding():
    high = gpu(0, throttle=_counters(hw_power_brake_slowdown=9_000_000))
    assert not only(_two(high, gpu(0, throttle=_counters())), "gpu.throttle")  # driver reload: new baseline
    none = gpu(0, throttle={"active": [], "counters_us": None})
    assert not only(_two(none, gpu(0, throttle=_counters(hw_power_brake_slowdown=5))), "gpu.throttle")


# ------------------------------------------------------------------------------------------------ NVLink5


def _links(**link3):
    links = []
    for n in range(18):
        e = {"symbol_errors": 0, "recovery_failed": 0, "recovery_successful": 0, "effective_ber": 0.0}
        if n == 3:
            e.update(link3)
        links.append({"link": n, "state": "up", "speed_gbps": 53.125, "errors": e})
    return {"links": links}


@pytest.mark.parametrize(
    "after, want",
    [
        ({"symbol_errors": 5}, [("gpu0/nvlink3", "nvlink5_symbol_errors", "P2")]),
        ({"symbol_errors": 5, "recovery_failed": 1}, [("gpu0/nvlink3", "nvlink5_recovery_failed", "P1")]),
        ({"recovery_successful": 2}, [("gpu0/nvlink3", "nvlink5_recovery_successful", "P2")]),
        ({"effective_ber": 1e-12}, []),  # at DCGM's limit, not worse
        ({"effective_ber": 2e-12}, [("gpu0/nvlink3", "effective_ber", "P2")]),
    ],
)
def test_nvlink5_counters_and_ber(after, want):
    fs = only(_two(gpu(0, nvlink=_links()), gpu(0, nvlink=_links(**after))), "gpu.nvlink")
    assert [(x["component"], x["code"], x["severity"]) for x in fs] == want


def test_nvlink5_counter_reset_is_a_new_baseline():
    fs = _two(gpu(0, nvlink=_links(symbol_errors=50)), gpu(0, nvlink=_links(symbol_errors=3)))
    assert not only(fs, "gpu.nvlink")


# ------------------------------------------------------------------------------------------------ fabric, C2C


def _fabric(**health):
    h = dict.fromkeys(
        ("degraded_bandwidth", "route_recovery", "route_unhealthy", "access_timeout_recovery", "summary"), None
    )
    h["incorrect_configuration"] = None
    h.update(health)
    return {"state": "Completed", "status": "Success", "health": h}


@pytest.mark.parametrize(
    "health, want",
    [
        ({}, []),  # N/A everywhere (H100 590 text): unknown, nothing
        ({"degraded_bandwidth": False, "summary": "healthy", "incorrect_configuration": "none"}, []),
        ({"degraded_bandwidth": True}, [("P2", "monitor")]),
        ({"route_recovery": True, "access_timeout_recovery": True}, [("P2", "monitor")]),
        ({"route_unhealthy": True, "degraded_bandwidth": True}, [("P1", "isolate")]),
        ({"incorrect_configuration": "insufficient_nvlinks"}, [("P1", "isolate")]),
        ({"summary": "limited_capacity"}, [("P2", "monitor")]),
        ({"summary": "unhealthy"}, [("P1", "isolate")]),
    ],
)
def test_fabric_health(health, want):
    fs = only(run(facts(gpus=[gpu(0, fabric=_fabric(**health))]))[0], "gpu.fabric", code="health")
    assert [(x["severity"], x["action"]) for x in fs] == want


def test_c2c_link_down_and_errors():
    down = gpu(0, c2c={"link_count": 10, "active": False, "errors": {"crc": 0, "replay": 0, "replay_b2b": 0}})
    fs = only(run(facts(gpus=[down]))[0], "gpu.nvlink", "gpu0/c2c")
    assert [(x["code"], x["severity"], x["action"]) for x in fs] == [("c2c_down", "P1", "reset_gpu")]
    ok = gpu(0, c2c={"link_count": 10, "active": True, "errors": {"crc": 0, "replay": 7, "replay_b2b": 0}})
    worse = gpu(0, c2c={"link_count": 10, "active": True, "errors": {"crc": 0, "replay": 9, "replay_b2b": 0}})
    assert [x["evidence"]["deltas"] for x in only(_two(ok, worse), "gpu.nvlink", "gpu0/c2c")] == [{"replay": 2}]
    unknown = gpu(0, c2c={"link_count": 10, "active": None, "errors": {"crc": None}})
    assert not only(_two(unknown, unknown), "gpu.nvlink", "gpu0/c2c")
