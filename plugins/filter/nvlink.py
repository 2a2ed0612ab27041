# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: nvlink
short_description: Parse nvidia-smi nvlink -s / -e (or dcgmi nvlink -e) output into per-GPU NVLink records
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Parses C(nvidia-smi nvlink -s) (link state and speed), C(nvidia-smi nvlink -e) (error counters), both
    concatenated, or the C(dcgmi nvlink -e) table.
  - Each GPU's C(nvlink) is the same C({links, error}) record that M(gpuops.cluster.gpu_info) puts on its GPUs; the
    filter calls the module's parser (C(module_utils/parsers/nvlink)) and its merge.
  - For the NVLink data attached to full GPU records, use P(gpuops.cluster.nvidia_smi#filter) with its
    O(gpuops.cluster.nvidia_smi#filter:nvlink) option instead.
  - Broken input (no C(GPU N:) header, a malformed counter line, an empty string) raises an error naming the line,
    unless O(strict=false).
options:
  _input:
    description: The text printed by C(nvidia-smi nvlink -s) and/or C(-e), or C(dcgmi nvlink -e).
    type: str
    required: true
  source:
    description: Where the text comes from, used in C(source) and in error messages. Default C(nvidia-smi nvlink).
    type: str
  strict:
    description:
      - When true, input that cannot be parsed raises an error.
      - When false, each malformed line is an entry of C(errors) (kind C(parse)) and the rest is returned.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Read link state and error counters
  ansible.builtin.shell: nvidia-smi nvlink -s; nvidia-smi nvlink -e
  register: __nvl
  changed_when: false

- name: Links that are not up
  ansible.builtin.debug:
    msg: >-
      {{ (__nvl.stdout | gpuops.cluster.nvlink).gpus | map(attribute='nvlink.links') | flatten
         | selectattr('state', 'ne', 'up') | list }}
"""

RETURN = r"""
_value:
  description:
    - C(source), C(gpus) (by index - C(index), C(name), C(uuid), C(nvlink) with C(links) - C(link), C(state)
      C(up)/C(down)/C(inactive), C(speed_gbps), C(errors) counters - and C(error)) and C(errors).
  type: dict
  sample:
    source: nvidia-smi nvlink
    gpus:
      - index: 0
        name: NVIDIA A100-SXM4-80GB
        uuid: GPU-5269b708-678a-b1a8-60f0-c90406537486
        nvlink:
          links:
            - {link: 0, state: up, speed_gbps: 25.0, errors: {replay: null, recovery: null, crc_flit: null, crc_data: null}}
          error: null
    errors: []
"""

from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _filters

NAME = "nvlink"


def nvlink(data: Any, source: Optional[str] = None, strict: Any = True) -> Dict[str, Any]:
    """nvidia-smi nvlink -s/-e output -> ``{source, gpus: [{index, name, uuid, nvlink}], errors}``."""
    text = _filters.text_arg(NAME, data, "nvidia-smi nvlink -s/-e output")
    return _filters.parse_filter(NAME, text, source, strict, _filters.nvlink_domain, "gpus")


class FilterModule:
    """gpuops.cluster parser filter: nvlink."""

    def filters(self) -> Dict[str, Any]:
        return {NAME: nvlink}
