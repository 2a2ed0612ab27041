# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: xid_info
short_description: What an NVIDIA Xid code means, how urgent it is and what to do about it
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Looks an Xid code up in the collection's Xid catalogue (C(module_utils/_xid_catalog), the table the health
    checks use) - NVIDIA's name and description, NVIDIA's immediate and investigatory actions, our default
    severity (C(P1) act now, C(P2) act soon, C(P3) watch) and action, whether it is an application fault, and what
    other tools (DCGM health, k8s-device-plugin, gpud, GCM, Azure NHC, the AWS suite, imbue) do with it, with the
    disagreements between them.
  - With O(policy_overrides), a site's C(xid.overrides) change severity and action exactly as they do in an
    inspection (C(docs/policy.md)); C(rule) then says so.
  - A code that is not in the catalogue gives the default entry (C(known=false), severity C(P2), action
    C(monitor)); input that is not an Xid number raises an error.
options:
  _input:
    description:
      - The Xid code - an integer, a numeric string, or a kernel event of P(gpuops.cluster.kernel_events#filter)
        (its C(code); an event of kind C(fallen_off_bus) is Xid 79).
    type: raw
    required: true
  policy_overrides:
    description:
      - The site's policy overrides (the inventory's C(gpuops_policy_overrides)); they are merged into the default
        policy and validated as the inspection does.
    type: dict
"""

EXAMPLES = r"""
- name: What is Xid 79?
  ansible.builtin.debug:
    msg: "{{ 79 | gpuops.cluster.xid_info }}"

- name: Name and action of every Xid in a kernel log, with the site's policy
  ansible.builtin.debug:
    msg: "{{ item.code }} {{ __xid.name }}: {{ __xid.severity }} / {{ __xid.action }}"
  loop: "{{ (__klog.stdout | gpuops.cluster.kernel_events).events | selectattr('kind', 'eq', 'xid') | list }}"
  vars:
    __xid: "{{ item | gpuops.cluster.xid_info(policy_overrides=gpuops_policy_overrides | default({})) }}"
"""

RETURN = r"""
_value:
  description:
    - The catalogue entry - C(code), C(name), C(description), C(category), C(nvidia_action),
      C(nvidia_investigatory), C(severity), C(action), C(user_caused), C(known), C(sources) (tool to what it does),
      C(disagreements), C(note), C(fatal_escalation) - and C(rule) (where severity and action come from, as in a
      finding's C(rule)).
  type: dict
  sample:
    code: 79
    name: ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS
    description: GPU has fallen off the bus
    category: pcie
    nvidia_action: RESTART_BM
    nvidia_investigatory: CONTACT_SUPPORT
    severity: P1
    action: reboot
    user_caused: false
    known: true
    sources: {nvidia: RESTART_BM / CONTACT_SUPPORT, dcgm_health: F, k8s_device_plugin: unhealthy,
              gpud: "F, RebootSystem -> HardwareInspection", gcm: crit, azure_nhc: fail, aws_suite: REBOOT,
              imbue_hardware: "yes"}
    source: "NVIDIA Xid catalog (Xid-Catalog.xlsx of 2025-09-30): RESTART_BM -> P1 (BUCKETS)"
    disagreements: null
    note: Reboot the node; repeated -> inspect riser, slot, power and seating (kernel PCI/AER logs), then contact support (NVIDIA CONTACT_SUPPORT)
    fatal_escalation: null
    rule: "xid_catalog[79] (NVIDIA: RESTART_BM)"
"""

import re
from typing import Any, Dict

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _filters
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import plain
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.xid import xid_row
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import PolicyError, merge_policy

NAME = "xid_info"
_CODE = re.compile(r"[0-9]{1,4}")


def _code(value: Any) -> int:
    if isinstance(value, dict) or hasattr(value, "items"):
        event = plain(value)
        value = 79 if event.get("kind") == "fallen_off_bus" else event.get("code")
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 9999:
        return value
    if isinstance(value, str) and _CODE.fullmatch(value.strip()):
        return int(value.strip())
    raise _filters.fail(NAME, "expects an Xid code (a number from 0 to 9999) or a kernel event, got %r" % (value,))


def xid_info(data: Any, policy_overrides: Any = None) -> Dict[str, Any]:
    """An Xid code -> its catalogue entry (with the site's overrides) and the rule that gave its verdict."""
    code = _code(data)
    try:
        policy = merge_policy(None, plain(policy_overrides) if policy_overrides else None)
    except PolicyError as exc:
        raise _filters.fail(NAME, "policy_overrides: %s" % exc) from None
    row, notes = xid_row(policy, code)
    row["rule"] = "; ".join(notes)
    return row


class FilterModule:
    """gpuops.cluster knowledge filter: xid_info."""

    def filters(self) -> Dict[str, Any]:
        return {NAME: xid_info}
