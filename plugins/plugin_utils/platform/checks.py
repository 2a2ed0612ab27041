# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Platform checks: the cluster's scheduler (and parallel storage, where ``_checks.storage`` is installed).

Entry point: ``check_platform(platform_facts, policy, now) -> findings``; ``platform_facts`` is what
``gpuops.cluster.platform_info`` returns (``module_utils/collectors/platform.py``). Findings are cluster findings (``host``
None, ids ``cluster:<check>:<component>:<code>``), except ``scheduler.job_failures`` on a node that fails the jobs
sent to it: a node finding (``host`` = the node), which the inspection adds to that node's findings.

Evidence that could not be read is a ``collector.error`` (component ``collector:scheduler``, severity from
``collector_errors``), never a P0: only a controller that answered DOWN or did not answer at all is. A file a partial
cluster capture lacks is no finding at all: the collector lists it in ``scheduler.unseen`` (unknown, reported in
report.json's ``platform``; docs/findings.md "What was not seen").
Thresholds: ``policy["scheduler"]`` (docs/checks.md "Platform: scheduler"). Pure Python; runs on the controller.
"""

from __future__ import annotations

from typing import Any, Dict, List

from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time, utcnow
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform.jobs import (
    check_capacity,
    check_fragmentation,
    check_job_failures,
    check_queue,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform.findings import Out, as_dict, node_out
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import PolicyError, SEVERITIES, ACTIONS

try:  # parallel storage checks: written by the storage slice; the scheduler works without them
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform import storage as _storage_checks
except ImportError:  # pragma: no cover - depends on the branch
    _storage_checks = None  # type: ignore[assignment]

_TABLES = (
    "controller_down",
    "backup_down",
    "rpc",
    "accounting",
    "queue",
    "nodes",
    "job_failures",
    "fragmentation",
    "capacity",
)


def validate_scheduler_policy(policy: Dict[str, Any]) -> Dict[str, Any]:
    """``policy["scheduler"]``, its severity/action tables checked; raises PolicyError naming the key."""
    sp = policy.get("scheduler")
    if not isinstance(sp, dict):
        raise PolicyError("policy key 'scheduler' must be a mapping")
    for name in _TABLES:
        rule = sp.get(name)
        if not isinstance(rule, dict) or rule.get("severity") not in SEVERITIES or rule.get("action") not in ACTIONS:
            raise PolicyError(
                "policy key 'scheduler.%s' must have a severity (%s) and an action" % (name, ", ".join(SEVERITIES))
            )
    return sp


def check_platform(platform_facts: Any, policy: Dict[str, Any], now: Any = None) -> List[Dict[str, Any]]:
    """The platform findings (see the module docstring); ``[]`` when no platform facts were collected."""
    if not isinstance(platform_facts, dict):
        return []
    sp = validate_scheduler_policy(policy)
    at = parse_time(now) or utcnow()
    out = Out(policy, at)
    ref = platform_facts.get("collected_at")
    ref = float(ref) if isinstance(ref, (int, float)) and not isinstance(ref, bool) else at.timestamp()
    sched = platform_facts.get("scheduler")
    down = False
    if isinstance(sched, dict):
        down = check_controller(out, sched, sp)
        if not down:
            check_rpc(out, sched, sp)
            check_accounting(out, sched, sp)
            check_nodes(out, sched, sp)
            check_queue(out, sched, sp, ref)
            check_job_failures(out, sched, sp)
            check_fragmentation(out, sched, sp)
            check_capacity(out, sched, sp)
    check_collector_errors(out, platform_facts, policy, down)
    if _storage_checks is not None and platform_facts.get("storage") is not None:
        # the storage collector's errors are in platform_facts["errors"] (domain storage): reported once, above
        storage = platform_facts.get("storage")
        out.findings += _storage_checks.check_storage(storage, policy, at, collector_errors=False) or []
    return out.findings


def check_controller(out: Out, sched: Dict[str, Any], sp: Dict[str, Any]) -> bool:
    """scheduler.controller; True when no controller serves (the P0: the other checks have nothing to read)."""
    ctls = [c for c in sched.get("controllers") or [] if isinstance(c, dict)]
    if not ctls:
        return False
    up = [c for c in ctls if c.get("state") == "UP"]
    bad = [c for c in ctls if c.get("state") != "UP"]
    if not up:
        state = "unresponsive" if any(c.get("state") == "UNRESPONSIVE" for c in bad) else "down"
        out.add(
            "scheduler.controller",
            sp["controller_down"],
            "controller",
            state,
            "Slurm controller %s: %s (no job can be scheduled; every Slurm command fails)"
            % (state, ", ".join("%s %s" % (c.get("role"), c.get("host") or "?") for c in bad)),
            "scheduler.controller_down: no slurmctld answers scontrol ping",
            {"controllers": bad},
        )
        return True
    for c in bad:
        out.add(
            "scheduler.controller",
            sp["backup_down"],
            "controller:%s" % (c.get("host") or c.get("role")),
            "%s_down" % ("backup" if c.get("role") != "primary" else "primary"),
            "Slurm %s controller %s is %s; %s serves (no failover left)"
            % (c.get("role"), c.get("host"), str(c.get("state")).lower(), up[0].get("host")),
            "scheduler.backup_down",
            {"controllers": ctls},
        )
    return False


def _top(rows: Any, n: int) -> List[Dict[str, Any]]:
    rows = [r for r in rows or [] if isinstance(r, dict)]
    return sorted(rows, key=lambda r: (-int(r.get("total_time") or 0), str(r.get("name"))))[:n]


def check_rpc(out: Out, sched: Dict[str, Any], sp: Dict[str, Any]) -> None:
    """scheduler.rpc: slow RPC types, a full thread pool or a long agent queue (sdiag)."""
    sd = as_dict(sched.get("sdiag"))
    if not sd:
        return
    slow = [
        r
        for r in sd.get("rpc_types") or []
        if isinstance(r, dict)
        and int(r.get("count") or 0) >= sp["rpc_min_count"]
        and int(r.get("ave_time") or 0) >= sp["rpc_ave_time_us"]
    ]
    why = []
    if slow:
        why.append(
            "RPC average time over %.1f s: %s"
            % (sp["rpc_ave_time_us"] / 1e6, ", ".join("%s %.2f s" % (r["name"], r["ave_time"] / 1e6) for r in slow[:3]))
        )
    threads = int(sd.get("server_thread_count") or 0)
    if threads >= sp["server_threads"]:
        why.append("%d server threads (threshold %d)" % (threads, sp["server_threads"]))
    queue = int(sd.get("agent_queue_size") or 0)
    if queue >= sp["agent_queue"]:
        why.append("agent queue %d (threshold %d)" % (queue, sp["agent_queue"]))
    if not why:
        return
    types, users = _top(sd.get("rpc_types"), sp["rpc_top"]), _top(sd.get("rpc_users"), sp["rpc_top"])
    out.add(
        "scheduler.rpc",
        sp["rpc"],
        "controller",
        "rpc",
        "slurmctld overloaded: %s; top RPC types %s; top users %s"
        % ("; ".join(why), ", ".join(r["name"] for r in types), ", ".join(r["name"] for r in users)),
        "scheduler.rpc_ave_time_us=%d, server_threads=%d, agent_queue=%d"
        % (sp["rpc_ave_time_us"], sp["server_threads"], sp["agent_queue"]),
        {
            "server_thread_count": threads,
            "agent_queue_size": queue,
            "slow_rpc_types": slow[:10],
            "top_rpc_types": types,
            "top_rpc_users": users,
        },
    )


def check_accounting(out: Out, sched: Dict[str, Any], sp: Dict[str, Any]) -> None:
    """scheduler.accounting: sacct cannot reach slurmdbd, or slurmctld's DBD agent queue grows."""
    acct = as_dict(sched.get("accounting"))
    dbdq = int(as_dict(sched.get("sdiag")).get("dbd_agent_queue_size") or 0)
    if acct.get("state") == "down":
        out.add(
            "scheduler.accounting",
            sp["accounting"],
            "slurmdbd",
            "unreachable",
            "Slurm accounting (slurmdbd) unreachable: %s; job records queue in slurmctld (DBD agent queue %d)"
            % (acct.get("message"), dbdq),
            "scheduler.accounting: sacct cannot talk to the database",
            {"message": acct.get("message"), "dbd_agent_queue_size": dbdq},
        )
    elif dbdq >= sp["dbd_agent_queue"]:
        out.add(
            "scheduler.accounting",
            sp["accounting"],
            "slurmdbd",
            "dbd_agent_queue",
            "slurmctld's DBD agent queue holds %d messages (threshold %d): slurmdbd is not keeping up"
            % (dbdq, sp["dbd_agent_queue"]),
            "scheduler.dbd_agent_queue=%d" % sp["dbd_agent_queue"],
            {"dbd_agent_queue_size": dbdq},
        )


def check_nodes(out: Out, sched: Dict[str, Any], sp: Dict[str, Any]) -> None:
    """scheduler.nodes: nodes down, failing, drained or draining, grouped by reason (P2 from a share, else P3)."""
    nodes = [n for n in sched.get("nodes") or [] if isinstance(n, dict)]
    if not nodes:
        return
    groups: Dict[str, Dict[str, Any]] = {}
    total_out = 0
    for n in nodes:
        why = node_out(n)
        if not why:
            continue
        total_out += 1
        g = groups.setdefault(str(n.get("reason") or "no reason"), {"nodes": [], "states": {}})
        g["nodes"].append(n.get("name"))
        g["states"][why] = g["states"].get(why, 0) + 1
    if not total_out:
        return
    share = float(total_out) / len(nodes)
    rule = dict(sp["nodes"]) if share >= sp["nodes_out_share"] else {"severity": "P3", "action": "monitor"}
    if all(n.get("unavailable") for n in nodes):
        # sinfo -R lists only the unavailable nodes: the cluster's size, so the share, is unknown
        rule = {"severity": "P3", "action": "monitor"}
    top = sorted(groups.items(), key=lambda kv: (-len(kv[1]["nodes"]), kv[0]))
    out.add(
        "scheduler.nodes",
        rule,
        "cluster",
        "out",
        "%d of %d Slurm nodes out of service (%.0f%%): %s"
        % (
            total_out,
            len(nodes),
            100 * share,
            "; ".join("%s: %d (%s)" % (r, len(g["nodes"]), ", ".join(g["nodes"][:5])) for r, g in top[:5]),
        ),
        "scheduler.nodes_out_share=%s" % sp["nodes_out_share"],
        {"by_reason": dict(top[:20]), "out": total_out, "total": len(nodes), "share": round(share, 3)},
    )


def check_collector_errors(out: Out, facts: Dict[str, Any], policy: Dict[str, Any], ctld_down: bool) -> None:
    """collector.error per (domain, kind) of the platform's errors (never above the policy's collector table);
    with the controller down, the scheduler's other errors are its consequences and not repeated."""
    ce = policy["collector_errors"]
    groups: Dict[Any, List[Dict[str, Any]]] = {}
    for e in facts.get("errors") or []:
        if not isinstance(e, dict):
            continue
        domain = str(e.get("domain") or "scheduler")
        if ctld_down and domain == "scheduler":
            continue
        groups.setdefault((domain, str(e.get("kind") or "internal")), []).append(e)
    for (domain, kind), es in sorted(groups.items()):
        rule = as_dict(ce["overrides"].get("%s:%s" % (domain, kind))) or ce["default"]
        out.add(
            "collector.error",
            rule,
            "collector:%s" % domain,
            kind,
            "%s collector %s: %s%s"
            % (domain, kind, es[0].get("message"), " (+%d more)" % (len(es) - 1) if len(es) > 1 else ""),
            "collector_errors: cluster platform evidence could not be read (unknown, not healthy)",
            {
                "count": len(es),
                "errors": [{k: e.get(k) for k in ("message", "source", "parser", "line")} for e in es[:3]],
            },
        )
