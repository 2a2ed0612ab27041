#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_info
short_description: Node basics - boot id, kernel, OS, memory, expected mounts, free space, NVIDIA services
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Returns the C(node) domain of the facts schema (C(docs/facts.md)) - hostname, kernel release, OS
    (C(/etc/os-release)), boot id, memory, the expected O(mounts) (present in C(/proc/self/mounts) and responsive),
    free space on the named O(filesystems), the state of the NVIDIA services an operator expects and the fabric
    manager version (which must equal the driver's; the health policy compares them).
  - A hung NFS or Lustre mount blocks C(statfs) in the kernel. The module never touches a mount point in its own
    process - every probe runs C(stat -f) in a child killed and abandoned after O(timeout), all probes in parallel -
    so a dead mount is C(responsive=false) in the result, not a hung play.
  - A service is running only on its own record. Where systemd runs the node and knows one of the service's units,
    C(systemctl show)'s C(ActiveState) decides (C(active) or C(reloading) is running; C(failed), C(inactive),
    C(activating) are not, whatever processes exist). Elsewhere (containers and test beds have no systemd, or no
    unit of that name is installed) the service's pid file, else a process whose C(/proc/<pid>/comm) is the
    daemon's name - and only the daemon counts - every uid of the process is root's (or the service's own account,
    C(nvidia-persistenced)), and its executable (C(/proc/<pid>/exe), else C(argv[0]) of a root process) is one of
    the daemon's paths (C(/usr/bin/nv-fabricmanager) and the like). A user's process named like a daemon never
    makes a service look healthy; C(detail) says what was passed over.
  - The fabric manager version comes from C(nv-fabricmanager --version), else the installed package
    (C(dpkg-query), then C(rpm)).
  - With O(capture_dir), C(node.json) (what this module returned when the capture was made) is read instead.
  - The module only reads; it never changes the node.
extends_documentation_fragment:
  - gpuops.cluster.common
  - gpuops.cluster.common.attributes_info
options:
  timeout:
    description:
      - Seconds each external tool (C(systemctl), C(nv-fabricmanager), C(dpkg-query), C(rpm)) and each mount probe
        may run before it is killed and abandoned.
      - A mount whose probe times out is C(responsive=false) (a finding for the policy); a timed-out tool is reported
        in C(errors) with kind C(timeout). The module still returns.
    type: float
    default: 10
  mounts:
    description:
      - Mount points that must be mounted and responsive. Each is a path, or a dict with C(path) and the expected
        C(fstype).
    type: list
    elements: raw
    default: []
  filesystems:
    description: Paths whose filesystem's free space is reported (C(free_pct), C(free_mib), C(size_mib)).
    type: list
    elements: str
    default: []
  services:
    description:
      - Services to check. Each is a name, or a dict with C(name) and optionally C(unit), C(process), C(pidfile),
        C(executable) (the daemon's paths; default - the process name in C(/usr/bin), C(/usr/sbin), C(/bin),
        C(/sbin)) and C(user) (accounts the daemon may run as; default C(root)), each a string or a list.
      - Known names map to their units, processes, pid files, executables and accounts (C(nvidia-dcgm) is the
        C(nv-hostengine) process).
      - Default - C(nvidia-persistenced), C(nvidia-fabricmanager), C(nvidia-dcgm). An empty list checks none.
    type: list
    elements: raw
seealso:
  - module: gpuops.cluster.infiniband_info
"""

EXAMPLES = r"""
- name: Node basics, with the shared filesystems that jobs need
  gpuops.cluster.node_info:
    mounts: [/home, {path: /lustre, fstype: lustre}]
    filesystems: [/, /var, /tmp]
    timeout: 10
  register: node_facts

- name: Fail when a shared filesystem hangs
  ansible.builtin.assert:
    that: node_facts.node.mounts | rejectattr('responsive', 'equalto', true) | list | length == 0

- name: Only the fabric manager
  gpuops.cluster.node_info:
    services: [nvidia-fabricmanager]
"""

RETURN = r"""
node:
  description: The C(node) domain of the facts schema (C(docs/facts.md)).
  returned: always
  type: dict
  sample:
    source: live
    hostname: gpu-node-01
    boot_id: 0b6c0d1e-5a1e-4a58-9a3e-4f5c3b2d1a00
    kernel: 6.1.0-18-amd64
    os: Debian GNU/Linux 12 (bookworm)
    memory_mib: 2063852
    mounts:
      - {path: /lustre, present: true, responsive: false, fstype: lustre, device: "10.0.0.5@o2ib:/fs1",
         free_pct: null, free_mib: null, size_mib: null, error: "not responding: statfs did not return within 10 s"}
    filesystems:
      - {path: /var, mount: /, fstype: ext4, responsive: true, free_pct: 41.2, free_mib: 79924, size_mib: 258019,
         error: null}
    services:
      nvidia-persistenced: {running: true, unit_state: active, pid: 2140, method: systemctl, detail: null}
      nvidia-fabricmanager: {running: true, unit_state: active, pid: 2188, method: systemctl, detail: null,
                             version: "535.161.08"}
      nvidia-dcgm: {running: false, unit_state: failed, pid: null, method: systemctl,
                    detail: "systemd: unit nvidia-dcgm is failed (failed, loaded); no process counts while systemd
                             knows the unit"}
    fabric_manager_version: "535.161.08"
    errors: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import boundary, collector_spec, pick
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.node import DOMAIN, collect


def main():
    spec = collector_spec(
        timeout=10,
        mounts={"type": "list", "elements": "raw", "default": []},
        filesystems={"type": "list", "elements": "str", "default": []},
        services={"type": "list", "elements": "raw"},
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    node = boundary(
        DOMAIN,
        collect,
        {"hostname": None, "boot_id": None, "mounts": [], "filesystems": [], "services": {}},
        **pick(p, "capture_dir", "mounts", "filesystems", "services", timeout=max(p["timeout"], 0.1)),
    )
    module.exit_json(changed=False, node=node)


if __name__ == "__main__":
    main()
