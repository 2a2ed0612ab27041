"""GPU faults of the catalogue: Xids, ECC and row remapping, throttling, PCIe, NVLink, driver, DCGM."""

from __future__ import annotations

from simnode.fault_kit import (
    _diag_stops,
    _exp,
    _load,
    _log,
    _pci,
    _pick_gpu,
    _remap_failed,
    _xid,
    fault,
)


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
    _remap_failed(g)
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
    # third register bit 16 once: NVIDIA "if seen repeatedly, run field diags", and "a GPU reset or node reboot is
    # needed to clear" an Xid 74 -> P2 reset_gpu (issue 38); the links down carry the P1
    return [
        _exp("gpu.xid", "gpu%d" % g["index"], "P2", "74"),
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
    _remap_failed(g)
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
