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
    (C(plugins/module_utils/collectors/nccl.py)) - the per-size rows (algbw, busbw, C(#wrong)), C(# Avg bus bandwidth), the ranks
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
  description: The parsed run (see C(plugins/module_utils/collectors/nccl.py)); with O(rails), the first rail's.
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

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import boundary, collector_spec, pick
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.nccl import DOMAIN, collect

_OPTIONS = ("capture_dir", "timeout", "path", "min_bytes", "max_bytes", "step_factor", "gpus", "launcher", "extra_args")


def _run(p, env):
    return boundary(DOMAIN, collect, {"rows": []}, **pick(p, *_OPTIONS, env=env))


def main():
    spec = collector_spec(
        timeout=300,
        path={"type": "path"},
        min_bytes={"type": "str", "default": "1G"},
        max_bytes={"type": "str", "default": "8G"},
        step_factor={"type": "int", "default": 2},
        gpus={"type": "int", "default": 0},
        launcher={"type": "list", "elements": "str", "default": []},
        extra_args={"type": "list", "elements": "str", "default": []},
        env={"type": "dict", "default": {}},
        rails={"type": "list", "elements": "str", "default": []},
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    env = {str(k): str(v) for k, v in p["env"].items()}
    rails = [{"rail": rail, "result": _run(p, dict(env, NCCL_IB_HCA=rail))} for rail in p["rails"]]
    nccl = rails[0]["result"] if rails else _run(p, env)
    module.exit_json(changed=False, nccl=nccl, rails=rails)


if __name__ == "__main__":
    main()
