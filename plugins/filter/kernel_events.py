# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: kernel_events
short_description: Parse a kernel log (dmesg, journalctl -k, syslog) into Xid, SXid, AER, MCE and other events
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Finds NVIDIA Xid and NVSwitch SXid lines, "fallen off the bus", PCIe AER, mlx5 link and power, MCE and EDAC
    events in kernel log text and returns the C(kernel) domain of C(docs/facts.md), exactly as
    M(gpuops.cluster.kernel_events_info) returns it (same parser, C(module_utils/parsers/kernel_log)).
  - Accepts the line prefixes of C(dmesg), C(dmesg -T), C(dmesg --time-format=iso), C(journalctl -k -o short-iso)
    and syslog; other lines are skipped, so an empty log or one without events gives no events.
  - Use P(gpuops.cluster.xid_info#filter) on an event's C(code) for what the Xid means and what to do.
  - A line that looks like an event but is malformed raises an error naming its line, unless O(strict=false).
options:
  _input:
    description: The kernel log text.
    type: str
    required: true
  since:
    description: Keep only events at or after this ISO time (events without a time are kept).
    type: str
  gpus:
    description:
      - GPU records (the C(gpus) of P(gpuops.cluster.nvidia_smi#filter) or gpu_info, or a list of C(index)/C(bus_id))
        used to set each event's C(gpu_index).
    type: list
    elements: dict
  max_events:
    description: Keep at most this many events, the most recent (C(0) keeps all); C(events_dropped) says how many went.
    type: int
    default: 5000
  ref_time:
    description:
      - The ISO time used to place syslog lines that carry no year (C(Feb 14 05:03:41 host kernel:)). Default now.
    type: str
  source:
    description: Where the text comes from, used in C(source) and in error messages. Default C(kernel-log).
    type: str
  strict:
    description:
      - When true, a malformed event line raises an error.
      - When false, it is an entry of C(errors) (kind C(parse), with its line) and the other events are returned.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Xid codes logged this boot
  ansible.builtin.command: journalctl -k -o short-iso --no-pager -q
  register: __klog
  changed_when: false

- name: Show each Xid with what it means
  ansible.builtin.debug:
    msg: "{{ item.code }} on {{ item.bus_id }}: {{ (item.code | gpuops.cluster.xid_info).name }}"
  loop: "{{ (__klog.stdout | gpuops.cluster.kernel_events).events | selectattr('kind', 'eq', 'xid') | list }}"

- name: Events of a saved log after a time, mapped to GPU indexes
  ansible.builtin.set_fact:
    __events: >-
      {{ (lookup('file', 'kernel.log') | gpuops.cluster.kernel_events(since='2026-12-02T09:00:00Z', gpus=__gpu.gpus)).events }}
"""

RETURN = r"""
_value:
  description:
    - The C(kernel) domain - C(source), C(boot_id) (always null here), C(since), C(events) (in log order - C(kind),
      C(code), C(bus_id), C(gpu_index), C(pid), C(process), C(message), C(timestamp), C(caused_by),
      C(recovery_action), C(severity), C(detail), C(line), C(raw)), C(events_dropped) and C(errors).
  type: dict
  sample:
    source: kernel-log
    boot_id: null
    since: null
    events:
      - kind: xid
        code: 48
        bus_id: "00000000:19:00.0"
        gpu_index: null
        pid: null
        process: null
        message: An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x12bac1c3e0 partition 2, subpartition 1.
        timestamp: "2024-11-15T12:02:03.470068+00:00"
        caused_by: null
        recovery_action: null
        severity: null
        detail: {}
        line: 11
        raw: "2024-11-15T12:02:03,470068+00:00 NVRM: Xid (PCI:0000:19:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable ..."
    events_dropped: 0
    errors: []
"""

from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.kernel_events import DEFAULT_MAX_EVENTS
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _filters
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import plain

NAME = "kernel_events"


def _gpus(value: Any) -> Optional[List[Dict[str, Any]]]:
    if value is None:
        return None
    value = plain(value)
    if not isinstance(value, list) or not all(isinstance(g, dict) for g in value):
        raise _filters.fail(NAME, "gpus must be a list of GPU records (index, bus_id)")
    return value


def kernel_events(
    data: Any,
    since: Optional[str] = None,
    gpus: Any = None,
    max_events: Any = DEFAULT_MAX_EVENTS,
    ref_time: Optional[str] = None,
    source: Optional[str] = None,
    strict: Any = True,
) -> Dict[str, Any]:
    """Kernel log text -> the kernel domain (docs/facts.md)."""
    text = _filters.text_arg(NAME, data, "a kernel log (dmesg or journalctl -k)")
    _filters.time_option(NAME, "since", since)
    ref = _filters.time_option(NAME, "ref_time", ref_time)
    limit = _filters.int_option(NAME, "max_events", max_events)
    records = _gpus(gpus)
    return _filters.parse_filter(
        NAME, text, source, strict, lambda t, src: _filters.kernel_domain(t, src, since, records, limit, ref), "events"
    )


class FilterModule:
    """gpuops.cluster parser filter: kernel_events."""

    def filters(self) -> Dict[str, Any]:
        return {NAME: kernel_events}
