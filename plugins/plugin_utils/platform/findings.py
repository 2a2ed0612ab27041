# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The findings list of the platform checks (``platform``, ``platform_jobs``): cluster findings shaped as
``_cluster`` makes them (host None, id ``cluster:<check>:<component>:<code>``), or node findings."""

from __future__ import annotations

import datetime
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import respond_by


_OUT_STATES = ("down", "drained", "draining", "drain", "fail", "failing", "not_responding", "inval", "invalid")


def node_out(node: Dict[str, Any]) -> Optional[str]:
    """Why a node is out of service (its state word), or None. A node ``sinfo -R`` lists without a state
    (``unavailable``: down, drained, fail or failing) is out as ``unavailable``."""
    state = str(node.get("state") or "").lower()
    if "*" in (node.get("flags") or []):
        return "not_responding"
    if not state and node.get("unavailable"):
        return "unavailable"
    for word in _OUT_STATES:
        if state.startswith(word):
            return "drained" if word == "drain" else word
    return None


def as_dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


class Out:
    """Platform findings in the order they were added."""

    def __init__(self, policy: Dict[str, Any], now: datetime.datetime) -> None:
        self.policy = policy
        self.now = now
        self.findings: List[Dict[str, Any]] = []

    def add(
        self,
        check: str,
        rule: Dict[str, Any],
        component: str,
        code: str,
        message: str,
        why: str,
        evidence: Dict[str, Any],
        **where: Optional[str],
    ) -> Dict[str, Any]:
        """One finding with ``rule``'s severity and action; ``host=`` makes it a node finding of that node."""
        host = where.get("host")
        severity = rule["severity"]
        finding = {
            "check": check,
            "severity": severity,
            "component": component,
            "code": code,
            "message": message,
            "action": rule["action"],
            "rule": why,
            "respond_by": respond_by(severity, self.now, self.policy),
            "evidence": evidence,
            "host": host,
            "cause": None,
            "id": "%s:%s:%s:%s" % (host or "cluster", check, component, code),
        }
        self.findings.append(finding)
        return finding
