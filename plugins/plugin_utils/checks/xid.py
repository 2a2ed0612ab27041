# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel-event checks: Xid (with the Xid catalogue and the policy's overrides), GSP timeouts without an Xid line
(as Xid 119) and NVSwitch SXid (with the SXid catalogue, ``_sxid_catalog``)."""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils import _sxid_catalog, _xid_catalog
from ansible_collections.gpuops.cluster.plugins.module_utils._common import normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import xid_decode
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_list,
    as_str,
    gpu_by_bus,
    gpu_comp,
    gpu_label,
    gpu_list,
    sev_action,
)

_NVSWITCH_DEV = re.compile(r"nvidia-nvswitch(\d+)")
_USER_PROC_UNKNOWN = ("<unknown>", "unknown", "", None)


def xids_by_bus(ctx: Ctx, events: List[Dict[str, Any]]) -> Dict[str, set]:
    out: Dict[str, set] = {}
    for ev in events:
        if ev.get("kind") in ("xid", "fallen_off_bus"):
            code = 79 if ev.get("kind") == "fallen_off_bus" else ev.get("code")
            bus = normalize_bus_id(ev.get("bus_id"))
            if bus and isinstance(code, int):
                out.setdefault(bus, set()).add(code)
    return out


def event_filter(ctx: Ctx, facts: Dict[str, Any], hs: Dict[str, Any], boot_time: Optional[datetime.datetime]):
    lookback = datetime.timedelta(hours=ctx.policy["kernel_events"]["lookback_hours"])
    floor = ctx.ref - lookback
    if boot_time and boot_time > floor:
        floor = boot_time
    boot_ref = boot_time or parse_time(hs.get("boot_seen_at"))

    def counts(ev: Dict[str, Any], bus: Optional[str]) -> bool:
        clear = parse_time(as_dict(hs.get("clears")).get(bus)) if bus else None
        ts = parse_time(ev.get("timestamp"))
        if ts is None:
            # no placeable time: counts as this boot, unless the GPU was cleared during this boot
            return not (clear and boot_ref and clear >= boot_ref)
        cutoff = max(floor, clear) if clear else floor
        return ts >= cutoff

    return counts, floor


def xid_row(policy: Dict[str, Any], code: int) -> Tuple[Dict[str, Any], List[str]]:
    """The catalogue row of ``code`` with the policy's ``xid.overrides`` applied, and the rule notes that say so
    (also the body of the ``gpuops.cluster.xid_info`` filter)."""
    row = _xid_catalog.lookup(code)
    notes = ["xid_catalog[%s] (NVIDIA: %s)" % (code, row.get("nvidia_action") or "not listed")]
    over = as_dict(policy["xid"]["overrides"]).get(str(code))
    if isinstance(over, dict) and over:
        row.update(over)
        notes.append("policy xid.overrides[%s]" % code)
    return row, notes


def _xid_row(ctx: Ctx, code: int) -> Tuple[Dict[str, Any], List[str]]:
    return xid_row(ctx.policy, code)


def _xid_code(ev: Dict[str, Any]) -> Optional[int]:
    """The Xid an event reports (79 for "fallen off the bus"); None for other events and the Xid 45 cleanups."""
    kind = ev.get("kind")
    if kind == "fallen_off_bus":
        return 79
    code = ev.get("code") if kind == "xid" else None
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    if code == 45 and ev.get("caused_by"):
        return None  # report the root Xid, not the cleanup
    return code


def _new_group(ev: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "count": 0,
        "first": None,
        "last": None,
        "pids": set(),
        "processes": set(),
        "raw": ev.get("raw") or ev.get("message"),
        "recovery_action": None,
        "fatal": False,
        "undated": 0,
        "gpu_index": ev.get("gpu_index"),
        "xid74": [],  # decoded NVLink error registers (xid_decode.decode_xid74)
        "nvl5": [],  # decoded NVLink5 Xid 144-150 lines (xid_decode.decode_nvlink5)
        "gsp": 0,  # GSP heartbeat/RPC timeout lines without an Xid line (counted as Xid 119)
        "units": {},  # Xid 13: (GPC, TPC) -> the processes that hit it
    }


def _count_event(grp: Dict[str, Any], ev: Dict[str, Any], driver: Any = None) -> None:
    grp["count"] += 1
    ts = parse_time(ev.get("timestamp"))
    if ts is None:
        grp["undated"] += 1
    else:
        grp["first"] = ts if grp["first"] is None or ts < grp["first"] else grp["first"]
        grp["last"] = ts if grp["last"] is None or ts > grp["last"] else grp["last"]
    if as_str(ev.get("pid")) not in _USER_PROC_UNKNOWN:
        grp["pids"].add(as_str(ev.get("pid")))
    if as_str(ev.get("process")) not in _USER_PROC_UNKNOWN:
        grp["processes"].add(as_str(ev.get("process")))
    if ev.get("recovery_action"):
        grp["recovery_action"] = ev.get("recovery_action")
    if ev.get("severity") == "fatal" or "fatal" in str(ev.get("message") or "").lower().split():
        grp["fatal"] = True
    text = ev.get("message") or ev.get("raw")
    decoded = xid_decode.decode_xid74(text) if ev.get("code") == 74 else None
    if decoded:
        grp["xid74"].append(decoded)
    code = ev.get("code")
    nvl5 = xid_decode.decode_nvlink5(code, text, driver) if isinstance(code, int) and 144 <= code <= 150 else None
    if nvl5:
        grp["nvl5"].append(nvl5)
    if ev.get("kind") == "gsp_timeout":
        grp["gsp"] += 1
    unit = xid_decode.gpc_tpc(text) if ev.get("code") == 13 else None
    if unit:
        who = as_str(ev.get("pid")) or as_str(ev.get("process")) or "?"
        grp["units"].setdefault(unit, set()).add(who)


def group_xids(
    facts: Dict[str, Any], counts, by_index: Dict[Any, Dict[str, Any]]
) -> Dict[Tuple[int, Optional[str]], Dict[str, Any]]:
    """The Xid events that count (``counts``: this boot, not cleared), grouped by (code, bus id). GSP heartbeat/RPC
    timeout lines count as Xid 119 (one group, bus id unknown) only when no Xid 119/120 line counts on the node:
    the driver prints them around its own Xid 119 line."""
    groups: Dict[Tuple[int, Optional[str]], Dict[str, Any]] = {}
    driver = as_dict(facts.get("gpu")).get("driver_version")
    gsp: List[Dict[str, Any]] = []
    for ev in as_list(as_dict(facts.get("kernel")).get("events")):
        if isinstance(ev, dict) and ev.get("kind") == "gsp_timeout":
            if counts(ev, None):
                gsp.append(ev)
            continue
        code = _xid_code(ev) if isinstance(ev, dict) else None
        if code is None:
            continue
        bus = normalize_bus_id(ev.get("bus_id"))
        if bus is None and isinstance(ev.get("gpu_index"), int) and ev["gpu_index"] in by_index:
            bus = normalize_bus_id(by_index[ev["gpu_index"]].get("bus_id"))
        if counts(ev, bus):
            _count_event(groups.setdefault((code, bus), _new_group(ev)), ev, driver)
    if gsp and not any(code in (119, 120) for code, _bus in groups):
        for ev in gsp:
            _count_event(groups.setdefault((119, None), _new_group(ev)), ev)
    return groups


#: User-caused codes with an NVIDIA workflow for repeats (WORKFLOW_XID_13, WORKFLOW_XID_31); 43/45 repeat whenever
#: several processes are killed, which says nothing about the GPU.
_DIAG_WORKFLOWS = (13, 31)


def _user_caused_verdict(ctx: Ctx, code: int, grp: Dict[str, Any], notes: List[str], action: str) -> Tuple[str, str]:
    """Application faults: P3, unless NVIDIA's WORKFLOW_XID_13/31 says the GPU needs a diagnostic run (the same
    GPC/TPC hit by different processes; the same GPU hit by many processes)."""
    xp = ctx.policy["xid"]
    units = {u: who for u, who in as_dict(grp.get("units")).items() if len(who) >= xp["same_unit_repeat_processes"]}
    if units:
        unit = sorted(units)[0]
        notes.append(
            "GPC %d TPC %d hit by %d processes: run DCGM diag (NVIDIA WORKFLOW_XID_13)" % (unit + (len(units[unit]),))
        )
        return "P2", "diagnose"
    # a pid and its process name are one process: count whichever the lines give more of
    distinct = max(len(grp["pids"]), len(grp["processes"]))
    if code in _DIAG_WORKFLOWS and distinct >= xp["user_caused_repeat_processes"]:
        notes.append("same GPU from %d processes: run DCGM diag (NVIDIA WORKFLOW_XID_%s)" % (distinct, code))
        return "P2", "diagnose"
    notes.append("user-caused: application fault, not a node alarm")
    return xp["user_caused_severity"], action


def _recovery_verdict(ctx: Ctx, value: Any) -> Optional[Tuple[str, str, str]]:
    """(severity, action, recovery action name) for the recovery action an Xid 154 carries, or None."""
    if not value:
        return None
    ra = _xid_catalog.recovery_action_name(value) or str(value)
    if ra == "none":
        return "P3", "none", ra
    sa = sev_action(ctx.policy["recovery_actions"], ra)
    return (sa[0], sa[1], ra) if sa else None


def _policy_override(ctx: Ctx, code: int) -> bool:
    """Whether the site's ``xid.overrides`` sets a severity or an action for ``code``."""
    over = as_dict(as_dict(ctx.policy["xid"]["overrides"]).get(str(code)))
    return "severity" in over or "action" in over


def _lone_xid45(grp: Dict[str, Any], notes: List[str]) -> Tuple[str, str]:
    """WORKFLOW_XID_45: "Solo: RESTART_FM / Not Solo: IGNORE (follow guidance in other Xid)"."""
    if grp.get("fabric_manager") is False:
        notes.append("solo Xid 45 (WORKFLOW_XID_45: RESTART_FM), but this node runs no fabric manager")
        return "P3", "none"
    notes.append("solo Xid 45: no other Xid on this GPU (NVIDIA WORKFLOW_XID_45: Solo: RESTART_FM)")
    return "P2", "restart_fabric_manager"


def xid_verdict(
    ctx: Ctx, code: int, row: Dict[str, Any], grp: Dict[str, Any], notes: List[str], peer_fault: bool = False
) -> Tuple[str, str]:
    """(severity, action) of one Xid group: the catalogue row, refined by the recovery action Xid 154 carries,
    by how many processes hit a user-caused Xid, by the Xid 74 registers and by "Fatal" on the line. Appends the
    reasons to ``notes``. ``peer_fault``: another error on the node explains sympathetic Xid 74 bits."""
    xp = ctx.policy["xid"]
    sev, action = row.get("severity", "P2"), row.get("action", "monitor")
    if row.get("override"):
        notes.append("override: %s" % row["override"].get("reason"))
    ra = _recovery_verdict(ctx, grp["recovery_action"]) if code == xp["recovery_action_xid"] else None
    nvl5 = xid_decode.nvlink5_verdict(grp.get("nvl5") or [], grp.get("xid154")) if grp.get("nvl5") else None
    if ra:
        sev, action = ra[0], ra[1]
        notes.append("recovery_actions[%s] (Xid 154 carries the new action)" % ra[2])
    elif code == 45 and grp.get("solo") and _policy_override(ctx, code):
        notes.append("solo Xid 45: the site's xid.overrides[45] applies, not NVIDIA WORKFLOW_XID_45 (RESTART_FM)")
    elif code == 45 and grp.get("solo"):
        sev, action = _lone_xid45(grp, notes)
    elif row.get("user_caused"):
        sev, action = _user_caused_verdict(ctx, code, grp, notes, action)
    elif code == 74 and grp.get("xid74") and grp.get("hopper") is not False:
        sev, action, why = xid_decode.xid74_verdict(grp["xid74"], peer_fault)
        notes.append("WORKFLOW_NVLINK_ERR: %s" % why)
    elif code == 74 and grp.get("xid74"):
        notes.append("WORKFLOW_NVLINK_ERR: the register meanings are Hopper's; not decoded for this GPU")
    elif nvl5:
        sev, action = nvl5[0], nvl5[1]
        notes.append("WORKFLOW_NVLINK5_ERR: %s" % nvl5[2])
    elif grp["fatal"] and isinstance(row.get("fatal_escalation"), dict):
        sev = row["fatal_escalation"].get("severity", sev)
        action = row["fatal_escalation"].get("action", action)
        notes.append("'Fatal' on the line")
    if grp.get("gsp"):
        notes.append("GSP heartbeat/RPC timeout lines without an Xid line (%d): treated as Xid 119" % grp["gsp"])
    return sev, action


def _peer_faults(groups: Dict[Tuple[int, Optional[str]], Dict[str, Any]], sxid: bool) -> Dict[Optional[str], bool]:
    """Per bus id: whether another error on the node can explain sympathetic Xid 74 bits there (NVIDIA: "if seen
    with other bits set or other Xid/SXid, follow the resolution for those")."""
    primary, other_xid = set(), set()
    for (code, bus), grp in groups.items():
        if code == 74:
            if not grp["xid74"] or xid_decode.is_primary(grp["xid74"]):
                primary.add(bus)
        elif code not in _xid_catalog.USER_CAUSED:
            primary.add(bus)
            other_xid.add(bus)
    return {bus: sxid or bool(primary - {bus}) or bus in other_xid for (_code, bus) in groups}


def check_xid(ctx: Ctx, facts: Dict[str, Any], hs: Dict[str, Any], counts) -> None:
    by_bus = gpu_by_bus(facts)
    by_index = {g.get("index"): g for g in gpu_list(facts) if isinstance(g.get("index"), int)}
    groups = group_xids(facts, counts, by_index)
    sxid = any(
        isinstance(ev, dict) and ev.get("kind") == "sxid" and counts(ev, normalize_bus_id(ev.get("bus_id")))
        for ev in as_list(as_dict(facts.get("kernel")).get("events"))
    )
    peers = _peer_faults(groups, sxid)
    services = as_dict(facts.get("node")).get("services")
    # False only when the node's services were read and list no fabric manager (a PCIe-only node)
    fm = None if not isinstance(services, dict) or not services else "nvidia-fabricmanager" in services
    for (code, bus), grp in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        row, notes = _xid_row(ctx, code)
        g = by_bus.get(bus) if bus else None
        if g is None and isinstance(grp["gpu_index"], int):
            g = by_index.get(grp["gpu_index"])
        grp["hopper"] = xid_decode.is_hopper(g)
        grp["solo"] = code == 45 and not any(c != 45 and b == bus for c, b in groups)
        grp["fabric_manager"] = fm
        x154 = groups.get((154, bus))
        r154 = _recovery_verdict(ctx, x154["recovery_action"]) if x154 else None
        grp["xid154"] = (r154[0], r154[1]) if r154 else None
        sev, action = xid_verdict(ctx, code, row, grp, notes, peers.get(bus, False))
        comp = gpu_comp(g) if g else ("gpu:%s" % bus if bus else "node")
        label = gpu_label(g) if g else ("GPU %s" % bus if bus else "GPU (bus id not in the log)")
        when = " since %s" % iso_z(grp["first"]) if grp["first"] else ""
        ctx.add(
            "gpu.xid",
            sev,
            comp,
            code,
            "%s Xid %d: %s (%d event%s%s)"
            % (
                label,
                code,
                row.get("description") or row.get("name"),
                grp["count"],
                "" if grp["count"] == 1 else "s",
                when,
            ),
            action,
            "; ".join(notes),
            evidence={
                "code": code,
                "bus_id": bus,
                "count": grp["count"],
                "first": iso_z(grp["first"]),
                "last": iso_z(grp["last"]),
                "undated": grp["undated"],
                "processes": sorted(grp["processes"])[:5],
                "sample": str(grp["raw"] or "")[:300],
                **_decoded_evidence(grp),
            },
            bus_id=bus,
            serial=as_str(g.get("serial")) if g else None,
            raised_at=grp["last"],
        )


def _decoded_evidence(grp: Dict[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    if grp["xid74"]:
        out["nvlink_registers"] = [
            {
                "link": d["link"],
                "registers": ["0x%x" % r for r in d["registers"]],
                "bits": ["reg%d.bit%d:%s" % b for b in d["bits"]],
            }
            for d in grp["xid74"][:5]
        ]
    if grp["units"]:
        out["gpc_tpc"] = {"GPC %d TPC %d" % u: len(who) for u, who in sorted(grp["units"].items())}
    if grp.get("nvl5"):
        out["nvlink5"] = [
            {k: d.get(k) for k in ("unit", "link", "intr_info", "error_status", "version", "subcode", "bucket")}
            for d in grp["nvl5"][:5]
        ]
    if grp.get("gsp"):
        out["gsp_timeouts"] = grp["gsp"]
    return out


_SXID_LINK = re.compile(r"\b(?:Link|port)\s+(\d+)", re.IGNORECASE)


def _plural(n: int) -> str:
    return "" if n == 1 else "s"


def _sxid_fatal_word(ev: Dict[str, Any]) -> Optional[bool]:
    """The line's own word: True "Fatal", False "Non-fatal"/"Nonfatal", None neither."""
    if ev.get("severity") in ("fatal", "nonfatal"):
        return ev["severity"] == "fatal"
    words = str(ev.get("message") or ev.get("raw") or "").lower().replace(",", " ").split()
    if "fatal" in words:
        return True
    return False if any(w in ("non-fatal", "nonfatal") for w in words) else None


def sxid_row(policy: Dict[str, Any], code: Any, fatal_word: Optional[bool]) -> Dict[str, Any]:
    """The SXid catalogue's verdict on ``code`` with the policy's ``sxid.overrides`` applied: the code's own row
    wins over its class's ("unlisted" for a code outside the guide); a row with ``when_fatal`` applies only when
    the line says Fatal. ``e["override"]`` names the key that applied."""
    e = _sxid_catalog.lookup(code, fatal_word)
    table = as_dict(as_dict(policy.get("sxid")).get("overrides"))
    for key in (str(e["code"]) if e["code"] is not None else None, e["class"] or "unlisted"):
        row = as_dict(table.get(key)) if key is not None else {}
        if not row or (row.get("when_fatal") and not fatal_word):
            continue
        e["severity"] = row.get("severity", e["severity"])
        e["action"] = row.get("action", e["action"])
        e["override"] = "sxid.overrides[%s]" % key
        break
    return e


def check_sxid(ctx: Ctx, facts: Dict[str, Any], counts) -> None:
    """NVSwitch SXid lines judged by the Fabric Manager guide's classes (``_sxid_catalog``); one finding per (code,
    switch) with the lines counted per link (``evidence.links``)."""
    groups: Dict[Tuple[Any, Optional[str]], Dict[str, Any]] = {}
    for ev in as_list(as_dict(facts.get("kernel")).get("events")):
        if not isinstance(ev, dict) or ev.get("kind") != "sxid":
            continue
        bus = normalize_bus_id(ev.get("bus_id"))
        if not counts(ev, bus):
            continue
        m = _NVSWITCH_DEV.search(str(ev.get("raw") or ""))
        code = ev.get("code") if isinstance(ev.get("code"), int) else as_str(ev.get("code"))
        grp = groups.setdefault(
            (code, bus),
            {"count": 0, "word": None, "raw": ev.get("raw"), "dev": m.group(1) if m else None, "links": {}},
        )
        grp["count"] += 1
        word = _sxid_fatal_word(ev)
        if word is not None:
            grp["word"] = bool(grp["word"]) or word
        lm = _SXID_LINK.search(str(ev.get("message") or ""))
        link = lm.group(1) if lm else "?"
        grp["links"][link] = grp["links"].get(link, 0) + 1
    for (code, bus), grp in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1] or "")):
        e = sxid_row(ctx.policy, code, grp["word"])
        comp = "nvswitch%s" % grp["dev"] if grp["dev"] else ("nvswitch:%s" % bus if bus else "nvswitch")
        links = ", ".join("link %s: %d" % kv for kv in sorted(grp["links"].items(), key=lambda kv: kv[0].zfill(4)))
        ctx.add(
            "nvswitch.sxid",
            e["severity"],
            comp,
            code,
            "NVSwitch %s SXid %s (%s, %d event%s; %s)"
            % (bus or "?", code, "fatal" if e["fatal"] else "non-fatal", grp["count"], _plural(grp["count"]), links),
            e["action"],
            "nvswitch.sxid: %s (%s): %s"
            % (e["class"] or "code not in the guide", _sxid_catalog.GUIDE if e["known"] else "line word", e["guide"])
            + ("; policy %s" % e["override"] if e.get("override") else ""),
            evidence={
                "count": grp["count"],
                "links": dict(sorted(grp["links"].items())),
                "class": e["class"],
                "fatal": e["fatal"],
                "sample": str(grp["raw"] or "")[:300],
            },
            bus_id=bus,
        )
