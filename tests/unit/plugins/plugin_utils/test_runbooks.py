# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/_runbooks.py: the catalogue model shared by the report and the ticket hook, and the link from
a finding to its runbook section. The links are checked against the runbooks as a real CommonMark parser
(markdown-it-py) reads them, not against our own heading scanner."""

from __future__ import annotations

import os
import sys

import pytest
from runbook_oracle import assert_resolves, github_anchors

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _runbooks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import CHECKS

ROOT = _runbooks.COLLECTION_ROOT
RUNBOOKS = os.path.join(ROOT, "runbooks")
DATA = _runbooks.load(_runbooks.DEFAULT_CATALOG)


@pytest.mark.parametrize(
    "heading, anchor",
    [
        ("Run", "run"),
        ("When it applies", "when-it-applies"),
        ("At 3 a.m.: the order of things", "at-3-am-the-order-of-things"),
        ("Not automated (catalogue `unmapped`)", "not-automated-catalogue-unmapped"),
        (
            "GPU fell off the bus (Xid 79), GPU unreadable or missing",
            "gpu-fell-off-the-bus-xid-79-gpu-unreadable-or-missing",
        ),
        ("Row remap / page retirement", "row-remap--page-retirement"),
    ],
)
def test_slug_is_githubs(heading, anchor):
    assert _runbooks.slug(heading) == anchor


def test_headings_skip_fenced_code_and_repeated_slugs_are_numbered(tmp_path):
    text = "# Title\n\n## Run\n\n```bash\n# not a heading\n## nor this\n```\n~~~\n# nor\n~~~\n## Run\n###no space\n"
    assert _runbooks.headings(text) == [(1, "Title"), (2, "Run"), (2, "Run")]
    path = tmp_path / "x.md"
    path.write_text(text)
    assert _runbooks.anchors(str(path)) == {"Title": "title", "": "title", "Run": "run"}
    assert github_anchors(str(path)) == {"title", "run", "run-1"}
    assert _runbooks.anchors(str(tmp_path / "missing.md")) == {}
    assert _runbooks.section_link(str(tmp_path), "x.md", "Roll back") == "runbooks/x.md#title"
    assert _runbooks.section_link(str(tmp_path), "missing.md", "Run") == "runbooks/missing.md"


@pytest.mark.parametrize(
    "finding, runbook_id, link",
    [
        ({"check": "gpu.xid", "code": "79"}, "gpu_fell_off_bus", "runbooks/gpu-fell-off-bus.md#preconditions"),
        ({"check": "gpu.xid", "code": 48}, "gpu_uncorrectable_ecc", "runbooks/gpu-uncorrectable-ecc.md#preconditions"),
        (
            {"check": "gpu.ecc", "code": None},
            "gpu_uncorrectable_ecc",
            "runbooks/gpu-uncorrectable-ecc.md#preconditions",
        ),
        (
            {"check": "gpu.row_remap", "code": "pending"},
            "gpu_row_remap_pending",
            "runbooks/gpu-row-remap-pending.md#preconditions",
        ),
        ({"check": "node.mounts"}, None, "runbooks/README.md#not-automated-catalogue-unmapped"),
        ({"check": "gpu.xid", "code": "63"}, None, "runbooks/README.md#at-3-am-the-order-of-things"),
        ({"check": "<script>", "code": "`x`"}, None, "runbooks/README.md#at-3-am-the-order-of-things"),
        ({}, None, "runbooks/README.md#at-3-am-the-order-of-things"),
    ],
)
def test_finding_runbook(finding, runbook_id, link):
    got = _runbooks.finding_runbook(DATA, finding, RUNBOOKS)
    assert got == {"runbook": runbook_id, "runbook_link": link}
    assert_resolves(got["runbook_link"])


@pytest.mark.parametrize("entry", _runbooks.entries(DATA), ids=lambda e: e["id"])
def test_every_catalogue_entry_links_to_an_existing_section(entry):
    for check, code in [(c, None) for c in entry["checks"]] + [tuple(c.split(":", 1)) for c in entry["codes"]]:
        got = _runbooks.finding_runbook(DATA, {"check": check, "code": code}, RUNBOOKS)
        assert got["runbook"] == entry["id"], (check, code)
        assert_resolves(got["runbook_link"])
    assert_resolves(_runbooks.section_link(RUNBOOKS, entry["runbook"], _runbooks.RUN_SECTION))


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_every_check_links_somewhere_that_exists(check):
    for code in (None, "79", "unknown-code"):
        assert_resolves(_runbooks.finding_runbook(DATA, {"check": check, "code": code}, RUNBOOKS)["runbook_link"])


def test_the_hook_reads_the_catalogue_through_this_module():
    """tools/gpuops_runbook/catalog.py hands the collection's functions through: one model, not two copies."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        from gpuops_runbook import catalog
    finally:
        sys.path.pop(0)
    for name in catalog.SHARED:
        assert getattr(catalog, name) is getattr(_runbooks, name), name
    assert catalog.load(_runbooks.DEFAULT_CATALOG) == DATA
    with pytest.raises(AttributeError):
        catalog.no_such_name  # noqa: B018
    if not os.environ.get("GPUOPS_ROOT"):
        assert os.path.realpath(catalog.default_root()) == os.path.realpath(ROOT)


def test_a_broken_catalogue_is_a_clear_error(tmp_path):
    bad = tmp_path / "catalog.yml"
    bad.write_text("entries: [\n")
    with pytest.raises(_runbooks.CatalogError, match="not valid YAML"):
        _runbooks.load(str(bad))
    with pytest.raises(_runbooks.CatalogError, match="cannot read"):
        _runbooks.load(str(tmp_path / "missing.yml"))


@pytest.mark.parametrize(
    "entry", [e for e in _runbooks.entries(DATA) if e["checks"] or e["codes"]], ids=lambda e: e["id"]
)
def test_a_finding_s_link_opens_the_preconditions_before_the_commands(entry):
    """Issue 41: the report linked a finding to "#run", past the runbook's "do NOT isolate" preconditions. Every
    catalogue runbook has "## Preconditions" before "## Run" (read from the file), and the link opens it."""
    with open(os.path.join(RUNBOOKS, entry["runbook"]), encoding="utf-8") as fh:
        lines = [line.rstrip() for line in fh]
    assert lines.index("## Preconditions") < lines.index("## Run")
    check = entry["checks"][0] if entry["checks"] else entry["codes"][0].split(":", 1)[0]
    link = _runbooks.finding_runbook(DATA, {"check": check, "code": None}, RUNBOOKS)["runbook_link"]
    if link.startswith("runbooks/%s" % entry["runbook"]):
        assert link == "runbooks/%s#preconditions" % entry["runbook"]
