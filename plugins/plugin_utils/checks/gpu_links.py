# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU interconnect checks: PCIe (generation, width, replay rate), NVLink (links, error rates), fabric."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    RateWindow,
    as_dict,
    as_list,
    as_num,
    gpu_comp,
    gpu_label,
)


def _under_load(ctx: Ctx, g: Dict[str, Any]) -> bool:
    if "gpu_idle" in as_list(as_dict(g.get("throttle")).get("active")):
        return False
    util = as_num(as_dict(g.get("utilization")).get("gpu_pct"))
    return util is not None and util >= ctx.policy["thresholds"]["pcie"]["load_utilization_pct"]


def check_pcie(ctx: Ctx, g: Dict[str, Any], profile: Optional[Dict[str, Any]], window: RateWindow) -> None:
    """Link generation and width against the profile; the replay-counter rate over ``window``."""
    prev, cur, interval = window
    p = as_dict(g.get("pcie"))
    add_bus = ctx.for_gpu(g, serial=False)
    gen, width = as_num(p.get("gen_current")), as_num(p.get("width_current"))
    want_gen = (profile or {}).get("pcie_gen") or as_num(p.get("gen_max"))
    if gen is not None and want_gen and gen < want_gen and _under_load(ctx, g):
        add_bus(
            "gpu.pcie",
            "P2",
            "gen",
            "%s: PCIe Gen%d under load, expected Gen%d" % (gpu_label(g), gen, want_gen),
            "reseat",
            "gpu.pcie: link generation below %s while under load (idle downshift is power saving)"
            % ("profile pcie_gen" if (profile or {}).get("pcie_gen") else "gen_max"),
            evidence=p,
        )
    want_w = (profile or {}).get("pcie_width")
    if want_w and width is not None and width < want_w:
        add_bus(
            "gpu.pcie",
            "P2",
            "width",
            "%s: PCIe x%d, expected x%d" % (gpu_label(g), width, want_w),
            "reseat",
            "gpu.pcie: width below profile pcie_width",
            evidence=p,
        )
    replay = as_num(p.get("replay_counter"))
    cur["pcie_replay"] = replay
    th = ctx.policy["thresholds"]["pcie"]
    prev_replay = as_num(prev.get("pcie_replay"))
    if replay is None or prev_replay is None or interval is None or interval < th["min_interval_s"]:
        return
    delta = replay - prev_replay
    lanes = width or as_num(p.get("width_max")) or 16
    per_lane = th["replay_per_lane_per_minute"].get(str(int(gen or as_num(p.get("gen_max")) or 4)))
    if delta <= 0 or per_lane is None:
        return
    per_min = delta / (interval / 60.0)
    limit = per_lane * lanes
    if per_min > limit:
        add_bus(
            "gpu.pcie",
            "P2",
            "replay",
            "%s: PCIe replays at %.2f/min (limit %.2f)" % (gpu_label(g), per_min, limit),
            "monitor",
            "gpu.pcie: replay rate > DCGM limit (BER 1e-12 x line rate, per lane per minute)",
            evidence={"delta": delta, "interval_s": interval, "limit_per_min": limit},
        )


def check_nvlink(ctx: Ctx, g: Dict[str, Any], profile: Optional[Dict[str, Any]], window: RateWindow) -> None:
    """Links down or missing against the profile; error-counter rates over ``window``."""
    prev, cur, interval = window
    nv = g.get("nvlink")
    if not isinstance(nv, dict):
        return
    links = [lk for lk in as_list(nv.get("links")) if isinstance(lk, dict)]
    add = ctx.for_gpu(g)
    want = (profile or {}).get("nvlinks_per_gpu")
    up = [lk.get("link") for lk in links if lk.get("state") == "up"]
    down = [lk for lk in links if lk.get("state") != "up"]
    # A link the tool lists as not up is evidence when the profile expects NVLinks, or when other links of the
    # same GPU are up (a GPU without NVLink lists none). Unknown hardware gets no "missing" alarm.
    if want or up:
        for lk in down:
            ctx.for_gpu(g, "/nvlink%s" % lk.get("link"))(
                "gpu.nvlink",
                "P1",
                "down",
                "%s NVLink %s is %s (%d of %s links up)"
                % (gpu_label(g), lk.get("link"), lk.get("state") or "not reported", len(up), want or len(links)),
                "reset_gpu",
                "gpu.nvlink: link not up (NVIDIA Xid 136 link training: RESET_GPU; repeated: reseat/RMA)",
                evidence={"state": lk.get("state"), "up": len(up), "expected": want},
            )
    if want and len(links) < want:
        add(
            "gpu.nvlink",
            "P1",
            "missing",
            "%s: %d of %d NVLinks reported" % (gpu_label(g), len(links), want),
            "reset_gpu",
            "gpu.nvlink: profile nvlinks_per_gpu=%d" % want,
            evidence={"listed": len(links), "up": len(up), "expected": want},
        )
    cur_err: Dict[str, Any] = {}
    prev_err = as_dict(prev.get("nvlink"))
    for lk in links:
        e = as_dict(lk.get("errors"))
        key = str(lk.get("link"))
        cur_err[key] = e
        pe = as_dict(prev_err.get(key))
        if pe and interval is not None and interval > 0:
            deltas = _deltas(e, pe)
            _nvlink_counters(ctx, g, key, deltas, interval)
            _nvlink5_counters(ctx, g, key, deltas, interval)
        _nvlink5_ber(ctx, g, key, e)
    cur["nvlink"] = cur_err


def _nvlink5_counters(ctx: Ctx, g: Dict[str, Any], key: str, deltas: Dict[str, float], interval: float) -> None:
    """NVLink5 error counters that grew since the last reading: one finding per link, its worst counter's class."""
    grown = {k: v for k, v in deltas.items() if k in NVLINK5_COUNTERS and v >= 1}
    if not grown:
        return
    worst = min(grown, key=lambda k: (NVLINK5_COUNTERS[k][0], k))
    sev, action = NVLINK5_COUNTERS[worst]
    ctx.for_gpu(g, "/nvlink%s" % key, serial=False)(
        "gpu.nvlink",
        sev,
        "nvlink5_" + worst,
        "%s NVLink %s: %s since the last reading"
        % (gpu_label(g), key, ", ".join("%d %s" % (v, k) for k, v in sorted(grown.items()))),
        action,
        "gpu.nvlink: NVLink5 counter increase >= 1 (DCGM health watch DCGM_FR_NVLINK_ERROR_CRITICAL; "
        "recovery_failed: the link was declared down)",
        evidence={"deltas": grown, "interval_s": interval},
    )


def _nvlink5_ber(ctx: Ctx, g: Dict[str, Any], key: str, e: Dict[str, Any]) -> None:
    """The link's effective BER (after FEC) against DCGM's 1e-12 (one reading is enough: it is a rate)."""
    ber = as_num(e.get("effective_ber"))
    if ber is None or ber <= EFFECTIVE_BER_LIMIT:
        return
    ctx.for_gpu(g, "/nvlink%s" % key, serial=False)(
        "gpu.nvlink",
        "P2",
        "effective_ber",
        "%s NVLink %s: effective BER %.3g (limit %.0e)" % (gpu_label(g), key, ber, EFFECTIVE_BER_LIMIT),
        "monitor",
        "gpu.nvlink: effective BER > 1e-12 (DCGM DCGM_FR_NVLINK_EFFECTIVE_BER_THRESHOLD)",
        evidence={"effective_ber": ber, "symbol_ber": e.get("symbol_ber")},
    )


#: NVLink5 counters (Blackwell: NVML FI 206-215/219/221, ``nvidia-smi nvlink -e``) that DCGM's health watch fails
#: on at any increase (DCGM_FR_NVLINK_ERROR_CRITICAL, severity ISOLATE; gpu-knowledge-2026.md 3.1) -> our severity
#: and action. A failed recovery means the link was declared down (P1 reset_gpu, as a down link); the others are
#: errors the link survived (P2 monitor, as an NVLink4 replay; escalated by Xid 144-150 when the driver logs one).
NVLINK5_COUNTERS = {
    "recovery_failed": ("P1", "reset_gpu"),
    "integrity": ("P2", "monitor"),
    "recovery_successful": ("P2", "monitor"),
    "symbol_errors": ("P2", "monitor"),
    "effective_errors": ("P2", "monitor"),
    "malformed": ("P2", "monitor"),
    "buffer_overrun": ("P2", "monitor"),
    "rx_errors": ("P2", "monitor"),
    "rx_remote": ("P2", "monitor"),
    "rx_general": ("P2", "monitor"),
}
#: DCGM's NVLink5 effective BER limit (DcgmHealthWatch: worse than 1e-12 fails the link)
EFFECTIVE_BER_LIMIT = 1e-12


def _deltas(e: Dict[str, Any], pe: Dict[str, Any]) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for name in ("replay", "recovery", "crc_flit", "crc_data") + tuple(NVLINK5_COUNTERS):
        a, b = as_num(e.get(name)), as_num(pe.get(name))
        if a is not None and b is not None:
            out[name] = a - b
    return {} if any(v < 0 for v in out.values()) else out  # counters reset (driver reload): new baseline


#: The NVLink counters alarmed on any rise between two readings: counter, severity, words, action, reason.
_DELTA_RULES = (
    ("recovery", "P1", "link recoveries", "reset_gpu", "DCGM NVLink error limit 1: the health watch fails the GPU"),
    ("replay", "P2", "replays", "monitor", "DCGM NVLink error limit 1; retransmitted, no data lost: P2"),
)


def _nvlink_counters(ctx: Ctx, g: Dict[str, Any], key: str, deltas: Dict[str, float], interval: float) -> None:
    """DCGM's NVLink health watch on two readings: any recovery (the link retrained; DCGM fails the GPU), any
    replay (a flit retransmitted; DCGM fails on >= 1, we alarm P2: the data arrived), CRC errors at the DCGM limit
    (100/s) for one minute's worth (two readings cannot show which minute they fell in: a burst is not averaged
    away over a long interval)."""
    th = ctx.policy["thresholds"]["nvlink"]
    add_link = ctx.for_gpu(g, "/nvlink%s" % key, serial=False)
    evidence = {"deltas": deltas, "interval_s": interval}
    crc = deltas.get("crc_flit", 0) + deltas.get("crc_data", 0)
    burst = th["crc_per_second"] * th["crc_window_s"]
    if interval >= th["min_interval_s"] and crc >= burst:
        add_link(
            "gpu.nvlink",
            "P2",
            "crc",
            "%s NVLink %s: %d CRC errors in %ds (%.1f/s on average)"
            % (gpu_label(g), key, crc, interval, crc / interval),
            "monitor",
            "gpu.nvlink: CRC errors >= %s/s x %ss since the last reading (DCGM NVLink CRC limit, per minute)"
            % (th["crc_per_second"], th["crc_window_s"]),
            evidence=evidence,
        )
    for name, sev, what, action, why in _DELTA_RULES:
        limit = th[name + "_delta"]
        if deltas.get(name, 0) >= limit:
            add_link(
                "gpu.nvlink",
                sev,
                name,
                "%s NVLink %s: %d %s since the last reading" % (gpu_label(g), key, deltas[name], what),
                action,
                "gpu.nvlink: %s delta >= %s (%s)" % (name, limit, why),
                evidence=evidence,
            )


def check_fabric(ctx: Ctx, g: Dict[str, Any]) -> None:
    fab = g.get("fabric")
    if not isinstance(fab, dict):
        return
    th = ctx.policy["thresholds"]["fabric"]
    state, status = fab.get("state"), fab.get("status")
    comp = gpu_comp(g)
    if state is not None and state not in th["ok_states"]:
        pending = state in th["pending_states"]
        ctx.add(
            "gpu.fabric",
            "P2" if pending else "P1",
            comp,
            "state",
            "%s: NVLink fabric state '%s' (status %s)" % (gpu_label(g), state, status),
            "monitor" if pending else "isolate",
            "gpu.fabric: state not in %s (check nvidia-fabricmanager / NVSwitch)" % th["ok_states"],
            evidence=fab,
        )
    elif status is not None and status not in th["ok_status"]:
        ctx.add(
            "gpu.fabric",
            "P1",
            comp,
            "status",
            "%s: NVLink fabric status '%s'" % (gpu_label(g), status),
            "isolate",
            "gpu.fabric: status not in %s" % th["ok_status"],
            evidence=fab,
        )
    _fabric_health(ctx, g, as_dict(fab.get("health")))


#: NVL72 fabric health flags (NVML healthMask / nvidia-smi Fabric > Health; gpu-knowledge-2026.md 3.3, gpud
#: fabric_state.go flags each): flag -> (severity, action). The GPU still works with degraded bandwidth or while a
#: route recovers (P2 monitor); an unhealthy route or an incorrect configuration is P1: jobs across it fail.
FABRIC_HEALTH_FLAGS = {
    "route_unhealthy": ("P1", "isolate"),
    "degraded_bandwidth": ("P2", "monitor"),
    "route_recovery": ("P2", "monitor"),
    "access_timeout_recovery": ("P2", "monitor"),
}


def _fabric_health(ctx: Ctx, g: Dict[str, Any], health: Dict[str, Any]) -> None:
    bad = [k for k in FABRIC_HEALTH_FLAGS if health.get(k) is True]
    conf = health.get("incorrect_configuration")
    summary = health.get("summary")
    issues = [(k,) + FABRIC_HEALTH_FLAGS[k] for k in bad]
    if conf not in (None, "none"):
        issues.append(("incorrect_configuration", "P1", "isolate"))
    if summary in ("unhealthy", "limited_capacity") and not issues:
        issues.append(
            (
                "summary_" + summary,
                "P1" if summary == "unhealthy" else "P2",
                "isolate" if summary == "unhealthy" else "monitor",
            )
        )
    if not issues:
        return
    worst = min(issues, key=lambda x: (x[1], x[0]))
    ctx.add(
        "gpu.fabric",
        worst[1],
        gpu_comp(g),
        "health",
        "%s: NVLink fabric health: %s%s"
        % (
            gpu_label(g),
            ", ".join(i[0] for i in issues),
            " (incorrect configuration: %s)" % conf if conf not in (None, "none") else "",
        ),
        worst[2],
        "gpu.fabric: health mask flag set (NVML nvmlDeviceGetGpuFabricInfoV healthMask/healthSummary; gpud fabric state)",
        evidence={"health": health},
    )


def check_c2c(ctx: Ctx, g: Dict[str, Any], window: RateWindow) -> None:
    """Grace <-> GPU C2C links (GB200; NVML FI 170/171/231-233): a link not active, or CRC/replay errors grown since
    the last reading."""
    prev, cur, interval = window
    c2c = g.get("c2c")
    if not isinstance(c2c, dict):
        return
    if c2c.get("active") is False:
        ctx.for_gpu(g, "/c2c")(
            "gpu.nvlink",
            "P1",
            "c2c_down",
            "%s: C2C link to the Grace CPU is not active (%s links)" % (gpu_label(g), c2c.get("link_count")),
            "reset_gpu",
            "gpu.nvlink: C2C link status 0 (NVML_FI_DEV_C2C_LINK_GET_STATUS)",
            evidence=c2c,
        )
    errors = as_dict(c2c.get("errors"))
    cur["c2c"] = dict(errors)
    before = as_dict(prev.get("c2c"))
    grown = {}
    for k, v in errors.items():
        a, b = as_num(v), as_num(before.get(k))
        if a is not None and b is not None and a > b:
            grown[k] = a - b
    if grown and interval:
        ctx.for_gpu(g, "/c2c", serial=False)(
            "gpu.nvlink",
            "P2",
            "c2c_errors",
            "%s: C2C link errors since the last reading: %s"
            % (gpu_label(g), ", ".join("%d %s" % (v, k) for k, v in sorted(grown.items()))),
            "monitor",
            "gpu.nvlink: C2C CRC/replay counters grew (NVML FI 231-233; DCGM C2C fields 285-287)",
            evidence={"deltas": grown, "interval_s": interval},
        )


def check_nvlink_speed(ctx: Ctx, gpus: List[Dict[str, Any]]) -> None:
    """Up links slower than the board's NVLink speed (``thresholds.nvlink_speed``): P2 per GPU (issue 20).

    Expected: the policy's per-model speed (longest model-name match), else the fastest up link of the node (a
    downshifted link trains below its siblings). A link without a speed (down, ``<inactive>``) is check_nvlink's.
    """
    th = ctx.policy["thresholds"].get("nvlink_speed")
    if not isinstance(th, dict):
        return
    speeds = {}
    for g in gpus:
        links = [lk for lk in as_list(as_dict(g.get("nvlink")).get("links")) if isinstance(lk, dict)]
        speeds[id(g)] = [(lk.get("link"), as_num(lk.get("speed_gbps"))) for lk in links if lk.get("state") == "up"]
    seen = [s for v in speeds.values() for _link, s in v if s]
    models = sorted(as_dict(th.get("expected_gbps")).items(), key=lambda kv: -len(str(kv[0])))
    for g in gpus:
        name = str(g.get("name") or "")
        expected = next((as_num(v) for k, v in models if str(k) and str(k).upper() in name.upper()), None)
        basis = "policy thresholds.nvlink_speed.expected_gbps for %s" % name if expected else "fastest link on the node"
        expected = expected or (max(seen) if seen else None)
        if not expected:
            continue
        floor = expected * (1.0 - float(th.get("tolerance_pct", 2.0)) / 100.0)
        slow = [(link, s) for link, s in speeds[id(g)] if s is not None and s < floor]
        if not slow:
            continue
        f = th["finding"]
        ctx.for_gpu(g)(
            "gpu.nvlink",
            f["severity"],
            "speed",
            "%s: %d NVLink(s) below %.3f GB/s: %s"
            % (gpu_label(g), len(slow), expected, ", ".join("link %s at %g" % (lk, s) for lk, s in slow[:8])),
            f["action"],
            "gpu.nvlink speed: up link below the expected per-link speed (%s) - 2%% tolerance" % basis,
            evidence={"expected_gbps": expected, "slow_links": [{"link": lk, "gbps": s} for lk, s in slow]},
        )


#: IMEX (gpu-knowledge-2026.md 3.4; DCGM_FR_IMEX_UNHEALTHY is severity ISOLATE): daemon states that are not READY
#: and domain states that are not UP -> (severity, action). Starting up or waiting for peers/recovery: P2.
IMEX_DAEMON = {
    "INITIALIZING": ("P2", "monitor"),
    "STARTING_AUTH_SERVER": ("P2", "monitor"),
    "WAITING_FOR_PEERS": ("P2", "monitor"),
    "WAITING_FOR_RECOVERY": ("P2", "monitor"),
    "INIT_GPU": ("P2", "monitor"),
    "SHUTTING_DOWN": ("P1", "isolate"),
    "UNAVAILABLE": ("P1", "isolate"),
}
IMEX_DOMAIN = {"DOWN": ("P1", "isolate"), "DEGRADED": ("P2", "monitor")}


def check_imex(ctx: Ctx, facts: Dict[str, Any]) -> None:
    """The node's IMEX daemon and domain (``gpu.imex``, from ``nvidia-imex-ctl -q`` / ``-N -j``). Not installed or
    not configured (``Failed to read node configuration file``): nothing to judge."""
    imex = as_dict(as_dict(facts.get("gpu")).get("imex"))
    if imex.get("configured") is not True:
        return
    daemon, domain = imex.get("daemon"), imex.get("domain")
    issues = []
    if daemon in IMEX_DAEMON:
        issues.append(("daemon " + daemon,) + IMEX_DAEMON[daemon])
    if domain in IMEX_DOMAIN:
        issues.append(("domain " + domain,) + IMEX_DOMAIN[domain])
    if not issues:
        return
    worst = min(issues, key=lambda x: (x[1], x[0]))
    ctx.add(
        "gpu.fabric",
        worst[1],
        "node",
        "imex",
        "IMEX %s (daemon %s, domain %s)" % (", ".join(i[0] for i in issues), daemon, domain),
        worst[2],
        "gpu.fabric: IMEX daemon not READY / domain not UP (DCGM DcgmImexManager; DCGM_FR_IMEX_UNHEALTHY: ISOLATE)",
        evidence={"imex": imex},
    )
