# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: scontrol_nodes
short_description: Parse scontrol show node output (multi-line, -o or --json) into Slurm node records
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Parses C(scontrol show node) in its multi-line form, its one-line form (C(scontrol -o show node)) or its
    C(--json) form (the text, or the already parsed object), and returns the C(slurm) domain of C(docs/facts.md) as
    M(gpuops.cluster.collect_info) returns it (same parser, C(module_utils/parsers/slurm)).
  - Each node has its C(state) split into C(base_state) and C(flags) (a trailing C(*) is C(NOT_RESPONDING)), its
    C(reason) split from C([user@time]), and its GPU count from C(Gres).
  - Text without a C(NodeName=) record (C(Node x not found), C(slurm_load_node error ...)), a malformed record or an
    empty string raises an error, unless O(strict=false).
options:
  _input:
    description: The text printed by C(scontrol show node) (or C(scontrol -o show node), C(scontrol show node --json)).
    type: raw
    required: true
  source:
    description: Where the text comes from, used in C(source) and in error messages. Default C(scontrol).
    type: str
  strict:
    description:
      - When true, input that cannot be parsed raises an error.
      - When false, the error is an entry of C(errors) (kind C(parse)) and the nodes parsed are returned.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Read the nodes from the controller
  ansible.builtin.command: scontrol -o show node
  register: __scontrol
  changed_when: false
  delegate_to: "{{ groups['slurm_head'][0] }}"
  run_once: true

- name: Nodes drained by someone, with why
  ansible.builtin.debug:
    msg: "{{ item.name }}: {{ item.reason }} ({{ item.reason_user }} at {{ item.reason_time }})"
  loop: "{{ (__scontrol.stdout | gpuops.cluster.scontrol_nodes).nodes | selectattr('flags', 'contains', 'DRAIN') | list }}"
"""

RETURN = r"""
_value:
  description:
    - C(source), C(nodes) (C(name), C(state), C(base_state), C(flags), C(reason), C(reason_user), C(reason_time),
      C(gres), C(gres_gpus), C(partitions), C(boot_time), C(slurmd_start_time), C(raw) - every key=value) and C(errors).
  type: dict
  sample:
    source: scontrol
    nodes:
      - name: rtx6000-ada
        state: DOWN+NOT_RESPONDING
        base_state: DOWN
        flags: [NOT_RESPONDING]
        reason: Not responding
        reason_user: root
        reason_time: "2026-06-11T16:16:23"
        gres: gpu:8(S:0-1)
        gres_gpus: 8
        partitions: [rtx6000-ada]
        boot_time: null
        slurmd_start_time: null
        raw: {NodeName: rtx6000-ada, State: DOWN+NOT_RESPONDING, Gres: gpu:8(S:0-1)}
    errors: []
"""

from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _filters

NAME = "scontrol_nodes"


def scontrol_nodes(data: Any, source: Optional[str] = None, strict: Any = True) -> Dict[str, Any]:
    """scontrol show node output (text, -o, or --json text/object) -> ``{source, nodes, errors}``."""
    value = _filters.text_or_mapping(NAME, data, "scontrol show node output")
    return _filters.parse_filter(NAME, value, source, strict, _filters.slurm_domain, "nodes")


class FilterModule:
    """gpuops.cluster parser filter: scontrol_nodes."""

    def filters(self) -> Dict[str, Any]:
        return {NAME: scontrol_nodes}
