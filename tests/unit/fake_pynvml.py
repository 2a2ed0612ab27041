# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stand-in for ``pynvml`` (nvidia-ml-py) that answers from a hand-written state table.

Only the functions gpuops uses are here, each with the exact parameters of the real function
(tests/unit/plugins/module_utils/test_nvml.py checks that with inspect.signature against the
installed nvidia-ml-py). Exceptions are the real ``pynvml.NVMLError_*`` classes (raised through the
real ``NVMLError(code)`` factory) and every constant is imported from the real module.

State table ``A100_535`` was written BY HAND from one real sample, reading the XML by eye (not
produced by any parser of ours): tests/fixtures/nvidia-smi-xml/telegraf-4xa100-sxm4-535.54.03-mig.xml
(GPU 00000000:01:00.0, NVIDIA A100-SXM4-80GB, driver 535.54.03, MIG enabled). Values printed as N/A
there are ``NOT_SUPPORTED`` here (utilization and row remapping under MIG, page retirement on
Ampere, fabric on A100), units converted the way NVML reports them (mW, bytes, CUDA 12020).

``STATE`` is what the functions read; tests change it with :func:`reset` (e.g. ``init_blocks=True``
to make ``nvmlInit`` hang like a sick driver, or a device set to ``GPU_IS_LOST``).
"""

from __future__ import annotations

import copy
import time
from types import SimpleNamespace

import pynvml as _real
from pynvml import (  # noqa: F401 - re-exported like the real module does
    NVML_AGGREGATE_ECC,
    NVML_CLOCK_GRAPHICS,
    NVML_CLOCK_MEM,
    NVML_CLOCK_SM,
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_NOT_SUPPORTED,
    NVML_ERROR_UNKNOWN,
    NVML_FEATURE_DISABLED,
    NVML_FEATURE_ENABLED,
    NVML_FI_DEV_GET_GPU_RECOVERY_ACTION,
    NVML_FI_DEV_MEMORY_TEMP,
    NVML_GPU_FABRIC_STATE_COMPLETED,
    NVML_MEMORY_ERROR_TYPE_CORRECTED,
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
    NVML_NVLINK_ERROR_DL_CRC_DATA,
    NVML_NVLINK_ERROR_DL_CRC_FLIT,
    NVML_NVLINK_ERROR_DL_RECOVERY,
    NVML_NVLINK_ERROR_DL_REPLAY,
    NVML_NVLINK_MAX_LINKS,
    NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
    NVML_TEMPERATURE_GPU,
    NVML_TEMPERATURE_THRESHOLD_GPU_MAX,
    NVML_TEMPERATURE_THRESHOLD_MEM_MAX,
    NVML_TEMPERATURE_THRESHOLD_SHUTDOWN,
    NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,
    NVML_VOLATILE_ECC,
    NVMLError,
    c_nvmlGpuFabricInfo_t,
)

NS = "NOT_SUPPORTED"
LOST = "GPU_IS_LOST"

#: Hand-written from telegraf-4xa100-sxm4-535.54.03-mig.xml, GPU 00000000:01:00.0 (see module docstring).
A100_535 = {
    "handle_error": None,
    "name": "NVIDIA A100-SXM4-80GB",
    "architecture": 7,  # NVML_DEVICE_ARCH_AMPERE; <product_architecture>Ampere
    "serial": "1650522003820",
    "uuid": "GPU-513536b6-7d19-9063-b049-1e69664bb298",
    "vbios": "92.00.36.00.02",
    "bus_id": b"00000000:01:00.0",
    "persistence": 0,  # <persistence_mode>Disabled
    "mig": [1, 1],  # current_mig / pending_mig Enabled
    "temperature": {NVML_TEMPERATURE_GPU: 27},
    "thresholds": {
        NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: 92,  # gpu_temp_max_threshold
        NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: 89,  # gpu_temp_slow_threshold
        NVML_TEMPERATURE_THRESHOLD_GPU_MAX: 85,  # gpu_temp_max_gpu_threshold
        NVML_TEMPERATURE_THRESHOLD_MEM_MAX: 95,  # gpu_temp_max_mem_threshold
    },
    "fields": {NVML_FI_DEV_MEMORY_TEMP: 44},  # memory_temp 44 C; no recovery action field on 535
    "power_mw": 67030,  # gpu_power_readings/power_draw 67.03 W
    "limit_mw": 500000,  # current_power_limit 500.00 W
    "enforced_mw": 500000,
    "default_mw": 500000,
    "constraints_mw": [100000, 500000],  # min/max_power_limit
    "clocks": {NVML_CLOCK_GRAPHICS: 1275, NVML_CLOCK_SM: 1275, NVML_CLOCK_MEM: 1593},
    "max_clocks": {NVML_CLOCK_GRAPHICS: 1410, NVML_CLOCK_SM: 1410, NVML_CLOCK_MEM: 1593},
    "utilization": NS,  # gpu_util / memory_util N/A (MIG)
    "memory": {"total": 81920 * 1024 * 1024, "used": 50 * 1024 * 1024, "free": 80999 * 1024 * 1024},
    "ecc_mode": [1, 1],
    "ecc": {
        (NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC): 0,
        (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC): 0,
        (NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC): 0,
        (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC): 0,
    },
    "retired_pages": NS,  # retired_count N/A
    "retired_pending": NS,
    "remapped_rows": NS,  # <remapped_rows>N/A (MIG enabled)
    "histogram": NS,
    "clock_event_reasons": 0,  # every clocks_event_reason_* Not Active
    "pcie_gen": 4,
    "pcie_gen_max": 4,
    "pcie_gen_device_max": 4,
    "pcie_width": 16,
    "pcie_width_max": 16,
    "replay_counter": 0,
    "nvlink": NS,  # the XML has no NVLink section
    "fabric": NS,  # fabric state N/A
    "processes": {"compute": [], "graphics": []},
}

STATE = {}


def reset(devices=None, init_blocks=False, init_error=None, driver="535.54.03", cuda=12020):
    """Set the state the fake answers from (a deep copy of A100_535 by default)."""
    STATE.clear()
    STATE.update(
        {
            "devices": copy.deepcopy(devices if devices is not None else [A100_535]),
            "init_blocks": init_blocks,
            "init_error": init_error,
            "driver": driver,
            "cuda": cuda,
            "initialized": False,
        }
    )


reset()


def _raise(code):
    raise NVMLError(code)


def _dev(handle):
    if not STATE["initialized"]:
        _raise(_real.NVML_ERROR_UNINITIALIZED)
    return STATE["devices"][handle.index]


def _val(value):
    if value == NS:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    if value == LOST:
        _raise(NVML_ERROR_GPU_IS_LOST)
    return value


def nvmlInit():
    if STATE["init_blocks"]:
        time.sleep(3600)
    if STATE["init_error"] is not None:
        _raise(STATE["init_error"])
    STATE["initialized"] = True


def nvmlShutdown():
    STATE["initialized"] = False


def nvmlSystemGetDriverVersion():
    return STATE["driver"]


def nvmlSystemGetCudaDriverVersion():
    return STATE["cuda"]


def nvmlDeviceGetCount():
    return len(STATE["devices"])


def nvmlDeviceGetHandleByIndex(index):
    if not STATE["initialized"]:
        _raise(_real.NVML_ERROR_UNINITIALIZED)
    dev = STATE["devices"][index]
    if dev.get("handle_error") is not None:
        _raise(dev["handle_error"])
    return SimpleNamespace(index=index)


def nvmlDeviceGetName(handle):
    return _val(_dev(handle)["name"])


def nvmlDeviceGetArchitecture(device):
    return _val(_dev(device)["architecture"])


def nvmlDeviceGetSerial(handle):
    return _val(_dev(handle)["serial"])


def nvmlDeviceGetUUID(handle):
    return _val(_dev(handle)["uuid"])


def nvmlDeviceGetVbiosVersion(handle):
    return _val(_dev(handle)["vbios"])


def nvmlDeviceGetPciInfo(handle):
    return SimpleNamespace(busId=_val(_dev(handle)["bus_id"]))


def nvmlDeviceGetPersistenceMode(handle):
    return _val(_dev(handle)["persistence"])


def nvmlDeviceGetMigMode(device):
    return list(_val(_dev(device)["mig"]))


def nvmlDeviceGetTemperature(handle, sensor):
    temps = _val(_dev(handle)["temperature"])
    return _val(temps.get(sensor, NS))


def nvmlDeviceGetTemperatureThreshold(handle, threshold):
    return _val(_dev(handle)["thresholds"].get(threshold, NS))


def nvmlDeviceGetFieldValues(handle, fieldIds):
    fields = _dev(handle)["fields"]
    out = []
    for fid in fieldIds:
        if fid in fields:
            out.append(SimpleNamespace(fieldId=fid, nvmlReturn=0, value=SimpleNamespace(uiVal=fields[fid])))
        else:
            out.append(
                SimpleNamespace(fieldId=fid, nvmlReturn=NVML_ERROR_NOT_SUPPORTED, value=SimpleNamespace(uiVal=0))
            )
    return out


def nvmlDeviceGetPowerUsage(handle):
    return _val(_dev(handle)["power_mw"])


def nvmlDeviceGetPowerManagementLimit(handle):
    return _val(_dev(handle)["limit_mw"])


def nvmlDeviceGetEnforcedPowerLimit(handle):
    return _val(_dev(handle)["enforced_mw"])


def nvmlDeviceGetPowerManagementDefaultLimit(handle):
    return _val(_dev(handle)["default_mw"])


def nvmlDeviceGetPowerManagementLimitConstraints(handle):
    return list(_val(_dev(handle)["constraints_mw"]))


def nvmlDeviceGetClockInfo(handle, type):  # noqa: A002 - the real parameter name
    return _val(_dev(handle)["clocks"].get(type, NS))


def nvmlDeviceGetMaxClockInfo(handle, type):  # noqa: A002 - the real parameter name
    return _val(_dev(handle)["max_clocks"].get(type, NS))


def nvmlDeviceGetUtilizationRates(handle):
    u = _val(_dev(handle)["utilization"])
    return SimpleNamespace(gpu=u["gpu"], memory=u["memory"])


def nvmlDeviceGetMemoryInfo(handle, version=None):
    m = _val(_dev(handle)["memory"])
    return SimpleNamespace(**m)


def nvmlDeviceGetEccMode(handle):
    return list(_val(_dev(handle)["ecc_mode"]))


def nvmlDeviceGetTotalEccErrors(handle, errorType, counterType):
    ecc = _val(_dev(handle)["ecc"])
    return _val(ecc.get((errorType, counterType), NS))


def nvmlDeviceGetRetiredPages(device, sourceFilter):
    pages = _val(_dev(device)["retired_pages"])
    return list(_val(pages.get(sourceFilter, NS)))


def nvmlDeviceGetRetiredPagesPendingStatus(device):
    return _val(_dev(device)["retired_pending"])


def nvmlDeviceGetRemappedRows(device):
    return tuple(_val(_dev(device)["remapped_rows"]))


def nvmlDeviceGetRowRemapperHistogram(device):
    h = _val(_dev(device)["histogram"])
    return SimpleNamespace(**h)


def nvmlDeviceGetCurrentClocksEventReasons(handle):
    return _val(_dev(handle)["clock_event_reasons"])


def nvmlDeviceGetCurrPcieLinkGeneration(handle):
    return _val(_dev(handle)["pcie_gen"])


def nvmlDeviceGetMaxPcieLinkGeneration(handle):
    return _val(_dev(handle)["pcie_gen_max"])


def nvmlDeviceGetGpuMaxPcieLinkGeneration(handle):
    return _val(_dev(handle)["pcie_gen_device_max"])


def nvmlDeviceGetCurrPcieLinkWidth(handle):
    return _val(_dev(handle)["pcie_width"])


def nvmlDeviceGetMaxPcieLinkWidth(handle):
    return _val(_dev(handle)["pcie_width_max"])


def nvmlDeviceGetPcieReplayCounter(handle):
    return _val(_dev(handle)["replay_counter"])


def nvmlDeviceGetNvLinkState(device, link):
    links = _val(_dev(device)["nvlink"])
    if link >= len(links):
        _raise(_real.NVML_ERROR_INVALID_ARGUMENT)
    return NVML_FEATURE_ENABLED if links[link]["up"] else NVML_FEATURE_DISABLED


def nvmlDeviceGetNvLinkErrorCounter(device, link, counter):
    links = _val(_dev(device)["nvlink"])
    return _val(links[link]["errors"].get(counter, NS))


def nvmlDeviceGetGpuFabricInfo(device, gpuFabricInfo):
    fab = _val(_dev(device)["fabric"])
    info = getattr(gpuFabricInfo, "_obj", gpuFabricInfo)  # ctypes.byref(...) or the struct itself
    info.state = fab["state"]
    info.status = fab["status"]
    info.cliqueId = fab["clique_id"]
    for i, b in enumerate(bytes.fromhex(fab["cluster_uuid"].replace("-", ""))):
        info.clusterUuid[i] = b
    return 0


def nvmlDeviceGetComputeRunningProcesses(handle):
    return [SimpleNamespace(**p) for p in _dev(handle)["processes"]["compute"]]


def nvmlDeviceGetGraphicsRunningProcesses(handle):
    return [SimpleNamespace(**p) for p in _dev(handle)["processes"]["graphics"]]


def nvmlSystemGetProcessName(pid):
    for dev in STATE["devices"]:
        for p in dev["processes"]["compute"] + dev["processes"]["graphics"]:
            if p["pid"] == pid:
                return p["name_"]
    _raise(_real.NVML_ERROR_NOT_FOUND)


__all__ = [
    "A100_535",
    "LOST",
    "NS",
    "STATE",
    "NVMLError",
    "c_nvmlGpuFabricInfo_t",
    "reset",
    # constants the code under test reads from ``pynvml``, re-exported from the real module
    "NVML_ERROR_UNKNOWN",
    "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION",
    "NVML_GPU_FABRIC_STATE_COMPLETED",
    "NVML_NVLINK_ERROR_DL_CRC_DATA",
    "NVML_NVLINK_ERROR_DL_CRC_FLIT",
    "NVML_NVLINK_ERROR_DL_RECOVERY",
    "NVML_NVLINK_ERROR_DL_REPLAY",
    "NVML_NVLINK_MAX_LINKS",
    "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR",
    "NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS",
]
