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
    type: path
    required: true
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
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cluster.plugins.module_utils import _livecapture


def main():
    module = AnsibleModule(
        argument_spec={
            "dest": {"type": "path", "required": True},
            "timeout": {"type": "float", "default": 30},
            "kernel_since": {"type": "str"},
            "sysfs_root": {"type": "path", "default": "/"},
            "dcgm_level": {"type": "int"},
            "mounts": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    p = module.params
    res = _livecapture.capture(
        timeout=p["timeout"],
        kernel_since=p["kernel_since"],
        sysfs_root=p["sysfs_root"],
        dcgm_level=p["dcgm_level"],
        node_options={"mounts": p["mounts"]},
    )
    try:
        tree = _livecapture.read_tree(res["dir"])
    except (OSError, ValueError) as exc:
        module.fail_json(msg="cannot read the capture back: %s" % exc)
    finally:
        _livecapture.remove(res["dir"])
    module.exit_json(changed=False, tree=tree, meta=res["meta"])


if __name__ == "__main__":
    main()
