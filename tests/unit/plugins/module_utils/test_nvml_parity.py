# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Path parity (issue 38): one GB200 GPU state read through NVML and through nvidia-smi gives the same findings.

NVML path: the real pynvml over a fake libnvidia-ml at the ctypes boundary (tests/unit/fake_nvml_lib.py), fed the
state below, written by hand from the reference (gpu-knowledge-2026.md sections 1, 3.1-3.3, 6). nvidia-smi paths:
the same state written by hand as ``nvidia-smi -q -x`` and ``nvidia-smi -q`` plus ``nvidia-smi nvlink -s/-e``
(tests/fixtures/gpu-parity/, SOURCE.txt). Two readings ten minutes apart, through the whole health policy.
The expected findings are listed here from the state and the policy's documented rules, not computed by the code.
"""

from __future__ import annotations

import copy
import os
import shutil
import sys

import pytest

pynvml = pytest.importorskip("pynvml")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "plugin_utils"))

import fake_nvml_lib  # noqa: E402
from checks_helpers import facts, run  # noqa: E402

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import gpu as _gpu, nvml as _nvml  # noqa: E402

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "gpu-parity")
SAMPLES = os.path.normpath(os.path.join(os.path.dirname(__file__), *[".."] * 4, "..", "shared", "reference", "samples"))
T1, T2 = "2026-12-02T10:00:00Z", "2026-12-02T10:10:00Z"

CORR, UNC = pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
VOL, AGG = pynvml.NVML_VOLATILE_ECC, pynvml.NVML_AGGREGATE_ECC
DRAM, SRAM = 2, 7  # NVML_MEMORY_LOCATION_DRAM / _SRAM
ULL, UINT = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
BER_ZERO = (15 << 8) | 255  # mantissa 15, exponent 255: NVIDIA's "15E-255", read as zero
BER_3E_11 = (3 << 8) | 11  # 3 x 10^-11, worse than DCGM's 1e-12
#: healthMask, by the 2-bit fields of 3.3 (1 TRUE, 2 FALSE): bandwidth degraded TRUE (bits 0-1) = 1, route recovery
#: FALSE (2-3) = 2 << 2 = 8, route unhealthy TRUE (4-5) = 1 << 4 = 16, access timeout FALSE (6-7) = 2 << 6 = 128,
#: incorrect configuration NONE (8-11) = 1 << 8 = 256
HEALTH_MASK = 1 + 8 + 16 + 128 + 256


def _gb200(after: bool) -> dict:
    """The GPU of tests/fixtures/gpu-parity/SOURCE.txt as NVML reports it (units: ns for the clock counters)."""
    fields = {(82, 0): (UINT, 92), (pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, 0): (UINT, 0)}
    for fid in (74, 76, 269, 270):
        fields[(fid, 0)] = (ULL, 0)
    fields[(271, 0)] = (ULL, 30 * 10**9 if after else 0)  # HW power brake: 30 s between the readings
    for link in range(18):
        for fid in (206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 219, 221):
            fields[(fid, link)] = (ULL, 0)
        fields[(220, link)] = (ULL, BER_ZERO)
        fields[(222, link)] = (ULL, BER_ZERO)
    if after:
        fields[(214, 3)] = (ULL, 1)  # recovery failed: the link was declared down
        fields[(215, 3)] = (ULL, 1)
        fields[(221, 3)] = (ULL, 40)  # symbol errors
        fields[(220, 3)] = (ULL, BER_3E_11)
    # C2C: 10 links, active; CRC errors 0 -> 4 (nvidia-smi -q has no C2C counters: NVML only)
    fields.update({(170, 0): (UINT, 10), (171, 0): (UINT, 1), (232, 0): (ULL, 0), (233, 0): (ULL, 0)})
    fields[(231, 0)] = (ULL, 4 if after else 0)
    ecc_location = {}
    for scope in (VOL, AGG):
        ecc_location.update(
            {(CORR, scope, SRAM): 12000, (UNC, scope, SRAM): 0, (CORR, scope, DRAM): 5, (UNC, scope, DRAM): 2}
        )
    return {
        "name": "NVIDIA GB200",
        "serial": "1654124012345",
        "uuid": "GPU-5b1c9a3e-7d2f-4e61-9a0b-3c4d5e6f7a8b",
        "architecture": 10,
        "bus_id": "00000008:01:00.0",
        "temperature": {"gpu": 60, "thresholds": {0: 95, 1: 92, 2: 90, 3: 90}},
        "fields": fields,
        "ecc_total": {(CORR, VOL): 12005, (UNC, VOL): 2, (CORR, AGG): 12005, (UNC, AGG): 2},
        "ecc_location": ecc_location,
        "sram_status": {
            "aggregateUncParity": 0,
            "aggregateUncSecDed": 0,
            "aggregateCor": 12000,
            "volatileUncParity": 0,
            "volatileUncSecDed": 0,
            "volatileCor": 12000,
            "bThresholdExceeded": 1,
        },
        "repair": (1, 0),  # channel repair pending, TPC not
        "unrepairable": 0,
        "remapped_rows": (0, 2, 1, 0),  # corr, unc, pending, failure
        "histogram": {"max": 3070, "high": 2, "partial": 0, "low": 0, "none": 0},
        "clocks_event_reasons": 0,
        "nvlink_up": [True] * 18,
        "fabric": {
            "state": 3,
            "status": 0,
            "clique_id": 1,
            "cluster_uuid": "2f1c7e5a-90b3-4d8e-a6f1-0c2b3d4e5f60",
            "health_mask": HEALTH_MASK,
            "health_summary": 2,  # NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY
        },
    }


#: The findings the state must give on every path (check, component, code, severity, action), from the policy's
#: documented rules: 2 uncorrectable with no Xid: P1 reset_gpu (the correctable counts are judged only without an
#: uncorrectable one: gpu_ecc.check_ecc; the SRAM/DRAM limits are tested in test_checks_gpu_blackwell); lifetime: P3;
#: SRAM threshold exceeded: P1 replace; channel
#: repair pending: P2 reset_gpu; remap pending without an uncorrectable Xid: P2 reset_gpu; HBM 92 C at its own
#: 90 C max operating: P2 tune; fabric health (route unhealthy): P1 isolate; 30 s of HW power brake in 600 s:
#: P2 monitor; NVLink5 link 3: a failed recovery (P1 reset_gpu) and an effective BER of 3e-11 > 1e-12 (P2).
EXPECTED = sorted(
    [
        ("gpu.ecc", "gpu0", "volatile_uncorrected", "P1", "reset_gpu"),
        ("gpu.ecc", "gpu0", "aggregate", "P3", "monitor"),
        ("gpu.ecc", "gpu0", "sram_threshold", "P1", "replace"),
        ("gpu.ecc", "gpu0", "repair_pending", "P2", "reset_gpu"),
        ("gpu.row_remap", "gpu0", "pending", "P2", "reset_gpu"),
        ("gpu.temperature", "gpu0", "memory", "P2", "tune"),
        ("gpu.fabric", "gpu0", "health", "P1", "isolate"),
        ("gpu.throttle", "gpu0", "hw_power_brake_slowdown_time", "P2", "monitor"),
        ("gpu.nvlink", "gpu0/nvlink3", "nvlink5_recovery_failed", "P1", "reset_gpu"),
        ("gpu.nvlink", "gpu0/nvlink3", "effective_ber", "P2", "monitor"),
    ]
)


def _findings(domains, c2c=False):
    """Run the policy over two readings of the gpu domain; the GPU findings of the second (C2C's apart: only NVML
    reads C2C, see test_c2c_is_read_by_nvml_only_and_judged)."""
    _unused, st = run(dict(facts(), gpu=domains[0], collected_at=T1), now=T1)
    fs, _unused = run(dict(facts(), gpu=domains[1], collected_at=T2), state=st, now=T2)
    return sorted(
        (f["check"], f["component"], f["code"], f["severity"], f["action"])
        for f in fs
        if f["check"].startswith("gpu.") and f["component"].endswith("/c2c") == c2c
    )


def _nvml_domain(monkeypatch, after):
    fake_nvml_lib.install(monkeypatch, [_gb200(after)])
    return _nvml.query(pynvml)


def _capture_domain(tmp_path, after, smi_file, name):
    d = tmp_path / ("after" if after else "before")
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(os.path.join(FIX, smi_file % ("after" if after else "before")), str(d / name))
    shutil.copy(os.path.join(FIX, "nvlink-s.txt"), str(d / _gpu.NVLINK_S_FILE))
    shutil.copy(os.path.join(FIX, "nvlink-e-%s.txt" % ("after" if after else "before")), str(d / _gpu.NVLINK_E_FILE))
    return _gpu.collect_capture(str(d))


@pytest.fixture(name="paths")
def fixture_paths(monkeypatch, tmp_path):
    nvml = [_nvml_domain(monkeypatch, after) for after in (False, True)]
    xml = [_capture_domain(tmp_path / "x", a, "gb200-%s.xml", _gpu.XML_FILE) for a in (False, True)]
    text = [_capture_domain(tmp_path / "t", a, "gb200-%s.txt", _gpu.TEXT_FILE) for a in (False, True)]
    return {"nvml": nvml, "xml": xml, "text": text}


def test_every_path_reads_the_state_without_errors(paths):
    for name, domains in paths.items():
        for dom in domains:
            assert dom["errors"] == [], name
            assert len(dom["gpus"]) == 1 and dom["gpus"][0]["readable"], name


@pytest.mark.parametrize("path", ["nvml", "xml", "text"])
def test_each_path_gives_the_expected_findings(paths, path):
    assert _findings(paths[path]) == EXPECTED


def test_the_records_agree_on_memory_remap_repair_fabric_and_nvlink5(paths):
    """The parts of the record the findings come from, equal on the three paths (the C2C block is NVML's only)."""

    def part(dom):
        g = copy.deepcopy(dom["gpus"][0])
        ecc = g["ecc"]
        return {
            "by_type": ecc["by_type"],
            "volatile": ecc["volatile"],
            "aggregate": ecc["aggregate"],
            "flags": [ecc[k] for k in ("sram_threshold_exceeded", "channel_repair_pending", "tpc_repair_pending")],
            "unrepairable": ecc["unrepairable_memory"],
            "remap": {k: g["remapped_rows"][k] for k in ("correctable", "uncorrectable", "pending", "failure")},
            "fabric": {k: g["fabric"][k] for k in ("state", "status", "clique_id", "cluster_uuid", "health")},
            "counters": g["throttle"]["counters_us"],
            "memory_limit": g["temperature"]["memory_max_operating_c"],
            "link3": {k: g["nvlink"]["links"][3]["errors"].get(k) for k in ("recovery_failed", "symbol_errors")},
            "ber3": g["nvlink"]["links"][3]["errors"]["effective_ber"],
        }

    want = part(paths["xml"][1])
    assert want["fabric"]["health"] == {
        "degraded_bandwidth": True,
        "route_recovery": False,
        "route_unhealthy": True,
        "access_timeout_recovery": False,
        "summary": "unhealthy",
        "incorrect_configuration": "none",
    }
    assert want["by_type"]["volatile"] == {
        "sram_corrected": 12000,
        "dram_corrected": 5,
        "sram_uncorrected": 0,
        "dram_uncorrected": 2,
    }
    assert want["counters"]["hw_power_brake_slowdown"] == 30000000
    assert want["ber3"] == pytest.approx(3e-11)
    assert part(paths["text"][1]) == want
    assert part(paths["nvml"][1]) == want


def test_c2c_is_read_by_nvml_only_and_judged(paths):
    """nvidia-smi -q prints only "GPU C2C Mode": the XML/text record's c2c stays unknown (None), never healthy;
    NVML's C2C CRC counter grew 0 -> 4 between the readings: a P2 finding on that path."""
    assert paths["xml"][1]["gpus"][0]["c2c"] is None
    assert paths["nvml"][1]["gpus"][0]["c2c"] == {
        "link_count": 10,
        "active": True,
        "errors": {"crc": 4, "replay": 0, "replay_b2b": 0},
    }
    assert _findings(paths["nvml"], c2c=True) == [("gpu.nvlink", "gpu0/c2c", "c2c_errors", "P2", "monitor")]
    assert _findings(paths["xml"], c2c=True) == []


_NEW_SYMBOLS = (
    "nvmlDeviceGetMemoryErrorCounter",
    "nvmlDeviceGetSramEccErrorStatus",
    "nvmlDeviceGetRepairStatus",
    "nvmlDeviceGetUnrepairableMemoryFlag_v1",
    "nvmlDeviceGetGpuFabricInfoV",
)


class _OldDriverLib(fake_nvml_lib.FakeNvmlLib):
    """A driver before these calls (R535-era): the symbols are not exported, the new field ids NOT_SUPPORTED."""

    def __getattribute__(self, name):
        if name in _NEW_SYMBOLS:
            raise AttributeError(name)
        return super().__getattribute__(name)


class _NotSupportedLib(fake_nvml_lib.FakeNvmlLib):
    """A driver that has the calls but not on this GPU (NVML_ERROR_NOT_SUPPORTED)."""

    def __getattribute__(self, name):
        if name in _NEW_SYMBOLS:
            return lambda *args: fake_nvml_lib.NOT_SUPPORTED
        return super().__getattribute__(name)


@pytest.mark.parametrize("lib", [_OldDriverLib, _NotSupportedLib])
def test_older_drivers_degrade_to_unknown_never_healthy(monkeypatch, lib):
    dev = _gb200(True)
    dev["fields"] = {k: v for k, v in dev["fields"].items() if k[0] < 170}  # only FI 82 (memory temp) and 74/76
    monkeypatch.setattr(pynvml, "nvmlLib", lib([dev]))
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
    dom = _nvml.query(pynvml)
    assert dom["errors"] == []
    g = dom["gpus"][0]
    assert g["readable"] is True
    ecc = g["ecc"]
    assert ecc["volatile"] == {"corrected": 12005, "uncorrected": 2}  # the totals still read
    assert ecc["by_type"]["volatile"] == {
        "sram_corrected": None,
        "dram_corrected": None,
        "sram_uncorrected": None,
        "dram_uncorrected": None,
    }
    assert [ecc[k] for k in ("sram_threshold_exceeded", "channel_repair_pending", "unrepairable_memory")] == [None] * 3
    assert g["fabric"] is None and g["c2c"] is None
    assert g["throttle"]["counters_us"] == {"sw_power_cap": 0, "sync_boost": 0}  # FI 74/76 exist before R575
    assert set(g["nvlink"]["links"][3]["errors"]) == {"replay", "recovery", "crc_flit", "crc_data"}
    # the totals against the SRAM limit, no RMA flag, no repair finding: nothing invented
    fs = _findings([dom, dom])
    assert ("gpu.ecc", "gpu0", "sram_threshold", "P1", "replace") not in fs
    assert not [f for f in fs if f[2] in ("repair_pending", "health") or f[0] == "gpu.fabric"]


def test_fabric_v2_struct_without_summary(monkeypatch):
    """A pynvml before c_nvmlGpuFabricInfo_v3_t (12.550-12.575): the v2 struct gives the mask, no summary."""
    monkeypatch.delattr(pynvml, "c_nvmlGpuFabricInfo_v3_t")
    fake_nvml_lib.install(monkeypatch, [_gb200(False)])
    health = _nvml.query(pynvml)["gpus"][0]["fabric"]["health"]
    assert health["summary"] is None
    assert (health["route_unhealthy"], health["degraded_bandwidth"], health["route_recovery"]) == (True, True, False)


def test_tlimit_margins_match_the_real_h100_text(monkeypatch):
    """H100 / 590.48.01 (../shared/reference/samples/nvidia-smi-q-text/nvgpuexp-h100-590.48.01-load.txt) prints
    only T.Limit margins: T.Limit 26 C, shutdown -8, slowdown -2, max operating 0, memory max operating 0. An NVML
    that no longer answers getTemperatureThreshold (NVIDIA: use FI 193-196 on Ada+) gives the same temperatures
    through nvmlDeviceGetMarginTemperature and the field ids (signed values)."""
    from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import nvsmi_text

    with open(os.path.join(SAMPLES, "nvidia-smi-q-text", "nvgpuexp-h100-590.48.01-load.txt"), encoding="utf-8") as fh:
        want = nvsmi_text.parse(fh.read())["gpus"][0]["temperature"]
    dev = _gb200(False)
    dev["temperature"] = {"gpu": 59, "margin": 26, "thresholds": {}}
    sint = pynvml.NVML_VALUE_TYPE_SIGNED_INT
    dev["fields"].update({(82, 0): (UINT, 55), (193, 0): (sint, -8), (194, 0): (sint, -2), (195, 0): (sint, 0)})
    dev["fields"][(196, 0)] = (sint, 0)
    fake_nvml_lib.install(monkeypatch, [dev])
    got = _nvml.query(pynvml)["gpus"][0]["temperature"]
    assert got == want
    assert (got["tlimit_c"], got["shutdown_tlimit_c"], got["slowdown_tlimit_c"]) == (26, -8, -2)
