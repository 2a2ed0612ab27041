# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/onboard_stage.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: onboard_stage
short_description: Evaluate and record one node onboarding stage on the controller
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The controller half of the C(gpuops.cluster.onboard) role (run it delegated to C(localhost)). The stage
    logic is C(plugins/plugin_utils/onboard/checks.py), C(_onboard_burnin.py), C(_onboard_record.py) and
    C(_onboard_render.py); this step reads and writes the per-node onboarding record
    C(<state_dir>/onboarding/<host>.json) (C(docs/onboarding.md)).
  - O(action=status) returns the record and the first stage that has not passed (a rerun resumes there).
  - O(action=record) evaluates O(stage) from its inputs, records the verdict (passed or failed, the problems,
    the evidence, who and when) and returns it. It never fails the task for a failed stage; the role does.
  - O(stage=baseline) also saves the golden baseline (C(_checks.make_baseline)) to C(<state_dir>/baselines/<host>.json)
    and into the host's policy state (C(hosts/<host>.json) key C(baseline)), where every later inspection reads it.
  - O(action=signoff) writes the sign-off report C(<state_dir>/onboarding/<host>.signoff.json) and C(.md) and
    returns the node_exporter textfile metrics.
  - Check mode evaluates and returns the same result and writes nothing (no record, no golden baseline, no
    sign-off files). With C(--diff) the record's change is shown (before and after, as JSON).
extends_documentation_fragment: [gpuops.cluster.common.attributes_action]
options:
  action:
    description:
      - "What to do."
      - V(left) records the node's state after a failed stage (O(left)) in the record, so a failed record says
        whether the node was left drained.
    type: str
    choices: [status, record, signoff, left]
    default: record
  left:
    description: With O(action=left) - the node's state afterwards (C(slurm_state), C(slurm_reason), C(drained), C(slurm_error)).
    type: dict
  state_dir:
    description: "The controller state directory (C(gpuops_state_dir))."
    type: path
    required: true
  db_url:
    description:
      - The store's database URL (C(gpuops_db_url), C(docs/store.md)).
      - When set, the golden baseline's copy in the host state is kept in that database instead of O(state_dir),
        shared by every controller and AWX execution node (C(docs/state.md)).
    type: str
  host:
    description: "The node (inventory hostname)."
    type: str
    required: true
  node_class:
    description: "The node class (C(gpuops_node_class))."
    type: str
  restart:
    description: "With O(action=status), start a fresh record (the old one is kept in its history)."
    type: bool
    default: false
  stage:
    description: "The stage to record."
    type: str
    choices: [inventory, compliance, health, burnin, baseline, service]
  problems:
    description: "Record O(stage) as failed with these problems (e.g. a task that failed)."
    type: list
    elements: str
  facts:
    description: "The node's facts (docs/facts.md); the facts after burn-in for O(stage=burnin)."
    type: dict
  before:
    description: "Facts taken before burn-in."
    type: dict
  profile:
    description: "The node class's hardware profile."
    type: dict
  acceptance:
    description: "Onboarding acceptance data of the class (gpu_memory_mib, hca_count, ...)."
    type: dict
  baseline:
    description: "The upgrade baseline (C(gpuops_upgrade_baseline))."
    type: dict
  methods:
    description: "Upgrade methods (C(gpuops_upgrade_methods))."
    type: dict
  inventory:
    description: "Inventory path to print in the upgrade command."
    type: str
  ticket:
    description: "The change ticket."
    type: str
  by:
    description: "Who runs the onboarding."
    type: str
  findings:
    description: "The node's inspection findings (stage health)."
    type: list
    elements: dict
  fail_severities:
    description: "Severities that fail stage health."
    type: list
    elements: str
    choices: [P0, P1, P2, P3]
    default: [P0, P1, P2]
  ignore_checks:
    description: "Checks that never fail stage health."
    type: list
    elements: str
    default: []
  dcgm:
    description: "The dcgm_diag_info result (None = not run)."
    type: dict
  nccl:
    description: The single-node M(gpuops.cluster.nccl_test_info) C(nccl) result (threshold C(nccl_min_busbw_gbps)).
    type: dict
  nccl_rails:
    description: Its per-rail C(rails) results (threshold C(nccl_rail_min_busbw_gbps)).
    type: list
    elements: dict
    default: []
  stress:
    description: "The stress run result (None = not run)."
    type: dict
  thresholds:
    description: "Burn-in thresholds and counter limits."
    type: dict
    default: {}
  slurm_text:
    description: "C(scontrol show node <host>) output (stage service)."
    type: str
  slurm_name:
    description: "The node's Slurm NodeName in O(slurm_text) (C(gpuops_slurm_node_name)); default O(host)."
    type: str
"""

EXAMPLES = r"""
- name: Record stage 1
  gpuops.cluster.onboard_stage:
    state_dir: /var/lib/gpuops/state
    host: "{{ inventory_hostname }}"
    stage: inventory
    facts: "{{ __onboard_collect.facts }}"
    profile: "{{ gpuops_profiles[gpuops_node_class] }}"
  delegate_to: localhost
"""

RETURN = r"""
record: {description: The onboarding record after the action., returned: always, type: dict, sample: {status: in_progress}}
resume_from: {description: Index of the first stage not passed (6 = all passed)., returned: always, type: int, sample: 3}
next_stage: {description: Name of that stage (null when all passed)., returned: always, type: str, sample: burnin}
result: {description: The stage verdict., returned: action=record, type: dict, sample: {stage: burnin, passed: false, problems: ["new Xid 48"]}}
reason: {description: Slurm drain reason for a failed stage., returned: action=record, type: str, sample: "onboard burnin failed: ..."}
paths:
  description: Files written (in check mode - the files that would be written).
  returned: always
  type: dict
  sample: {record: /var/lib/gpuops/state/onboarding/n1.json}
prometheus: {description: node_exporter textfile metrics., returned: action=signoff, type: str, sample: "gpuops_onboard_accepted{host=\"n1\"} 1"}
"""
