# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
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
  - Run it on the controller (a play on C(localhost)), after the rolling play.
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
attributes:
  check_mode: {support: full, details: The report is still written (it changes nothing managed).}
  diff_mode: {support: none}
  platform: {platforms: posix}
"""

EXAMPLES = r"""
- name: Write the run report
  gpuops.cluster.upgrade_report:
    run_dir: "{{ upgrade_run_dir }}"
    change_id: CHG-1234
    planned: "{{ plan.ordered_hosts }}"
    blocked: "{{ plan.blocked }}"
"""

RETURN = r"""
report:
  description: The report (also in report.json).
  returned: always
  type: dict
  sample: {change_id: CHG-1, ok: false, counts: {upgraded: 3, failed: 1}, nodes: []}
json_path: {description: Path of report.json., returned: always, type: str, sample: /var/lib/gpuops/upgrades/CHG-1/report.json}
markdown_path: {description: Path of report.md., returned: always, type: str, sample: /var/lib/gpuops/upgrades/CHG-1/report.md}
"""

import datetime  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.module_utils import _fwupdate as F  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.module_utils._common import (  # noqa: E402
    ensure_private_dir,
    write_private_atomic,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "run_dir": {"type": "path", "required": True},
            "change_id": {"type": "str", "default": ""},
            "planned": {"type": "list", "elements": "str", "default": []},
            "blocked": {"type": "list", "elements": "dict", "default": []},
            "deferred": {"type": "list", "elements": "dict", "default": []},
            "batches": {"type": "list", "elements": "dict", "default": []},
        },
        supports_check_mode=True,
    )
    p = module.params
    records, unreadable = [], []
    for path in sorted(glob.glob(os.path.join(p["run_dir"], "nodes", "*.json"))):
        try:
            with open(path, encoding="utf-8") as fh:
                records.append(json.load(fh))
        except (OSError, ValueError) as exc:
            unreadable.append("%s: %s" % (path, exc))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    report = F.build_report(p["change_id"], records, p["planned"], p["blocked"], p["deferred"], p["batches"], now)
    report["unreadable_records"] = unreadable
    jpath = os.path.join(p["run_dir"], "report.json")
    mpath = os.path.join(p["run_dir"], "report.md")
    try:
        ensure_private_dir(p["run_dir"])
        for path, text in ((jpath, F.render_json(report)), (mpath, F.render_markdown(report))):
            write_private_atomic(path, text)  # 0600, atomic, never through a link
    except OSError as exc:
        module.fail_json(msg="cannot write the report: %s" % exc, report=report)
    module.exit_json(changed=True, report=report, json_path=jpath, markdown_path=mpath)


if __name__ == "__main__":
    main()
