# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/incident_event.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: incident_event
short_description: Record a real-time event (an alert, a health-check verdict) in the incident ledger, act once
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - The real-time path's ledger step (C(docs/alerting.md), "Incidents, repeats and suppression"). The playbooks the
    EDA rulebook runs call it before they act, with the alerts the rulebook's event source handed over
    (C(ansible_eda.event.payload.alerts), already reduced to validated fields).
  - Each firing alert opens an incident or joins the open incident of the same fault (the fingerprint an
    inspection's finding of that fault has), with C(detected_at) from the alert's C(startsAt); an inspection of
    the same fault later joins that incident, and the earlier detection wins.
  - With O(runbook), the result's RV(act_hosts) names the hosts the playbook may act on, once per incident and
    runbook; an alert repeated every group interval is recorded as a repeat and its host is left out.
  - Hosts in a maintenance window in force (inventory C(gpuops_maintenance_windows) or the ledger's windows), with an
    unreleased isolation-guard claim, or in an upgrade run in progress are left out too; the suppression is recorded
    on the incident and in the result (the audit callback records the task).
  - A firing alert that names no check (neither its labels nor its catalogue entry) or no severity is refused,
    never guessed; so is an event with a malformed field.
  - "Alert data is used as data: nothing is templated."
extends_documentation_fragment:
  - gpuops.cluster.common.attributes_action
  - gpuops.cluster.common.attributes_controller
attributes:
  check_mode:
    details: Nothing is recorded and nothing is acted on (RV(act_hosts) is empty).
  diff_mode:
    support: none
options:
  alerts:
    description:
      - The event source's alerts (C(ansible_eda.event.payload.alerts)); resolved alerts are ignored.
      - Exactly one of O(alerts) and O(events).
    type: list
    elements: dict
  events:
    description:
      - Ready events, each C({host, check_id, component, code, severity, detected_at, source, summary}) as
        C(record_realtime) takes them (C(docs/service.md), "Real-time events"); C(detected_at) in epoch seconds.
    type: list
    elements: dict
  leak_event:
    description:
      - The Redfish leak watch's event (C(ansible_eda.event.leak_event) of the C(gpuops.cluster.redfish_leak) source),
        recorded as the inspection's C(bmc.leak) finding names the fault (component C(bmc/<detector>), code the
        detector state), graded by the policy's C(thresholds.bmc.leak); a state the policy does not grade (OK) records
        nothing. Mutually exclusive with O(alerts) and O(events).
    type: dict
  runbook:
    description: The catalogue id of the runbook the playbook carries out (C(gpuops_runbook)), acting once per incident.
    type: str
  state_dir:
    description: The state directory (C(gpuops_state_dir)), home of the embedded store and the isolation guard's claims.
    type: path
  db_url:
    description: The shared store (PostgreSQL URL, C(gpuops_db_url)).
    type: str
  policy_overrides:
    description: Site policy overrides; their C(sla.open_severities) decide which severities open an incident.
    type: dict
    default: {}
  require_store:
    description: Fail without a store. Otherwise, without one, nothing is recorded and every host not suppressed may act.
    type: bool
    default: false
  narrow:
    description:
      - V(true) (the default) when the playbook acts on each host on its own (C(gpu_reset)). RV(act_hosts) holds
        just the hosts whose incident has not seen this runbook act, none suppressed.
      - V(false) for a playbook that acts on its whole payload in one run (C(isolate), C(leak_response)). When a
        host of the payload is suppressed and another is not, nothing acts (the others are recorded without their
        runbook, so a later alert can still act). Otherwise, once one host is new, RV(act_hosts) holds every host
        not suppressed (repeating an isolation is idempotent).
    type: bool
    default: true
  suppress:
    description:
      - Leave hosts in a maintenance window or a rolling upgrade alone (the default). V(false) for a response that
        no window may hold back (C(leak_response), a coolant leak cuts power at once, C(docs/leak.md)). The ledger's
        windows still mark such an event suppressed only when this is V(true).
    type: bool
    default: true
seealso:
  - module: gpuops.cluster.incident
"""

EXAMPLES = r"""
- name: Record the alerts and learn which nodes to act on (the rulebook's playbooks)
  gpuops.cluster.incident_event:
    alerts: "{{ ansible_eda.event.payload.alerts }}"
    runbook: gpu_fell_off_bus
    state_dir: /var/lib/gpuops/state
  register: incident_event

- name: Record a node-side health check's drain seen by the controller
  gpuops.cluster.incident_event:
    events:
      - host: gpu-node-03
        check_id: gpu.xid
        component: "gpu:0"
        code: "79"
        severity: P0
        detected_at: 1764735000
        source: health_check
        summary: Xid 79 on gpu:0
    db_url: postgresql://gpuops@db01/gpuops
"""

RETURN = r"""
act_hosts:
  description: The hosts the playbook may act on (first event of the incident for this runbook, none suppressed).
  returned: always
  type: list
  elements: str
  sample: ["gpu-node-03"]
suppressed:
  description: Host -> why the real-time path leaves it alone (a maintenance window, a rolling upgrade).
  returned: always
  type: dict
  sample: {"gpu-node-07": "maintenance window rack7-fw (until 2026-12-08T06:00:00+00:00)"}
mixed:
  description: With O(narrow=false), the hosts that did not act because another host of the same payload is suppressed.
  returned: when recorded
  type: list
  elements: str
  sample: []
incidents:
  description: The incident ids the events opened or joined.
  returned: when recorded
  type: list
  elements: str
  sample: ["INC-20261208-0001"]
results:
  description: One entry per event (C(outcome) opened, joined, repeat, below or refused; C(act); C(suppressed)).
  returned: always
  type: list
  elements: dict
  sample: [{"host": "gpu-node-03", "outcome": "repeat", "incident_id": "INC-20261208-0001", "act": false}]
lines:
  description: One line per event.
  returned: when recorded
  type: list
  elements: str
  sample: ["gpu-node-03 repeat (INC-20261208-0001 gpu.xid): gpu_fell_off_bus already acted on this incident, skipped"]
msg:
  description: The lines joined.
  returned: always
  type: str
  sample: "gpu-node-03 opened (INC-20261208-0001 gpu.xid): gpu_fell_off_bus acts"
"""
