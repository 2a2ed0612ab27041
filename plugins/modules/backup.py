# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/backup.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: backup
short_description: Store, verify, copy off-site and prune a node's configuration snapshot on the controller
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The controller half of the C(gpuops.cluster.backup) role (C(docs/backup.md)). Stores the entries read by
    M(gpuops.cluster.config_snapshot) (node files and commands, Redfish BIOS/BMC settings, C(slurm.conf) from the
    Slurm controller) and the controller's state directory and audit trail in the content-addressed store
    O(backup_dir) - C(objects/<sha256>) (identical files stored once) and C(snapshots/<id>/manifest.json) (schema
    C(gpuops.backup/v2) - file, sha256, size, source, node, change id, time) with C(manifest.sha256) and
    C(manifest.sig), the manifest signed (HMAC-SHA256) with the backup key (O(signing_key), else the key file).
  - What the node returned is untrusted - at most O(max_entries) entries, O(max_entry_bytes) per entry and
    O(max_snapshot_bytes) in all, only file, command and Redfish entries, and a file marked restorable must be a plain
    file that the node's configured sources (O(sources), O(extra_paths)) produce, with its owner and a mode without
    setuid/setgid/sticky bits. Anything else fails the backup naming the node and the entry, before anything is
    stored.
  - The state directory goes in without C(tickets/), C(locks/), C(backups/), any C(runner/), C(artifacts/) or
    C(env/) directory (ansible-runner's command lines and environments), and files whose name or content looks
    like a secret (RV(excluded)). No object holding a configured secret value (E(GPUOPS_BMC_PASSWORD), the password
    of E(GPUOPS_DB_URL), C(gpuops_bmc_password), any variable named like a secret, the signing key) is stored - an
    evidence file is withheld (RV(withheld)), a restorable one fails the backup; the message names the file and the
    variable, never the value.
  - Every write is atomic and private (files 0600, directories 0700). The snapshot is re-verified (signature, every
    object re-hashed) before the step succeeds.
  - Fails (the change that included it is refused) when a file, the BMC or the controller's state could not be read
    (O(fail_on)), when the snapshot does not verify, or when the off-site copy does not verify. A failure is written
    to C(status/<node>.json) (finding C(backup.failed)) and as a C(backup) audit record.
  - Retention by count and age per node (O(keep_count), O(keep_days); default the policy's C(backup) block), then
    objects no manifest references are removed. The newest signed snapshot of a node is always kept; unsigned
    snapshots from before signing are deleted by age only.
  - Check mode writes nothing (and creates no key) and returns the snapshot as it would be. Run it delegated to
    C(localhost).
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
options:
  node:
    description: The node (inventory hostname).
    type: str
    required: true
  entries:
    description: The node's entries (RV(gpuops.cluster.config_snapshot#module:entries)).
    type: list
    elements: dict
    default: []
  extra_entries:
    description: More entries (Redfish, C(slurm.conf) from the Slurm controller).
    type: list
    elements: dict
    default: []
  backup_dir:
    description: The backup store (C(gpuops_backup_dir)).
    type: path
    required: true
  state_dir:
    description: The controller state directory; its files (but C(backups/), C(locks/)) go into the snapshot, and the audit record goes to its trail.
    type: path
  include_state:
    description: Snapshot the state directory and the audit trail.
    type: bool
    default: true
  change_id:
    description: The change the snapshot is taken for.
    type: str
    default: ""
  ticket:
    description: The ticket.
    type: str
    default: ""
  workflow:
    description: The workflow taking the snapshot.
    type: str
    default: backup
  fail_on:
    description: Entry kinds whose read error fails the backup (C(command) errors are recorded as evidence only).
    type: list
    elements: str
    default: [file, redfish, controller]
  offsite:
    description: A second backup store (another filesystem); the snapshot is copied there and verified.
    type: path
  keep_count:
    description: Snapshots kept per node (default the policy's C(backup.keep_count)).
    type: int
  keep_days:
    description: Days a snapshot is kept (default the policy's C(backup.keep_days)).
    type: float
  sources:
    description: The node's backup sources (as M(gpuops.cluster.config_snapshot) O(gpuops.cluster.config_snapshot#module:sources)); default the built-in list.
    type: list
    elements: dict
  extra_paths:
    description: The node's extra backup paths (C(gpuops_backup_extra_paths)).
    type: list
    elements: str
    default: []
  signing_key:
    description:
      - The signing key (C(gpuops_backup_signing_key), at least 32 bytes; keep it in a vault). Default the variable
        C(gpuops_backup_signing_key), else the key file.
    type: str
  key_file:
    description:
      - The key file when no O(signing_key) - default E(GPUOPS_BACKUP_KEY_FILE), else C(~/.config/gpuops/backup.key).
        Created (random, 0600) when missing and the store holds no signed snapshot yet; refused when it is not this
        user's, not 0600, or inside the store or the state directory.
    type: path
  max_entry_bytes:
    description: The most bytes one entry from the node may hold.
    type: int
    default: 8388608
  max_snapshot_bytes:
    description: The most bytes the node's entries may hold in all.
    type: int
    default: 67108864
  max_entries:
    description: The most entries the node may return.
    type: int
    default: 1000
seealso:
  - module: gpuops.cluster.config_snapshot
  - module: gpuops.cluster.restore_plan
"""

EXAMPLES = r"""
- name: Store and verify the snapshot
  gpuops.cluster.backup:
    node: "{{ inventory_hostname }}"
    entries: "{{ snap.entries }}"
    backup_dir: /var/lib/gpuops/backups
    state_dir: /var/lib/gpuops
    change_id: CHG-1234
  delegate_to: localhost
"""

RETURN = r"""
snapshot_id:
  description: The snapshot's id.
  returned: success
  type: str
  sample: 20261203T083801224091Z-gpu-node-01
manifest:
  description: The manifest's path.
  returned: success
  type: str
  sample: /var/lib/gpuops/backups/snapshots/20261203T083801224091Z-gpu-node-01/manifest.json
files:
  description: Files in the snapshot.
  returned: success
  type: int
  sample: 12
bytes:
  description: Their total size.
  returned: success
  type: int
  sample: 48213
stored_bytes:
  description: Bytes of new objects (identical files are stored once).
  returned: success
  type: int
  sample: 81
stored_objects:
  description: New objects.
  returned: success
  type: int
  sample: 1
absent:
  description: Optional sources that were not there.
  returned: success
  type: list
  elements: str
  sample: [files/etc/default/grub]
errors:
  description: Entries that could not be read (commands - evidence only).
  returned: success
  type: list
  elements: dict
  sample: [{file: commands/nvidia-smi-versions.csv, kind: command, error: "exit 9: NVIDIA-SMI has failed"}]
excluded:
  description: State files left out because their name or content looks like a secret (C(file), C(reason)).
  returned: success
  type: list
  elements: dict
  sample: [{file: controller/state/db.env, reason: "it holds a secret variable's value"}]
withheld:
  description: Evidence files not stored because they hold a configured secret value (C(file), C(reason) naming the variable).
  returned: success
  type: list
  elements: dict
  sample: [{file: controller/state/runs/x.json, reason: "it holds a configured secret value (GPUOPS_BMC_PASSWORD)"}]
signed_by:
  description: The id of the key that signed the manifest (null in check mode without a key).
  returned: success
  type: str
  sample: 3f9c2a1b7d5e4c60
verified:
  description: The signature checked and every object re-hashed against the manifest (null in check mode).
  returned: success
  type: bool
  sample: true
restore_command:
  description: The exact command that puts this snapshot back.
  returned: success
  type: str
  sample: ansible-playbook gpuops.cluster.restore -e gpuops_backup_id=20261203T083801224091Z-gpu-node-01 -l gpu-node-01 --diff
offsite:
  description: The off-site copy (C(dest), C(ok), C(copied), C(problems)).
  returned: with offsite
  type: dict
  sample: {dest: /mnt/offsite/gpuops, ok: true, copied: 3, problems: []}
pruned:
  description: Snapshots and objects removed by retention.
  returned: success, not in check mode
  type: dict
  sample: {snapshots: [], objects: []}
seconds:
  description: How long the step took.
  returned: success
  type: float
  sample: 0.041
backup_ok:
  description: Whether a verified snapshot was taken.
  returned: always
  type: bool
  sample: true
"""
