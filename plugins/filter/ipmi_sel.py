# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: ipmi_sel
short_description: Parse ipmitool sel list / sel elist output into BMC event log records
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Parses C(ipmitool sel list) or C(ipmitool sel elist) and returns the C(sel) of the C(bmc) domain of
    C(docs/facts.md), as M(gpuops.cluster.bmc_info) parses it (same parser, C(module_utils/parsers/ipmi_sel)). Record ids are
    hex; C(Pre-Init) and unspecified times are null; C(severity) is C(ok), C(non_critical), C(critical) or
    C(non_recoverable).
  - C(SEL has no entries) gives an empty list.
  - Broken input (table rows that are not SEL records, a malformed entry, an empty string) raises an error naming
    the line, unless O(strict=false).
options:
  _input:
    description: The text printed by C(ipmitool sel list) or C(sel elist).
    type: str
    required: true
  source:
    description: Where the text comes from, used in C(source) and in error messages. Default C(ipmitool-sel).
    type: str
  strict:
    description:
      - When true, input that cannot be parsed raises an error.
      - When false, each malformed entry is an entry of C(errors) (kind C(parse), with its line) and the other
        records are returned.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Read the BMC event log
  ansible.builtin.command: ipmitool sel elist
  register: __sel
  changed_when: false
  become: true

- name: Critical events still asserted
  ansible.builtin.debug:
    msg: >-
      {{ (__sel.stdout | gpuops.cluster.ipmi_sel).sel | selectattr('severity', 'in', ['critical', 'non_recoverable'])
         | selectattr('direction', 'eq', 'asserted') | list }}
"""

RETURN = r"""
_value:
  description:
    - C(source), C(sel) (C(id), C(time), C(sensor_type), C(sensor), C(sensor_number), C(event), C(direction),
      C(severity), C(reading), C(threshold), C(preinit_seconds), C(line)) and C(errors).
  type: dict
  sample:
    source: ipmitool-sel
    sel:
      - {id: 5, time: "2014-06-03T17:38:06", sensor_type: Fan, sensor: "#0x0c", sensor_number: 12,
         event: "Non-Redundant: Insufficient Resources", direction: asserted, severity: critical, reading: null,
         threshold: null, preinit_seconds: null, line: 5}
    errors: []
"""

import functools
from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _filters

NAME = "ipmi_sel"


def ipmi_sel(data: Any, source: Optional[str] = None, strict: Any = True) -> Dict[str, Any]:
    """ipmitool sel list / elist output -> ``{source, sel, errors}``."""
    text = _filters.text_arg(NAME, data, "ipmitool sel list or sel elist output")
    listing = functools.partial(_filters.bmc_listing, key="sel", parser="ipmitool_sel")
    return _filters.parse_filter(NAME, text, source, strict, listing, "sel")


class FilterModule:
    """gpuops.cluster parser filter: ipmi_sel."""

    def filters(self) -> Dict[str, Any]:
        return {NAME: ipmi_sel}
