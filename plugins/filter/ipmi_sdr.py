# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: ipmi_sdr
short_description: Parse ipmitool sdr / sdr elist / sensor output into BMC sensor records
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Parses C(ipmitool sdr) (3 columns), C(ipmitool sdr elist) (5 columns) or C(ipmitool sensor) (10 columns,
    with thresholds); the layout is detected per line. Lines that are not table rows (C(Unable to send command))
    are skipped.
  - Returns the C(sensors) of the C(bmc) domain of C(docs/facts.md), as M(gpuops.cluster.bmc_info) parses them (same
    parser, C(module_utils/parsers/ipmi_sdr)), with a normalized C(type) (C(temperature), C(fan), C(power_supply),
    C(leak), ...) and C(status) (C(ok), C(non_critical), C(critical), C(non_recoverable), ...).
  - Broken input (text without a single sensor row, a malformed row, an empty string) raises an error naming the
    line, unless O(strict=false).
options:
  _input:
    description: The text printed by C(ipmitool sdr), C(sdr elist) or C(sensor).
    type: str
    required: true
  source:
    description: Where the text comes from, used in C(source) and in error messages. Default C(ipmitool-sdr).
    type: str
  strict:
    description:
      - When true, input that cannot be parsed raises an error.
      - When false, each malformed row is an entry of C(errors) (kind C(parse), with its line) and the other
        sensors are returned.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Read the BMC sensors
  ansible.builtin.command: ipmitool sdr elist
  register: __sdr
  changed_when: false
  become: true

- name: Sensors that are not ok
  ansible.builtin.debug:
    msg: "{{ (__sdr.stdout | gpuops.cluster.ipmi_sdr).sensors | rejectattr('status', 'in', ['ok', 'not_present']) | map(attribute='name') }}"
"""

RETURN = r"""
_value:
  description:
    - C(source), C(sensors) (C(name), C(type), C(reading), C(unit), C(status), C(states), C(thresholds), and
      C(number)/C(entity) from C(sdr elist)) and C(errors).
  type: dict
  sample:
    source: ipmitool-sdr
    sensors:
      - {name: GPU0 Temp, type: temperature, reading: 90.0, unit: C, status: critical, states: [], thresholds: {},
         number: 2, entity: "3.1"}
      - {name: PSU1 Status, type: power_supply, reading: null, unit: null, status: critical,
         states: [Presence detected, Failure detected], thresholds: {}, number: 6, entity: "10.1"}
    errors: []
"""

import functools
from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _filters

NAME = "ipmi_sdr"


def ipmi_sdr(data: Any, source: Optional[str] = None, strict: Any = True) -> Dict[str, Any]:
    """ipmitool sdr / sdr elist / sensor output -> ``{source, sensors, errors}``."""
    text = _filters.text_arg(NAME, data, "ipmitool sdr, sdr elist or sensor output")
    listing = functools.partial(_filters.bmc_listing, key="sensors", parser="ipmitool_sdr")
    return _filters.parse_filter(NAME, text, source, strict, listing, "sensors")


class FilterModule:
    """gpuops.cluster parser filter: ipmi_sdr."""

    def filters(self) -> Dict[str, Any]:
        return {NAME: ipmi_sdr}
