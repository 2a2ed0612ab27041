#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_info
short_description: Normalized NVIDIA GPU facts from NVML, nvidia-smi or a capture directory
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Returns the C(gpu) domain of the facts schema (C(docs/facts.md)) - per GPU identity, versions, temperatures,
    power, clocks, memory, ECC (all nvidia-smi counter layouts), retired pages, remapped rows, clock event (throttle)
    reasons named alike across the R535 rename, PCIe link, NVLink state and errors, MIG, fabric, recovery action.
  - Live, NVML (the C(pynvml) module of nvidia-ml-py) is read in a child process when it can be imported and the
    driver answers; otherwise C(nvidia-smi -q -x), C(nvidia-smi nvlink -s) and C(nvidia-smi nvlink -e) are run.
    NVML and nvidia-smi hang on a sick driver, so every call is killed after O(timeout); a timed-out NVML is
    reported and nvidia-smi is then not tried.
  - With O(capture_dir), C(nvidia-smi-q.xml) (else C(nvidia-smi-q.txt)) and the NVLink files are read instead.
  - A GPU the driver cannot read ("GPU is lost", "Unknown Error") is a record with C(readable=false) and the message,
    never dropped; output cut short keeps the GPUs printed before the cut and adds an error record.
extends_documentation_fragment:
  - gpuops.cluster.common
  - gpuops.cluster.common.attributes_info
options:
  use_nvml:
    description:
      - Try NVML through C(pynvml) first. When false, or when C(pynvml) cannot be imported or NVML fails, nvidia-smi
        is run.
    type: bool
    default: true
  nvidia_smi_path:
    description: The nvidia-smi command (a name looked up on C(PATH), or a path).
    type: str
    default: nvidia-smi
requirements: [nvidia-ml-py (C(pynvml)) for the NVML path (optional), nvidia-smi for the fallback (optional)]
notes:
  - Unknown values (C(N/A), C([Not Supported])) are C(null). T.Limit temperatures are margins, returned under
    C(*_tlimit_c) keys, never as absolute thresholds.
seealso:
  - module: gpuops.cluster.kernel_events_info
"""

EXAMPLES = r"""
- name: GPU facts of the node
  gpuops.cluster.gpu_info:
    timeout: 20
  register: gpu_facts

- name: Fail when a GPU cannot be read
  ansible.builtin.assert:
    that: gpu_facts.gpu.gpus | selectattr('readable', 'equalto', false) | list | length == 0

- name: Analyse a saved capture on the controller
  gpuops.cluster.gpu_info:
    capture_dir: ./captures/gpu-node-07/20261202T100000Z
  delegate_to: localhost

- name: nvidia-smi only, from a non-standard location
  gpuops.cluster.gpu_info:
    use_nvml: false
    nvidia_smi_path: /usr/local/nvidia/bin/nvidia-smi
"""

RETURN = r"""
gpu:
  description: The C(gpu) domain of the facts schema (C(docs/facts.md)).
  returned: always
  type: dict
  sample:
    source: nvidia-smi-xml
    driver_version: "535.161.08"
    cuda_version: "12.2"
    count: 1
    gpus:
      - index: 0
        readable: true
        error: null
        bus_id: "00000000:19:00.0"
        uuid: GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa
        serial: "1650124031592"
        name: NVIDIA H100 80GB HBM3
        architecture: Hopper
        vbios_version: 96.00.74.00.0D
        driver_version: "535.161.08"
        cuda_version: "12.2"
        persistence_mode: true
        mig_mode: {current: false, pending: false}
        temperature: {gpu_c: 29, memory_c: 39, slowdown_c: null, shutdown_c: null, max_operating_c: null, tlimit_c: 56,
                      memory_max_operating_c: null, slowdown_tlimit_c: -2, shutdown_tlimit_c: -8, max_operating_tlimit_c: 0}
        power: {draw_w: 67.74, instant_w: null, limit_w: 700.0, enforced_limit_w: 700.0, default_limit_w: 700.0,
                max_limit_w: 700.0}
        clocks: {graphics_mhz: 86, sm_mhz: 86, memory_mhz: 2619, max_graphics_mhz: 1980, max_sm_mhz: 1980,
                 max_memory_mhz: 2619}
        utilization: {gpu_pct: 0, memory_pct: 0}
        memory: {total_mib: 81559, used_mib: 0}
        ecc: {mode_current: true, mode_pending: true, layout: sram_split, volatile: {corrected: 0, uncorrected: 0},
              aggregate: {corrected: 0, uncorrected: 0},
              by_type: {volatile: {sram_corrected: 0, dram_corrected: 0, sram_uncorrected: 0, dram_uncorrected: 0},
                        aggregate: {sram_corrected: 0, dram_corrected: 0, sram_uncorrected: 0, dram_uncorrected: 0}},
              sram_threshold_exceeded: false, channel_repair_pending: null, tpc_repair_pending: null,
              unrepairable_memory: null}
        retired_pages: {supported: false, sbe: null, dbe: null, pending: null}
        remapped_rows: {supported: true, correctable: 0, uncorrectable: 0, pending: false, failure: false,
                        histogram: {max: 2560, high: 0, partial: 0, low: 0, none: 0}}
        throttle: {active: [hw_slowdown, hw_power_brake_slowdown], raw: {clocks_event_reason_hw_slowdown: Active},
                   counters_us: null}
        pcie: {gen_current: 5, gen_max: 5, gen_max_device: 5, gen_max_host: 5, width_current: 16, width_max: 16,
               replay_counter: 67}
        nvlink: {links: [{link: 0, state: up, speed_gbps: 26.562, errors: {replay: 0, recovery: 0, crc_flit: 0}}], error: null}
        c2c: null
        fabric: {state: Completed, status: Success, clique_id: null, cluster_uuid: null,
                 health: {degraded_bandwidth: null, route_recovery: null, route_unhealthy: null,
                          access_timeout_recovery: null, summary: null, incorrect_configuration: null}}
        reset_status: {reset_required: false, drain_and_reset_recommended: false}
        recovery_action: null
        processes: [{pid: 1234, name: python, type: C, used_mib: 1024}]
    errors: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import boundary, collector_spec, pick
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.gpu import DOMAIN, collect


def main():
    spec = collector_spec(
        use_nvml={"type": "bool", "default": True}, nvidia_smi_path={"type": "str", "default": "nvidia-smi"}
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    gpu = boundary(
        DOMAIN,
        collect,
        {"driver_version": None, "cuda_version": None, "count": None, "gpus": []},
        **pick(p, "capture_dir", "use_nvml", timeout=max(p["timeout"], 0.1), nvidia_smi=p["nvidia_smi_path"]),
    )
    module.exit_json(changed=False, gpu=gpu)


if __name__ == "__main__":
    main()
