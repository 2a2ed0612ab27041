# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.isolation_targets: the nodes whose own findings ask for isolation (never one in status error)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.cluster.plugins.filter import isolation_targets as F


def _f(host, action, check="gpu.xid", code="79"):
    return {"host": host, "action": action, "check": check, "code": code, "severity": "P1"}


RESULT = {
    "summary": {},
    "nodes": {
        "n3": {"status": "faulty", "findings": [_f("n3", "isolate"), _f("n3", "monitor", "gpu.temp", None)]},
        "n1": {"status": "faulty", "findings": [_f("n1", "isolate", "ib.port", None), _f("n1", "isolate")]},
        "n2": {"status": "error", "findings": [_f("n2", "isolate")]},  # evidence unreadable: never a target
        "n4": {"status": "healthy", "findings": []},
        "n5": {"status": "degraded", "findings": [_f("n5", "monitor")]},  # correlated member, rewritten to monitor
    },
}


def test_targets_are_sorted_and_carry_their_isolate_findings():
    out = F.isolation_targets(RESULT)
    assert out["nodes"] == ["n1", "n3"]
    assert [(f["host"], f["check"]) for f in out["findings"]] == [
        ("n1", "ib.port"),
        ("n1", "gpu.xid"),
        ("n3", "gpu.xid"),
    ]
    assert set(out["by_host"]) == {"n1", "n3"} and len(out["by_host"]["n1"]) == 2


def test_other_actions_and_non_disruptive_ones_on_error_nodes():
    assert F.isolation_targets(RESULT, action="monitor")["nodes"] == ["n3", "n5"]
    error_monitor = {"nodes": {"e": {"status": "error", "findings": [_f("e", "monitor")]}}}
    assert F.isolation_targets(error_monitor, action="monitor")["nodes"] == ["e"]  # only disruptive ones are withheld
    assert F.isolation_targets(error_monitor, action="isolate") == {"nodes": [], "findings": [], "by_host": {}}


def test_nodes_without_findings_key_and_bad_input():
    assert F.isolation_targets({"nodes": {"a": {"status": "healthy"}}})["nodes"] == []
    for bad in (None, [], {"nodes": []}, {"nodes": {"a": "faulty"}}, {"nodes": {"a": {"findings": "x"}}}):
        with pytest.raises(AnsibleFilterError):
            F.isolation_targets(bad)


def test_registered_under_its_name():
    assert F.FilterModule().filters()["isolation_targets"] is F.isolation_targets
