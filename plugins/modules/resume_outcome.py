# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/resume_outcome.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: resume_outcome
short_description: Turn what a return to service did (inspection gate, Slurm) into its per-node outcome and result
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The logic of the C(gpuops.cluster.resume) role (C(docs/isolation.md)); the role keeps the order of the steps,
    this action says what their results mean. Pure computation on the controller - it runs no command and writes
    nothing (the outcome file and the exit status are C(gpuops.cluster.run_outcome)'s).
  - O(step=pending) - RV(outcome) has every node V(not_started) (what a run that stops reports).
  - O(step=gate), after the inspection (C(gpuops.cluster.inspect_cluster)'s C(nodes)) - RV(blocked), the nodes
    that may not go back with why (a P0/P1 finding of their own not in O(ignore_checks), or an inspection in
    status error/unreachable with a collector.error or node.unreachable finding).
  - O(step=backend), after C(gpuops.cluster.slurm_node) with C(names) and C(state=resumed) - RV(outcome),
    RV(cleared) (the markers to remove) and RV(result) (C(resume_result)).
  - Node names must fully match a host name; a bad one fails the task naming it.
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
  - gpuops.cluster.common.attributes_controller
attributes:
  check_mode:
    details: The same answer; a V(done) node's detail reads "would be back in service".
  diff_mode:
    support: none
options:
  step:
    description: Which step's results to read.
    type: str
    required: true
    choices: [pending, gate, backend]
  nodes:
    description: The requested inventory names (C(resume_nodes)), in order.
    type: list
    elements: str
    required: true
  inspection:
    description: With O(step=gate), node to its inspection (C(nodes) of C(gpuops.cluster.inspect_cluster)).
    type: dict
    default: {}
  ignore_checks:
    description: With O(step=gate), checks whose P0/P1 findings do not block (C(resume_ignore_checks)).
    type: list
    elements: str
    default: []
  blocked:
    description: With O(step=backend), the gate's RV(blocked).
    type: dict
    default: {}
  slurm:
    description: With O(step=backend), the registered result of C(gpuops.cluster.slurm_node) with C(names).
    type: dict
    default: {}
  force:
    description: C(resume_force) (recorded in a left-drained node's decision).
    type: bool
    default: false
  inspect:
    description: C(resume_inspect) (whether the gate ran).
    type: bool
    default: true
  ticket:
    description: The run's ticket (C(resume_ticket)).
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: The inspection gate's answer
  gpuops.cluster.resume_outcome:
    step: gate
    nodes: "{{ resume_nodes }}"
    inspection: "{{ __resume_inspection.nodes }}"
    ignore_checks: "{{ resume_ignore_checks }}"
  register: __resume_gate
"""

RETURN = r"""
outcome:
  description: Node to its outcome, for C(gpuops.cluster.run_outcome).
  returned: steps pending and backend
  type: dict
  sample: {gpu-node-03: {outcome: done, detail: back in service, decision: passed the inspection gate}}
blocked:
  description: Node to why the inspection gate refused it.
  returned: step gate
  type: dict
  sample: {gpu-node-03: "inspection failed: Xid 79 on GPU 3"}
cleared:
  description: Nodes whose gpuops drain was removed (their maintenance markers are cleared).
  returned: step backend
  type: list
  elements: str
  sample: [gpu-node-03]
result:
  description: C(resume_result) - resumed, changed, refused, left_drained, ticket, nodes (docs/isolation.md).
  returned: step backend
  type: dict
  sample: {resumed: [gpu-node-03], refused: [], left_drained: []}
"""
