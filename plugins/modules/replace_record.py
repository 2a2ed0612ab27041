# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/replace_record.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: replace_record
short_description: Open, advance, stop or show a drain-and-replace record on the controller
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - "The replacement record C(<state_dir>/replace/<ticket>-<host>.json) of the C(gpuops.cluster.replace) role
    (C(docs/replace.md)). Steps in order - C(opened), C(isolated), C(drained), C(evidence), C(powered_off),
    C(handed_over), then C(powered_on), C(node_up), C(verified), C(accepted), C(resumed), C(closed). A rerun
    continues from the first step not reached (RV(next))."
  - Every change happens under the state directory's lock and is written atomically (0600 in a 0700 directory).
  - O(action=open) creates the record, or continues one for the same part and component. O(phase=prepare) on a
    stopped record reopens it (power-off and every return step are forgotten, the swap is redone);
    O(phase=return) on a closed record changes nothing; O(phase=prepare) on a closed record fails (use a new
    ticket). A record for another part or component fails.
  - O(action=step) marks O(step) reached (steps must be reached in order; a step reached before is not recorded
    again). Keys C(before), C(after), C(verdict) and C(evidence) of O(data) are kept at the record's top level,
    anything else with the step.
  - O(action=stop) records that the flow stopped before O(step) with O(reason) (the node stays drained).
  - O(action=show) only reads. In check mode nothing is written and the result shows the record as it would be.
  - Run it delegated to C(localhost).
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
options:
  action:
    description: What to do with the record.
    type: str
    choices: [open, step, stop, show]
    default: show
  state_dir:
    description: The controller state directory (C(gpuops_state_dir)).
    type: path
    required: true
  ticket:
    description: The replacement ticket (letters, digits, C(_.@:+-)).
    type: str
    required: true
  host:
    description: The node (inventory hostname; letters, digits, C(_.@:+-)).
    type: str
    required: true
  part:
    description: The failed part (O(action=open)).
    type: str
    choices: [gpu, baseboard, hca, psu, dimm, fan, node]
  component:
    description: Which one - GPU bus id, HCA name, PSU id or DIMM id (O(action=open)).
    type: str
  phase:
    description: The phase that opens the record (O(action=open)).
    type: str
    choices: [prepare, return]
  step:
    description: The step reached (O(action=step)) or the step the flow stopped before (O(action=stop)).
    type: str
    choices: [opened, isolated, drained, evidence, powered_off, handed_over, powered_on, node_up, verified,
              accepted, resumed, closed]
  reason:
    description: Why the flow stopped (O(action=stop)).
    type: str
  data:
    description:
      - What to record with the step or the stop.
      - With a stop, C(message) is the BMC's or tool's own text and C(left) the node's state afterwards
        (C(slurm_state), C(slurm_reason), C(power)); C(left) is kept at the top of the record.
    type: dict
    default: {}
  done_before:
    description: The steps reached before this run (for RV(outcome) C(already)).
    type: list
    elements: str
    default: []
seealso:
  - module: gpuops.cluster.replace_parts
"""

EXAMPLES = r"""
- name: Open (or continue) the replacement record
  gpuops.cluster.replace_record:
    action: open
    state_dir: /var/lib/gpuops
    ticket: RMA-123
    host: gpu-node-07
    part: gpu
    component: "00000000:9A:00.0"
    phase: prepare
  delegate_to: localhost
  register: rec

- name: Record the isolation
  gpuops.cluster.replace_record:
    action: step
    state_dir: /var/lib/gpuops
    ticket: RMA-123
    host: gpu-node-07
    step: isolated
    data: {via: gpuops.cluster.isolate}
  delegate_to: localhost

- name: Stop the flow (the part was not replaced)
  gpuops.cluster.replace_record:
    action: stop
    state_dir: /var/lib/gpuops
    ticket: RMA-123
    host: gpu-node-07
    step: verified
    reason: "part not replaced: serial unchanged"
  delegate_to: localhost
"""

RETURN = r"""
path:
  description: The record's path.
  returned: always
  type: str
  sample: /var/lib/gpuops/replace/RMA-123-gpu-node-07.json
record:
  description: The whole record after the action (as it would be, in check mode).
  returned: always
  type: dict
  sample: {schema: gpuops.replace/v1, ticket: RMA-123, host: gpu-node-07, part: gpu, status: open, step: isolated}
status:
  description: C(open), C(waiting) (with the technician), C(stopped) or C(closed).
  returned: always
  type: str
  sample: open
step:
  description: The last step reached.
  returned: always
  type: str
  sample: isolated
done:
  description: The steps reached, in order.
  returned: always
  type: list
  elements: str
  sample: [opened, isolated]
next:
  description: The first step not reached (null when closed).
  returned: always
  type: str
  sample: drained
outcome:
  description:
    - The node's outcome in the run-outcome vocabulary (docs/replace.md) for the phase in O(phase)
      (C(done), C(already), C(refused), C(failed), C(left_drained)), with C(detail), C(decision), C(error).
  returned: when there is a record
  type: dict
  sample: {outcome: left_drained, detail: "stopped at powered_off: power off not confirmed", error: "BMC: refused", decision: "prepare: stopped"}
stopped:
  description: Where and why the flow stopped (null unless stopped).
  returned: always
  type: dict
  sample: null
verdict:
  description: The replacement verification (null before C(verified)).
  returned: always
  type: dict
  sample: null
part:
  description: The part of the record.
  returned: always
  type: str
  sample: gpu
component:
  description: The component of the record.
  returned: always
  type: str
  sample: "00000000:9A:00.0"
"""
