# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# ruff: noqa: UP009, UP031 - the house header and %-formatting (Python 3.8 managed nodes) are intended
"""GPU facts through NVML (``pynvml`` from the nvidia-ml-py package).

``nvmlInit()`` can block forever in the kernel on a sick driver, so every NVML call runs in a forked
child (``_runner.run_in_child``) that is killed and abandoned after the timeout. The child reads
each device into nvidia-smi XML-path *fields* and :func:`_nvsmi_xml.record_from_fields` builds the
same record as the nvidia-smi parsers. A call that raises ``NVMLError`` (Not Supported, ...) leaves
its field unknown; a device whose handle cannot be obtained becomes an unreadable GPU record.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import error_record
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import nvml_fields as _fields
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.nvsmi_xml import (
    DOMAIN,
    empty_result,
    record_from_fields,
    unreadable_record,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_in_child

PARSER = "nvml"

_ARCH = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
}
#: Clock event reason bits (nvmlClocksEventReason*), the same before and after the R535 rename.
_REASON_BITS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clocks_setting"),
)
_FABRIC_STATES = {1: "Not Started", 2: "In Progress", 3: "Completed"}
_MIB = 1024 * 1024


def _text(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _enabled(value: Any) -> Optional[str]:
    if value is None:
        return None
    return "Enabled" if int(value) else "Disabled"


def _yes(value: Any) -> Optional[str]:
    if value is None:
        return None
    return "Yes" if int(value) else "No"


class _Reader:
    """Calls NVML functions, turning NVMLError into None (and nothing else).

    pynvml's unversioned wrappers (``nvmlDeviceGetComputeRunningProcesses`` -> ``_v3``) raise
    ``NVMLLibraryMismatchError``, a plain Exception, when the driver lacks the versioned symbol (a pynvml newer
    than the driver): that is a function not found too, not a broken GPU."""

    def __init__(self, nv: Any) -> None:
        self.nv = nv
        error = getattr(nv, "NVMLError", Exception)
        mismatch = getattr(nv, "NVMLLibraryMismatchError", None)
        self.error_type = (error, mismatch) if isinstance(mismatch, type) else error

    def __call__(self, name: str, *args: Any) -> Any:
        fn: Optional[Callable[..., Any]] = getattr(self.nv, name, None)
        if fn is None:
            return None
        try:
            return fn(*args)
        except self.error_type:
            return None

    def field(self, handle: Any, field_id: Optional[int]) -> Optional[int]:
        """One nvmlDeviceGetFieldValues value (unsigned), or None."""
        if field_id is None:
            return None
        vals = self("nvmlDeviceGetFieldValues", handle, [field_id])
        if not vals:
            return None
        v = vals[0]
        if getattr(v, "nvmlReturn", 1) != 0:
            return None
        try:
            return int(v.value.uiVal)
        except (AttributeError, TypeError, ValueError):
            return None


def _const(nv: Any, name: str, default: Any = None) -> Any:
    return getattr(nv, name, default)


def _identity(f: Dict[str, Any], r: _Reader, nv: Any, h: Any) -> None:
    """Name, architecture, serial, UUID, VBIOS, bus id, persistence and MIG mode."""
    f["product_name"] = _text(r("nvmlDeviceGetName", h))
    arch = r("nvmlDeviceGetArchitecture", h)
    f["product_architecture"] = _ARCH.get(arch) if arch is not None else None
    f["serial"] = _text(r("nvmlDeviceGetSerial", h))
    f["uuid"] = _text(r("nvmlDeviceGetUUID", h))
    f["vbios_version"] = _text(r("nvmlDeviceGetVbiosVersion", h))
    pci = r("nvmlDeviceGetPciInfo", h)
    f["pci/pci_bus_id"] = _text(getattr(pci, "busId", None)) if pci is not None else None
    f["persistence_mode"] = _enabled(r("nvmlDeviceGetPersistenceMode", h))
    mig = r("nvmlDeviceGetMigMode", h)
    if mig:
        f["mig_mode/current_mig"] = _enabled(mig[0])
        f["mig_mode/pending_mig"] = _enabled(mig[1])


def _temperatures(f: Dict[str, Any], r: _Reader, nv: Any, h: Any) -> None:
    """Temperatures and their thresholds."""
    f["temperature/gpu_temp"] = r("nvmlDeviceGetTemperature", h, _const(nv, "NVML_TEMPERATURE_GPU", 0))
    f["temperature/memory_temp"] = r.field(h, _const(nv, "NVML_FI_DEV_MEMORY_TEMP"))
    for path, const in (
        ("temperature/gpu_temp_max_threshold", "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN"),
        ("temperature/gpu_temp_slow_threshold", "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN"),
        ("temperature/gpu_temp_max_gpu_threshold", "NVML_TEMPERATURE_THRESHOLD_GPU_MAX"),
        ("temperature/gpu_temp_max_mem_threshold", "NVML_TEMPERATURE_THRESHOLD_MEM_MAX"),
    ):
        if _const(nv, const) is not None:
            f[path] = r("nvmlDeviceGetTemperatureThreshold", h, _const(nv, const))
    _fields.tlimit(f, r, h)


def _power(f: Dict[str, Any], r: _Reader, nv: Any, h: Any) -> None:
    """Power draw and limits (NVML reports milliwatts)."""
    for path, name in (
        ("power_readings/power_draw", "nvmlDeviceGetPowerUsage"),
        ("power_readings/power_limit", "nvmlDeviceGetPowerManagementLimit"),
        ("power_readings/enforced_power_limit", "nvmlDeviceGetEnforcedPowerLimit"),
        ("power_readings/default_power_limit", "nvmlDeviceGetPowerManagementDefaultLimit"),
    ):
        mw = r(name, h)
        f[path] = mw / 1000.0 if mw is not None else None
    cons = r("nvmlDeviceGetPowerManagementLimitConstraints", h)
    f["power_readings/max_power_limit"] = cons[1] / 1000.0 if cons else None


def _clocks(f: Dict[str, Any], r: _Reader, nv: Any, h: Any) -> None:
    """Current and maximum clocks."""
    for key, const in (
        ("graphics_clock", "NVML_CLOCK_GRAPHICS"),
        ("sm_clock", "NVML_CLOCK_SM"),
        ("mem_clock", "NVML_CLOCK_MEM"),
    ):
        f["clocks/" + key] = r("nvmlDeviceGetClockInfo", h, _const(nv, const))
        f["max_clocks/" + key] = r("nvmlDeviceGetMaxClockInfo", h, _const(nv, const))


def _usage(f: Dict[str, Any], r: _Reader, nv: Any, h: Any) -> None:
    """Utilization and framebuffer memory."""
    util = r("nvmlDeviceGetUtilizationRates", h)
    if util is not None:
        f["utilization/gpu_util"] = util.gpu
        f["utilization/memory_util"] = util.memory
    mem = r("nvmlDeviceGetMemoryInfo", h)
    if mem is not None:
        f["fb_memory_usage/total"] = int(mem.total) // _MIB
        f["fb_memory_usage/used"] = int(mem.used) // _MIB


def _ecc(f: Dict[str, Any], r: _Reader, nv: Any, h: Any) -> None:
    """ECC mode and counts: totals, by location (SRAM/DRAM), the SRAM status and the repair flags."""
    ecc = r("nvmlDeviceGetEccMode", h)
    if ecc:
        f["ecc_mode/current_ecc"] = _enabled(ecc[0])
        f["ecc_mode/pending_ecc"] = _enabled(ecc[1])
    for scope, counter in (("volatile", "NVML_VOLATILE_ECC"), ("aggregate", "NVML_AGGREGATE_ECC")):
        for kind, etype in (
            ("corrected", "NVML_MEMORY_ERROR_TYPE_CORRECTED"),
            ("uncorrected", "NVML_MEMORY_ERROR_TYPE_UNCORRECTED"),
        ):
            f["ecc_errors/%s/%s" % (scope, kind)] = r(
                "nvmlDeviceGetTotalEccErrors", h, _const(nv, etype), _const(nv, counter)
            )
    _fields.ecc_locations(f, r, nv, h)
    _fields.sram_status(f, r, nv, h)
    _fields.repair(f, r, nv, h)


def _retired(f: Dict[str, Any], r: _Reader, nv: Any, h: Any) -> None:
    """Retired pages (before Ampere)."""
    sbe = r("nvmlDeviceGetRetiredPages", h, _const(nv, "NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS", 0))
    dbe = r("nvmlDeviceGetRetiredPages", h, _const(nv, "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", 1))
    f["retired_pages/multiple_single_bit_retirement/retired_count"] = len(sbe) if sbe is not None else None
    f["retired_pages/double_bit_retirement/retired_count"] = len(dbe) if dbe is not None else None
    f["retired_pages/pending_retirement"] = _yes(r("nvmlDeviceGetRetiredPagesPendingStatus", h))


def _remapped(f: Dict[str, Any], r: _Reader, nv: Any, h: Any) -> None:
    """Remapped rows (Ampere and later)."""
    rows = r("nvmlDeviceGetRemappedRows", h)
    if rows:
        f["remapped_rows/remapped_row_corr"] = rows[0]
        f["remapped_rows/remapped_row_unc"] = rows[1]
        f["remapped_rows/remapped_row_pending"] = _yes(rows[2])
        f["remapped_rows/remapped_row_failure"] = _yes(rows[3])
        hist = r("nvmlDeviceGetRowRemapperHistogram", h)
        if hist is not None:
            for k in ("max", "high", "partial", "low", "none"):
                f["remapped_rows/row_remapper_histogram/row_remapper_histogram_" + k] = getattr(hist, k, None)


def _reasons(f: Dict[str, Any], r: _Reader, nv: Any, h: Any) -> None:
    """Clock event (throttle) reasons, under the R535 names."""
    mask = r("nvmlDeviceGetCurrentClocksEventReasons", h)
    if mask is None:
        mask = r("nvmlDeviceGetCurrentClocksThrottleReasons", h)
    if mask is not None:
        for bit, name in _REASON_BITS:
            f["clocks_event_reasons/clocks_event_reason_" + name] = "Active" if int(mask) & bit else "Not Active"
    _fields.throttle_counters(f, r, h)


def _pcie(f: Dict[str, Any], r: _Reader, nv: Any, h: Any) -> None:
    """PCIe link generation, width and replays."""
    lp = "pci/pci_gpu_link_info/"
    f[lp + "pcie_gen/current_link_gen"] = r("nvmlDeviceGetCurrPcieLinkGeneration", h)
    f[lp + "pcie_gen/max_link_gen"] = r("nvmlDeviceGetMaxPcieLinkGeneration", h)
    f[lp + "pcie_gen/max_device_link_gen"] = r("nvmlDeviceGetGpuMaxPcieLinkGeneration", h)
    f[lp + "link_widths/current_link_width"] = r("nvmlDeviceGetCurrPcieLinkWidth", h)
    f[lp + "link_widths/max_link_width"] = r("nvmlDeviceGetMaxPcieLinkWidth", h)
    f["pci/replay_counter"] = r("nvmlDeviceGetPcieReplayCounter", h)


def _recovery(f: Dict[str, Any], r: _Reader, nv: Any, h: Any) -> None:
    """The recovery action (R550+ field)."""
    action = r.field(h, _const(nv, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION"))
    if action is not None:
        f["gpu_recovery_action"] = action


def _device_fields(r: _Reader, nv: Any, h: Any) -> Dict[str, Any]:
    f: Dict[str, Any] = {}
    for part in (
        _identity,
        _temperatures,
        _power,
        _clocks,
        _usage,
        _ecc,
        _retired,
        _remapped,
        _reasons,
        _pcie,
        _recovery,
    ):
        part(f, r, nv, h)
    f.update(_fabric(r, nv, h))
    c2c = _fields.c2c(r, h)
    if c2c is not None:
        f["c2c"] = c2c
    return f


def _fabric(r: _Reader, nv: Any, h: Any) -> Dict[str, Any]:
    """The Fabric section: state, status, clique, cluster UUID and (v2/v3 struct) the health rows."""
    info = _fields.fabric_struct(r, nv, h)
    if info is None:
        return {}
    state = _FABRIC_STATES.get(int(info.state))
    if state is None:
        return {}
    raw = bytes(bytearray(info.clusterUuid))
    uuid = raw.hex()
    out = {
        "fabric/state": state,
        "fabric/status": "Success" if int(info.status) == 0 else "Error %d" % int(info.status),
        "fabric/cliqueId": str(int(info.cliqueId)),
        "fabric/clusterUuid": "%s-%s-%s-%s-%s" % (uuid[:8], uuid[8:12], uuid[12:16], uuid[16:20], uuid[20:]),
    }
    _fields.fabric_health(out, info)
    return out


def _nvlink(r: _Reader, nv: Any, h: Any) -> Optional[Dict[str, Any]]:
    links = []
    enabled = getattr(nv, "NVML_FEATURE_ENABLED", 1)
    counters = (
        ("replay", "NVML_NVLINK_ERROR_DL_REPLAY"),
        ("recovery", "NVML_NVLINK_ERROR_DL_RECOVERY"),
        ("crc_flit", "NVML_NVLINK_ERROR_DL_CRC_FLIT"),
        ("crc_data", "NVML_NVLINK_ERROR_DL_CRC_DATA"),
    )
    for link in range(int(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18))):
        state = r("nvmlDeviceGetNvLinkState", h, link)
        if state is None:
            continue
        up = int(state) == enabled
        links.append(
            {
                "link": link,
                "state": "up" if up else "down",
                "speed_gbps": None,
                "errors": {
                    k: r("nvmlDeviceGetNvLinkErrorCounter", h, link, getattr(nv, c, i))
                    for i, (k, c) in enumerate(counters)
                },
            }
        )
    if not links:
        return None
    _fields.nvlink5(r, h, links)
    return {"links": links, "error": None}


def _processes(r: _Reader, h: Any) -> List[Dict[str, Any]]:
    by_pid: Dict[int, Dict[str, Any]] = {}
    for kind, name in (("C", "nvmlDeviceGetComputeRunningProcesses"), ("G", "nvmlDeviceGetGraphicsRunningProcesses")):
        for p in r(name, h) or []:
            pid = int(p.pid)
            used = getattr(p, "usedGpuMemory", None)
            cur = by_pid.get(pid)
            if cur is None:
                pname = _text(r("nvmlSystemGetProcessName", pid))
                by_pid[pid] = {
                    "pid": pid,
                    "name": pname or None,
                    "type": kind,
                    "used_mib": int(used) // _MIB if used is not None else None,
                }
            elif kind not in cur["type"]:
                cur["type"] = "C+G"
    return list(by_pid.values())


def _cuda_version(v: Any) -> Optional[str]:
    if v is None:
        return None
    v = int(v)
    return "%d.%d" % (v // 1000, (v % 1000) // 10)


def query(nv: Any) -> Dict[str, Any]:
    """Read every GPU through NVML (call in a child: nvmlInit may block). Returns the domain dict."""
    result = empty_result("nvml")
    r = _Reader(nv)
    nv.nvmlInit()
    try:
        result["driver_version"] = _text(r("nvmlSystemGetDriverVersion"))
        result["cuda_version"] = _cuda_version(r("nvmlSystemGetCudaDriverVersion"))
        count = nv.nvmlDeviceGetCount()
        result["count"] = int(count)
        for i in range(int(count)):
            try:
                h = nv.nvmlDeviceGetHandleByIndex(i)
            except r.error_type as exc:
                msg = "Unable to determine the device handle for GPU index %d: %s" % (i, exc)
                rec = unreadable_record(None, msg, index=i)
                result["gpus"].append(rec)
                result["errors"].append(
                    error_record(DOMAIN, "unreadable", "GPU index %d: %s" % (i, exc), "nvml", PARSER)
                )
                continue
            try:
                fields = _device_fields(r, nv, h)
                rec = record_from_fields(
                    fields,
                    index=i,
                    driver_version=result["driver_version"],
                    cuda_version=result["cuda_version"],
                    processes=_processes(r, h),
                )
                rec["nvlink"] = _nvlink(r, nv, h)
            except Exception as exc:  # noqa: BLE001 - a value NVML returned that is not one: this GPU only
                msg = "GPU index %d: NVML value not understood: %s: %s" % (i, type(exc).__name__, str(exc)[:200])
                result["gpus"].append(unreadable_record(None, msg, index=i))
                result["errors"].append(error_record(DOMAIN, "parse", msg, "nvml", PARSER))
                continue
            result["gpus"].append(rec)
    finally:
        try:
            nv.nvmlShutdown()
        except r.error_type:
            pass
    result.pop("timestamp", None)
    return result


def available(pynvml_module: Any = None) -> Any:
    """The pynvml module, or None when nvidia-ml-py is not installed."""
    if pynvml_module is not None:
        return pynvml_module
    try:
        import pynvml  # noqa: PLC0415 - optional dependency, imported only when used
    except ImportError:
        return None
    return pynvml


def collect(timeout: float = 30.0, pynvml_module: Any = None) -> Dict[str, Any]:
    """NVML facts in a child process with a hard timeout.

    Returns the domain dict; on failure ``{"ok": False, "timed_out": bool, "error": str}`` is put
    under ``result["nvml_failure"]`` with ``gpus`` empty, so the caller can fall back to nvidia-smi
    (after a plain failure) or stop (after a timeout: the driver is hung, nvidia-smi would hang too).
    """
    nv = available(pynvml_module)
    if nv is None:
        res = empty_result(None)
        res["nvml_failure"] = {"timed_out": False, "error": "pynvml (nvidia-ml-py) is not installed"}
        return res
    out = run_in_child(query, (nv,), timeout=timeout)
    if out.get("ok"):
        return out["value"]
    res = empty_result(None)
    res["nvml_failure"] = {"timed_out": bool(out.get("timed_out")), "error": str(out.get("error"))}
    return res
