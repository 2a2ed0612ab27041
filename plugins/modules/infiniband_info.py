#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: infiniband_info
short_description: InfiniBand / RoCE HCA, port and error-counter facts from sysfs, ibstat or a capture directory
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Returns the C(ib) domain of the facts schema (C(docs/facts.md)) - per HCA its name, type, board id, firmware
    and node GUID; per port its state, physical state, rate (Gb/s and the width/speed label), link layer
    (C(InfiniBand), or C(Ethernet) for RoCE), LID, SM LID, port GUID and every error counter of C(counters/) and
    C(hw_counters/).
  - Counters that sit at their 8-bit, 4-bit or 16-bit ceiling (C(link_downed) 255, C(local_link_integrity_errors)
    15, ...) are listed in C(saturated) - their value means "at least". C(collected_at) and C(boot_id) let a
    caller compute counter rates against an earlier reading (C(docs/infiniband.md)); the module never clears
    counters.
  - Live, C(/sys/class/infiniband) is read first (in a child process killed after O(timeout), reading only known
    attribute paths, never following the C(device)/C(subsystem) link loops); C(ibstat) is the fallback.
  - With O(capture_dir), C(sys/class/infiniband/...) in the capture is read, else C(infiniband-sysfs.txt) (the
    same attributes as one listing, what M(gpuops.cluster.capture) writes), else C(ibstat.txt), else
    C(ibstatus.txt). An C(ibstat) that died with C(ibpanic) keeps every HCA it printed and adds an error record.
  - The module only reads; it never changes the node.
extends_documentation_fragment:
  - gpuops.cluster.common
  - gpuops.cluster.common.attributes_info
options:
  sysfs_root:
    description: Root under which C(sys/class/infiniband) and C(proc/sys/kernel/random/boot_id) are read.
    type: path
    default: /
  ibstat_path:
    description: The ibstat command (a name looked up on C(PATH), or a path), used when sysfs lists no HCA.
    type: str
    default: ibstat
requirements:
  - infiniband-diags (C(ibstat)) on the managed node for the fallback (optional)
seealso:
  - module: gpuops.cluster.node_info
"""

EXAMPLES = r"""
- name: IB facts of the node
  gpuops.cluster.infiniband_info:
  register: ib_facts

- name: Every InfiniBand port is up
  ansible.builtin.assert:
    that: >-
      ib_facts.ib.hcas | map(attribute='ports') | flatten
      | selectattr('link_layer', 'equalto', 'InfiniBand')
      | rejectattr('state', 'equalto', 'ACTIVE') | list | length == 0

- name: Analyse a saved capture on the controller
  gpuops.cluster.infiniband_info:
    capture_dir: ./captures/gpu-node-07/20261202T100000Z
  delegate_to: localhost
"""

RETURN = r"""
ib:
  description: The C(ib) domain of the facts schema (C(docs/facts.md)).
  returned: always
  type: dict
  sample:
    source: sysfs
    collected_at: 1796205600.0
    boot_id: 3b0fca2e-5c0e-4c1f-9a52-0d9d6e0f1a11
    hcas:
      - name: mlx5_0
        ca_type: MT4129
        board_id: MT_0000000838
        fw_version: "28.41.1000"
        node_guid: "0x946dae0300cde72c"
        serial: null
        ports:
          - port: 1
            state: ACTIVE
            phys_state: LinkUp
            rate_gbps: 400.0
            rate_label: 400 Gb/sec (4X NDR)
            width: 4X
            speed: NDR
            link_layer: InfiniBand
            lid: 75
            sm_lid: 334
            port_guid: "0x946dae0300cde72c"
            counters: {symbol_error: 0, link_downed: 255, link_error_recovery: 0, port_rcv_errors: 14,
                       local_link_integrity_errors: 0, excessive_buffer_overrun_errors: 15, port_xmit_discards: 0,
                       rnr_nak_retry_err: 0, local_ack_timeout_err: 0}
            saturated: [excessive_buffer_overrun_errors, link_downed]
    errors: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import boundary, collector_spec, pick
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.ib import DOMAIN, collect


def main():
    spec = collector_spec(sysfs_root={"type": "path", "default": "/"}, ibstat_path={"type": "str", "default": "ibstat"})
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    ib = boundary(
        DOMAIN,
        collect,
        {"collected_at": None, "boot_id": None, "hcas": []},
        **pick(p, "capture_dir", "sysfs_root", "ibstat_path", timeout=max(p["timeout"], 0.1)),
    )
    module.exit_json(changed=False, ib=ib)


if __name__ == "__main__":
    main()
