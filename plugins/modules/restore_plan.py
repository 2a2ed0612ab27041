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
    its C(manifest.sha256) and its signature C(manifest.sig) against the backup key (O(signing_key), else the key
    file), then re-hashes every object. A tampered, unsigned (C(gpuops.backup/v1), from before signing) or
    incomplete snapshot, one signed with another key, or one of another node, fails the task naming the file,
    before anything is written.
  - Every file marked restorable must be a plain file that the node's configured backup sources (O(sources),
    O(extra_paths)) produce - never a link - with its captured owner and group and a mode without setuid, setgid or
    sticky bits, within the backup limits; otherwise the whole snapshot is refused naming the files.
  - Returns the files a restore writes back (with a private staging copy of each verified object, O(stage), and
    the owner, group and mode to set) and the BIOS attributes of C(redfish/bios.json). Reads only the store; the
    same in check mode. Run it delegated to C(localhost).
  - O(sign_unsigned) - an intact unsigned snapshot that passes every other check is signed with this controller's
    key (not in check mode - run it with C(--check) first to see what it would restore).
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
  sources:
    description: The node's backup sources (as M(gpuops.cluster.config_snapshot) O(gpuops.cluster.config_snapshot#module:sources)); default the built-in list.
    type: list
    elements: dict
  extra_paths:
    description: The node's extra backup paths; default the variable C(gpuops_backup_extra_paths).
    type: list
    elements: str
  signing_key:
    description: The signing key; default the variable C(gpuops_backup_signing_key), else the key file.
    type: str
  key_file:
    description: The key file when no O(signing_key) - default E(GPUOPS_BACKUP_KEY_FILE), else C(~/.config/gpuops/backup.key). Never created here.
    type: path
  stage:
    description: Copy each verified object to a private staging directory (RV(staging)) and plan from the copies.
    type: bool
    default: true
  sign_unsigned:
    description: Sign an intact unsigned (C(gpuops.backup/v1)) snapshot that passes every other check with this controller's key.
    type: bool
    default: false
  max_entry_bytes:
    description: The most bytes one restorable file may hold (the backup's limit, C(backup_max_entry_bytes)).
    type: int
    default: 8388608
  max_snapshot_bytes:
    description: The most bytes all restorable files may hold.
    type: int
    default: 67108864
  max_entries:
    description: The most restorable files.
    type: int
    default: 1000
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
  description: The files a restore writes (C(path), C(object) - the staged copy, C(sha256), C(size), C(owner), C(group), C(mode)).
  returned: success
  type: list
  elements: dict
  sample: [{path: /etc/slurm/gres.conf, object: /tmp/gpuops-restore-x1/0000-gres.conf, mode: "0644", owner: root, group: root}]
staging:
  description: The private staging directory of the verified objects (null without O(stage)); the restore removes it.
  returned: success
  type: str
  sample: /tmp/gpuops-restore-x1
unsigned:
  description: The snapshot was an unsigned legacy one (planned with O(sign_unsigned)).
  returned: success
  type: bool
  sample: false
signed_now:
  description: With O(sign_unsigned), the id of the key that has just signed the legacy snapshot.
  returned: when signed
  type: str
  sample: 3f9c2a1b7d5e4c60
bios:
  description: The BIOS attributes of the snapshot (null without a Redfish part).
  returned: success
  type: dict
  sample: {BootMode: Uefi}
verified:
  description: The verification (C(ok), C(files), C(bytes), C(problems), C(signed_by)).
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
