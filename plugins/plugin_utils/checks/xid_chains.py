# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Xid root causes named only by their dependents (docs/checks.md, gpu.xid "root causes").

The driver tears down the channels a fault hit with ``Xid 45 ... caused by previous Xid N`` (also written
``Preemptive Cleanup, due to previous Xid N``; the kernel-log parser keeps ``N`` as ``caused_by``). When a capture
holds those lines but not the Xid ``N`` line itself (the ring buffer rolled over, the log was cut for the
ticket, the capture started after it), the root cause is still known: this check reports Xid ``N`` with ``N``'s
own severity and action from the catalogue, its evidence being the dependent lines.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import xid
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_list,
    as_str,
    gpu_by_bus,
    gpu_comp,
    gpu_label,
    gpu_list,
)

#: dependent lines kept as evidence per root cause
MAX_LINES = 5


def _caused_by(ev: Dict[str, Any]) -> Optional[int]:
    code = ev.get("caused_by") if ev.get("kind") == "xid" else None
    return code if isinstance(code, int) and not isinstance(code, bool) and code > 0 else None


def dependents(facts: Dict[str, Any], counts, by_index: Dict[Any, Dict[str, Any]]) -> Dict[Tuple[int, Any], Any]:
    """``{(root code, bus id): (group, [dependent events])}`` of the counted events naming a previous Xid."""
    out: Dict[Tuple[int, Any], Any] = {}
    for ev in as_list(as_dict(facts.get("kernel")).get("events")):
        root = _caused_by(ev) if isinstance(ev, dict) else None
        if root is None:
            continue
        bus = normalize_bus_id(ev.get("bus_id"))
        if bus is None and isinstance(ev.get("gpu_index"), int) and ev["gpu_index"] in by_index:
            bus = normalize_bus_id(by_index[ev["gpu_index"]].get("bus_id"))
        if not counts(ev, bus):
            continue
        grp, evs = out.setdefault((root, bus), (xid._new_group(ev), []))
        xid._count_event(grp, ev)
        evs.append(ev)
    return out


def check_root_causes(ctx: Ctx, facts: Dict[str, Any], counts) -> None:
    """A ``gpu.xid`` finding for every Xid ``N`` that counted lines call the cause of while no counted line of
    Xid ``N`` itself is there (same GPU)."""
    by_bus = gpu_by_bus(facts)
    by_index = {g.get("index"): g for g in gpu_list(facts) if isinstance(g.get("index"), int)}
    present = set(xid.group_xids(facts, counts, by_index))
    for (root, bus), (grp, evs) in sorted(dependents(facts, counts, by_index).items(), key=_order):
        if (root, bus) in present:
            continue  # the root line is there: check_xid reports it
        row, notes = xid.xid_row(ctx.policy, root)
        sev, action = xid.xid_verdict(ctx, root, row, grp, notes)
        codes = sorted({ev.get("code") for ev in evs if isinstance(ev.get("code"), int)})
        notes.append(
            "root cause named by Xid %s 'caused by previous Xid %d'; Xid %d itself is not in the log"
            % ("/".join(map(str, codes)), root, root)
        )
        g = by_bus.get(bus) if bus else None
        if g is None and isinstance(grp["gpu_index"], int):
            g = by_index.get(grp["gpu_index"])
        comp = gpu_comp(g) if g else ("gpu:%s" % bus if bus else "node")
        label = gpu_label(g) if g else ("GPU %s" % bus if bus else "GPU (bus id not in the log)")
        ctx.add(
            "gpu.xid",
            sev,
            comp,
            root,
            "%s Xid %d: %s (not in the log: named as the cause by %d Xid %s line%s%s)"
            % (
                label,
                root,
                row.get("description") or row.get("name"),
                grp["count"],
                "/".join(map(str, codes)),
                "" if grp["count"] == 1 else "s",
                " since %s" % iso_z(grp["first"]) if grp["first"] else "",
            ),
            action,
            "; ".join(notes),
            evidence={
                "code": root,
                "bus_id": bus,
                "inferred_from": codes,
                "count": grp["count"],
                "first": iso_z(grp["first"]),
                "last": iso_z(grp["last"]),
                "lines": _lines(evs),
                "processes": sorted(grp["processes"])[:5],
            },
            bus_id=bus,
            serial=as_str(g.get("serial")) if g else None,
            raised_at=grp["last"],
        )


def _order(item: Any) -> Tuple[int, str]:
    (root, bus), _unused = item
    return root, bus or ""


def _lines(evs: List[Dict[str, Any]]) -> List[str]:
    return [str(ev.get("raw") or ev.get("message") or "")[:300] for ev in evs[:MAX_LINES]]
