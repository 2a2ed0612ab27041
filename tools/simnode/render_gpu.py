"""nvidia-smi renderers: state -> the exact text real nvidia-smi prints.

`-q -x` and `-q` are rendered by mutating real captured outputs kept in templates/ (see the .source.txt
sidecars): the element/key order, indentation and sentinel values are the real tool's; only the values
that the state knows about are replaced (render_gpu_xml, render_gpu_text). This module answers -L,
--query-gpu and nvlink, and re-exports the renderers and the shared names (render_gpu_base) under their old
names, so `render_gpu.nvidia_smi_xml`, `render_gpu.RC_GPU_LOST` and the rest keep working.
"""

from __future__ import annotations

from simnode.render_gpu_base import (
    RC_GPU_LOST,
    RC_INVALID_ARG,
    RECOVERY_TEXT,
    TEMPLATES,
    THROTTLE_BITS,
    THROTTLE_NAMES,
    THROTTLE_TEXT,
    TXT_535,
    TXT_590,
    XML_V12,
    XML_V13,
    _ecc_totals,
    _yn,
    active_throttle,
    driver_major,
    lost_gpus,
    lost_message,
    xml_layout,
)
from simnode.render_gpu_text import nvidia_smi_text
from simnode.render_gpu_xml import nvidia_smi_xml

__all__ = [
    "RC_GPU_LOST",
    "RC_INVALID_ARG",
    "RECOVERY_TEXT",
    "TEMPLATES",
    "THROTTLE_BITS",
    "THROTTLE_NAMES",
    "THROTTLE_TEXT",
    "TXT_535",
    "TXT_590",
    "XML_V12",
    "XML_V13",
    "active_throttle",
    "default_probe",
    "driver_major",
    "lost_gpus",
    "lost_message",
    "nvidia_smi_list",
    "nvidia_smi_query",
    "nvidia_smi_text",
    "nvidia_smi_xml",
    "nvlink_errors",
    "nvlink_status",
    "xml_layout",
]


# --------------------------------------------------------------------------------------------------
# -L, --query-gpu, nvlink


def nvidia_smi_list(state: dict) -> str:
    return "".join("GPU %d: %s (UUID: %s)\n" % (g["index"], g["name"], g["uuid"]) for g in state["gpus"])


def _csv_field(g: dict, state: dict, field: str):
    """(value, unit) for one --query-gpu field, or KeyError when the field is unknown."""
    e_v = _ecc_totals(g, "volatile")
    e_a = _ecc_totals(g, "aggregate")
    act = active_throttle(g)
    mask = sum(THROTTLE_BITS[n] for n in act if n in THROTTLE_BITS)
    table = {
        "index": (str(g["index"]), None),
        "count": (str(len(state["gpus"])), None),
        "name": (g["name"], None),
        "gpu_name": (g["name"], None),
        "uuid": (g["uuid"], None),
        "gpu_uuid": (g["uuid"], None),
        "serial": (g["serial"], None),
        "pci.bus_id": (g["bus_id"], None),
        "gpu_bus_id": (g["bus_id"], None),
        "driver_version": (state["driver_version"], None),
        "vbios_version": (g["vbios"], None),
        "persistence_mode": (
            "Enabled" if state["services"].get("nvidia-persistenced", {}).get("running") else "Disabled",
            None,
        ),
        "pstate": (g.get("pstate", "P0"), None),
        "temperature.gpu": (str(g["temp_c"]), None),
        "temperature.memory": (str(g["mem_temp_c"]), None),
        "power.draw": ("%.2f" % g["power_draw_w"], "W"),
        "power.limit": ("%.2f" % g["power_limit_w"], "W"),
        "enforced.power.limit": ("%.2f" % g["power_limit_w"], "W"),
        "power.default_limit": ("700.00", "W"),
        "power.max_limit": ("700.00", "W"),
        "utilization.gpu": (str(g["util_pct"]), "%"),
        "utilization.memory": (str(g["mem_util_pct"]), "%"),
        "memory.total": ("81559", "MiB"),
        "memory.used": (str(g["mem_used_mib"]), "MiB"),
        "memory.free": (str(81559 - 551 - g["mem_used_mib"]), "MiB"),
        "clocks.sm": (str(g["clocks"]["sm_mhz"]), "MHz"),
        "clocks.gr": (str(g["clocks"]["graphics_mhz"]), "MHz"),
        "clocks.mem": (str(g["clocks"]["memory_mhz"]), "MHz"),
        "clocks.max.sm": ("1980", "MHz"),
        "clocks.max.gr": ("1980", "MHz"),
        "clocks.max.mem": ("2619", "MHz"),
        "pcie.link.gen.current": (str(g["pcie"]["gen_cur"]), None),
        "pcie.link.gen.gpucurrent": (str(g["pcie"]["gen_cur"]), None),
        "pcie.link.gen.max": (str(g["pcie"]["gen_max"]), None),
        "pcie.link.gen.gpumax": (str(g["pcie"]["gen_max"]), None),
        "pcie.link.gen.hostmax": (str(g["pcie"]["gen_max"]), None),
        "pcie.link.width.current": (str(g["pcie"]["width_cur"]), None),
        "pcie.link.width.max": (str(g["pcie"]["width_max"]), None),
        "ecc.mode.current": ("Enabled", None),
        "ecc.errors.corrected.volatile.total": (str(e_v[0]), None),
        "ecc.errors.uncorrected.volatile.total": (str(e_v[1]), None),
        "ecc.errors.corrected.aggregate.total": (str(e_a[0]), None),
        "ecc.errors.uncorrected.aggregate.total": (str(e_a[1]), None),
        "retired_pages.single_bit_ecc.count": ("[N/A]", None),
        "retired_pages.double_bit.count": ("[N/A]", None),
        "retired_pages.pending": ("[N/A]", None),
        "remapped_rows.correctable": (str(g["remap"]["corr"]), None),
        "remapped_rows.uncorrectable": (str(g["remap"]["unc"]), None),
        "remapped_rows.pending": (_yn(g["remap"]["pending"]), None),
        "remapped_rows.failure": (_yn(g["remap"]["failure"]), None),
        "fabric.state": (g["fabric"]["state"], None),
        "fabric.status": (g["fabric"]["status"], None),
        "clocks_event_reasons.active": ("0x%016X" % mask, None),
        "clocks_throttle_reasons.active": ("0x%016X" % mask, None),
        "clocks_event_reasons.supported": ("0x00000000000001FF", None),
    }
    if driver_major(state) >= 550:
        table["gpu_recovery_action"] = (RECOVERY_TEXT.get(g.get("recovery_action") or "none", "None"), None)
    for name in THROTTLE_BITS:
        val = ("Active" if name in act else "Not Active", None)
        tag = "display_clocks_setting" if name == "display_clock_setting" else name
        table["clocks_event_reasons." + tag] = val
        table["clocks_throttle_reasons." + tag] = val
    return table[field]


def nvidia_smi_query(state: dict, fields: list, fmt: str = "csv") -> tuple:
    """`--query-gpu=... --format=csv[,noheader][,nounits]` -> (stdout, rc)."""
    opts = [o.strip() for o in fmt.split(",")]
    if "csv" not in opts:
        return '"%s" is not a valid format.\n' % fmt, RC_INVALID_ARG
    g0 = state["gpus"][0] if state["gpus"] else None
    for f in fields:
        try:
            if g0 is not None:
                _csv_field(g0, state, f)
            else:
                _csv_field(default_probe(), state, f)
        except KeyError:
            return 'Field "%s" is not a valid field to query.\n\n' % f, RC_INVALID_ARG
    lines = []
    if "noheader" not in opts:
        hdr = []
        for f in fields:
            unit = _csv_field(g0 or default_probe(), state, f)[1]
            hdr.append(f if unit is None or "nounits" in opts else "%s [%s]" % (f, unit))
        lines.append(", ".join(hdr))
    for g in state["gpus"]:
        row = []
        for f in fields:
            val, unit = _csv_field(g, state, f)
            row.append(val if unit is None or "nounits" in opts else "%s %s" % (val, unit))
        lines.append(", ".join(row))
    return "\n".join(lines) + "\n", 0


def default_probe() -> dict:
    import random

    from simnode.state import default_gpu

    return default_gpu(0, random.Random(0), "")


def nvlink_status(state: dict) -> str:
    out = []
    for g in state["gpus"]:
        out.append("GPU %d: %s (UUID: %s)" % (g["index"], g["name"], g["uuid"]))
        links = g.get("nvlinks") or []
        if links and not any(lk["up"] for lk in links):
            out.append("NVML: Unable to retrieve NVLink information as all links are inactive")
            continue
        for lk in links:
            out.append("\t Link %d: %s" % (lk["link"], ("%s GB/s" % lk["speed"]) if lk["up"] else "<inactive>"))
    return "\n".join(out) + "\n"


def nvlink_errors(state: dict) -> str:
    out = []
    for g in state["gpus"]:
        out.append("GPU %d: %s (UUID: %s)" % (g["index"], g["name"], g["uuid"]))
        for lk in g.get("nvlinks") or []:
            if not lk["up"]:
                continue
            out.append("\t Link %d: Replay Errors: %d" % (lk["link"], lk["replay"]))
            out.append("\t Link %d: Recovery Errors: %d" % (lk["link"], lk["recovery"]))
            out.append("\t Link %d: CRC Errors: %d" % (lk["link"], lk["crc"]))
            out.append("")
    return "\n".join(out) + "\n"
