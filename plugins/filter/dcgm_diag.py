# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: dcgm_diag
short_description: Parse dcgmi diag output (table or JSON) into the dcgm facts domain
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Parses the table printed by C(dcgmi diag -r N) (DCGM 3 and DCGM 4 layouts) or its C(-j) JSON (the text, or the
    already parsed object) and returns the C(dcgm) domain of C(docs/facts.md), as
    M(gpuops.cluster.dcgm_diag_info) returns it (same parser, C(module_utils/collectors/dcgm)).
  - C(overall) is the worst test result (C(fail) > C(warn) > C(pass)); C(gpus) maps each GPU id to its worst result;
    C(level) is the run level the tests imply.
  - A dcgmi error message (C(Error - the DCGM plugin directory ...)) is a C(tool_error) entry of C(errors); it is
    evidence, not broken input.
  - Text with neither a diagnostic table nor a dcgmi error, a malformed row or an empty string raises an error,
    unless O(strict=false).
options:
  _input:
    description: The text printed by C(dcgmi diag), or its C(-j) JSON.
    type: raw
    required: true
  source:
    description: Where the text comes from, used in C(source) and in error messages. Default C(dcgmi).
    type: str
  strict:
    description:
      - When true, input that cannot be parsed raises an error.
      - When false, the error is an entry of C(errors) (kind C(parse)) and what was parsed is returned.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Run the quick diagnostic
  ansible.builtin.command: dcgmi diag -r 1
  register: __diag
  changed_when: false
  failed_when: false

- name: Fail on a failed or warned test
  ansible.builtin.assert:
    that: __dcgm.overall in ['pass', none]
    fail_msg: "{{ __dcgm.tests | selectattr('result', 'in', ['fail', 'warn']) | map(attribute='name') | join(', ') }}"
  vars:
    __dcgm: "{{ __diag.stdout | gpuops.cluster.dcgm_diag }}"
"""

RETURN = r"""
_value:
  description:
    - The C(dcgm) domain - C(source), C(level), C(layout) (C(dcgm3)/C(dcgm4)), C(overall), C(version),
      C(driver_version), C(gpu_device_ids), C(tests) (C(name), C(category), C(result), C(gpus), C(messages)),
      C(gpus) (GPU id to worst result) and C(errors).
  type: dict
  sample:
    source: dcgmi
    level: 2
    layout: dcgm4
    overall: fail
    version: 4.4.1
    driver_version: 580.65.06
    gpu_device_ids: [1db1, 1db1, 1db1, 1db1]
    tests:
      - name: pcie
        category: Integration
        result: fail
        gpus: {}
        messages: ["There was an internal error during the test: 'A child process (2378806) exited with non-zero status 1' ..."]
    gpus: {}
    errors: []
"""

from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _filters

NAME = "dcgm_diag"


def dcgm_diag(data: Any, source: Optional[str] = None, strict: Any = True) -> Dict[str, Any]:
    """dcgmi diag table or JSON -> the dcgm domain (docs/facts.md)."""
    value = _filters.text_or_mapping(NAME, data, "dcgmi diag output")
    return _filters.parse_filter(NAME, value, source, strict, _filters.dcgm_domain, "tests")


class FilterModule:
    """gpuops.cluster parser filter: dcgm_diag."""

    def filters(self) -> Dict[str, Any]:
        return {NAME: dcgm_diag}
