# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/audit_verify.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: audit_verify
short_description: Verify the hash chain of a gpuops.cluster audit log
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Checks every record of an audit log written by the C(gpuops.cluster.audit) callback and reports the first
    broken or missing one (an edited line, a deleted line, a torn line) and whether the log still ends at the
    expected head (a removed or truncated last record).
  - Fails closed - a missing head (C(head.json) deleted, or a O(head) path that does not exist) is a failure,
    because removed last records would go unseen. O(chain_only=true) is the explicit request to check the
    chain alone.
  - Run it where the log is, normally the controller (delegate to localhost).
  - The same check without Ansible -
    C(gpuops-audit verify LOG --head HEAD) (C(python -m gpuops_audit verify) from tools/; docs/audit.md).
options:
  path:
    description: The audit log.
    type: path
    required: true
  head:
    description:
      - The expected head - a C(head.json) path or a sha256 hex digest (for example from syslog).
      - Default C(head.json) in the log's directory. When that file is missing the log does not verify
        (unless O(chain_only=true)).
      - A path has C(~) expanded; a hex digest passes through unchanged.
    type: path
  chain_only:
    description:
      - Check the hash chain alone, without any head. Removed or truncated last records then go unnoticed, so
        this must be asked for explicitly; O(head) is ignored.
    type: bool
    default: false
  anchor:
    description:
      - A head kept off the controller (syslog, a remote append-only file) that the log must still contain -
        C(SEQ:HASH), the callback's syslog line (C(gpuops-audit-head run_id=... seq=N hash=H ...)), a head JSON
        object as written to C(head.json), or the path of a file holding one.
      - Catches a log and C(head.json) rewritten together into a new consistent chain. See C(docs/audit.md).
    type: str
  fail_on_broken:
    description: Fail the task when the log does not verify.
    type: bool
    default: true
extends_documentation_fragment:
  - gpuops.cluster.common.ATTRIBUTES_INFO
seealso:
  - plugin: gpuops.cluster.audit
    plugin_type: callback
"""

EXAMPLES = r"""
- name: Verify the audit trail
  gpuops.cluster.audit_verify:
    path: ~/.local/state/gpuops/audit/audit.log
    head: ~/.local/state/gpuops/audit/head.json
  delegate_to: localhost
  run_once: true

- name: Verify against a head anchored in syslog as well
  gpuops.cluster.audit_verify:
    path: /var/lib/gpuops/audit/audit.log
    anchor: "812:9f2c0e6b1d1f0b3d6a4c5e8f7a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b"
  delegate_to: localhost
  run_once: true

- name: Check the chain only (explicitly - the end of the log is not checked)
  gpuops.cluster.audit_verify:
    path: /var/lib/gpuops/audit/audit.log
    chain_only: true
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
ok:
  description: The chain is intact and ends at the expected head.
  returned: always
  type: bool
  sample: true
records:
  description: Number of records read (up to the first broken one).
  returned: always
  type: int
  sample: 812
head:
  description: sha256 of the last valid record.
  returned: always
  type: str
  sample: 9f2c0e6b1d1f0b3d6a4c5e8f7a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b
last_seq:
  description: Sequence number of the last valid record.
  returned: always
  type: int
  sample: 812
first_bad_line:
  description: 1-based line of the first broken or missing record; null when ok.
  returned: always
  type: int
  sample: null
first_bad_seq:
  description: Sequence number of the first broken or missing record; null when ok.
  returned: always
  type: int
  sample: null
reason:
  description: What is wrong; null when ok.
  returned: always
  type: str
  sample: null
expected_head:
  description: The head the log was checked against (path or hash); null when only the chain was checked.
  returned: always
  type: str
  sample: /var/lib/gpuops/audit/head.json
chain_only:
  description: Only the chain was checked (O(chain_only=true)); the end of the log was not.
  returned: always
  type: bool
  sample: false
head_checked:
  description: The log was checked against a head and ends at it.
  returned: always
  type: bool
  sample: true
anchor_checked:
  description: The anchor's record was found with its hash; null when no anchor was given.
  returned: always
  type: bool
  sample: null
runs:
  description: The run ids found in the log, in order.
  returned: always
  type: list
  sample: [0c6e2f5ab8e94b4f8c4f6d1e2a3b4c5d]
"""
