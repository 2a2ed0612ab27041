# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/service_report.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: service_report
short_description: Write the service report of a period (availability, SLA, capacity, MTTR/MTBF) from the store
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Reads the service ledger in the store (C(gpuops_state_dir)'s embedded SQLite, or the PostgreSQL named by
    C(gpuops_db_url); docs/store.md) and writes C(service-report.json) (schema C(gpuops.service_report/v1)),
    C(service-report.md) and C(service-report.html) with charts drawn as inline SVG (no network needed to read it).
  - "The figures follow docs/service-report.md: availability (GPU-hours in service against in service plus unplanned
    downtime; planned downtime inside maintenance windows and unobserved time reported apart) per cluster, partition
    and node; SLA incidents and breaches per severity; allocated GPU share against the expansion trigger; MTTR and MTBF
    per component class; repeat offenders by node and part serial; the reviews and the checks they changed."
  - The files are written atomically with mode C(0600); a missing C(report_dir) is created C(0700).
  - Check mode computes the report and returns its summary; it writes nothing, not even a schema migration.
  - An action plugin - it runs on the controller. The playbook C(gpuops.cluster.service_report) runs it.
extends_documentation_fragment: [gpuops.cluster.common.attributes_info, gpuops.cluster.common.attributes_controller]
attributes:
  check_mode:
    details: Check mode computes the report and writes no file.
options:
  period:
    description:
      - The period, UTC - a quarter C(2026Q4), a month C(2026-10), or an inclusive date range
        C(2026-10-01/2026-12-31). Anything else fails with a message saying what is accepted.
    type: str
    required: true
  report_dir:
    description: Where the three files go; default C(reports/service-<period>) under the current directory.
    type: path
    default: ""
  state_dir:
    description: The state directory holding the embedded store C(gpuops.db) (C(gpuops_state_dir)).
    type: path
    default: ""
  db_url:
    description: A PostgreSQL URL (C(gpuops_db_url)); used instead of C(state_dir) when set.
    type: str
    default: ""
  policy_overrides:
    description:
      - The site's policy overrides (C(gpuops_policy_overrides)); only its C(sla) key is read - SLA targets per
        severity, C(profiles), and C(capacity_trigger) (default 0.7).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Service report of the fourth quarter
  gpuops.cluster.service_report:
    period: 2026Q4
    state_dir: /var/lib/gpuops/state
    report_dir: /var/lib/gpuops/reports/service-2026Q4

- name: Service report of a date range from the shared PostgreSQL store
  gpuops.cluster.service_report:
    period: 2026-10-01/2026-12-31
    db_url: "{{ gpuops_db_url }}"
"""

RETURN = r"""
summary:
  description: The headline figures (all of them are in service-report.json).
  returned: always
  type: dict
  sample:
    availability_cluster: 99.412
    incidents: 41
    breaches: [INC-20261014-0003]
    peak_allocated_share: 0.8125
    capacity_trigger: 0.7
    reviews: 6
period:
  description: The period read - start and end (UTC, end exclusive), label, days.
  returned: always
  type: dict
  sample: {start: "2026-10-01T00:00:00Z", end: "2027-01-01T00:00:00Z", label: 2026Q4, days: 92.0}
paths:
  description: The files written (in check mode - the files that would be written).
  returned: always
  type: dict
  sample:
    json: /var/lib/gpuops/reports/service-2026Q4/service-report.json
    markdown: /var/lib/gpuops/reports/service-2026Q4/service-report.md
    html: /var/lib/gpuops/reports/service-2026Q4/service-report.html
msg:
  description: One line with the headline figures, or in check mode the files that would be written.
  returned: always
  type: str
  sample: "service report 2026Q4: availability 99.412 %, 41 incidents, 1 breaches, peak allocation 0.8125 -> ..."
"""
