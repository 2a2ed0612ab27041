"""nvidia-smi renderers: state -> the exact text real nvidia-smi prints.

`-q -x` and `-q` are rendered by mutating real captured outputs kept in templates/ (see the .source.txt
sidecars): the element/key order, indentation and sentinel values are the real tool's; only the values
that the state knows about are replaced.
"""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
XML_V12 = "netdata-rtx4090-535.86.05.xml"
XML_V13 = "telegraf-rtx4000sff-ada-595.84-v13.xml"
TXT_535 = "gpud-8xh100-535.161.08-hw-power-brake.txt"
TXT_590 = "nvgpuexp-h100-590.48.01-load.txt"

#: NVML_ERROR_GPU_IS_LOST; nvidia-smi exits with the NVML return code.
RC_GPU_LOST = 15
RC_INVALID_ARG = 2

RECOVERY_TEXT = {
    "none": "None",
    "gpu_reset": "Reset",
    "node_reboot": "Reboot",
    "drain_p2p": "Drain P2P",
    "drain_and_reset": "Drain and Reset",
}
THROTTLE_NAMES = [
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "display_clock_setting",
]
THROTTLE_TEXT = {
    "gpu_idle": ("Idle",),
    "applications_clocks_setting": ("Applications Clocks Setting",),
    "sw_power_cap": ("SW Power Cap",),
    "hw_slowdown": ("HW Slowdown",),
    "hw_thermal_slowdown": ("HW Slowdown", "HW Thermal Slowdown"),
    "hw_power_brake_slowdown": ("HW Slowdown", "HW Power Brake Slowdown"),
    "sync_boost": ("Sync Boost",),
    "sw_thermal_slowdown": ("SW Thermal Slowdown",),
    "display_clock_setting": ("Display Clock Setting",),
}
THROTTLE_BITS = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}


def driver_major(state: dict) -> int:
    try:
        return int(str(state.get("driver_version", "535")).split(".")[0])
    except ValueError:
        return 535


def xml_layout(state: dict) -> str:
    return state.get("xml_layout") or ("v13" if driver_major(state) >= 590 else "v12")


def lost_message(g: dict) -> str:
    return (
        "Unable to determine the device handle for GPU %s: GPU is lost.  Reboot the system to recover this GPU"
        % (g["bus_id"][4:])
    )


def lost_gpus(state: dict) -> list:
    return [g for g in state["gpus"] if g.get("lost")]


def active_throttle(g: dict) -> set:
    act = set(g.get("throttle") or [])
    if "hw_thermal_slowdown" in act or "hw_power_brake_slowdown" in act:
        act.add("hw_slowdown")
    if not g.get("util_pct") and not act & {"hw_slowdown", "sw_thermal_slowdown", "sw_power_cap"}:
        act.add("gpu_idle")
    return act


def _yn(b) -> str:
    return "Yes" if b else "No"


def _ts(state: dict) -> str:
    return time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime(state.get("now", 0))).replace(" 0", "  ", 1)


def _ecc_totals(g: dict, scope: str) -> tuple:
    e = g["ecc"][scope]
    return e["sram_corr"] + e["dram_corr"], e["sram_unc"] + e["dram_unc"]


# --------------------------------------------------------------------------------------------------
# -q -x


class _XmlTemplate:
    """The first <gpu> of a real capture, flattened: (depth, tag, path, text, has_children)."""

    def __init__(self, name: str):
        with open(os.path.join(TEMPLATES, name), encoding="utf-8") as fh:
            raw = fh.read()
        self.indent = "\t" if "\n\t<timestamp>" in raw else "    "
        self.doctype = [ln for ln in raw.splitlines()[:3] if ln.startswith("<")][:2]
        root = ET.fromstring(raw)
        gpu = root.find("gpu")
        self.items = []
        self._walk(gpu, 2, "")

    def _walk(self, el, depth, prefix):
        for child in el:
            path = prefix + child.tag
            has_children = len(child) > 0
            self.items.append((depth, child.tag, path, (child.text or "").strip(), has_children))
            if has_children and child.tag not in ("supported_clocks", "processes"):
                self._walk(child, depth + 1, path + "/")
                self.items.append((depth, "/" + child.tag, path, None, True))
            elif has_children:
                self.items.append((depth, "/" + child.tag, path, None, True))


_XML_CACHE: dict = {}


def _xml_template(layout: str) -> _XmlTemplate:
    if layout not in _XML_CACHE:
        _XML_CACHE[layout] = _XmlTemplate(XML_V13 if layout == "v13" else XML_V12)
    return _XML_CACHE[layout]


def _xml_values(g: dict, state: dict, layout: str) -> dict:
    drv = state["driver_version"]
    bus = g["bus_id"]
    act = active_throttle(g)
    v = {
        "product_name": g.get("name", "NVIDIA H100 80GB HBM3"),
        "product_brand": "NVIDIA",
        "product_architecture": "Hopper",
        "display_mode": "Enabled" if layout == "v12" else "Requested functionality has been deprecated",
        "display_attached": "No",
        "display_active": "Disabled",
        "persistence_mode": "Enabled"
        if state["services"].get("nvidia-persistenced", {}).get("running")
        else "Disabled",
        "addressing_mode": "None",
        "mig_mode/current_mig": "Disabled",
        "mig_mode/pending_mig": "Disabled",
        "serial": g["serial"],
        "uuid": g["uuid"],
        "pdi": "0x%016x" % (int(g["serial"]) * 2654435761 % (1 << 64)),
        "minor_number": str(g["index"]),
        "vbios_version": g["vbios"],
        "board_id": "0x%s00" % bus[9:11].lower(),
        "board_part_number": "692-2G520-0200-000",
        "gpu_part_number": "2330-885-A1",
        "gpu_module_id": str(g.get("module_id", g["index"] + 1)),
        "platformInfo/module_id": str(g.get("module_id", g["index"] + 1)),
        "inforom_version/img_version": "G520.0200.00.05",
        "inforom_version/oem_object": "2.1",
        "inforom_version/ecc_object": "7.16",
        "gsp_firmware_version": drv,
        "c2c_mode": "Disabled",
        "gpu_recovery_action": RECOVERY_TEXT.get(g.get("recovery_action") or "none", "None"),
        "gpu_reset_status/reset_required": _yn(
            g.get("recovery_action") in ("gpu_reset", "node_reboot") or g["remap"]["pending"]
        ),
        "gpu_reset_status/drain_and_reset_recommended": _yn(g.get("recovery_action") == "drain_and_reset"),
        "pci/pci_bus": bus[9:11],
        "pci/pci_device": bus[12:14],
        "pci/pci_domain": bus[:8][-4:],
        "pci/pci_device_id": "233010DE",
        "pci/pci_bus_id": bus,
        "pci/pci_sub_system_id": "16C110DE",
        "pci/pci_base_class": "3",
        "pci/pci_sub_class": "2",
        "pci/pci_gpu_link_info/pcie_gen/max_link_gen": str(g["pcie"]["gen_max"]),
        "pci/pci_gpu_link_info/pcie_gen/current_link_gen": str(g["pcie"]["gen_cur"]),
        "pci/pci_gpu_link_info/pcie_gen/device_current_link_gen": str(g["pcie"]["gen_cur"]),
        "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen": str(g["pcie"]["gen_max"]),
        "pci/pci_gpu_link_info/pcie_gen/max_host_link_gen": str(g["pcie"]["gen_max"]),
        "pci/pci_gpu_link_info/link_widths/max_link_width": "%dx" % g["pcie"]["width_max"],
        "pci/pci_gpu_link_info/link_widths/current_link_width": "%dx" % g["pcie"]["width_cur"],
        "pci/replay_counter": str(g["pcie"]["replay"]),
        "pci/tx_util": "%d KB/s" % (3000 + 40 * g["util_pct"]),
        "pci/rx_util": "%d KB/s" % (500 + 60 * g["util_pct"]),
        "pci/atomic_caps_inbound": "N/A",
        "pci/atomic_caps_outbound": "FETCHADD_32 FETCHADD_64 SWAP_32 SWAP_64 CAS_32 CAS_64",
        "fan_speed": "N/A",
        "performance_state": g.get("pstate", "P0"),
        "sparse_operation_mode": "Disabled",
        "fb_memory_usage/total": "81559 MiB",
        "fb_memory_usage/reserved": "551 MiB",
        "fb_memory_usage/used": "%d MiB" % g["mem_used_mib"],
        "fb_memory_usage/free": "%d MiB" % (81559 - 551 - g["mem_used_mib"]),
        "bar1_memory_usage/total": "131072 MiB",
        "bar1_memory_usage/used": "%d MiB" % (1 + g["mem_used_mib"]),
        "bar1_memory_usage/free": "%d MiB" % (131071 - g["mem_used_mib"]),
        "utilization/gpu_util": "%d %%" % g["util_pct"],
        "utilization/memory_util": "%d %%" % g["mem_util_pct"],
        "ecc_mode/current_ecc": "Enabled",
        "ecc_mode/pending_ecc": "Enabled",
        "remapped_rows/remapped_row_corr": str(g["remap"]["corr"]),
        "remapped_rows/remapped_row_unc": str(g["remap"]["unc"]),
        "remapped_rows/remapped_row_pending": _yn(g["remap"]["pending"]),
        "remapped_rows/remapped_row_failure": _yn(g["remap"]["failure"]),
        "temperature/gpu_temp": "%d C" % g["temp_c"],
        "temperature/gpu_temp_tlimit": "%d C" % (85 - g["temp_c"]),
        "temperature/gpu_temp_max_tlimit_threshold": "-8 C",
        "temperature/gpu_temp_slow_tlimit_threshold": "-2 C",
        "temperature/gpu_temp_max_gpu_tlimit_threshold": "0 C",
        "temperature/gpu_target_temperature": "N/A",
        "temperature/memory_temp": "%d C" % g["mem_temp_c"],
        "temperature/gpu_temp_max_mem_tlimit_threshold": "0 C",
        "supported_gpu_target_temp/gpu_target_temp_min": "N/A",
        "supported_gpu_target_temp/gpu_target_temp_max": "N/A",
        "clocks/graphics_clock": "%d MHz" % g["clocks"]["graphics_mhz"],
        "clocks/sm_clock": "%d MHz" % g["clocks"]["sm_mhz"],
        "clocks/mem_clock": "%d MHz" % g["clocks"]["memory_mhz"],
        "clocks/video_clock": "%d MHz" % g["clocks"]["video_mhz"],
        "max_clocks/graphics_clock": "1980 MHz",
        "max_clocks/sm_clock": "1980 MHz",
        "max_clocks/mem_clock": "2619 MHz",
        "max_clocks/video_clock": "1545 MHz",
        "max_customer_boost_clocks/graphics_clock": "1980 MHz",
        "voltage/graphics_volt": "670.000 mV",
        "fabric/state": g["fabric"]["state"],
        "fabric/status": g["fabric"]["status"],
        "fabric/cliqueId": "0",
        "fabric/clusterUuid": "00000000-0000-0000-0000-000000000000",
        "capabilities/egm": "disabled",
    }
    if layout == "v12":
        v["applications_clocks/graphics_clock"] = "1980 MHz"
        v["applications_clocks/mem_clock"] = "2619 MHz"
        v["default_applications_clocks/graphics_clock"] = "1980 MHz"
        v["default_applications_clocks/mem_clock"] = "2619 MHz"
    for scope in ("volatile", "aggregate"):
        e = g["ecc"][scope]
        v["ecc_errors/%s/sram_correctable" % scope] = str(e["sram_corr"])
        v["ecc_errors/%s/sram_uncorrectable" % scope] = str(e["sram_unc"])
        v["ecc_errors/%s/sram_uncorrectable_parity" % scope] = "0"
        v["ecc_errors/%s/sram_uncorrectable_secded" % scope] = str(e["sram_unc"])
        v["ecc_errors/%s/dram_correctable" % scope] = str(e["dram_corr"])
        v["ecc_errors/%s/dram_uncorrectable" % scope] = str(e["dram_unc"])
    v["ecc_errors/aggregate/sram_threshold_exceeded"] = "No"
    for src in ("sram_l2", "sram_sm", "sram_microcontroller", "sram_pcie", "sram_other"):
        v["ecc_errors/aggregate_uncorrectable_sram_sources/" + src] = "0"
    v["ecc_errors/aggregate_uncorrectable_sram_sources/sram_sm"] = str(g["ecc"]["aggregate"]["sram_unc"])
    v["ecc_errors/unrepairable_memory"] = _yn(g["remap"]["failure"])
    v["remapped_rows/remapped_row_corr_inactive"] = "0"
    v["remapped_rows/remapped_row_unc_inactive"] = "0"
    for k, n in g["remap"]["histogram"].items():
        v["remapped_rows/row_remapper_histogram/row_remapper_histogram_" + k] = "%d bank(s)" % n
    for name in THROTTLE_NAMES:
        tag = "display_clocks_setting" if name == "display_clock_setting" else name
        v["clocks_event_reasons/clocks_event_reason_" + tag] = "Active" if name in act else "Not Active"
    for name, tag in (
        ("sw_power_cap", "sw_power_cap"),
        ("sync_boost", "sync_boost"),
        ("sw_thermal_slowdown", "sw_therm_slowdown"),
        ("hw_thermal_slowdown", "hw_therm_slowdown"),
        ("hw_power_brake_slowdown", "hw_power_brake"),
    ):
        v["clocks_event_reasons_counters/clocks_event_reasons_counters_" + tag] = "%d us" % (
            (int(state["now"] - state["boot_time"]) * 1000000 // 3) if name in act else 0
        )
    draw = "%.2f W" % g["power_draw_w"]
    lim = "%.2f W" % g["power_limit_w"]
    for pfx in ("gpu_power_readings/",):
        v[pfx + "power_state"] = (
            g.get("pstate", "P0") if layout == "v12" else "Requested functionality has been deprecated"
        )
        v[pfx + "power_draw"] = draw
        v[pfx + "average_power_draw"] = draw
        v[pfx + "instant_power_draw"] = "%.2f W" % (g["power_draw_w"] * 0.97)
        v[pfx + "current_power_limit"] = lim
        v[pfx + "requested_power_limit"] = lim
        v[pfx + "default_power_limit"] = "700.00 W"
        v[pfx + "min_power_limit"] = "200.00 W"
        v[pfx + "max_power_limit"] = "700.00 W"
    v["gpu_memory_power_readings/average_power_draw"] = "%.2f W" % (g["power_draw_w"] * 0.14)
    v["module_power_readings/power_state"] = v["gpu_power_readings/power_state"]
    v["edpp_multiplier"] = "100.00%"
    return v


def _supported_clocks(ind: str, depth: int) -> list:
    p = ind * depth
    out = [p + "<supported_clocks>", p + ind + "<supported_mem_clock>", p + ind * 2 + "<value>2619 MHz</value>"]
    out.extend(
        p + ind * 2 + "<supported_graphics_clock>%d MHz</supported_graphics_clock>" % mhz
        for mhz in range(1980, 344, -15)
    )
    out.extend([p + ind + "</supported_mem_clock>", p + "</supported_clocks>"])
    return out


def _processes_xml(g: dict, ind: str, depth: int) -> list:
    p = ind * depth
    out = [p + "<processes>"]
    for pr in g.get("processes") or []:
        q = p + ind * 2
        out += [
            p + ind + "<process_info>",
            q + "<gpu_instance_id>N/A</gpu_instance_id>",
            q + "<compute_instance_id>N/A</compute_instance_id>",
            q + "<pid>%d</pid>" % pr["pid"],
            q + "<type>%s</type>" % escape(pr.get("type", "C")),
            q + "<process_name>%s</process_name>" % escape(pr["name"]),
            q + "<used_memory>%d MiB</used_memory>" % pr.get("used_mib", 0),
            p + ind + "</process_info>",
        ]
    out.append(p + "</processes>")
    return out


def _gpu_xml(g: dict, state: dict, layout: str) -> list:
    t = _xml_template(layout)
    ind = t.indent
    vals = _xml_values(g, state, layout)
    out = [ind + '<gpu id="%s">' % g["bus_id"]]
    skip_until = None
    for depth, tag, path, text, has_children in t.items:
        if skip_until is not None:
            if tag == "/" + skip_until:
                skip_until = None
            continue
        p = ind * depth
        if tag.startswith("/"):
            out.append(p + "<%s>" % tag)
            continue
        if tag == "supported_clocks":
            out.extend(_supported_clocks(ind, depth))
            skip_until = tag
            continue
        if tag == "processes":
            out.extend(_processes_xml(g, ind, depth))
            if has_children:
                skip_until = tag
            continue
        if tag == "mig_devices":
            out += [p + "<mig_devices>", p + ind + "None", p + "</mig_devices>"]
            continue
        if tag == "accounted_processes":
            out += [p + "<accounted_processes>", p + "</accounted_processes>"]
            continue
        if has_children:
            out.append(p + "<%s>" % tag)
            continue
        value = vals.get(path, text)
        out.append(p + "<%s>%s</%s>" % (tag, escape(value), tag))
    out.append(ind + "</gpu>")
    out.append("")
    return out


def nvidia_smi_xml(state: dict) -> str:
    """`nvidia-smi -q -x`. Raises GpuLost (message, rc) when a GPU is lost, as the real tool prints no XML."""
    layout = xml_layout(state)
    t = _xml_template(layout)
    ind = t.indent
    out = list(t.doctype) + [
        "<nvidia_smi_log>",
        ind + "<timestamp>%s</timestamp>" % _ts(state),
        ind + "<driver_version>%s</driver_version>" % state["driver_version"],
        ind + "<cuda_version>%s</cuda_version>" % state["cuda_version"],
        ind + "<attached_gpus>%d</attached_gpus>" % len(state["gpus"]),
    ]
    for g in state["gpus"]:
        out.extend(_gpu_xml(g, state, layout))
    out.append("</nvidia_smi_log>")
    return "\n".join(out) + "\n"


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


_TXT_CACHE: dict = {}


def _txt_template(layout: str) -> _TextTemplate:
    if layout not in _TXT_CACHE:
        _TXT_CACHE[layout] = _TextTemplate(TXT_590 if layout == "v13" else TXT_535)
    return _TXT_CACHE[layout]


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
        "Temperature/GPU T.Limit Temp": "%d C" % (85 - g["temp_c"]),
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
