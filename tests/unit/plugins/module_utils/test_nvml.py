# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVML path, tested without a GPU through tests/unit/fake_pynvml.py (checked against the real pynvml)."""

from __future__ import annotations

import copy
import inspect
import os
import re
import sys
import time

import pynvml
import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import gpu as _gpu, nvml as _nvml
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import nvsmi_xml as _nvsmi_xml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import fake_pynvml  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
A100_XML = os.path.join(FIXTURES, "nvidia-smi-xml", "telegraf-4xa100-sxm4-535.54.03-mig.xml")


@pytest.fixture(autouse=True)
def _fresh_fake():
    fake_pynvml.reset()
    yield
    fake_pynvml.reset()


def _fake_functions():
    return [
        (name, obj)
        for name, obj in vars(fake_pynvml).items()
        if name.startswith("nvml") and inspect.isfunction(obj) and obj.__module__ == fake_pynvml.__name__
    ]


def test_fake_functions_exist_in_real_pynvml_with_same_parameters():
    funcs = _fake_functions()
    assert len(funcs) >= 40
    for name, fn in funcs:
        real = getattr(pynvml, name, None)
        assert real is not None, "%s is not in the installed pynvml" % name
        assert list(inspect.signature(fn).parameters) == list(inspect.signature(real).parameters), name


def test_fake_uses_real_exceptions_and_constants():
    fake_pynvml.STATE["initialized"] = True
    with pytest.raises(pynvml.NVMLError_NotSupported):
        fake_pynvml.nvmlDeviceGetUtilizationRates(fake_pynvml.nvmlDeviceGetHandleByIndex(0))
    assert fake_pynvml.NVMLError is pynvml.NVMLError
    for name in dir(fake_pynvml):
        if name.startswith("NVML_") or name.startswith("nvmlClocks"):
            assert getattr(fake_pynvml, name) == getattr(pynvml, name), name
    lost = copy.deepcopy(fake_pynvml.A100_535)
    lost["handle_error"] = pynvml.NVML_ERROR_GPU_IS_LOST
    fake_pynvml.reset(devices=[lost])
    fake_pynvml.nvmlInit()
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        fake_pynvml.nvmlDeviceGetHandleByIndex(0)
    # Every NVML call our reader makes is offered by the fake (else the fake would hide a typo).
    src = inspect.getsource(_nvml)
    called = set(re.findall(r'"(nvml(?:Device|System)[A-Za-z]+)"', src))
    assert len(called) > 30
    for name in called:
        assert hasattr(pynvml, name), name
        if name != "nvmlDeviceGetCurrentClocksThrottleReasons":  # only a fallback for old bindings
            assert hasattr(fake_pynvml, name), name


def test_query_in_process_builds_the_record():
    res = _nvml.query(fake_pynvml)
    assert res["source"] == "nvml"
    assert res["driver_version"] == "535.54.03"
    assert res["cuda_version"] == "12.2"
    assert res["count"] == 1
    g = res["gpus"][0]
    assert g["bus_id"] == "00000000:01:00.0"
    assert g["name"] == "NVIDIA A100-SXM4-80GB"
    assert g["architecture"] == "Ampere"
    assert g["temperature"]["gpu_c"] == 27
    assert g["temperature"]["memory_c"] == 44
    assert g["power"]["draw_w"] == pytest.approx(67.03)
    assert g["utilization"] == {"gpu_pct": None, "memory_pct": None}
    assert g["mig_mode"] == {"current": True, "pending": True}
    assert g["remapped_rows"]["supported"] is False
    assert g["nvlink"] is None
    assert g["fabric"] is None
    assert fake_pynvml.STATE["initialized"] is False  # nvmlShutdown was called


def _comparable(rec):
    rec = copy.deepcopy(rec)
    rec["ecc"].pop("layout")  # NVML has totals only; nvidia-smi says which counter layout it printed
    rec["ecc"].pop("by_type")  # ... and nvidia-smi's SRAM/DRAM split
    for key in ("processes", "nvlink", "reset_status"):
        rec.pop(key)
    rec["throttle"].pop("raw")
    for k in ("instant_w",):
        rec["power"].pop(k)
    for k in ("tlimit_c", "slowdown_tlimit_c", "shutdown_tlimit_c", "max_operating_tlimit_c"):
        rec["temperature"].pop(k)
    rec["pcie"].pop("gen_max_host")  # not in NVML
    return rec


def test_nvml_and_nvidia_smi_xml_of_the_same_sample_agree():
    with open(A100_XML, encoding="utf-8") as fh:
        xml = _nvsmi_xml.parse(fh.read(), A100_XML)
    nvml = _nvml.collect(timeout=20, pynvml_module=fake_pynvml)
    assert "nvml_failure" not in nvml
    assert nvml["gpus"][0]["readable"] is True
    assert _comparable(nvml["gpus"][0]) == _comparable(xml["gpus"][0])
    assert nvml["driver_version"] == xml["driver_version"]
    assert nvml["cuda_version"] == xml["cuda_version"]


def test_lost_gpu_is_an_unreadable_record():
    lost = copy.deepcopy(fake_pynvml.A100_535)
    lost["handle_error"] = pynvml.NVML_ERROR_GPU_IS_LOST
    fake_pynvml.reset(devices=[fake_pynvml.A100_535, lost])
    res = _nvml.collect(timeout=20, pynvml_module=fake_pynvml)
    assert res["count"] == 2
    assert [g["readable"] for g in res["gpus"]] == [True, False]
    assert "GPU is lost" in res["gpus"][1]["error"] or "Lost" in res["gpus"][1]["error"]
    assert res["errors"][0]["kind"] == "unreadable"


def test_nvlink_fabric_recovery_processes_and_throttle_bits():
    dev = copy.deepcopy(fake_pynvml.A100_535)
    dev["nvlink"] = [
        {"up": True, "errors": {0: 0, 1: 2, 2: 5, 3: 0}},
        {"up": False, "errors": {0: 1, 1: 0, 2: 0, 3: 0}},
    ]
    dev["fabric"] = {"state": 3, "status": 0, "clique_id": 7, "cluster_uuid": "12345678-9abc-def0-1234-56789abcdef0"}
    dev["fields"][pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION] = 4
    dev["clock_event_reasons"] = 0x8 | 0x80
    dev["processes"] = {
        "compute": [{"pid": 11, "usedGpuMemory": 2 * 1024 * 1024 * 1024, "name_": "python"}],
        "graphics": [{"pid": 11, "usedGpuMemory": 2 * 1024 * 1024 * 1024, "name_": "python"}],
    }
    dev["remapped_rows"] = (0, 4, 1, 0)
    dev["histogram"] = {"max": 2560, "high": 0, "partial": 0, "low": 0, "none": 0}
    fake_pynvml.reset(devices=[dev])
    g = _nvml.collect(timeout=20, pynvml_module=fake_pynvml)["gpus"][0]
    assert [lk["state"] for lk in g["nvlink"]["links"]] == ["up", "down"]
    assert g["nvlink"]["links"][0]["errors"] == {"replay": 0, "recovery": 2, "crc_flit": 5, "crc_data": 0}
    assert g["fabric"] == {
        "state": "Completed",
        "status": "Success",
        "clique_id": "7",
        "cluster_uuid": "12345678-9abc-def0-1234-56789abcdef0",
        # the v1 struct this fake offers has no health mask: every health row unknown, never "healthy"
        "health": {
            "degraded_bandwidth": None,
            "route_recovery": None,
            "route_unhealthy": None,
            "access_timeout_recovery": None,
            "summary": None,
            "incorrect_configuration": None,
        },
    }
    assert g["recovery_action"] == "drain_and_reset"
    assert g["throttle"]["active"] == ["hw_slowdown", "hw_power_brake_slowdown"]
    assert g["processes"] == [{"pid": 11, "name": "python", "type": "C+G", "used_mib": 2048}]
    assert g["remapped_rows"]["uncorrectable"] == 4
    assert g["remapped_rows"]["pending"] is True


def test_init_failure_is_reported_not_raised():
    fake_pynvml.reset(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    res = _nvml.collect(timeout=20, pynvml_module=fake_pynvml)
    assert res["nvml_failure"]["timed_out"] is False
    assert "DriverNotLoaded" in res["nvml_failure"]["error"]


def test_blocking_nvml_init_times_out_and_collect_stays_in_budget(monkeypatch, tmp_path):
    fake_pynvml.reset(init_blocks=True)
    smi = os.path.join(FIXTURES, "bin", "nvidia-smi")
    monkeypatch.setenv("FAKE_NVSMI_SLEEP", "30")
    start = time.monotonic()
    res = _gpu.collect(timeout=1.0, use_nvml=True, nvidia_smi=smi, pynvml_module=fake_pynvml)
    elapsed = time.monotonic() - start
    assert elapsed < 3.0
    assert res["gpus"] == []
    assert [e["kind"] for e in res["errors"]] == ["timeout"]
    assert "timed out" in res["errors"][0]["message"]


def test_nvml_unavailable_falls_back_to_nvidia_smi(monkeypatch):
    fake_pynvml.reset(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    monkeypatch.setenv("FAKE_NVSMI_XML", A100_XML)
    res = _gpu.collect(timeout=10, nvidia_smi=os.path.join(FIXTURES, "bin", "nvidia-smi"), pynvml_module=fake_pynvml)
    assert res["source"] == "nvidia-smi-xml"
    assert res["gpus"][0]["serial"] == "1650522003820"
    assert res["errors"] == []


def test_a_value_nvml_should_not_return_costs_that_gpu_only():
    """Issue 12 item 6: one GPU's unexpected NVML value (``int('²')``) used to fail the whole query."""
    odd = copy.deepcopy(fake_pynvml.A100_535)
    odd["persistence"] = "²"
    fake_pynvml.reset(devices=[fake_pynvml.A100_535, odd])
    res = _nvml.query(fake_pynvml)
    assert [g["readable"] for g in res["gpus"]] == [True, False]
    assert res["gpus"][0]["name"] == "NVIDIA A100-SXM4-80GB"
    assert [(e["kind"], e["source"]) for e in res["errors"]] == [("parse", "nvml")]
    fake_pynvml.reset()
