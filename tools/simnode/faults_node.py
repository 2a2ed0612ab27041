"""IB, BMC, node and benign faults of the catalogue."""

from __future__ import annotations

from simnode.fault_kit import (
    _exp,
    _load,
    _log,
    _pick_gpu,
    _pick_hca,
    _xid,
    fault,
)


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
