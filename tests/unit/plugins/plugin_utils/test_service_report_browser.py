# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""service-report.html in a real headless Chromium (headless_chromium.py, with JavaScript disabled: the page needs
none): the five charts render as inline SVG with drawn marks and non-blank pixels in each chart's region, nothing
is loaded from outside, hostile ledger text stays text. Screenshots go to tests/output/service-report-browser/.

Skipped only when chromium is absent and CI is not true; with CI=true a missing chromium fails the tests."""

from __future__ import annotations

import os

import pytest
from headless_chromium import Browser
from PIL import Image

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import report as _report
from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import report as sr
from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import report_render as render
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store

from service_ledger import D, E, build_ledger  # noqa: E402

SHOTS = os.path.join(_report._runbooks.COLLECTION_ROOT, "tests", "output", "service-report-browser")
CHARTS = ("availability", "incidents", "sla", "mttr", "capacity")


@pytest.fixture(scope="module")
def page(chromium, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("service-report")
    store = open_store(state_dir=str(tmp / "state"))
    try:
        build_ledger(store)
        report = sr.compute(store, sr.parse_period("2026-10", now=E), now=E + 10 * D)
    finally:
        store.close()
    paths = render.write(render.rendered(report), str(tmp / "out"))
    with Browser(chromium, javascript=False, timeout=60.0) as browser:  # a loaded 2-core CI machine
        yield browser.open("file://%s" % paths["html"])


def _box(page, selector):
    return page.eval(
        "(() => { const r = document.querySelector(%r).getBoundingClientRect();"
        " return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height]; })()" % selector
    )


def test_charts_render_as_svg_with_marks_and_pixels(page):
    os.makedirs(SHOTS, exist_ok=True)
    full = page.screenshot(os.path.join(SHOTS, "service-report-full.png"))
    image = Image.open(full).convert("L")
    for name in CHARTS:
        sel = "#chart-%s svg" % name
        assert page.eval("document.querySelectorAll(%r).length" % sel) == 1, name
        assert page.eval("document.querySelectorAll('%s path, %s text').length" % (sel, sel)) > 10, name
        left, top, width, height = _box(page, sel)
        assert width > 300 and height > 100, (name, width, height)
        region = image.crop((int(left), int(top), int(left + width), int(top + height)))
        dark = sum(region.histogram()[:200])
        assert dark > 0.01 * width * height, (name, dark)  # axes, lines, bars and labels were painted
    # the capacity chart carries the trigger line and the SLA chart one bar per severity with incidents
    assert page.eval("document.querySelector('#chart-capacity svg').textContent.includes('trigger 70 %')")
    assert page.eval("document.querySelector('#chart-sla svg').textContent.includes('1/2')")


def test_the_page_is_self_contained_and_hostile_text_stays_text(page):
    assert page.eval("document.querySelectorAll('script, [src], link[href], object, iframe, embed, img').length") == 0
    cause = page.eval("document.querySelector('#reviews-table td.text').textContent")
    assert cause.startswith("<script>alert(1)</script> {{ lookup('pipe', 'id') }}")
    assert page.eval("document.querySelector('#fig-breaches b').textContent") == "4"


def test_screenshots_for_the_reader(page):
    top = page.screenshot(os.path.join(SHOTS, "service-report-charts.png"), height=1200)
    assert os.path.getsize(top) > 20000
    full = Image.open(os.path.join(SHOTS, "service-report-full.png"))
    _left, y, _w, _h = _box(page, "#availability")
    tables = full.crop((0, int(y) - 10, full.width, min(full.height, int(y) + 1400)))
    tables.save(os.path.join(SHOTS, "service-report-tables.png"))
    assert tables.height > 500
