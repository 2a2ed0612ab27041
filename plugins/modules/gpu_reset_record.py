# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/gpu_reset_record.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_reset_record
short_description: Record verified GPU resets in the controller state directory
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The controller half of the C(gpuops.cluster.gpu_reset) role. After a reset that verified (the GPU is readable
    again, no remap pending), each GPU in O(gpus) is recorded in the host's state document in the controller state
    (the store C(<state_dir>/gpuops.db), or O(db_url)) - an entry in C(resets) and a clear marker in C(clears) -
    in one transaction under the host's database lock (C(docs/state.md)).
  - The policy's clear rule C(needs_reset_record) then clears that GPU's reset-class faults raised before the
    reset, and kernel events of that GPU before it stop counting. Record only resets that succeeded.
  - In check mode nothing is written; the result shows what would be recorded.
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
options:
  state_dir:
    description: The controller state directory (C(gpuops_state_dir)).
    type: path
    required: true
  db_url:
    description:
      - The store's database URL (C(gpuops_db_url), C(docs/store.md)).
      - When set, the host states are kept in that database instead of O(state_dir),
        shared by every controller and AWX execution node (C(docs/state.md)).
    type: str
  host:
    description: The node (inventory hostname).
    type: str
    required: true
  gpus:
    description: The GPUs reset.
    type: list
    elements: dict
    required: true
    suboptions:
      bus_id:
        description: PCI bus id (as C(gpuops.cluster.gpu_info) reports it).
        type: str
        required: true
      serial:
        description: Board serial, when known (a clear then needs the same serial).
        type: str
  time:
    description: When the reset happened (ISO 8601 or epoch seconds); default now (UTC).
    type: str
  lock_timeout:
    description: Seconds to wait for the host's state lock.
    type: float
    default: 30
"""

EXAMPLES = r"""
- name: Record the reset
  gpuops.cluster.gpu_reset_record:
    state_dir: /var/lib/gpuops-controller
    host: "{{ inventory_hostname }}"
    gpus:
      - {bus_id: "00000000:18:00.0", serial: "1654922008561"}
  delegate_to: localhost
"""

RETURN = r"""
recorded:
  description: Number of GPUs recorded.
  returned: always
  type: int
  sample: 1
path:
  description: Where the host's state document is (the store and the host).
  returned: always
  type: str
  sample: sqlite:////var/lib/gpuops-controller/gpuops.db host_state[gpu-node-03]
resets:
  description: The entries recorded.
  returned: always
  type: list
  elements: dict
  sample: [{bus_id: '00000000:18:00.0', serial: '1654922008561', time: '2026-12-02T10:00:00Z'}]
diff:
  description: The host's resets and clears before and after (with C(--diff)).
  returned: diff mode
  type: dict
  sample: {before: {resets: [], clears: {}}, after: {resets: [], clears: {}}}
"""
