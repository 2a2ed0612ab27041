# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/power_outcome.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: power_outcome
short_description: Turn a BMC power request's registered results into each node's power state and error
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The logic of the C(gpuops.cluster.replace) role's power step (C(docs/replace.md)); the role requests the state
    and reads it back, this action says what the registered results mean. Pure computation on the controller - it
    contacts no BMC and writes nothing.
  - Redfish - a read-back with HTTP 200 gives the state (lower case); the error is null when it is O(want), else the
    request's own message, the BMC's C(@Message.ExtendedInfo) words first.
  - IPMI - the read-back runs C(community.general.ipmi_power) in check mode, which is C(changed) while the node is not
    there yet; the node is then in the other state, with the request's message.
  - A read-back without an answer has state null and the module's message (or C(BMC did not answer)); a node of
    O(nodes) not in O(with_bmc) has C(bmc=false) and the error C(no BMC configured).
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
  - gpuops.cluster.common.attributes_controller
attributes:
  check_mode:
    details: The same answer.
  diff_mode:
    support: none
options:
  want:
    description: The power state requested (C(replace_power_state)).
    type: str
    required: true
    choices: ["on", "off"]
  nodes:
    description: The nodes the step was asked to power (C(replace_power_nodes)), in order.
    type: list
    elements: str
    required: true
  with_bmc:
    description: The nodes sent to Redfish or IPMI; the others of O(nodes) have no BMC.
    type: list
    elements: str
    default: []
  redfish_set:
    description: The registered loop of C(community.general.redfish_command) (the request).
    type: raw
    default: {}
  redfish_get:
    description: The registered loop of C(ansible.builtin.uri) reading C(/redfish/v1/Systems/<id>) back.
    type: raw
    default: {}
  ipmi_set:
    description: The registered loop of C(community.general.ipmi_power) (the request).
    type: raw
    default: {}
  ipmi_get:
    description: The registered loop of C(community.general.ipmi_power) in check mode (the read-back).
    type: raw
    default: {}
"""

EXAMPLES = r"""
- name: Power | what the BMCs did
  gpuops.cluster.power_outcome:
    want: "{{ replace_power_state }}"
    nodes: "{{ replace_power_nodes }}"
    with_bmc: "{{ __replace_pw_redfish + __replace_pw_ipmi }}"
    redfish_set: "{{ __replace_pw_rf_set }}"
    redfish_get: "{{ __replace_pw_rf_get }}"
    ipmi_set: "{{ __replace_pw_ipmi_set }}"
    ipmi_get: "{{ __replace_pw_ipmi_get }}"
  register: __replace_pw_outcome
"""

RETURN = r"""
result:
  description: Node to C({bmc, state, error}) - Redfish nodes, then IPMI nodes, then the nodes without a BMC
    (C(replace_power_result)).
  returned: always
  type: dict
  sample: {gpu-node-03: {bmc: true, state: "on", error: "Unspecified error (HTTP Error 400 ...)"},
           gpu-node-04: {bmc: false, state: null, error: no BMC configured}}
unconfirmed:
  description: The nodes whose state is not O(want), in the order of RV(result).
  returned: always
  type: list
  elements: str
  sample: [gpu-node-03, gpu-node-04]
message:
  description: The nodes not confirmed, each with its state (C(unknown) when none) and the BMC's error, as the
    sample shows; empty when every node is confirmed.
  returned: always
  type: str
  sample: "power off not confirmed: gpu-node-03 on - BMC: Unspecified error; gpu-node-04 unknown - BMC: no BMC configured"
"""
