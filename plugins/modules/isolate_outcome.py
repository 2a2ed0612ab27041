# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/isolate_outcome.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: isolate_outcome
short_description: Turn what an isolation did (guard, Slurm, read-back) into its per-node outcome, markers and result
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The logic of the C(gpuops.cluster.isolate) role and playbook (C(docs/isolation.md)); the role keeps the order
    of the steps, this action says what their results mean. Pure computation on the controller - it runs no
    command and writes nothing (the outcome file, the audit records and the exit status are
    C(gpuops.cluster.run_outcome)'s).
  - O(step=guard), right after C(gpuops.cluster.isolation_guard) - RV(outcome) has each node V(refused) (the
    guard's reason) or V(unconfirmed) until Slurm shows the drain; what a run that stops half-way reports.
  - O(step=backend), after C(gpuops.cluster.slurm_node) with C(names) (O(slurm), possibly skipped) - the nodes
    done, already isolated, failed (Slurm refused, timed out, or shows the node in service afterwards) or
    unconfirmed (Slurm could not be read back), the requeued and unrequeueable jobs with every node of the job,
    Slurm's state and reason per node, the claims to release, the maintenance markers, RV(outcome) and
    RV(result) (C(isolate_result) without C(marker_failed)).
  - O(step=rescue), in the playbook's C(rescue:) - every node whose outcome is missing or V(not_started) failed
    where the run stopped, with the failed task's stderr (else its msg), whitespace folded, cut to 300 characters.
  - Node names must fully match a host name; a bad one fails the task naming it.
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
  - gpuops.cluster.common.attributes_controller
attributes:
  check_mode:
    details: The same answer; a V(done) node's detail reads "would be ...".
  diff_mode:
    support: none
options:
  step:
    description: Which step's results to read.
    type: str
    required: true
    choices: [guard, backend, rescue]
  nodes:
    description: The requested inventory names, in order (the validated C(isolate_nodes)).
    type: list
    elements: str
    required: true
  guard:
    description: The registered result of C(gpuops.cluster.isolation_guard) (O(step=guard) and O(step=backend)).
    type: dict
    default: {}
  slurm:
    description: The registered result of C(gpuops.cluster.slurm_node) with C(names); V({}) or a skipped result
      when no node was allowed.
    type: dict
    default: {}
  request:
    description: The validated input (C(__isolate_in) - C(isolate_ticket), C(isolate_reason), C(isolate_operator)).
    type: dict
    default: {}
  mode:
    description: C(isolate_mode).
    type: str
    choices: [drain, requeue, down]
    default: drain
  change_class:
    description: C(isolate_change_class) (recorded in the markers).
    type: str
    choices: [corrective, planned]
    default: corrective
  cancel_unrequeueable:
    description: C(isolate_cancel_unrequeueable) (the unrequeueable jobs' reason says cancelled or left running).
    type: bool
    default: false
  findings:
    description: C(isolate_findings); each marker lists the findings of its node.
    type: list
    elements: raw
    default: []
  run_id:
    description: The isolate run id (recorded in the markers).
    type: str
    default: ""
  outcome:
    description: With O(step=rescue), the outcome known so far (C(isolate_outcome)).
    type: dict
    default: {}
  failed_task:
    description: With O(step=rescue), the name of the task that failed (C(ansible_failed_task.name)).
    type: str
    default: ""
  failed_result:
    description: With O(step=rescue), its result (C(ansible_failed_result)).
    type: raw
    default: {}
"""

EXAMPLES = r"""
- name: What happened (after the Slurm back end)
  gpuops.cluster.isolate_outcome:
    step: backend
    nodes: "{{ __isolate_in.isolate_nodes }}"
    guard: "{{ __isolate_guard }}"
    slurm: "{{ __isolate_slurm | default({}) }}"
    request: "{{ __isolate_in }}"
    mode: "{{ isolate_mode }}"
  register: __isolate_view
"""

RETURN = r"""
outcome:
  description: Node to its outcome (C(outcome), C(detail), C(decision), C(error), C(slurm_state), C(slurm_reason)),
    for C(gpuops.cluster.run_outcome).
  returned: always
  type: dict
  sample: {gpu-node-03: {outcome: done, detail: drained, decision: isolated (drain), slurm_state: IDLE+DRAIN}}
done: {description: Nodes this run isolated., returned: step backend, type: list, elements: str, sample: [gpu-node-03]}
unchanged: {description: Nodes already isolated by gpuops in Slurm., returned: step backend, type: list, elements: str, sample: []}
release_done:
  description: Allowed nodes whose drain Slurm shows (the guard's claims released C(done)).
  returned: step backend
  type: list
  elements: str
  sample: [gpu-node-03]
release_failed:
  description: Allowed nodes with no verified drain (claims released C(failed)).
  returned: step backend
  type: list
  elements: str
  sample: []
markers:
  description: Node to its maintenance marker (schema C(gpuops.maintenance/v1)), for the done and unchanged nodes.
  returned: step backend
  type: dict
  sample: {gpu-node-03: {schema: gpuops.maintenance/v1, node: gpu-node-03, ticket: INC-1, mode: drain}}
result:
  description: C(isolate_result) without C(marker_failed) - nodes, isolated, already_isolated, refused_by_guard,
    failed, unrequeueable_jobs, requeued_jobs, states, guard, mode, ticket, findings (docs/isolation.md).
  returned: step backend
  type: dict
  sample: {isolated: [gpu-node-03], failed: [], requeued_jobs: [{job_id: 12, nodes: [gpu-node-03]}]}
"""
