# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The normalized GPU record of docs/facts.md (``gpu`` domain), shared by every GPU source (NVML, nvidia-smi XML and
text): the empty and unreadable records, recovery actions, clock event (throttle) names across the R535 rename,
and the record built from flattened nvidia-smi fields. ``_nvsmi_xml`` re-exports its public names.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    clean,
    normalize_bus_id,
    to_bool,
    to_float,
    to_int,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._xid_catalog import RECOVERY_ACTIONS

DOMAIN = "gpu"

#: Normalized clock event (throttle) names, keyed by the nvidia-smi XML suffix.
THROTTLE_NAMES = {
    "gpu_idle": "gpu_idle",
    "applications_clocks_setting": "applications_clocks_setting",
    "sw_power_cap": "sw_power_cap",
    "hw_slowdown": "hw_slowdown",
    "hw_thermal_slowdown": "hw_thermal_slowdown",
    "hw_power_brake_slowdown": "hw_power_brake_slowdown",
    "sync_boost": "sync_boost",
    "sw_thermal_slowdown": "sw_thermal_slowdown",
    "display_clocks_setting": "display_clock_setting",
    "display_clock_setting": "display_clock_setting",
}
#: Containers before (<= R530) and after (>= R535) the rename, with their leaf prefixes.
THROTTLE_CONTAINERS = (
    ("clocks_event_reasons/", "clocks_event_reason_"),
    ("clocks_throttle_reasons/", "clocks_throttle_reason_"),
)


def new_record(index: Optional[int] = None) -> Dict[str, Any]:
    """A GPU record of docs/facts.md with every value unknown."""
    return {
        "index": index,
        "readable": True,
        "error": None,
        "bus_id": None,
        "uuid": None,
        "serial": None,
        "name": None,
        "architecture": None,
        "vbios_version": None,
        "driver_version": None,
        "cuda_version": None,
        "persistence_mode": None,
        "mig_mode": {"current": None, "pending": None},
        "temperature": {
            "gpu_c": None,
            "memory_c": None,
            "slowdown_c": None,
            "shutdown_c": None,
            "max_operating_c": None,
            "memory_max_operating_c": None,
            "tlimit_c": None,
            "slowdown_tlimit_c": None,
            "shutdown_tlimit_c": None,
            "max_operating_tlimit_c": None,
        },
        "power": {
            "draw_w": None,
            "instant_w": None,
            "limit_w": None,
            "enforced_limit_w": None,
            "default_limit_w": None,
            "max_limit_w": None,
        },
        "clocks": {
            "graphics_mhz": None,
            "sm_mhz": None,
            "memory_mhz": None,
            "max_graphics_mhz": None,
            "max_sm_mhz": None,
            "max_memory_mhz": None,
        },
        "utilization": {"gpu_pct": None, "memory_pct": None},
        "memory": {"total_mib": None, "used_mib": None},
        "ecc": {
            "mode_current": None,
            "mode_pending": None,
            "layout": None,
            "volatile": {"corrected": None, "uncorrected": None},
            "aggregate": {"corrected": None, "uncorrected": None},
            "by_type": {"volatile": None, "aggregate": None},
            "sram_threshold_exceeded": None,
            "channel_repair_pending": None,
            "tpc_repair_pending": None,
            "unrepairable_memory": None,
        },
        "retired_pages": {"supported": False, "sbe": None, "dbe": None, "pending": None},
        "remapped_rows": {
            "supported": False,
            "correctable": None,
            "uncorrectable": None,
            "pending": None,
            "failure": None,
            "histogram": {"max": None, "high": None, "partial": None, "low": None, "none": None},
        },
        "throttle": {"active": [], "raw": {}, "counters_us": None},
        "pcie": {
            "gen_current": None,
            "gen_max": None,
            "gen_max_device": None,
            "gen_max_host": None,
            "width_current": None,
            "width_max": None,
            "replay_counter": None,
        },
        "nvlink": None,
        "c2c": None,
        "fabric": None,
        "reset_status": {"reset_required": None, "drain_and_reset_recommended": None},
        "recovery_action": None,
        "processes": [],
    }


def unreadable_record(bus_id: Optional[str], message: str, index: Optional[int] = None) -> Dict[str, Any]:
    """A GPU the driver cannot read: kept in the list, never dropped."""
    rec = new_record(index)
    rec["readable"] = False
    rec["error"] = message
    rec["bus_id"] = normalize_bus_id(bus_id) if bus_id else None
    return rec


def recovery_action(value: Any) -> Optional[str]:
    """nvidia-smi's ``GPU Recovery Action`` string or NVML's enum -> normalized name."""
    if isinstance(value, int) and not isinstance(value, bool):
        return RECOVERY_ACTIONS.get(value, "unknown_%d" % value)
    v = clean(value)
    if v is None:
        # "None" is a sentinel for clean(); here it is the real value "no action needed".
        return "none" if isinstance(value, str) and value.strip().lower() == "none" else None
    s = str(v).lower().replace("_", " ")
    for name, words in _RECOVERY_WORDS:
        if all(w in s for w in words):
            return name
    return s.replace(" ", "_")


#: nvidia-smi's recovery action words -> normalized name, first match wins ("drain and reset" before "drain").
_RECOVERY_WORDS = (
    ("drain_and_reset", ("drain", "reset")),
    ("drain_p2p", ("drain",)),
    ("recover_imex_domain", ("imex",)),
    ("bus_reset", ("bus", "reset")),
    ("system_reboot", ("system", "reboot")),
    ("node_reboot", ("reboot",)),
    ("gpu_reset", ("reset",)),
)


_POWER_PATHS = {
    key: tuple(c + n for c in ("gpu_power_readings/", "power_readings/") for n in names)
    for key, names in (
        ("draw_w", ("power_draw", "average_power_draw")),
        ("instant_w", ("instant_power_draw",)),
        ("limit_w", ("power_limit", "current_power_limit")),
        ("enforced_limit_w", ("enforced_power_limit", "current_power_limit")),
        ("default_limit_w", ("default_power_limit",)),
        ("max_limit_w", ("max_power_limit",)),
    )
}


def _first(f: Dict[str, Any], paths: Any) -> Optional[float]:
    for p in paths:
        if p in f:
            v = to_float(f[p])
            if v is not None:
                return v
    return None


def _sum(values: List[Optional[int]]) -> Optional[int]:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _ecc_counts(f: Dict[str, Any], scope: str) -> Dict[str, Optional[int]]:
    """Corrected/uncorrected totals for ``volatile`` or ``aggregate``, whatever the layout."""
    p = "ecc_errors/" + scope + "/"
    if p + "corrected" in f or p + "uncorrected" in f:  # NVML totals
        return {"corrected": to_int(f.get(p + "corrected")), "uncorrected": to_int(f.get(p + "uncorrected"))}
    if p + "single_bit/total" in f or p + "double_bit/total" in f:
        return {
            "corrected": to_int(f.get(p + "single_bit/total")),
            "uncorrected": to_int(f.get(p + "double_bit/total")),
        }
    corr = _sum([to_int(f.get(p + "sram_correctable")), to_int(f.get(p + "dram_correctable"))])
    unc = _sum(
        [
            to_int(f.get(p + "sram_uncorrectable")),
            to_int(f.get(p + "sram_uncorrectable_parity")),
            to_int(f.get(p + "sram_uncorrectable_secded")),
            to_int(f.get(p + "dram_uncorrectable")),
        ]
    )
    return {"corrected": corr, "uncorrected": unc}


def _ecc_by_type(f: Dict[str, Any], scope: str) -> Dict[str, Optional[int]]:
    """SRAM and DRAM counts apart (R510+ layouts); None where the driver reports totals only."""
    p = "ecc_errors/" + scope + "/"
    return {
        "sram_corrected": to_int(f.get(p + "sram_correctable")),
        "dram_corrected": to_int(f.get(p + "dram_correctable")),
        "sram_uncorrected": _sum(
            [
                to_int(f.get(p + "sram_uncorrectable")),
                to_int(f.get(p + "sram_uncorrectable_parity")),
                to_int(f.get(p + "sram_uncorrectable_secded")),
            ]
        ),
        "dram_uncorrected": to_int(f.get(p + "dram_uncorrectable")),
    }


def _ecc_layout(f: Dict[str, Any]) -> Optional[str]:
    if "ecc_errors/volatile/single_bit/total" in f or "ecc_errors/aggregate/single_bit/total" in f:
        return "legacy"
    if "ecc_errors/volatile/sram_uncorrectable_parity" in f or "ecc_errors/aggregate/sram_uncorrectable_parity" in f:
        return "sram_split"
    if "ecc_errors/volatile/sram_correctable" in f or "ecc_errors/aggregate/sram_correctable" in f:
        return "sram_dram"
    if "ecc_errors/volatile/corrected" in f:
        return "nvml"
    return None


def _bool_or_none(value: Any) -> Optional[bool]:
    return to_bool(value) if isinstance(value, (str, bool)) else (bool(value) if isinstance(value, int) else None)


def _temperature(t: Dict[str, Any], g: Callable[[str], Any]) -> None:
    t["gpu_c"] = to_float(g("temperature/gpu_temp"))
    t["memory_c"] = to_float(g("temperature/memory_temp"))
    t["shutdown_c"] = to_float(g("temperature/gpu_temp_max_threshold"))
    t["slowdown_c"] = to_float(g("temperature/gpu_temp_slow_threshold"))
    t["max_operating_c"] = to_float(g("temperature/gpu_temp_max_gpu_threshold"))
    t["memory_max_operating_c"] = to_float(g("temperature/gpu_temp_max_mem_threshold"))
    t["tlimit_c"] = to_float(g("temperature/gpu_temp_tlimit"))
    t["shutdown_tlimit_c"] = to_float(g("temperature/gpu_temp_max_tlimit_threshold"))
    t["slowdown_tlimit_c"] = to_float(g("temperature/gpu_temp_slow_tlimit_threshold"))
    t["max_operating_tlimit_c"] = to_float(g("temperature/gpu_temp_max_gpu_tlimit_threshold"))
    for k, v in t.items():
        if isinstance(v, float) and v.is_integer():
            t[k] = int(v)


def _ecc(ecc: Dict[str, Any], f: Dict[str, Any]) -> None:
    g = f.get
    ecc["mode_current"] = _bool_or_none(g("ecc_mode/current_ecc"))
    ecc["mode_pending"] = _bool_or_none(g("ecc_mode/pending_ecc"))
    ecc["layout"] = _ecc_layout(f)
    ecc["volatile"] = _ecc_counts(f, "volatile")
    ecc["aggregate"] = _ecc_counts(f, "aggregate")
    ecc["by_type"] = {scope: _ecc_by_type(f, scope) for scope in ("volatile", "aggregate")}
    ecc["sram_threshold_exceeded"] = _bool_or_none(g("ecc_errors/aggregate/sram_threshold_exceeded"))
    ecc["channel_repair_pending"] = _bool_or_none(g("ecc_errors/channel_repair_pending"))
    ecc["tpc_repair_pending"] = _bool_or_none(g("ecc_errors/tpc_repair_pending"))
    ecc["unrepairable_memory"] = _bool_or_none(g("ecc_errors/unrepairable_memory"))


def _pages(rp: Dict[str, Any], rr: Dict[str, Any], g: Callable[[str], Any]) -> None:
    """Retired pages (before Ampere) and remapped rows (Ampere and later)."""
    rp["sbe"] = to_int(g("retired_pages/multiple_single_bit_retirement/retired_count"))
    rp["dbe"] = to_int(g("retired_pages/double_bit_retirement/retired_count"))
    pend = [_bool_or_none(g("retired_pages/pending_retirement")), _bool_or_none(g("retired_pages/pending_blacklist"))]
    rp["pending"] = True if True in pend else (False if False in pend else None)
    rp["supported"] = rp["sbe"] is not None or rp["dbe"] is not None or rp["pending"] is not None

    rr["correctable"] = to_int(g("remapped_rows/remapped_row_corr"))
    rr["uncorrectable"] = to_int(g("remapped_rows/remapped_row_unc"))
    rr["pending"] = _bool_or_none(g("remapped_rows/remapped_row_pending"))
    rr["failure"] = _bool_or_none(g("remapped_rows/remapped_row_failure"))
    h = "remapped_rows/row_remapper_histogram/row_remapper_histogram_"
    rr["histogram"] = {k: to_int(g(h + k)) for k in ("max", "high", "partial", "low", "none")}
    rr["supported"] = any(rr[k] is not None for k in ("correctable", "uncorrectable", "pending", "failure"))


def _throttle(th: Dict[str, Any], f: Dict[str, Any]) -> None:
    """Clock event reasons, named alike before (<= R530) and after (>= R535) the rename."""
    for container, prefix in THROTTLE_CONTAINERS:
        plen = len(container)
        for path, value in f.items():
            if not path.startswith(container):
                continue
            leaf = path[plen:]
            th["raw"][leaf] = value if not isinstance(value, str) else value.strip()
            if leaf.startswith(prefix):
                name = THROTTLE_NAMES.get(leaf[len(prefix) :])
                if name and isinstance(value, str) and value.strip().lower() == "active" and name not in th["active"]:
                    th["active"].append(name)


#: cumulative clock event counters (R590+ XML/text, NVML FI 74/76/269/270/271): XML leaf suffix -> normalized name
THROTTLE_COUNTERS = {
    "sw_power_cap": "sw_power_cap",
    "sync_boost": "sync_boost",
    "sw_therm_slowdown": "sw_thermal_slowdown",
    "hw_therm_slowdown": "hw_thermal_slowdown",
    "hw_power_brake": "hw_power_brake_slowdown",
}
#: fabric health rows (nvidia-smi ``Fabric > Health``; NVML healthMask 2-bit fields) -> normalized name
FABRIC_HEALTH = {
    "bandwidth": "degraded_bandwidth",
    "route_recovery_in_progress": "route_recovery",
    "route_unhealthy": "route_unhealthy",
    "access_timeout_recovery": "access_timeout_recovery",
}
#: values printed for a set / clear fabric health flag ("Degraded" / "Full" for the bandwidth row)
_FLAG_SET = frozenset(("true", "yes", "degraded"))
_FLAG_CLEAR = frozenset(("false", "no", "full"))


def _flag(value: Any) -> Optional[bool]:
    if isinstance(value, bool):
        return value
    v = clean(value)
    if v is None:
        return None
    s = str(v).strip().lower()
    return True if s in _FLAG_SET else (False if s in _FLAG_CLEAR else None)


def _fabric(g: Callable[[str], Any]) -> Optional[Dict[str, Any]]:
    """NVLink fabric state with its health flags (NVL72 / NVSwitch systems); None when nothing is reported."""
    fab: Dict[str, Any] = {
        "state": clean(g("fabric/state")),
        "status": clean(g("fabric/status")),
        "clique_id": clean(g("fabric/cliqueId")),
        "cluster_uuid": clean(g("fabric/clusterUuid")),
    }
    if not any(v is not None for v in fab.values()):
        return None
    health: Dict[str, Any] = {name: _flag(g("fabric/health/" + leaf)) for leaf, name in FABRIC_HEALTH.items()}
    summary = clean(g("fabric/health/summary"))
    health["summary"] = str(summary).strip().lower().replace(" ", "_") if summary is not None else None
    conf = g("fabric/health/incorrect_configuration")
    conf = clean(conf) if not (isinstance(conf, str) and conf.strip().lower() == "none") else "none"
    health["incorrect_configuration"] = str(conf).strip().lower().replace(" ", "_") if conf is not None else None
    fab["health"] = health
    return fab


def _throttle_counters(f: Dict[str, Any]) -> Optional[Dict[str, int]]:
    """Cumulative clock event time in microseconds (``"4251825415 us"``); None when the driver prints none."""
    out: Dict[str, int] = {}
    for leaf, name in THROTTLE_COUNTERS.items():
        v = to_int(f.get("clocks_event_reasons_counters/clocks_event_reasons_counters_" + leaf))
        if v is not None:
            out[name] = v
    return out or None


def _pcie(pc: Dict[str, Any], g: Callable[[str], Any]) -> None:
    lp = "pci/pci_gpu_link_info/"
    pc["gen_current"] = to_int(g(lp + "pcie_gen/current_link_gen"))
    pc["gen_max"] = to_int(g(lp + "pcie_gen/max_link_gen"))
    pc["gen_max_device"] = to_int(g(lp + "pcie_gen/max_device_link_gen"))
    pc["gen_max_host"] = to_int(g(lp + "pcie_gen/max_host_link_gen"))
    pc["width_current"] = to_int(g(lp + "link_widths/current_link_width"))
    pc["width_max"] = to_int(g(lp + "link_widths/max_link_width"))
    pc["replay_counter"] = to_int(g("pci/replay_counter"))


def record_from_fields(
    f: Dict[str, Any],
    *,
    index: Optional[int] = None,
    bus_id: Optional[str] = None,
    driver_version: Optional[str] = None,
    cuda_version: Optional[str] = None,
    processes: Optional[List[Dict[str, Any]]] = None,
) -> Dict[str, Any]:
    """The normalized GPU record from XML-path fields (see the module docstring)."""
    g = f.get
    rec = new_record(index)
    rec["bus_id"] = normalize_bus_id(g("pci/pci_bus_id")) or normalize_bus_id(bus_id)
    rec["uuid"] = clean(g("uuid"))
    rec["serial"] = clean(g("serial"))
    rec["name"] = clean(g("product_name"))
    rec["architecture"] = clean(g("product_architecture"))
    rec["vbios_version"] = clean(g("vbios_version"))
    rec["driver_version"] = clean(driver_version)
    rec["cuda_version"] = clean(cuda_version)
    rec["persistence_mode"] = _bool_or_none(g("persistence_mode"))
    rec["mig_mode"] = {
        "current": _bool_or_none(g("mig_mode/current_mig")),
        "pending": _bool_or_none(g("mig_mode/pending_mig")),
    }

    _temperature(rec["temperature"], g)

    # Power: <power_readings> (<= R525), <gpu_power_readings> (R530+), average/instant split (~R570+).
    rec["power"] = {
        "draw_w": _first(f, _POWER_PATHS["draw_w"]),
        "instant_w": _first(f, _POWER_PATHS["instant_w"]),
        "limit_w": _first(f, _POWER_PATHS["limit_w"]),
        "enforced_limit_w": _first(f, _POWER_PATHS["enforced_limit_w"]),
        "default_limit_w": _first(f, _POWER_PATHS["default_limit_w"]),
        "max_limit_w": _first(f, _POWER_PATHS["max_limit_w"]),
    }

    ck = rec["clocks"]
    for key, path in (
        ("graphics_mhz", "clocks/graphics_clock"),
        ("sm_mhz", "clocks/sm_clock"),
        ("memory_mhz", "clocks/mem_clock"),
        ("max_graphics_mhz", "max_clocks/graphics_clock"),
        ("max_sm_mhz", "max_clocks/sm_clock"),
        ("max_memory_mhz", "max_clocks/mem_clock"),
    ):
        ck[key] = to_int(g(path))
    rec["utilization"] = {
        "gpu_pct": to_int(g("utilization/gpu_util")),
        "memory_pct": to_int(g("utilization/memory_util")),
    }
    rec["memory"] = {"total_mib": to_int(g("fb_memory_usage/total")), "used_mib": to_int(g("fb_memory_usage/used"))}

    _ecc(rec["ecc"], f)

    _pages(rec["retired_pages"], rec["remapped_rows"], g)

    _throttle(rec["throttle"], f)
    rec["throttle"]["counters_us"] = _throttle_counters(f)

    _pcie(rec["pcie"], g)

    rec["fabric"] = _fabric(g)
    rec["c2c"] = f.get("c2c") if isinstance(f.get("c2c"), dict) else None
    rec["reset_status"] = {
        "reset_required": _bool_or_none(g("gpu_reset_status/reset_required")),
        "drain_and_reset_recommended": _bool_or_none(g("gpu_reset_status/drain_and_reset_recommended")),
    }
    rec["recovery_action"] = recovery_action(g("gpu_recovery_action"))
    rec["processes"] = processes or []
    return rec
