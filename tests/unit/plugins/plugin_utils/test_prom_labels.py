# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.prom label values are bounded (issue 14): the code label never carries free text."""

from __future__ import annotations

import re

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import report as _report


@pytest.mark.parametrize(
    "code, label",
    [
        (None, ""),
        (79, "79"),
        ("79", "79"),
        ("pending", "pending"),
        ("volatile_uncorrected", "volatile_uncorrected"),
        ("hw_thermal_slowdown", "hw_thermal_slowdown"),
        ("DOWN", "DOWN"),
        ("ARMED", "ARMED"),
        # free text from BMCs and logs: never a label value
        ("PSU1 Status: Failure detected", "other"),
        ("Redundancy Lost", "other"),
        ("Failure", "other"),
        ("0x1a2b3c", "other"),
        ('x"} 1\ngpuops_evil 1', "other"),
        ("a" * 41, "other"),
        ("1234567", "other"),
        ("", "other"),
    ],
)
def test_prom_code(code, label):
    assert _report.prom_code(code) == label


def _report_with(findings):
    nodes = {"n1": {"status": "degraded", "findings": findings}}
    return _report.build_report("2026-12-03T00:00:00Z", nodes, [], policy_version="t")


def test_free_text_codes_make_one_series_not_one_per_text():
    findings = [
        {"check": "bmc.sel", "component": "bmc", "code": "SEL entry %d: Memory ECC at 0x%x" % (i, i * 4096),
         "severity": "P3", "action": "monitor"}
        for i in range(100)
    ]  # fmt: skip
    prom = _report.to_prometheus(_report_with(findings))
    series = [ln for ln in prom.splitlines() if ln.startswith("gpuops_finding{")]
    assert series == [
        'gpuops_finding{node="n1",check="bmc.sel",component="bmc",code="other",severity="P3",action="monitor"} 1'
    ]
    assert "Memory ECC" not in prom
    # the counts are unchanged: 100 findings
    assert re.search(r'^gpuops_node_findings\{node="n1",severity="P3"\} 100$', prom, re.M)


def test_enumerated_codes_stay_distinct():
    findings = [
        {"check": "gpu.xid", "component": "gpu1", "code": c, "severity": "P1", "action": "isolate"}
        for c in ("79", "48")
    ]
    prom = _report.to_prometheus(_report_with(findings))
    assert 'code="79"' in prom and 'code="48"' in prom
