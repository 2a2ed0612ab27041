# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_test_info
short_description: Run the NCCL tests' all_reduce_perf (or read its capture) and return the parsed bandwidth
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Runs C(all_reduce_perf) (U(https://github.com/NVIDIA/nccl-tests)) with a hard timeout and parses its output
    (C(plugins/module_utils/_nccl.py)) - the per-size rows (algbw, busbw, C(#wrong)), C(# Avg bus bandwidth), the ranks
    and their hosts - or reads the capture file C(nccl-all-reduce.txt) from O(capture_dir).
  - With O(rails) it runs once per InfiniBand rail with C(NCCL_IB_HCA=<rail>) (and O(launcher), e.g. an C(mpirun)
    prefix that spans the nodes onboarding together), returning one result per rail.
  - A timeout, a tool failure or a missing tool is an error record in the result, never a failed task.
  - Although the module only reads, the benchmark loads the GPUs and the fabric; run it on drained nodes.
options:
  timeout:
    description:
      - "Seconds one all_reduce_perf run may take before it is killed (the rows printed so far are kept)."
    type: float
    default: 300
  path:
    description: "The all_reduce_perf executable (default - from PATH)."
    type: path
  min_bytes:
    description: "Smallest message size (C(-b))."
    type: str
    default: "1G"
  max_bytes:
    description: "Largest message size (C(-e))."
    type: str
    default: "8G"
  step_factor:
    description: "Size multiplication factor (C(-f))."
    type: int
    default: 2
  gpus:
    description: "GPUs per process (C(-g)); 0 leaves it out."
    type: int
    default: 0
  launcher:
    description: "Command prefix (e.g. C([mpirun, -np, \"16\", -H, \"n1:8,n2:8\"]))."
    type: list
    elements: str
    default: []
  extra_args:
    description: "More all_reduce_perf arguments."
    type: list
    elements: str
    default: []
  env:
    description: "Environment for the run (e.g. C(NCCL_DEBUG=WARN))."
    type: dict
    default: {}
  rails:
    description: "Run once per HCA with C(NCCL_IB_HCA) set to it."
    type: list
    elements: str
    default: []
extends_documentation_fragment: [gpuops.cluster.common, gpuops.cluster.common.attributes_info]
"""

EXAMPLES = r"""
- name: Single-node all-reduce bandwidth
  gpuops.cluster.nccl_test_info:
    min_bytes: 1G
    max_bytes: 8G
    gpus: 8
    timeout: 300
  register: nccl

- name: Per rail, across the nodes onboarding together
  gpuops.cluster.nccl_test_info:
    launcher: [mpirun, --allow-run-as-root, -np, "16", -H, "gpu-node-01:8,gpu-node-02:8"]
    rails: [mlx5_0, mlx5_1]
  run_once: true
"""

RETURN = r"""
nccl:
  description: The parsed run (see C(plugins/module_utils/_nccl.py)); with O(rails), the first rail's.
  returned: always
  type: dict
  sample: {source: all_reduce_perf, avg_busbw_gbps: 474.2, max_busbw_gbps: 478.9, wrong: 0, rows: [], errors: []}
rails:
  description: One result per rail, C({rail, result}).
  returned: always
  type: list
  sample: [{rail: mlx5_0, result: {avg_busbw_gbps: 47.1, errors: []}}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cluster.plugins.module_utils._common import error_record
from ansible_collections.gpuops.cluster.plugins.module_utils._nccl import DOMAIN, collect


def _run(p, env):
    try:
        return collect(
            capture_dir=p["capture_dir"],
            timeout=p["timeout"],
            path=p["path"],
            env=env,
            min_bytes=p["min_bytes"],
            max_bytes=p["max_bytes"],
            step_factor=p["step_factor"],
            gpus=p["gpus"],
            launcher=p["launcher"],
            extra_args=p["extra_args"],
        )
    except Exception as exc:  # noqa: BLE001 - the collector boundary: a bug becomes an error record
        return {
            "source": None,
            "rows": [],
            "errors": [error_record(DOMAIN, "internal", "%s: %s" % (type(exc).__name__, exc))],
        }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            capture_dir=dict(type="path"),
            timeout=dict(type="float", default=300),
            path=dict(type="path"),
            min_bytes=dict(type="str", default="1G"),
            max_bytes=dict(type="str", default="8G"),
            step_factor=dict(type="int", default=2),
            gpus=dict(type="int", default=0),
            launcher=dict(type="list", elements="str", default=[]),
            extra_args=dict(type="list", elements="str", default=[]),
            env=dict(type="dict", default={}),
            rails=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    env = {str(k): str(v) for k, v in p["env"].items()}
    rails = []
    for rail in p["rails"]:
        rails.append({"rail": rail, "result": _run(p, dict(env, NCCL_IB_HCA=rail))})
    nccl = rails[0]["result"] if rails else _run(p, env)
    module.exit_json(changed=False, nccl=nccl, rails=rails)


if __name__ == "__main__":
    main()
