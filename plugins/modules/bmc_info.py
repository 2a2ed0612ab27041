#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: bmc_info
short_description: Read BMC sensors, SEL, FRU and Redfish inventory as normalized facts
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Returns the C(bmc) domain of the facts schema (C(docs/facts.md)) - sensors with a normalized
    status (a discrete C(Failure detected) PSU is critical even when ipmitool's status column says C(ok); C(ns) is
    C(not_present), not a failure), SEL events with severity and direction, FRU serials, MC firmware, and from
    Redfish systems, chassis, firmware inventory, managers, PSUs, memory, leak detectors and log entries.
  - Without O(bmc_host) the local BMC is read in-band with C(ipmitool). With O(bmc_host) it talks to a remote BMC
    over IPMI LAN or Redfish; run it where the BMC network is reachable (often C(delegate_to) a management host).
  - Read-only. Power control is left to C(community.general.redfish_command) and C(community.general.ipmi_power).
  - Failures (BMC unreachable, a command that timed out, bad output) are returned in RV(bmc.errors), not raised.
options:
  ipmitool_path:
    description: The ipmitool binary.
    type: str
    default: ipmitool
  subset:
    description:
      - Read only these parts of a Redfish BMC; empty reads the whole BMC. Other protocols and O(capture_dir)
        always read everything.
      - C(leak) reads the Chassis collection, each chassis' ThermalSubsystem, LeakDetection and LeakDetectors
        (what C(gpuops.cluster.leak_assess) decides on) - a few requests instead of the whole walk. What it does not
        read is listed in RV(bmc.not_read), never returned as absent or healthy.
    type: list
    elements: str
    choices: [leak]
    default: []
extends_documentation_fragment:
  - gpuops.cluster.common
  - gpuops.cluster.common.attributes_info
  - gpuops.cluster.bmc
"""

EXAMPLES = r"""
- name: Read the local BMC in-band
  gpuops.cluster.bmc_info:
  register: __bmc

- name: Read a BMC over Redfish from the controller
  gpuops.cluster.bmc_info:
    bmc_host: "{{ bmc_address }}"
    bmc_user: "{{ bmc_user }}"
    bmc_password: "{{ bmc_password }}"
    validate_certs: false
  delegate_to: localhost

- name: Read a BMC over IPMI LAN, credentials from the environment
  gpuops.cluster.bmc_info:
    bmc_host: 10.0.0.21
    protocol: ipmi
  environment:
    GPUOPS_BMC_USER: admin
    GPUOPS_BMC_PASSWORD: "{{ vault_bmc_password }}"
  delegate_to: localhost

- name: Read only the leak detectors of a Redfish BMC (the leak response)
  gpuops.cluster.bmc_info:
    bmc_host: "{{ bmc_address }}"
    subset: [leak]
  delegate_to: localhost

- name: Read a capture directory
  gpuops.cluster.bmc_info:
    capture_dir: /var/tmp/gpuops/capture/gpu-node-01
"""

RETURN = r"""
bmc:
  description: The C(bmc) fact domain (docs/facts.md).
  returned: always
  type: dict
  contains:
    source:
      description: What was read - C(ipmitool), C(redfish), C(capture), or null when nothing was available.
      type: str
      sample: ipmitool
    sensors:
      description: Normalized sensors (ipmitool SDR or Redfish Thermal/Power/Sensors/LeakDetectors).
      type: list
      elements: dict
      sample: [{name: PSU1 Status, type: power_supply, reading: null, unit: null, status: critical,
                states: [Presence detected, Failure detected], thresholds: {}, number: 6, entity: "10.1"}]
    sel:
      description: SEL events; C(time) is null for Pre-Init timestamps.
      type: list
      elements: dict
      sample: [{id: 1, time: "2026-12-01T10:06:50", sensor_type: Power Supply, sensor: PSU1 Status,
                sensor_number: null, event: Failure detected, direction: asserted, severity: critical,
                reading: null, threshold: null, preinit_seconds: null, line: 1}]
    sel_info:
      description: C(ipmitool sel info) (entries, percent used, overflow = SEL full); empty for Redfish.
      type: dict
      sample: {entries: 104, free_space_bytes: 8160, percent_used: 16, overflow: false}
    fru:
      description: FRU devices with product/board serials.
      type: list
      elements: dict
      sample: [{name: Builtin FRU Device, id: 0, present: true, product: X10DRU-i+, serial: "S1234", part: "..."}]
    mc:
      description: C(ipmitool mc info).
      type: dict
      sample: {firmware_revision: "1.28", manufacturer: Hewlett-Packard, manufacturer_id: 11, product: null}
    redfish:
      description: Redfish inventory (lists are empty for ipmitool).
      type: dict
      sample: {systems: [{id: "1", power_state: "On", health: OK, health_rollup: OK, bios_version: "2.1.7"}],
               chassis: [], firmware: [{id: BIOS, name: BIOS, version: "2.1.7", updateable: true}], managers: [],
               leak_detectors: [{name: Cold Plate 0, state: OK, health: OK}], log_entries: [], psus: [], memory: []}
    subset:
      description: The O(subset) read (Redfish only).
      returned: when O(subset) is set and the BMC was read over Redfish
      type: list
      elements: str
      sample: [leak]
    not_read:
      description: The parts the O(subset) did not read (C(sensors:non_leak) - every sensor but the leak detectors,
        C(redfish.systems), ...); their lists are empty because they were not read, not because they are absent.
      returned: when O(subset) is set and the BMC was read over Redfish
      type: list
      elements: str
      sample: [redfish.firmware, redfish.log_entries, sel, sensors:non_leak]
    errors:
      description: Error records C({domain, kind, message, source, parser, line}).
      type: list
      elements: dict
      sample: [{domain: bmc, kind: timeout, message: "ipmitool sel elist: timed out after 30.0 s",
                source: ipmitool sel elist, parser: null, line: null}]
"""

from ansible.module_utils.basic import AnsibleModule, env_fallback

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.bmc import DOMAIN, collect, empty_result
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import boundary, collector_spec, pick


def main():
    spec = collector_spec(
        bmc_host={"type": "str"},
        bmc_user={"type": "str", "fallback": (env_fallback, ["GPUOPS_BMC_USER"])},
        bmc_password={"type": "str", "no_log": True, "fallback": (env_fallback, ["GPUOPS_BMC_PASSWORD"])},
        protocol={"type": "str", "choices": ["ipmi", "redfish"], "default": "redfish"},
        port={"type": "int"},
        validate_certs={"type": "bool", "default": True},
        ca_path={"type": "path"},
        auth={"type": "str", "choices": ["auto", "session", "basic"], "default": "auto"},
        ipmitool_path={"type": "str", "default": "ipmitool"},
        subset={"type": "list", "elements": "str", "choices": ["leak"], "default": []},
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    if not p["bmc_host"]:
        mode = "inband"
    else:
        mode = "ipmi_lan" if p["protocol"] == "ipmi" else "redfish"
    bmc = boundary(
        DOMAIN,
        collect,
        empty_result(None),
        **pick(
            p,
            "capture_dir",
            "port",
            "validate_certs",
            "ca_path",
            "auth",
            "timeout",
            "ipmitool_path",
            "subset",
            mode=mode,
            host=p["bmc_host"],
            user=p["bmc_user"],
            password=p["bmc_password"],
        ),
    )
    module.exit_json(changed=False, bmc=bmc)


if __name__ == "__main__":
    main()
