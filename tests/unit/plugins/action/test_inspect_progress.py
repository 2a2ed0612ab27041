# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.inspect_cluster's progress lines (issue 41): each long stage's node count and seconds go
through Display (an Ansible worker's stderr is not the terminal: ansible-core 2.17+ captures it and warns), from
run_notes.PROGRESS_MIN_HOSTS nodes; a smaller run prints none."""

from __future__ import annotations

import re

from ansible_collections.gpuops.cluster.plugins.action import inspect_cluster

HV = {
    "a": {"__inspect_collect": {"facts": {"schema": "gpuops.facts/v1", "mode": "live", "errors": []}}},
    "b": {"__inspect_collect": {"unreachable": True, "msg": "ssh: no route"}},
}


def _run(run_action, tmp_path, monkeypatch, threshold):
    lines = []
    monkeypatch.setattr(inspect_cluster._run_notes, "PROGRESS_MIN_HOSTS", threshold)
    monkeypatch.setattr(inspect_cluster._DISPLAY, "display", lambda msg, *a, **k: lines.append(msg))
    args = {"targets": sorted(HV), "report_dir": str(tmp_path / "r")}
    run_action(inspect_cluster, args, task_vars={"hostvars": HV})
    return lines


def test_a_long_run_prints_each_stage_with_its_count_and_seconds(run_action, tmp_path, monkeypatch):
    lines = _run(run_action, tmp_path, monkeypatch, 2)
    done = [line for line in lines if line.endswith(" s")]
    assert [re.sub(r"in [0-9.]+ s$", "in N s", line) for line in done] == [
        "gpuops inspect: read: 2 nodes in N s",
        "gpuops inspect: evaluate: 2 nodes in N s",
        "gpuops inspect: cluster view and report: 2 nodes in N s",
        "gpuops inspect: reports: 2 nodes in N s",
    ]
    assert "gpuops inspect: read: 2 nodes ..." in lines


def test_a_small_run_prints_no_progress(run_action, tmp_path, monkeypatch):
    assert not [line for line in _run(run_action, tmp_path, monkeypatch, 3) if line.startswith("gpuops inspect:")]
