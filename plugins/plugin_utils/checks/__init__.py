# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-node health checks: normalized facts (docs/facts.md) -> findings (docs/findings.md).

Entry point: ``evaluate_node(facts, profile, policy, state, now, host) -> (findings, new_host_state)``.
Every threshold, severity, action, escalation and clear rule comes from the policy (``_policy.py``);
``CHECKS`` lists every check id with what it reads (docs/checks.md is written from it).

The package (docs/checks.md "Code layout"): ``run`` (the entry point), ``catalogue`` (the check registry),
``context`` (the shared ``Ctx`` and fact accessors), ``domains`` (what could be read; collector errors), one
module per check domain (``gpu``, ``gpu_links``, ``xid``, ``ib``, ``bmc``, ``node``, ``scheduler``, ``drift``)
and ``faults`` (escalation, clear rules, active faults). This file only re-exports the public API.

Pure Python, no Ansible imports; runs on the controller.
"""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.catalogue import (
    CHECK_DOMAINS,
    CHECKS,
    FACT_DOMAINS,
    PROFILE_DOMAINS,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.domains import (
    domain_states,
    finding_domain,
    needed_domains,
    unknown_domains,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.drift import make_baseline
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.run import evaluate_node

__all__ = [
    "CHECKS",
    "CHECK_DOMAINS",
    "FACT_DOMAINS",
    "PROFILE_DOMAINS",
    "domain_states",
    "evaluate_node",
    "finding_domain",
    "make_baseline",
    "needed_domains",
    "unknown_domains",
]
