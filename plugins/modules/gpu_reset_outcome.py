# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/gpu_reset_outcome.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_reset_outcome
short_description: Turn what a GPU reset rollout did into its per-node outcome
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The logic of the C(gpuops.cluster.gpu_reset) playbook's outcome (C(docs/isolation.md), C(docs/operations.md)
    "Outcomes and exit codes"). Pure computation on the controller - it runs no command and writes nothing.
  - O(step=outcome) reads each node's C(gpu_reset_result) (and C(__gpu_reset_error), the error the playbook's
    C(rescue:) kept) from its host variables - V(skipped) when no GPU needed a reset, V(done) when reset (and
    resumed, or O(resume) is false), V(left_drained), V(refused) (process attached, unreachable, refused by the
    guard), V(failed) (not drained), V(not_started) (the rollout stopped before it), else V(unconfirmed).
  - O(step=error_text) - a failed looped C(nvidia-smi -r) says only "One or more items failed"; RV(error_text)
    is each failed item's stderr and stdout (whitespace folded), else its msg, cut to 300 characters.
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
  - gpuops.cluster.common.attributes_controller
attributes:
  check_mode:
    details: The same answer.
  diff_mode:
    support: none
options:
  step:
    description: What to compute.
    type: str
    choices: [outcome, error_text]
    default: outcome
  nodes:
    description: With O(step=outcome), the requested inventory names.
    type: list
    elements: str
    default: []
  resume:
    description: C(gpu_reset_resume) - whether a reset node is expected back in service.
    type: bool
    default: true
  failed_result:
    description: With O(step=error_text), the failed task's result (C(ansible_failed_result)).
    type: raw
    default: {}
"""

EXAMPLES = r"""
- name: Outcome
  gpuops.cluster.gpu_reset_outcome:
    nodes: "{{ __gpu_reset_requested | default([]) }}"
    resume: "{{ gpu_reset_resume | default(true) | bool }}"
  register: __gpu_reset_view
"""

RETURN = r"""
outcome:
  description: Node to its outcome, for C(gpuops.cluster.run_outcome).
  returned: step outcome
  type: dict
  sample: {gpu-node-03: {outcome: done, detail: "GPU 2 reset, back in service", slurm_state: IDLE}}
error_text:
  description: The failed reset's own words.
  returned: step error_text
  type: str
  sample: "Unable to reset GPU 00000000:00:03.0: In use by another client"
"""
