# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/preflight.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: preflight
short_description: The verdict of the preflight - one line per gap a first run would hit, with its fix
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The last step of C(ansible-playbook gpuops.cluster.preflight) (docs/inventory-plugin.md, "Preflight"). The
    playbook probes a sample of the target nodes and the Slurm controller, read-only, and hands the results here.
  - Required items (a gap fails the task, so the run exits non-zero) - SSH to every sampled node, root on it
    (directly or through become), C(nvidia-smi) on the PATH or NVML, the Slurm client and C(scontrol ping)
    answering, a writable state directory, the store (O(db_url)) reachable when set, the audit callback
    C(gpuops.cluster.audit) enabled, BMC credentials wherever a BMC address is set.
  - Recommended items (a note) - C(ibstat), C(ipmitool), C(dcgmi), C(mlxlink) on the nodes, C(GPUOPS_STATE_DIR)
    exported, a BMC address per node.
  - Writes nothing, in check mode or not.
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
  - gpuops.cluster.common.attributes_controller
attributes:
  check_mode:
    details: Reads and reports the same as without check mode.
  diff_mode:
    support: none
options:
  nodes:
    description: Sampled inventory host to its probe result (the registered C(raw) task - C(stdout), C(rc), C(unreachable), C(msg)).
    type: dict
    default: {}
  targets_total:
    description: How many target nodes the sample was drawn from (for the summary line).
    type: int
    default: 0
  slurm:
    description: The C(scontrol ping) result on the Slurm controller host - C(host), C(scontrol_path), C(rc), C(stdout), C(stderr), C(msg).
    type: dict
    default: {}
  state_dir:
    description: The state directory (C(gpuops_state_dir)); empty when none is configured.
    type: str
    default: ""
  db_url:
    description: The store (C(gpuops_db_url)); checked by a TCP connect (PostgreSQL) or its directory (SQLite).
    type: str
    default: ""
  bmc:
    description: Sampled host to C(address), C(user), C(password) booleans (whether each is set; never the values).
    type: dict
    default: {}
  sample:
    description:
      - The sampled inventory hosts; when given, O(nodes) and O(bmc) are read from their variables (each host's
        C(__preflight_probe), else "not probed"; whether C(gpuops_bmc_address), C(gpuops_bmc_user) and
        C(gpuops_bmc_password) are set).
    type: list
    elements: str
    default: []
  fail:
    description: Fail the task when a required item is missing.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Verdict
  gpuops.cluster.preflight:
    nodes: "{{ __preflight_probes }}"
    slurm: "{{ __preflight_slurm }}"
    state_dir: "{{ gpuops_state_dir | default(lookup('env', 'GPUOPS_STATE_DIR')) }}"
"""

RETURN = r"""
passed:
  description: No required item is missing.
  returned: always
  type: bool
summary:
  description: One line - green or FAILED, the counts of gaps and notes, how many nodes were sampled.
  returned: always
  type: str
lines:
  description: One line per gap (C(GAP) required, C(note) recommended), each ending with its fix.
  returned: always
  type: list
  elements: str
items:
  description: The items with a gap or a note (C(ssh), C(become), C(nvidia-smi), C(slurm_controller), C(audit_callback), ...).
  returned: always
  type: list
  elements: str
"""
