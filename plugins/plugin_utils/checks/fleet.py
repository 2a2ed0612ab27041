# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Expectations inferred from peers where no hardware profile sets them (the zero-config baseline).

Two kinds of peers, each stating its confidence in the finding (``evidence.baseline``):

- within a node (always, unless the profile sets the expectation): the ports of one adapter model and link
  layer (11 of 12 ConnectX-7 ports Active at 400 Gb/s: the twelfth, Down/Polling, is a fault on that port; a
  port at a lower rate is downtrained), and the GPUs of the node (one GPU whose NVLinks are all down while its
  siblings' are up);
- across the fleet (``baseline`` from ``_fleet.infer_baselines``, only for nodes without a profile): the nodes
  of one class (the inventory node class, else the GPU model). A node below the majority GPU count is a P1, a
  port the peers have Active that is down here a P1, version skew (driver, VBIOS, HCA firmware, BMC, BIOS) a
  P3 drift.

A port Down/Disabled while its peers are Active counts as down (real captures of down 400G ports show
Disabled as often as Polling); an adapter model whose ports are mostly down (the unused ports of a second
NIC) judges nothing. Thresholds: ``policy["fleet_baseline"]`` (min_peers, min_share, min_node_ports,
min_node_gpus).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.ib import add_port_rate
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_list,
    as_num,
    gpu_label,
    gpu_list,
)

#: Port states the IB port check already reports on its own (subnet manager did not finish).
_SM_STATES = ("INIT", "ARMED")
_UP_STATES = ("ACTIVE", "ACTIVE_DEFER")


def settings(policy: Dict[str, Any]) -> Dict[str, Any]:
    fb = as_dict(policy.get("fleet_baseline"))
    return {
        "enabled": fb.get("enabled", True),
        "min_peers": int(fb.get("min_peers", 4)),
        "min_share": float(fb.get("min_share", 0.75)),
        "min_node_ports": int(fb.get("min_node_ports", 4)),
        "min_node_gpus": int(fb.get("min_node_gpus", 4)),
    }


def confidence(agree: int, total: int) -> Dict[str, Any]:
    return {"agree": agree, "of": total, "confidence": round(agree / total, 3) if total else 0.0}


def _pct(conf: Dict[str, Any]) -> str:
    return "%d of %d, confidence %d%%" % (conf["agree"], conf["of"], round(100 * conf["confidence"]))


def port_groups(facts: Dict[str, Any]) -> Dict[Tuple[str, str], List[Tuple[str, Dict[str, Any]]]]:
    """Ports of the node by (adapter model, link layer)."""
    groups: Dict[Tuple[str, str], List[Tuple[str, Dict[str, Any]]]] = {}
    for hca in as_list(as_dict(facts.get("ib")).get("hcas")):
        if not isinstance(hca, dict):
            continue
        model = str(hca.get("ca_type") or hca.get("board_id") or "adapter")
        for p in as_list(hca.get("ports")):
            if not isinstance(p, dict):
                continue
            name = "%s/%s" % (hca.get("name"), p.get("port"))
            groups.setdefault((model, str(p.get("link_layer") or "InfiniBand")), []).append((name, p))
    return groups


def _port_evidence(p: Dict[str, Any], baseline: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "state": p.get("state"),
        "phys_state": p.get("phys_state"),
        "rate_gbps": p.get("rate_gbps"),
        "baseline": baseline,
    }


def check_port_peers(ctx: Ctx, facts: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> None:
    """Within the node: a port down, or slower, while most ports of its adapter model are Active."""
    cfg = settings(ctx.policy)
    prof = profile or {}
    if not cfg["enabled"] or prof.get("ib_ports"):
        return  # the profile says which ports to expect: ib.port_state checks them
    for (model, layer), ports in sorted(port_groups(facts).items()):
        active = [(n, p) for n, p in ports if p.get("state") in _UP_STATES]
        if len(ports) < cfg["min_node_ports"] or len(active) < cfg["min_share"] * len(ports):
            continue
        conf = confidence(len(active), len(ports))
        base = dict(conf, source="node_peers", peers="%s %s ports" % (model, layer))
        for name, p in ports:
            state = p.get("state")
            if state in _UP_STATES or state in _SM_STATES:
                continue
            ctx.add(
                "ib.port_state",
                "P1",
                name,
                state or "unknown",
                "IB port %s is %s (%s) while %d of %d %s %s ports of this node are Active "
                "(inferred from peers, confidence %d%%)"
                % (
                    name,
                    state,
                    p.get("phys_state"),
                    len(active),
                    len(ports),
                    model,
                    layer,
                    round(100 * conf["confidence"]),
                ),
                "reseat",
                "ib.port_state: zero-config baseline, ports of the same adapter model and link layer Active",
                evidence=_port_evidence(p, base),
            )
        if prof.get("ib_rate_gbps"):
            continue
        _rate_peers(ctx, active, cfg, "%s %s" % (model, layer))


def _rate_peers(ctx: Ctx, active: List[Tuple[str, Dict[str, Any]]], cfg: Dict[str, Any], what: str) -> None:
    rates = Counter(as_num(p.get("rate_gbps")) for _n, p in active if as_num(p.get("rate_gbps")) is not None)
    if not rates or len(active) < cfg["min_node_ports"]:
        return
    rate, agree = rates.most_common(1)[0]
    if agree < cfg["min_share"] * len(active):
        return
    conf = confidence(agree, len(active))
    for name, p in active:
        have = as_num(p.get("rate_gbps"))
        if have is not None and have < rate:
            add_port_rate(
                ctx,
                name,
                "IB port %s at %g Gb/s while %d of %d Active %s ports run at %g (inferred from peers, "
                "confidence %d%%)" % (name, have, agree, len(active), what, rate, round(100 * conf["confidence"])),
                "zero-config baseline, below the rate of the adapter's peer ports (downtrained link)",
                _port_evidence(p, dict(conf, source="node_peers", expected_rate_gbps=rate)),
            )


def _links(g: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [lk for lk in as_list(as_dict(g.get("nvlink")).get("links")) if isinstance(lk, dict)]


def check_gpu_peers(ctx: Ctx, facts: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> None:
    """Within the node: one GPU whose NVLinks are all down while its siblings' are up; one GPU on a narrower
    PCIe link than its siblings."""
    cfg = settings(ctx.policy)
    if not cfg["enabled"]:
        return
    _width_peers(ctx, gpu_list(facts), profile, cfg)
    if (profile or {}).get("nvlinks_per_gpu"):
        return  # the profile sets the links per GPU: gpu.nvlink checks each GPU against it
    gpus = [g for g in gpu_list(facts) if g.get("readable") is not False and isinstance(g.get("nvlink"), dict)]
    if len(gpus) < cfg["min_node_gpus"]:
        return
    # (ctx, gpu_list(facts), profile, cfg)
    linked = [g for g in gpus if any(lk.get("state") == "up" for lk in _links(g))]
    if len(linked) < cfg["min_share"] * len(gpus):
        return
    conf = confidence(len(linked), len(gpus))
    usual = Counter(sum(1 for lk in _links(g) if lk.get("state") == "up") for g in linked).most_common(1)[0][0]
    for g in gpus:
        if g in linked:
            continue
        links = _links(g)
        ctx.for_gpu(g)(
            "gpu.nvlink",
            "P1",
            "all_down",
            "%s: %s while %d of %d GPUs of this node have theirs up (usually %d) "
            "(inferred from peers, confidence %d%%)"
            % (
                gpu_label(g),
                "none of its %d NVLinks is up" % len(links) if links else "no NVLink is active",
                len(linked),
                len(gpus),
                usual,
                round(100 * conf["confidence"]),
            ),
            "reset_gpu",
            "gpu.nvlink: zero-config baseline, sibling GPUs' NVLinks up (NVIDIA Xid 136/link training: RESET_GPU)",
            evidence={"listed": len(links), "baseline": dict(conf, source="node_peers", usual_links_up=usual)},
        )


def _width_peers(ctx: Ctx, all_gpus: List[Dict[str, Any]], profile: Optional[Dict[str, Any]], cfg) -> None:
    if (profile or {}).get("pcie_width"):
        return  # gpu.pcie compares with the profile's width
    gpus = [
        g for g in all_gpus if g.get("readable") is not False and as_num(as_dict(g.get("pcie")).get("width_current"))
    ]
    if len(gpus) < cfg["min_node_gpus"]:
        return
    widths = Counter(as_num(as_dict(g.get("pcie")).get("width_current")) for g in gpus)
    usual, agree = widths.most_common(1)[0]
    if agree < cfg["min_share"] * len(gpus):
        return
    conf = confidence(agree, len(gpus))
    for g in gpus:
        p = as_dict(g.get("pcie"))
        width = as_num(p.get("width_current"))
        if width is not None and width < usual:
            ctx.for_gpu(g, serial=False)(
                "gpu.pcie",
                "P2",
                "width",
                "%s: PCIe x%d while %d of %d GPUs of this node run x%d (inferred from peers, confidence %d%%)"
                % (gpu_label(g), width, agree, len(gpus), usual, round(100 * conf["confidence"])),
                "reseat",
                "gpu.pcie: zero-config baseline, width below the sibling GPUs' (a degraded riser or slot)",
                evidence=dict(p, baseline=dict(conf, source="node_peers", usual_width=usual)),
            )


# --------------------------------------------------------------------------------------- across the fleet


def _value(baseline: Dict[str, Any], key: str) -> Tuple[Any, Optional[Dict[str, Any]]]:
    entry = as_dict(baseline.get(key))
    if "value" not in entry:
        return None, None
    return entry["value"], entry


def _fleet_base(entry: Dict[str, Any], baseline: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "source": "fleet",
        "class": baseline.get("class"),
        "agree": entry.get("agree"),
        "of": entry.get("of"),
        "confidence": entry.get("confidence"),
        "value": entry.get("value"),
    }


def check_fleet(ctx: Ctx, facts: Dict[str, Any], baseline: Optional[Dict[str, Any]]) -> None:
    """Across the fleet: this node against the majority of its class (``_fleet.infer_baselines``)."""
    if not isinstance(baseline, dict):
        return
    _fleet_gpus(ctx, facts, baseline)
    _fleet_ports(ctx, facts, baseline)
    _fleet_node(ctx, facts, baseline)
    _fleet_versions(ctx, facts, baseline)


def _fleet_node(ctx: Ctx, facts: Dict[str, Any], baseline: Dict[str, Any]) -> None:
    """Mounts present and services running on the majority of the class (what a profile's lists would say)."""
    node = as_dict(facts.get("node"))
    for m in as_list(node.get("mounts")):
        entry = as_dict(as_dict(baseline.get("mounts")).get(str(as_dict(m).get("path"))))
        if entry.get("value") and m.get("present") is False:
            ctx.add(
                "node.mounts",
                "P1",
                "mount:%s" % m.get("path"),
                "missing",
                "%s is not mounted; it is mounted on %d of %d peers of class %s (fleet baseline, %d%%)"
                % (m.get("path"), entry["agree"], entry["of"], baseline.get("class"), round(100 * entry["confidence"])),
                "isolate",
                "node.mounts: zero-config fleet baseline (mounted on the majority of the class)",
                evidence=dict(m, baseline=_fleet_base(entry, baseline)),
            )
    services = as_dict(node.get("services"))
    for name, entry in sorted(as_dict(baseline.get("services")).items()):
        svc = services.get(name)
        if not as_dict(entry).get("value") or not isinstance(svc, dict) or svc.get("running") is not False:
            continue
        fm = name == "nvidia-fabricmanager"  # runs on NVSwitch systems only: the majority says this is one
        ctx.add(
            "node.fabric_manager" if fm else "node.services",
            "P1" if fm else "P2",
            "service:%s" % name,
            "not_running",
            "service %s is not running; it runs on %d of %d peers of class %s (fleet baseline, %d%%)"
            % (name, entry["agree"], entry["of"], baseline.get("class"), round(100 * entry["confidence"])),
            "isolate" if fm else "tune",
            "%s: zero-config fleet baseline (running on the majority of the class)"
            % ("node.fabric_manager" if fm else "node.services"),
            evidence={"service": svc, "baseline": _fleet_base(entry, baseline)},
        )


def _fleet_gpus(ctx: Ctx, facts: Dict[str, Any], baseline: Dict[str, Any]) -> None:
    want, entry = _value(baseline, "gpu_count")
    gpu = as_dict(facts.get("gpu"))
    gpus = gpu_list(facts)
    if entry is None or gpu.get("errors") or any(g.get("readable") is False for g in gpus):
        return  # an incomplete listing says nothing about the count (gpu.missing/collector.error cover it)
    count = gpu.get("count")
    if not isinstance(count, int) or isinstance(count, bool):
        count = len(gpus)
    if count < want:
        ctx.add(
            "gpu.missing",
            "P1",
            "node",
            "count",
            "%d of %d expected GPUs visible: %s peers of class %s have %d (fleet baseline, %s)"
            % (count, want, entry["agree"], baseline.get("class"), want, _pct(entry)),
            "isolate",
            "gpu.missing: zero-config fleet baseline (majority GPU count of the node's class)",
            evidence={"count": count, "expected": want, "baseline": _fleet_base(entry, baseline)},
        )


def _fleet_ports(ctx: Ctx, facts: Dict[str, Any], baseline: Dict[str, Any]) -> None:
    ports = as_dict(baseline.get("ports"))
    if not ports or as_dict(facts.get("ib")).get("errors"):
        return
    here = {name: p for group in port_groups(facts).values() for name, p in group}
    for name, entry in sorted(ports.items()):
        if not isinstance(entry, dict) or not entry.get("value"):
            continue
        p = here.get(name)
        if p is None or p.get("state") in _UP_STATES or p.get("state") in _SM_STATES:
            continue  # absent (or admin-disabled): counted below; up or waiting for the SM: not ours
        ctx.add(
            "ib.port_state",
            "P1",
            name,
            p.get("state") or "unknown",
            "IB port %s is %s (%s) while it is Active on %d of %d peers of class %s (fleet baseline, %d%%)"
            % (
                name,
                p.get("state"),
                p.get("phys_state"),
                entry["agree"],
                entry["of"],
                baseline.get("class"),
                round(100 * entry["confidence"]),
            ),
            "reseat",
            "ib.port_state: zero-config fleet baseline (port Active on the majority of the class)",
            evidence=_port_evidence(p, _fleet_base(entry, baseline)),
        )
    want, entry = _value(baseline, "active_ports")
    if entry is None:
        return
    listed = [n for n in here if as_dict(ports.get(n)).get("value")]
    expected = sorted(n for n, e in ports.items() if as_dict(e).get("value"))
    if len(listed) < len(expected):
        ctx.add(
            "ib.port_state",
            "P1",
            "node",
            "missing",
            "%d of %d IB ports found: missing %s (fleet baseline of class %s, %s)"
            % (
                len(listed),
                len(expected),
                ", ".join(sorted(set(expected) - set(listed))),
                baseline.get("class"),
                _pct(entry),
            ),
            "isolate",
            "ib.port_state: zero-config fleet baseline (ports Active on the majority of the class)",
            evidence={"found": sorted(listed), "expected": expected, "baseline": _fleet_base(entry, baseline)},
        )


#: (baseline key, check, component, label, where the value is in the facts)
_VERSIONS = (
    ("driver_version", "gpu.drift", "node", "driver"),
    ("bmc_firmware", "bmc.drift", "bmc", "BMC firmware"),
    ("bios_version", "bmc.drift", "bmc", "BIOS"),
    ("kernel", "node.drift", "node", "kernel"),
)


def node_versions(facts: Dict[str, Any]) -> Dict[str, Any]:
    """The versions a node runs (what the fleet baseline votes on)."""
    bmc = as_dict(facts.get("bmc"))
    systems = as_list(as_dict(bmc.get("redfish")).get("systems"))
    gpus = [g for g in gpu_list(facts) if g.get("readable") is not False]
    return {
        "driver_version": as_dict(facts.get("gpu")).get("driver_version"),
        "bmc_firmware": as_dict(bmc.get("mc")).get("firmware_revision"),
        "bios_version": as_dict(systems[0]).get("bios_version") if systems and isinstance(systems[0], dict) else None,
        "kernel": as_dict(facts.get("node")).get("kernel"),
        "vbios": {str(g.get("index")): g.get("vbios_version") for g in gpus if g.get("vbios_version")},
        "hca_fw": {
            str(h.get("name")): (str(h.get("ca_type") or h.get("board_id") or "adapter"), h.get("fw_version"))
            for h in as_list(as_dict(facts.get("ib")).get("hcas"))
            if isinstance(h, dict) and h.get("fw_version")
        },
    }


def _fleet_versions(ctx: Ctx, facts: Dict[str, Any], baseline: Dict[str, Any]) -> None:
    have = node_versions(facts)
    for key, check, comp, label in _VERSIONS:
        want, entry = _value(baseline, key)
        if entry is not None and have.get(key) and str(have[key]) != str(want):
            _skew(ctx, (check, comp, key, label), have[key], want, entry, baseline)
    want, entry = _value(baseline, "vbios_version")
    if entry is not None:
        odd = sorted((i, v) for i, v in have["vbios"].items() if str(v) != str(want))
        if odd:
            _skew(
                ctx,
                ("gpu.drift", "node", "vbios_version", "VBIOS"),
                ", ".join("GPU %s %s" % iv for iv in odd),
                want,
                entry,
                baseline,
            )
    for name, (model, fw) in sorted(have["hca_fw"].items()):
        entry = as_dict(as_dict(baseline.get("hca_fw")).get(model))
        if "value" in entry and str(fw) != str(entry["value"]):
            _skew(
                ctx,
                ("ib.drift", name, "fw_version", "%s (%s) firmware" % (name, model)),
                fw,
                entry["value"],
                entry,
                baseline,
            )


def _skew(ctx: Ctx, what: Tuple[str, str, str, str], have: Any, want: Any, entry, baseline) -> None:
    check, comp, code, label = what
    ctx.add(
        check,
        "P3",
        comp,
        "fleet_%s" % code,
        "%s %s; the class %s runs %s (fleet baseline, %s)" % (label, have, baseline.get("class"), want, _pct(entry)),
        "monitor",
        "%s: version skew against the zero-config fleet baseline (majority of the class)" % check,
        evidence={"current": have, "baseline": _fleet_base(entry, baseline)},
    )
