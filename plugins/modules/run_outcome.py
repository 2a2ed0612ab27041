# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/run_outcome.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: run_outcome
short_description: Record the per-node outcome of a disruptive run and set its exit code
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The last task of every disruptive playbook (isolate, resume, gpu_reset, upgrade, onboard, replace,
    leak_response), run on the controller in an C(always) section so that a run that crashed half-way still
    records what it knows. See C(docs/operations.md), "Outcomes and exit codes".
  - Each node gets one outcome from a fixed vocabulary - V(done), V(already), V(skipped) (successes) and
    V(refused), V(failed), V(not_started), V(left_drained), V(unconfirmed) (not successes). A requested node
    missing from O(nodes) is V(not_started). An outcome outside the vocabulary fails the task.
  - Writes C(<state_dir>/runs/<workflow>/<run_id>.json) (schema C(gpuops.outcome/v1); directories 0700, file
    0600, written atomically) and appends one C(outcome) record per node to the audit chain of the state
    directory (C(<state_dir>/audit/audit.log), the chain the C(gpuops.cluster.audit) callback writes). Error
    texts are kept, with secret values redacted.
  - Prints a one-line summary and one line per node. When any node is not a success and O(fail) is true the
    task fails with the summary as its message, so C(ansible-playbook) exits 2; otherwise it exits 0.
  - In check mode the outcomes mean "would be"; nothing is written, the summary is printed and the task
    fails the same way.
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
  - gpuops.cluster.common.attributes_controller
attributes:
  check_mode:
    details: Nothing is written; the summary is printed and the task fails when the run would not succeed.
  diff_mode:
    support: none
options:
  workflow:
    description: The disruptive workflow.
    type: str
    required: true
    choices: [isolate, resume, gpu_reset, upgrade, onboard, replace, leak_response, backup, restore]
  run_id:
    description: The workflow's run id (letters, digits and C(._:+-)); the outcome file's name.
    type: str
    required: true
  requested_state:
    description: What the run was asked to reach, in words (V(drained), V(resumed), V(gpu reset), ...).
    type: str
    default: ""
  requested:
    description: The inventory names of the nodes the run was asked to act on.
    type: list
    elements: str
    default: []
  nodes:
    description:
      - Node name to its outcome, a mapping with C(outcome) (required) and optionally C(detail), C(decision),
        C(error) (the tool's own message), C(slurm_state), C(slurm_reason).
    type: dict
    default: {}
  ticket:
    description: The ticket of the run (C(gpuops_ticket)).
    type: str
    default: ""
  change_id:
    description: The change id of the run (C(gpuops_change_id)).
    type: str
    default: ""
  state_dir:
    description: The controller state directory (C(gpuops_state_dir)). Without it nothing is written.
    type: path
  report:
    description: The workflow's JSON run report; the outcome is merged into it under the key C(outcome).
    type: path
  started:
    description: When the run started (ISO 8601); default the time the outcome is recorded.
    type: str
    default: ""
  fail:
    description: Fail the task (exit code 2) when any node is not a success.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Outcome
  gpuops.cluster.run_outcome:
    workflow: isolate
    run_id: "{{ __isolate_run_id }}"
    requested_state: drained
    requested: ["gpu-node-03", "gpu-node-07"]
    nodes:
      gpu-node-03: {outcome: done, detail: drained, slurm_state: DRAINED}
      gpu-node-07: {outcome: refused, detail: "guard: 3 of 8 nodes of partition gpu out of service (limit 2)"}
    ticket: INC-4712
    state_dir: "{{ gpuops_state_dir }}"
"""

RETURN = r"""
summary:
  description: The one-line summary.
  returned: always
  type: str
  sample: "gpuops outcome: isolate 20261203T031500Z-1a2b3c4d: INCOMPLETE done=1 refused=1 -> exit 2"
lines:
  description: "One line per node, C(<node>: <outcome> (<detail>))."
  returned: always
  type: list
  elements: str
  sample: ["gpu-node-03: done (drained)", "gpu-node-07: refused (guard: limit 2)"]
outcome:
  description: The outcome document (schema C(gpuops.outcome/v1)), as written to RV(path).
  returned: always
  type: dict
  sample:
    schema: gpuops.outcome/v1
    workflow: isolate
    run_id: 20261203T031500Z-1a2b3c4d
    ticket: INC-4712
    change_id: null
    requested_state: drained
    requested: [gpu-node-03]
    check_mode: false
    started: "2026-12-03T03:15:00.123456Z"
    finished: "2026-12-03T03:15:09.654321Z"
    success: true
    exit_code: 0
    counts: {done: 1}
    nodes:
      gpu-node-03: {outcome: done, detail: drained, decision: isolated, error: null, slurm_state: DRAINED,
                    slurm_reason: "gpuops: Xid 79 [INC-4712]"}
    summary: "gpuops outcome: isolate 20261203T031500Z-1a2b3c4d: OK done=1 -> exit 0"
path:
  description: The outcome file written; null in check mode or without a state directory.
  returned: always
  type: str
  sample: /var/lib/gpuops/runs/isolate/20261203T031500Z-1a2b3c4d.json
audit_log:
  description: The audit log the per-node records were appended to.
  returned: when written
  type: str
  sample: /var/lib/gpuops/audit/audit.log
report:
  description: The run report the outcome was merged into.
  returned: when O(report) is given and not in check mode
  type: str
  sample: /var/lib/gpuops/reports/upgrade-20261203.json
"""
