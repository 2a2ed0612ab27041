# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/start_checks.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: start_checks
short_description: What every playbook of the collection checks first, before any change
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Warns about every C(gpuops_*) name given as an extra var or set on a host or group (inventory, C(host_vars/),
    C(group_vars/)) that C(docs/inventory.md) does not document, with the nearest documented name; a misspelled
    variable is otherwise ignored without a word. The variable C(gpuops_strict_vars=true) makes them fatal.
  - With O(disruptive=true), refuses to start unless the C(gpuops.cluster.audit) callback is live in this run (it
    exports C(GPUOPS_AUDIT_ACTIVE)); C(gpuops_allow_unaudited=true) (see O(allow_unaudited_vars)) opts out, recorded.
  - Run by C(gpuops.cluster.limit_guard), which every playbook with a controller play imports first; run it once,
    on localhost.
options:
  workflow:
    description: The playbook's name, for the messages.
    type: str
    default: ""
  disruptive:
    description: The playbook changes nodes or the scheduler (isolate, resume, reset, replace, upgrade ...).
    type: bool
    default: false
  allow_unaudited_vars:
    description:
      - Variables that opt out of the audit trail (the first one set wins), read raw as literal booleans (never
        templated, as this runs before a playbook's untrusted-input check). The opt-out is appended to the audit log.
      - The variable C(gpuops_strict_vars) (read the same way) makes unknown variables fatal.
    type: list
    elements: str
    default: [gpuops_allow_unaudited]
  allow_unaudited_default:
    description: The opt-out when none of O(allow_unaudited_vars) is set.
    type: bool
    default: false
  check_vars:
    description: Check the variable names.
    type: bool
    default: true
  state_dir:
    description:
      - State directory for the opt-out record. Default the C(gpuops_state_dir) variable, else
        C($GPUOPS_STATE_DIR), else C(~/.local/state/gpuops).
    type: path
extends_documentation_fragment:
  - gpuops.cluster.common.ATTRIBUTES_INFO
attributes:
  check_mode:
    details: Always runs; in check mode a missing audit callback is reported (would refuse) instead of failing.
notes:
  - Runs on the controller only.
seealso:
  - plugin: gpuops.cluster.audit
    plugin_type: callback
"""

EXAMPLES = r"""
- name: Refuse to isolate without the audit trail; warn about misspelled gpuops_* variables
  gpuops.cluster.start_checks:
    workflow: isolate
    disruptive: true
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
unknown_variables:
  description:
    - The undocumented C(gpuops_*) names, where each is set and the nearest documented name
      (C(name), C(where), e.g. C(host gpu-node-01), C(nearest) or null).
  returned: always
  type: list
  elements: dict
  sample: []
audit:
  description: C(ok), C(opt_out) (ran without the callback, recorded) or C(would_refuse) (check mode).
  returned: always
  type: str
  sample: ok
"""
