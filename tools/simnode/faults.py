"""Fault catalogue: named faults applied to a node state so that every tool shows them consistently.

Each fault declares what the health policy should report (the answer key): a list of
{check, component, severity_hint, code} with check ids and component names of docs/findings.md.
`benign` faults are real-world conditions that must NOT raise a P0..P2 finding (P3 advice is allowed).
Counter-growth faults (`needs_previous`) compare two readings: apply() returns the earlier reading as a
second state (`previous`), which the generator writes as a previous capture (docs/simulation.md).
"""

from __future__ import annotations

import random
import re

from simnode.state import clone

PREVIOUS_AGE_S = 900  # the previous reading is taken 15 minutes before the current one


class Fault:
    def __init__(self, name, fn, doc, needs_previous=False, benign=False, scope="node"):
        self.name = name
        self.fn = fn
        self.doc = doc
        self.needs_previous = needs_previous
        self.benign = benign
        self.scope = scope


FAULTS: dict = {}


def fault(name, doc, needs_previous=False, benign=False, scope="node"):
    def deco(fn):
        FAULTS[name] = Fault(name, fn, doc, needs_previous, benign, scope)
        return fn

    return deco


def _exp(check, component, severity, code=None):
    return {"check": check, "component": component, "severity_hint": severity, "code": code}


def _pci(g: dict) -> str:
    """Kernel form of a GPU bus id: 0000:19:00 (no function, lower case)."""
    return g["bus_id"][4:-2].lower()


def _log(state: dict, msg: str, ago: float = 600.0) -> None:
    state["kernel_log"].append({"time": state["now"] - ago, "msg": msg})


def _xid(state, g, code, text, pid="'<unknown>'", name="<unknown>", ago=600.0):
    _log(state, "NVRM: Xid (PCI:%s): %d, pid=%s, name=%s, %s" % (_pci(g), code, pid, name, text), ago)


def _pick_gpu(state, rng, gpu=None) -> dict:
    gpus = [g for g in state["gpus"] if not g.get("lost")]
    if gpu is not None:
        return next(g for g in state["gpus"] if g["index"] == int(gpu))
    return rng.choice(gpus)


def _pick_hca(state, rng, hca=None) -> dict:
    if hca is not None:
        return next(h for h in state["hcas"] if h["name"] == hca or h["name"] == "mlx5_%s" % hca)
    return rng.choice(state["hcas"])


def _diag_stops(state, g) -> list:
    """DCGM 3.x refuses to run with a pending row remap: the capture's dcgmi diag shows the Deployment error."""
    if str(state["dcgm"].get("version", "3")).split(".")[0] < "4":
        return [_exp("gpu.diag", "gpu%d" % g["index"], "P1", "fail")]
    return []


def _load(g, util=100, power=None):
    g["util_pct"] = util
    g["mem_util_pct"] = util // 3
    g["mem_used_mib"] = 71000 if util else 0
    g["clocks"].update({"graphics_mhz": 1980, "sm_mhz": 1980, "video_mhz": 1545})
    g["power_draw_w"] = power if power is not None else 655.0
    g["temp_c"] = max(g["temp_c"], 62)
    g["mem_temp_c"] = max(g["mem_temp_c"], 58)
    if util and not g["processes"]:
        g["processes"] = [{"pid": 41000 + g["index"], "name": "python3", "type": "C", "used_mib": 70400}]


# ---------------------------------------------------------------------------------------------- GPU


@fault("xid79", "GPU fell off the bus: nvidia-smi prints 'GPU is lost', Xid 79 + 'fallen off the bus' in the log")
def _xid79(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    g["lost"] = True
    _log(state, "NVRM: GPU at PCI:%s: %s" % (_pci(g), g["uuid"]), 700)
    _log(state, "NVRM: GPU Board Serial Number: %s" % g["serial"], 700)
    _xid(state, g, 79, "GPU has fallen off the bus.", ago=700)
    _log(state, "NVRM: GPU %s: GPU has fallen off the bus." % g["bus_id"][4:].lower(), 699.9)
    # nvidia-smi prints only the "GPU is lost" line: nothing in the evidence gives the lost GPU's index, so the
    # component is the bus-id form `gpu:<bus id>`; gpu_index says which one it was
    comp = "gpu:%s" % g["bus_id"]
    out = [_exp("gpu.xid", comp, "P1", "79"), _exp("gpu.missing", comp, "P1", "unreadable")]
    for e in out:
        e.update({"bus_id": g["bus_id"], "gpu_index": g["index"]})
    # DCGM cannot run its diagnostic with a GPU gone: dcgmi reports the error instead of results
    out.append(_exp("collector.error", "collector:dcgm", "P2", "tool_error"))
    return out


@fault("xid48", "Double-bit ECC error: Xid 48 + Xid 63, volatile/aggregate DRAM uncorrectable, row remap pending")
def _xid48(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    for scope in ("volatile", "aggregate"):
        g["ecc"][scope]["dram_unc"] += 1
    g["remap"]["unc"] += 1
    g["remap"]["pending"] = True
    _xid(
        state,
        g,
        48,
        "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x12bac1c3e0 partition 2, subpartition 1.",
    )
    _xid(
        state,
        g,
        63,
        "Row Remapper: New row (0x00000012bac1c3e0) marked for remapping, reset gpu to activate.",
        ago=599.97,
    )
    return [
        _exp("gpu.xid", "gpu%d" % g["index"], "P1", "48"),
        _exp("gpu.ecc", "gpu%d" % g["index"], "P1"),
        _exp("gpu.row_remap", "gpu%d" % g["index"], "P1", "pending"),
    ] + _diag_stops(state, g)


@fault("xid64", "Row remapping failure: Xid 64, remapped_row_failure Yes, a bank without spare rows")
def _xid64(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    g["remap"]["failure"] = True
    g["remap"]["unc"] += 8
    g["remap"]["histogram"].update({"max": 2552, "high": 4, "partial": 2, "low": 1, "none": 1})
    g["ecc"]["aggregate"]["dram_unc"] += 8
    _xid(state, g, 64, "Row Remapper Error: (0x00000007a3e13940) - All reserved rows for bank are remapped")
    return [
        _exp("gpu.xid", "gpu%d" % g["index"], "P1", "64"),
        _exp("gpu.row_remap", "gpu%d" % g["index"], "P1", "failure"),
    ]


@fault("xid74", "NVLink error: Xid 74 and two links of the GPU down")
def _xid74(state, rng, gpu=None, link=None):
    g = _pick_gpu(state, rng, gpu)
    lk = int(link) if link is not None else rng.randrange(0, 17)
    for n in (lk, lk + 1):
        g["nvlinks"][n]["up"] = False
    _xid(state, g, 74, "NVLink: fatal error detected on link %d(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)" % lk)
    return [
        _exp("gpu.xid", "gpu%d" % g["index"], "P1", "74"),
        _exp("gpu.nvlink", "gpu%d/nvlink%d" % (g["index"], lk), "P1", "down"),
        _exp("gpu.nvlink", "gpu%d/nvlink%d" % (g["index"], lk + 1), "P1", "down"),
    ]


@fault("xid94", "Contained ECC error: Xid 94 lines (one per channel of the killed process), SRAM uncorrectable +1")
def _xid94(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    for scope in ("volatile", "aggregate"):
        g["ecc"][scope]["sram_unc"] += 1
    _xid(state, g, 94, "Contained: SM (0x1). RST: No, D-RST: No")
    for ch in range(8, 12):
        _xid(state, g, 94, "Ch %08x" % ch, pid="1248209", name="python3.10", ago=599.9)
    # catalogue: Xid 94 RESTART_APP (P3 monitor); the contained uncorrectable error: P2 (docs/checks.md)
    return [_exp("gpu.xid", "gpu%d" % g["index"], "P3", "94"), _exp("gpu.ecc", "gpu%d" % g["index"], "P2")]


@fault("xid119", "GSP RPC timeout: Xid 119 with the GSP banners; recovery action GPU reset")
def _xid119(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    g["recovery_action"] = "gpu_reset"
    banner = "NVRM: _kgspLogXid119: ********************************* GSP Timeout **********************************"
    _log(state, banner, 500)
    _log(state, "NVRM: _kgspLogXid119: Note: Please also check logs above.", 500)
    _xid(
        state,
        g,
        119,
        "Timeout after 6s of waiting for RPC response from GPU%d GSP! Expected function 76 (GSP_RM_CONTROL) sequence 24174 (0x20801322 0x808)."
        % g["index"],
        pid="10200",
        name="nvidia-smi",
        ago=500,
    )
    _log(state, "NVRM: _kgspLogXid119: " + "*" * 80, 500)
    return [_exp("gpu.xid", "gpu%d" % g["index"], "P1", "119"), _exp("gpu.recovery_action", "gpu%d" % g["index"], "P1")]


@fault("dbe", "Uncorrectable (double-bit) ECC counters without an Xid line in the log window")
def _dbe(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    for scope in ("volatile", "aggregate"):
        g["ecc"][scope]["dram_unc"] += 2
    return [_exp("gpu.ecc", "gpu%d" % g["index"], "P1")]


@fault("row_remap_pending", "Row remap pending (reset needed): Pending Yes, Uncorrectable Error 1, Xid 63")
def _remap_pending(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    g["remap"]["unc"] += 1
    g["remap"]["pending"] = True
    _xid(state, g, 63, "Row Remapper: New row (0x00000012bac1c3e0) marked for remapping, reset gpu to activate.")
    # pending without an uncorrectable Xid in the window: P2 "reset when idle" (docs/checks.md)
    return [_exp("gpu.row_remap", "gpu%d" % g["index"], "P2", "pending")] + _diag_stops(state, g)


@fault("row_remap_failure", "Row remapping failure without the Xid: Remapping Failure Occurred Yes")
def _remap_failure(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    g["remap"]["failure"] = True
    g["remap"]["unc"] += 8
    g["remap"]["histogram"].update({"max": 2552, "high": 4, "partial": 2, "low": 1, "none": 1})
    return [_exp("gpu.row_remap", "gpu%d" % g["index"], "P1", "failure")]


@fault("thermal_throttle", "HW thermal slowdown active under load, GPU at 89 C")
def _thermal(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    _load(g, 100, 480.0)
    g["temp_c"], g["mem_temp_c"] = 89, 95
    g["throttle"] = ["hw_thermal_slowdown"]
    g["clocks"].update({"graphics_mhz": 1185, "sm_mhz": 1185})
    return [
        _exp("gpu.throttle", "gpu%d" % g["index"], "P2", "hw_thermal_slowdown"),
        _exp("gpu.temperature", "gpu%d" % g["index"], "P2"),
    ]


@fault(
    "power_brake", "HW power brake slowdown on all GPUs (external power-brake signal, as in the real 8x H100 sample)"
)
def _power_brake(state, rng):
    out = []
    for g in state["gpus"]:
        if g.get("lost"):
            continue
        g["throttle"] = ["hw_power_brake_slowdown"]
        g["clocks"].update({"graphics_mhz": 86, "sm_mhz": 86})
        out.append(_exp("gpu.throttle", "gpu%d" % g["index"], "P2", "hw_power_brake_slowdown"))
    return out


@fault("pcie_width_drop", "PCIe link width x16 -> x8 under load (gen stays 5)")
def _pcie_width(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    _load(g)
    g["pcie"]["width_cur"] = 8
    g["pcie"]["replay"] += 340
    return [_exp("gpu.pcie", "gpu%d" % g["index"], "P2", "width")]


@fault("nvlink_down", "One NVLink of one GPU inactive, no Xid")
def _nvlink_down(state, rng, gpu=None, link=None):
    g = _pick_gpu(state, rng, gpu)
    lk = int(link) if link is not None else rng.randrange(0, 18)
    g["nvlinks"][lk]["up"] = False
    return [_exp("gpu.nvlink", "gpu%d/nvlink%d" % (g["index"], lk), "P1", "down")]


@fault("gpu_missing", "A GPU missing from enumeration: nvidia-smi lists 7 GPUs, RmInitAdapter failed in the log")
def _gpu_missing(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    state["gpus"].remove(g)
    for n, other in enumerate(state["gpus"]):
        other["index"] = n
        other["minor"] = n
    _log(state, "NVRM: GPU %s: RmInitAdapter failed! (0x26:0xffff:1474)" % g["bus_id"][4:].lower(), 14000)
    _log(
        state,
        "NVRM: GPU %s: rm_init_adapter failed, device minor number %d" % (g["bus_id"][4:].lower(), g["index"]),
        14000,
    )
    return [_exp("gpu.missing", "node", "P1", "count")]


@fault("driver_drift", "Older NVIDIA driver than the node-class profile (535.129.03 instead of 535.161.08)")
def _driver_drift(state, rng, version="535.129.03"):
    state["driver_version"] = version
    state["fabric_manager"]["version"] = version
    for e in state["kernel_log"]:
        e["msg"] = e["msg"].replace("Kernel Module  535.161.08", "Kernel Module  %s" % version)
    return [_exp("gpu.driver", "node", "P3")]


@fault("diag_fail", "dcgmi diag fails one GPU (Memory test, thermal-violation warning)")
def _diag_fail(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    state["dcgm"]["fail_gpus"][str(g["index"])] = (
        "GPU %d Thermal violations totaling 13.3 seconds started at 1796205000 (test duration 90 seconds). Check the cooling."
        % g["index"]
    )
    return [_exp("gpu.diag", "gpu%d" % g["index"], "P1")]


@fault("dcgm_hang", "dcgmi diag hangs (the capture records a timeout)")
def _dcgm_hang(state, rng):
    state["dcgm"]["hang"] = True
    return [_exp("collector.error", "collector:dcgm", "P2", "timeout")]


@fault("nvswitch_sxid", "NVSwitch fatal SXid in the kernel log")
def _sxid(state, rng, switch=None):
    n = int(switch) if switch is not None else rng.randrange(4)
    pci = ["0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"][n]
    _log(state, "nvidia-nvswitch%d: SXid (PCI:%s): 20034, Fatal, Link 62 LTSSM Fault Up" % (n, pci))
    _log(
        state,
        "nvidia-nvswitch%d: SXid (PCI:%s): 20034, Severity 1 Engine instance 62 Sub-engine instance 00" % (n, pci),
        599.99,
    )
    return [_exp("nvswitch.sxid", "nvswitch%d" % n, "P1", "20034")]


# ---------------------------------------------------------------------------------------------- IB


def _port_down(p, phys):
    p.update({"state": "DOWN", "phys_state": phys, "rate_gbps": 40, "width": "4X", "speed": "QDR"})


@fault("ib_port_down", "IB port Down / Disabled (rate shows the 40 Gb/s floor, as real down ports do)")
def _ib_down(state, rng, hca=None):
    h = _pick_hca(state, rng, hca)
    _port_down(h["ports"][0], "Disabled")
    return [_exp("ib.port_state", "%s/1" % h["name"], "P1", "DOWN")]


@fault("ib_port_polling", "IB port Down / Polling (no peer: cable or switch port)")
def _ib_polling(state, rng, hca=None):
    h = _pick_hca(state, rng, hca)
    _port_down(h["ports"][0], "Polling")
    _log(state, "mlx5_core %s: Port module event: module 0, Cable unplugged" % h["pci"], 1200)
    return [_exp("ib.port_state", "%s/1" % h["name"], "P1", "DOWN")]


@fault("ib_rate_drop", "IB port Active but trained at HDR 200 instead of NDR 400")
def _ib_rate(state, rng, hca=None):
    h = _pick_hca(state, rng, hca)
    h["ports"][0].update({"rate_gbps": 200, "speed": "HDR"})
    return [_exp("ib.port_rate", "%s/1" % h["name"], "P2")]


@fault(
    "ib_symbol_errors", "symbol_error / port_rcv_errors growing between two readings 15 min apart", needs_previous=True
)
def _ib_symbol(state, rng, hca=None, prev=None):
    h = _pick_hca(state, rng, hca)
    c = h["ports"][0]["counters"]
    c["symbol_error"] += 1200
    c["port_rcv_errors"] += 85
    c["link_error_recovery"] += 1
    return [_exp("ib.errors", "%s/1" % h["name"], "P2", "symbol_error")]


@fault("ib_flap", "link_downed / link_error_recovery growing between two readings (flapping link)", needs_previous=True)
def _ib_flap(state, rng, hca=None, prev=None):
    h = _pick_hca(state, rng, hca)
    c = h["ports"][0]["counters"]
    c["link_downed"] += 4
    c["link_error_recovery"] += 6
    return [_exp("ib.link_flap", "%s/1" % h["name"], "P2", "link_downed")]


@fault(
    "ib_counter_reset",
    "Counters reset between readings (perfquery -R / driver reload): lower values, NOT an error",
    needs_previous=True,
    benign=True,
)
def _ib_reset(state, rng, hca=None, prev=None):
    h = _pick_hca(state, rng, hca)
    cur = h["ports"][0]["counters"]
    if prev is not None:
        ph = next(x for x in prev["hcas"] if x["name"] == h["name"])
        pc = ph["ports"][0]["counters"]
        pc.update({"symbol_error": 37, "link_error_recovery": 2, "link_downed": 1, "port_rcv_errors": 9})
    for k in cur:
        cur[k] = min(cur[k], 1000) // 10
    return []


@fault("ib_counter_saturated", "link_downed at the 8-bit ceiling 255 (saturated: 'at least' 255 link-downs)")
def _ib_saturated(state, rng, hca=None):
    h = _pick_hca(state, rng, hca)
    h["ports"][0]["counters"]["link_downed"] = 255
    return [_exp("ib.link_flap", "%s/1" % h["name"], "P2", "link_downed")]


@fault("dead_leaf", "Every IB port of the node Down/Polling (applied to all nodes of one leaf switch)", scope="leaf")
def _dead_leaf(state, rng):
    out = []
    for h in state["hcas"]:
        _port_down(h["ports"][0], "Polling")
        out.append(_exp("ib.port_state", "%s/1" % h["name"], "P1", "DOWN"))
    return out


# ---------------------------------------------------------------------------------------------- BMC


def _sensor(state, name):
    return next(s for s in state["bmc"]["sensors"] if s["name"] == name)


def _sel(state, sensor, event, direction="Asserted", ago=900.0, extra=None):
    e = {"time": state["now"] - ago, "sensor": sensor, "event": event, "direction": direction}
    if extra:
        e["extra"] = extra
    state["bmc"]["sel"].append(e)


@fault(
    "psu_failure",
    "PSU failed: SDR reading 'Failure detected' (status still ok, as real BMCs show), redundancy lost, SEL assertions",
)
def _psu(state, rng, psu=None):
    n = int(psu) if psu is not None else rng.randint(1, 4)
    s = _sensor(state, "PSU%d Status" % n)
    s["reading"] = "Presence detected, Failure detected"
    _sensor(state, "PSU Redundancy")["reading"] = "Redundancy Lost"
    _sel(state, "Power Supply PSU%d Status" % n, "Failure detected")
    _sel(state, "Power Unit PSU Redundancy", "Redundancy Lost", ago=899)
    return [
        _exp("bmc.sensor", "bmc/PSU%d Status" % n, "P2", "Failure detected"),
        _exp("bmc.sensor", "bmc/PSU Redundancy", "P2", "Redundancy Lost"),
        _exp("bmc.sel", "bmc", "P2"),
    ]


@fault("fan_failure", "Fan stopped: 0 RPM, lower-critical status, SEL 'Lower Critical going low'")
def _fan(state, rng, fan=None):
    n = int(fan) if fan is not None else rng.randint(1, 6)
    s = _sensor(state, "FAN%d" % n)
    s["reading"], s["status"] = "0 RPM", "lcr"
    _sel(state, "Fan FAN%d" % n, "Lower Critical going low ", extra="Reading 0 < Threshold 1000 RPM")
    return [_exp("bmc.sensor", "bmc/FAN%d" % n, "P2", "lcr"), _exp("bmc.sel", "bmc", "P2")]


@fault("leak", "Liquid-cooling leak sensor asserted (SDR + SEL)")
def _leak(state, rng):
    _sensor(state, "Leak Detect")["reading"] = "State Asserted"
    _sel(state, "Cooling Device Leak Detect", "State Asserted", ago=300)
    return [_exp("bmc.leak", "bmc/Leak Detect", "P1"), _exp("bmc.sel", "bmc", "P2")]


# ---------------------------------------------------------------------------------------------- node


@fault("hung_mount", "/lustre hangs (statvfs never returns)")
def _hung(state, rng, path="/lustre"):
    next(m for m in state["mounts"] if m["path"] == path)["state"] = "hung"
    _log(
        state,
        "LustreError: 11-0: lustre-OST0004-osc-ffff9a0c3d1e2000: operation ost_connect to node 10.10.0.14@o2ib failed: rc = -16",
        1800,
    )
    return [_exp("node.mounts", "mount:%s" % path, "P1", "hung")]


@fault("missing_mount", "/home not mounted")
def _missing_mount(state, rng, path="/home"):
    next(m for m in state["mounts"] if m["path"] == path)["state"] = "missing"
    return [_exp("node.mounts", "mount:%s" % path, "P1", "missing")]


@fault("gpu_fabric_failure", "One GPU never joined the NVLink fabric (Fabric State Not Started, Status N/A)")
def _fabric_failure(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    g["fabric"] = {"state": "Not Started", "status": "N/A"}
    return [_exp("gpu.fabric", "gpu%d" % g["index"], "P1", "state")]


@fault("persistenced_down", "nvidia-persistenced not running (persistence mode Disabled)")
def _persistenced(state, rng):
    state["services"]["nvidia-persistenced"]["running"] = False
    return [_exp("node.services", "service:nvidia-persistenced", "P2")]


@fault("drained", "Slurm shows IDLE+DRAIN with a human reason")
def _drained(state, rng):
    s = state["slurm"]
    s.update(
        {
            "state": "IDLE+DRAIN",
            "reason": "flaky NCCL, checking cables T-4711",
            "reason_user": "jdoe",
            "reason_time": "2026-12-01T16:20:11",
        }
    )
    return [_exp("scheduler.node_state", "slurm", "P3", "DRAIN")]


@fault("fabric_manager_down", "nvidia-fabricmanager stopped on an NVSwitch node")
def _fm_down(state, rng):
    state["fabric_manager"]["running"] = False
    state["services"]["nvidia-fabricmanager"]["running"] = False
    return [_exp("node.fabric_manager", "service:nvidia-fabricmanager", "P1", "not_running")]


@fault(
    "fabric_manager_version_mismatch",
    "fabric manager version differs from the driver (driver upgraded, FM package left behind)",
)
def _fm_mismatch(state, rng, version="535.129.03"):
    state["fabric_manager"]["version"] = version
    return [_exp("node.fabric_manager", "service:nvidia-fabricmanager", "P1", "version_mismatch")]


# ---------------------------------------------------------------------------------------------- benign


@fault("pcie_idle_downshift", "PCIe gen 1 at idle (power saving): must NOT alarm", benign=True)
def _idle_gen(state, rng):
    for g in state["gpus"]:
        if not g.get("util_pct"):
            g["pcie"]["gen_cur"] = 1
    return []


@fault("ns_sensor", "Unreadable BMC sensors ('ns', No Reading): must NOT alarm", benign=True)
def _ns(state, rng):
    s = _sensor(state, "CPU2 Temp")
    s["reading"], s["status"] = "No Reading", "ns"
    state["bmc"]["sensors"].append(
        {
            "name": "PCIe Slot2",
            "number": "91h",
            "entity": "7.1",
            "status": "ns",
            "reading": "Disabled",
            "kind": "discrete",
        }
    )
    return []


@fault("sw_power_cap_load", "SW power cap active at full load (power at the limit): must NOT alarm", benign=True)
def _swcap(state, rng):
    for g in state["gpus"]:
        if g.get("lost"):
            continue
        _load(g, 100, 699.1)
        g["throttle"] = ["sw_power_cap"]
    return []


@fault("xid_user", "Xid 13/31/43 from a user application (app bug, not hardware): must NOT alarm", benign=True)
def _xid_user(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    _xid(state, g, 13, "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter", ago=1200)
    _xid(
        state,
        g,
        13,
        "Graphics Exception: ESR 0x57c730=0xc04000b 0x57c734=0x24 0x57c728=0x1f81fb60 0x57c72c=0x1174",
        ago=1199.9,
    )
    _xid(
        state,
        g,
        31,
        "channel 0x0000000c, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_PROP_0 faulted @ 0x0_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
        pid="13705",
        name="python3",
        ago=1100,
    )
    _xid(state, g, 43, "channel 0x0000000d", pid="13705", name="python3", ago=1099)
    return []


# ---------------------------------------------------------------------------------------------- API


def previous_of(state: dict, age: float = PREVIOUS_AGE_S) -> dict:
    """The same node `age` seconds earlier: traffic counters lower, same error counters, older log."""
    prev = clone(state)
    prev["now"] = state["now"] - age
    prev["kernel_log"] = [e for e in prev["kernel_log"] if e["time"] <= prev["now"]]
    for h in prev["hcas"]:
        for p in h["ports"]:
            for k in (
                "port_rcv_data",
                "port_xmit_data",
                "port_rcv_packets",
                "port_xmit_packets",
                "unicast_rcv_packets",
                "unicast_xmit_packets",
            ):
                p["counters"][k] = max(0, p["counters"][k] - int(age) * 1000003)
    prev["faults"] = []
    return prev


def apply(state: dict, name: str, rng: random.Random | None = None, prev: dict | None = None, **params) -> dict:
    """Apply fault `name` to state (in place). Returns {"expect": [...], "previous": prev or None}.

    For a needs_previous fault the earlier reading is `prev` (made with previous_of() when not given),
    taken BEFORE the fault changed the counters.
    """
    f = FAULTS[name]
    rng = rng or random.Random(0)
    if f.needs_previous:
        if prev is None:
            prev = previous_of(state)
        params["prev"] = prev
    expect = f.fn(state, rng, **params)
    for e in expect:
        e["fault"] = name
        m = re.match(r"^gpu(\d+)", e["component"])
        if m and "bus_id" not in e and int(m.group(1)) < len(state["gpus"]):
            # the GPU's identity even where the tools cannot give its index (a lost GPU stops the listing)
            e["bus_id"] = state["gpus"][int(m.group(1))]["bus_id"]
    state.setdefault("faults", []).append(name)
    return {"expect": expect, "previous": prev}
