#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: collect_info
short_description: Collect every GPU-node fact domain in one module call
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - One consolidated, read-only collection per node for the inspection - GPU (NVML or C(nvidia-smi)), kernel
    events, InfiniBand, BMC (in-band IPMI), Slurm's view of the node, node basics, and optionally DCGM diagnostics.
  - Each domain is collected by the same code as its own module (M(gpuops.cluster.gpu_info),
    M(gpuops.cluster.kernel_events_info), M(gpuops.cluster.infiniband_info), M(gpuops.cluster.bmc_info),
    M(gpuops.cluster.node_info)), so the result is the aggregate of C(docs/facts.md).
  - A tool that fails or hangs is reported in C(facts.errors) (the inspection turns it into a C(collector.error)
    finding); the module itself does not fail for it.
  - "Three live modes, one default. O(parse_on=controller) with O(capture_via=shell) (the default, and what the
    inspection role uses - C(inspect_parse_on), C(inspect_capture_via)): the node runs one POSIX shell script and
    no Python, the controller parses; the cheapest (below a ping on the 60-host bench, C(docs/performance.md),
    section \"Live modes, one default\"). O(parse_on=controller) with O(capture_via=python): the node runs
    M(gpuops.cluster.capture) - pick it for nodes whose tools may hang in the kernel (D state), which a shell cannot
    abandon, or nodes without coreutils C(timeout). O(parse_on=node): this module collects and parses on the
    node - pick it for nodes with pynvml where C(nvidia-smi -q -x) is slow (NVML is used only in this mode)."
  - O(result_format) only says how the facts come back; the inspection asks for V(capture) with
    O(parse_on=controller) and V(json) with O(parse_on=node).
extends_documentation_fragment:
  - gpuops.cluster.common
  - gpuops.cluster.common.attributes_info
  - gpuops.cluster.common.attributes_controller
options:
  domains:
    description: Fact domains to collect. Default - all but C(dcgm) live, all from a capture directory.
    type: list
    elements: str
    choices: [gpu, kernel, ib, bmc, dcgm, slurm, node]
  mounts:
    description: Mount points that must be present and responsive (probed in a child with the timeout).
    type: list
    elements: str
    default: []
  services:
    description: Services whose state to report (default - the NVIDIA services an operator expects).
    type: list
    elements: str
  kernel_since:
    description: Only read kernel messages since this time (a C(journalctl --since) value).
    type: str
  sysfs_root:
    description: Root under which C(/sys/class/infiniband) is read.
    type: path
    default: /
  use_nvml:
    description: Try NVML (pynvml) before C(nvidia-smi). Only with O(parse_on=node).
    type: bool
    default: true
  parse_on:
    description:
      - Where the node's evidence is parsed. V(node) - this module runs the tools and parses on the node (NVML
        first when pynvml is installed, see O(use_nvml)).
      - V(controller) - M(gpuops.cluster.capture) runs the same tools on the node and sends their output back; the
        action plugin parses it on the controller with the capture-directory collectors, in the task's worker
        process. The node then imports no parser (about half of a live collection's cost on the node,
        C(docs/performance.md)); GPUs are read with C(nvidia-smi -q -x) (NVML is not used), the facts say
        C(parsed_on=controller), and C(mode) stays C(live). The default, and what the inspection uses by default
        (role variable C(inspect_parse_on), inventory variable C(gpuops_parse_on)).
      - Ignored with O(capture_dir) (always read where the task runs).
    type: str
    choices: [node, controller]
    default: controller
  capture_via:
    description:
      - How the node runs its tools with O(parse_on=controller).
      - V(shell) - C(/bin/sh) runs one POSIX script on the node, sent on its stdin (one command over the
        connection, as a pipelined module is sent; no Python on the node). It makes the same tool calls as
        M(gpuops.cluster.capture), each under coreutils C(timeout) (a tool that hangs is killed after O(timeout)
        seconds), and sends their output back between markers that carry a token chosen for the run; the
        controller turns it into the files M(gpuops.cluster.capture) would have made (C(node.json) by the node
        collector itself, replaying what the node read and ran). A ping-sized cost per node (C(docs/performance.md),
        section "Live path"). The node needs C(sh), C(grep), C(mktemp) and C(timeout) (coreutils); with become the
        script runs as the become user. A node whose tools hang in the kernel (D state) holds the command until
        the task's C(timeout) ends it; the node is then unknown, never judged.
        The default, and what the inspection uses by default (role variable C(inspect_capture_via)).
      - V(python) - M(gpuops.cluster.capture) runs the tools from Python on the node (each abandoned after
        O(timeout) seconds even in D state, side by side in threads).
      - Ignored with O(parse_on=node) and with O(capture_dir).
    type: str
    choices: [shell, python]
    default: shell
  capture_max_bytes:
    description:
      - With O(capture_via=shell), the most the node's answer may hold, in bytes (default 64 MiB; a 8-GPU node
        sends about 0.2 MB). The node's script cuts its own output one byte past it (C(head -c), when the node has
        it), and an answer over it is not read - the task fails for that node with a message naming this option,
        which the inspection reports as a C(collector.error) for that node while the other nodes complete. The
        answer is parsed in one pass, so its cost grows with its length only.
      - ansible-core's connection reads the node's whole output before the action sees it, so a hostile node can
        still make that read large; what the collection keeps and parses is bounded by this option.
      - Per node with the inventory variable C(gpuops_capture_max_bytes) (role variable
        C(inspect_capture_max_bytes)). Ignored with O(capture_via=python), O(parse_on=node) and O(capture_dir).
    type: int
    default: 67108864
  result_format:
    description:
      - C(dict) returns the facts as C(facts); C(json) returns them as one compact JSON text in C(facts_json).
      - C(json) is what the inspection uses - ansible-core copies, converts and tags a nested result several times
        on the controller (for the callbacks, the registered variable, the host variables), which costs about as
        much controller time per node as the module run itself; one string is passed through as it is, and
        M(gpuops.cluster.inspect_cluster) decodes it once (docs/performance.md).
      - C(capture) (only with O(parse_on=controller)) returns the node's evidence unparsed, as RV(capture_packed),
        for M(gpuops.cluster.inspect_cluster) to parse in its workers (what the inspection uses - the task's worker
        process then imports no parser either).
    type: str
    choices: [dict, json, capture]
    default: dict
"""

EXAMPLES = r"""
- name: Collect everything the inspection needs
  gpuops.cluster.collect_info:
    mounts: [/home, /lustre]
    timeout: 20
  register: node

- name: Parse on the node (NVML through pynvml, for nodes where nvidia-smi -q -x is slow)
  gpuops.cluster.collect_info:
    parse_on: node
    result_format: json
  register: node

- name: Analyse saved evidence instead of the live node
  gpuops.cluster.collect_info:
    capture_dir: /srv/tickets/T-1234/gpu-node-07
  delegate_to: localhost
"""

RETURN = r"""
facts_json:
  description: The same facts as one compact JSON text.
  returned: when O(result_format=json)
  type: str
  sample: '{"schema":"gpuops.facts/v1","mode":"live","hostname":"gpu-node-07"}'
capture_packed:
  description: The node's capture (the tool outputs, C(capture.json) included), packed by M(gpuops.cluster.capture).
  returned: when O(result_format=capture)
  type: str
  sample: eJyrVkrOz0nNS84vSlGyUlAqS8wpTVWqBQBbQgfB
parsed_on:
  description: V(controller) when the evidence was (or is to be) parsed on the controller.
  returned: when O(parse_on=controller)
  type: str
  sample: controller
facts:
  description: The aggregate facts of the node (the facts schema, see the collection's C(docs/facts.md)).
  returned: when O(result_format=dict) (the default)
  type: dict
  sample:
    schema: gpuops.facts/v1
    mode: live
    hostname: gpu-node-07
    collected_at: "2026-12-02T10:00:00Z"
    evidence_time: "2026-12-02T10:00:00Z"
    evidence_time_source: live collection
    gpu: {source: nvidia-smi-xml, count: 8, gpus: [], errors: []}
    ib: {source: sysfs, hcas: [], errors: []}
    errors: []
    timings: {gpu: 0.41, ib: 0.01}
"""

import json

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import ALL_DOMAINS, collect_all


def main():
    module = AnsibleModule(
        argument_spec={
            "capture_dir": {"type": "path"},
            "timeout": {"type": "float", "default": 30},
            "domains": {"type": "list", "elements": "str", "choices": list(ALL_DOMAINS)},
            "mounts": {"type": "list", "elements": "str", "default": []},
            "services": {"type": "list", "elements": "str"},
            "kernel_since": {"type": "str"},
            "sysfs_root": {"type": "path", "default": "/"},
            "use_nvml": {"type": "bool", "default": True},
            "result_format": {"type": "str", "choices": ["dict", "json", "capture"], "default": "dict"},
            # handled by the action plugin (controller: gpuops.cluster.capture runs here instead of this module)
            "parse_on": {"type": "str", "choices": ["node", "controller"], "default": "controller"},
            "capture_via": {"type": "str", "choices": ["shell", "python"], "default": "shell"},
            "capture_max_bytes": {"type": "int", "default": 67108864},
        },
        supports_check_mode=True,
    )
    p = module.params
    if p["result_format"] == "capture":
        module.fail_json(msg="result_format=capture needs parse_on=controller (the node parses nothing then)")
    options = {
        "gpu": {"use_nvml": p["use_nvml"]},
        "kernel": {"since": p["kernel_since"]},
        "ib": {"sysfs_root": p["sysfs_root"]},
        "bmc": {"mode": "inband"},
        "node": {"mounts": p["mounts"], "services": p["services"]},
    }
    facts = collect_all(capture_dir=p["capture_dir"], domains=p["domains"], timeout=p["timeout"], options=options)
    if p["result_format"] == "json":
        module.exit_json(changed=False, facts_json=json.dumps(facts, separators=(",", ":")))
    module.exit_json(changed=False, facts=facts)


if __name__ == "__main__":
    main()
