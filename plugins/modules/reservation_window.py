# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/reservation_window.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: reservation_window
short_description: Record a Slurm maintenance reservation in the service ledger as a maintenance window
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Used by the C(gpuops.cluster.change_guard) role's C(reservation) entry point after it creates or deletes a
    reservation, so that the nodes the reservation holds count as planned downtime in the service report
    (C(docs/service.md) "Planned downtime").
  - V(present) reads the reservation from O(text) (C(scontrol show reservation <name>)); a C(MAINT) reservation
    becomes the window C(slurm:<name>) over its C(StartTime) to C(EndTime) and its nodes (Slurm NodeNames mapped
    back to inventory names through C(gpuops_slurm_node_name)); recording it again is a no-op, a new C(EndTime)
    or node list updates it. A reservation without the C(MAINT) flag is left out (said so).
  - V(absent) (the guard deleted it) ends the window at the deletion time; a window that had not begun is removed.
  - Writes to the store of O(state_dir) / O(db_url) (the role passes C(gpuops_state_dir) / C(gpuops_db_url));
    without either it records nothing and says so. Nothing is written in check mode.
  - Text that is not scontrol's, or a C(MAINT) reservation without a start, an end after it, or nodes, fails with
    the reason.
options:
  name:
    description: The reservation's name (C(ReservationName)).
    type: str
    required: true
  state:
    description: V(present) after the reservation was created (or found), V(absent) after it was deleted.
    type: str
    choices: [present, absent]
    default: present
  text:
    description: The output of C(scontrol show reservation <name>); required with V(present).
    type: str
  timezone:
    description: The time zone scontrol printed the times in (the role runs it with C(TZ=UTC)); an IANA name.
    type: str
    default: UTC
  now:
    description: The time of the change (UTC epoch seconds); default the controller's clock.
    type: float
  state_dir:
    description: The embedded store's directory (the role passes C(gpuops_state_dir)).
    type: path
  db_url:
    description: A PostgreSQL store (the role passes C(gpuops_db_url)).
    type: str
seealso:
  - module: gpuops.cluster.change_window
"""

EXAMPLES = r"""
- name: Read the reservation in UTC
  ansible.builtin.command:
    argv: [scontrol, show, reservation, gpuops-maint]
  environment:
    TZ: UTC
  register: resv
  changed_when: false

- name: Record it as a maintenance window
  gpuops.cluster.reservation_window:
    name: gpuops-maint
    text: "{{ resv.stdout }}"
    state_dir: /var/lib/gpuops/state
"""

RETURN = r"""
msg:
  description: What was recorded.
  returned: always
  type: str
  sample: "window slurm:gpuops-maint written"
recorded:
  description: Whether the ledger holds the window (or its end) after the step.
  returned: always
  type: bool
window:
  description: The maintenance_windows row (times in UTC epoch seconds); None for V(absent) or a reservation left out.
  returned: always
  type: dict
  sample: {"window_id": "resv-3f2a...", "name": "slurm:gpuops-maint", "starts_at": 1789174800.0,
           "ends_at": 1789189200.0, "scope": {"hosts": ["gpu-node-01", "gpu-node-02"]}}
ended:
  description: Windows of the reservation that were open and now end at the deletion time (V(absent)).
  returned: with V(absent)
  type: int
removed:
  description: Windows of the reservation that had not begun and were removed (V(absent)).
  returned: with V(absent)
  type: int
"""
