# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: nvidia_smi
short_description: Parse nvidia-smi -q -x (XML) or nvidia-smi -q (text) output into the gpu facts domain
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Parses the output of C(nvidia-smi -q -x) or of C(nvidia-smi -q); which one is detected from the text
    (an C(<?xml) or C(<nvidia_smi_log>) document is XML).
  - Returns the C(gpu) domain of C(docs/facts.md), exactly as M(gpuops.cluster.gpu_info) returns it; the filter
    calls the same parsers (C(module_utils/parsers/nvsmi_xml), C(_nvsmi_text)) and the same normalization.
  - Error lines that nvidia-smi prints instead of a GPU (C(Unable to determine the device handle for GPU
    0000:3B:00.0 - GPU is lost)) become unreadable GPU records and C(unreadable) entries in C(errors); they are
    evidence, not broken input.
  - Broken input (not nvidia-smi output, output cut inside a GPU, an empty string) raises an error naming the
    parser, the line and how many GPUs were parsed, unless O(strict=false).
options:
  _input:
    description: The text printed by C(nvidia-smi -q -x) or C(nvidia-smi -q) (a registered result's C(stdout)).
    type: str
    required: true
  nvlink:
    description:
      - Output of C(nvidia-smi nvlink -s) and/or C(nvidia-smi nvlink -e) (either, or both concatenated), merged into
        each GPU's C(nvlink) as gpu_info does.
    type: str
  source:
    description:
      - Where the text comes from (a file name or command), used in C(source) and in error messages.
      - Default C(nvidia-smi-xml) or C(nvidia-smi-text).
    type: str
  strict:
    description:
      - When true, input that cannot be parsed raises an error.
      - When false, the error is an entry of C(errors) (kind C(parse), with its line) and whatever was parsed is
        returned, as the module reports it.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Read the GPUs of a node
  ansible.builtin.command: nvidia-smi -q -x
  register: __smi
  changed_when: false

- name: Fail when a GPU has pending row remaps
  ansible.builtin.assert:
    that: __gpus | selectattr('remapped_rows.pending') | list | length == 0
  vars:
    __gpus: "{{ (__smi.stdout | gpuops.cluster.nvidia_smi).gpus }}"

- name: A saved capture, with its NVLink status merged in
  ansible.builtin.debug:
    msg: "{{ lookup('file', 'nvidia-smi-q.xml') | gpuops.cluster.nvidia_smi(nvlink=lookup('file', 'nvidia-smi-nvlink-s.txt')) }}"
"""

RETURN = r"""
_value:
  description:
    - The C(gpu) domain of C(docs/facts.md) - C(source), C(driver_version), C(cuda_version), C(count), C(gpus)
      (one normalized record per GPU, see M(gpuops.cluster.gpu_info)) and C(errors).
  type: dict
  sample:
    source: nvidia-smi-xml
    driver_version: 535.86.05
    cuda_version: "12.2"
    count: 1
    gpus:
      - index: 0
        readable: true
        error: null
        bus_id: 00000000:84:00.0
        uuid: GPU-71d1acc2-662d-2166-bf9f-65272d2fc437
        name: NVIDIA GeForce RTX 4090
        temperature: {gpu_c: 40, memory_c: null}
        power: {draw_w: 26.84, limit_w: 450.0}
        remapped_rows: {supported: true, correctable: 0, uncorrectable: 0, pending: false, failure: false}
        throttle: {active: [gpu_idle]}
        pcie: {gen_current: 1, gen_max: 3, width_current: 16, width_max: 16, replay_counter: 0}
        nvlink: null
        recovery_action: null
        processes: []
    errors: []
"""

from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _filters

NAME = "nvidia_smi"


def nvidia_smi(
    data: Any, nvlink: Optional[str] = None, source: Optional[str] = None, strict: Any = True
) -> Dict[str, Any]:
    """nvidia-smi XML or text output -> the gpu domain (docs/facts.md)."""
    text = _filters.text_arg(NAME, data, "nvidia-smi -q -x or nvidia-smi -q output")
    nv_text = None if nvlink is None else _filters.text_arg(NAME, nvlink, "nvidia-smi nvlink output (option nvlink)")
    return _filters.parse_filter(
        NAME, text, source, strict, lambda t, src: _filters.gpu_domain(t, src, nv_text), "gpus"
    )


class FilterModule:
    """gpuops.cluster parser filter: nvidia_smi."""

    def filters(self) -> Dict[str, Any]:
        return {NAME: nvidia_smi}
