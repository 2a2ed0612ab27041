#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: kernel_events_info
short_description: Structured GPU, PCIe, NIC and memory events from the kernel log
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Reads the kernel log (C(journalctl -k -o short-iso), or C(dmesg --time-format=iso) when journalctl fails,
    or C(kernel.log) of a capture directory) and returns the C(kernel) domain of the facts schema.
  - Events are NVIDIA Xid (every known line format, redacted PCI ids, C(caused by previous Xid N), the new
    recovery action of Xid 154), NVSwitch SXid, "GPU has fallen off the bus" without an Xid (also multi-line),
    PCIe AER (corrected/uncorrected/fatal), mlx5 link up/down and insufficient slot power, machine checks and EDAC.
  - A line whose time cannot be placed (C(dmesg) seconds since boot, no prefix) gets C(timestamp=null).
extends_documentation_fragment:
  - gpuops.cluster.common
  - gpuops.cluster.common.attributes_info
options:
  since:
    description:
      - Lower bound of the log to read, passed to C(journalctl --since) (for example C(-2h) or C(2026-12-02 10:00:00)).
      - With dmesg or a capture directory only an ISO time filters; events without a time are kept.
      - Default the current boot.
    type: str
  gpus:
    description:
      - GPU facts (C(gpu_info)'s C(gpus), or a list of C(index)/C(bus_id)) used to set C(gpu_index) on events.
    type: list
    elements: dict
    default: []
  max_events:
    description: Keep at most this many events, the most recent (C(0) keeps all); C(events_dropped) says how many went.
    type: int
    default: 5000
"""

EXAMPLES = r"""
- name: Kernel events of the last two hours, mapped to GPU indexes
  gpuops.cluster.kernel_events_info:
    since: -2h
    gpus: "{{ gpu.gpus }}"
  register: kernel

- name: Analyse a saved capture on the controller
  gpuops.cluster.kernel_events_info:
    capture_dir: ./captures/gpu-node-07/20261202T100000Z
  delegate_to: localhost
"""

RETURN = r"""
kernel:
  description: The C(kernel) domain of the facts schema (C(docs/facts.md)).
  returned: always
  type: dict
  sample:
    source: journalctl
    boot_id: 0b6c0d1e-5a3f-4b8e-9d2c-7f1e2a3b4c5d
    since: null
    events:
      - kind: xid
        code: 79
        bus_id: "00000000:18:00.0"
        gpu_index: 0
        pid: null
        process: null
        message: GPU has fallen off the bus.
        timestamp: "2026-12-02T09:58:01+00:00"
        caused_by: null
        recovery_action: null
        severity: null
        detail: {}
        line: 42
        raw: "2026-12-02T09:58:01+0000 gpu-node-01 kernel: NVRM: Xid (PCI:0000:18:00): 79, ..."
    events_dropped: 0
    errors: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import boundary, collector_spec, pick
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.kernel_events import DOMAIN, collect


def main():
    spec = collector_spec(
        since={"type": "str"},
        gpus={"type": "list", "elements": "dict", "default": []},
        max_events={"type": "int", "default": 5000},
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    kernel = boundary(
        DOMAIN,
        collect,
        {"boot_id": None, "since": p["since"], "events": [], "events_dropped": 0},
        **pick(p, "capture_dir", "since", "gpus", "timeout", max_events=max(p["max_events"], 0)),
    )
    module.exit_json(changed=False, kernel=kernel)


if __name__ == "__main__":
    main()
