# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node onboarding, stage checks 1-3 and 6 (docs/onboarding.md); burn-in (stage 4) is ``_onboard_burnin``.

Every ``check_*`` function takes plain data (facts per docs/facts.md, findings per docs/findings.md) and returns
a *verdict*::

    {stage, passed: bool, problems: [str, ...], evidence: {...}, remedy: str | None}

``problems`` name each failure precisely (the GPU, the port, the value and the limit): they become the Slurm
drain reason and the sign-off report. Records live in ``_onboard_record``, rendering in ``_onboard_render``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils.upgrade import plan as _upgrade


def _d(v: Any) -> Dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: Any) -> List[Any]:
    return v if isinstance(v, list) else []


def _n(v: Any) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v == int(v):
        return str(int(v))
    return str(v)


def verdict(stage: str, problems: List[str], evidence: Dict[str, Any], remedy: Optional[str] = None) -> Dict[str, Any]:
    return {"stage": stage, "passed": not problems, "problems": problems, "evidence": evidence, "remedy": remedy}


def gpus_of(facts: Any) -> List[Dict[str, Any]]:
    """The facts' GPUs (dicts only), by index."""
    gpus = [g for g in _l(_d(_d(facts).get("gpu")).get("gpus")) if isinstance(g, dict)]
    return sorted(gpus, key=lambda g: g.get("index") if isinstance(g.get("index"), int) else 1 << 30)


def gpu_label(g: Dict[str, Any]) -> str:
    if g.get("index") is None:
        return "GPU %s (serial %s)" % (g.get("bus_id"), g.get("serial"))
    return "GPU %s (%s, serial %s)" % (g.get("index"), g.get("bus_id"), g.get("serial"))


def ports_of(facts: Any) -> List[Tuple[str, Dict[str, Any]]]:
    """``[("mlx5_0/1", port), ...]`` from the facts' HCAs."""
    out = []
    for h in _l(_d(_d(facts).get("ib")).get("hcas")):
        if not isinstance(h, dict):
            continue
        for p in _l(h.get("ports")):
            if isinstance(p, dict):
                out.append(("%s/%s" % (h.get("name"), p.get("port")), p))
    return out


def _errors(domain: Any) -> List[str]:
    return [
        "%s: %s" % (e.get("kind"), e.get("message"))
        for e in _l(_d(domain).get("errors"))
        if isinstance(e, dict) and e.get("kind") != "unreadable"
    ]


# ------------------------------------------------------------------------------------------ 1. inventory


def _inv_gpu_identity(gpus: List[Dict[str, Any]], profile: Dict[str, Any], problems: List[str]) -> None:
    """Readability and model per GPU."""
    for g in gpus:
        if g.get("readable") is False:
            problems.append("%s unreadable: %s" % (gpu_label(g), g.get("error")))
    model = profile.get("gpu_model")
    for g in gpus if model else []:
        if g.get("name") and str(model).lower() not in str(g.get("name")).lower():
            problems.append("%s is a %s, profile expects %s" % (gpu_label(g), g.get("name"), model))


def _inv_memory(facts: Dict[str, Any], gpus: List[Dict[str, Any]], acc: Dict[str, Any], problems: List[str]) -> None:
    """GPU and host memory against the acceptance data (within ``memory_tolerance_pct``, default 2 %)."""
    tol = float(_n(acc.get("memory_tolerance_pct")) or 2.0) / 100.0
    want_mem = _n(acc.get("gpu_memory_mib"))
    for g in gpus if want_mem else []:
        have = _n(_d(g.get("memory")).get("total_mib"))
        if have is None or have < want_mem * (1 - tol):
            problems.append("%s memory %s MiB, expected %s MiB" % (gpu_label(g), _fmt(have), _fmt(want_mem)))
    want_host = _n(acc.get("memory_mib"))
    if want_host:
        have = _n(_d(facts.get("node")).get("memory_mib"))
        if have is None or have < want_host * (1 - tol):
            problems.append("host memory %s MiB, expected %s MiB" % (_fmt(have), _fmt(want_host)))


def _inv_links(gpus: List[Dict[str, Any]], profile: Dict[str, Any], problems: List[str]) -> None:
    """NVLinks up and PCIe generation/width per GPU."""
    want_links = profile.get("nvlinks_per_gpu")
    for g in gpus if isinstance(want_links, int) else []:
        links = _l(_d(g.get("nvlink")).get("links"))
        up = sum(1 for lk in links if isinstance(lk, dict) and lk.get("state") == "up")
        if up != want_links:
            problems.append("%s has %d NVLinks up, profile expects %d" % (gpu_label(g), up, want_links))
    gen, width = profile.get("pcie_gen"), profile.get("pcie_width")
    for g in gpus:
        pcie = _d(g.get("pcie"))
        if isinstance(gen, int) and (_n(pcie.get("gen_max")) or 0) < gen:
            problems.append("%s PCIe gen max %s, profile expects %d" % (gpu_label(g), pcie.get("gen_max"), gen))
        if isinstance(width, int):
            w = _n(pcie.get("width_current"))
            if w is None:
                w = _n(pcie.get("width_max"))
            if (w or 0) < width:
                problems.append("%s PCIe width x%s, profile expects x%d" % (gpu_label(g), _fmt(w), width))


def _inv_ports(ports: List[Tuple[str, Dict[str, Any]]], profile: Dict[str, Any], problems: List[str]) -> List[str]:
    """Port count (or names), rate and link layer; returns the ACTIVE port names."""
    want_ports = profile.get("ib_ports")
    active = [name for name, p in ports if p.get("state") == "ACTIVE"]
    if isinstance(want_ports, int) and len(active) != want_ports:
        down = [name for name, p in ports if p.get("state") != "ACTIVE"]
        problems.append(
            "%d IB ports ACTIVE, profile expects %d%s"
            % (len(active), want_ports, (" (not active: %s)" % ", ".join(down)) if down else "")
        )
    elif isinstance(want_ports, list):
        names = {n for n, _p in ports}
        problems += ["IB port %s missing" % w for w in want_ports if str(w) not in names]
    rate = _n(profile.get("ib_rate_gbps"))
    for name, p in ports if rate else []:
        if p.get("state") == "ACTIVE" and _n(p.get("rate_gbps")) != rate:
            problems.append("IB port %s rate %s Gb/s, profile expects %s" % (name, p.get("rate_gbps"), _fmt(rate)))
    layer = profile.get("ib_link_layer")
    for name, p in ports if layer else []:
        if p.get("link_layer") and p.get("link_layer") != layer:
            problems.append("IB port %s link layer %s, profile expects %s" % (name, p.get("link_layer"), layer))
    return active


def _inv_evidence(facts: Dict[str, Any], gpus: List[Dict[str, Any]], count: int, active: List[str], bmc_ok: bool):
    bmc = _d(facts.get("bmc"))
    hcas = [h for h in _l(_d(facts.get("ib")).get("hcas")) if isinstance(h, dict)]
    return {
        "gpu_count": count,
        "gpu_model": sorted({str(g.get("name")) for g in gpus if g.get("name")}),
        "gpu_serials": {str(g.get("index")): g.get("serial") for g in gpus},
        "gpu_bus_ids": {str(g.get("index")): g.get("bus_id") for g in gpus},
        "vbios": sorted({str(g.get("vbios_version")) for g in gpus if g.get("vbios_version")}),
        "hcas": {
            str(h.get("name")): {k: h.get(k) for k in ("node_guid", "serial", "board_id", "fw_version")} for h in hcas
        },
        "ib_ports_active": len(active),
        "bmc_reachable": bmc_ok,
        "bmc_source": bmc.get("source"),
        "fru_serials": {
            str(f.get("name")): f.get("serial") for f in _l(bmc.get("fru")) if isinstance(f, dict) and f.get("serial")
        },
        "host_memory_mib": _d(facts.get("node")).get("memory_mib"),
    }


def check_inventory(facts: Any, profile: Any, acceptance: Any = None) -> Dict[str, Any]:
    """Stage 1: the node's facts vs its class's hardware profile (``gpuops_profiles[class]``) and the onboarding
    acceptance data (``gpu_memory_mib``, ``memory_mib``, ``hca_count``, ``bmc_required``, ``memory_tolerance_pct``).
    """
    facts, profile, acc = _d(facts), _d(profile), _d(acceptance)
    problems: List[str] = []
    if not profile:
        problems.append("no hardware profile for this node class (gpuops_profiles[gpuops_node_class])")
    gpu = _d(facts.get("gpu"))
    gpus = gpus_of(facts)
    problems += ["gpu facts incomplete: %s" % msg for msg in _errors(gpu)]
    count = gpu.get("count") if isinstance(gpu.get("count"), int) else len(gpus)
    want = profile.get("gpu_count")
    if isinstance(want, int) and count != want:
        problems.append("GPU count %d, profile expects %d" % (count, want))
    _inv_gpu_identity(gpus, profile, problems)
    _inv_memory(facts, gpus, acc, problems)
    _inv_links(gpus, profile, problems)
    ib = _d(facts.get("ib"))
    problems += ["ib facts incomplete: %s" % msg for msg in _errors(ib)]
    hcas = [h for h in _l(ib.get("hcas")) if isinstance(h, dict)]
    want_hcas = acc.get("hca_count")
    if isinstance(want_hcas, int) and len(hcas) != want_hcas:
        problems.append("%d HCAs, expected %d" % (len(hcas), want_hcas))
    active = _inv_ports(ports_of(facts), profile, problems)
    bmc = _d(facts.get("bmc"))
    bmc_ok = bool(bmc.get("source")) and bool(bmc.get("sensors") or bmc.get("mc") or bmc.get("redfish"))
    bmc_errors = _errors(bmc)
    if acc.get("bmc_required", True) and not bmc_ok:
        problems.append("BMC not reachable%s" % ((": " + bmc_errors[0]) if bmc_errors else ""))
    no_serial = [str(g.get("index")) for g in gpus if not g.get("serial")]
    if no_serial:
        problems.append("GPU serial numbers missing for GPU %s" % ", ".join(no_serial))
    return verdict("inventory", problems, _inv_evidence(facts, gpus, count, active, bmc_ok))


# ------------------------------------------------------------------------------------------ 2. compliance


def upgrade_command(host: str, inventory: Optional[str] = None, ticket: Optional[str] = None) -> str:
    """The exact playbooks/upgrade.yml command that brings ``host`` to its baseline (docs/upgrades.md)."""
    parts = ["ansible-playbook"]
    if inventory:
        parts += ["-i", inventory]
    parts += ["playbooks/upgrade.yml", "-e", "gpuops_targets=%s" % host]
    parts += ["-e", "gpuops_ticket=%s" % (ticket or "<ticket>"), "-e", "gpuops_change_id=<change id>"]
    return " ".join(parts)


def check_compliance(
    facts: Any,
    baseline: Any,
    node_class: Optional[str],
    host: str,
    methods: Any = None,
    inventory: Optional[str] = None,
    ticket: Optional[str] = None,
) -> Dict[str, Any]:
    """Stage 2: installed versions (``_upgrade.current_versions``) vs the class's upgrade baseline. Any step the
    upgrade planner would take (upgrade, downgrade, or verify an unknown version) fails the stage; the remedy is
    the upgrade playbook command."""
    target = _upgrade.target_for(_d(baseline), node_class)
    current = _upgrade.current_versions(facts)
    if target is None:
        return verdict(
            "compliance",
            ["no gpuops_upgrade_baseline entry for node class %s" % node_class],
            {"current": current, "target": None},
        )
    steps = _upgrade.plan_node(current, target, node_class, methods)
    problems = []
    for s in steps:
        if s["action"] == "verify":
            problems.append("%s version unknown (facts do not report it), baseline %s" % (s["component"], s["to"]))
        else:
            targets = " on %s" % ", ".join(str(t) for t in s["targets"]) if s.get("targets") else ""
            problems.append(
                "%s %s%s, baseline %s%s"
                % (s["component"], s["from"], targets, s["to"], (" (downgrade)" if s["downgrade"] else ""))
            )
    remedy = upgrade_command(host, inventory, ticket) if steps else None
    return verdict(
        "compliance",
        problems,
        {"current": current, "target": target, "steps": [s["component"] for s in steps]},
        remedy,
    )


# ------------------------------------------------------------------------------------------ 3. health


def check_health(
    findings: Any, fail_severities: Sequence[str] = ("P0", "P1", "P2"), ignore: Sequence[str] = ()
) -> Dict[str, Any]:
    """Stage 3: the node's own inspection findings; any of ``fail_severities`` (on ``_policy.SEVERITIES``)
    fails, worst first, except checks in ``ignore`` (e.g. ``slurm.drain``: onboarding drained the node itself)."""
    failing = []
    counted: Dict[str, int] = {}
    for f in _l(findings):
        if not isinstance(f, dict):
            continue
        sev = f.get("severity")
        counted[str(sev)] = counted.get(str(sev), 0) + 1
        if sev in fail_severities and f.get("check") not in ignore:
            failing.append(f)
    failing.sort(key=lambda f: _policy.severity_rank(f.get("severity")))  # stable: worst first, else as found
    problems = ["%s %s %s: %s" % (f["severity"], f.get("check"), f.get("component"), f.get("message")) for f in failing]
    return verdict("health", problems, {"findings_by_severity": counted, "ignored_checks": list(ignore)})


# ------------------------------------------------------------------------------------------ 6. service


def check_slurm_node(nodes: Any, host: str, profile: Any) -> Dict[str, Any]:
    """The node's definition as ``scontrol show node`` reports it (``_slurm_parse.parse_show_node``): it exists,
    is in a partition, its GRES has the profile's GPU count, and slurmd responds."""
    node = next((n for n in _l(nodes) if isinstance(n, dict) and n.get("name") == host), None)
    problems = []
    if node is None:
        return verdict("service", ["Slurm does not know node %s" % host], {})
    if not node.get("partitions"):
        problems.append("node %s is in no Slurm partition" % host)
    want = _d(profile).get("gpu_count")
    if isinstance(want, int) and node.get("gres_gpus") != want:
        problems.append(
            "Slurm Gres=%s gives %s GPUs, profile expects %d" % (node.get("gres"), node.get("gres_gpus"), want)
        )
    flags = _l(node.get("flags"))
    for bad in ("NOT_RESPONDING", "INVALID_REG", "FAIL"):
        if bad in flags or node.get("base_state") == bad:
            problems.append("node %s is %s in Slurm" % (host, node.get("state")))
    if node.get("base_state") == "DOWN":
        problems.append("node %s is DOWN in Slurm (reason: %s)" % (host, node.get("reason")))
    ev = {k: node.get(k) for k in ("state", "gres", "gres_gpus", "partitions", "reason")}
    return verdict("service", problems, ev)
