# -*- coding: utf-8 -*-
"""docs/metrics.md names every metric the inspection writes (the SLA clocks were missing from it, issue 39)."""

from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_metric_the_report_writes_is_documented():
    with open(os.path.join(ROOT, "plugins", "plugin_utils", "inspect", "report.py"), encoding="utf-8") as fh:
        code = fh.read()
    written = set(re.findall(r'metric\(\s*"(gpuops_[a-z_]+)"', code))
    assert {"gpuops_incident_sla_seconds_remaining", "gpuops_incident_sla_breached", "gpuops_finding"} <= written
    with open(os.path.join(ROOT, "docs", "metrics.md"), encoding="utf-8") as fh:
        documented = set(re.findall(r"^\| `(gpuops_[a-z_]+)`", fh.read(), re.M))
    assert sorted(written - documented) == []
