# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# ruff: noqa: UP009, UP031 - the house header and %-formatting (Python 3.8 managed nodes) are intended
"""``nvidia-smi -q`` (text) parser.

The text view carries the same data as ``-q -x``; each known ``Key : Value`` line is mapped to the
XML element path it stands for, and :func:`_nvsmi_xml.record_from_fields` builds the record, so
text and XML give the same normalized GPU. Nesting is by indentation (any width: the key column is
at 43 on R535/R560 and 56 on R590+; only the indent of the key matters). Unknown sections and
keys are skipped. Handles the ``-d`` filtered form, MIG device blocks (their ECC is not the
device's), error lines in place of a GPU, and output cut mid-GPU.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, Records, clean, to_int
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.nvsmi_xml import (
    DEVICE_ERROR_RE,
    DOMAIN,
    empty_result,
    finish,
    record_from_fields,
    scan_messages,
)

PARSER = "nvsmi_text"

_THROTTLE_KEYS = {
    "Idle": "gpu_idle",
    "Applications Clocks Setting": "applications_clocks_setting",
    "SW Power Cap": "sw_power_cap",
    "HW Slowdown": "hw_slowdown",
    "HW Thermal Slowdown": "hw_thermal_slowdown",
    "HW Power Brake Slowdown": "hw_power_brake_slowdown",
    "Sync Boost": "sync_boost",
    "SW Thermal Slowdown": "sw_thermal_slowdown",
    "Display Clock Setting": "display_clocks_setting",
}
_ECC_FLAT = {
    "SRAM Correctable": "sram_correctable",
    "SRAM Uncorrectable": "sram_uncorrectable",
    "SRAM Uncorrectable Parity": "sram_uncorrectable_parity",
    "SRAM Uncorrectable SEC-DED": "sram_uncorrectable_secded",
    "DRAM Correctable": "dram_correctable",
    "DRAM Uncorrectable": "dram_uncorrectable",
    "SRAM Threshold Exceeded": "sram_threshold_exceeded",
}
_ECC_LEGACY = {
    "Device Memory": "device_memory",
    "Register File": "register_file",
    "L1 Cache": "l1_cache",
    "L2 Cache": "l2_cache",
    "Texture Memory": "texture_memory",
    "Texture Shared": "texture_shm",
    "CBU": "cbu",
    "Total": "total",
}
_POWER = {
    "Power Draw": "power_draw",
    "Average Power Draw": "average_power_draw",
    "Instantaneous Power Draw": "instant_power_draw",
    "Power Limit": "power_limit",
    "Enforced Power Limit": "enforced_power_limit",
    "Current Power Limit": "current_power_limit",
    "Requested Power Limit": "requested_power_limit",
    "Default Power Limit": "default_power_limit",
    "Min Power Limit": "min_power_limit",
    "Max Power Limit": "max_power_limit",
}
_CLOCKS = {"Graphics": "graphics_clock", "SM": "sm_clock", "Memory": "mem_clock", "Video": "video_clock"}

#: (parent section path, header) -> section path. "" is the GPU block itself.
SECTIONS: Dict[Tuple[str, str], str] = {
    ("", "MIG Mode"): "mig_mode",
    ("", "GPU Reset Status"): "gpu_reset_status",
    ("", "PCI"): "pci",
    ("pci", "GPU Link Info"): "pci/pci_gpu_link_info",
    ("pci/pci_gpu_link_info", "PCIe Generation"): "pci/pci_gpu_link_info/pcie_gen",
    ("pci/pci_gpu_link_info", "Link Width"): "pci/pci_gpu_link_info/link_widths",
    ("", "Clocks Event Reasons"): "clocks_event_reasons",
    ("", "Clocks Throttle Reasons"): "clocks_throttle_reasons",
    ("", "FB Memory Usage"): "fb_memory_usage",
    ("", "Utilization"): "utilization",
    ("", "ECC Mode"): "ecc_mode",
    ("", "ECC Errors"): "ecc_errors",
    ("ecc_errors", "Volatile"): "ecc_errors/volatile",
    ("ecc_errors", "Aggregate"): "ecc_errors/aggregate",
    ("ecc_errors/volatile", "Single Bit"): "ecc_errors/volatile/single_bit",
    ("ecc_errors/volatile", "Double Bit"): "ecc_errors/volatile/double_bit",
    ("ecc_errors/aggregate", "Single Bit"): "ecc_errors/aggregate/single_bit",
    ("ecc_errors/aggregate", "Double Bit"): "ecc_errors/aggregate/double_bit",
    ("", "Retired Pages"): "retired_pages",
    ("", "Remapped Rows"): "remapped_rows",
    ("remapped_rows", "Bank Remap Availability Histogram"): "remapped_rows/row_remapper_histogram",
    ("", "Temperature"): "temperature",
    ("", "GPU Power Readings"): "gpu_power_readings",
    ("", "Power Readings"): "power_readings",
    ("", "Clocks"): "clocks",
    ("", "Max Clocks"): "max_clocks",
    ("", "Fabric"): "fabric",
    ("fabric", "Health"): "fabric/health",
    ("", "Clocks Event Reasons Counters"): "clocks_event_reasons_counters",
    ("", "Processes"): "processes",
}

#: (section path, key) -> XML element path of the value.
KEYS: Dict[Tuple[str, str], str] = {
    ("", "Product Name"): "product_name",
    ("", "Product Architecture"): "product_architecture",
    ("", "Persistence Mode"): "persistence_mode",
    ("", "Serial Number"): "serial",
    ("", "GPU UUID"): "uuid",
    ("", "Minor Number"): "minor_number",
    ("", "VBIOS Version"): "vbios_version",
    ("", "GPU Recovery Action"): "gpu_recovery_action",
    ("", "Remapped Rows"): "remapped_rows",
    ("mig_mode", "Current"): "mig_mode/current_mig",
    ("mig_mode", "Pending"): "mig_mode/pending_mig",
    ("gpu_reset_status", "Reset Required"): "gpu_reset_status/reset_required",
    ("gpu_reset_status", "Drain and Reset Recommended"): "gpu_reset_status/drain_and_reset_recommended",
    ("pci", "Bus Id"): "pci/pci_bus_id",
    ("pci", "Replays Since Reset"): "pci/replay_counter",
    ("pci", "Replay Number Rollovers"): "pci/replay_rollover_counter",
    ("pci/pci_gpu_link_info/pcie_gen", "Max"): "pci/pci_gpu_link_info/pcie_gen/max_link_gen",
    ("pci/pci_gpu_link_info/pcie_gen", "Current"): "pci/pci_gpu_link_info/pcie_gen/current_link_gen",
    ("pci/pci_gpu_link_info/pcie_gen", "Device Current"): "pci/pci_gpu_link_info/pcie_gen/device_current_link_gen",
    ("pci/pci_gpu_link_info/pcie_gen", "Device Max"): "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen",
    ("pci/pci_gpu_link_info/pcie_gen", "Host Max"): "pci/pci_gpu_link_info/pcie_gen/max_host_link_gen",
    ("pci/pci_gpu_link_info/link_widths", "Max"): "pci/pci_gpu_link_info/link_widths/max_link_width",
    ("pci/pci_gpu_link_info/link_widths", "Current"): "pci/pci_gpu_link_info/link_widths/current_link_width",
    ("fb_memory_usage", "Total"): "fb_memory_usage/total",
    ("fb_memory_usage", "Used"): "fb_memory_usage/used",
    ("fb_memory_usage", "Free"): "fb_memory_usage/free",
    ("utilization", "Gpu"): "utilization/gpu_util",
    ("utilization", "GPU"): "utilization/gpu_util",
    ("utilization", "Memory"): "utilization/memory_util",
    ("ecc_mode", "Current"): "ecc_mode/current_ecc",
    ("ecc_mode", "Pending"): "ecc_mode/pending_ecc",
    ("ecc_errors", "Channel Repair Pending"): "ecc_errors/channel_repair_pending",
    ("ecc_errors", "TPC Repair Pending"): "ecc_errors/tpc_repair_pending",
    ("ecc_errors", "Unrepairable Memory"): "ecc_errors/unrepairable_memory",
    ("retired_pages", "Single Bit ECC"): "retired_pages/multiple_single_bit_retirement/retired_count",
    ("retired_pages", "Double Bit ECC"): "retired_pages/double_bit_retirement/retired_count",
    ("retired_pages", "Pending Page Blacklist"): "retired_pages/pending_blacklist",
    ("retired_pages", "Pending Page Retirement"): "retired_pages/pending_retirement",
    ("remapped_rows", "Correctable Error"): "remapped_rows/remapped_row_corr",
    ("remapped_rows", "Uncorrectable Error"): "remapped_rows/remapped_row_unc",
    ("remapped_rows", "Pending"): "remapped_rows/remapped_row_pending",
    ("remapped_rows", "Remapping Failure Occurred"): "remapped_rows/remapped_row_failure",
    ("temperature", "GPU Current Temp"): "temperature/gpu_temp",
    ("temperature", "GPU T.Limit Temp"): "temperature/gpu_temp_tlimit",
    ("temperature", "GPU Shutdown Temp"): "temperature/gpu_temp_max_threshold",
    ("temperature", "GPU Slowdown Temp"): "temperature/gpu_temp_slow_threshold",
    ("temperature", "GPU Max Operating Temp"): "temperature/gpu_temp_max_gpu_threshold",
    ("temperature", "GPU Shutdown T.Limit Temp"): "temperature/gpu_temp_max_tlimit_threshold",
    ("temperature", "GPU Slowdown T.Limit Temp"): "temperature/gpu_temp_slow_tlimit_threshold",
    ("temperature", "GPU Max Operating T.Limit Temp"): "temperature/gpu_temp_max_gpu_tlimit_threshold",
    ("temperature", "GPU Target Temperature"): "temperature/gpu_target_temperature",
    ("temperature", "Memory Current Temp"): "temperature/memory_temp",
    ("temperature", "Memory Max Operating Temp"): "temperature/gpu_temp_max_mem_threshold",
    ("temperature", "Memory Max Operating T.Limit Temp"): "temperature/gpu_temp_max_mem_tlimit_threshold",
    ("fabric", "State"): "fabric/state",
    ("fabric", "Status"): "fabric/status",
    ("fabric", "CliqueId"): "fabric/cliqueId",
    ("fabric", "ClusterUUID"): "fabric/clusterUuid",
    ("fabric/health", "Summary"): "fabric/health/summary",
    ("fabric/health", "Bandwidth"): "fabric/health/bandwidth",
    ("fabric/health", "Route Recovery in progress"): "fabric/health/route_recovery_in_progress",
    ("fabric/health", "Route Unhealthy"): "fabric/health/route_unhealthy",
    ("fabric/health", "Access Timeout Recovery"): "fabric/health/access_timeout_recovery",
    ("fabric/health", "Incorrect Configuration"): "fabric/health/incorrect_configuration",
}
#: ``Clocks Event Reasons Counters`` rows (R590+, microseconds) -> the XML leaf suffix
_THROTTLE_COUNTER_KEYS = {
    "SW Power Capping": "sw_power_cap",
    "Sync Boost": "sync_boost",
    "SW Thermal Slowdown": "sw_therm_slowdown",
    "HW Thermal Slowdown": "hw_therm_slowdown",
    "HW Power Braking": "hw_power_brake",
}
for _k, _v in _THROTTLE_COUNTER_KEYS.items():
    KEYS[("clocks_event_reasons_counters", _k)] = "clocks_event_reasons_counters/clocks_event_reasons_counters_" + _v
for _k, _v in _THROTTLE_KEYS.items():
    KEYS[("clocks_event_reasons", _k)] = "clocks_event_reasons/clocks_event_reason_" + _v
    KEYS[("clocks_throttle_reasons", _k)] = "clocks_throttle_reasons/clocks_throttle_reason_" + _v
for _scope in ("volatile", "aggregate"):
    for _k, _v in _ECC_FLAT.items():
        KEYS[("ecc_errors/" + _scope, _k)] = "ecc_errors/%s/%s" % (_scope, _v)
    for _bits in ("single_bit", "double_bit"):
        for _k, _v in _ECC_LEGACY.items():
            KEYS[("ecc_errors/%s/%s" % (_scope, _bits), _k)] = "ecc_errors/%s/%s/%s" % (_scope, _bits, _v)
for _sect in ("gpu_power_readings", "power_readings"):
    for _k, _v in _POWER.items():
        KEYS[(_sect, _k)] = _sect + "/" + _v
for _sect in ("clocks", "max_clocks"):
    for _k, _v in _CLOCKS.items():
        KEYS[(_sect, _k)] = _sect + "/" + _v
for _k in ("Max", "High", "Partial", "Low", "None"):
    KEYS[("remapped_rows/row_remapper_histogram", _k)] = (
        "remapped_rows/row_remapper_histogram/row_remapper_histogram_" + _k.lower()
    )

#: Top-level keys that close a complete (unfiltered) GPU block: the last sections nvidia-smi prints.
_LAST_SECTIONS = ("Processes", "Capabilities")


class _Block:
    __slots__ = ("bus_id", "complete", "fields", "line", "procs", "product")

    def __init__(self, bus_id: Optional[str], line: int) -> None:
        self.bus_id = bus_id
        self.line = line
        self.fields: Dict[str, Any] = {}
        self.procs: List[Dict[str, Any]] = []
        self.complete = False
        self.product = False


def _process_item(block: _Block, key: str, value: str) -> None:
    if key == "Process ID":
        block.procs.append({"pid": to_int(value), "name": None, "type": None, "used_mib": None})
    elif block.procs:
        cur = block.procs[-1]
        if key == "Name":
            cur["name"] = clean(value)
        elif key == "Type":
            cur["type"] = clean(value)
        elif key == "Used GPU Memory":
            cur["used_mib"] = to_int(value)


#: Header keys of the text (indent 0) kept in the result: result key and converter.
_HEADER = {
    "Driver Version": ("driver_version", clean),
    "CUDA Version": ("cuda_version", clean),
    "Attached GPUs": ("count", to_int),
    "Timestamp": ("timestamp", clean),
}


class _Text:
    """The state of one ``nvidia-smi -q`` text read line by line: GPU blocks, header values, error lines."""

    def __init__(self, result: Dict[str, Any]) -> None:
        self.result = result
        self.blocks: List[_Block] = []
        self.block: Optional[_Block] = None
        # Stack of (indent, section path or None for an unknown section).
        self.stack: List[Tuple[int, Optional[str]]] = []
        self.message_lines: List[str] = []
        self.saw_header = False

    def line(self, line: str, lineno: int) -> None:
        s = line.strip()
        if not s:
            return
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            self.top(s, lineno)
        elif s.startswith("Unable to determine") or self.block is None:
            # An indented error line (a GPU block holding only the driver's error), or noise outside a block.
            if "Unable to determine" in s or "Unknown Error" in s:
                self.message_lines.append(s)
        else:
            self.inner(self.block, s, indent)

    def top(self, s: str, lineno: int) -> None:
        self.stack = []
        if s.startswith("GPU ") and " : " not in s:
            self.block = _Block(s[4:].strip(), lineno)
            self.blocks.append(self.block)
            return
        key, sep, value = s.partition(" : ")
        if sep:
            self.saw_header = True
            if key.strip() in _HEADER:
                name, convert = _HEADER[key.strip()]
                self.result[name] = convert(value)
            return
        if s.startswith("=") and "NVSMI LOG" in s:
            self.saw_header = True
            return
        # An error line instead of a GPU block; it also ends the current block.
        self.message_lines.append(s)
        if DEVICE_ERROR_RE.search(s):
            self.block = None

    def inner(self, block: _Block, s: str, indent: int) -> None:
        stack = self.stack
        while stack and stack[-1][0] >= indent:
            stack.pop()
        section = stack[-1][1] if stack else ""
        key, sep, value = s.partition(" : ")
        if not sep and s.endswith(" :"):
            key, sep, value = s[:-2], " : ", ""
        if not sep:
            # A section header.
            stack.append((indent, None if section is None else SECTIONS.get((section, s))))
            if section == "" and s in _LAST_SECTIONS:
                block.complete = True
        elif section == "processes":
            _process_item(block, key.rstrip(), value)
        elif section is not None:
            self.value(block, section, key.rstrip(), value)

    @staticmethod
    def value(block: _Block, section: str, key: str, value: str) -> None:
        path = KEYS.get((section, key))
        if path is not None:
            block.fields[path] = value.strip()
            if path == "product_name":
                block.product = True
        elif section == "" and key in _LAST_SECTIONS:
            block.complete = True


def parse(text: str, source: Optional[str] = None) -> Dict[str, Any]:
    """Parse ``nvidia-smi -q`` output into ``{source, driver_version, cuda_version, count, gpus, errors}``.

    Raises ParseError for input that is not nvidia-smi text at all, and for output cut inside a GPU
    block; the error's ``partial`` then carries everything parsed (the cut GPU included).
    """
    if not isinstance(text, str):
        raise ParseError("input is not text", PARSER, source)
    result = empty_result(source)
    state = _Text(result)
    for lineno, line in enumerate(text.splitlines(), 1):
        state.line(line, lineno)
    blocks = state.blocks
    if not blocks and not state.saw_header:
        messages = scan_messages(state.message_lines, source)
        if messages["unreadable"] or messages["tool_errors"]:
            return finish(result, messages, source, PARSER)
        if not text.strip():
            raise ParseError("empty output", PARSER, source, 1)
        raise ParseError("not nvidia-smi -q output: %r" % text.strip()[:120], PARSER, source, 1)
    records = Records(PARSER, source, DOMAIN, result["errors"])
    for i, b in enumerate(blocks):
        with records.at(b.line):  # one GPU block that cannot be normalized costs that GPU only
            rec = record_from_fields(b.fields, index=i, bus_id=b.bus_id, processes=b.procs)
            result["gpus"].append(rec)
    out = finish(result, scan_messages(state.message_lines, source), source, PARSER)
    cut = [b for b in blocks if b.product and not b.complete]
    if cut:
        b = cut[-1]
        raise ParseError(
            "truncated nvidia-smi -q output: GPU %s (line %d) ends before its Processes section" % (b.bus_id, b.line),
            PARSER,
            source,
            b.line,
            partial=out,
        )
    return out
