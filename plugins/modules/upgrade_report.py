# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# This file only documents the action plugin plugins/action/upgrade_report.py (it runs on the controller).

from __future__ import annotations

DOCUMENTATION = r"""
module: upgrade_report
short_description: Write the rolling upgrade's run report (report.json and report.md) from the node records
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Reads C(<run_dir>/nodes/*.json) written by the role C(gpuops.cluster.upgrade) and writes C(<run_dir>/report.json)
    and C(<run_dir>/report.md) - per node the from and to versions, the result, the stage it failed at, the
    duration, the evidence directory. Planned nodes without a record are C(not_started).
  - The reports are written atomically with mode C(0600), never through a link; a missing C(run_dir) is created
    C(0700), whatever the umask.
  - An action plugin - it runs on the controller whatever the play's hosts (the role's C(report.yml) entry point
    runs it after the rolling play). The report logic is C(plugins/plugin_utils/upgrade/report.py).
  - Check mode builds and returns the report and writes nothing (RV(msg) names the files it would write). With
    C(--diff) the change of C(report.md) is shown.
extends_documentation_fragment: [gpuops.cluster.common.attributes_action]
options:
  run_dir: {description: The run directory (the role's C(upgrade_run_dir))., type: path, required: true}
  change_id: {description: Change id shown in the report., type: str, default: ""}
  planned:
    description: The planned hosts (C(upgrade_plan) RV(gpuops.cluster.upgrade_plan#module:ordered_hosts)).
    type: list
    elements: str
    default: []
  blocked: {description: C(upgrade_plan) RV(gpuops.cluster.upgrade_plan#module:blocked)., type: list, elements: dict, default: []}
  deferred: {description: C(upgrade_plan) RV(gpuops.cluster.upgrade_plan#module:deferred)., type: list, elements: dict, default: []}
  batches: {description: C(upgrade_plan) RV(gpuops.cluster.upgrade_plan#module:batches)., type: list, elements: dict, default: []}
  stopped:
    description:
      - Why the rollout stopped before its last batch (the window closed, a failed batch); empty when it did not.
      - Shown in the report and in the decision of each node that was not started.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Write the run report
  gpuops.cluster.upgrade_report:
    run_dir: "{{ gpuops_upgrade_run_dir }}"
    change_id: CHG-1234
    planned: "{{ gpuops_upgrade_plan.ordered_hosts }}"
    blocked: "{{ gpuops_upgrade_plan.blocked }}"
"""

RETURN = r"""
report:
  description: The report (also in report.json).
  returned: always
  type: dict
  sample: {change_id: CHG-1, ok: false, counts: {upgraded: 3, failed: 1}, nodes: []}
outcomes:
  description:
    - Per-node outcomes in the vocabulary of the outcome contract (docs/upgrades.md), for the C(nodes) option
      of C(gpuops.cluster.run_outcome).
  returned: always
  type: dict
  sample:
    node-1: {outcome: done, detail: "upgraded: driver", decision: upgraded}
    node-2: {outcome: not_started, detail: "not started: window closed", decision: "stopped: window closed"}
json_path: {description: Path of report.json., returned: always, type: str, sample: /var/lib/gpuops/upgrades/CHG-1/report.json}
markdown_path: {description: Path of report.md., returned: always, type: str, sample: /var/lib/gpuops/upgrades/CHG-1/report.md}
msg: {description: In check mode - the files that would be written., returned: check mode, type: str, sample: "check mode: would write ..."}
"""
