# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report writers (plugin_utils/_report.py, _inspect.write_reports): report.json and gpuops.prom as
interfaces, report.md and report.html from Jinja2 templates a site can override, hostile evidence escaped."""

from __future__ import annotations

import json
import os
import re
import stat
from html.parser import HTMLParser

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _inspect, _report

HOSTILE = "<script>alert('x')</script> & \"quoted\" |pipe|\nsecond line"


def _report_dict():
    nodes = {
        "gpu-node-01": {"status": "healthy", "findings": [], "rack": "r1", "leaf": "l1", "power": "p1"},
        "gpu-node-02": {
            "status": "faulty",
            "rack": "r1",
            "leaf": "l1",
            "findings": [
                {"severity": "P2", "check": "gpu.temp", "component": "GPU1", "message": "hot", "action": "monitor"},
                {
                    "severity": "P1",
                    "check": "gpu.xid",
                    "component": "GPU3",
                    "message": HOSTILE,
                    "action": "isolate",
                    "cause": "leaf<l1>",
                    "respond_by": "2026-12-02T12:00:00Z",
                },
            ],
        },
        "gpu-node-03": {"status": "error", "findings": [], "rack": None},
    }
    cluster = [{"severity": "P0", "check": "cluster.leak", "component": "power", "message": "<b>leak</b>"}]
    return _report.build_report("2026-12-02T10:00:00Z", nodes, cluster, "2026.12.0", "abcdef0123456789")


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _parse(html_text):
    p = _Text()
    p.feed(html_text)
    return p


def test_build_report_counts_and_worst_severity():
    r = _report_dict()
    assert r["schema"] == "gpuops.report/v1"
    assert r["summary"]["status"] == {"healthy": 1, "degraded": 0, "faulty": 1, "unreachable": 0, "error": 1}
    assert r["summary"]["severity"] == {"P0": 1, "P1": 1, "P2": 1, "P3": 0}
    assert r["nodes"]["gpu-node-02"]["severity"] == "P1" and r["nodes"]["gpu-node-01"]["severity"] is None
    assert _report.worst_severity([{"severity": "P4"}, {"severity": "P3"}, {}]) == "P3"


def test_json_and_prometheus_are_unchanged_interfaces():
    r = _report_dict()
    assert json.loads(_report.to_json(r)) == json.loads(json.dumps(r))
    prom = _report.to_prometheus(r, generated_ts=1796205600)
    assert 'gpuops_nodes{status="faulty"} 1' in prom and 'gpuops_findings{severity="P0"} 1' in prom
    assert 'gpuops_node_findings{node="gpu-node-02",severity="P1"} 1' in prom
    assert "gpuops_inspection_timestamp_seconds 1796205600" in prom
    assert "message" not in prom and "<script>" not in prom


def test_markdown_lists_nodes_worst_first_with_escaped_cells():
    md = _report.to_markdown(_report_dict())
    assert md.startswith("# GPU cluster inspection, 2026-12-02T10:00:00Z\n\n3 nodes: 1 healthy, 0 degraded, 1 faulty")
    assert "Findings: P0 1, P1 1, P2 0" not in md and "Findings: P0 1, P1 1, P2 1, P3 0." in md
    assert "Policy 2026.12.0 (hash abcdef012345)." in md
    assert "| P0 | cluster.leak | power | <b>leak</b> |  |  |" in md
    # gpu-node-02 (P1) before gpu-node-03 (error, no findings); P1 row before P2 row
    assert md.index("### gpu-node-02: faulty (worst P1)") < md.index("### gpu-node-03: error")
    row = [line for line in md.splitlines() if "gpu.xid" in line][0]
    assert row.startswith("| P1 | gpu.xid | GPU3 | <script>alert('x')</script> & \"quoted\" \\|pipe\\| second line |")
    assert "isolate (cause: leaf<l1>) | 2026-12-02T12:00:00Z |" in row
    assert md.index("gpu.xid") < md.index("gpu.temp")
    assert "rack r1, leaf l1" in md and "gpu-node-01" not in md


def test_markdown_healthy_cluster_and_the_node_cap():
    r = _report.build_report("t", {"a": {"status": "healthy", "findings": []}}, [], "1")
    assert _report.to_markdown(r).endswith("## Nodes needing attention\n\nNone: every node is healthy.\n")
    md = _report.to_markdown(_report_dict(), max_nodes=1)
    assert "### gpu-node-02" in md and "### gpu-node-03" not in md
    assert md.rstrip().endswith("... and 1 more nodes (see report.json).")


def test_html_escapes_hostile_evidence():
    page = _report.to_html(_report_dict())
    assert "<script>" not in page and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert "<b>leak</b>" not in page and "&lt;b&gt;leak&lt;/b&gt;" in page
    assert "leaf&lt;l1&gt;" in page
    p = _parse(page)
    assert not [t for t, _a in p.tags if t == "script"]  # (<b> is the counts markup)
    assert HOSTILE.split("\n", maxsplit=1)[0] in "".join(p.text)  # the evidence is shown, as text


def test_html_structure_that_tests_and_dashboards_read():
    p = _parse(_report.to_html(_report_dict()))
    by_id = {a.get("id"): t for t, a in p.tags if a.get("id")}
    assert {"status-counts", "severity-counts", "cluster-findings", "rack-grid", "node-gpu-node-02"} <= set(by_id)
    cells = {a["data-node"]: a for t, a in p.tags if t == "a" and "node-cell" in a.get("class", "")}
    assert set(cells) == {"gpu-node-01", "gpu-node-02", "gpu-node-03"}
    assert cells["gpu-node-02"]["data-status"] == "faulty" and cells["gpu-node-02"]["href"] == "#node-gpu-node-02"
    assert cells["gpu-node-02"]["title"] == "gpu-node-02: faulty - gpu.temp; gpu.xid"
    racks = [a["data-rack"] for t, a in p.tags if t == "div" and "data-rack" in a]
    assert racks == ["(no rack)", "r1"]
    counts = {a["data-status"]: a for t, a in p.tags if t == "div" and "data-status" in a}
    assert set(counts) == set(_report.STATUSES)


def test_site_templates_override_the_defaults(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "report.md.j2").write_text("{{ summary.nodes }} nodes; first: {{ attention[0].host }}\n")
    md = _report.to_markdown(_report_dict(), templates_dir=str(site))
    assert md == "3 nodes; first: gpu-node-02\n"
    # only report.md.j2 given: HTML stays the default; a site HTML template is autoescaped too
    assert "rack-grid" in _report.to_html(_report_dict(), templates_dir=str(site))
    (site / "report.html.j2").write_text("<p>{{ attention[0].findings[0].message }}</p>")
    assert _report.to_html(_report_dict(), templates_dir=str(site)).startswith("<p>&lt;script&gt;")


def test_template_errors_are_clear(tmp_path):
    with pytest.raises(_report.ReportTemplateError, match="does not exist"):
        _report.to_markdown(_report_dict(), templates_dir=str(tmp_path / "missing"))
    (tmp_path / "report.md.j2").write_text("{{ no_such_variable }}")
    with pytest.raises(_report.ReportTemplateError, match="report.md.j2.*no_such_variable"):
        _report.to_markdown(_report_dict(), templates_dir=str(tmp_path))
    (tmp_path / "report.html.j2").write_text("{% for %}")
    with pytest.raises(_report.ReportTemplateError, match="report.html.j2"):
        _report.to_html(_report_dict(), templates_dir=str(tmp_path))


def test_write_reports_is_private_and_writes_nothing_on_a_template_error(tmp_path):
    r = _report_dict()
    paths = _inspect.write_reports(r, str(tmp_path / "out"))
    assert sorted(os.path.basename(p) for p in paths.values()) == [
        "gpuops.prom",
        "report.html",
        "report.json",
        "report.md",
    ]
    assert stat.S_IMODE(os.stat(paths["prometheus"]).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(paths["html"]).st_mode) == 0o600
    assert open(paths["markdown"]).read() == _report.to_markdown(r)
    assert re.search(r"^gpuops_inspection_timestamp_seconds \d+$", open(paths["prometheus"]).read(), re.M)
    site = tmp_path / "site"
    site.mkdir()
    (site / "report.html.j2").write_text("{{ broken(")
    with pytest.raises(_report.ReportTemplateError):
        _inspect.write_reports(r, str(tmp_path / "out2"), templates_dir=str(site))
    assert not os.path.exists(tmp_path / "out2")
