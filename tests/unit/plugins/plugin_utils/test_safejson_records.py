# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The workflows' own records, read back within the JSON budget (issue 35, observation 1).

Onboarding and replacement records, leak results, upgrade node records, run reports, the audit log and the node
health check's state are files the collection wrote; a file that was replaced by a deeply nested document (a
hostile or broken writer with access to the state directory) must be each reader's ordinary error, never a
RecursionError out of the workflow. Before the fix every reader below raised RecursionError.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import outcome as _outcome
from ansible_collections.gpuops.cluster.plugins.plugin_utils.health_check import program as _health_check
from ansible_collections.gpuops.cluster.plugins.plugin_utils.leak import response as _leak
from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard import record as _onboard_record
from ansible_collections.gpuops.cluster.plugins.plugin_utils.replace import parts as _replace
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as _audit
from ansible_collections.gpuops.cluster.plugins.plugin_utils.upgrade import report as _upgrade_report

DEEP = "[" * 100000 + "]" * 100000


def _write(path, text=DEEP):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def test_onboarding_record(tmp_path):
    _write(_onboard_record.record_path(str(tmp_path), "gpu-node-01"))
    with pytest.raises(ValueError, match="onboarding record .* is unreadable: .*nesting deeper"):
        _onboard_record.load_record(str(tmp_path), "gpu-node-01")


def test_replacement_record_and_bundle_manifest(tmp_path):
    _write(_replace.record_path(str(tmp_path), "INC-1", "gpu-node-01"))
    with pytest.raises(_replace.ReplaceError, match="corrupt replacement record .*nesting deeper"):
        _replace.load_record(str(tmp_path), "INC-1", "gpu-node-01")
    bundle = tmp_path / "bundle"
    _write(str(bundle / "manifest.json"))
    with pytest.raises(ValueError, match="manifest.json refused: nesting deeper"):
        _replace.verify_manifest(str(bundle))


def test_leak_result_is_none(tmp_path):
    assert _leak.load_result(_write(str(tmp_path / "leak.json"))) is None


def test_upgrade_node_record_is_listed_unreadable(tmp_path):
    _write(str(tmp_path / "nodes" / "gpu-node-01.json"))
    records, unreadable = _upgrade_report.read_records(str(tmp_path))
    assert records == [] and len(unreadable) == 1 and "nesting deeper" in unreadable[0]


def test_run_report_is_not_merged(tmp_path):
    path = _write(str(tmp_path / "report.json"))
    with pytest.raises(ValueError, match="the run report .* is not JSON .*nesting deeper"):
        _outcome.merge_report(path, {"workflow": "isolate"})


def test_health_check_state_is_empty(tmp_path):
    assert _health_check.load_state(_write(str(tmp_path / "state.json"))) == {}


def test_audit_log_with_a_deep_line_fails_verification(tmp_path):
    log = str(tmp_path / "audit.log")
    _audit.append(log, {"event": "run_start"})
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(DEEP + "\n")
    res = _audit.verify(log, None, chain_only=True)
    assert res["ok"] is False
    assert "line 2" in str(res) and "not a JSON record" in str(res)
