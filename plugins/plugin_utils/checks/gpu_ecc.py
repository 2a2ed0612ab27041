# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU ECC checks (gpu.ecc): uncorrectable counts and the Xid that explains them, correctable counts per memory
type (SRAM and DRAM separately), NVIDIA's RMA flags (SRAM threshold exceeded, unrepairable memory) and the
channel/TPC repair a reset applies (Blackwell).

Sources: NVIDIA "GPU Memory Error Management" (row remapping; the SRAM error threshold and unrepairable memory are
RMA criteria); DCGM health watch MEM (fails the GPU on them); Azure NHC check_gpu_ecc (SRAM correctable 10,000,
DRAM 20,000,000: DRAM tolerates far more correctable errors, row remapping handles them).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_num,
    as_str,
    gpu_label,
)


def _remembered(hs: Dict[str, Any], g: Dict[str, Any], vu: float) -> Optional[Dict[str, Any]]:
    """The Xid that explained this GPU's volatile uncorrectable count in an earlier run, while the count has not
    grown (a larger count has errors no Xid explained; a smaller one means the driver reloaded)."""
    bus = normalize_bus_id(g.get("bus_id"))
    mem = as_dict(as_dict(hs.get("ecc_explained")).get(bus)) if bus else {}
    if not mem or mem.get("serial") != as_str(g.get("serial")) or as_num(mem.get("volatile_uncorrected")) != vu:
        return None
    return mem


def _remember(ctx: Ctx, hs: Optional[Dict[str, Any]], g: Dict[str, Any], vu: Any, xids: list) -> None:
    if hs is None:
        return
    bus = normalize_bus_id(g.get("bus_id"))
    table = hs.setdefault("ecc_explained", {}) if isinstance(hs.get("ecc_explained"), dict) else {}
    hs["ecc_explained"] = table
    if not bus:
        return
    if xids:
        prev = as_dict(table.get(bus))
        same = prev.get("serial") == as_str(g.get("serial")) and as_num(prev.get("volatile_uncorrected")) == vu
        table[bus] = {
            "serial": as_str(g.get("serial")),
            "volatile_uncorrected": vu,
            "xids": xids,
            "seen_at": prev.get("seen_at") if same else iso_z(ctx.ref),
        }
    else:
        table.pop(bus, None)


def _uncorrected(ctx: Ctx, g: Dict[str, Any], xids_here: set, hs: Optional[Dict[str, Any]], vu: float) -> None:
    th = ctx.policy["thresholds"]["ecc"]
    ecc = as_dict(g.get("ecc"))
    uncontained = sorted(xids_here & set(ctx.policy["thresholds"]["remap"]["uncorrectable_xids"]))
    contained = sorted(xids_here & set(th["contained_xids"]))
    mem = _remembered(hs or {}, g, vu) if not (contained or uncontained) else None
    if contained and not uncontained:
        # Xid 94: the error was contained, only the application was killed; the GPU stays usable
        sev, action = "P2", "monitor"
        why = "contained (Xid %s: NVIDIA RESTART_APP, the GPU stays usable)" % ",".join(map(str, contained))
        _remember(ctx, hs, g, vu, contained)
    elif mem and not uncontained:
        # the Xid aged out of the log window, the counter did not move: still the same, explained errors
        sev, action = "P2", "monitor"
        why = "contained (Xid %s seen at %s, the count has not grown since)" % (
            ",".join(map(str, mem.get("xids") or [])),
            mem.get("seen_at"),
        )
    else:
        sev, action = "P1", "reset_gpu"
        why = "uncontained%s (NVIDIA WORKFLOW_XID_48: reset to remap/retire)" % (
            " (Xid %s)" % ",".join(map(str, uncontained)) if uncontained else ", no Xid explains it"
        )
        _remember(ctx, hs, g, vu, [])
    ctx.for_gpu(g)(
        "gpu.ecc",
        sev,
        "volatile_uncorrected",
        "%s: %d uncorrectable ECC errors since the driver loaded, %s" % (gpu_label(g), vu, why.split(" (", 1)[0]),
        action,
        "gpu.ecc: volatile uncorrected >= %s, %s" % (th["volatile_uncorrected"], why),
        evidence={"volatile": ecc.get("volatile"), "aggregate": ecc.get("aggregate"), "xids": sorted(xids_here)},
    )


def _corrected(ctx: Ctx, g: Dict[str, Any]) -> None:
    """Correctable counts since the driver loaded: SRAM and DRAM against their own thresholds when the driver
    splits them (R510+ layouts), the total against the SRAM threshold otherwise."""
    th = ctx.policy["thresholds"]["ecc"]
    ecc = as_dict(g.get("ecc"))
    split = as_dict(as_dict(ecc.get("by_type")).get("volatile"))
    if split.get("sram_corrected") is not None or split.get("dram_corrected") is not None:
        parts = (
            ("sram", as_num(split.get("sram_corrected")), th["volatile_sram_corrected"], "AzNHC SRAM threshold"),
            ("dram", as_num(split.get("dram_corrected")), th["volatile_dram_corrected"], "AzNHC DRAM threshold"),
        )
    else:
        vc = as_num(as_dict(ecc.get("volatile")).get("corrected"))
        parts = (("", vc, th["volatile_corrected"], "SRAM and DRAM not reported apart: the SRAM threshold"),)
    for kind, count, limit, source in parts:
        if count is None or count < limit:
            continue
        ctx.for_gpu(g)(
            "gpu.ecc",
            "P2",
            "volatile_corrected" + ("_" + kind if kind else ""),
            "%s: %d correctable %sECC errors since the driver loaded"
            % (gpu_label(g), count, kind.upper() + " " if kind else ""),
            "monitor",
            "gpu.ecc: volatile %scorrected >= %s (%s)" % (kind + " " if kind else "", limit, source),
            evidence={"volatile": ecc.get("volatile"), "by_type": ecc.get("by_type")},
        )


def _rma_flags(ctx: Ctx, g: Dict[str, Any]) -> None:
    ecc = as_dict(g.get("ecc"))
    flags = (
        ("sram_threshold_exceeded", "sram_threshold", "SRAM correctable/uncorrectable errors past NVIDIA's threshold"),
        ("unrepairable_memory", "unrepairable", "memory the GPU can no longer repair"),
    )
    for key, code, what in flags:
        if ecc.get(key) is True:
            ctx.for_gpu(g)(
                "gpu.ecc",
                "P1",
                code,
                "%s: %s (%s: Yes)" % (gpu_label(g), what, key),
                "replace",
                "gpu.ecc: %s (NVIDIA memory error management: RMA criterion; DCGM MEM health watch fails the GPU)"
                % key,
                evidence={key: True, "aggregate": ecc.get("aggregate")},
            )


def _repair_pending(ctx: Ctx, g: Dict[str, Any]) -> None:
    """Channel / TPC repair pending (Blackwell: the third uncorrectable remap on a bank invokes HBM channel repair;
    NVIDIA memory error management): the repair is applied at the next GPU reset, like a pending row remap."""
    ecc = as_dict(g.get("ecc"))
    pending = [k for k in ("channel_repair_pending", "tpc_repair_pending") if ecc.get(k) is True]
    if not pending:
        return
    ctx.for_gpu(g)(
        "gpu.ecc",
        "P2",
        "repair_pending",
        "%s: %s; reset the GPU when idle to apply the repair"
        % (gpu_label(g), " and ".join(k.replace("_", " ") for k in pending)),
        "reset_gpu",
        "gpu.ecc: %s (NVIDIA memory error management: channel repair is applied at the next reset)"
        % ", ".join(pending),
        evidence={k: ecc.get(k) for k in ("channel_repair_pending", "tpc_repair_pending", "unrepairable_memory")},
    )


def check_ecc(ctx: Ctx, g: Dict[str, Any], xids_here: set, hs: Optional[Dict[str, Any]] = None) -> None:
    """gpu.ecc for one GPU. ``xids_here``: the Xids of this GPU in the kernel-event window; ``hs``: the host state,
    where the Xid that explained an uncorrectable count is remembered (the count outlives the log window)."""
    th = ctx.policy["thresholds"]["ecc"]
    ecc = as_dict(g.get("ecc"))
    vol, agg = as_dict(ecc.get("volatile")), as_dict(ecc.get("aggregate"))
    vu = as_num(vol.get("uncorrected"))
    au, ac = as_num(agg.get("uncorrected")), as_num(agg.get("corrected"))
    if vu is not None and vu >= th["volatile_uncorrected"]:
        _uncorrected(ctx, g, xids_here, hs, vu)
    else:
        if vu is not None:
            _remember(ctx, hs, g, vu, [])
        _corrected(ctx, g)
    _rma_flags(ctx, g)
    _repair_pending(ctx, g)
    if (au is not None and au >= th["aggregate_uncorrected"]) or (ac is not None and ac >= th["aggregate_corrected"]):
        # Lifetime counters survive reboots and GPU moves: advice only, never an alarm by themselves.
        ctx.for_gpu(g)(
            "gpu.ecc",
            "P3",
            "aggregate",
            "%s: lifetime ECC counts corrected=%s uncorrected=%s"
            % (gpu_label(g), agg.get("corrected"), agg.get("uncorrected")),
            "monitor",
            "gpu.ecc: aggregate (lifetime) counts are advice only (P3)",
            evidence={"aggregate": agg},
        )
