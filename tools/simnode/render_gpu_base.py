"""What every nvidia-smi renderer shares: the real captures used as templates, the exit codes, the throttle
reason names and bits, and small formatters of a GPU's state."""

from __future__ import annotations

import os
import time

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
