# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/upgrade_plan.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: upgrade_plan
short_description: Plan a rolling firmware and driver upgrade in batches that fit the maintenance window
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Runs on the B(controller) and changes nothing. Validates the upgrade baseline against the compatibility
    matrix (incompatible targets fail the task with the reason), reads each host's current versions from its
    facts, plans the ordered per-node steps (BMC, BIOS, GPU/baseboard, HCA firmware, driver with fabric manager)
    and orders the hosts that need work into batches (C(docs/upgrades.md)).
  - Per host it reads the host variables C(gpuops_node_class), C(gpuops_rack), C(gpuops_leaf_switch),
    C(gpuops_power_domain), C(gpuops_partition) (else the Slurm facts' partitions), C(upgrade_slurm_state)
    (set by the role C(gpuops.cluster.upgrade)'s entry point C(collect)), else C(gpuops_slurm_state), else the
    Slurm facts' state, and C(gpuops_upgrade_priority) (higher goes earlier).
  - Facts come from O(facts_var) (a registered M(gpuops.cluster.collect_info) result), else from the host's
    C(gpuops_capture_dir), read in-process on the controller.
  - Hosts already at target are in RV(skipped) (an empty plan, so re-running the upgrade is a no-op). Hosts whose
    current version of a targeted component is unknown, or whose plan would downgrade, are RV(blocked).
  - The rolling play uses RV(batch_sizes) as C(serial) over a group built with C(ansible.builtin.add_host)
    in RV(ordered_hosts) order; Ansible keeps that insertion order (tested).
options:
  hosts:
    description: The inventory hosts to consider (all of a partition, so capacity is counted right).
    type: list
    elements: str
    required: true
  facts_var:
    description: Host variable holding each host's registered M(gpuops.cluster.collect_info) result (or facts).
    type: str
    default: gpuops_upgrade_collect
  baseline:
    description:
      - "Target versions per node class: C({class: {driver, fabric_manager, cuda, vbios, hca_fw, bmc, bios, ofed}})."
      - Defaults to the variable C(gpuops_upgrade_baseline) (of localhost, else of the first target host).
    type: dict
  matrix:
    description: The compatibility matrix. Defaults to the variable C(gpuops_compat_matrix).
    type: dict
  methods:
    description:
      - Per node class overrides of each step's C(tool), C(activation), C(est_duration_s).
      - "Shape: C({class: {bmc|bios|vbios|hca_fw|driver: {tool, activation, est_duration_s}}})."
      - Defaults to the variable C(gpuops_upgrade_methods).
    type: dict
  constraints:
    description:
      - Batch constraints, see C(docs/upgrades.md) - C(max_offline_share) (a share, or per partition with
        C(default)), C(max_per_rack), C(max_per_leaf), C(max_per_power), C(canary_size), C(max_batch_size),
        C(batch_overhead_s), C(partition_sizes), C(include_down). Unknown keys fail the task.
    type: dict
    default: {}
  window_s:
    description:
      - Seconds of maintenance window left. Batches that no longer fit are RV(deferred).
      - Defaults to C(gpuops_change_window.remaining_s) set by M(gpuops.cluster.change_window); no limit without.
    type: float
  allow_downgrade:
    description: Plan hosts whose plan lowers a version; otherwise they are RV(blocked).
    type: bool
    default: false
extends_documentation_fragment: [gpuops.cluster.common.attributes_info]
notes:
  - Run it once, on localhost (C(run_once) or a localhost play); it needs no connection.
seealso:
  - module: gpuops.cluster.change_window
  - module: gpuops.cluster.collect_info
"""

EXAMPLES = r"""
- name: Plan the upgrade
  gpuops.cluster.upgrade_plan:
    hosts: "{{ groups['gpu_nodes'] }}"
    constraints: {max_offline_share: 0.1, max_per_rack: 2, max_per_power: 4, canary_size: 1}
  register: plan

- name: Build the rolling group in planned order
  ansible.builtin.add_host:
    name: "{{ item }}"
    groups: upgrade_ordered
    upgrade_batch_index: "{{ plan.host_batches[item] }}"
  loop: "{{ plan.ordered_hosts }}"

- name: Remember the batch sizes for the rolling play's serial
  ansible.builtin.set_fact:
    upgrade_batch_sizes: "{{ plan.batch_sizes }}"

# the next play (hosts: upgrade_ordered) then has
#   serial: "{{ hostvars['localhost'].upgrade_batch_sizes | default([1]) }}"
# (the default is only for --syntax-check/ansible-lint, where hostvars is undefined)
"""

RETURN = r"""
problems:
  description: Baseline/matrix problems (the task fails when there is any), each C({node_class, key, message}).
  returned: always
  type: list
  sample: [{node_class: h100-sxm-8, key: h100-sxm-8.fabric_manager,
            message: "h100-sxm-8.fabric_manager: 550.127.04 must equal the driver 550.127.05 (...)"}]
nodes:
  description: Per host with a baseline and facts, C({node_class, current, steps, summary}).
  returned: always
  type: dict
  sample: {gpu-node-01: {node_class: h100-sxm-8, current: {driver: "535.161.08"},
           steps: [{component: driver, components: [driver, fabric_manager], action: upgrade, tool: apt,
                    activation: reboot, est_duration_s: 900}],
           summary: {est_duration_s: 900, activation: reboot, components: [driver]}}}
skipped:
  description: Hosts already at target (empty plan).
  returned: always
  type: list
  sample: [gpu-node-02]
blocked:
  description: Hosts not planned, with the reason (no baseline, no facts, unknown version, downgrade).
  returned: always
  type: list
  sample: [{host: gpu-node-03, reason: "current version unknown for: bmc"}]
batches:
  description: The planned batches, in order; the first is the canary.
  returned: always
  type: list
  sample: [{index: 0, canary: true, hosts: [gpu-node-01], est_duration_s: 2700, ends_at_s: 2700,
            offline: {gpu: 3}, online_share: {gpu: 0.9}}]
deferred:
  description: Hosts that need work but were not planned (window, capacity, down), with the reason.
  returned: always
  type: list
  sample: [{name: gpu-node-09, reason: "window: needs 2700s, 1200s of the window left after 3 batch(es)"}]
batch_sizes:
  description: Sizes of the batches, for the rolling play's C(serial).
  returned: always
  type: list
  sample: [1, 4, 4]
ordered_hosts:
  description: The planned hosts in batch order (build the rolling group with add_host in this order).
  returned: always
  type: list
  sample: [gpu-node-01, gpu-node-05, gpu-node-02]
host_batches:
  description: Batch index of each planned host.
  returned: always
  type: dict
  sample: {gpu-node-01: 0, gpu-node-05: 1}
stats:
  description: Totals - batches, planned, deferred, est_total_s, capacity, already_offline, max_offline,
    min_online_share per partition, max_per_rack_in_batch.
  returned: always
  type: dict
  sample: {batches: 3, planned: 9, deferred: 1, est_total_s: 8100, min_online_share: {gpu: 0.9}}
components_text:
  description: "The hosts with steps and their components, in plan order, as the upgrade role shows the plan
    (C(host: comp+comp, host: comp)); empty when no host has a step."
  returned: when the baseline is accepted
  type: str
  sample: "gpu-node-01: vbios+hca_fw+driver, gpu-node-05: driver"
pending_text:
  description: Per host with steps, the components not at target as the upgrade role's verify reports them
    (C(component from (want to)), joined by C(; )).
  returned: when the baseline is accepted
  type: dict
  sample: {gpu-node-07: "vbios ['96.00.5E.00.01'] (want 96.00.89.00.01); bmc  (want 1.2)"}
window_s:
  description: The window seconds the plan was cut to (null - no limit).
  returned: always
  type: float
  sample: 14400.0
"""
