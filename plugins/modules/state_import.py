# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/state_import.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: state_import
short_description: Move a controller's file state into the shared database, once
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Runs on the controller. Copies every host state document C(<state_dir>/hosts/<host>.json) and the isolation
    guard's claims C(<state_dir>/isolation/history.json) into the store named by O(db_url) (tables C(host_state)
    and C(guard_claims), C(docs/state.md)), in one transaction under the database lock C(isolation-guard).
  - A host the database already has is kept (listed in RV(skipped)) unless O(overwrite); a claim already there
    (same node, time and run) is not doubled, so a second run changes nothing.
  - A corrupt state file stops the import before anything is written. The files are left in place.
  - In check mode nothing is written; the result says what would be imported.
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
options:
  state_dir:
    description: The controller state directory to import (C(gpuops_state_dir)).
    type: path
    required: true
  db_url:
    description: The store's database URL (C(gpuops_db_url), C(docs/store.md)).
    type: str
    required: true
  overwrite:
    description: Replace a host state the database already has with the file's.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Move the state directory into PostgreSQL
  gpuops.cluster.state_import:
    state_dir: /var/lib/gpuops/state
    db_url: postgresql://gpuops@db01/gpuops
"""

RETURN = r"""
hosts:
  description: The hosts whose state was imported (or would be, in check mode).
  returned: always
  type: list
  elements: str
  sample: [gpu-node-01, gpu-node-02]
skipped:
  description: The hosts the database already had (kept without O(overwrite)).
  returned: always
  type: list
  elements: str
  sample: [gpu-node-03]
claims:
  description: The number of guard claims imported.
  returned: always
  type: int
  sample: 2
db:
  description: The database, its password masked.
  returned: always
  type: str
  sample: postgresql+psycopg://gpuops:***@db01/gpuops
"""
