# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/health_check_install.py (it builds on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: health_check_install
short_description: Build the node-side health check with the controller's policy and install it on the node
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Builds, on the controller, the self-contained node program of C(gpuops.cluster.health_check) (Slurm's
    C(HealthCheckProgram)) as one Python zipapp - the collection's own collectors and node-level policy code,
    the merged policy (defaults plus O(policy_overrides)) and this host's hardware profile - and copies it to
    O(dest) on the node (mode 0755, owner root).
  - The archive is byte-for-byte reproducible, so an unchanged policy and collection change nothing; its
    content version and the policy version (the first 12 hex digits of the report's C(policy_hash)) are
    returned. No Ansible is needed on the node at run time, only a Python 3.8+ interpreter.
  - Used by the C(gpuops.cluster.health_check) role; see C(docs/health_check.md).
options:
  dest:
    description: Where the program goes on the node (the C(HealthCheckProgram) path).
    type: path
    required: true
  config:
    description:
      - The program's options (C(docs/health_check.md) "Configuration"), e.g. C(textfile_dir), C(state_file),
        C(call_timeout), C(collect_timeout), C(scontrol_path), C(drain), C(resume), C(domains).
      - C(policy), C(profile), C(host) and C(version) are set by the step and refused here.
    type: dict
    default: {}
  policy_overrides:
    description: Site overrides merged over the default policy (as C(gpuops_policy_overrides) for the inspection).
    type: dict
    default: {}
  node_class:
    description: The host's node class (a key of O(profiles) or of the policy's profiles); none means no profile.
    type: str
  profiles:
    description: Hardware profiles by node class (as C(gpuops_profiles)).
    type: dict
    default: {}
  interpreter:
    description: The Python 3.8+ interpreter on the node (the program's C(#!) line, run with C(-sE)).
    type: path
    default: /usr/bin/python3
  mode:
    description: File mode of the program.
    type: raw
    default: "0755"
extends_documentation_fragment:
  - gpuops.cluster.common.ATTRIBUTES_ACTION
attributes:
  check_mode:
    details: Builds the program in a private temporary directory on the controller (removed at once) and reports
      whether the node's copy would change; writes nothing on the node.
  diff_mode:
    details: Before and after name the installed build's version.
"""

EXAMPLES = r"""
- name: Install the health check program
  gpuops.cluster.health_check_install:
    dest: /usr/local/sbin/gpuops-health-check
    policy_overrides: "{{ gpuops_policy_overrides | default({}) }}"
    node_class: "{{ gpuops_node_class | default(omit) }}"
    profiles: "{{ gpuops_profiles | default({}) }}"
    config:
      textfile_dir: /var/lib/node_exporter/textfile_collector
      state_file: /var/lib/gpuops/health_check/state.json
"""

RETURN = r"""
dest:
  description: The installed program.
  returned: success
  type: str
  sample: /usr/local/sbin/gpuops-health-check
version:
  description: The build's content version (sha256 prefix over the sources and the configuration).
  returned: success
  type: str
  sample: 3f2a9c1d0b7e
policy_version:
  description: The policy the node runs (first 12 hex digits of the merged policy's sha256, as report.json's policy_hash).
  returned: success
  type: str
  sample: 7efa5714f5cc
profile:
  description: The hardware profile built in (null when the host has no node class).
  returned: success
  type: dict
  sample: {gpu_count: 8, gpu_model: H100}
size:
  description: Size of the program in bytes.
  returned: success
  type: int
  sample: 201447
"""
