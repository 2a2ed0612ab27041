# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report writers (plugin_utils/inspect/report.py, _inspect.write_reports): report.json and gpuops.prom as
interfaces, report.md and report.html from Jinja2 templates a site can override, hostile evidence escaped."""

from __future__ import annotations

import json
import os
import re
import stat
from html.parser import HTMLParser

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect, report as _report

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
    # raw HTML never passes through: shown literally (CommonMark backslash escapes), with its runbook section
    assert "| P0 | cluster.leak | power | \\<b\\>leak\\</b\\> |  |  | see README: runbooks/README.md#" in md
    # gpu-node-02 (P1) before gpu-node-03 (error, no findings); P1 row before P2 row
    assert md.index("### gpu-node-02: faulty (worst P1)") < md.index("### gpu-node-03: error")
    row = [line for line in md.splitlines() if "gpu.xid" in line][0]
    assert row.startswith(
        "| P1 | gpu.xid | GPU3 | \\<script\\>alert('x')\\</script\\> & \"quoted\" \\|pipe\\| second line |"
    )
    assert "isolate (cause: leaf\\<l1\\>) | 2026-12-02T12:00:00Z |" in row
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
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert page.count("<script") == 1  # the page's own filter script, inline (no src: nothing is fetched)
    assert "<b>leak</b>" not in page and "&lt;b&gt;leak&lt;/b&gt;" in page
    assert "leaf&lt;l1&gt;" in page
    p = _parse(page)
    assert [a for t, a in p.tags if t == "script"] == [{}]  # (<b> is the counts markup)
    assert HOSTILE.split("\n", maxsplit=1)[0] in "".join(p.text)  # the evidence is shown, as text


def test_html_structure_that_tests_and_dashboards_read():
    p = _parse(_report.to_html(_report_dict()))
    by_id = {a.get("id"): t for t, a in p.tags if a.get("id")}
    assert {"status-counts", "severity-counts", "cluster-findings", "rack-grid", "node-gpu-node-02"} <= set(by_id)
    cells = {a["data-node"]: a for t, a in p.tags if t == "a" and "node-cell" in a.get("class", "")}
    assert set(cells) == {"gpu-node-01", "gpu-node-02", "gpu-node-03"}
    assert cells["gpu-node-02"]["data-status"] == "faulty" and cells["gpu-node-02"]["href"] == "#node-gpu-node-02"
    assert cells["gpu-node-02"]["title"] == "gpu-node-02: faulty - gpu.temp; gpu.xid"
    racks = {a["data-rack"]: a for t, a in p.tags if t == "details" and "data-rack" in a}
    assert list(racks) == ["(no rack)", "r1"]
    # a rack with a node that is not healthy is expanded (gpu-node-03 is in error, gpu-node-02 faulty)
    assert "open" in racks["(no rack)"] and "open" in racks["r1"]
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
        "facts.json.gz",  # the nodes' facts beside report.json (issue 41), private as every report file
        "gpuops.prom",
        "report.html",
        "report.json",
        "report.md",
    ]
    assert stat.S_IMODE(os.stat(paths["prometheus"]).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(paths["html"]).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(paths["facts"]).st_mode) == 0o600
    assert open(paths["markdown"]).read() == _report.to_markdown(r)
    assert re.search(r"^gpuops_inspection_timestamp_seconds \d+$", open(paths["prometheus"]).read(), re.M)
    site = tmp_path / "site"
    site.mkdir()
    (site / "report.html.j2").write_text("{{ broken(")
    with pytest.raises(_report.ReportTemplateError):
        _inspect.write_reports(r, str(tmp_path / "out2"), templates_dir=str(site))
    assert not os.path.exists(tmp_path / "out2")


# ---------------------------------------------------------------------------------------------- Markdown escaping
@pytest.mark.parametrize(
    "raw, cell",
    [
        (None, ""),
        ("plain gpu3 Xid_79 #1 ok.", "plain gpu3 Xid_79 #1 ok."),
        ("<script>alert(1)</script>", "\\<script\\>alert(1)\\</script\\>"),
        ("a|b", "a\\|b"),
        ("`rm -rf /`", "\\`rm -rf /\\`"),
        ("[click](http://evil.example)", "\\[click\\](http://evil.example)"),
        ("*bold* \\ back", "\\*bold\\* \\\\ back"),
        ("\x1b[31mred\x1b[0m", "\\x1b\\[31mred\\x1b\\[0m"),
        ("line1\nline2\r\nline3\rline4\tend", "line1 line2 line3 line4 end"),
        ("nul\x00 bell\x07 del\x7f c1\x9b", "nul\\x00 bell\\x07 del\\x7f c1\\x9b"),
        ("evil\u202eexe.txt \u200b\ufeff", "evil\\u202eexe.txt \\u200b\\ufeff"),
        (79, "79"),
    ],
)
def test_md_cell_escapes_markup_and_control_characters(raw, cell):
    assert _report._md_cell(raw) == cell


HOSTILE_MD = "<img src=x onerror=alert(1)> `code` | [link](javascript:alert(1)) **b**\x1b[2J\nnext\u202e"


def _hostile_report():
    nodes = {
        "gpu-node-01": {
            "status": "faulty",
            "rack": "r<1>",
            "leaf": "l|1",
            "findings": [
                {"severity": "P1", "check": "gpu.xid", "code": "79", "component": "gpu0|x", "message": HOSTILE_MD},
                {"severity": "P2", "check": "node.mounts", "component": "mount:/`x`", "message": "<b>slow</b>"},
            ],
        }
    }
    cluster = [{"severity": "P0", "check": "cluster.leaf", "component": "leaf:<l1>", "message": HOSTILE_MD}]
    return _report.build_report("2026-12-02T10:00:00Z", nodes, cluster, "1<i>", "h")


def test_markdown_of_hostile_findings_renders_as_plain_text():
    """A real CommonMark renderer (markdown-it-py, raw HTML on, GFM tables) reads report.md: no HTML, link,
    image or code span comes out of finding text, every table row keeps its 7 cells, no control character."""
    from markdown_it import MarkdownIt

    md = _report.to_markdown(_hostile_report())
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", md)
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(md)
    flat = [t for tok in tokens for t in [tok] + list(tok.children or [])]
    kinds = {t.type for t in flat}
    assert not kinds & {"html_block", "html_inline", "link_open", "image", "code_inline", "strong_open", "em_open"}
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 2 + 3  # two tables (cluster, node): header + findings
    for i, tok in enumerate(tokens):
        if tok.type == "tr_open":
            cells = 0
            for t in tokens[i + 1 :]:
                if t.type == "tr_close":
                    break
                cells += t.type in ("td_open", "th_open")
            assert cells == 7
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    assert "&lt;img src=x onerror=alert(1)&gt; `code` | [link](javascript:alert(1)) **b**\\x1b[2J next\\u202e" in html
    assert "<img" not in html and "<b>" not in html and "<i>" not in html
    assert "&lt;b&gt;slow&lt;/b&gt;" in html and "rack r&lt;1&gt;, leaf l|1" in html


def test_runbook_ids_and_links_in_json_markdown_and_html():
    r = _hostile_report()
    node = json.loads(_report.to_json(r))["nodes"]["gpu-node-01"]
    by_check = {f["check"]: f for f in node["findings"]}
    assert by_check["gpu.xid"]["runbook"] == "gpu_fell_off_bus"
    assert by_check["gpu.xid"]["runbook_link"] == "runbooks/gpu-fell-off-bus.md#preconditions"
    assert by_check["node.mounts"]["runbook"] is None
    assert by_check["node.mounts"]["runbook_link"] == "runbooks/README.md#not-automated-catalogue-unmapped"
    (cluster,) = r["summary"]["cluster_findings"]
    assert cluster["runbook"] is None and cluster["runbook_link"].startswith("runbooks/README.md#not-automated")
    md = _report.to_markdown(r)
    assert "| gpu_fell_off_bus: runbooks/gpu-fell-off-bus.md#preconditions |" in md
    linked = _report.to_markdown(r, runbook_base="https://git.example/gpuops/cluster/blob/main/")
    assert (
        "| [gpu_fell_off_bus](https://git.example/gpuops/cluster/blob/main/runbooks/gpu-fell-off-bus.md#preconditions) |"
        in linked
    )
    page = _report.to_html(r, runbook_base="https://git.example/c/")
    assert 'href="https://git.example/c/runbooks/gpu-fell-off-bus.md#preconditions"' in page
    assert 'href="%srunbooks/gpu-fell-off-bus.md#preconditions"' % _report.DEFAULT_RUNBOOK_BASE in _report.to_html(r)


def test_build_report_links_without_touching_the_callers_findings():
    finding = {"severity": "P1", "check": "gpu.xid", "code": "79"}
    catalog = {"entries": [{"id": "site_xid", "runbook": "gpu-fell-off-bus.md", "checks": ["gpu.xid"]}]}
    r = _report.build_report("t", {"a": {"status": "faulty", "findings": [finding]}}, [], "1", catalog=catalog)
    assert finding == {"severity": "P1", "check": "gpu.xid", "code": "79"}
    assert r["nodes"]["a"]["findings"][0]["runbook"] == "site_xid"


def test_html_has_a_section_for_every_node_and_every_internal_link_resolves():
    """Grid cells and node links point at ids that exist: healthy nodes get a collapsed <details> section."""
    nodes = {"n%02d" % i: {"status": "healthy", "findings": [], "rack": "r%d" % (i % 3)} for i in range(30)}
    nodes["n05"] = {"status": "faulty", "rack": "r2", "findings": [{"severity": "P1", "check": "gpu.ecc"}]}
    p = _parse(_report.to_html(_report.build_report("t", nodes, [], "1")))
    ids = [a["id"] for _t, a in p.tags if a.get("id")]
    assert len(ids) == len(set(ids))
    hrefs = [a["href"] for _t, a in p.tags if a.get("href", "").startswith("#")]
    assert len(hrefs) >= 31 and {h[1:] for h in hrefs} <= set(ids)
    details = [a for t, a in p.tags if t == "details" and a.get("class") == "node"]
    assert len(details) == 29 and all(a["id"].startswith("node-n") for a in details)
    racks = {a["data-rack"]: a for t, a in p.tags if t == "details" and a.get("class") == "rack"}
    assert sorted(racks) == ["r0", "r1", "r2"]
    assert "open" in racks["r2"] and "open" not in racks["r0"] and "open" not in racks["r1"]  # healthy: collapsed
    assert racks["r2"]["data-not-healthy"] == "1"
    assert "hidden" in [a for t, a in p.tags if t == "form"][0]  # the script shows the filters


def test_a_broken_runbook_catalogue_stops_the_report_with_its_path(tmp_path, monkeypatch):
    bad = tmp_path / "catalog.yml"
    bad.write_text("entries: {not: a list}\n")
    monkeypatch.setattr(_report._runbooks, "DEFAULT_CATALOG", str(bad))
    with pytest.raises(_report._runbooks.CatalogError, match="catalog.yml.*entries"):
        _report.build_report("t", {"a": {"status": "healthy", "findings": []}}, [], "1")
