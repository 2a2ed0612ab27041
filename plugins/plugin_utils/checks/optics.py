# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Optics and link quality: ``ib.optics`` (module DOM against its thresholds, attenuation trend, loss of light, an
unreadable module EEPROM, mlxlink's own Status Opcode / Recommendation), ``ib.link_speed`` (mlxlink active speed and
width against what the port enables and the cable supports), ``ib.ber`` (mlxlink BER / symbol errors) and
``ib.congestion`` (RoCE PFC pause and ECN/CNP rates). The mlxlink verdicts need no hardware profile (issue 37).

Evidence: ``facts.ib.optics`` and ``facts.ib.netdev_counters`` (``_ib_optics``), the RoCE ports' RDMA
``hw_counters`` (``ib.hcas[].ports[].counters``). Sentinels (``N/A``, ``0 [0..0]``, ``15E-255``, -40 dBm / ``-inf``)
and "not supported" answers are not faults. Thresholds: ``thresholds.optics`` (docs/checks.md). State (Rx power
history, congestion counter readings) lives under ``hs["optics"]``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.mlxlink import speed_gbps
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_list,
    as_num,
    as_str,
    collected_epoch,
    rate_base,
)

_LEVELS = {"warning": 1, "alarm": 2}
_PAUSE = re.compile(r"^(?:(?:rx|tx)_prio[0-7]_pause|(?:rx|tx)_pause_ctrl_phy)$")
_CNP = ("np_cnp_sent", "rp_cnp_handled")
_ECN = ("np_ecn_marked_roce_packets",)


def _records(facts: Dict[str, Any]) -> List[Dict[str, Any]]:
    ib = as_dict(facts.get("ib"))
    return [r for r in as_list(ib.get("optics")) if isinstance(r, dict) and isinstance(r.get("component"), str)]


def _bands(th: Dict[str, Any], margin: float, has_warning: bool) -> Dict[str, Optional[float]]:
    """low/high alarm and warning levels of one quantity; the warning band from ``margin`` when not printed."""
    lo_a, hi_a = as_num(th.get("low_alarm")), as_num(th.get("high_alarm"))
    if lo_a is not None and hi_a is not None and lo_a >= hi_a:
        lo_a = hi_a = None  # an empty threshold page (0..0, -inf..-inf): no thresholds
    lo_w, hi_w = (as_num(th.get("low_warning")), as_num(th.get("high_warning"))) if has_warning else (None, None)
    if lo_w is not None and hi_w is not None and lo_w >= hi_w:
        lo_w = hi_w = None
    if lo_w is None and lo_a is not None:
        lo_w = lo_a + margin
    if hi_w is None and hi_a is not None:
        hi_w = hi_a - margin
    return {"low_alarm": lo_a, "high_alarm": hi_a, "low_warning": lo_w, "high_warning": hi_w}


def _level(v: float, b: Dict[str, Optional[float]], low_side: bool = True) -> Tuple[Optional[str], Optional[str]]:
    """(level, bound name) of a reading past a band: ``alarm``/``warning`` or (None, None)."""
    for level in ("alarm", "warning"):
        hi = b["high_%s" % level]
        lo = b["low_%s" % level] if low_side else None
        if hi is not None and v > hi:
            return level, "high_%s" % level
        if lo is not None and v < lo:
            return level, "low_%s" % level
    return None, None


def _worst_lane(values: List[Any], b: Dict[str, Optional[float]], floor: Optional[float], low_side: bool):
    worst = None
    for lane, raw in enumerate(values, 1):
        v = as_num(raw)
        if v is None or (floor is not None and v <= floor):
            continue  # not reported / no light: a sentinel, not a reading
        level, bound = _level(v, b, low_side)
        if level and (worst is None or _LEVELS[level] > _LEVELS[worst[0]]):
            worst = (level, bound, lane, v)
    return worst


def _module_label(mod: Dict[str, Any]) -> str:
    parts = [str(mod[k]) for k in ("vendor", "part_number") if mod.get(k)]
    if mod.get("serial"):
        parts.append("SN %s" % mod["serial"])
    return " ".join(parts) or "module"


def _flag_level(mod: Dict[str, Any], quantity: str) -> Optional[Tuple[str, str, Any]]:
    best = None
    for f in as_list(mod.get("flags_on")):
        if not isinstance(f, dict) or f.get("quantity") != quantity:
            continue
        level = "alarm" if str(f.get("level", "")).endswith("alarm") else "warning"
        if best is None or _LEVELS[level] > _LEVELS[best[0]]:
            best = (level, str(f.get("level")), f.get("lane"))
    return best


def _check_module(ctx: Ctx, rec: Dict[str, Any], mod: Dict[str, Any], th: Dict[str, Any]) -> None:
    comp = rec["component"]
    has_warning = bool(mod.get("warning_thresholds"))
    ths = as_dict(mod.get("thresholds"))
    checks = (
        (
            "rx_power",
            "Rx power",
            "dBm",
            as_list(mod.get("rx_power_dbm")),
            ths.get("rx_power_dbm"),
            float(th["rx_warning_margin_db"]),
            th["no_light_dbm"],
            True,
        ),
        (
            "temperature",
            "temperature",
            "C",
            [mod.get("temperature_c")],
            ths.get("temperature_c"),
            float(th["temperature_warning_margin_c"]),
            None,
            False,
        ),
    )
    for code, what, unit, values, qth, margin, floor, low_side in checks:
        bands = _bands(as_dict(qth), margin, has_warning)
        worst = _worst_lane(values, bands, floor, low_side) if qth else None
        flag = _flag_level(mod, "%s_%s" % (code, "dbm" if code == "rx_power" else "c"))
        if worst is None and flag is None:
            continue
        if worst is not None and (flag is None or _LEVELS[worst[0]] >= _LEVELS[flag[0]]):
            level, bound, lane, v = worst
            lane_s = " lane %d" % lane if code == "rx_power" else ""
            detail = "%s%s %.2f %s past the %s level %.2f %s" % (
                what,
                lane_s,
                v,
                unit,
                bound.replace("_", " "),
                bands[bound],
                unit,
            )
        else:
            level, bound, lane = flag  # type: ignore[misc]
            v = None
            detail = "the module raised its %s %s flag%s" % (
                what,
                bound.replace("_", " "),
                " (lane %s)" % lane if lane else "",
            )
        rule = th[level]
        ctx.add(
            "ib.optics",
            rule["severity"],
            comp,
            code,
            "%s transceiver %s: %s: clean the fibre ends and reseat the transceiver"
            % (comp, _module_label(mod), detail),
            rule["action"],
            "ib.optics: %s past the module's %s threshold (%s: %s)"
            % (
                what,
                level,
                "module thresholds"
                if has_warning or level == "alarm"
                else "alarm threshold inside thresholds.optics margin",
                rec.get("source"),
            ),
            evidence={
                "lane": lane,
                "value": v,
                "thresholds": bands,
                "tool": rec.get("tool"),
                "source": rec.get("source"),
                "module": {k: mod.get(k) for k in ("identifier", "vendor", "part_number", "serial")},
            },
        )


def _check_ber(ctx: Ctx, rec: Dict[str, Any], phy: Dict[str, Any], th: Dict[str, Any]) -> None:
    if rec.get("state") and str(rec.get("state")).lower() != "active":
        return  # counters of a link that is down say nothing about its quality (ib.port_state reports it)
    comp = rec["component"]
    b = th["ber"]
    eff, sym_ber, raw = as_num(phy.get("effective_ber")), as_num(phy.get("symbol_ber")), as_num(phy.get("raw_ber"))
    sym, minutes = as_num(phy.get("symbol_errors")), as_num(phy.get("time_since_clear_min"))
    ev = {
        k: phy.get(k)
        for k in (
            "effective_ber",
            "raw_ber",
            "symbol_ber",
            "symbol_errors",
            "effective_errors",
            "fec_corrected",
            "fec_uncorrectable",
            "time_since_clear_min",
            "link_down",
        )
    }
    ev.update(source=rec.get("source"), fec=rec.get("fec"))
    fails = []
    if eff is not None and eff > b["effective_ber_max"]:
        fails.append("effective (post-FEC) BER %.0e > %.0e" % (eff, b["effective_ber_max"]))
    if sym_ber is not None and sym_ber > b["symbol_ber_max"]:
        fails.append("symbol BER %.0e > %.0e" % (sym_ber, b["symbol_ber_max"]))
    if sym and minutes and minutes >= b["min_minutes_since_clear"]:
        per_hour = sym / (minutes / 60.0)
        ev["symbol_errors_per_hour"] = per_hour
        if per_hour >= b["symbol_errors_per_hour"]:
            fails.append("%d symbol errors in %.0f min (%.1f/h)" % (sym, minutes, per_hour))
    if fails:
        ctx.add(
            "ib.ber",
            b["fail"]["severity"],
            comp,
            "ber",
            "%s link errors FEC did not correct: %s: clean and reseat the cable/transceiver" % (comp, "; ".join(fails)),
            b["fail"]["action"],
            "ib.ber: post-FEC BER above %.0e (ibdiagnet threshold) or symbol errors >= %s/h"
            % (b["effective_ber_max"], b["symbol_errors_per_hour"]),
            evidence=ev,
        )
    elif raw is not None and raw >= b["raw_ber_advice"]:
        ctx.add(
            "ib.ber",
            b["advice"]["severity"],
            comp,
            "raw_ber",
            "%s raw (pre-FEC) BER %.0e >= %.0e while FEC still corrects every error (effective BER %s): "
            "clean/reseat at the next maintenance window"
            % (comp, raw, b["raw_ber_advice"], "%.0e" % eff if eff else "~0"),
            b["advice"]["action"],
            "ib.ber: raw BER high, effective BER clean (advice only)",
            evidence=ev,
        )


def _slope(points: List[Tuple[float, float]]) -> Optional[float]:
    """Least-squares slope (units per second) of (t, v) points; None with fewer than two distinct times."""
    n = len(points)
    if n < 2:
        return None
    mt = sum(t for t, _v in points) / n
    mv = sum(v for _t, v in points) / n
    den = sum((t - mt) ** 2 for t, _v in points)
    if den <= 0:
        return None
    return sum((t - mt) * (v - mv) for t, v in points) / den


def _check_trend(
    ctx: Ctx, rec: Dict[str, Any], mod: Dict[str, Any], t: float, hist: Dict[str, Any], th: Dict[str, Any]
) -> None:
    comp = rec["component"]
    a = th["attenuation"]
    floor = th["no_light_dbm"]
    lanes = [as_num(v) for v in as_list(mod.get("rx_power_dbm"))]
    lanes = [v if v is not None and v > floor else None for v in lanes]
    old = [p for p in as_list(hist.get(comp)) if isinstance(p, list) and len(p) == 2 and as_num(p[0]) is not None]
    period = float(a["period_days"]) * 86400.0
    kept = [p for p in old if t - period * 2 <= float(p[0]) < t]
    if any(v is not None for v in lanes):
        kept.append([t, lanes])
    hist[comp] = kept[-int(a["max_readings"]) :]
    window = [p for p in hist[comp] if float(p[0]) >= t - period]
    worst = None
    for lane in range(len(lanes)):
        pts = [(float(p[0]), as_num(p[1][lane])) for p in window if isinstance(p[1], list) and lane < len(p[1])]
        pts = [(pt, v) for pt, v in pts if v is not None]
        if len(pts) < 2:
            continue
        span = pts[-1][0] - pts[0][0]
        s = _slope(pts)
        if s is None or span < float(a["min_span_hours"]) * 3600.0:
            continue
        drop = -s * span
        if drop >= float(a["drop_db"]) and (worst is None or drop > worst[1]):
            worst = (lane + 1, drop, s * 86400.0, span / 86400.0, pts[0][1], pts[-1][1])
    if worst is None:
        return
    lane, drop, per_day, days, first, last = worst
    f = a["finding"]
    ctx.add(
        "ib.optics",
        f["severity"],
        comp,
        "attenuation",
        "%s Rx power lane %d falling %.2f dB/day: -%.1f dB over %.1f days (%.2f -> %.2f dBm): plan a clean/"
        "reseat before it reaches the module's warning level" % (comp, lane, per_day, drop, days, first, last),
        f["action"],
        "ib.optics attenuation: Rx power down >= %s dB within %s days (least-squares slope)"
        % (a["drop_db"], a["period_days"]),
        evidence={
            "lane": lane,
            "slope_db_per_day": round(per_day, 4),
            "drop_db": round(drop, 3),
            "span_days": round(days, 3),
            "first_dbm": first,
            "last_dbm": last,
            "readings": len(window),
        },
    )


def _congestion_rates(name: str, counters: Dict[str, Any], prev: Dict[str, Any], interval: float) -> Dict[str, float]:
    pc = as_dict(prev.get("counters"))
    out: Dict[str, float] = {}
    for key, val in counters.items():
        a, b = as_num(val), as_num(pc.get(key))
        if a is None or b is None:
            continue
        if a < b:
            return {}  # counters cleared: no rate this time
        out[key] = (a - b) / interval
    return out


def _congestion_one(
    ctx: Ctx, comp: str, counters: Dict[str, Any], when: Tuple[float, Optional[str]], store: Dict[str, Any], source: str
) -> None:
    t, boot = when
    c = ctx.policy["thresholds"]["optics"]["congestion"]
    prev = as_dict(store.get(comp))
    cur = {"collected_at": t, "boot_id": boot, "counters": counters}
    interval = rate_base(prev, boot, t)
    if interval is None:
        store[comp] = cur
        return
    if interval < float(c["min_interval_s"]):
        return  # keep the older reading until the interval is long enough for a rate
    rates = _congestion_rates(comp, counters, prev, interval)
    store[comp] = cur
    groups = (
        ("pfc_pause", [k for k in rates if _PAUSE.match(k)], c["pfc_pause_per_s"], "PFC pause frames"),
        ("cnp", [k for k in rates if k in _CNP], c["cnp_per_s"], "CNPs (DCQCN)"),
        ("ecn_marked", [k for k in rates if k in _ECN], c["ecn_marked_per_s"], "ECN-marked RoCE packets"),
    )
    for code, keys, limit, what in groups:
        rate = sum(rates[k] for k in keys)
        if not keys or rate < float(limit):
            continue
        f = c["finding"]
        top = sorted(keys, key=lambda k: -rates[k])[:4]
        ctx.add(
            "ib.congestion",
            f["severity"],
            comp,
            code,
            "%s: %.0f %s/s over %.0f s (threshold %s/s): RoCE congestion; check the PFC/ECN configuration "
            "and the switch port" % (comp, rate, what, interval, limit),
            f["action"],
            "ib.congestion: thresholds.optics.congestion.%s_per_s" % code,
            evidence={
                "per_second": round(rate, 1),
                "interval_s": interval,
                "source": source,
                "counters": {k: round(rates[k], 1) for k in top},
            },
        )


def check_congestion(ctx: Ctx, facts: Dict[str, Any], store: Dict[str, Any], t: Optional[float]) -> None:
    ib = as_dict(facts.get("ib"))
    if t is None:
        return
    boot = ib.get("boot_id") or facts.get("boot_id")
    for hca in as_list(ib.get("hcas")):
        for p in as_list(as_dict(hca).get("ports")):
            if not isinstance(p, dict) or p.get("link_layer") != "Ethernet":
                continue
            cnt = {k: v for k, v in as_dict(p.get("counters")).items() if k in _CNP or k in _ECN}
            if cnt:
                comp = "%s/%s" % (hca.get("name"), p.get("port"))
                _congestion_one(ctx, comp, cnt, (t, boot), store, "sysfs hw_counters")
    for ifname, entry in sorted(as_dict(ib.get("netdev_counters")).items()):
        cnt = {k: v for k, v in as_dict(as_dict(entry).get("counters")).items() if _PAUSE.match(str(k))}
        if cnt:
            _congestion_one(ctx, "net:%s" % ifname, cnt, (t, boot), store, str(as_dict(entry).get("source")))


def _port_down(rec: Dict[str, Any]) -> bool:
    """The record's own port state (mlxlink ``State``) says the link is not up."""
    state = (as_str(rec.get("state")) or "").strip().lower()
    return bool(state) and state not in ("active", "up")


def check_status(ctx: Ctx, rec: Dict[str, Any], th: Dict[str, Any]) -> None:
    """mlxlink's own troubleshooting verdict: a Status Opcode other than 0 or a Recommendation other than "No issue
    was observed" (with or without the period) is one ``ib.optics`` finding in the tool's words."""
    op, words = rec.get("status_opcode"), as_str(rec.get("recommendation"))
    ok_words = words is None or words.strip().rstrip(".").lower() == "no issue was observed"
    if (op is None or op == 0) and ok_words:
        return
    if _port_down(rec):  # no link: ib.port_state reports the port (a dead leaf's correlation explains it), not twice
        return
    st = th["status"]
    cls = "admin" if op in st["admin_opcodes"] else "cable" if op in st["cable_opcodes"] else "other"
    rule, comp = st[cls], rec["component"]
    link = "%s %s %s" % (rec.get("state") or "state ?", rec.get("speed") or "", rec.get("width") or "")
    ctx.add(
        "ib.optics",
        rule["severity"],
        comp,
        "status",
        "%s mlxlink: %s (Status Opcode %s, %s); link %s; enabled %s, cable supports %s"
        % (
            comp,
            words or "no recommendation printed",
            "?" if op is None else op,
            rec.get("group_opcode") or "group N/A",
            " ".join(link.split()),
            ",".join(as_list(rec.get("enabled_speeds"))) or "?",
            ",".join(as_list(rec.get("cable_speeds"))) or "?",
        ),
        rule["action"],
        "ib.optics: mlxlink Troubleshooting Info (thresholds.optics.status.%s: opcode class %s)" % (cls, cls),
        evidence={k: rec.get(k) for k in _LINK_KEYS.split()},
    )


_LINK_KEYS = "status_opcode group_opcode recommendation state speed width enabled_speeds cable_speeds fw_version source"


def _width(rec: Dict[str, Any]) -> Optional[int]:
    m = re.match(r"^\s*([0-9]+)\s*x", str(rec.get("width") or ""), re.I)
    return int(m.group(1)) if m else None


def check_link_speed(ctx: Ctx, rec: Dict[str, Any], records: List[Dict[str, Any]], th: Dict[str, Any]) -> None:
    """``ib.link_speed``: an Active link below the best speed both its enabled list and the cable's list have, or
    an InfiniBand width under 2x / under the width most of the node's other active ports at that speed run."""
    if str(rec.get("state") or "").lower() != "active":
        return  # a down port is ib.port_state's
    comp, rule = rec["component"], th["link_speed"]
    active = speed_gbps(rec.get("speed"))
    enabled = [v for v in (speed_gbps(x) for x in as_list(rec.get("enabled_speeds"))) if v]
    cable = [v for v in (speed_gbps(x) for x in as_list(rec.get("cable_speeds"))) if v]
    best = max(set(enabled) & set(cable)) if enabled and cable and set(enabled) & set(cable) else None
    if best is None and enabled and not cable:
        best = max(enabled)
    ev = {k: rec.get(k) for k in _LINK_KEYS.split()}
    if active and best and active < best:
        ctx.add(
            "ib.link_speed",
            rule["severity"],
            comp,
            "speed",
            "%s active at %s while the port enables %s and the cable supports %s: the link trained down; reseat or "
            "replace the cable and check the peer port"
            % (
                comp,
                rec.get("speed"),
                ",".join(as_list(rec.get("enabled_speeds"))),
                ",".join(as_list(rec.get("cable_speeds"))) or "(not printed)",
            ),
            rule["action"],
            "ib.link_speed: active speed below the best enabled and cable-supported speed (mlxlink Supported Info)",
            evidence=ev,
        )
    width = _width(rec)
    if width is None or not str(rec.get("speed") or "").upper().startswith("IB-"):
        return
    peers = [
        _width(r)
        for r in records
        if r is not rec
        and r.get("tool") == "mlxlink"
        and r.get("speed") == rec.get("speed")
        and str(r.get("state") or "").lower() == "active"
    ]
    peers = [w for w in peers if w]
    common = max(set(peers), key=peers.count) if peers else None
    why = None
    if width < 2:
        why = "InfiniBand links train 4x (2x in a designed HDR100/NDR200 split)"
    elif common and width < common and peers.count(common) * 2 > len(peers) and len(peers) >= 2:
        why = "%d of the node's %d other active %s ports run %dx" % (
            peers.count(common),
            len(peers),
            rec.get("speed"),
            common,
        )
    if why:
        ctx.add(
            "ib.link_speed",
            rule["severity"],
            comp,
            "width",
            "%s active at %s %s: %s; a lane did not train: reseat the cable"
            % (comp, rec.get("speed"), rec.get("width"), why),
            rule["action"],
            "ib.link_speed: width below 2x or below the node's other ports at the same speed",
            evidence=ev,
        )


def check_unreadable(ctx: Ctx, rec: Dict[str, Any], mod: Dict[str, Any], th: Dict[str, Any]) -> None:
    rule, comp = th["unreadable"], rec["component"]
    ctx.add(
        "ib.optics",
        rule["severity"],
        comp,
        "unreadable",
        "%s transceiver %s: module EEPROM reads as garbage (%s): its DOM cannot be judged; reseat the module at the "
        "next window; if it stays so, the NIC firmware/driver cannot read the module's diagnostics page"
        % (comp, _module_label(mod), mod.get("unreadable")),
        rule["action"],
        "ib.optics: module unreadable (identifier 0xff or no ordered threshold band)",
        evidence={"reason": mod.get("unreadable"), "identifier": mod.get("identifier"), "source": rec.get("source")},
    )


def check_loss_of_light(ctx: Ctx, rec: Dict[str, Any], mod: Dict[str, Any], th: Dict[str, Any]) -> bool:
    """Loss of light (True when reported; the Rx power check then adds nothing for it): a lane at the no-light
    floor whose module raised its own Rx power low alarm, or every reported Rx lane dark while the transmitter is
    lit (the link receives nothing). One dark lane among lit ones (an unused lane of a split port) and a module
    dark on both sides (laser off, port unused) are not light lost."""
    floor = float(th["no_light_dbm"])
    rx = [as_num(v) for v in as_list(mod.get("rx_power_dbm"))]
    tx = [as_num(v) for v in as_list(mod.get("tx_power_dbm"))]
    flagged = {
        f.get("lane")
        for f in as_list(mod.get("flags_on"))
        if isinstance(f, dict) and f.get("quantity") == "rx_power_dbm" and f.get("level") == "low_alarm"
    }
    seen = [(lane, v) for lane, v in enumerate(rx, 1) if v is not None]
    all_dark = bool(seen) and all(v <= floor for _lane, v in seen)
    lit = any(t is not None and t > floor for t in tx)
    dark = [
        lane
        for lane, v in seen
        if v <= floor and (lane in flagged or (None in flagged and len(seen) == 1) or (all_dark and lit))
    ]
    if not dark:
        return False
    rule, comp = th["loss_of_light"], rec["component"]
    ctx.add(
        "ib.optics",
        rule["severity"],
        comp,
        "no_light",
        "%s transceiver %s: loss of light on lane%s %s (Rx %.2f dBm = no light%s): check the fibre and its ends, "
        "the far-end transceiver and the peer port"
        % (
            comp,
            _module_label(mod),
            "s" if len(dark) > 1 else "",
            ",".join(map(str, dark)),
            floor,
            "; the module raised its Rx power low alarm" if flagged else "; its transmitter is lit",
        ),
        rule["action"],
        "ib.optics: Rx at the no-light floor on a lane whose Tx is lit or whose Rx low alarm is on (%s)"
        % rec.get("source"),
        evidence={
            "lanes": dark,
            "rx_power_dbm": rx,
            "tx_power_dbm": tx,
            "tool": rec.get("tool"),
            "source": rec.get("source"),
            "module": {k: mod.get(k) for k in ("identifier", "vendor", "part_number", "serial")},
        },
    )
    return True


def check_optics(ctx: Ctx, facts: Dict[str, Any], hs: Dict[str, Any]) -> None:
    """Entry point (run.py): ib.optics, ib.ber and ib.congestion over one node's facts; updates ``hs["optics"]``."""
    th = ctx.policy["thresholds"]["optics"]
    ib = as_dict(facts.get("ib"))
    t = as_num(ib.get("collected_at"))
    if t is None:
        t = collected_epoch(facts)
    state = as_dict(hs.get("optics"))
    hist = dict(as_dict(state.get("rx_history")))
    store = dict(as_dict(state.get("congestion")))
    records = _records(facts)
    for rec in records:
        if rec.get("tool") == "mlxlink":
            check_status(ctx, rec, th)  # the tool's own words, also when a -m/-c query was "not supported"
            check_link_speed(ctx, rec, records, th)
        if rec.get("unsupported"):
            continue
        mod = rec.get("module")
        if isinstance(mod, dict) and mod.get("unreadable"):
            check_unreadable(ctx, rec, mod, th)  # one finding: its readings and flags mean nothing
            continue
        if isinstance(mod, dict) and mod.get("ddm") and _port_down(rec):
            continue  # no link: no light is expected on it, and ib.port_state reports the port (the readings stay in the facts)
        if isinstance(mod, dict) and mod.get("ddm"):
            if not check_loss_of_light(ctx, rec, mod, th):
                _check_module(ctx, rec, mod, th)
            if t is not None:
                _check_trend(ctx, rec, mod, t, hist, th)
        if isinstance(rec.get("phy"), dict):
            _check_ber(ctx, rec, rec["phy"], th)
    check_congestion(ctx, facts, store, t)
    hs["optics"] = {"rx_history": hist, "congestion": store}
