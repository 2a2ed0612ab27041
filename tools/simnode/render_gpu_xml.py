"""`nvidia-smi -q -x`: a real capture's first <gpu> (templates/) with the values the state knows replaced."""

from __future__ import annotations

import functools
import os
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

from simnode.render_gpu_base import (
    RECOVERY_TEXT,
    TEMPLATES,
    THROTTLE_NAMES,
    XML_V12,
    XML_V13,
    _ts,
    _yn,
    active_throttle,
    xml_layout,
)


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


@functools.lru_cache(maxsize=None)
def _xml_template(layout: str) -> _XmlTemplate:
    return _XmlTemplate(XML_V13 if layout == "v13" else XML_V12)


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
        "temperature/gpu_temp_tlimit": "%d C" % (g.get("tlimit_ref_c", 85) - g["temp_c"]),
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
    v["ecc_errors/aggregate/sram_threshold_exceeded"] = _yn(g.get("sram_threshold_exceeded", False))
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
