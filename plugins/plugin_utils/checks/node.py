# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node checks: mounts, services, the NVIDIA fabric manager, PCIe AER (``node.pcie_aer``, kernel domain)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_list,
    as_num,
    as_str,
    gpu_comp,
    gpu_list,
)


def check_node(ctx: Ctx, facts: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> None:
    node = as_dict(facts.get("node"))
    wanted_mounts = set(str(m) for m in as_list((profile or {}).get("mounts")))
    min_free = ctx.policy["thresholds"]["mounts"]["min_free_pct"]
    for m in as_list(node.get("mounts")):
        if not isinstance(m, dict):
            continue
        path = m.get("path")
        comp = "mount:%s" % path
        if m.get("present") is False:
            if path in wanted_mounts:
                ctx.add(
                    "node.mounts",
                    "P1",
                    comp,
                    "missing",
                    "%s is not mounted" % path,
                    "isolate",
                    "node.mounts: profile mounts",
                    evidence=m,
                )
        elif m.get("responsive") is False:
            ctx.add(
                "node.mounts",
                "P1",
                comp,
                "hung",
                "%s does not respond (%s)" % (path, m.get("error")),
                "isolate",
                "node.mounts: a hung mount hangs every job that touches it",
                evidence=m,
            )
        elif as_num(m.get("free_pct")) is not None and as_num(m.get("free_pct")) < min_free:
            ctx.add(
                "node.mounts",
                "P2",
                comp,
                "full",
                "%s has %s%% free" % (path, m.get("free_pct")),
                "monitor",
                "thresholds.mounts.min_free_pct=%s" % min_free,
                evidence=m,
            )
    services = as_dict(node.get("services"))
    for name in as_list((profile or {}).get("services")):
        if name == "nvidia-fabricmanager":
            continue  # node.fabric_manager
        svc = services.get(name)
        if isinstance(svc, dict) and svc.get("running") is False:
            ctx.add(
                "node.services",
                "P2",
                "service:%s" % name,
                "not_running",
                "service %s is not running" % name,
                "tune",
                "node.services: profile services",
                evidence=svc,
            )
    fm = services.get("nvidia-fabricmanager")
    need = bool((profile or {}).get("nvswitch"))
    fm_running = isinstance(fm, dict) and fm.get("running") is True
    if need and not fm_running:
        ctx.add(
            "node.fabric_manager",
            "P1",
            "service:nvidia-fabricmanager",
            "not_running",
            "nvidia-fabricmanager is not running on an NVSwitch system: GPUs cannot use NVLink",
            "isolate",
            "node.fabric_manager: profile nvswitch=true",
            evidence={"service": fm},
        )
    if need or fm_running:
        fmv = node.get("fabric_manager_version") or (fm or {}).get("version")
        drv = as_dict(facts.get("gpu")).get("driver_version") or (profile or {}).get("fabric_manager_version")
        if fmv and drv and str(fmv) != str(drv):
            ctx.add(
                "node.fabric_manager",
                "P1",
                "service:nvidia-fabricmanager",
                "version_mismatch",
                "fabric manager %s does not match driver %s" % (fmv, drv),
                "isolate",
                "node.fabric_manager: version must equal the driver's (FM refuses to start otherwise)",
                evidence={"fabric_manager_version": fmv, "driver_version": drv},
            )


# ------------------------------------------------------------------------------------------ PCIe AER (issue 38)

_AER_SEV = {"fatal": 2, "uncorrected": 1, "corrected": 0}


def _aer_devices(events: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """AER events per source device: counts by severity, times, error types, the ports that received them."""
    out: Dict[str, Dict[str, Any]] = {}
    for e in events:
        bus = normalize_bus_id(e.get("bus_id"))
        if not bus:
            continue
        d = out.setdefault(
            bus,
            {
                "corrected": 0,
                "uncorrected": 0,
                "fatal": 0,
                "times": [],
                "types": set(),
                "reporters": set(),
                "driver": None,
                "lines": [],
            },
        )
        sev = e.get("severity") if e.get("severity") in _AER_SEV else "uncorrected"
        d[sev] += 1
        detail = as_dict(e.get("detail"))
        if detail.get("type"):
            d["types"].add(str(detail["type"]))
        rep = normalize_bus_id(detail.get("reporter"))
        if rep and rep != bus:
            d["reporters"].add(rep)
        d["driver"] = d["driver"] or as_str(detail.get("driver"))
        ts = parse_time(e.get("timestamp"))
        if ts is not None and sev == "corrected":
            d["times"].append(ts)
        if len(d["lines"]) < 3:
            d["lines"].append(e.get("line"))
    return out


def _peak_per_minute(times: List[Any]) -> int:
    times = sorted(times)
    best, j = 0, 0
    for i, t in enumerate(times):
        while (t - times[j]).total_seconds() >= 60.0:
            j += 1
        best = max(best, i - j + 1)
    return best


def _gen5_x16(gpu: Dict[str, Any]) -> bool:
    pcie = as_dict(gpu.get("pcie"))
    gen = as_num(pcie.get("gen_max")) or as_num(pcie.get("gen_current"))
    width = as_num(pcie.get("width_max")) or as_num(pcie.get("width_current"))
    return bool(gen and width and gen >= 5 and width >= 16)


def check_pcie_aer(ctx: Ctx, facts: Dict[str, Any], counts) -> None:
    """``node.pcie_aer``: AER events of the kernel log (inside the kernel-event window) on a GPU or on the PCIe port
    above it (the port that received the GPU's error messages, or a port that printed the AER itself).

    Uncorrectable fatal / non-fatal: a finding per device. Corrected: counted per device against DCGM's limits
    (``thresholds.pcie_aer``). With Xid 79 (fallen off the bus) on the node, AER on the port side points at the
    slot/riser (reseat), AER on the GPU alone at the GPU (replacement through the vendor); one finding per fallen
    GPU records which, in its evidence (``points_at``)."""
    th = ctx.policy["thresholds"]["pcie_aer"]
    events = [e for e in as_list(as_dict(facts.get("kernel")).get("events")) if isinstance(e, dict)]
    gpus = {normalize_bus_id(g.get("bus_id")): g for g in gpu_list(facts) if normalize_bus_id(g.get("bus_id"))}
    fallen = set()
    for e in events:
        bus = normalize_bus_id(e.get("bus_id"))
        if bus and (e.get("kind") == "fallen_off_bus" or (e.get("kind") == "xid" and e.get("code") == 79)):
            if counts(e, bus):
                fallen.add(bus)
    aer = [e for e in events if e.get("kind") == "aer" and counts(e, normalize_bus_id(e.get("bus_id")))]
    if not aer:
        return
    devs = _aer_devices(aer)
    gpu_set = set(gpus) | fallen
    # the ports above each GPU: those that received its error messages
    above: Dict[str, set] = {g: set(devs[g]["reporters"]) if g in devs else set() for g in gpu_set}
    ports = {
        b
        for b, d in devs.items()
        if b not in gpu_set and (d["driver"] == "pcieport" or any(b in s for s in above.values()))
    }
    # what each port is known to be above (the sources whose messages it received)
    below: Dict[str, set] = {p: {b for b, d in devs.items() if p in d["reporters"]} for p in ports}
    folded = set()
    for g in sorted(fallen):
        # a port tied to this GPU by the log, or (one GPU fell) a port known to be above nothing else
        port_side = sorted(p for p in ports if p in above[g] or (len(fallen) == 1 and not below[p] - {g}))
        gpu_side = g in devs
        if not port_side and not gpu_side:
            continue  # Xid 79 without AER: gpu.xid's alone
        folded.update(port_side)
        folded.add(g)
        slot = bool(port_side)
        rule = th["xid79_slot" if slot else "xid79_gpu"]
        ev = {
            "points_at": "slot_riser" if slot else "gpu",
            "remedy": "reseat the GPU and its riser/cable, check the slot"
            if slot
            else "replace the GPU (through the vendor: NVIDIA's Xid 79 resolution is contact support)",
            "gpu_aer": _dev_ev(devs.get(g)),
            "port_aer": {p: _dev_ev(devs[p]) for p in port_side},
            "tied_by": "the port received the GPU's AER messages"
            if any(p in above[g] for p in port_side)
            else ("the only GPU with Xid 79 on the node" if port_side else None),
        }
        ctx.add(
            "node.pcie_aer",
            rule["severity"],
            _gpu_comp(gpus.get(g), g),
            "xid79",
            "GPU %s fell off the bus (Xid 79) with PCIe AER %s: %s"
            % (
                g,
                "on the port above it (%s): the slot/riser, not the GPU, is the suspect" % ", ".join(port_side)
                if slot
                else "on the GPU only: the GPU is the suspect",
                ev["remedy"],
            ),
            rule["action"],
            "node.pcie_aer: Xid 79 with AER on the %s (thresholds.pcie_aer.%s)"
            % ("upstream port" if slot else "GPU", "xid79_slot" if slot else "xid79_gpu"),
            evidence=ev,
            bus_id=g,
        )
    for bus, d in sorted(devs.items()):
        owner = next((g for g in sorted(gpu_set) if bus in above[g]), None)
        if bus in folded or not (bus in gpu_set or owner):
            continue  # a port above no known GPU (a NIC's, an NVMe's): not this check's
        what = "GPU %s" % bus if bus in gpu_set else "PCIe port %s above GPU %s" % (bus, owner)
        comp = _gpu_comp(gpus.get(bus), bus) if bus in gpu_set else "pcie:%s" % bus
        worst = "fatal" if d["fatal"] else "nonfatal" if d["uncorrected"] else None
        if worst:
            rule = th[worst]
            ctx.add(
                "node.pcie_aer",
                rule["severity"],
                comp,
                worst,
                "%s: %d uncorrectable %s PCIe AER error%s (%s): run the DCGM PCIe diagnostic (dcgmi diag -r pcie) "
                "and check the slot"
                % (
                    what,
                    d["fatal"] or d["uncorrected"],
                    "fatal" if d["fatal"] else "non-fatal",
                    "s" if (d["fatal"] or d["uncorrected"]) > 1 else "",
                    ", ".join(sorted(d["types"])) or "type not printed",
                ),
                rule["action"],
                "node.pcie_aer: uncorrectable AER on a GPU or its port (thresholds.pcie_aer.%s)" % worst,
                evidence=_dev_ev(d, owner=owner),
            )
            continue
        gen5 = bus in gpus and _gen5_x16(gpus[bus])
        limit = th["corrected_per_minute_gen5_x16" if gen5 else "corrected_per_minute"]
        peak = _peak_per_minute(d["times"])
        if peak > limit or d["corrected"] >= th["corrected_total"]:
            rule = th["corrected"]
            ctx.add(
                "node.pcie_aer",
                rule["severity"],
                comp,
                "corrected",
                "%s: %d corrected PCIe AER errors logged (peak %d in one minute; DCGM's limits: %d/min, %d in "
                "total): a marginal link; run dcgmi diag -r pcie"
                % (what, d["corrected"], peak, limit, th["corrected_total"]),
                rule["action"],
                "node.pcie_aer: corrected AER above DCGM's PCIe limits (logged lines are rate limited: a lower bound)",
                evidence=dict(_dev_ev(d, owner=owner), peak_per_minute=peak, limit_per_minute=limit),
            )


def _dev_ev(d: Optional[Dict[str, Any]], owner: Optional[str] = None) -> Optional[Dict[str, Any]]:
    if d is None:
        return None
    out = {k: d[k] for k in ("corrected", "uncorrected", "fatal", "driver")}
    out.update(types=sorted(d["types"]), received_by=sorted(d["reporters"]), lines=d["lines"])
    if owner:
        out["gpu"] = owner
    return out


def _gpu_comp(gpu: Optional[Dict[str, Any]], bus: str) -> str:
    return gpu_comp(gpu) if gpu else "gpu:%s" % bus
