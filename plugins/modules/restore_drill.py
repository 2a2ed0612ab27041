# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/restore_drill.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: restore_drill
short_description: Rehearse restores - restore sampled snapshots into a scratch directory and measure RTO/RPO
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The step of C(playbooks/restore_drill.yml) (C(docs/backup.md)). Takes the newest snapshot of each node (of
    O(nodes), or every node), at most O(count), verifies it (signature with the backup key, every object), checks it
    as a restore would (files of the node's backup sources, no links, no setuid/setgid/sticky modes), restores every
    file into a scratch directory, re-hashes the restored copies, and measures the restore time and the data age
    (now - snapshot time).
  - Compares them with the policy's C(backup.rto_minutes) and C(backup.rpo_hours) (or O(rto_minutes), O(rpo_hours)),
    writes C(drill-<time>.json) and C(.md) into O(report_dir) (0600) and fails when a restore does not verify, misses
    the RTO or the RPO, or a named node has no snapshot (O(fail)).
  - Check mode does nothing (a drill writes a scratch copy and a report). Run it on C(localhost).
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
options:
  backup_dir:
    description: The backup store.
    type: path
    required: true
  report_dir:
    description: Where the drill report goes.
    type: path
    required: true
  scratch:
    description: The scratch directory (default a hidden directory in O(report_dir)); removed afterwards unless O(keep_scratch).
    type: path
  nodes:
    description: The nodes to drill (default every node with a snapshot).
    type: list
    elements: str
    default: []
  count:
    description: At most this many snapshots (oldest data first).
    type: int
    default: 3
  rto_minutes:
    description: Restore time objective (default the policy's).
    type: float
  rpo_hours:
    description: Recovery point objective - the oldest data a restore may rely on (default the policy's).
    type: float
  keep_scratch:
    description: Keep the restored copies.
    type: bool
    default: false
  fail:
    description: Fail the task when the drill fails.
    type: bool
    default: true
  sources:
    description: The nodes' backup sources (as M(gpuops.cluster.config_snapshot) O(gpuops.cluster.config_snapshot#module:sources)); default the built-in list.
    type: list
    elements: dict
  extra_paths:
    description: The nodes' extra backup paths; default the variable C(gpuops_backup_extra_paths).
    type: list
    elements: str
  signing_key:
    description: The signing key; default the variable C(gpuops_backup_signing_key), else the key file.
    type: str
  key_file:
    description: The key file when no O(signing_key) - default E(GPUOPS_BACKUP_KEY_FILE), else C(~/.config/gpuops/backup.key).
    type: path
seealso:
  - module: gpuops.cluster.backup
"""

EXAMPLES = r"""
- name: Restore drill
  gpuops.cluster.restore_drill:
    backup_dir: /var/lib/gpuops/backups
    report_dir: /var/lib/gpuops/drills
"""

RETURN = r"""
report:
  description: The drill report (schema C(gpuops.backup-drill/v1)) - per restore node, id, files, bytes, seconds, data_age_hours, ok, rto_ok, rpo_ok.
  returned: not check mode
  type: dict
  sample: {ok: true, rto_seconds: 1800, rpo_hours: 24, restores: [{node: gpu-node-01, files: 12, seconds: 0.02, data_age_hours: 0.1}]}
report_json:
  description: The JSON report's path.
  returned: not check mode
  type: str
  sample: /var/lib/gpuops/drills/drill-20261203T090000Z.json
report_md:
  description: The Markdown report's path.
  returned: not check mode
  type: str
  sample: /var/lib/gpuops/drills/drill-20261203T090000Z.md
ok:
  description: Every restore verified within RTO and RPO.
  returned: not check mode
  type: bool
  sample: true
max_restore_seconds:
  description: The slowest restore.
  returned: not check mode
  type: float
  sample: 0.021
max_data_age_hours:
  description: The oldest data restored.
  returned: not check mode
  type: float
  sample: 0.12
"""
