# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 41 (paper cut): a node whose capture directory does not exist was labelled "(live collection)" in the
report, without the path; it is no live collection, nothing was read, and the label says which directory."""

from __future__ import annotations

import datetime

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import collect as _collect
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import report as _report

NOW_DT = datetime.datetime(2026, 12, 2, 10, 0, tzinfo=datetime.timezone.utc)


def test_missing_capture_directory_is_labelled_with_its_path(tmp_path):
    missing = str(tmp_path / "captures" / "gpu-node-02" / "20261202T0900Z")
    facts = _collect.collect_all(capture_dir=missing)
    assert facts["mode"] == "capture"
    assert facts["evidence_time_source"] != "live collection"
    assert missing in facts["evidence_time_source"] and "does not exist" in facts["evidence_time_source"]
    report = _inspect.inspect_nodes({"gpu-node-02": {"capture_dir": missing}}, now=NOW_DT, include_facts=False)
    md = _report.to_markdown(report)
    assert "(live collection)" not in md
    assert "inspection time (nothing read): capture directory %s does not exist" % missing in md


def test_a_file_where_the_directory_should_be_says_so(tmp_path):
    path = tmp_path / "capture.tar.gz"
    path.write_bytes(b"\x1f\x8b")
    facts = _collect.collect_all(capture_dir=str(path))
    assert "capture directory %s is not a directory" % path in facts["evidence_time_source"]
