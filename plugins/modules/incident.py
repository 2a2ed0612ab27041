# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/incident.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: incident
short_description: Move an incident's clocks in the service ledger, or list the open incidents
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The operator's incident command (C(docs/service.md)); the playbook C(gpuops.cluster.incident) wraps it.
  - Takes one step on one incident of the service ledger (C(docs/store.md)) and records who took it, or lists the
    open incidents with their SLA clocks (respond, onsite, locate, restore, plan) against the policy's C(sla) targets.
  - Steps are idempotent (a step already taken changes nothing and says so) and taken in order (locate, mitigate,
    restore and close need an acknowledged incident, close needs a restored one); a step out of order, an unknown
    incident or a missing review is refused with the reason.
  - Closing an incident of a severity in C(sla.review_required) (P0, P1) needs the review (cause, fix, change_ref).
  - Loads the audit trail's new records first, so that isolations and repairs the roles made have moved the clocks.
  - Outside text (causes, notes, review) is stored as data, never templated.
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
  - gpuops.cluster.common.attributes_controller
attributes:
  check_mode:
    details: Nothing is written; the result says what the step would change.
  diff_mode:
    support: none
options:
  step:
    description: The step, or V(list) for the open incidents and their clocks.
    type: str
    required: true
    choices: [list, acknowledge, onsite, locate, plan, mitigate, restore, close, note]
  incident:
    description: The incident id (C(INC-YYYYMMDD-NNNN), full match). Required for a step.
    type: str
  by:
    description: Who takes the step (recorded on the incident's event). Required for a step.
    type: str
  cause:
    description: The cause (required for V(locate)), or the note's text (required for V(note)); optional otherwise.
    type: str
  review:
    description:
      - The post-incident review, for V(close). C(cause), C(fix) and C(change_ref) (a policy version or override
        reference) are required for P0/P1; C(checks) lists the check ids the review changed (a list or a
        comma-separated string).
    type: dict
    default: {}
  state_dir:
    description: The state directory of the embedded store (C(gpuops_state_dir)); its audit log is loaded first.
    type: path
  db_url:
    description: The shared store (PostgreSQL URL, C(gpuops_db_url)).
    type: str
  policy_overrides:
    description: Site policy overrides; their C(sla) block sets the targets (C(docs/service.md)).
    type: dict
    default: {}
seealso:
  - module: gpuops.cluster.inspect_cluster
"""

EXAMPLES = r"""
- name: Acknowledge an incident
  gpuops.cluster.incident:
    step: acknowledge
    incident: INC-20261203-0001
    by: alice
    state_dir: /var/lib/gpuops/state

- name: Close a P1 incident with its review
  gpuops.cluster.incident:
    step: close
    incident: INC-20261203-0001
    by: alice
    review:
      cause: GPU 3 fell off the bus (Xid 79) after a PCIe riser fault
      fix: riser replaced, GPU reseated
      change_ref: policy 2026.12-site3
      checks: [gpu.pcie]
    state_dir: /var/lib/gpuops/state

- name: The open incidents and their clocks
  gpuops.cluster.incident:
    step: list
    db_url: postgresql://gpuops@db01/gpuops
  register: open_incidents
"""

RETURN = r"""
msg:
  description: What the step did (C(would be:) in check mode), or the list's lines joined.
  returned: always
  type: str
  sample: "incident INC-20261203-0001 acknowledged"
lines:
  description: The message as lines (one per open incident for V(list)).
  returned: always
  type: list
  elements: str
  sample: ["INC-20261203-0001 P1 gpu-node-03 detected 2026-12-03T04:10:00Z: respond running due 2026-12-03T04:40:00Z"]
incident:
  description: The incident as it is after the step (times in UTC epoch seconds).
  returned: for a step
  type: dict
  sample: {"incident_id": "INC-20261203-0001", "severity": "P1", "state": "open", "acknowledged_at": 1764735000.0}
incidents:
  description: The open incidents with their clocks (C(clock), C(target), C(due), C(at), C(state), C(late_s)).
  returned: for V(list)
  type: list
  elements: dict
  sample: [{"incident_id": "INC-20261203-0001", "severity": "P1", "clocks": [{"clock": "respond", "state": "running"}]}]
review:
  description: The review recorded by V(close) (None when there is none).
  returned: for a step
  type: dict
  sample: {"cause": "riser fault", "fix": "riser replaced", "change_ref": "policy 2026.12-site3", "checks": ["gpu.pcie"]}
step:
  description: The step taken.
  returned: for a step
  type: str
  sample: acknowledge
"""
