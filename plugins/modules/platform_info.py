#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: platform_info
short_description: Cluster platform facts - the Slurm controller, queue, nodes and job history (and parallel storage)
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Runs once per inspection on the host named by C(gpuops_scheduler_host) (any host with the Slurm client
    commands and a working C(slurm.conf)), or reads a cluster capture directory (C(gpuops_cluster_capture_dir),
    format in C(docs/capture.md) "Cluster capture directory").
  - Live it runs C(scontrol ping) first; when no controller is up nothing else is asked (every other command would
    only wait for its timeout). Otherwise C(sdiag), C(sinfo -N -O ...), C(squeue --json) (the text form where the
    Slurm version has no C(--json)) and C(sacct --json -a -X) over O(history_hours) (text where needed). C(sacct)
    saying that it cannot talk to the database is recorded as accounting down, not as an error.
  - Every command is bounded by O(timeout) (killed and abandoned after it); a hung controller is reported as
    C(UNRESPONSIVE), not a hung play.
  - Parallel storage facts (Lustre, GPFS, NFS) are added under C(storage) when the collection has that collector.
  - The module only reads.
extends_documentation_fragment:
  - gpuops.cluster.common
  - gpuops.cluster.common.attributes_info
options:
  timeout:
    description: Seconds each command may run.
    type: float
    default: 15
  history_hours:
    description: The window of the job history read from C(sacct) (C(-S now-<history_hours>hours)).
    type: int
    default: 24
  bin_dir:
    description: The directory holding C(scontrol), C(sdiag), C(sinfo), C(squeue), C(sacct); default the E(PATH).
    type: path
  scheduler:
    description: Collect the scheduler part.
    type: bool
    default: true
  storage:
    description: Collect the parallel storage part (where the collector is installed).
    type: bool
    default: true
  storage_options:
    description: Options passed to the storage collector (see C(docs/capture.md)).
    type: dict
    default: {}
seealso:
  - module: gpuops.cluster.inspect_cluster
"""

EXAMPLES = r"""
- name: Platform facts from the Slurm head node, once
  gpuops.cluster.platform_info:
    timeout: 10
  delegate_to: "{{ gpuops_scheduler_host }}"
  run_once: true
  register: platform

- name: From a cluster capture directory
  gpuops.cluster.platform_info:
    capture_dir: /srv/captures/cluster-2026-12-03
  register: platform
"""

RETURN = r"""
platform:
  description: The platform facts (C(docs/capture.md) "Cluster capture directory" lists the fields).
  returned: always
  type: dict
  sample:
    schema: gpuops.platform/v1
    mode: live
    collected_at: 1796287460.2
    scheduler:
      source: live
      controllers: [{role: primary, host: head1, state: UP}]
      sdiag: {server_thread_count: 3, agent_queue_size: 0, dbd_agent_queue_size: 0, rpc_types: [], rpc_users: []}
      jobs: [{job_id: "7", partition: gpu, user: alice, state: PENDING, reason: Resources, submit: 1796287441.0,
              start: null, node_count: 1, gpus_per_node: 4, gpus: 4, nodes: []}]
      nodes: [{name: gpu-node-01, partitions: [gpu], state: idle, flags: [], gpus: 8, gpus_alloc: 0, reason: null}]
      history: [{job_id: "2", partition: gpu, user: bob, state: FAILED, exit_code: 3, nodes: [gpu-node-02],
                 submit: 1796287441.0, start: 1796287442.0, end: 1796287442.0, restarts: 0}]
      history_format: json
      accounting: {state: up, message: sacct answered (11 jobs)}
      errors: []
      unseen: []
      state: ok
    storage: null
    errors: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import boundary, collector_spec
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.platform import DOMAIN, SCHEMA, collect_platform


def main():
    spec = collector_spec(
        timeout=15,
        history_hours={"type": "int", "default": 24},
        bin_dir={"type": "path"},
        scheduler={"type": "bool", "default": True},
        storage={"type": "bool", "default": True},
        storage_options={"type": "dict", "default": {}},
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    if p["history_hours"] < 1:
        module.fail_json(msg="history_hours must be at least 1, got %d" % p["history_hours"])
    options = {
        "timeout": max(p["timeout"], 0.1),
        "history_hours": p["history_hours"],
        "bin_dir": p["bin_dir"],
        "scheduler": p["scheduler"],
        "storage": p["storage"],
        "storage_options": p["storage_options"],
    }
    platform = boundary(
        DOMAIN,
        collect_platform,
        {"schema": SCHEMA, "scheduler": None, "storage": None},
        capture_dir=p["capture_dir"],
        options=options,
    )
    module.exit_json(changed=False, platform=platform)


if __name__ == "__main__":
    main()
