# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""InfiniBand checks: port state and rate against the profile, error-counter rates, link flaps."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_list,
    as_num,
    collected_epoch,
    rate_base,
)


def add_port_rate(ctx: Ctx, port: str, message: str, basis: str, evidence: Dict[str, Any]) -> None:
    """An ``ib.port_rate`` finding: an Active port below the rate it should run at (a downtrained link): P2, reseat.
    ``basis`` says where the expected rate came from (the profile, the node's peer ports)."""
    ctx.add("ib.port_rate", "P2", port, "rate", message, "reseat", "ib.port_rate: " + basis, evidence=evidence)


def _ports(facts: Dict[str, Any]) -> List[Tuple[str, Dict[str, Any], Dict[str, Any]]]:
    out = []
    for hca in as_list(as_dict(facts.get("ib")).get("hcas")):
        if not isinstance(hca, dict):
            continue
        for p in as_list(hca.get("ports")):
            if isinstance(p, dict):
                out.append(("%s/%s" % (hca.get("name"), p.get("port")), hca, p))
    return out


def check_ib_ports(ctx: Ctx, facts: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> None:
    ports = _ports(facts)
    ib = as_dict(facts.get("ib"))
    if not ports and not (profile or {}).get("ib_ports"):
        return
    want = (profile or {}).get("ib_ports")
    names = {n for n, _hca, _port in ports}
    if isinstance(want, list):
        expected = [str(x) for x in want]
        for name in expected:
            if name not in names and not ib.get("errors"):
                ctx.add(
                    "ib.port_state",
                    "P1",
                    name,
                    "missing",
                    "IB port %s not found" % name,
                    "isolate",
                    "ib.port_state: profile ib_ports (AzNHC NHC2002 missing IB)",
                    evidence={"expected": expected},
                )
        checked = [(n, h, p) for n, h, p in ports if n in expected]
    elif isinstance(want, int) and not isinstance(want, bool):
        layer = (profile or {}).get("ib_link_layer")
        checked = [
            (n, h, p)
            for n, h, p in ports
            if (p.get("link_layer") == layer if layer else p.get("link_layer") != "Ethernet")
        ]
        if len(checked) < want and not ib.get("errors"):
            ctx.add(
                "ib.port_state",
                "P1",
                "node",
                "missing",
                "%d of %d expected IB ports found" % (len(checked), want),
                "isolate",
                "ib.port_state: profile ib_ports=%d (AzNHC NHC2002)" % want,
                evidence={"found": sorted(n for n, _hca, _port in checked), "expected": want},
            )
    else:
        checked = []
    rate_want = (profile or {}).get("ib_rate_gbps")
    for name, _hca, p in ports:
        state, phys = p.get("state"), p.get("phys_state")
        ev = {"state": state, "phys_state": phys, "rate_gbps": p.get("rate_gbps"), "sm_lid": p.get("sm_lid")}
        expected_here = any(name == n for n, _hca, _port in checked)
        if state in ("INIT", "ARMED"):
            # cabled and trained but the subnet manager did not bring it up (many nodes: one P0 about the SM)
            ctx.add(
                "ib.port_state",
                "P1",
                name,
                state,
                "IB port %s is %s (%s): no subnet manager configured it" % (name, state, phys),
                "isolate",
                "ib.port_state: INIT/ARMED = subnet manager did not finish",
                evidence=ev,
            )
        elif expected_here and state != "ACTIVE" and state != "ACTIVE_DEFER":
            ctx.add(
                "ib.port_state",
                "P1",
                name,
                state or "unknown",
                "IB port %s is %s (%s)" % (name, state, phys),
                "reseat",
                "ib.port_state: expected port not ACTIVE (AzNHC NHC2004 IB port down)",
                evidence=ev,
            )
        elif expected_here and rate_want and state == "ACTIVE":
            rate = as_num(p.get("rate_gbps"))
            if rate is not None and rate < rate_want:
                add_port_rate(
                    ctx,
                    name,
                    "IB port %s at %g Gb/s, expected %g" % (name, rate, rate_want),
                    "below profile ib_rate_gbps (downtrained link)",
                    ev,
                )


def check_ib_counters(
    ctx: Ctx, facts: Dict[str, Any], hs: Dict[str, Any], new_ports: Dict[str, Any], boot_id: Optional[str]
) -> None:
    ib = as_dict(facts.get("ib"))
    t = as_num(ib.get("collected_at"))
    if t is None:
        t = collected_epoch(facts)
    th = ctx.policy["thresholds"]["ib"]
    boot = ib.get("boot_id") or boot_id
    prev_ports = as_dict(as_dict(hs.get("ib")).get("ports"))
    for name, hca, p in _ports(facts):
        counters = {k: v for k, v in as_dict(p.get("counters")).items() if as_num(v) is not None}
        saturated = set(str(x) for x in as_list(p.get("saturated")))
        cur = {"collected_at": t, "boot_id": boot, "fw_version": hca.get("fw_version"), "counters": counters}
        for cname in sorted(saturated):
            if cname == "link_downed":
                ctx.add(
                    "ib.link_flap",
                    "P2",
                    name,
                    "link_downed",
                    "IB port %s: link_downed is saturated (at least "
                    "%s link-downs), delta unknown; clear the port counters (perfquery -R)"
                    % (name, counters.get(cname)),
                    "monitor",
                    "ib.link_flap: link_downed at its 8-bit ceiling = a link that flapped at least that often",
                    evidence={"value": counters.get(cname), "saturated": True},
                )
            elif cname in th["counters"]:
                ctx.add(
                    "ib.errors",
                    "P3",
                    name,
                    cname,
                    "IB port %s: %s is saturated (at least %s), delta unknown; "
                    "clear the port counters (perfquery -R)" % (name, cname, counters.get(cname)),
                    "monitor",
                    "ib.errors: saturated counter (8/4-bit ceiling): delta unknown",
                    evidence={"value": counters.get(cname)},
                )
        prev = as_dict(prev_ports.get(name))
        interval = rate_base(prev, boot, t)
        if interval is None or (
            prev.get("fw_version") and hca.get("fw_version") and prev.get("fw_version") != hca.get("fw_version")
        ):
            new_ports[name] = cur  # first reading, new boot or new HCA firmware: new baseline, no finding
            continue
        pc = as_dict(prev.get("counters"))
        deltas = {}
        for k, v in counters.items():
            if k in pc and as_num(pc[k]) is not None and k not in saturated:
                deltas[k] = as_num(v) - as_num(pc[k])
        if any(d < 0 for d in deltas.values()):
            new_ports[name] = cur  # counters were cleared: new baseline, no finding
            continue
        flap = deltas.get("link_downed", 0)
        fl = th["link_flap"]
        if flap >= fl["p1_downs"] or flap >= fl["p2_downs"]:
            p1 = flap >= fl["p1_downs"]
            ctx.add(
                "ib.link_flap",
                "P1" if p1 else "P2",
                name,
                "link_downed",
                "IB port %s went down %d time%s since %s"
                % (name, flap, "" if flap == 1 else "s", iso_z(parse_time(prev.get("collected_at")))),
                "reseat" if p1 else "monitor",
                "ib.link_flap: link_downed +%d within one boot (>= %d: P1, AzNHC NHC2005 flapping)"
                % (flap, fl["p1_downs"]),
                evidence={"delta": flap, "interval_s": interval},
            )
        if interval < th["min_interval_s"]:
            new_ports[name] = prev  # keep the older baseline until the interval is long enough for a rate
            continue
        hours = interval / 3600.0
        for cname, rule in sorted(th["counters"].items()):
            d = deltas.get(cname)
            if d is None or d < rule.get("min_delta", 1):
                continue
            rate = d / hours
            if rate >= rule.get("per_hour", 0):
                ctx.add(
                    "ib.errors",
                    rule.get("severity", "P2"),
                    name,
                    cname,
                    "IB port %s: %s +%d in %.0f s (%.1f/h)" % (name, cname, d, interval, rate),
                    rule.get("action", "monitor"),
                    "thresholds.ib.counters[%s]: >= %s/h and +%s (NVSentinel NIC monitor defaults)"
                    % (cname, rule.get("per_hour"), rule.get("min_delta", 1)),
                    evidence={
                        "delta": d,
                        "interval_s": interval,
                        "per_hour": rate,
                        "previous": pc.get(cname),
                        "current": counters.get(cname),
                    },
                )
        new_ports[name] = cur
