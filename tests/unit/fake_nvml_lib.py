# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stand-in for ``libnvidia-ml.so`` at the ctypes boundary, under the real ``pynvml`` (nvidia-ml-py).

:func:`install` puts a :class:`FakeNvmlLib` where pynvml keeps the loaded library (``pynvml.nvmlLib``) and empties
pynvml's function-pointer cache. From then on every pynvml wrapper runs unchanged: it builds its own ctypes
arguments (``byref`` pointers, string buffers, versioned structs, ``c_nvmlFieldValue_t`` arrays), calls the
"C function" by its exported name, and checks the ``nvmlReturn_t`` it gets back. A function this library does not
export raises AttributeError in pynvml's lookup, which pynvml turns into ``NVMLError_FunctionNotFound``, as with a
driver older than the symbol. Versioned structs are checked like the driver does (a wrong ``version`` field gets
NVML_ERROR_ARGUMENT_VERSION_MISMATCH), so a caller passing the wrong struct is caught.

The device state is a plain dict (see tests/unit/plugins/module_utils/test_nvml_parity.py), written by hand.
"""

from __future__ import annotations

import ctypes
from typing import Any, Dict

import pynvml

SUCCESS = 0
INVALID_ARGUMENT = 2
NOT_SUPPORTED = 3
ARGUMENT_VERSION_MISMATCH = 25
_HANDLE_BASE = 0x7000


def _out(ref: Any) -> Any:
    """The object behind ``ctypes.byref(obj)``."""
    return getattr(ref, "_obj", ref)


def _num(value: Any) -> int:
    return int(getattr(value, "value", value))


class FakeNvmlLib:
    """The exported NVML functions gpuops reaches through pynvml, answering from ``devices``."""

    def __init__(self, devices: list, driver: str = "590.48.01", cuda: int = 13010) -> None:
        self.devices = devices
        self.driver = driver
        self.cuda = cuda

    def _dev(self, handle: Any) -> Dict[str, Any]:
        return self.devices[ctypes.cast(handle, ctypes.c_void_p).value - _HANDLE_BASE]

    def _scalar(self, ref: Any, value: Any) -> int:
        if value is None:
            return NOT_SUPPORTED
        _out(ref).value = value
        return SUCCESS

    # -- library and system
    def nvmlInitWithFlags(self, flags: Any) -> int:
        return SUCCESS

    def nvmlShutdown(self) -> int:
        return SUCCESS

    def nvmlSystemGetDriverVersion(self, buf: Any, size: Any) -> int:
        buf.value = self.driver.encode()
        return SUCCESS

    def nvmlSystemGetCudaDriverVersion(self, ref: Any) -> int:
        return self._scalar(ref, self.cuda)

    def nvmlSystemGetCudaDriverVersion_v2(self, ref: Any) -> int:
        return self._scalar(ref, self.cuda)

    def nvmlDeviceGetCount_v2(self, ref: Any) -> int:
        return self._scalar(ref, len(self.devices))

    def nvmlDeviceGetHandleByIndex_v2(self, index: Any, ref: Any) -> int:
        i = _num(index)
        if i >= len(self.devices):
            return INVALID_ARGUMENT
        handle = _out(ref)
        value = ctypes.c_void_p(_HANDLE_BASE + i)
        ctypes.memmove(ctypes.addressof(handle), ctypes.addressof(value), ctypes.sizeof(ctypes.c_void_p))
        return SUCCESS

    # -- identity
    def _string(self, handle: Any, buf: Any, key: str) -> int:
        buf.value = self._dev(handle)[key].encode()
        return SUCCESS

    def nvmlDeviceGetName(self, handle: Any, buf: Any, size: Any) -> int:
        return self._string(handle, buf, "name")

    def nvmlDeviceGetSerial(self, handle: Any, buf: Any, size: Any) -> int:
        return self._string(handle, buf, "serial")

    def nvmlDeviceGetUUID(self, handle: Any, buf: Any, size: Any) -> int:
        return self._string(handle, buf, "uuid")

    def nvmlDeviceGetArchitecture(self, handle: Any, ref: Any) -> int:
        return self._scalar(ref, self._dev(handle)["architecture"])

    def nvmlDeviceGetPciInfo_v3(self, handle: Any, ref: Any) -> int:
        _out(ref).busId = self._dev(handle)["bus_id"].encode()
        return SUCCESS

    def nvmlDeviceGetPersistenceMode(self, handle: Any, ref: Any) -> int:
        return self._scalar(ref, 1)

    # -- temperature
    def nvmlDeviceGetTemperature(self, handle: Any, sensor: Any, ref: Any) -> int:
        return self._scalar(ref, self._dev(handle)["temperature"]["gpu"])

    def nvmlDeviceGetTemperatureThreshold(self, handle: Any, threshold: Any, ref: Any) -> int:
        return self._scalar(ref, self._dev(handle)["temperature"]["thresholds"].get(_num(threshold)))

    def nvmlDeviceGetMarginTemperature(self, handle: Any, ref: Any) -> int:
        info = _out(ref)
        if info.version != pynvml.nvmlMarginTemperature_v1:
            return ARGUMENT_VERSION_MISMATCH
        margin = self._dev(handle)["temperature"].get("margin")
        if margin is None:
            return NOT_SUPPORTED
        info.marginTemperature = margin
        return SUCCESS

    # -- field values: {(field id, scope id): (nvmlValueType_t, value)}
    def nvmlDeviceGetFieldValues(self, handle: Any, count: Any, ref: Any) -> int:
        fields = self._dev(handle)["fields"]
        values = _out(ref)
        for i in range(_num(count)):
            v = values[i]
            entry = fields.get((int(v.fieldId), int(v.scopeId)))
            if entry is None:
                v.nvmlReturn = NOT_SUPPORTED
                continue
            vtype, value = entry
            v.nvmlReturn = SUCCESS
            v.valueType = vtype
            if vtype == pynvml.NVML_VALUE_TYPE_DOUBLE:
                v.value.dVal = value
            elif vtype == pynvml.NVML_VALUE_TYPE_SIGNED_INT:
                v.value.siVal = value
            else:
                v.value.ullVal = value
        return SUCCESS

    # -- ECC
    def nvmlDeviceGetEccMode(self, handle: Any, cur: Any, pending: Any) -> int:
        _out(cur).value = 1
        _out(pending).value = 1
        return SUCCESS

    def nvmlDeviceGetTotalEccErrors(self, handle: Any, etype: Any, ctype: Any, ref: Any) -> int:
        return self._scalar(ref, self._dev(handle)["ecc_total"].get((_num(etype), _num(ctype))))

    def nvmlDeviceGetMemoryErrorCounter(self, handle: Any, etype: Any, ctype: Any, loc: Any, ref: Any) -> int:
        return self._scalar(ref, self._dev(handle)["ecc_location"].get((_num(etype), _num(ctype), _num(loc))))

    def nvmlDeviceGetSramEccErrorStatus(self, handle: Any, ref: Any) -> int:
        st = _out(ref)
        if st.version != pynvml.nvmlEccSramErrorStatus_v1:
            return ARGUMENT_VERSION_MISMATCH
        for name, value in self._dev(handle)["sram_status"].items():
            setattr(st, name, value)
        return SUCCESS

    def nvmlDeviceGetRepairStatus(self, handle: Any, ref: Any) -> int:
        st = _out(ref)
        if st.version != pynvml.nvmlRepairStatus_v1:
            return ARGUMENT_VERSION_MISMATCH
        st.bChannelRepairPending, st.bTpcRepairPending = self._dev(handle)["repair"]
        return SUCCESS

    def nvmlDeviceGetUnrepairableMemoryFlag_v1(self, handle: Any, ref: Any) -> int:
        st = _out(ref)
        if st.version != pynvml.nvmlUnrepairableMemory_v1:
            return ARGUMENT_VERSION_MISMATCH
        st.unrepairableMemory = self._dev(handle)["unrepairable"]
        return SUCCESS

    # -- remapped rows
    def nvmlDeviceGetRemappedRows(self, handle: Any, corr: Any, unc: Any, pending: Any, failure: Any) -> int:
        for ref, value in zip((corr, unc, pending, failure), self._dev(handle)["remapped_rows"]):
            _out(ref).value = value
        return SUCCESS

    def nvmlDeviceGetRowRemapperHistogram(self, handle: Any, ref: Any) -> int:
        hist = _out(ref)
        for name, value in self._dev(handle)["histogram"].items():
            setattr(hist, name, value)
        return SUCCESS

    # -- clocks
    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any, ref: Any) -> int:
        return self._scalar(ref, self._dev(handle)["clocks_event_reasons"])

    # -- NVLink
    def nvmlDeviceGetNvLinkState(self, handle: Any, link: Any, ref: Any) -> int:
        links = self._dev(handle)["nvlink_up"]
        if _num(link) >= len(links):
            return INVALID_ARGUMENT
        return self._scalar(ref, 1 if links[_num(link)] else 0)

    def nvmlDeviceGetNvLinkErrorCounter(self, handle: Any, link: Any, counter: Any, ref: Any) -> int:
        return NOT_SUPPORTED  # NVLink5 has no replay/recovery/CRC counters (gpu-knowledge-2026.md 3.1)

    # -- fabric: v3 (health summary) and v2 (health mask) as the driver tells them apart, by the version field
    def nvmlDeviceGetGpuFabricInfoV(self, handle: Any, ref: Any) -> int:
        info = _out(ref)
        fab = self._dev(handle)["fabric"]
        if info.version not in (pynvml.nvmlGpuFabricInfo_v2, pynvml.nvmlGpuFabricInfo_v3):
            return ARGUMENT_VERSION_MISMATCH
        info.state = fab["state"]
        info.status = fab["status"]
        info.cliqueId = fab["clique_id"]
        for i, b in enumerate(bytes.fromhex(fab["cluster_uuid"].replace("-", ""))):
            info.clusterUuid[i] = b
        info.healthMask = fab["health_mask"]
        if info.version == pynvml.nvmlGpuFabricInfo_v3:
            info.healthSummary = fab["health_summary"]
        return SUCCESS


def install(monkeypatch: Any, devices: list) -> FakeNvmlLib:
    """Make the real pynvml call a :class:`FakeNvmlLib` for ``devices`` (undone by ``monkeypatch``)."""
    lib = FakeNvmlLib(devices)
    monkeypatch.setattr(pynvml, "nvmlLib", lib)
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
    return lib
