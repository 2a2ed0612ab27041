# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU checks: inventory, ECC, row remapping, retired pages, recovery action, temperature, throttle, driver, diag."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_list,
    as_num,
    as_str,
    gpu_comp,
    gpu_label,
    gpu_list,
    sev_action,
)


def check_gpu_inventory(ctx: Ctx, facts: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> None:
    gpu = as_dict(facts.get("gpu"))
    gpus = gpu_list(facts)
    for g in gpus:
        if g.get("readable") is False:
            ctx.add(
                "gpu.missing",
                "P1",
                gpu_comp(g),
                "unreadable",
                "%s: the driver cannot read this GPU (%s)" % (gpu_label(g), g.get("error") or "no detail"),
                "reboot",
                "gpu.missing: GPU unreadable ('GPU is lost. Reboot the system to recover this GPU')",
                evidence={"bus_id": g.get("bus_id"), "error": g.get("error")},
                bus_id=normalize_bus_id(g.get("bus_id")),
                serial=as_str(g.get("serial")),
            )
    if not profile:
        return
    expected = profile.get("gpu_count")
    # the count is only meaningful when the tool listed every GPU: skip it when the GPU collector failed
    # (a lost GPU can make nvidia-smi stop listing: the gpu.missing/collector.error findings say so)
    incomplete = any(isinstance(e, dict) and e.get("kind") != "unreadable" for e in as_list(gpu.get("errors")))
    # nvidia-smi stops listing at a GPU it cannot read: the unreadable GPU's own finding covers the node
    incomplete = incomplete or any(g.get("readable") is False for g in gpus)
    if isinstance(expected, int) and not incomplete:
        count = gpu.get("count")
        if not isinstance(count, int) or isinstance(count, bool):
            count = len(gpus)
        if count < expected:
            ctx.add(
                "gpu.missing",
                "P1",
                "node",
                "count",
                "%d of %d expected GPUs visible" % (count, expected),
                "isolate",
                "gpu.missing: profile gpu_count=%d (AzNHC check_gpu_count, NHC2009)" % expected,
                evidence={"count": count, "expected": expected},
            )
    model = profile.get("gpu_model")
    if model:
        for g in gpus:
            name = g.get("name")
            if g.get("readable") is not False and name and model.lower() not in str(name).lower():
                ctx.add(
                    "gpu.drift",
                    "P3",
                    gpu_comp(g),
                    "model",
                    "%s is a %s, the profile expects %s" % (gpu_label(g), name, model),
                    "monitor",
                    "profile gpu_model",
                    evidence={"name": name, "expected": model},
                )


def check_row_remap(ctx: Ctx, g: Dict[str, Any], xids_here: set) -> None:
    rr = as_dict(g.get("remapped_rows"))
    if rr.get("supported") is False or not rr:
        return
    th = ctx.policy["thresholds"]["remap"]
    add = ctx.for_gpu(g)
    ev = {k: rr.get(k) for k in ("correctable", "uncorrectable", "pending", "failure", "histogram")}
    unc = as_num(rr.get("uncorrectable"))
    if rr.get("failure") is True:
        add(
            "gpu.row_remap",
            "P1",
            "failure",
            "%s: row remapping FAILED (an RMA criterion)" % gpu_label(g),
            "replace",
            "gpu.row_remap: remapped_rows.failure (NVIDIA: RMA; AzNHC NHC2007)",
            evidence=ev,
        )
    elif unc is not None and unc >= th["rma_uncorrectable_rows"]:
        add(
            "gpu.row_remap",
            "P1",
            "rma_limit",
            "%s: %d rows remapped for uncorrectable errors (RMA limit %s)"
            % (gpu_label(g), unc, th["rma_uncorrectable_rows"]),
            "replace",
            "gpu.row_remap: uncorrectable remaps >= %s (DCGM limit, #1190)" % th["rma_uncorrectable_rows"],
            evidence=ev,
        )
    if rr.get("pending") is True:
        hot = sorted(xids_here & set(th["uncorrectable_xids"]))
        sev = "P1" if hot else "P2"
        add(
            "gpu.row_remap",
            sev,
            "pending",
            "%s: a row remap is pending; reset the GPU when idle to activate it%s"
            % (gpu_label(g), " (uncorrectable Xid %s this boot)" % ",".join(map(str, hot)) if hot else ""),
            "reset_gpu",
            "gpu.row_remap: pending (NVIDIA row remapping: a reset activates the remap)%s"
            % ("; P1 with uncorrectable Xid" if hot else ""),
            evidence=dict(ev, xids=hot),
        )
    hist = as_dict(rr.get("histogram"))
    if hist:
        mx, hi, none = as_num(hist.get("max")), as_num(hist.get("high")), as_num(hist.get("none"))
        if mx is not None and hi is not None and mx + hi == 0:
            add(
                "gpu.row_remap",
                "P3",
                "histogram_exhausted",
                "%s: no memory bank has max/high remap availability left; plan a replacement" % gpu_label(g),
                "replace",
                "gpu.row_remap: row_remapper_histogram max+high == 0 (remap capacity running out)",
                evidence={"histogram": hist},
            )
        elif none is not None and none > 0:
            add(
                "gpu.row_remap",
                "P3",
                "histogram_none",
                "%s: %d memory banks have no remap capacity left" % (gpu_label(g), none),
                "monitor",
                "gpu.row_remap: row_remapper_histogram none > 0",
                evidence={"histogram": hist},
            )


def check_retired_pages(ctx: Ctx, g: Dict[str, Any]) -> None:
    rp = as_dict(g.get("retired_pages"))
    if rp.get("supported") is not True:  # N/A on Ampere+ (row remapping instead) is not a fault
        return
    th = ctx.policy["thresholds"]["retired_pages"]
    add = ctx.for_gpu(g)
    sbe, dbe = as_num(rp.get("sbe")) or 0, as_num(rp.get("dbe")) or 0
    if sbe + dbe >= th["max_total"]:
        add(
            "gpu.retired_pages",
            "P1",
            "max",
            "%s: %d pages retired (limit %s)" % (gpu_label(g), sbe + dbe, th["max_total"]),
            "replace",
            "gpu.retired_pages: total >= %s (DCGM max retired pages; AzNHC NHC2018)" % th["max_total"],
            evidence=rp,
        )
    elif dbe >= th["dbe_soft_limit"]:
        add(
            "gpu.retired_pages",
            "P2",
            "dbe",
            "%s: %d pages retired for double-bit errors" % (gpu_label(g), dbe),
            "monitor",
            "gpu.retired_pages: DBE >= %s (DCGM DBE soft limit)" % th["dbe_soft_limit"],
            evidence=rp,
        )
    if rp.get("pending") is True:
        add(
            "gpu.retired_pages",
            "P2",
            "pending",
            "%s: a page retirement is pending; reset the GPU (or reload the driver) when idle" % gpu_label(g),
            "reset_gpu",
            "gpu.retired_pages: pending retirement (NVIDIA dynamic page retirement)",
            evidence=rp,
        )


def check_recovery_action(ctx: Ctx, g: Dict[str, Any]) -> None:
    ra = g.get("recovery_action")
    rs = as_dict(g.get("reset_status"))  # v12 XML (R535..R570): gpu_reset_status instead of gpu_recovery_action
    if ra is None and rs.get("drain_and_reset_recommended") is True:
        ra = "drain_and_reset"
    elif ra is None and rs.get("reset_required") is True:
        if as_dict(g.get("remapped_rows")).get("pending") is True:
            return  # the reset a pending row remap needs: gpu.row_remap reports it (P2 "reset when idle")
        ra = "gpu_reset"
    if ra in (None, "none"):
        return
    sa = sev_action(ctx.policy["recovery_actions"], ra) or ("P2", "monitor")
    ctx.add(
        "gpu.recovery_action",
        sa[0],
        gpu_comp(g),
        ra,
        "%s: the driver asks for recovery action '%s'" % (gpu_label(g), ra),
        sa[1],
        "recovery_actions[%s] (NVML nvmlDeviceGpuRecoveryAction_t)" % ra,
        evidence={"recovery_action": g.get("recovery_action"), "reset_status": rs or None},
        bus_id=normalize_bus_id(g.get("bus_id")),
        serial=as_str(g.get("serial")),
    )


def _tlimit_levels(th: Dict[str, Any], t: Dict[str, Any], label: str, gpu_c: float, tl: float) -> tuple:
    """Drivers that report only T.Limit margins (H100-class, R535+): the GPU's distance below its own limit and
    the margins at which it slows down / shuts down (negative: past the limit). Compared as "how far past", so
    the same >= test as the Celsius levels: value = -margin, limits = -(threshold margin + our margin)."""
    slow_m = as_num(t.get("slowdown_tlimit_c"))
    shut_m = as_num(t.get("shutdown_tlimit_c"))
    slow_m = slow_m if slow_m is not None else th["tlimit_fallback_slowdown_c"]
    shut_m = shut_m if shut_m is not None else th["tlimit_fallback_shutdown_c"]
    p1 = -(shut_m + th["gpu_shutdown_margin_c"])
    p2 = -(slow_m + th["gpu_slowdown_margin_c"])
    hot = (p1, "%s: %g C, T.Limit margin %g C, at its shutdown margin (%g C)" % (label, gpu_c, tl, shut_m))
    warm = (p2, "%s: %g C, T.Limit margin %g C, near its slowdown margin (%g C)" % (label, gpu_c, tl, slow_m))
    return (
        "gpu",
        -tl,
        hot + ("tlimit_c <= shutdown T.Limit %g + %s C" % (shut_m, th["gpu_shutdown_margin_c"]),),
        warm + ("tlimit_c <= slowdown T.Limit %g + %s C" % (slow_m, th["gpu_slowdown_margin_c"]),),
    )


def _memory_levels(th: Dict[str, Any], t: Dict[str, Any], label: str, mem_c: float) -> tuple:
    """HBM against the GPU's own Memory Max Operating Temp (NVML_TEMPERATURE_THRESHOLD_MEM_MAX: where SW thermal
    slowdown starts, gpu-knowledge-2026.md section 6) when it reports one in Celsius: P2 at it, P1 past it by the
    policy's P1-P2 gap; the fixed policy numbers only when it does not (absent, N/A, or only a T.Limit margin)."""
    own = as_num(t.get("memory_max_operating_c"))
    if own is not None and own > 0:
        gap = th["memory_p1_c"] - th["memory_p2_c"]
        message = "%s: memory at %g C (its max operating temperature: %g C)" % (label, mem_c, own)
        hot = (own + gap, message, "memory_c >= memory_max_operating_c %g + %g C" % (own, gap))
        warm = (own, message, "memory_c >= memory_max_operating_c %g C (the GPU's own HBM limit)" % own)
        return ("memory", mem_c, hot, warm)
    message = "%s: memory at %g C" % (label, mem_c)
    hot = (th["memory_p1_c"], message, "memory_c >= %s C (no own limit reported)" % th["memory_p1_c"])
    warm = (
        th["memory_p2_c"],
        message,
        "memory_c >= %s C (HBM max operating; no own limit reported)" % th["memory_p2_c"],
    )
    return ("memory", mem_c, hot, warm)


def check_temperature(ctx: Ctx, g: Dict[str, Any]) -> None:
    """GPU and memory temperature: P1 (emergency_shutdown) at the hot limit, P2 (tune) at the warm one."""
    th = ctx.policy["thresholds"]["temperature"]
    t = as_dict(g.get("temperature"))
    gpu_c, mem_c = as_num(t.get("gpu_c")), as_num(t.get("memory_c"))
    slow, shut = as_num(t.get("slowdown_c")), as_num(t.get("shutdown_c"))
    label = gpu_label(g)
    levels = []  # (code, value, (hot limit, message, rule), (warm limit, message, rule))
    tl = as_num(t.get("tlimit_c"))
    if gpu_c is not None and not (slow and slow > 0) and tl is not None:
        levels.append(_tlimit_levels(th, t, label, gpu_c, tl))
    elif gpu_c is not None:
        p1 = shut - th["gpu_shutdown_margin_c"] if shut and shut > 0 else th["gpu_fallback_p1_c"]
        p2 = slow - th["gpu_slowdown_margin_c"] if slow and slow > 0 else th["gpu_fallback_p2_c"]
        hot = (p1, "%s: %g C, at its shutdown temperature (%g C)" % (label, gpu_c, shut or p1))
        warm = (p2, "%s: %g C, near its slowdown temperature (%g C)" % (label, gpu_c, slow or p2))
        rules = (
            "gpu_c >= shutdown - %s C" % th["gpu_shutdown_margin_c"],
            "gpu_c >= slowdown - %s C" % th["gpu_slowdown_margin_c"],
        )
        levels.append(("gpu", gpu_c, hot + (rules[0],), warm + (rules[1],)))
    if mem_c is not None:
        levels.append(_memory_levels(th, t, label, mem_c))
    for code, value, hot, warm in levels:
        for (limit, message, rule), sev, action in ((hot, "P1", "emergency_shutdown"), (warm, "P2", "tune")):
            if value >= limit:
                ctx.add(
                    "gpu.temperature", sev, gpu_comp(g), code, message, action, "gpu.temperature: " + rule, evidence=t
                )
                break


def check_throttle(ctx: Ctx, gpus: List[Dict[str, Any]]) -> None:
    reasons = ctx.policy["thresholds"]["throttle"]["reasons"]
    by_reason: Dict[str, List[Dict[str, Any]]] = {}
    readable = [g for g in gpus if g.get("readable") is not False]
    for g in readable:
        for r in as_list(as_dict(g.get("throttle")).get("active")):
            if isinstance(r, str) and r in reasons:
                by_reason.setdefault(r, []).append(g)
    for r, gs in sorted(by_reason.items()):
        sev, action = sev_action(reasons, r) or ("P2", "monitor")
        rule = "thresholds.throttle.reasons[%s]" % r
        everywhere = len(gs) > 1 and len(gs) == len(readable)
        for g in gs:
            ctx.add(
                "gpu.throttle",
                sev,
                gpu_comp(g),
                r,
                "%s: clocks reduced by %s%s"
                % (
                    gpu_label(g),
                    r,
                    " (on every GPU: an external signal, check PSU/BMC/cooling)" if everywhere else "",
                ),
                action,
                rule,
                evidence={"active": as_dict(g.get("throttle")).get("active"), "on_every_gpu": everywhere},
            )
    pct = ctx.policy["thresholds"]["power"]["cap_below_default_pct"]
    for g in readable:
        p = as_dict(g.get("power"))
        lim, dflt = as_num(p.get("enforced_limit_w")), as_num(p.get("default_limit_w"))
        if lim and dflt and lim < dflt * (1 - pct / 100.0):
            ctx.add(
                "gpu.throttle",
                "P3",
                gpu_comp(g),
                "power_cap",
                "%s: power limit %g W is below the default %g W" % (gpu_label(g), lim, dflt),
                "tune",
                "thresholds.power.cap_below_default_pct=%s" % pct,
                evidence={"power": p},
            )


#: cumulative clock event counters judged between two readings: reason -> (severity, action, share of the interval)
#: HW power brake (external power brake signal, ``0x80``) and HW/SW thermal slowdown cut the clocks hard
#: (section 6: HwSlowdown >= 2x clock cut); any brake time between polls is a finding even when the flag is
#: clear at the moment of reading; sw_power_cap and sync_boost are normal under load and not judged.
THROTTLE_COUNTER_RULES = {
    "hw_power_brake_slowdown": ("P2", "monitor", 0.0),
    "hw_thermal_slowdown": ("P2", "tune", 0.0),
    "sw_thermal_slowdown": ("P3", "tune", 0.01),
}


def check_throttle_counters(ctx: Ctx, g: Dict[str, Any], window: Any) -> None:
    """Clock event time accumulated between the previous reading and this one (microseconds, R590+ XML/text or
    NVML FI 269-271): a power brake or thermal slowdown that came and went between two polls."""
    prev, cur, interval = window
    counters = as_dict(as_dict(g.get("throttle")).get("counters_us"))
    if not counters:
        return
    cur["throttle_us"] = dict(counters)
    before = as_dict(prev.get("throttle_us"))
    if not before or not interval or interval <= 0:
        return
    for reason, (sev, action, share) in sorted(THROTTLE_COUNTER_RULES.items()):
        a, b = as_num(counters.get(reason)), as_num(before.get(reason))
        if a is None or b is None or a < b:
            continue  # unknown, or the counter restarted (driver reload): a new baseline
        delta_s = (a - b) / 1e6
        if delta_s <= 0 or delta_s <= share * interval:
            continue
        ctx.for_gpu(g)(
            "gpu.throttle",
            sev,
            reason + "_time",
            "%s: %.1f s of %s in the %.0f s since the last reading (%.1f%%)"
            % (gpu_label(g), delta_s, reason, interval, 100.0 * delta_s / interval),
            action,
            "gpu.throttle: cumulative %s counter grew between two readings (NVML FI 269-271 / nvidia-smi Clocks "
            "Event Reasons Counters; > %g%% of the interval)" % (reason, share * 100),
            evidence={"delta_s": round(delta_s, 3), "interval_s": interval, "counters_us": counters},
        )


def check_driver(ctx: Ctx, facts: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> None:
    want = (profile or {}).get("driver_version")
    have = as_dict(facts.get("gpu")).get("driver_version")
    if not want or not have or str(want) == str(have):
        return
    message = "driver %s, the profile expects %s" % (have, want)
    rule = "gpu.driver: profile driver_version (bring it in line with the upgrade playbook)"
    ctx.add(
        "gpu.driver",
        "P3",
        "node",
        "version",
        message,
        "tune",
        rule,
        evidence={"driver_version": have, "expected": want},
    )


#: DCGM's per-error severity (dcgm_errors.c; gpu-knowledge-2026.md section 5) -> (severity, action, why). Only
#: ISOLATE-class errors isolate; a configuration error (persistence mode, denylisted driver, ECC off, an env var)
#: is a P2 tune, and an internal diag error (the diagnostic itself broke, NVIDIA/DCGM#254) is no GPU verdict.
DIAG_SEVERITY = {
    "isolate": ("P1", "isolate", "DCGM severity ISOLATE"),
    "reset": ("P1", "reset_gpu", "DCGM severity RESET (drain and reset the GPU)"),
    "unclassified": ("P1", "isolate", "DCGM gave no severity and the message is not a known DCGM error"),
    "triage": ("P2", "monitor", "DCGM severity TRIAGE (investigate)"),
    "config": ("P2", "tune", "DCGM severity CONFIG (a configuration error, not a GPU fault)"),
    "internal": ("P2", "monitor", "DCGM_FR_INTERNAL: the diagnostic failed to run its test; rerun it"),
    "monitor": ("P3", "monitor", "DCGM severity MONITOR"),
}
_DIAG_RANK = ("isolate", "reset", "unclassified", "triage", "config", "internal", "monitor")


def _diag_class(issues: List[Dict[str, Any]], res: str) -> Optional[str]:
    """The worst DCGM severity among the issues that concern one GPU (or the node); None: no message at all."""
    classes = set()
    for i in issues:
        sev = i.get("severity")
        classes.add(sev if sev in DIAG_SEVERITY else "unclassified")
    if not classes:
        return None
    if res != "fail":
        classes.discard("unclassified")
    return next((c for c in _DIAG_RANK if c in classes), None)


def _diag_issues(tests: List[Any], idx: Optional[str]) -> List[Dict[str, Any]]:
    out = []
    for t in tests:
        failed_here = idx is None or as_dict(t.get("gpus")).get(idx) in ("fail", "warn")
        for i in as_list(t.get("issues")):
            if not isinstance(i, dict):
                continue
            gpu = i.get("gpu")
            if (idx is None) or (gpu is not None and str(gpu) == idx) or (gpu is None and failed_here):
                out.append(i)
    return out


def _diag_finding(
    ctx: Ctx, comp_gpu: Optional[Dict[str, Any]], res: str, level: Any, issues: list, tests: list
) -> None:
    cls = _diag_class(issues, res)
    if cls is None:
        sev, action, why = (
            ("P1", "isolate", "dcgmi diag fail") if res == "fail" else ("P2", "monitor", "dcgmi diag warn")
        )
    else:
        sev, action, why = DIAG_SEVERITY[cls]
        if res == "warn" and sev == "P1":
            sev = "P2"  # a warning is not a failure, whatever its class
    codes = sorted({str(i.get("code") or i.get("error_id")) for i in issues if i.get("code") or i.get("error_id")})
    label = gpu_label(comp_gpu) if comp_gpu is not None else "node"
    where = {}
    if comp_gpu is not None:
        where = {"bus_id": normalize_bus_id(comp_gpu.get("bus_id")), "serial": as_str(comp_gpu.get("serial"))}
    ctx.add(
        "gpu.diag",
        sev,
        gpu_comp(comp_gpu) if comp_gpu is not None else "node",
        res,
        "%s: DCGM diag level %s: %s (%s)%s"
        % (label, level, res, ", ".join(tests) or "no test named", " [%s]" % ", ".join(codes) if codes else ""),
        action,
        "gpu.diag: dcgmi diag %s, %s (AzNHC NHC2020; DCGM per-error severity, dcgm_errors.c)" % (res, why),
        evidence={"level": level, "tests": tests, "severity": cls, "issues": issues[:8]},
        **where,
    )


def check_diag(ctx: Ctx, facts: Dict[str, Any]) -> None:
    """dcgmi diag results per GPU, each judged by DCGM's own severity of the errors it printed."""
    d = as_dict(facts.get("dcgm"))
    if not d or d.get("overall") is None and not d.get("gpus"):
        return
    by_idx = {str(g.get("index")): g for g in gpu_list(facts)}
    tests = [t for t in as_list(d.get("tests")) if isinstance(t, dict)]
    failed_tests: Dict[str, List[str]] = {}
    for t in tests:
        for idx, res in as_dict(t.get("gpus")).items():
            if res in ("fail", "warn"):
                failed_tests.setdefault(str(idx), []).append("%s:%s" % (t.get("name"), res))
    level = d.get("level")
    seen = False
    for idx, res in sorted(as_dict(d.get("gpus")).items()):
        if res not in ("fail", "warn"):
            continue
        seen = True
        g = by_idx.get(str(idx), {"index": _int_or(idx)})
        _diag_finding(ctx, g, res, level, _diag_issues(tests, str(idx)), failed_tests.get(str(idx), []))
    if not seen and d.get("overall") in ("fail", "warn"):
        names = ["%s:%s" % (t.get("name"), t.get("result")) for t in tests if t.get("result") in ("fail", "warn")]
        _diag_finding(ctx, None, d["overall"], level, _diag_issues(tests, None), names)


def _int_or(v: Any) -> Any:
    try:
        return int(v)
    except (TypeError, ValueError):
        return v
