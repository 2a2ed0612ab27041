# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report files on disk (inspect/report_files.py, issue 41): report.json without the nodes' facts, the facts
in facts.json.gz beside it (gzip, RFC 1952, read back here with Python's gzip module), named with the SHA-256 of
its bytes (hashlib, computed here on the file as written); load_report puts them back and refuses an altered or
missing side file with a clear error. Also the progress lines and the evidence age (inspect/run_notes.py)."""

from __future__ import annotations

import datetime
import gzip
import hashlib
import json
import os
import stat

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import (
    report as _report,
    report_files as _files,
    run_notes as _notes,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.facts_cache import NodeFacts, to_raw

FACTS = {
    "a": {"schema": "gpuops.facts/v1", "hostname": "a", "gpu": {"gpus": [{"index": 0, "serial": "1650"}]}},
    "b": {"schema": "gpuops.facts/v1", "hostname": "b", "note": "\u2028<script>"},
}


def _report_with_facts():
    nodes = {h: {"status": "healthy", "findings": [], "facts": f, "rack": "r1"} for h, f in FACTS.items()}
    nodes["c"] = {"status": "unreachable", "findings": [], "facts": None}
    report = _report.build_report("2026-12-07T10:00:00Z", nodes, [], "1")
    # what the pipeline holds: the whole facts as their JSON text behind a slim dict
    report["nodes"]["a"]["facts"] = NodeFacts({"hostname": "a"}, to_raw(FACTS["a"]))
    return report


def test_facts_go_to_a_private_gzip_side_file_named_with_its_sha256(tmp_path):
    paths = _files.write_reports(_report_with_facts(), str(tmp_path))
    on_disk = json.loads(open(paths["json"]).read())
    assert all("facts" not in n for n in on_disk["nodes"].values())
    entry = on_disk["facts_file"]
    raw = open(paths["facts"], "rb").read()
    assert entry["path"] == "facts.json.gz" and entry["sha256"] == hashlib.sha256(raw).hexdigest()
    assert entry["bytes"] == len(raw) and entry["nodes"] == 3
    body = json.loads(gzip.decompress(raw))
    assert body["schema"] == "gpuops.report-facts/v1" and body["nodes"] == dict(FACTS, c=None)
    for key in ("json", "facts", "html", "markdown"):
        assert stat.S_IMODE(os.stat(paths[key]).st_mode) == 0o600, key
    back = _files.load_report(str(tmp_path))
    assert {h: n["facts"] for h, n in back["nodes"].items()} == dict(FACTS, c=None)
    assert _files.load_report(paths["json"], facts=False)["nodes"]["a"].get("facts") is None


def test_without_facts_no_side_file_and_an_old_one_is_removed(tmp_path):
    _files.write_reports(_report_with_facts(), str(tmp_path))
    assert (tmp_path / "facts.json.gz").exists()
    report = _report.build_report("t", {"a": {"status": "healthy", "findings": []}}, [], "1", include_facts=False)
    paths = _files.write_reports(report, str(tmp_path))
    assert "facts" not in paths and not (tmp_path / "facts.json.gz").exists()
    assert "facts_file" not in json.loads(open(paths["json"]).read())
    assert _files.load_report(str(tmp_path))["nodes"]["a"]["status"] == "healthy"


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: (d / "facts.json.gz").unlink(), "cannot be read"),
        (lambda d: (d / "facts.json.gz").write_bytes(b"\x1f\x8b truncated"), "does not match"),
        (lambda d: (d / "report.json").write_text("{"), "not JSON"),
        (lambda d: (d / "report.json").write_text("[]"), "not a JSON object"),
        (lambda d: (d / "report.json").write_text('{"facts_file": {"path": "../x.gz"}}'), "not a file beside it"),
        (lambda d: (d / "report.json").write_text('{"facts_file": 3}'), "names no facts file"),
    ],
)
def test_a_damaged_report_directory_is_a_clear_error(tmp_path, damage, message):
    _files.write_reports(_report_with_facts(), str(tmp_path))
    damage(tmp_path)
    with pytest.raises(_files.ReportFileError, match=message):
        _files.load_report(str(tmp_path))


def test_a_side_file_that_is_not_gzip_json_but_matches_its_digest_is_refused(tmp_path):
    _files.write_reports(_report_with_facts(), str(tmp_path))
    bogus = gzip.compress(b'{"schema": "other", "nodes": {}}')
    (tmp_path / "facts.json.gz").write_bytes(bogus)
    doc = json.loads((tmp_path / "report.json").read_text())
    doc["facts_file"]["sha256"] = hashlib.sha256(bogus).hexdigest()
    (tmp_path / "report.json").write_text(json.dumps(doc))
    with pytest.raises(_files.ReportFileError, match="not a gpuops.report-facts/v1 document"):
        _files.load_report(str(tmp_path))


def test_progress_lines_name_each_stage_with_its_count_and_seconds(tmp_path, capsys):
    lines = []
    _files.write_reports(_report_with_facts(), str(tmp_path), progress=lines.append)
    assert lines[0] == "gpuops inspect: reports: 3 nodes ..."
    assert lines[1].startswith("gpuops inspect: reports: 3 nodes in ") and lines[1].endswith(" s")
    assert _notes.progress_sink(None, 499) is None and _notes.progress_sink(False, 10**6) is None
    _notes.progress_sink(None, 500)("x")
    assert capsys.readouterr().err == "x\n"


NOW = datetime.datetime(2026, 12, 7, 12, 0, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize(
    "evidence_time, label",
    [
        ("2026-12-07T11:00:00Z", None),  # an hour old
        ("2026-12-06T12:00:00Z", None),  # exactly 24 h: not older than the threshold
        ("2026-12-06T11:00:00Z", "stale evidence (25 h old)"),
        ("2026-12-02T10:00:00Z", "stale evidence (5 d old)"),
    ],
)
def test_stale_evidence_is_marked_with_its_age(evidence_time, label):
    report = _report.build_report("t", {"a": {"status": "healthy", "findings": []}}, [], "1")
    report["nodes"]["a"]["evidence_time"] = evidence_time
    _notes.mark_evidence_age(report, NOW, {})
    assert report["nodes"]["a"].get("stale_evidence") == label
    assert report["summary"]["stale_evidence"] == {"threshold_s": 86400, "nodes": 1 if label else 0}


def test_respond_by_counts_from_the_evidence_time_unless_the_fault_was_seen_earlier():
    """P1 responds within 4 hours (a test policy): a capture taken on Wednesday 2 December 10:00 UTC is due at
    14:00 that day; a finding already due earlier keeps its time; a node without evidence time keeps its own."""
    policy = {"response_times": {"P1": "4h"}}
    findings = [
        {"severity": "P1", "check": "gpu.xid", "respond_by": "2026-12-07T16:00:00Z"},
        {"severity": "P1", "check": "gpu.ecc", "respond_by": "2026-12-01T00:00:00Z"},
    ]
    nodes = {"a": {"status": "faulty", "findings": findings}, "b": {"status": "faulty", "findings": [findings[0]]}}
    report = _report.build_report("t", nodes, [], "1")
    report["nodes"]["a"]["evidence_time"] = "2026-12-02T10:00:00Z"
    _notes.mark_evidence_age(report, NOW, policy)
    assert [f["respond_by"] for f in report["nodes"]["a"]["findings"]] == [
        "2026-12-02T14:00:00Z",
        "2026-12-01T00:00:00Z",
    ]
    assert report["nodes"]["b"]["findings"][0]["respond_by"] == "2026-12-07T16:00:00Z"
    assert "evidence_age_s" not in report["nodes"]["b"]


def test_a_facts_file_of_many_gzip_members_reads_as_one_stream(tmp_path, monkeypatch):
    """Chunks compressed on threads, one gzip member each (RFC 1952 2.2): gzip readers see one document."""
    monkeypatch.setattr(_files, "GZIP_CHUNK", 16)
    paths = _files.write_reports(_report_with_facts(), str(tmp_path))
    raw = open(paths["facts"], "rb").read()
    assert raw.count(b"\x1f\x8b\x08") > 3  # several members
    assert json.loads(gzip.decompress(raw))["nodes"] == dict(FACTS, c=None)
    assert _files.load_report(str(tmp_path))["nodes"]["b"]["facts"] == FACTS["b"]
