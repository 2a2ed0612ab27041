# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: isolation_targets
short_description: The nodes an inspection asks to isolate (or auto-isolation drains), and the findings that ask for it
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Takes the result of M(gpuops.cluster.inspect_cluster) (or a C(report.json) document, parsed or as its text) and
    returns the nodes whose own findings carry the action (C(isolate) by default), with those findings.
  - Correlated members of a rack, leaf or power-domain event were already rewritten to C(monitor) by the cluster
    view, so they are not targets.
  - Nodes in status C(error) (evidence missing or unreadable) are never targets of a disruptive action
    (C(docs/findings.md), "Unknown is not broken").
  - The body is C(_inspect.actions_by_host) (plugins/plugin_utils/inspect/pipeline.py), the same function the controller
    uses.
  - With O(auto=true), the nodes auto-isolation (C(gpuops_auto_isolate=true)) takes out of scheduling - every node with a
    P0/P1 finding of its own, whatever its action (C(reboot), C(reseat), C(replace), C(isolate) ...) - never a node
    in status C(error), never for a withheld finding or one a job storm explains (C(job.xid_storm)), and never a
    member of a cluster incident (a finding whose C(cause) is a cluster P0). The body is
    C(gate.auto_isolation_targets) (plugins/plugin_utils/inspect/gate.py); it adds C(held_back).
options:
  _input:
    description:
      - The inspection result or report (or the report's JSON text); its C(nodes) maps each host to
        C({status, findings}).
    type: raw
    required: true
  action:
    description: The finding action to select (an action of C(docs/findings.md)).
    type: str
    default: isolate
  auto:
    description:
      - Select as auto-isolation does (every P0/P1 node fault, see the description) instead of by O(action).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Isolate what the inspection asks for (subject to the blast-radius guard)
  ansible.builtin.include_role:
    name: gpuops.cluster.isolate
  vars:
    __targets: "{{ inspect_result | gpuops.cluster.isolation_targets }}"
    isolate_nodes: "{{ __targets.nodes }}"
    isolate_findings: "{{ __targets.findings }}"

- name: What gpuops_auto_isolate=true drains (every P0/P1 node fault), and the nodes it holds back with the reason
  ansible.builtin.debug:
    msg: "{{ inspect_result | gpuops.cluster.isolation_targets(auto=true) }}"

- name: Nodes whose findings ask for a GPU reset
  ansible.builtin.debug:
    msg: "{{ (inspect_result | gpuops.cluster.isolation_targets(action='reset_gpu')).nodes }}"
"""

RETURN = r"""
_value:
  description:
    - C(nodes) - the target hosts, sorted; C(findings) - their findings with that action, in host order;
      C(by_host) - host to its findings.
    - With O(auto=true) also C(held_back) - host to the reason a node with a P0/P1 finding is not drained.
  type: dict
  sample: {"nodes": ["gpu-node-07"], "findings": [{"host": "gpu-node-07", "check": "gpu.xid", "code": "79",
           "action": "isolate", "severity": "P1"}], "by_host": {"gpu-node-07": []}}
"""

from typing import Any, Dict

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _filters
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.gate import auto_isolation_targets
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.pipeline import actions_by_host


def isolation_targets(result: Any, action: str = "isolate", auto: bool = False) -> Dict[str, Any]:
    """``{nodes, findings, by_host}`` for the hosts whose own findings carry ``action``; with ``auto``, what
    auto-isolation drains (``gate.auto_isolation_targets``, with ``held_back``)."""
    data = _filters.document("isolation_targets", result)
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(nodes, dict):
        raise AnsibleFilterError("isolation_targets: expects an inspection result or report with a 'nodes' mapping")
    for host, node in nodes.items():
        if not isinstance(node, dict) or not isinstance(node.get("findings") or [], list):
            raise AnsibleFilterError("isolation_targets: node %r has no findings list" % host)
    if auto:
        return auto_isolation_targets(nodes)
    by_host = actions_by_host(
        {"nodes": {h: dict(n, findings=n.get("findings") or []) for h, n in nodes.items()}}, action
    )
    hosts = sorted(by_host)
    return {"nodes": hosts, "findings": [f for h in hosts for f in by_host[h]], "by_host": by_host}


class FilterModule:
    """gpuops.cluster inspection filters."""

    def filters(self) -> Dict[str, Any]:
        return {"isolation_targets": isolation_targets}
