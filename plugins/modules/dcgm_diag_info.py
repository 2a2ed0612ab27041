#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: dcgm_diag_info
short_description: Run or read C(dcgmi diag) and return per-test, per-GPU results
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Runs C(dcgmi diag -r RUN_LEVEL) with a hard timeout, or parses C(dcgmi-diag.txt) of a capture directory,
    and returns the C(dcgm) domain of the facts schema. Understands the DCGM 3.x and 4.x table layouts,
    per-GPU results and wrapped warning text.
  - A diagnostic that could not run (C(Error:) lines such as a missing plugin directory) is an error record of
    kind C(tool_error), not a GPU failure; a hung C(dcgmi) is killed and reported with kind C(timeout).
  - The diagnostic loads the GPUs (level 3 takes about 15 minutes) but changes no configuration.
extends_documentation_fragment:
  - gpuops.cluster.common
  - gpuops.cluster.common.attributes_info
options:
  run_level:
    description: Diagnostic level (1 quick, 2 medium, 3 long, 4 extended). Raise C(timeout) to match.
    type: int
    choices: [1, 2, 3, 4]
    default: 1
  dcgmi_path:
    description: Path of the C(dcgmi) binary; default found on C(PATH).
    type: path
"""

EXAMPLES = r"""
- name: Burn-in check before a node joins the cluster
  gpuops.cluster.dcgm_diag_info:
    run_level: 3
    timeout: 1800
  register: diag

- name: Fail when any GPU failed
  ansible.builtin.assert:
    that: diag.dcgm.overall in ['pass', 'warn']

- name: Read a saved diagnostic
  gpuops.cluster.dcgm_diag_info:
    capture_dir: ./captures/gpu-node-07/20261202T100000Z
  delegate_to: localhost
"""

RETURN = r"""
dcgm:
  description: The C(dcgm) domain of the facts schema (C(docs/facts.md)).
  returned: always
  type: dict
  sample:
    source: dcgmi
    level: 3
    layout: dcgm4
    overall: fail
    version: 4.0.0
    driver_version: 550.90.07
    gpu_device_ids: [25b6, 25b6]
    tests:
      - name: targeted_power
        category: Stress
        result: fail
        gpus: {"0": pass, "1": fail}
        messages: ["GPU 1 Max power of 224.1 did not reach desired power minimum ..."]
    gpus: {"0": pass, "1": fail}
    errors: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import boundary, collector_spec, pick
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.dcgm import DOMAIN, collect


def main():
    spec = collector_spec(run_level={"type": "int", "default": 1, "choices": [1, 2, 3, 4]}, dcgmi_path={"type": "path"})
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    dcgm = boundary(
        DOMAIN,
        collect,
        {"level": p["run_level"], "layout": None, "overall": None, "tests": [], "gpus": {}},
        **pick(p, "capture_dir", "run_level", "timeout", "dcgmi_path"),
    )
    module.exit_json(changed=False, dcgm=dcgm)


if __name__ == "__main__":
    main()
