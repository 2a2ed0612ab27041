"""`nvidia-smi -q`: a real capture's first GPU block (templates/) with the values the state knows replaced."""

from __future__ import annotations

import functools
import os

from simnode.render_gpu_base import (
    RECOVERY_TEXT,
    TEMPLATES,
    THROTTLE_NAMES,
    THROTTLE_TEXT,
    TXT_535,
    TXT_590,
    _ts,
    _yn,
    active_throttle,
    xml_layout,
)


# --------------------------------------------------------------------------------------------------
# -q (text)


class _TextTemplate:
    def __init__(self, name: str):
        with open(os.path.join(TEMPLATES, name), encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        starts = [i for i, ln in enumerate(lines) if ln.startswith("GPU 0000")]
        end = starts[1] if len(starts) > 1 else len(lines)
        self.header = lines[: starts[0]]
        block = lines[starts[0] + 1 : end]
        while block and not block[-1].strip():
            block.pop()
        self.col = lines[3].index(" : ") if " : " in lines[3] else 42
        self.items = []  # (path, prefix, value) ; value None for section headers
        self.after_processes = []
        stack: list = []
        in_proc = False
        for ln in block:
            indent = len(ln) - len(ln.lstrip(" "))
            if in_proc:
                if indent <= 4:
                    in_proc = False
                else:
                    continue
            if " : " in ln:
                idx = ln.index(" : ")
                key, prefix, value = ln[:idx].strip(), ln[: idx + 3], ln[idx + 3 :]
            else:
                key, prefix, value = ln.strip(), ln, None
            while stack and stack[-1][0] >= indent:
                stack.pop()
            path = "/".join([k for _, k in stack] + [key])
            stack.append((indent, key))
            if key == "Processes":
                in_proc = True
                self.items.append(("Processes", None, None))
                continue
            self.items.append((path, prefix, value))


@functools.lru_cache(maxsize=None)
def _txt_template(layout: str) -> _TextTemplate:
    return _TextTemplate(TXT_590 if layout == "v13" else TXT_535)


def _text_values(g: dict, state: dict, layout: str) -> dict:
    act = active_throttle(g)
    bus = g["bus_id"]
    draw = "%.2f W" % g["power_draw_w"]
    lim = "%.2f W" % g["power_limit_w"]
    v = {
        "Product Name": g.get("name", "NVIDIA H100 80GB HBM3"),
        "Persistence Mode": "Enabled"
        if state["services"].get("nvidia-persistenced", {}).get("running")
        else "Disabled",
        "Serial Number": g["serial"],
        "GPU UUID": g["uuid"],
        "GPU PDI": "0x%016x" % (int(g["serial"]) * 2654435761 % (1 << 64)),
        "Minor Number": str(g["index"]),
        "VBIOS Version": g["vbios"],
        "Board ID": "0x%s00" % bus[9:11].lower(),
        "Module ID": str(g.get("module_id", g["index"] + 1)),
        "Platform Info/Module Id": str(g.get("module_id", g["index"] + 1)),
        "GSP Firmware Version": state["driver_version"],
        "GPU Virtualization Mode/Virtualization Mode": "None",
        "GPU Reset Status/Reset Required": _yn(
            g.get("recovery_action") in ("gpu_reset", "node_reboot") or g["remap"]["pending"]
        ),
        "GPU Reset Status/Drain and Reset Recommended": _yn(g.get("recovery_action") == "drain_and_reset"),
        "GPU Recovery Action": RECOVERY_TEXT.get(g.get("recovery_action") or "none", "None"),
        "PCI/Bus": "0x" + bus[9:11],
        "PCI/Device": "0x" + bus[12:14],
        "PCI/Domain": "0x" + bus[4:8],
        "PCI/Bus Id": bus,
        "PCI/GPU Link Info/PCIe Generation/Max": str(g["pcie"]["gen_max"]),
        "PCI/GPU Link Info/PCIe Generation/Current": str(g["pcie"]["gen_cur"]),
        "PCI/GPU Link Info/PCIe Generation/Device Current": str(g["pcie"]["gen_cur"]),
        "PCI/GPU Link Info/PCIe Generation/Device Max": str(g["pcie"]["gen_max"]),
        "PCI/GPU Link Info/PCIe Generation/Host Max": str(g["pcie"]["gen_max"]),
        "PCI/GPU Link Info/Link Width/Max": "%dx" % g["pcie"]["width_max"],
        "PCI/GPU Link Info/Link Width/Current": "%dx" % g["pcie"]["width_cur"],
        "PCI/Replays Since Reset": str(g["pcie"]["replay"]),
        "PCI/Tx Throughput": "%d KB/s" % (3000 + 40 * g["util_pct"]),
        "PCI/Rx Throughput": "%d KB/s" % (500 + 60 * g["util_pct"]),
        "Performance State": g.get("pstate", "P0"),
        "FB Memory Usage/Used": "%d MiB" % g["mem_used_mib"],
        "FB Memory Usage/Free": "%d MiB" % (81559 - 551 - g["mem_used_mib"]),
        "FB Memory Usage/Reserved": "551 MiB",
        "BAR1 Memory Usage/Used": "%d MiB" % (1 + g["mem_used_mib"]),
        "BAR1 Memory Usage/Free": "%d MiB" % (131071 - g["mem_used_mib"]),
        "Utilization/Gpu": "%d %%" % g["util_pct"],
        "Utilization/GPU": "%d %%" % g["util_pct"],
        "Utilization/Memory": "%d %%" % g["mem_util_pct"],
        "Remapped Rows/Correctable Error": str(g["remap"]["corr"]),
        "Remapped Rows/Uncorrectable Error": str(g["remap"]["unc"]),
        "Remapped Rows/Pending": _yn(g["remap"]["pending"]),
        "Remapped Rows/Remapping Failure Occurred": _yn(g["remap"]["failure"]),
        "ECC Errors/Unrepairable Memory": _yn(g["remap"]["failure"]),
        "Temperature/GPU Current Temp": "%d C" % g["temp_c"],
        "Temperature/GPU T.Limit Temp": "%d C" % (g.get("tlimit_ref_c", 85) - g["temp_c"]),
        "Temperature/Memory Current Temp": "%d C" % g["mem_temp_c"],
        "GPU Power Readings/Power Draw": draw,
        "GPU Power Readings/Average Power Draw": draw,
        "GPU Power Readings/Instantaneous Power Draw": "%.2f W" % (g["power_draw_w"] * 0.97),
        "GPU Power Readings/Current Power Limit": lim,
        "GPU Power Readings/Requested Power Limit": lim,
        "GPU Memory Power Readings/Average Power Draw": "%.2f W" % (g["power_draw_w"] * 0.14),
        "Clocks/Graphics": "%d MHz" % g["clocks"]["graphics_mhz"],
        "Clocks/SM": "%d MHz" % g["clocks"]["sm_mhz"],
        "Clocks/Memory": "%d MHz" % g["clocks"]["memory_mhz"],
        "Clocks/Video": "%d MHz" % g["clocks"]["video_mhz"],
        "Fabric/State": g["fabric"]["state"],
        "Fabric/Status": g["fabric"]["status"],
    }
    for k, n in g["remap"]["histogram"].items():
        v["Remapped Rows/Bank Remap Availability Histogram/" + k.capitalize()] = "%d bank(s)" % n
    for scope in ("volatile", "aggregate"):
        e = g["ecc"][scope]
        s = "ECC Errors/%s/" % scope.capitalize()
        v[s + "SRAM Correctable"] = str(e["sram_corr"])
        v[s + "SRAM Uncorrectable Parity"] = "0"
        v[s + "SRAM Uncorrectable SEC-DED"] = str(e["sram_unc"])
        v[s + "DRAM Correctable"] = str(e["dram_corr"])
        v[s + "DRAM Uncorrectable"] = str(e["dram_unc"])
    v["ECC Errors/Aggregate Uncorrectable SRAM Sources/SRAM SM"] = str(g["ecc"]["aggregate"]["sram_unc"])
    v["ECC Errors/Aggregate/SRAM Threshold Exceeded"] = "Yes" if g.get("sram_threshold_exceeded") else "No"
    for name in THROTTLE_NAMES:
        if name == "hw_slowdown":
            continue
        key = "Clocks Event Reasons/" + "/".join(THROTTLE_TEXT[name])
        v[key] = "Active" if name in act else "Not Active"
    v["Clocks Event Reasons/HW Slowdown"] = "Active" if "hw_slowdown" in act else "Not Active"
    us = int(state["now"] - state["boot_time"]) * 1000000 // 3
    for name, label in (
        ("sw_power_cap", "SW Power Capping"),
        ("sync_boost", "Sync Boost"),
        ("sw_thermal_slowdown", "SW Thermal Slowdown"),
        ("hw_thermal_slowdown", "HW Thermal Slowdown"),
        ("hw_power_brake_slowdown", "HW Power Braking"),
    ):
        v["Clocks Event Reasons Counters/" + label] = "%d us" % (us if name in act else 0)
    v["GPU Power Readings/Power Draw"] = draw
    return v


def _processes_text(g: dict, col: int) -> list:
    procs = g.get("processes") or []
    if not procs:
        return ["    Processes".ljust(col) + " : None"]
    out = ["    Processes"]
    for pr in procs:
        out += [
            "        GPU instance ID                   : N/A",
            "        Compute instance ID               : N/A",
            "        Process ID                        : %d" % pr["pid"],
            "            Type                          : %s" % pr.get("type", "C"),
            "            Name                          : %s" % pr["name"],
            "            Used GPU Memory               : %d MiB" % pr.get("used_mib", 0),
        ]
    return out


def nvidia_smi_text(state: dict) -> str:
    """`nvidia-smi -q`."""
    layout = xml_layout(state)
    t = _txt_template(layout)
    col = t.col
    out = [
        "",
        "==============NVSMI LOG==============",
        "",
        "Timestamp".ljust(col) + " : " + _ts(state),
        "Driver Version".ljust(col) + " : " + state["driver_version"],
        "CUDA Version".ljust(col) + " : " + state["cuda_version"],
        "",
        "Attached GPUs".ljust(col) + " : %d" % len(state["gpus"]),
    ]
    for n, g in enumerate(state["gpus"]):
        if n:
            out.append("")
        vals = _text_values(g, state, layout)
        out.append("GPU " + g["bus_id"])
        for path, prefix, value in t.items:
            if path == "Processes":
                out.extend(_processes_text(g, col))
                continue
            if value is None:
                out.append(prefix)
                continue
            out.append(prefix + vals.get(path, value))
    return "\n".join(out) + "\n"
