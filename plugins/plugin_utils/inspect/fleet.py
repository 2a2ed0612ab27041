# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The zero-config fleet baseline: what the nodes of one class mostly look like, inferred from the nodes.

Most sites start without hardware profiles. For the nodes that have none, :func:`infer_baselines` groups them
into classes (the inventory node class, else the GPU model the node reports) and takes, per class, the
majority of each attribute (GPU count and model, NVLinks per GPU, which IB ports are Active and at what rate,
driver / VBIOS / HCA firmware / BMC / BIOS / kernel versions), with the share of peers that agree (the
confidence). ``_checks.fleet.check_fleet`` compares each node with its class; :func:`profiles_yaml` writes the
baseline as a ``gpuops_profiles`` block an operator reviews and commits (docs/policy.md, zero-config baseline).
A value is inferred only with at least ``fleet_baseline.min_peers`` voters and ``min_share`` agreeing.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import as_dict, as_list, gpu_list
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.fleet import (
    node_versions,
    port_groups,
    settings,
)

_UP = ("ACTIVE", "ACTIVE_DEFER")


def gpu_model(facts: Dict[str, Any]) -> Optional[str]:
    """The GPU model most of the node's readable GPUs report, or None."""
    names = Counter(str(g["name"]) for g in gpu_list(facts) if g.get("readable") is not False and g.get("name"))
    return names.most_common(1)[0][0] if names else None


def peer_class(facts: Any, node_class: Optional[str]) -> Optional[str]:
    """The class a node is compared within: its inventory node class, else its GPU model."""
    if node_class:
        return str(node_class)
    return gpu_model(facts) if isinstance(facts, dict) and not facts.get("unreachable") else None


def majority(values: Iterable[Any], cfg: Dict[str, Any], voters: Optional[int] = None) -> Dict[str, Any]:
    """``{value, agree, of, confidence}`` when enough voters agree, else the same without ``value``."""
    votes = [v for v in values if v is not None]
    total = len(votes) if voters is None else voters
    if not votes or not total:
        return {"agree": 0, "of": total, "confidence": 0.0}
    value, agree = Counter(votes).most_common(1)[0]
    entry: Dict[str, Any] = {"agree": agree, "of": total, "confidence": round(agree / total, 3)}
    if total >= cfg["min_peers"] and agree >= cfg["min_share"] * total:
        entry["value"] = value
    return entry


def _gpu_complete(facts: Dict[str, Any]) -> bool:
    gpu = as_dict(facts.get("gpu"))
    return bool(gpu) and not gpu.get("errors") and all(g.get("readable") is not False for g in gpu_list(facts))


def _gpu_count(facts: Dict[str, Any]) -> Optional[int]:
    if not _gpu_complete(facts):
        return None
    count = as_dict(facts.get("gpu")).get("count")
    return count if isinstance(count, int) and not isinstance(count, bool) else len(gpu_list(facts))


def _ib_read(facts: Dict[str, Any]) -> bool:
    ib = as_dict(facts.get("ib"))
    return bool(ib.get("hcas")) and not ib.get("errors")


def _ports(members: List[Dict[str, Any]], cfg: Dict[str, Any]) -> Dict[str, Any]:
    """Per port name: Active on how many of the nodes whose IB was read, and the majority rate."""
    read = [f for f in members if _ib_read(f)]
    states: Dict[str, List[Any]] = {}
    for facts in read:
        for name, p in (x for group in port_groups(facts).values() for x in group):
            states.setdefault(name, []).append(p)
    out: Dict[str, Any] = {}
    for name, ports in sorted(states.items()):
        active = [p for p in ports if p.get("state") in _UP]
        entry = majority([True] * len(active), cfg, voters=len(read))
        rate = majority([p.get("rate_gbps") for p in active], cfg)
        if "value" in rate:
            entry["rate_gbps"] = rate["value"]
        entry["link_layer"] = Counter(str(p.get("link_layer") or "InfiniBand") for p in ports).most_common(1)[0][0]
        out[name] = entry
    return out


def _presence(members: List[Dict[str, Any]], what: str, cfg: Dict[str, Any]) -> Dict[str, Any]:
    """Per mount path (present) or service name (running): on how many of the nodes that report it."""
    seen: Dict[str, List[bool]] = {}
    for facts in members:
        node = as_dict(facts.get("node"))
        if what == "mounts":
            items = [
                (str(m.get("path")), m.get("present") is True)
                for m in as_list(node.get("mounts"))
                if isinstance(m, dict)
            ]
        else:
            items = [
                (str(n), s.get("running") is True)
                for n, s in as_dict(node.get("services")).items()
                if isinstance(s, dict)
            ]
        for key, ok in items:
            seen.setdefault(key, []).append(ok)
    out = {}
    for key, oks in sorted(seen.items()):
        entry = majority([True] * sum(oks), cfg, voters=len(oks))
        if "value" in entry:
            out[key] = entry
    return out


def infer_class(name: str, members: List[Dict[str, Any]], cfg: Dict[str, Any]) -> Dict[str, Any]:
    """The baseline of one class from its members' facts."""
    versions = [node_versions(f) for f in members]
    gpus = [g for f in members for g in gpu_list(f) if g.get("readable") is not False]
    baseline: Dict[str, Any] = {
        "class": name,
        "nodes": len(members),
        "gpu_model": majority((gpu_model(f) for f in members), cfg),
        "gpu_count": majority((_gpu_count(f) for f in members), cfg),
        "nvlinks_per_gpu": majority(
            (
                len(as_list(as_dict(g.get("nvlink")).get("links"))) or None
                for g in gpus
                if isinstance(g.get("nvlink"), dict)
            ),
            cfg,
        ),
        "vbios_version": majority((v for ver in versions for v in ver["vbios"].values()), cfg),
        "ports": _ports(members, cfg),
        "hca_fw": {},
    }
    for key in ("driver_version", "bmc_firmware", "bios_version", "kernel"):
        baseline[key] = majority((ver.get(key) for ver in versions), cfg)
    by_model: Dict[str, List[Any]] = {}
    for ver in versions:
        for model, fw in ver["hca_fw"].values():
            by_model.setdefault(model, []).append(fw)
    baseline["hca_fw"] = {model: majority(fws, cfg) for model, fws in sorted(by_model.items())}
    baseline["mounts"] = _presence(members, "mounts", cfg)
    baseline["services"] = _presence(members, "services", cfg)
    expected = [n for n, e in baseline["ports"].items() if "value" in e]
    if expected:
        read = [f for f in members if _ib_read(f)]
        complete = sum(
            1
            for f in read
            if all(
                p.get("state") in _UP
                for n, p in ((n, p) for g in port_groups(f).values() for n, p in g)
                if n in expected
            )
            and set(expected) <= {n for g in port_groups(f).values() for n, _p in g}
        )
        baseline["active_ports"] = majority([len(expected)] * complete, cfg, voters=len(read))
        if "value" not in baseline["active_ports"]:
            baseline["active_ports"]["value"] = len(expected)  # each port has its own majority
    return baseline


def infer_baselines(
    facts_by_host: Dict[str, Any], classes: Dict[str, Optional[str]], policy: Dict[str, Any]
) -> Dict[str, Dict[str, Any]]:
    """Class name -> baseline, for the classes with at least ``min_peers`` members.

    ``facts_by_host``: the facts of the nodes WITHOUT a profile (a node with a profile is judged by it);
    ``classes``: host -> inventory node class (or None: the GPU model decides).
    """
    cfg = settings(policy)
    if not cfg["enabled"]:
        return {}
    members: Dict[str, List[Dict[str, Any]]] = {}
    for host in sorted(facts_by_host):
        facts = facts_by_host[host]
        name = peer_class(facts, classes.get(host))
        if name and isinstance(facts, dict) and not facts.get("unreachable"):
            members.setdefault(name, []).append(facts)
    return {name: infer_class(name, m, cfg) for name, m in members.items() if len(m) >= cfg["min_peers"]}


def summary(baselines: Dict[str, Dict[str, Any]], members: Dict[str, List[str]]) -> Dict[str, Any]:
    """report.json's ``fleet_baseline``: per class the inferred values with their confidence, the ports the class
    has Active (link layer, rate) and its hosts; :func:`profiles_yaml` reads this."""
    out = {}
    for name, b in sorted(baselines.items()):
        entry = {k: v for k, v in b.items() if k != "ports"}
        entry["ports"] = {n: e for n, e in as_dict(b.get("ports")).items() if "value" in e}
        entry["hosts"] = sorted(members.get(name, []))
        out[name] = entry
    return out


# ---------------------------------------------------------------------------------------- the profiles


def class_slug(name: str, baseline: Dict[str, Any]) -> str:
    """A profile name for a class: the node class itself, or the GPU model in lower case with the GPU count."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "class"
    count = as_dict(baseline.get("gpu_count")).get("value")
    if baseline.get("gpu_model", {}).get("value") == name and count:
        slug = "%s-%d" % (slug, count)
    return slug


def _yaml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return "%g" % value if isinstance(value, float) else str(value)
    if isinstance(value, list):
        return "[%s]" % ", ".join(_yaml(v) for v in value)
    return '"%s"' % str(value).replace("\\", "\\\\").replace('"', '\\"')


def _note(entry: Dict[str, Any], unit: str = "nodes") -> str:
    return "  # %d of %d %s agree (%d%%)" % (entry["agree"], entry["of"], unit, round(100 * entry["confidence"]))


def profile_of(baseline: Dict[str, Any]) -> List[tuple]:
    """(key, value, comment) of the profile a class's baseline makes (only values with a majority)."""
    rows = []
    for key, unit in (("gpu_model", "nodes"), ("gpu_count", "nodes"), ("nvlinks_per_gpu", "GPUs")):
        entry = as_dict(baseline.get(key))
        if "value" in entry:
            rows.append((key, entry["value"], _note(entry, unit)))
    ports = {n: e for n, e in as_dict(baseline.get("ports")).items() if "value" in e}
    if ports:
        layers = Counter(e.get("link_layer") for e in ports.values()).most_common(1)[0][0]
        names = sorted(n for n, e in ports.items() if e.get("link_layer") == layers)
        worst = min((ports[n] for n in names), key=lambda e: e["confidence"])
        rows.append(("ib_ports", names, _note(worst)))
        rows.append(("ib_link_layer", layers, ""))
        rates = {ports[n].get("rate_gbps") for n in names}
        if len(rates) == 1 and None not in rates:
            rows.append(("ib_rate_gbps", rates.pop(), ""))
    entry = as_dict(baseline.get("driver_version"))
    if "value" in entry:
        rows.append(("driver_version", entry["value"], _note(entry)))
    mounts = sorted(as_dict(baseline.get("mounts")))
    if mounts:
        rows.append(("mounts", mounts, ""))
    services = sorted(as_dict(baseline.get("services")))
    if "nvidia-fabricmanager" in services:
        rows.append(("nvswitch", True, "  # nvidia-fabricmanager runs on the majority"))
    if services:
        rows.append(("services", services, ""))
    return rows


def profiles_yaml(baselines: Dict[str, Dict[str, Any]], generated_at: str) -> str:
    """The inferred baselines (report.json's ``fleet_baseline``) as a ``gpuops_profiles`` YAML block for
    group_vars, with the confidence as comments."""
    lines = [
        "---",
        "# Hardware profiles inferred by gpuops.cluster on %s from the nodes themselves (zero-config fleet"
        % generated_at,
        "# baseline): each value is what the majority of the class runs; the comment says how many agree.",
        "# Review before committing: a value is only as right as the majority it came from. Then give each host",
        "# its class (gpuops_node_class, e.g. in group_vars) and the profile replaces the inference.",
        "gpuops_profiles:",
    ]
    for name, b in sorted(baselines.items()):
        rows = profile_of(b)
        if not rows:
            continue
        lines.append("  %s:" % class_slug(name, b))
        lines.append("    description: %s" % _yaml("inferred from %d nodes of class %s" % (b["nodes"], name)))
        lines += ["    %s: %s%s" % (k, _yaml(v), c) for k, v, c in rows]
    lines.append("# Hosts per class:")
    for name, b in sorted(baselines.items()):
        hosts = sorted(as_list(b.get("hosts")))
        shown = ", ".join(hosts[:8]) + (", ... (%d hosts)" % len(hosts) if len(hosts) > 8 else "")
        lines.append("#   %s: %s" % (class_slug(name, b), shown))
    return "\n".join(lines) + "\n"
