# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/leak_assess.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: leak_assess
short_description: Coolant-leak reading, leak-domain scope and run result on the controller
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The decisions of the C(gpuops.cluster.leak_response) role (C(docs/leak.md)).
  - O(action=detect) reads a node's C(bmc) facts - C(asserted) (a Redfish leak detector C(Critical), an asserted
    IPMI leak sensor, a SEL or Redfish-log leak event not deasserted since), C(warning), C(clear) or
    C(unreadable). Coolant flow, pressure, level and temperature sensors are listed under C(cooling); they are
    never a leak.
  - O(action=assess) adds the scope - the leak domain of O(source) (C(gpuops_leak_domain), else C(gpuops_rack),
    from O(inventory) or O(domains)/O(racks)), the targets (O(requested) outside it are refused) - and one P0
    guard finding per target when the leak is asserted.
  - O(action=finish) builds the run result from the reading, the scope, the power readings (a node not confirmed
    off is a P0 C(power_off_unconfirmed)) and the nodes Slurm took out, and writes it to
    C(<state_dir>/leak/<alert id>.json) (0600, atomically) when O(state_dir) is set. Changed when that file
    changes; in check mode nothing is written.
  - Run it delegated to C(localhost).
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
options:
  action:
    description: The reading alone (V(detect)), the reading with its scope (V(assess)), or the run result (V(finish)).
    type: str
    choices: [assess, finish, detect]
    required: true
  alert_id:
    description: The alert id (recorded in every finding; names the result file).
    type: str
  source:
    description: The inventory host whose leak sensor alarms.
    type: str
  bmc:
    description: The source's C(bmc) facts (O(action=detect), O(action=assess)).
    type: dict
    default: {}
  inventory:
    description: Host -> its vars (C(gpuops_leak_domain), C(gpuops_rack)).
    type: dict
    default: {}
  domains:
    description: Host -> C(gpuops_leak_domain) (merged into O(inventory)).
    type: dict
    default: {}
  racks:
    description: Host -> C(gpuops_rack) (merged into O(inventory)).
    type: dict
    default: {}
  requested:
    description: Nodes to power off; empty means every node of the leak domain.
    type: list
    elements: str
    default: []
  reading:
    description: The reading of O(action=assess) (O(action=finish)).
    type: dict
  scope:
    description: The scope of O(action=assess) (O(action=finish)).
    type: dict
  power:
    description: Host -> C({state, error, bmc}), the power state read back after the power-off.
    type: dict
  slurm_down:
    description: Nodes Slurm took out of service.
    type: list
    elements: str
    default: []
  state_dir:
    description: The controller state directory; the result goes to C(leak/<alert id>.json). Unset writes nothing.
    type: path
  ticket:
    description: The ticket recorded in the result (default the alert id).
    type: str
seealso:
  - module: gpuops.cluster.bmc_info
"""

EXAMPLES = r"""
- name: Leak verdict, leak domain and targets
  gpuops.cluster.leak_assess:
    action: assess
    alert_id: "{{ alert_id }}"
    source: gpu-node-07
    bmc: "{{ bmc_read.bmc }}"
    domains: {gpu-node-07: cdu-a, gpu-node-08: cdu-a, gpu-node-09: cdu-b}
  delegate_to: localhost
  register: leak

- name: Run result, written to the state directory
  gpuops.cluster.leak_assess:
    action: finish
    alert_id: "{{ alert_id }}"
    source: gpu-node-07
    reading: "{{ leak.reading }}"
    scope: "{{ leak.scope }}"
    power: {gpu-node-07: {state: "off", bmc: true}, gpu-node-08: {state: null, bmc: true, error: timeout}}
    slurm_down: [gpu-node-07, gpu-node-08]
    state_dir: /var/lib/gpuops
  delegate_to: localhost
"""

RETURN = r"""
reading:
  description: The leak reading - C(state), C(reason), C(asserted), C(warnings), C(readable), C(unreadable), C(cooling).
  returned: always
  type: dict
  sample: {state: asserted, reason: "leak asserted: Leak Detector (Critical)", asserted: [], cooling: []}
scope:
  description: C(source), C(domain), C(members), C(targets), C(out_of_scope).
  returned: when action is assess
  type: dict
  sample: {source: gpu-node-07, domain: cdu-a, members: [gpu-node-07, gpu-node-08], targets: [gpu-node-07, gpu-node-08],
           out_of_scope: []}
guard_findings:
  description: One P0 C(bmc.leak) finding per target when the leak is asserted (for the change guard).
  returned: when action is assess
  type: list
  elements: dict
  sample: [{id: "bmc.leak:asserted:A-1:gpu-node-07", severity: P0, host: gpu-node-07, action: emergency_shutdown}]
alert_id:
  description: The alert id.
  returned: when action is finish
  type: str
  sample: A-1
source:
  description: The alarming node.
  returned: when action is finish
  type: str
  sample: gpu-node-07
fired:
  description: The leak was asserted (the power-off path ran).
  returned: when action is finish
  type: bool
  sample: true
domain:
  description: The leak domain.
  returned: when action is finish
  type: str
  sample: cdu-a
targets:
  description: The nodes of the domain (empty when nothing fired).
  returned: when action is finish
  type: list
  elements: str
  sample: [gpu-node-07, gpu-node-08]
out_of_scope:
  description: Requested nodes refused (outside the domain).
  returned: when action is finish
  type: list
  elements: dict
  sample: []
slurm_down:
  description: Nodes Slurm took out of service.
  returned: when action is finish
  type: list
  elements: str
  sample: [gpu-node-07, gpu-node-08]
powered_off:
  description: Nodes confirmed off.
  returned: when action is finish
  type: list
  elements: str
  sample: [gpu-node-07]
unconfirmed:
  description: Nodes not confirmed off, with why (P0).
  returned: when action is finish
  type: list
  elements: dict
  sample: [{node: gpu-node-08, reason: timeout}]
findings:
  description: The run's findings (C(docs/findings.md)).
  returned: when action is finish
  type: list
  elements: dict
  sample: [{check: bmc.leak, code: power_off_unconfirmed, severity: P0, host: gpu-node-08}]
severity:
  description: The worst severity of the findings (null when none).
  returned: when action is finish
  type: str
  sample: P0
status:
  description:
    - The run's final state - C(done) (the domain confirmed off), C(incomplete) (a power-off not confirmed),
      C(refused) (sensor unreadable or only a warning - nothing powered off), C(no_action) (no leak).
  returned: when action is finish
  type: str
  sample: refused
decision:
  description: One line - what was decided and why.
  returned: when action is finish
  type: str
  sample: "nothing powered off: no readable leak sensor"
ticket:
  description: The ticket of the response (O(ticket), else the alert id).
  returned: when action is finish
  type: str
  sample: A-1
outcomes:
  description: Per-node outcomes in the run-outcome vocabulary (docs/leak.md) - C(outcome), C(detail), C(decision), C(error), C(slurm_state).
  returned: when action is finish
  type: dict
  sample: {gpu-node-07: {outcome: refused, detail: "leak sensor unreadable: no leak sensor; nothing powered off", decision: "refused: leak sensor unreadable"}}
path:
  description: Where the result was written (would be, in check mode).
  returned: when action is finish and state_dir is set
  type: str
  sample: /var/lib/gpuops/leak/A-1.json
"""
