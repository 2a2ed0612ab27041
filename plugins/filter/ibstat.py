# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: ibstat
short_description: Parse ibstat (or ibstatus) output into the ib facts domain
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Parses C(ibstat) output (TAB- or space-indented; C(ibstatus) output is detected and parsed too) and returns
    the C(ib) domain of C(docs/facts.md), as M(gpuops.cluster.infiniband_info) returns it from C(ibstat) (same parser,
    C(module_utils/parsers/ib)). Counters are not in C(ibstat) output; C(counters) stay empty.
  - An C(ibpanic) line (ibstat died, for example because a device vanished) is a C(tool_error) entry of C(errors),
    with the HCAs listed before it kept; it is evidence, not broken input.
  - Broken input (no C(CA '...') block, output cut inside an HCA, an empty string) raises an error, unless
    O(strict=false).
options:
  _input:
    description: The text printed by C(ibstat) or C(ibstatus).
    type: str
    required: true
  source:
    description: Where the text comes from, used in C(source) and in error messages. Default C(ibstat) (C(ibstatus)).
    type: str
  strict:
    description:
      - When true, input that cannot be parsed raises an error.
      - When false, the error is an entry of C(errors) (kind C(parse)) and the HCAs parsed are returned.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Read the HCAs
  ansible.builtin.command: ibstat
  register: __ibstat
  changed_when: false

- name: InfiniBand ports that are not active
  ansible.builtin.debug:
    msg: >-
      {{ (__ibstat.stdout | gpuops.cluster.ibstat).hcas | map(attribute='ports') | flatten
         | selectattr('link_layer', 'eq', 'InfiniBand') | rejectattr('state', 'eq', 'ACTIVE') | list }}
"""

RETURN = r"""
_value:
  description:
    - The C(ib) domain - C(source), C(collected_at) and C(boot_id) (null here), C(hcas) (C(name), C(ca_type),
      C(fw_version), C(node_guid), C(ports) - C(port), C(state), C(phys_state), C(rate_gbps), C(link_layer),
      C(lid), C(sm_lid), C(port_guid), ...) and C(errors).
  type: dict
  sample:
    source: ibstat
    collected_at: null
    boot_id: null
    hcas:
      - name: mlx5_2
        ca_type: MT4125
        board_id: null
        fw_version: 22.38.1002
        node_guid: "0x946dae0300c2b691"
        serial: null
        ports:
          - {port: 1, state: DOWN, phys_state: Disabled, rate_gbps: 40.0, rate_label: "40", width: null, speed: null,
             link_layer: Ethernet, lid: 0, sm_lid: 0, port_guid: "0x966daefffec2b691", counters: {}, saturated: []}
    errors: []
"""

from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _filters

NAME = "ibstat"


def ibstat(data: Any, source: Optional[str] = None, strict: Any = True) -> Dict[str, Any]:
    """ibstat / ibstatus output -> the ib domain (docs/facts.md)."""
    text = _filters.text_arg(NAME, data, "ibstat or ibstatus output")
    return _filters.parse_filter(NAME, text, source, strict, _filters.ib_domain, "hcas")


class FilterModule:
    """gpuops.cluster parser filter: ibstat."""

    def filters(self) -> Dict[str, Any]:
        return {NAME: ibstat}
