# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""extensions/grafana/gpuops-dashboard.json: the dashboard-model fields it uses have the types Grafana's
dashboard schema (schemaVersion 39) gives them, the layout fits the 24-column grid, every query is valid PromQL
(the real promtool parses each one as a recording rule) and names only metrics that exist: the inspection's
gpuops.prom (plugins/plugin_utils/inspect/report.py), the node-side check's textfile contract, and the dcgm-exporter /
node_exporter metrics the alert rules use."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import prom_rules as _prom_rules

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, "extensions", "grafana", "gpuops-dashboard.json")
PANEL_TYPES = {"row", "stat", "timeseries", "table", "bargauge", "text", "state-timeline"}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset"}


def load():
    with open(DASHBOARD, encoding="utf-8") as fh:
        return json.load(fh)


def all_panels(dash):
    for p in dash["panels"]:
        yield p
        yield from p.get("panels", [])


def known_metrics():
    with open(os.path.join(ROOT, "plugins", "plugin_utils", "inspect", "report.py"), encoding="utf-8") as fh:
        names = set(re.findall(r"\b(gpuops_[a-z_]+)\{?", fh.read()))
    names |= set(_prom_rules.NODE_HEALTH_METRICS)
    with open(_prom_rules.DEFAULT_OUT, encoding="utf-8") as fh:
        names |= set(re.findall(r"\b(DCGM_FI_[A-Z_]+|node_infiniband_[a-z_]+)\b", fh.read()))
    return names | {"ALERTS", "up"}


def exprs(dash):
    for p in all_panels(dash):
        for t in p.get("targets", []):
            yield p["title"], t["expr"]


def metric_names(expr):
    """Identifiers of an expression that are neither functions, keywords, label names nor strings."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)  # label lists
    text = re.sub(r"\[[^\]]*\]", "", text)  # range durations
    idents = re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*(?!\s*\()\b", text)
    return {i for i in idents if i not in PROMQL_WORDS and not re.fullmatch(r"[0-9.]+[smhdwy]?", i)} - _functions(text)


def _functions(text):
    return set(re.findall(r"([A-Za-z_]+)\s*\(", text))


def test_dashboard_model_fields():
    dash = load()
    assert isinstance(dash["uid"], str) and re.fullmatch(r"[A-Za-z0-9_-]{1,40}", dash["uid"])
    assert isinstance(dash["title"], str) and dash["title"]
    assert isinstance(dash["schemaVersion"], int) and dash["schemaVersion"] >= 36
    assert isinstance(dash["version"], int) and isinstance(dash["editable"], bool)
    assert set(dash["time"]) == {"from", "to"} and isinstance(dash["refresh"], str)
    assert isinstance(dash["annotations"]["list"], list) and isinstance(dash["tags"], list)
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for name in ("cluster", "rack"):
        assert variables[name]["type"] == "query" and variables[name]["datasource"]["uid"] == "${datasource}"


def test_panels_fit_the_grid_and_have_unique_ids():
    dash = load()
    ids = [p["id"] for p in all_panels(dash)]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids)
    for p in all_panels(dash):
        assert p["type"] in PANEL_TYPES, p["title"]
        g = p["gridPos"]
        assert all(isinstance(g[k], int) and g[k] >= 0 for k in ("h", "w", "x", "y")), p["title"]
        assert g["w"] >= 1 and g["x"] + g["w"] <= 24 and g["h"] >= 1, p["title"]
        if p["type"] == "row":
            assert isinstance(p["collapsed"], bool) and isinstance(p["panels"], list)
            assert p["collapsed"] or not p["panels"], "an open row holds no panels: %s" % p["title"]
            continue
        if p["type"] != "text":
            assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
            refs = [t["refId"] for t in p["targets"]]
            assert refs and len(refs) == len(set(refs)), p["title"]
            assert isinstance(p["fieldConfig"]["defaults"], dict) and isinstance(p["fieldConfig"]["overrides"], list)


def test_sections_the_issue_asks_for():
    titles = " | ".join(p["title"] for p in all_panels(load()))
    for words in ("Fleet status", "Findings by severity and rack", "Node-side verdicts", "Verdict per node"):
        assert words in titles
    sla = [p for p in load()["panels"] if p["type"] == "row" and "SLA" in p["title"]]
    assert len(sla) == 1 and "PLACEHOLDER" not in sla[0]["title"]
    # the SLA row queries the metrics the inspection exports (gpuops_incident_sla_*, docs/metrics.md)
    exprs_ = " ".join(expr for _title, expr in exprs(load()))
    assert "gpuops_incident_sla_seconds_remaining" in exprs_ and "gpuops_incident_sla_breached" in exprs_


def test_every_expression_names_known_metrics_only():
    known = known_metrics()
    seen = set()
    for title, expr in exprs(load()):
        names = metric_names(expr)
        assert names, (title, expr)
        assert names <= known, (title, names - known)
        seen |= names
    assert {"gpuops_node_health", "gpuops_node_findings", "gpuops_finding", "gpuops_findings"} <= seen
    assert metric_names('sum by (rack) (foo_bar{a="b"}[5m]) * on(node) group_left(rack) up') == {"foo_bar", "up"}


def test_every_expression_is_valid_promql(tmp_path):
    exe = shutil.which("promtool")
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool not installed (tests/testbed/deps.sh: prometheus)")
        pytest.skip("promtool not installed")
    rules = [
        {"record": "gpuops:dashboard:%d" % i, "expr": expr.replace("$cluster", ".*").replace("$rack", ".*")}
        for i, (unused_title, expr) in enumerate(exprs(load()))
    ]
    path = tmp_path / "dash-rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    proc = subprocess.run([exe, "check", "rules", str(path)], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
