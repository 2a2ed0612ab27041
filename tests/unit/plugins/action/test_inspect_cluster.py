# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.inspect_cluster's operator-facing checks (issue 14): empty targets, fail_on, textfile dir, plan."""

from __future__ import annotations

import os
import re
import stat

import pytest

from ansible_collections.gpuops.cluster.plugins.action import inspect_cluster
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import steps as _steps

HOSTVARS = {
    "live-1": {"inventory_hostname": "live-1"},
    "cap-1": {"inventory_hostname": "cap-1", "gpuops_capture_dir": "/nonexistent/cap-1"},
    "live-2": {"inventory_hostname": "live-2"},
}
TASK_VARS = {"hostvars": HOSTVARS, "ansible_inventory_sources": ["/etc/gpuops/hosts.yml"]}


def test_plan_splits_live_and_captured_targets(run_action):
    res = run_action(
        inspect_cluster, {"targets": ["live-1", "cap-1", "live-2"], "validate_only": True}, task_vars=TASK_VARS
    )
    assert res["live"] == ["live-1", "live-2"] and res["captured"] == ["cap-1"]
    assert res["targets"] == ["live-1", "cap-1", "live-2"]


@pytest.mark.parametrize("targets", [None, []])
def test_no_target_names_the_pattern_and_the_inventory(run_action, targets):
    args = {"target_pattern": "gpu_nodes:&rack9", "validate_only": False}
    if targets is not None:
        args["targets"] = targets
    res = run_action(inspect_cluster, args, task_vars=TASK_VARS)
    msg = res["msg"]
    assert res["failed"] and msg.startswith("inspect_cluster: "), res
    assert "the host pattern 'gpu_nodes:&rack9'" in msg and "matched no host" in msg and "/etc/gpuops/hosts.yml" in msg


@pytest.mark.parametrize("value", ["P4", "p1", "high", " P1", "P1 "])
def test_bad_fail_on_is_refused_by_name(run_action, value):
    res = run_action(
        inspect_cluster, {"targets": ["cap-1"], "fail_on": value, "validate_only": True}, task_vars=TASK_VARS
    )
    assert res["failed"] and "inspect_cluster: gpuops_fail_on must be one of P0, P1, P2, P3" in res["msg"], res


def test_textfile_dir_must_exist(run_action, tmp_path):
    res = run_action(
        inspect_cluster,
        {"targets": ["cap-1"], "textfile_dir": str(tmp_path / "missing"), "validate_only": True},
        task_vars=TASK_VARS,
    )
    assert res["failed"] and re.search("^inspect_cluster: gpuops_textfile_dir .* is not a directory", res["msg"]), res


@pytest.mark.parametrize(
    "fail_on, count, by",
    [
        ("", None, None),
        ("P0", 1, {"P0": 1}),
        ("P1", 3, {"P0": 1, "P1": 2}),
        ("P3", 10, {"P0": 1, "P1": 2, "P2": 3, "P3": 4}),
    ],
)
def test_gate_counts_findings_at_or_above(fail_on, count, by):
    summary = {"nodes": 20, "status": {"healthy": 20}, "severity": {"P0": 1, "P1": 2, "P2": 3, "P3": 4}}
    gate = _steps.gate(summary, fail_on=fail_on, fail_on_unknown="10%")
    if count is None:
        assert gate is None
    else:
        assert {k: gate[k] for k in ("severity", "count", "by_severity", "failed")} == {
            "severity": fail_on,
            "count": count,
            "by_severity": by,
            "failed": True,
        }
        assert gate["msg"].endswith("; %d finding(s) at or above %s" % (count, fail_on)), gate["msg"]


@pytest.mark.parametrize("value", ["ten", "101%", "-1", "1.5", "5%%", "P1", "10%,2"])
def test_bad_fail_on_unknown_is_refused_by_name(run_action, value):
    res = run_action(
        inspect_cluster,
        {"targets": ["cap-1"], "fail_on": "P1", "fail_on_unknown": value, "validate_only": True},
        task_vars=TASK_VARS,
    )
    assert res["failed"] and "gpuops_fail_on_unknown must be a percentage" in res["msg"], res


def test_evaluation_counts_live_outcomes_and_writes_the_textfile(run_action, tmp_path):
    hv = {
        "ok": {"__inspect_collect": {"facts": {"schema": "gpuops.facts/v1", "mode": "live", "errors": []}}},
        "down": {"__inspect_collect": {"unreachable": True, "msg": "ssh: no route"}},
        "broken": {"__inspect_collect": {"failed": True, "msg": "module crashed"}},
        "never": {},
    }
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    args = {
        "targets": sorted(hv),
        "report_dir": str(tmp_path / "r"),
        "textfile_dir": str(textfile),
        "fail_on": "P1",
        "include_facts": False,
    }
    res = run_action(inspect_cluster, args, task_vars={"hostvars": hv})
    assert res["collected"] == {"live": 4, "ok": 1, "unreachable": 2, "failed": 1}
    assert res["fail_on"]["severity"] == "P1" and res["fail_on"]["count"] >= 2  # two unreachable nodes at least
    prom = textfile / "gpuops.prom"
    assert res["reports"]["textfile"] == str(prom)
    assert prom.read_text() == (tmp_path / "r" / "gpuops.prom").read_text()
    assert stat.S_IMODE(os.stat(prom).st_mode) == 0o640
    # check mode: the reports are written, node_exporter's file is not touched
    prom.write_text("old\n")
    res = run_action(
        inspect_cluster, dict(args, report_dir=str(tmp_path / "r2")), check_mode=True, task_vars={"hostvars": hv}
    )
    assert "textfile" not in res["reports"] and prom.read_text() == "old\n"
