# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster aggregation: node status, correlation of node findings into P0 domain findings.

``node_status(findings, facts, policy, domains)`` is the one function of a node's findings and of what could be
read of it (fact-domain states, ``_checks.domain_states``) defined in docs/findings.md.
``evaluate_cluster(nodes, policy, now)`` looks across nodes: the share of faulty/unreachable nodes,
whole racks / leaf switches / power domains down, the same check failing on a large part of one domain
(one P0 for the domain; the members' findings keep their severity but their action becomes ``monitor``
and ``cause`` names the P0, so a dead leaf switch does not make automation drain a rack), and IB ports
stuck in INIT/ARMED on many nodes (one P0 about the subnet manager).

Pure Python, no Ansible imports; runs on the controller.
"""

from __future__ import annotations

import datetime
from typing import Any, Dict, List, Optional, Set, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils._checks import domain_states, finding_domain
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import (
    DEFAULT_POLICY,
    is_withheld,
    parse_time,
    respond_by,
)

_ALARM = ("P0", "P1", "P2")


def node_assessment(
    findings: Optional[List[Dict[str, Any]]],
    facts: Optional[Dict[str, Any]] = None,
    policy: Optional[Dict[str, Any]] = None,
    domains: Optional[Dict[str, Dict[str, Any]]] = None,
) -> Tuple[str, Optional[str]]:
    """``(status, reason)`` of a node; see :func:`node_status`. ``reason`` is None for a healthy node."""
    fs = [f for f in findings or [] if isinstance(f, dict)]
    for f in fs:
        if f.get("check") == "node.unreachable":
            return "unreachable", str(f.get("message") or "node unreachable")
    if domains is None and isinstance(facts, dict):
        domains = domain_states(facts, None, policy)
    domains = domains or {}
    unknown = {d for d, st in domains.items() if isinstance(st, dict) and st.get("state") == "unknown"}
    serious = [f for f in fs if f.get("severity") in ("P0", "P1")]
    # a P0/P1 counts as a fault only when it comes from evidence that was read
    seen = [f for f in serious if not is_withheld(f) and finding_domain(f) not in unknown]
    if seen:
        return "faulty", "%d P0/P1 finding(s): %s" % (len(seen), seen[0].get("message"))
    blind: Dict[str, List[str]] = {}
    for d in sorted(unknown):
        if domains[d].get("needed"):
            blind.setdefault(str(domains[d].get("reason")), []).append(d)
    if blind:
        return "error", "could not read " + "; ".join("%s: %s" % (", ".join(ds), why) for why, ds in blind.items())
    if serious:
        f = serious[0]
        if is_withheld(f):
            return "error", str(f.get("message"))
        return "error", "%s (%s data unknown: not confirmed)" % (f.get("message"), finding_domain(f))
    required = set((policy or {}).get("collector_errors", {}).get("required_domains") or [])
    for f in fs:
        if f.get("check") != "collector.error":
            continue
        if (f.get("evidence") or {}).get("required") or str(f.get("component", "")).split(":", 1)[-1] in required:
            return "error", str(f.get("message"))
    if isinstance(facts, dict):
        for d in sorted(required):
            if isinstance(facts.get(d), dict) and facts[d].get("errors"):
                return "error", "%s collector errors" % d
    p2 = [f for f in fs if f.get("severity") == "P2"]
    if p2:
        return "degraded", "%d P2 finding(s): %s" % (len(p2), p2[0].get("message"))
    return "healthy", None


def node_status(
    findings: Optional[List[Dict[str, Any]]],
    facts: Optional[Dict[str, Any]] = None,
    policy: Optional[Dict[str, Any]] = None,
    domains: Optional[Dict[str, Dict[str, Any]]] = None,
) -> str:
    """``unreachable`` | ``faulty`` | ``error`` | ``degraded`` | ``healthy`` (docs/findings.md).

    unreachable if any node.unreachable; else faulty if any P0/P1 finding read from evidence (not one whose
    disruptive action was withheld because its domain could not be read); else error if a needed fact domain
    is unknown (``domains``: ``_checks.domain_states``; computed from ``facts`` when not given), a P0/P1 was
    withheld, or a required collector has a collector.error (``evidence.required``, or, given ``policy``, a
    ``collector:<domain>`` component of a domain in ``collector_errors.required_domains``; given ``facts``
    too, a required domain whose facts carry errors); else degraded if any P2; else healthy (P3 allowed).
    """
    return node_assessment(findings, facts, policy, domains)[0]


def _cluster_finding(
    check: str,
    component: str,
    code: str,
    message: str,
    rule: str,
    evidence: Dict[str, Any],
    now: datetime.datetime,
    policy: Dict[str, Any],
    action: str = "contact_vendor",
) -> Dict[str, Any]:
    return {
        "check": check,
        "severity": "P0",
        "component": component,
        "code": code,
        "message": message,
        "action": action,
        "rule": rule,
        "respond_by": respond_by("P0", now, policy),
        "evidence": evidence,
        "host": None,
        "cause": None,
        "id": "cluster:%s:%s:%s" % (check, component, code),
    }


def _explain(finding: Dict[str, Any], cause_id: str) -> None:
    if finding.get("cause"):
        return
    ev = finding.setdefault("evidence", {})
    if isinstance(ev, dict):
        ev["original_action"] = finding.get("action")
    finding["action"] = "monitor"
    finding["cause"] = cause_id


def evaluate_cluster(
    nodes: Dict[str, Dict[str, Any]], policy: Optional[Dict[str, Any]] = None, now: Any = None
) -> List[Dict[str, Any]]:
    """Cluster findings (P0, except the P2 ``cluster.unknown``) for the inspected nodes.

    Args:
      nodes: ``{host: {"findings": [...], "status": str (computed when absent), "rack": str|None,
        "leaf": str|None, "power": str|None}}``. The members' findings that a P0 explains are REWRITTEN
        IN PLACE: ``action`` becomes ``monitor`` (the original is kept in ``evidence.original_action``)
        and ``cause`` is the P0's id. Node status is unchanged (severities stay).
      policy: the merged policy (None: defaults); uses ``correlation`` and ``cluster``.
      now: generated_at for respond_by (ISO/epoch/datetime; None: now).

    Returns: the cluster findings (host None, ids ``cluster:<check>:<component>:<code>``), in order:
      ``cluster.subnet_manager`` (component subnet_manager), correlations ``cluster.<rack|leaf|power>``
      (component ``<kind>:<name>``, code = the correlated check), domains down ``cluster.<kind>`` (code
      ``down``), ``cluster.capacity`` (component cluster, code faulty_share; nodes in status ``error`` are
      named in ``evidence.unknown`` and never counted as down), ``cluster.unknown`` (P2, code unknown_share:
      at least ``cluster.faulty_share`` of the nodes in status ``error``). Findings whose disruptive action
      was withheld (their domain could not be read) take part in no correlation.
    """
    policy = policy if policy is not None else DEFAULT_POLICY
    now_dt = parse_time(now) or datetime.datetime.now(datetime.timezone.utc)
    corr = policy["correlation"]
    cl = policy["cluster"]
    out: List[Dict[str, Any]] = []
    hosts = sorted(nodes)
    findings = {h: [f for f in (nodes[h] or {}).get("findings") or [] if isinstance(f, dict)] for h in hosts}
    status = {h: (nodes[h] or {}).get("status") or node_status(findings[h]) for h in hosts}
    down = {h for h in hosts if status[h] in ("unreachable", "faulty")}
    # nodes whose evidence could not be read: neither failed nor healthy; never counted as down
    unknown = {h for h in hosts if status[h] == "error"}
    domains: Dict[str, Dict[str, List[str]]] = {}
    for kind in ("rack", "leaf", "power"):
        groups: Dict[str, List[str]] = {}
        for h in hosts:
            name = (nodes[h] or {}).get(kind)
            if name not in (None, ""):
                groups.setdefault(str(name), []).append(h)
        domains[kind] = groups

    # 1. IB ports in INIT/ARMED on many nodes: the subnet manager, not the nodes
    sm = {
        h: [
            f
            for f in findings[h]
            if f.get("check") == "ib.port_state" and f.get("code") in ("INIT", "ARMED") and not f.get("cause")
        ]
        for h in hosts
    }
    sm = {h: fs for h, fs in sm.items() if fs}
    if len(sm) >= corr["subnet_manager_min_nodes"]:
        p0 = _cluster_finding(
            "cluster.subnet_manager",
            "subnet_manager",
            "INIT/ARMED",
            "IB ports stuck in INIT/ARMED on %d nodes: check the subnet manager (opensm/UFM)" % len(sm),
            "correlation.subnet_manager_min_nodes=%d" % corr["subnet_manager_min_nodes"],
            {
                "hosts": sorted(sm),
                "ports": sorted("%s:%s" % (h, f.get("component")) for h, fs in sm.items() for f in fs)[:50],
            },
            now_dt,
            policy,
            action="contact_vendor",
        )
        out.append(p0)
        for fs in sm.values():
            for f in fs:
                _explain(f, p0["id"])

    # 2. the same check failing on a large share of one domain
    order_table = corr["domain_order"]
    for check in corr["checks"]:
        failing: Dict[str, List[Dict[str, Any]]] = {}
        for h in hosts:
            fs = [
                f
                for f in findings[h]
                if f.get("check") == check
                and f.get("severity") in _ALARM
                and not f.get("cause")
                and not is_withheld(f)  # not observed now: its domain could not be read
            ]
            if fs:
                failing[h] = fs
        if len(failing) < corr["min_nodes"]:
            continue
        explained: Set[str] = set()
        for kind in order_table.get(check) or order_table.get("default") or ["leaf", "power", "rack"]:
            for name, members in sorted(domains.get(kind, {}).items()):
                hit = sorted(h for h in members if h in failing)
                if len(hit) < corr["min_nodes"] or len(hit) < corr["min_share"] * len(members):
                    continue
                if set(hit) <= explained:
                    continue  # an earlier domain already explains these nodes
                p0 = _cluster_finding(
                    "cluster.%s" % kind,
                    "%s:%s" % (kind, name),
                    check,
                    "%s failing on %d of %d nodes of %s %s: one cause, not %d node faults"
                    % (check, len(hit), len(members), kind, name, len(hit)),
                    "correlation: >= %s of the %s and >= %d nodes" % (corr["min_share"], kind, corr["min_nodes"]),
                    {"hosts": hit, "members": len(members), "check": check},
                    now_dt,
                    policy,
                    action="monitor" if check.startswith("gpu.") else "contact_vendor",
                )
                out.append(p0)
                explained |= set(hit)
                for h in hit:
                    for f in failing[h]:
                        _explain(f, p0["id"])

    # 3. whole domains down (every member unreachable or faulty); the first domain in the default order
    #    that covers the nodes names them (a second one with the same members would be a duplicate)
    for kind in order_table.get("default") or ["leaf", "power", "rack"]:
        for name, members in sorted(domains[kind].items()):
            if len(members) < cl["domain_down_min_nodes"] or not all(h in down for h in members):
                continue
            if all(all(f.get("cause") for f in findings[h] if f.get("severity") in ("P0", "P1")) for h in members):
                continue  # already explained by a correlation P0
            p0 = _cluster_finding(
                "cluster.%s" % kind,
                "%s:%s" % (kind, name),
                "down",
                "%s %s down: all %d nodes unreachable or faulty" % (kind, name, len(members)),
                "cluster.domain_down_min_nodes=%d" % cl["domain_down_min_nodes"],
                {"hosts": members, "status": {h: status[h] for h in members}},
                now_dt,
                policy,
                action="contact_vendor",
            )
            out.append(p0)
            for h in members:
                for f in findings[h]:
                    if f.get("check") == "node.unreachable":
                        _explain(f, p0["id"])

    # 4. cluster capacity (nodes in status error are unknown: not counted as lost, but named)
    total = len(hosts)
    unknown_note = "; %d more could not be inspected (status error, not counted)" % len(unknown) if unknown else ""
    if total >= cl["min_nodes"] and total and len(down) / float(total) >= cl["faulty_share"]:
        out.append(
            _cluster_finding(
                "cluster.capacity",
                "cluster",
                "faulty_share",
                "%d of %d nodes unreachable or faulty (%.0f%%)%s"
                % (len(down), total, 100.0 * len(down) / total, unknown_note),
                "cluster.faulty_share=%s" % cl["faulty_share"],
                {"down": sorted(down), "total": total, "unknown": sorted(unknown)},
                now_dt,
                policy,
                action="monitor",
            )
        )
    # 5. a large share of the cluster could not be inspected: the report cannot speak for it
    if total >= cl["min_nodes"] and len(unknown) / float(total) >= cl["faulty_share"]:
        f = _cluster_finding(
            "cluster.unknown",
            "cluster",
            "unknown_share",
            "%d of %d nodes could not be inspected (status error: evidence missing or unreadable); they are "
            "neither counted as faulty nor as healthy" % (len(unknown), total),
            "cluster.faulty_share=%s applied to nodes in status error" % cl["faulty_share"],
            {"unknown": sorted(unknown), "total": total},
            now_dt,
            policy,
            action="monitor",
        )
        f["severity"] = "P2"
        f["respond_by"] = respond_by("P2", now_dt, policy)
        out.append(f)
    return out
