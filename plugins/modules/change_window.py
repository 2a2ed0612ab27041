# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/change_window.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: change_window
short_description: Allow or refuse disruptive work by maintenance window, override or findings
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Decides on the B(controller's) clock, never a node's, whether a disruptive change may start now.
  - Planned work is allowed only while a maintenance window is open for B(all) target hosts (windows come from
    each host's O(windows_var), format in C(docs/windows.md)), or under an emergency override with a ticket and
    a reason. Outside, it fails and names the next common window.
  - Corrective work (isolating hosts on their own P0/P1 findings) is always allowed and recorded with the findings.
  - Disruptive work is refused unless the C(gpuops.cluster.audit) callback is live in this run (it exports
    C(GPUOPS_AUDIT_ACTIVE)); O(allow_unaudited=true) opts out and the opt-out is written to the audit log.
  - Sets the fact C(gpuops_change_window) that the audit callback records with every later change.
  - Used by the C(gpuops.cluster.change_guard) role; run it once, on localhost.
options:
  change_class:
    description: C(planned) needs a window or an override; C(corrective) needs P0/P1 findings of each target host.
    type: str
    choices: [planned, corrective]
    default: planned
  hosts:
    description: The inventory hosts the change targets. Defaults to C(ansible_play_hosts_all).
    type: list
    elements: str
  windows_var:
    description: The host variable holding each host's windows.
    type: str
    default: gpuops_maintenance_windows
  windows:
    description: Windows for all target hosts, instead of O(windows_var) (tests, ad-hoc use).
    type: raw
  change_id:
    description: Change reference. Planned work needs O(change_id) or O(ticket).
    type: str
    default: ""
  ticket:
    description: Ticket reference.
    type: str
    default: ""
  emergency:
    description: Emergency override C({ticket, reason}); both are required. Allowed outside windows and recorded.
    type: dict
    default: {}
  findings:
    description: The findings (see C(docs/findings.md)) that justify corrective work.
    type: list
    elements: raw
    default: []
  now:
    description:
      - Test clock (ISO 8601 or epoch seconds). Meant for check mode; outside check mode it is honoured,
        warned about and recorded as C(clock_override).
    type: str
    default: ""
  disruptive:
    description: When false, only report the window (no change reference or audit needed).
    type: bool
    default: true
  allow_unaudited:
    description: Allow disruptive work without the audit callback. The opt-out is appended to the audit log.
    type: bool
    default: false
  state_dir:
    description:
      - State directory for the opt-out record. Default the C(gpuops_state_dir) variable, else
        C($GPUOPS_STATE_DIR), else C(~/.local/state/gpuops).
    type: path
extends_documentation_fragment:
  - gpuops.cluster.common.ATTRIBUTES_INFO
attributes:
  check_mode:
    details: Always runs; in check mode a refusal is reported (C(allowed=false)) instead of failing.
notes:
  - Runs on the controller only; the window computation needs Python 3.9+ (zoneinfo) there.
seealso:
  - plugin: gpuops.cluster.audit
    plugin_type: callback
"""

EXAMPLES = r"""
- name: Refuse planned work outside the maintenance window
  gpuops.cluster.change_window:
    change_class: planned
    hosts: "{{ ansible_play_hosts_all }}"
    change_id: CHG-1234
  run_once: true
  delegate_to: localhost

- name: Emergency firmware activation outside the window
  gpuops.cluster.change_window:
    hosts: [gpu-node-07]
    emergency:
      ticket: INC-4711
      reason: BMC firmware CVE actively exploited
  run_once: true
  delegate_to: localhost

- name: Isolate nodes on their own findings, any time
  gpuops.cluster.change_window:
    change_class: corrective
    hosts: "{{ faulty_hosts }}"
    findings: "{{ cluster_findings }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
allowed:
  description: Whether the work may start now.
  returned: always
  type: bool
  sample: true
decision:
  description: C(window), C(emergency_override), C(corrective), C(not_disruptive) or C(refused).
  returned: always
  type: str
  sample: window
window:
  description: Name of the window open for all hosts (C(a+b) when hosts have different windows).
  returned: always
  type: str
  sample: weekend
window_start:
  description: Start of the open window (UTC, ISO 8601).
  returned: always
  type: str
  sample: "2026-12-05T21:00:00+00:00"
window_end:
  description: When the first of the hosts' windows closes (UTC, ISO 8601).
  returned: always
  type: str
  sample: "2026-12-06T03:00:00+00:00"
remaining_s:
  description: Seconds until O(hosts) leave the window; null outside a window.
  returned: always
  type: int
  sample: 7200
next_window:
  description: The next window open for all hosts, with start/end in UTC and local time.
  returned: always
  type: dict
  sample: {name: weekend, start: "2026-12-12T01:00:00+00:00", end: "2026-12-12T05:00:00+00:00",
           start_local: "2026-12-12T02:00:00+01:00", end_local: "2026-12-12T06:00:00+01:00",
           timezone: Europe/Berlin, remaining_s: 518400, starts_in_s: 504000}
freeze:
  description: The freeze in force now, if any.
  returned: always
  type: dict
  sample: null
change_class:
  description: The change class.
  returned: always
  type: str
  sample: planned
hosts:
  description: The target hosts.
  returned: always
  type: list
  sample: [gpu-node-01, gpu-node-02]
hosts_outside:
  description: Target hosts that have no open window now.
  returned: always
  type: list
  sample: []
hosts_without_windows:
  description: Target hosts with no window defined at all.
  returned: always
  type: list
  sample: []
ticket:
  description: Ticket reference.
  returned: always
  type: str
  sample: OPS-77
change_id:
  description: Change reference.
  returned: always
  type: str
  sample: CHG-1234
override:
  description: The emergency override used.
  returned: always
  type: dict
  sample: {ticket: INC-4711, reason: CVE}
findings:
  description: Summary (id, check, severity, host, component, code) of the findings behind corrective work.
  returned: always
  type: list
  sample: [{id: "gpu-node-07:gpu.xid:gpu3:79", check: gpu.xid, severity: P1, host: gpu-node-07,
            component: gpu3, code: "79"}]
clock:
  description: The time the decision used (UTC).
  returned: always
  type: str
  sample: "2026-12-05T23:00:00+00:00"
clock_override:
  description: True when O(now) replaced the controller clock outside check mode.
  returned: always
  type: bool
  sample: false
check_mode:
  description: Whether this ran in check mode.
  returned: always
  type: bool
  sample: false
audited:
  description: Whether the gpuops.cluster.audit callback is live in this run.
  returned: always
  type: bool
  sample: true
unaudited_opt_out:
  description: True when the work runs without the callback because of O(allow_unaudited).
  returned: always
  type: bool
  sample: false
"""
