#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: capture
short_description: Capture a live GPU node's evidence into a capture directory on the controller
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Runs the real tools on the node, each with a timeout (C(nvidia-smi -q -x), C(nvidia-smi -q), NVLink status and
    errors, the kernel log, C(ibstat), C(ipmitool sdr elist / sel elist / fru print / mc info), C(scontrol show node),
    optionally C(dcgmi diag -r N)), saves an allowlist of C(/sys/class/infiniband) attributes as one listing,
    C(infiniband-sysfs.txt) (never the whole tree),
    records node basics, and brings the capture directory back to the controller (C(docs/capture.md)).
  - Each file holds the tool's own output as printed, or its error message; C(capture.json) records every tool's
    exit code, stderr, duration and whether it timed out. Any collector reads the result with C(capture_dir).
  - Read-only on the node; the temporary directory on the node is removed.
options:
  dest:
    description:
      - Directory on the controller to write the capture into (created C(0700)). Existing files are replaced.
      - Files are written C(0600) and atomically (temporary file and rename), whatever the umask; a link already
        in O(dest) is replaced, never written through, and nothing is written outside O(dest).
      - Required (the action plugin refuses a task without it). Without O(dest) the module alone returns the files
        in RV(tree) and writes nothing, which is how M(gpuops.cluster.collect_info) with O(gpuops.cluster.collect_info#module:parse_on=controller)
        ships a live node's evidence to the controller.
    type: path
  timeout:
    description: Seconds each tool may run before it is killed and abandoned.
    type: float
    default: 30
  kernel_since:
    description: Kernel messages since this time (C(journalctl --since)); default the current boot.
    type: str
  sysfs_root:
    description: Root under which C(/sys/class/infiniband) is read.
    type: path
    default: /
  dcgm_level:
    description: Also run C(dcgmi diag -r LEVEL) (minutes at level 3 or 4; off by default).
    type: int
  mounts:
    description: Mount points node.json reports on (probed with the timeout).
    type: list
    elements: str
    default: []
  services:
    description: Services whose state node.json reports (default - the NVIDIA services an operator expects).
    type: list
    elements: str
  domains:
    description:
      - Capture only the evidence these fact domains read (C(docs/capture.md)), as an inspection needs it; default
        every file.
      - With O(domains), C(nvidia-smi -q) runs only when C(nvidia-smi -q -x) printed nothing or failed, and C(ibstat)
        only when the sysfs listing is empty (the collectors read the XML and the listing first).
    type: list
    elements: str
    choices: [gpu, kernel, ib, bmc, dcgm, slurm, node]
  pack:
    description:
      - Without O(dest) - return the files as one compressed string, RV(packed) (base64 of zlib-compressed JSON),
        instead of RV(tree). What the inspection uses (M(gpuops.cluster.collect_info) O(gpuops.cluster.collect_info#module:result_format=capture)).
    type: bool
    default: false
extends_documentation_fragment: [gpuops.cluster.common.attributes_info, gpuops.cluster.common.attributes_controller]
attributes:
  check_mode:
    details: Nothing on the node changes; the controller-side files are written in check mode too.
seealso:
  - module: gpuops.cluster.collect_info
"""

EXAMPLES = r"""
- name: Capture evidence for a ticket
  gpuops.cluster.capture:
    dest: "captures/{{ inventory_hostname }}/{{ now(utc=true, fmt='%Y%m%dT%H%M%SZ') }}"
    timeout: 20
"""

RETURN = r"""
dest:
  description: The capture directory on the controller.
  returned: always
  type: str
  sample: captures/gpu-node-07/20261202T100000Z
files:
  description: Files written (relative to dest).
  returned: always
  type: list
  elements: str
  sample: [nvidia-smi-q.xml, kernel.log, ibstat.txt, capture.json]
meta:
  description: The content of capture.json.
  returned: always
  type: dict
  sample: {"hostname": "gpu-node-07", "captured_at": "2026-12-02T10:00:00Z", "files": {"ibstat.txt": {"rc": 0}}}
tree:
  description: The capture's files, name to text (C(capture.json) included); only from the module called without O(dest).
  returned: when O(dest) is not given
  type: dict
  sample: {"ibstat.txt": "CA 'mlx5_0'\n...", "capture.json": "{...}"}
packed:
  description: RV(tree) as one string, base64 of zlib-compressed JSON.
  returned: when O(pack=true) and O(dest) is not given
  type: str
  sample: eJyrVkrOz0nNS84vSlGyUlAqS8wpTVWqBQBbQgfB
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import livecapture as _livecapture


def main():
    module = AnsibleModule(
        argument_spec={
            "dest": {"type": "path"},
            "domains": {
                "type": "list",
                "elements": "str",
                "choices": ["gpu", "kernel", "ib", "bmc", "dcgm", "slurm", "node"],
            },
            "timeout": {"type": "float", "default": 30},
            "kernel_since": {"type": "str"},
            "sysfs_root": {"type": "path", "default": "/"},
            "dcgm_level": {"type": "int"},
            "mounts": {"type": "list", "elements": "str", "default": []},
            "services": {"type": "list", "elements": "str"},
            "pack": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    res = _livecapture.capture_tree(
        timeout=p["timeout"],
        kernel_since=p["kernel_since"],
        sysfs_root=p["sysfs_root"],
        dcgm_level=p["dcgm_level"],
        node_options={"mounts": p["mounts"], "services": p["services"]},
        domains=p["domains"],
    )
    # held in memory, nothing written on the node; the action (with dest) writes it on the controller
    if p["pack"] and not p["dest"]:
        module.exit_json(changed=False, packed=_livecapture.pack(res["tree"]), meta=res["meta"])
    module.exit_json(changed=False, tree=res["tree"], meta=res["meta"])


if __name__ == "__main__":
    main()
