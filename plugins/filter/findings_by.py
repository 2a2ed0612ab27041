# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: findings_by
short_description: Group an inspection's findings by severity, check, rack, host or action
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
positional: key
description:
  - Takes the result of M(gpuops.cluster.inspect_cluster), a C(report.json) document (parsed, or its text as
    C(lookup('file', ...)) returns it) or a plain list of findings (C(docs/findings.md)), and returns the findings
    grouped by O(key).
  - By C(severity) the groups are C(P0), C(P1), C(P2) and C(P3), always all four and in that order (an empty list
    when there is none), then C(none) for findings without a valid severity if there are any. Other keys give
    only the groups that occur, sorted by name.
  - By C(rack) a node's findings go to the node's C(rack) (C((no rack)) when the inventory gives none); a cluster
    finding on C(rack:<name>) goes to that rack, other cluster findings to C((cluster)). A plain list of findings
    has no racks unless each finding carries a C(rack) key.
  - Within a group, findings are sorted by severity, host, check and component. Each finding is returned as the
    report has it, with C(host) set from its node when it had none.
options:
  _input:
    description: The inspection result, a C(report.json) document or its text, or a list of findings.
    type: raw
    required: true
  key:
    description: What to group by.
    type: str
    choices: [severity, check, rack, host, action]
    default: severity
  cluster:
    description: Include the cluster findings (C(summary.cluster_findings), host null) of a result or report.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Count the findings per severity of the last report
  ansible.builtin.debug:
    msg: "{{ lookup('file', 'reports/latest/report.json') | gpuops.cluster.findings_by | dict2items
             | map(attribute='value') | map('length') | list }}"

- name: One line per rack with its P0/P1 checks
  ansible.builtin.debug:
    msg: "{{ item.key }}: {{ item.value | selectattr('severity', 'in', ['P0', 'P1']) | map(attribute='check') | unique | join(', ') }}"
  loop: "{{ inspect_result | gpuops.cluster.findings_by('rack') | dict2items }}"
  loop_control:
    label: "{{ item.key }}"

- name: Hosts with a GPU Xid finding
  ansible.builtin.debug:
    msg: "{{ (inspect_result | gpuops.cluster.findings_by('check', cluster=false))['gpu.xid'] | default([]) | map(attribute='host') | unique }}"
"""

RETURN = r"""
_value:
  description: Group name to its list of findings (each as in C(docs/findings.md)).
  type: dict
  sample:
    P0: []
    P1:
      - {host: gpu-node-07, check: gpu.xid, severity: P1, component: gpu3, code: "79", action: isolate,
         message: "GPU 3 (00000000:9A:00.0) Xid 79: GPU has fallen off the bus (2 events this boot)"}
    P2: []
    P3:
      - {host: gpu-node-12, check: node.drift, severity: P3, component: node, code: kernel, action: none,
         message: "kernel 6.1.0-18 differs from the baseline 6.1.0-17"}
"""

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _filters
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import SEVERITIES, severity_rank

NAME = "findings_by"
KEYS = ("severity", "check", "rack", "host", "action")
NO_RACK = "(no rack)"
CLUSTER = "(cluster)"

#: (finding, the rack of its node or None)
Item = Tuple[Dict[str, Any], Optional[str]]


def _findings(name: str, value: Any) -> List[Dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(f, dict) for f in value):
        raise _filters.fail(NAME, "%s is not a list of findings (mappings)" % name)
    return value


def collect(data: Any, cluster: bool) -> List[Item]:
    """Every finding of a result, report or list, with its node's rack."""
    doc = _filters.document(NAME, data)
    if isinstance(doc, list):
        return [(f, f.get("rack")) for f in _findings("the input", doc)]
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    if not isinstance(nodes, dict):
        raise _filters.fail(
            NAME, "expects an inspection result or report with a 'nodes' mapping, or a list of findings"
        )
    items: List[Item] = []
    for host in sorted(nodes):
        node = nodes[host]
        if not isinstance(node, dict):
            raise _filters.fail(NAME, "node %r is not a mapping" % host)
        for f in _findings("node %r's findings" % host, node.get("findings") or []):
            items.append((f if f.get("host") else dict(f, host=host), node.get("rack")))
    summary = doc.get("summary") if isinstance(doc.get("summary"), dict) else {}
    if cluster:
        items.extend((f, None) for f in _findings("summary.cluster_findings", summary.get("cluster_findings") or []))
    return items


def _group(key: str, finding: Dict[str, Any], rack: Optional[str]) -> str:
    if key == "severity":
        sev = finding.get("severity")
        return sev if sev in SEVERITIES else "none"
    if key == "rack":
        if rack:
            return str(rack)
        component = str(finding.get("component") or "")
        if not finding.get("host"):
            return component[len("rack:") :] if component.startswith("rack:") else CLUSTER
        return NO_RACK
    value = finding.get(key)
    return str(value) if value not in (None, "") else ("(cluster)" if key == "host" else "(none)")


def _order(finding: Dict[str, Any]) -> Tuple[int, str, str, str]:
    return (
        severity_rank(finding.get("severity")),
        str(finding.get("host") or ""),
        str(finding.get("check") or ""),
        str(finding.get("component") or ""),
    )


def findings_by(data: Any, key: str = "severity", cluster: Any = True) -> Dict[str, List[Dict[str, Any]]]:
    """Findings grouped by ``key``: ``{group: [finding, ...]}`` (severity groups in P0..P3 order)."""
    if key not in KEYS:
        raise _filters.fail(NAME, "key must be one of %s, got %r" % (", ".join(KEYS), key))
    items = collect(data, _filters.bool_option(NAME, "cluster", cluster))
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for finding, rack in items:
        groups.setdefault(_group(key, finding, rack), []).append(finding)
    if key == "severity":
        names = list(SEVERITIES) + (["none"] if "none" in groups else [])
    else:
        names = sorted(groups)
    return {name: sorted(groups.get(name, []), key=_order) for name in names}


class FilterModule:
    """gpuops.cluster report filter: findings_by."""

    def filters(self) -> Dict[str, Any]:
        return {NAME: findings_by}
