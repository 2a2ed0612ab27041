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
stuck in INIT/ARMED on many nodes (one P0 about the subnet manager). Before any of it, with the scheduler's job
view, application-class Xids on the nodes of one job become one ``job.xid_storm`` finding (``job_storm``).

Pure Python, no Ansible imports; runs on the controller.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import domain_states, finding_domain
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import job_storm as _job_storm
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time, utcnow
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import (
    DEFAULT_POLICY,
    DOMAIN_KINDS,
    is_withheld,
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
    blind = _blind_reason(domains, unknown)
    if blind:
        return "error", blind
    if serious:
        f = serious[0]
        if is_withheld(f):
            return "error", str(f.get("message"))
        return "error", "%s (%s data unknown: not confirmed)" % (f.get("message"), finding_domain(f))
    reason = _required_collector_error(fs, facts, policy)
    if reason:
        return "error", reason
    p2 = [f for f in fs if f.get("severity") == "P2"]
    if p2:
        return "degraded", "%d P2 finding(s): %s" % (len(p2), p2[0].get("message"))
    return "healthy", None


def _blind_reason(domains: Dict[str, Dict[str, Any]], unknown: Set[str]) -> Optional[str]:
    """Why the node's status is ``error`` when needed fact domains are unknown (None: none is)."""
    blind: Dict[str, List[str]] = {}
    for d in sorted(unknown):
        if domains[d].get("needed"):
            blind.setdefault(str(domains[d].get("reason")), []).append(d)
    if not blind:
        return None
    return "could not read " + "; ".join("%s: %s" % (", ".join(ds), why) for why, ds in blind.items())


def _required_collector_error(
    fs: List[Dict[str, Any]], facts: Optional[Dict[str, Any]], policy: Optional[Dict[str, Any]]
) -> Optional[str]:
    """The message of a collector.error of a required domain, or of a required domain's facts errors."""
    required = set((policy or {}).get("collector_errors", {}).get("required_domains") or [])
    for f in fs:
        if f.get("check") != "collector.error":
            continue
        if (f.get("evidence") or {}).get("required") or str(f.get("component", "")).split(":", 1)[-1] in required:
            return str(f.get("message"))
    if isinstance(facts, dict):
        for d in sorted(required):
            if isinstance(facts.get(d), dict) and facts[d].get("errors"):
                return "%s collector errors" % d
    return None


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


def _explain(finding: Dict[str, Any], cause_id: str) -> None:
    if finding.get("cause"):
        return
    ev = finding.setdefault("evidence", {})
    if isinstance(ev, dict):
        ev["original_action"] = finding.get("action")
    finding["action"] = "monitor"
    finding["cause"] = cause_id


def evaluate_cluster(
    nodes: Dict[str, Dict[str, Any]],
    policy: Optional[Dict[str, Any]] = None,
    now: Any = None,
    platform: Optional[Dict[str, Any]] = None,
    slurm_names: Optional[Dict[str, str]] = None,
) -> List[Dict[str, Any]]:
    """Cluster findings (P0, except the P2 ``cluster.unknown``) for the inspected nodes.

    Args:
      nodes: ``{host: {"findings": [...], "status": str (computed when absent), "rack": str|None,
        "leaf": str|None, "power": str|None}}``. The members' findings that a P0 explains are REWRITTEN
        IN PLACE: ``action`` becomes ``monitor`` (the original is kept in ``evidence.original_action``)
        and ``cause`` is the P0's id. Node status is unchanged (severities stay).
      policy: the merged policy (None: defaults); uses ``correlation`` and ``cluster``.
      now: generated_at for respond_by (ISO/epoch/datetime; None: now).
      platform: the platform facts (the scheduler's job view) or None: with it, application-class Xids on the
        nodes of one job become one ``job.xid_storm`` finding first (``job_storm.attribute``: its members'
        findings are rewritten as a correlation's are, and take part in no correlation).
      slurm_names: host -> Slurm NodeName where they differ (``gpuops_slurm_node_name``): the job view names nodes
        by Slurm's names.

    Returns: the cluster findings (host None, ids ``cluster:<check>:<component>:<code>``), in order:
      ``job.xid_storm`` (component ``job:<id>``, severity ``job_storm.severity``, action ``restart_app``),
      ``cluster.subnet_manager`` (component subnet_manager), correlations ``cluster.<rack|leaf|power>``
      (component ``<kind>:<name>``, code = the correlated check), domains down ``cluster.<kind>`` (code
      ``down``), ``cluster.capacity`` (component cluster, code faulty_share; nodes in status ``error`` are
      named in ``evidence.unknown`` and never counted as down), ``cluster.unknown`` (P2, code unknown_share:
      at least ``cluster.faulty_share`` of the nodes in status ``error``). Findings whose disruptive action
      was withheld (their domain could not be read) take part in no correlation.
    """
    policy = policy if policy is not None else DEFAULT_POLICY
    storms = _job_storm.attribute(nodes, platform, policy, parse_time(now) or utcnow(), slurm_names) if platform else []
    cl = _Cluster(nodes, policy, now)
    cl.out.extend(storms)
    cl.subnet_manager()
    cl.correlate()
    cl.domains_down()
    cl.capacity()
    return cl.out


class _Cluster:
    """The inspected nodes seen together, and the cluster findings made of them (``out``)."""

    def __init__(self, nodes: Dict[str, Dict[str, Any]], policy: Dict[str, Any], now: Any) -> None:
        self.policy = policy
        self.now = parse_time(now) or utcnow()
        self.corr = policy["correlation"]
        self.out: List[Dict[str, Any]] = []
        self.hosts = sorted(nodes)
        self.findings = {
            h: [f for f in (nodes[h] or {}).get("findings") or [] if isinstance(f, dict)] for h in self.hosts
        }
        self.status = {h: (nodes[h] or {}).get("status") or node_status(self.findings[h]) for h in self.hosts}
        self.down = {h for h in self.hosts if self.status[h] in ("unreachable", "faulty")}
        # nodes whose evidence could not be read: neither failed nor healthy; never counted as down
        self.unknown = {h for h in self.hosts if self.status[h] == "error"}
        self.domains: Dict[str, Dict[str, List[str]]] = {}
        for kind in DOMAIN_KINDS:
            groups: Dict[str, List[str]] = {}
            for h in self.hosts:
                name = (nodes[h] or {}).get(kind)
                if name not in (None, ""):
                    groups.setdefault(str(name), []).append(h)
            self.domains[kind] = groups

    def add(
        self, check: str, component: str, code: str, message: str, rule: str, evidence: Dict[str, Any], action: str
    ) -> Dict[str, Any]:
        """Append one cluster finding (P0; host None; id ``cluster:<check>:<component>:<code>``) and return it."""
        finding = {
            "check": check,
            "severity": "P0",
            "component": component,
            "code": code,
            "message": message,
            "action": action,
            "rule": rule,
            "respond_by": respond_by("P0", self.now, self.policy),
            "evidence": evidence,
            "host": None,
            "cause": None,
            "id": "cluster:%s:%s:%s" % (check, component, code),
        }
        self.out.append(finding)
        return finding

    def subnet_manager(self) -> None:
        """1. IB ports in INIT/ARMED on many nodes: the subnet manager, not the nodes."""
        sm = {
            h: [
                f
                for f in self.findings[h]
                if f.get("check") == "ib.port_state" and f.get("code") in ("INIT", "ARMED") and not f.get("cause")
            ]
            for h in self.hosts
        }
        sm = {h: fs for h, fs in sm.items() if fs}
        least = self.corr["subnet_manager_min_nodes"]
        if len(sm) < least:
            return
        p0 = self.add(
            "cluster.subnet_manager",
            "subnet_manager",
            "INIT/ARMED",
            "IB ports stuck in INIT/ARMED on %d nodes: check the subnet manager (opensm/UFM)" % len(sm),
            "correlation.subnet_manager_min_nodes=%d" % least,
            {
                "hosts": sorted(sm),
                "ports": sorted("%s:%s" % (h, f.get("component")) for h, fs in sm.items() for f in fs)[:50],
            },
            "contact_vendor",
        )
        for fs in sm.values():
            for f in fs:
                _explain(f, p0["id"])

    def _failing(self, check: str) -> Dict[str, List[Dict[str, Any]]]:
        """Hosts with an alarm of ``check`` that nothing explains yet and whose evidence was read."""
        failing: Dict[str, List[Dict[str, Any]]] = {}
        for h in self.hosts:
            fs = [
                f
                for f in self.findings[h]
                if f.get("check") == check
                and f.get("severity") in _ALARM
                and not f.get("cause")
                and not is_withheld(f)  # not observed now: its domain could not be read
            ]
            if fs:
                failing[h] = fs
        return failing

    def correlate(self) -> None:
        """2. The same check failing on a large share of one domain."""
        corr = self.corr
        order_table = corr["domain_order"]
        for check in corr["checks"]:
            failing = self._failing(check)
            if len(failing) < corr["min_nodes"]:
                continue
            explained: Set[str] = set()
            for kind in order_table.get(check) or order_table.get("default") or ["leaf", "power", "rack"]:
                for name, members in sorted(self.domains.get(kind, {}).items()):
                    hit = sorted(h for h in members if h in failing)
                    if len(hit) < corr["min_nodes"] or len(hit) < corr["min_share"] * len(members):
                        continue
                    if set(hit) <= explained:
                        continue  # an earlier domain already explains these nodes
                    p0 = self.add(
                        "cluster.%s" % kind,
                        "%s:%s" % (kind, name),
                        check,
                        "%s failing on %d of %d nodes of %s %s: one cause, not %d node faults"
                        % (check, len(hit), len(members), kind, name, len(hit)),
                        "correlation: >= %s of the %s and >= %d nodes" % (corr["min_share"], kind, corr["min_nodes"]),
                        {"hosts": hit, "members": len(members), "check": check},
                        "monitor" if check.startswith("gpu.") else "contact_vendor",
                    )
                    explained |= set(hit)
                    for h in hit:
                        for f in failing[h]:
                            _explain(f, p0["id"])

    def domains_down(self) -> None:
        """3. Whole domains down (every member unreachable or faulty); the first domain in the default order
        that covers the nodes names them (a second one with the same members would be a duplicate)."""
        least = self.policy["cluster"]["domain_down_min_nodes"]
        for kind in self.corr["domain_order"].get("default") or ["leaf", "power", "rack"]:
            for name, members in sorted(self.domains[kind].items()):
                if len(members) < least or not all(h in self.down for h in members):
                    continue
                serious = [f for h in members for f in self.findings[h] if f.get("severity") in ("P0", "P1")]
                if all(f.get("cause") for f in serious):
                    continue  # already explained by a correlation P0
                p0 = self.add(
                    "cluster.%s" % kind,
                    "%s:%s" % (kind, name),
                    "down",
                    "%s %s down: all %d nodes unreachable or faulty" % (kind, name, len(members)),
                    "cluster.domain_down_min_nodes=%d" % least,
                    {"hosts": members, "status": {h: self.status[h] for h in members}},
                    "contact_vendor",
                )
                for h in members:
                    for f in self.findings[h]:
                        if f.get("check") == "node.unreachable":
                            _explain(f, p0["id"])

    def capacity(self) -> None:
        """4. Cluster capacity (nodes in status error are unknown: not counted as lost, but named); 5. a large
        share of the cluster could not be inspected: the report cannot speak for it (P2)."""
        cl = self.policy["cluster"]
        total, down, unknown = len(self.hosts), self.down, self.unknown
        if total < cl["min_nodes"] or not total:
            return
        unknown_note = "; %d more could not be inspected (status error, not counted)" % len(unknown) if unknown else ""
        if len(down) / float(total) >= cl["faulty_share"]:
            self.add(
                "cluster.capacity",
                "cluster",
                "faulty_share",
                "%d of %d nodes unreachable or faulty (%.0f%%)%s"
                % (len(down), total, 100.0 * len(down) / total, unknown_note),
                "cluster.faulty_share=%s" % cl["faulty_share"],
                {"down": sorted(down), "total": total, "unknown": sorted(unknown)},
                "monitor",
            )
        if len(unknown) / float(total) >= cl["faulty_share"]:
            f = self.add(
                "cluster.unknown",
                "cluster",
                "unknown_share",
                "%d of %d nodes could not be inspected (status error: evidence missing or unreadable); they are "
                "neither counted as faulty nor as healthy" % (len(unknown), total),
                "cluster.faulty_share=%s applied to nodes in status error" % cl["faulty_share"],
                {"unknown": sorted(unknown), "total": total},
                "monitor",
            )
            f["severity"] = "P2"
            f["respond_by"] = respond_by("P2", self.now, self.policy)
