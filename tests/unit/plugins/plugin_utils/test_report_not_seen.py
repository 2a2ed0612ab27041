# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.md and report.html name what a partial cluster capture did not hold (docs/findings.md "What was not
seen"): the scheduler's unseen parts and the storage's unknown parts, each with why.

The capture holds two files in real formats: ``sinfo.txt`` in sinfo's default form (cluster-formats.md 1.1, the
SchedMD example rows) and ``lfs-df.txt`` (cluster-formats.md 5.1, the Lustre manual's ``lfs df -h`` example).
What is then missing comes from docs/capture.md's file tables: ``scontrol-ping.txt``, ``sdiag.txt``, ``squeue.*``
and ``sacct.*`` for the scheduler; for Lustre, ``lfs df -i``, ``lfs check servers`` and ``lctl get_param
health_check`` (docs/storage.md)."""

from __future__ import annotations

import html as _html

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.platform import collect_platform
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import report as _report
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform.jobs import platform_summary

SINFO = """PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
epyc-64      up 2-00:00:00      1   drng b22-21
epyc-64      up 2-00:00:00     30  alloc b22-[01-20,22-30,32]
main*        up 2-00:00:00      5 drain* d17-[40-44]
"""
LFS_DF_H = """UUID                 bytes  Used   Avail Use% Mounted on
testfs-MDT0000_UUID  13.0G  1.2G   11.0G  10% /testfs[MDT:0]
testfs-OST0001_UUID   3.6T  3.1T  472.5G  87% /testfs[OST:1] D
testfs-OST0002_UUID   3.6T  3.0T  570.3G  84% /testfs[OST:2] DR
filesystem_summary:  16.2T 13.8T    2.0T  88% /testfs

"""
NOW = 1796205600.0

#: (domain, part word, file) that the section must name: docs/capture.md and docs/storage.md
SCHEDULER_MISSING = ("scontrol-ping.txt", "sdiag.txt", "squeue", "sacct")
STORAGE_MISSING = ("lustre:inodes", "lustre:servers", "lustre:health")


def _partial(tmp_path, storage=True, scheduler=True):
    if scheduler:
        (tmp_path / "sinfo.txt").write_text(SINFO)
    if storage:
        (tmp_path / "lfs-df.txt").write_text(LFS_DF_H)
    return collect_platform(capture_dir=str(tmp_path))


def _report_with(platform):
    hosts = {"n01": {"facts": {"schema": "gpuops.facts/v1", "mode": "live", "errors": []}}}
    return _inspect.inspect_nodes(hosts, platform=platform, workers=1)


def _section(text, start, end):
    i = text.index(start)
    j = text.find(end, i + len(start))
    return text[i : j if j >= 0 else len(text)]


def test_markdown_and_html_name_each_part_not_seen(tmp_path):
    report = _report_with(_partial(tmp_path))
    md = _section(_report.to_markdown(report), "## Not seen", "\n## ")
    page = _html.unescape(_section(_report.to_html(report), '<h2 id="not-seen-heading">', "</table>"))
    for text in (md, page):
        for name in SCHEDULER_MISSING + STORAGE_MISSING:
            assert name in text, (name, text)
        assert "not in the capture" in text and "was not captured" in text  # why, for each domain
        # what the capture did hold is not listed as unseen
        assert "sinfo" not in text and "lustre:space" not in text
    rows = [ln for ln in md.splitlines() if ln.startswith("| scheduler |") or ln.startswith("| storage |")]
    assert len(rows) == len(SCHEDULER_MISSING) + len(STORAGE_MISSING)
    assert page.count('data-domain="scheduler"') == 4 and page.count('data-domain="storage"') == 3


def test_storage_only_capture_still_shows_its_unknown_parts(tmp_path):
    platform = _partial(tmp_path, scheduler=False)
    assert platform["scheduler"] is None
    summary = platform_summary(platform, NOW)
    assert [u["part"] for u in summary["storage_unknown"]] == list(STORAGE_MISSING)
    report = _report_with(platform)
    md, page = _report.to_markdown(report), _html.unescape(_report.to_html(report))
    assert "## Not seen" in md and 'id="not-seen-heading"' in page
    assert all(p in md and p in page for p in STORAGE_MISSING)


def test_complete_or_absent_captures_have_no_section(tmp_path):
    report = _report_with(None)
    assert "Not seen" not in _report.to_markdown(report) and "not-seen" not in _report.to_html(report)
    # garbage in the platform section (a hand-edited report.json) is skipped, not a template error
    report["platform"] = {"unseen": ["x", None, 3], "storage_unknown": "nope"}
    assert "Not seen" not in _report.to_markdown(report) and "not-seen" not in _report.to_html(report)


def test_unseen_text_is_escaped(tmp_path):
    report = _report_with(None)
    report["platform"] = {"unseen": [{"file": "a.txt", "part": "<b>x|y</b>", "message": "<script>1</script>"}]}
    page = _report.to_html(report)
    assert "<script>1</script>" not in page and "&lt;b&gt;" in page
    md = _report.to_markdown(report)
    assert "| scheduler | \\<b\\>x\\|y\\</b\\> |" in md  # a table cell: the pipe cannot split the row
