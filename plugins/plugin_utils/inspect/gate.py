# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an inspection's verdicts make the playbook do (issue 41): the nodes auto-isolation drains and the
``gpuops_fail_on`` gate.

``auto_isolation_targets(nodes)``: with ``gpuops_auto_isolate=true`` every P0/P1 node fault is taken out of
scheduling (drain, or ``gpuops_auto_isolate_mode``) whatever its repair action (``reboot``, ``reseat``,
``replace``, ``reset_gpu``, ``isolate``, ...): drain first, the repair after, as its own guarded playbook (the
finding's runbook). Never selected: a node in status ``error`` (its evidence could not be read), a finding whose
disruptive action was withheld (its domain unread), a finding a job storm explains (``job_storm``: the tenant's
crash, not the node), and any node that is a member of a cluster incident (a finding of it has a cluster P0 as
its ``cause``: a dead leaf, a rack's power; the incident is handled first, the next inspection judges the node
alone). The isolate role's blast-radius guard still decides what really happens.

``fail_on_gate(summary, fail_on, fail_on_unknown)``: the findings at or above ``fail_on`` and the nodes that could
not be judged (status ``error``) against ``fail_on_unknown``; ``failed`` and the message the playbook prints.

Pure Python, no Ansible imports; runs on the controller.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import SEVERITIES, is_withheld, severity_rank
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.job_storm import is_storm_cause

#: Node faults auto-isolation takes out of scheduling.
AUTO_SEVERITIES = ("P0", "P1")
#: gpuops_fail_on_unknown's default: with gpuops_fail_on set, the run fails when more than this share of the
#: inspected nodes could not be judged (status error); every node unjudged always exceeds it.
DEFAULT_FAIL_ON_UNKNOWN = "10%"
_THRESHOLD = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%?)\s*$")


def auto_isolation_targets(nodes: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """``{nodes, findings, by_host, held_back}``: the hosts auto-isolation drains (sorted), their P0/P1 findings
    (host order), host -> those findings, and host -> why a node with a P0/P1 finding of its own is not drained."""
    by_host: Dict[str, List[Dict[str, Any]]] = {}
    held: Dict[str, str] = {}
    for host in sorted(nodes):
        n = nodes[host] or {}
        fs = [f for f in n.get("findings") or [] if isinstance(f, dict)]
        serious = [f for f in fs if f.get("severity") in AUTO_SEVERITIES]
        if not serious:
            continue
        incident = sorted({str(f["cause"]) for f in fs if f.get("cause") and not is_storm_cause(f.get("cause"))})
        own = [f for f in serious if not f.get("cause") and not is_withheld(f)]
        if n.get("status") == "error":
            held[host] = "status error: its evidence could not be read"
        elif incident:
            held[host] = "member of the cluster incident %s" % ", ".join(incident)
        elif own:
            by_host[host] = own
        elif any(is_storm_cause(f.get("cause")) for f in serious):
            held[host] = "its P0/P1 Xids are a job's crash (%s)" % serious[0].get("cause")
        else:
            held[host] = "its P0/P1 findings were withheld: their evidence could not be read"
    hosts = sorted(by_host)
    return {
        "nodes": hosts,
        "findings": [f for h in hosts for f in by_host[h]],
        "by_host": by_host,
        "held_back": held,
    }


def parse_threshold(value: Any) -> Optional[Dict[str, Any]]:
    """``gpuops_fail_on_unknown``: ``N%`` (more than N percent of the nodes, 0-100), ``N`` (more than N nodes), or
    ``off``/``none``/``never`` (None). ValueError with the accepted forms otherwise."""
    text = "" if value is None else str(value).strip()
    if text.lower() in ("off", "none", "never", "false"):
        return None
    m = _THRESHOLD.match(text or DEFAULT_FAIL_ON_UNKNOWN)
    if not m or (m.group(2) and float(m.group(1)) > 100) or (not m.group(2) and "." in m.group(1)):
        raise ValueError(
            "gpuops_fail_on_unknown must be a percentage (10%%: the run fails when more than 10%% of the nodes could "
            "not be judged), a node count (0: any node) or off, got %r" % value
        )
    if m.group(2):
        return {"percent": float(m.group(1)), "text": "%s%%" % m.group(1)}
    return {"count": int(m.group(1)), "text": m.group(1)}


def fail_on_gate(summary: Dict[str, Any], fail_on: str, fail_on_unknown: Any = DEFAULT_FAIL_ON_UNKNOWN):
    """None when ``fail_on`` is empty (no gate); else ``{severity, count, by_severity, unknown: {nodes, total,
    threshold, exceeded}, failed, msg}``. ``count``: findings (node and cluster) at or above ``fail_on``;
    ``unknown.nodes``: nodes in status ``error`` (could not be judged); ``failed``: a finding counts, or the
    unjudged nodes are more than the threshold (and at least one; all of them always is)."""
    if not fail_on:
        return None
    threshold = parse_threshold(fail_on_unknown)
    sev = summary.get("severity") or {}
    by = {s: int(sev.get(s, 0)) for s in SEVERITIES if severity_rank(s) <= severity_rank(fail_on)}
    count = sum(by.values())
    total = int(summary.get("nodes") or 0)
    unknown = int((summary.get("status") or {}).get("error", 0))
    exceeded = False
    if threshold is not None and unknown:
        if "percent" in threshold:
            exceeded = unknown == total or 100.0 * unknown / total > threshold["percent"]
        else:
            exceeded = unknown > threshold["count"]
    parts = ["gpuops_fail_on=%s: %s" % (fail_on, ", ".join("%s %d" % kv for kv in by.items()))]
    if exceeded:
        parts.append(
            "%d of %d nodes could not be judged (status error: evidence missing or unreadable; see each node's "
            "status_reason in the report), more than gpuops_fail_on_unknown=%s" % (unknown, total, threshold["text"])
        )
    parts.append("%d finding(s) at or above %s" % (count, fail_on))
    return {
        "severity": fail_on,
        "count": count,
        "by_severity": by,
        "unknown": {
            "nodes": unknown,
            "total": total,
            "threshold": threshold["text"] if threshold else "off",
            "exceeded": exceeded,
        },
        "failed": bool(count) or exceeded,
        "msg": "; ".join(parts),
    }
