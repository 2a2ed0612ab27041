# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/restore_plan.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: restore_plan
short_description: Verify a configuration snapshot and list what a restore writes
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The first step of C(playbooks/restore.yml) (C(docs/backup.md)). Checks the snapshot's C(manifest.json) against
    its C(manifest.sha256), then re-hashes every object; a tampered or incomplete snapshot, or one of another node,
    fails the task naming the file, before anything is written.
  - Returns the files a restore writes back (node files marked restorable, with their object path, owner, group and
    mode) and the BIOS attributes of C(redfish/bios.json). Reads only; the same in check mode. Run it delegated to
    C(localhost).
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
options:
  backup_dir:
    description: The backup store (C(gpuops_backup_dir)).
    type: path
    required: true
  snapshot_id:
    description: The snapshot (C(gpuops_backup_id)).
    type: str
    required: true
  node:
    description: The node the snapshot must belong to.
    type: str
seealso:
  - module: gpuops.cluster.backup
"""

EXAMPLES = r"""
- name: Verify the snapshot before anything is written
  gpuops.cluster.restore_plan:
    backup_dir: /var/lib/gpuops/backups
    snapshot_id: 20261203T083801224091Z-gpu-node-01
    node: "{{ inventory_hostname }}"
  delegate_to: localhost
  register: plan
"""

RETURN = r"""
files:
  description: The files a restore writes (C(path), C(object), C(sha256), C(size), C(owner), C(group), C(mode)).
  returned: success
  type: list
  elements: dict
  sample: [{path: /etc/slurm/gres.conf, object: /var/lib/gpuops/backups/objects/04cd57..., mode: "0644", owner: root}]
bios:
  description: The BIOS attributes of the snapshot (null without a Redfish part).
  returned: success
  type: dict
  sample: {BootMode: Uefi}
verified:
  description: The verification (C(ok), C(files), C(bytes), C(problems)).
  returned: success
  type: dict
  sample: {ok: true, files: 12, bytes: 48213, problems: []}
node:
  description: The snapshot's node.
  returned: success
  type: str
  sample: gpu-node-01
created:
  description: When the snapshot was taken.
  returned: success
  type: str
  sample: "2026-12-03T08:38:01Z"
change_id:
  description: The change it was taken for.
  returned: success
  type: str
  sample: CHG-1234
refused:
  description: Whether the snapshot was refused.
  returned: always
  type: bool
  sample: false
seconds:
  description: How long the verification took.
  returned: success
  type: float
  sample: 0.012
"""
