# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/replace_parts.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: replace_parts
short_description: Part serials, replacement verification and the evidence bundle of a drain-and-replace
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The controller computations of the C(gpuops.cluster.replace) role (C(docs/replace.md)).
  - O(action=inventory) returns the part serials of a node's normalized facts (C(docs/facts.md)) - GPUs by bus
    id (and their UUIDs), HCAs (serial, else node GUID), PSUs, DIMMs, node/board/chassis serials, fan status.
  - O(action=verify) compares the serials O(before) the swap with those after (O(after), or the inventory of
    O(facts)) and returns the verdict C(replaced), C(not_replaced) or C(not_verifiable). A fan has no serial - it
    needs O(fan_confirmed) and clean fan sensors and SEL (O(bmc)).
  - O(action=manifest) writes the documents of O(write) (and C(serials.json) with O(write_serials)) into the
    evidence bundle O(root), then C(manifest.json) with the sha256 of every file and the serials. Nothing is
    written outside O(root). In check mode nothing is written; the manifest returned (and the diff) is the one
    over the files already there.
  - O(action=verify_manifest) re-hashes a bundle against its manifest.
  - Run it delegated to C(localhost).
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
options:
  action:
    description: What to compute.
    type: str
    choices: [inventory, verify, manifest, verify_manifest]
    required: true
  facts:
    description: The node's normalized facts (C(gpu), C(ib), C(bmc)); the serials are their inventory.
    type: dict
  bmc_remote:
    description: The node's C(bmc) facts read out of band (Redfish/IPMI from the controller), merged in.
    type: dict
  state_gpus:
    description: The controller state's C(gpu.gpus) of the node; fills the serial of a GPU that is not readable now.
    type: dict
  state_dir:
    description:
      - Without O(state_gpus), read the C(gpu.gpus) of O(host) from the controller state kept in this directory's
        store (C(gpuops.db); docs/state.md).
    type: path
  db_url:
    description: The store of the controller state when it is not the state directory's (C(gpuops_db_url)).
    type: str
  part:
    description: The failed part.
    type: str
    choices: [gpu, baseboard, hca, psu, dimm, fan, node]
  component:
    description: Which one - GPU bus id, HCA name, PSU id or DIMM id.
    type: str
  before:
    description: The serials before the swap (O(action=verify)).
    type: dict
  after:
    description: The serials after the swap; default the inventory of O(facts).
    type: dict
  fan_confirmed:
    description: The operator confirmed the fan swap (fans have no serial).
    type: bool
    default: false
  bmc:
    description: The C(bmc) facts whose fan sensors and SEL must be clean for a fan swap.
    type: dict
  root:
    description: The evidence bundle directory.
    type: path
  ticket:
    description: The replacement ticket (in the manifest).
    type: str
  host:
    description: The node (in the manifest).
    type: str
  serials:
    description: The serials for the manifest; default the inventory of O(facts).
    type: dict
  write:
    description: Documents to write as JSON into the bundle, relative path -> document; a null document is skipped.
    type: dict
    default: {}
  write_serials:
    description: Write the serials to C(serials.json) in the bundle as well.
    type: bool
    default: false
  extra:
    description: Keys added to the manifest (for example the drain reason).
    type: dict
    default: {}
seealso:
  - module: gpuops.cluster.replace_record
"""

EXAMPLES = r"""
- name: Evidence manifest (serials before the swap)
  gpuops.cluster.replace_parts:
    action: manifest
    root: /var/lib/gpuops/evidence/RMA-123/gpu-node-07
    ticket: RMA-123
    host: gpu-node-07
    part: gpu
    component: "00000000:9A:00.0"
    facts: "{{ node_facts }}"
    write_serials: true
  delegate_to: localhost
  register: bundle

- name: Was the GPU replaced?
  gpuops.cluster.replace_parts:
    action: verify
    part: gpu
    component: "00000000:9A:00.0"
    before: "{{ bundle.serials }}"
    facts: "{{ node_facts_after }}"
  delegate_to: localhost
  register: check

- name: Does the bundle still match its manifest?
  gpuops.cluster.replace_parts:
    action: verify_manifest
    root: /var/lib/gpuops/evidence/RMA-123/gpu-node-07
  delegate_to: localhost
"""

RETURN = r"""
serials:
  description: Serials by part (O(action=inventory) and O(action=manifest)).
  returned: when action is inventory or manifest
  type: dict
  sample: {gpu: {"00000000:9A:00.0": "1562920005886"}, hca: {mlx5_0: "0xa088c20300e1b1c2"}, psu: {}, dimm: {}}
verification:
  description: The comparison - C(verdict), C(reason), C(changed), C(unchanged), C(unknown) (serial keys), C(unexpected).
  returned: when action is verify
  type: dict
  sample: {verdict: replaced, reason: "gpu 00000000:9A:00.0: serial 1 -> 2", changed: ["00000000:9A:00.0"]}
verdict:
  description: C(replaced), C(not_replaced) or C(not_verifiable).
  returned: when action is verify
  type: str
  sample: replaced
reason:
  description: Why.
  returned: when action is verify
  type: str
  sample: "gpu 00000000:9A:00.0: serial 1562920005886 -> 1562920009999"
after:
  description: The serials after the swap.
  returned: when action is verify
  type: dict
  sample: {gpu: {"00000000:9A:00.0": "1562920009999"}}
path:
  description: The manifest's path.
  returned: when action is manifest
  type: str
  sample: /var/lib/gpuops/evidence/RMA-123/gpu-node-07/manifest.json
files:
  description: Number of files in the manifest.
  returned: when action is manifest
  type: int
  sample: 42
written:
  description: The files written (would be written, in check mode), relative to O(root).
  returned: when action is manifest
  type: list
  elements: str
  sample: [serials.json, manifest.json]
ok:
  description: The bundle matches its manifest.
  returned: when action is verify_manifest
  type: bool
  sample: true
missing:
  description: Files in the manifest that are gone.
  returned: when action is verify_manifest
  type: list
  elements: str
  sample: []
mismatched:
  description: Files whose sha256 changed.
  returned: when action is verify_manifest
  type: list
  elements: str
  sample: []
extra:
  description: Files not in the manifest.
  returned: when action is verify_manifest
  type: list
  elements: str
  sample: []
"""
