# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html in a real headless Chromium (DevTools protocol, headless_chromium.py): the filters hide the other
rows, the search filters, sorting reorders, every in-page link resolves (healthy nodes included), every
finding links to an existing runbook section, and without JavaScript everything stays readable. Screenshots
before and after filtering go to tests/output/report-browser/.

Skipped only when chromium is absent and CI is not true; with CI=true a missing chromium fails the tests."""

from __future__ import annotations

import os

import pytest
from headless_chromium import Browser
from runbook_oracle import assert_resolves

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import report as _report

SHOTS = os.path.join(_report._runbooks.COLLECTION_ROOT, "tests", "output", "report-browser")
BASE = _report.DEFAULT_RUNBOOK_BASE
HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script> Xid 79 text'


@pytest.fixture(scope="module")
def browser(chromium):
    with Browser(chromium) as b:
        yield b


def _finding(sev, check, component, message, code=None, respond_by="2026-12-02T12:00:00Z"):
    return {
        "severity": sev,
        "check": check,
        "code": code,
        "component": component,
        "message": message,
        "action": "isolate" if sev in ("P0", "P1") else "monitor",
        "respond_by": respond_by,
    }


def _nodes():
    """12 nodes in 3 racks: 7 healthy, findings of every severity, mapped/unmapped/unknown checks, hostile text."""
    nodes = {
        "gpu-node-%02d" % i: {"status": "healthy", "findings": [], "rack": "rack-%d" % ((i - 1) // 4 + 1)}
        for i in range(1, 13)
    }
    nodes["gpu-node-02"].update(
        status="faulty",
        findings=[
            _finding("P1", "gpu.xid", "gpu3", HOSTILE, code="79", respond_by="2026-12-02T10:30:00Z"),
            _finding("P1", "gpu.missing", "gpu:00000000:3B:00.0", "the driver cannot read this GPU"),
        ],
    )
    nodes["gpu-node-03"].update(
        status="degraded", findings=[_finding("P2", "gpu.row_remap", "gpu1", "remap pending", "pending")]
    )
    nodes["gpu-node-06"].update(status="faulty", findings=[_finding("P1", "ib.port_state", "mlx5_1/1", "port DOWN")])
    nodes["gpu-node-07"].update(
        status="degraded", findings=[_finding("P3", "gpu.xid", "gpu0", "Xid 63 remap event", "63")]
    )
    nodes["gpu-node-10"].update(status="faulty", findings=[_finding("P1", "node.mounts", "mount:/lustre", "hung")])
    nodes["gpu-node-11"].update(status="unreachable", findings=[_finding("P1", "node.unreachable", "node", "no ssh")])
    nodes["gpu-node-12"].update(status="error", findings=[])
    return nodes


@pytest.fixture(scope="module")
def report():
    cluster = [_finding("P0", "cluster.rack", "rack:rack-1", "3 of 4 nodes in rack-1 are down")]
    return _report.build_report("2026-12-02T10:00:00Z", _nodes(), cluster, "2026.12.1", "sha256:abc")


@pytest.fixture(scope="module")
def html_path(report, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(_report.to_html(report))
    return "file://%s" % path


@pytest.fixture
def page(browser, html_path):
    return browser.open(html_path)


def _all_findings(report):
    rows = [dict(f, node="", rack="", status="cluster") for f in report["summary"]["cluster_findings"]]
    for host, n in report["nodes"].items():
        rows += [dict(f, node=host, rack=n["rack"], status=n["status"]) for f in n["findings"]]
    return rows


#: the visible (rendered) finding rows, as [node, check, severity] - offsetParent is null for a hidden row
VISIBLE = (
    "Array.from(document.querySelectorAll('#findings tbody tr.finding')).filter(r => r.offsetParent !== null)"
    ".map(r => [r.dataset.node, r.dataset.check, r.dataset.severity, r.dataset.rack, r.dataset.status])"
)


def _choose(page, select_id, value):
    page.eval(
        "(() => { const s = document.getElementById(%r); s.value = %r;"
        " s.dispatchEvent(new Event('change', {bubbles: true})); return s.value; })()" % (select_id, value)
    )


def _type(page, text):
    page.eval(
        "(() => { const s = document.getElementById('search'); s.value = %r;"
        " s.dispatchEvent(new Event('input', {bubbles: true})); })()" % text
    )


def test_the_page_is_self_contained_and_hostile_text_stays_text(page, report):
    assert page.eval("document.querySelectorAll('[src], link[href], object, iframe, embed').length") == 0
    assert page.eval("document.scripts.length") == 1 and page.eval("window.pwned === undefined")
    assert page.eval("document.querySelectorAll('img').length") == 0
    assert HOSTILE in page.eval("document.getElementById('findings').textContent")
    assert page.eval("document.getElementById('filters').offsetParent !== null")  # the script showed the filters
    assert len(page.eval(VISIBLE)) == len(_all_findings(report)) == 8
    assert page.eval("document.getElementById('shown-count').textContent") == "8 of 8 findings shown"


@pytest.mark.parametrize(
    "select_id, key, field",
    [
        ("filter-severity", 2, "severity"),
        ("filter-check", 1, "check"),
        ("filter-rack", 3, "rack"),
        ("filter-status", 4, "status"),
    ],
)
def test_each_filter_hides_the_other_rows(page, report, select_id, key, field):
    options = page.eval("Array.from(document.getElementById(%r).options).map(o => o.value)" % select_id)
    assert options[0] == ""
    findings = _all_findings(report)
    seen_values = {str(f[field]) for f in findings if f[field]}
    assert seen_values <= set(options)
    for value in options[1:]:
        _choose(page, select_id, value)
        visible = page.eval(VISIBLE)
        expected = [f for f in findings if str(f[field]) == value]
        assert len(visible) == len(expected), value
        assert all(row[key] == value for row in visible)
        assert page.eval("document.getElementById('shown-count').textContent") == "%d of 8 findings shown" % len(
            expected
        )
    _choose(page, select_id, "")
    assert len(page.eval(VISIBLE)) == 8


def test_filters_combine_and_clear_resets_them(page):
    _choose(page, "filter-severity", "P1")
    assert len(page.eval(VISIBLE)) == 5
    _choose(page, "filter-rack", "rack-1")
    assert sorted(r[1] for r in page.eval(VISIBLE)) == ["gpu.missing", "gpu.xid"]
    _choose(page, "filter-check", "ib.port_state")
    assert page.eval(VISIBLE) == []
    page.eval("document.getElementById('filters-reset').click()")
    page.wait_for("document.getElementById('shown-count').textContent === '8 of 8 findings shown'")
    assert page.eval("document.getElementById('filter-severity').value") == ""


def test_search_filters_on_any_text_of_the_row(page):
    _type(page, "lustre")
    assert [r[:2] for r in page.eval(VISIBLE)] == [["gpu-node-10", "node.mounts"]]
    _type(page, "  XID   gpu-node-02 ")  # words, any order, case-insensitive
    assert [r[:2] for r in page.eval(VISIBLE)] == [["gpu-node-02", "gpu.xid"]]
    _type(page, "<script>")  # hostile text is searchable as text
    assert [r[0] for r in page.eval(VISIBLE)] == ["gpu-node-02"]
    _choose(page, "filter-severity", "P3")  # search and filters combine
    assert page.eval(VISIBLE) == []
    _type(page, "nothing matches this")
    _choose(page, "filter-severity", "")
    assert page.eval(VISIBLE) == [] and "0 of 8" in page.eval("document.getElementById('shown-count').textContent")


def test_sorting_reorders_rows(page, report):
    order = "Array.from(document.querySelectorAll('#findings tbody tr')).map(r => r.dataset.%s)"
    ranks = [int(x) for x in page.eval(order % "rank")]
    assert ranks == sorted(ranks) and ranks[0] == 0  # worst first as written
    click = "document.querySelector('#findings th[data-sort=%s] button').click()"
    page.eval(click % "node")
    nodes = page.eval(order % "node")
    assert nodes == sorted(nodes) and nodes[0] == ""  # the cluster finding (no node) first
    assert page.eval("document.querySelector('#findings th[data-sort=node]').getAttribute('aria-sort')") == "ascending"
    page.eval(click % "node")
    assert page.eval(order % "node") == sorted(nodes, reverse=True)
    page.eval(click % "rank")
    assert [int(x) for x in page.eval(order % "rank")] == sorted(ranks)
    page.eval(click % "rank")
    assert [int(x) for x in page.eval(order % "rank")] == sorted(ranks, reverse=True)
    page.eval(click % "respond")
    respond = page.eval(order % "respond")
    assert respond == sorted(respond)
    _choose(page, "filter-severity", "P1")  # a filter still applies to the sorted rows
    assert len(page.eval(VISIBLE)) == 5


def test_every_in_page_link_resolves_and_a_healthy_node_opens(page, report):
    broken = page.eval(
        "Array.from(document.querySelectorAll('a[href^=\"#\"]')).map(a => a.getAttribute('href'))"
        ".filter(h => !document.getElementById(decodeURIComponent(h.slice(1))))"
    )
    assert broken == []
    cells = page.eval(
        "Array.from(document.querySelectorAll('#rack-grid a.node-cell')).map(a => a.getAttribute('href'))"
    )
    assert sorted(cells) == sorted("#node-%s" % h for h in report["nodes"])
    assert page.eval("document.querySelectorAll('details.node').length") == 5  # healthy, no findings
    assert page.eval("document.getElementById('node-gpu-node-05').open") is False
    page.eval("document.querySelector('#rack-grid a[data-node=\"gpu-node-05\"]').click()")
    page.wait_for("location.hash === '#node-gpu-node-05' && document.getElementById('node-gpu-node-05').open")


def test_every_runbook_link_points_at_an_existing_runbook_section(page, report):
    links = page.eval("Array.from(document.querySelectorAll('a.runbook')).map(a => [a.href, a.textContent])")
    assert len(links) == 2 * 8  # the findings table, and the cluster and node sections
    for href, _label in links:
        assert href.startswith(BASE), href
        assert_resolves(href[len(BASE) :])
    by_label = {label: href[len(BASE) :] for href, label in links}
    assert by_label["gpu_fell_off_bus"] == "runbooks/gpu-fell-off-bus.md#preconditions"
    assert by_label["ib_port"] == "runbooks/ib-port-down.md#preconditions"
    assert by_label["see README"].startswith("runbooks/README.md#")


def test_without_javascript_everything_stays_readable(chromium, html_path, report):
    with Browser(chromium, javascript=False) as b:
        p = b.open(html_path)
        assert p.eval("document.getElementById('filters').offsetParent") is None  # no dead controls
        assert len(p.eval(VISIBLE)) == 8
        assert p.eval("document.getElementById('shown-count').textContent") == ""  # the script did not run
        sections = p.eval("Array.from(document.querySelectorAll('.node[data-node]')).map(e => e.dataset.node)")
        assert sorted(sections) == sorted(report["nodes"])
        assert p.eval("document.querySelector('details.node summary').offsetParent !== null")


def test_screenshots_before_and_after_filtering(page):
    os.makedirs(SHOTS, exist_ok=True)
    before = page.screenshot(os.path.join(SHOTS, "report-before-filter.png"), height=1000)
    _choose(page, "filter-severity", "P1")
    _choose(page, "filter-rack", "rack-1")
    page.eval("document.getElementById('findings-heading').scrollIntoView()")
    after = page.screenshot(os.path.join(SHOTS, "report-after-filter.png"), height=1000)
    for path in (before, after):
        with open(path, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
        assert os.path.getsize(path) > 10_000
    assert len(page.eval(VISIBLE)) == 2
