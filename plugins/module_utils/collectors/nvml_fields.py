# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# ruff: noqa: UP009, UP031 - the house header and %-formatting (Python 3.8 managed nodes) are intended
"""NVML readers for what ``nvidia-smi -q`` shows beyond the totals (``collectors.nvml`` calls them).

ECC by location (SRAM/DRAM, ``nvmlDeviceGetMemoryErrorCounter``), the SRAM ECC status (threshold exceeded,
``nvmlDeviceGetSramEccErrorStatus``), repair status (channel/TPC pending), the unrepairable-memory flag, the
fabric health mask and summary (``nvmlDeviceGetGpuFabricInfoV``), cumulative clock event counters (FI 74, 76,
269-271), NVLink5 error counters per link (FI 206-215, 219-222) and C2C link errors (FI 170, 171, 231-233).
Every value is written as the nvidia-smi XML field it stands for, so ``record_from_fields`` builds the same
record from NVML as from ``nvidia-smi -q -x``. A call the driver or the installed pynvml lacks
(NVMLError_NotSupported, FunctionNotFound, a missing symbol) leaves its field absent: unknown, never healthy.
Facts: ../shared/reference/gpu-knowledge-2026.md sections 1, 3.1-3.3 and 6.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import ctypes
from typing import Any, Dict, Iterable, List, Optional, Tuple

#: nvmlMemoryLocation_t: DRAM (device memory) and SRAM (Turing+)
LOCATION_DRAM = 2
LOCATION_SRAM = 7
#: nvmlValueType_t -> the c_nvmlValue_t member that holds it
_VALUE_MEMBER = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
#: cumulative clock event counters (nanoseconds) -> the XML leaf of ``clocks_event_reasons_counters`` (microseconds)
THROTTLE_COUNTER_FIELDS = (
    (74, "sw_power_cap"),
    (76, "sync_boost"),
    (269, "sw_therm_slowdown"),
    (270, "hw_therm_slowdown"),
    (271, "hw_power_brake"),
)
#: NVLink5 error counters per link (scopeId = link) -> the normalized key the ``nvlink -e`` parser uses too
NVLINK5_FIELDS = (
    (206, "malformed"),
    (207, "buffer_overrun"),
    (208, "rx_errors"),
    (209, "rx_remote"),
    (210, "rx_general"),
    (211, "integrity"),
    (212, "tx_discards"),
    (213, "recovery_successful"),
    (214, "recovery_failed"),
    (215, "recovery_total"),
    (219, "effective_errors"),
    (220, "effective_ber"),
    (221, "symbol_errors"),
    (222, "symbol_ber"),
)
_BER_FIELDS = frozenset((220, 222))
#: C2C (Grace <-> GPU): link count, status, and the error counters (hdr 12.9)
C2C_COUNT, C2C_STATUS = 170, 171
C2C_ERROR_FIELDS = ((231, "crc"), (232, "replay"), (233, "replay_b2b"))
#: healthMask 2-bit fields (shift, XML leaf, text for TRUE, text for FALSE)
_HEALTH_BITS = (
    (0, "bandwidth", "Degraded", "Full"),
    (2, "route_recovery_in_progress", "True", "False"),
    (4, "route_unhealthy", "True", "False"),
    (6, "access_timeout_recovery", "True", "False"),
)
_INCORRECT_CONFIG = {
    1: "None",
    2: "Incorrect SysGUID",
    3: "Incorrect Chassis SN",
    4: "No Partition",
    5: "Insufficient NVLinks",
    6: "Incompatible GPU Firmware",
    7: "Invalid Location",
    8: "GPU State Invalid",
}
_SUMMARY = {1: "Healthy", 2: "Unhealthy", 3: "Limited Capacity"}


def _yes(value: Any) -> Optional[str]:
    return None if value is None else ("Yes" if int(value) else "No")


def ber(packed: Optional[int]) -> Optional[float]:
    """An NVLink BER field: bits 0-7 exponent, 8-11 mantissa, BER = mantissa x 10^-exponent; 15E-255 is zero."""
    if packed is None:
        return None
    exponent, mantissa = packed & 0xFF, (packed >> 8) & 0xF
    if exponent >= 255 or mantissa == 0:
        return 0.0
    return mantissa * 10.0 ** (-exponent)


def field_values(r: Any, h: Any, ids: Iterable[Tuple[int, int]]) -> Dict[Tuple[int, int], Any]:
    """``{(field id, scope id): value}`` from one nvmlDeviceGetFieldValues call; a field whose own return is not
    NVML_SUCCESS is left out (unknown). Scope 0 is passed as a bare id: a pynvml older than the (id, scope) form
    (it assigns the tuple to a c_uint and raises TypeError) still reads those; scoped ones are then unknown."""
    wanted = list(ids)
    if not wanted:
        return {}
    try:
        vals = r("nvmlDeviceGetFieldValues", h, [fid if scope == 0 else (fid, scope) for fid, scope in wanted])
    except TypeError:
        return {}
    out: Dict[Tuple[int, int], Any] = {}
    if not vals:
        return out
    for key, v in zip(wanted, vals):
        if getattr(v, "nvmlReturn", 1) != 0:
            continue
        member = _VALUE_MEMBER.get(int(getattr(v, "valueType", 1)), "uiVal")
        try:
            out[key] = getattr(v.value, member)
        except (AttributeError, TypeError):
            continue
    return out


def ecc_locations(f: Dict[str, Any], r: Any, nv: Any, h: Any) -> None:
    """ECC counts by location (SRAM, DRAM) for ``volatile`` and ``aggregate``, as the R510+ XML prints them."""
    corrected = getattr(nv, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
    uncorrected = getattr(nv, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
    for scope, counter in (
        ("volatile", getattr(nv, "NVML_VOLATILE_ECC", 0)),
        ("aggregate", getattr(nv, "NVML_AGGREGATE_ECC", 1)),
    ):
        for leaf, etype, loc in (
            ("sram_correctable", corrected, LOCATION_SRAM),
            ("sram_uncorrectable", uncorrected, LOCATION_SRAM),
            ("dram_correctable", corrected, LOCATION_DRAM),
            ("dram_uncorrectable", uncorrected, LOCATION_DRAM),
        ):
            v = r("nvmlDeviceGetMemoryErrorCounter", h, etype, counter, loc)
            if v is not None:
                f["ecc_errors/%s/%s" % (scope, leaf)] = int(v)


def sram_status(f: Dict[str, Any], r: Any, nv: Any, h: Any) -> None:
    """The SRAM ECC status (R535+ driver, root): parity/SEC-DED split and the threshold-exceeded RMA flag."""
    struct = getattr(nv, "c_nvmlEccSramErrorStatus_v1_t", None)
    if struct is None:
        return
    st = struct()
    if r("nvmlDeviceGetSramEccErrorStatus", h, ctypes.byref(st)) is None:
        return
    for scope in ("volatile", "aggregate"):
        f.pop("ecc_errors/%s/sram_uncorrectable" % scope, None)  # the split replaces the SRAM total
        f["ecc_errors/%s/sram_uncorrectable_parity" % scope] = int(getattr(st, scope + "UncParity"))
        f["ecc_errors/%s/sram_uncorrectable_secded" % scope] = int(getattr(st, scope + "UncSecDed"))
        f["ecc_errors/%s/sram_correctable" % scope] = int(getattr(st, scope + "Cor"))
    f["ecc_errors/aggregate/sram_threshold_exceeded"] = _yes(getattr(st, "bThresholdExceeded", None))


def repair(f: Dict[str, Any], r: Any, nv: Any, h: Any) -> None:
    """Channel / TPC repair pending (R580+) and the unrepairable-memory flag (R590+, Hopper+)."""
    status = r("nvmlDeviceGetRepairStatus", h)
    if status is not None and len(status) >= 2:
        f["ecc_errors/channel_repair_pending"] = _yes(status[0])
        f["ecc_errors/tpc_repair_pending"] = _yes(status[1])
    unrep = r("nvmlDeviceGetUnrepairableMemoryFlag_v1", h)
    if unrep is not None:
        f["ecc_errors/unrepairable_memory"] = _yes(unrep)


#: T.Limit thresholds (Ada+: NVIDIA says read these field ids, getTemperatureThreshold support for them goes away)
TLIMIT_FIELDS = (
    (193, "gpu_temp_max_tlimit_threshold"),
    (194, "gpu_temp_slow_tlimit_threshold"),
    (195, "gpu_temp_max_mem_tlimit_threshold"),
    (196, "gpu_temp_max_gpu_tlimit_threshold"),
)


def tlimit(f: Dict[str, Any], r: Any, h: Any) -> None:
    """The T.Limit view nvidia-smi prints on H100-class GPUs: the margin to the GPU's own limit
    (``nvmlDeviceGetMarginTemperature`` = "GPU T.Limit Temp") and the thresholds as margins (FI 193-196)."""
    margin = r("nvmlDeviceGetMarginTemperature", h)
    if margin is not None:
        f["temperature/gpu_temp_tlimit"] = int(margin)
    vals = field_values(r, h, [(fid, 0) for fid, _leaf in TLIMIT_FIELDS])
    for fid, leaf in TLIMIT_FIELDS:
        v = vals.get((fid, 0))
        if v is not None:
            f["temperature/" + leaf] = int(v)


def throttle_counters(f: Dict[str, Any], r: Any, h: Any) -> None:
    """Cumulative clock event time: NVML counts nanoseconds, nvidia-smi prints microseconds."""
    vals = field_values(r, h, [(fid, 0) for fid, _leaf in THROTTLE_COUNTER_FIELDS])
    for fid, leaf in THROTTLE_COUNTER_FIELDS:
        v = vals.get((fid, 0))
        if v is not None:
            f["clocks_event_reasons_counters/clocks_event_reasons_counters_" + leaf] = int(v) // 1000


def fabric_health(f: Dict[str, Any], info: Any) -> None:
    """The health rows of ``nvidia-smi -q``'s Fabric section from a v2/v3 fabric info struct."""
    mask = getattr(info, "healthMask", None)
    if mask is not None:
        mask = int(mask)
        for shift, leaf, true_text, false_text in _HEALTH_BITS:
            bits = (mask >> shift) & 0x3
            if bits in (1, 2):
                f["fabric/health/" + leaf] = true_text if bits == 1 else false_text
        conf = _INCORRECT_CONFIG.get((mask >> 8) & 0xF)
        if conf is not None:
            f["fabric/health/incorrect_configuration"] = conf
    summary = _SUMMARY.get(int(getattr(info, "healthSummary", 0) or 0))
    if summary is not None:
        f["fabric/health/summary"] = summary


def fabric_struct(r: Any, nv: Any, h: Any) -> Any:
    """The newest fabric info the installed pynvml and driver give: v3 (health summary), v2 (health mask), v1."""
    for struct_name, fn in (
        ("c_nvmlGpuFabricInfo_v3_t", "nvmlDeviceGetGpuFabricInfoV"),
        ("c_nvmlGpuFabricInfoV_t", "nvmlDeviceGetGpuFabricInfoV"),
        ("c_nvmlGpuFabricInfo_t", "nvmlDeviceGetGpuFabricInfo"),
    ):
        struct = getattr(nv, struct_name, None)
        if struct is None or getattr(nv, fn, None) is None:
            continue
        info = struct()
        if r(fn, h, ctypes.byref(info)) is not None:
            return info
    return None


def nvlink5(r: Any, h: Any, links: List[Dict[str, Any]]) -> None:
    """Add the NVLink5 counters to each link's ``errors`` (left out where the GPU has none: before Blackwell)."""
    if not links:
        return
    vals = field_values(r, h, [(fid, int(lk["link"])) for lk in links for fid, _key in NVLINK5_FIELDS])
    for lk in links:
        for fid, key in NVLINK5_FIELDS:
            v = vals.get((fid, int(lk["link"])))
            if v is not None:
                lk["errors"][key] = ber(int(v)) if fid in _BER_FIELDS else int(v)


def c2c(r: Any, h: Any) -> Optional[Dict[str, Any]]:
    """C2C (Grace <-> GPU) links: count, whether active, error counters; None on a GPU without C2C."""
    ids = [(C2C_COUNT, 0), (C2C_STATUS, 0)] + [(fid, 0) for fid, _key in C2C_ERROR_FIELDS]
    vals = field_values(r, h, ids)
    count = vals.get((C2C_COUNT, 0))
    if not count:
        return None
    status = vals.get((C2C_STATUS, 0))
    return {
        "link_count": int(count),
        "active": None if status is None else bool(int(status)),
        "errors": {key: (None if vals.get((fid, 0)) is None else int(vals[(fid, 0)])) for fid, key in C2C_ERROR_FIELDS},
    }
