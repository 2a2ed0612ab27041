# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.onboard_stage: check mode writes nothing in any branch; diff shows the record's change."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpuops.cluster.plugins.action import onboard_stage

GPU_FACTS = {
    "schema": "gpuops.facts/v1",
    "gpu": {"driver_version": "550.54.15", "gpus": [{"index": 0, "bus_id": "0000:1b:00.0", "serial": "1650"}]},
}


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    "args",
    [
        {"action": "status"},
        {"action": "status", "restart": True},
        {"action": "record", "stage": "inventory", "problems": ["GPU count 7, profile expects 8"]},
        {"action": "record", "stage": "health", "findings": [{"severity": "P1", "check": "gpu.ecc"}]},
        {"action": "record", "stage": "baseline", "facts": GPU_FACTS},
        {"action": "signoff"},
    ],
)
def test_check_mode_writes_nothing(tmp_path, run_action, args):
    state = tmp_path / "state"
    run_action(onboard_stage, {"state_dir": str(state), "host": "n1", "stage": "health", "findings": []})
    before = {p: (state / p).read_bytes() for p in _files(state)}
    out = run_action(onboard_stage, dict(args, state_dir=str(state), host="n1"), check_mode=True, diff=True)
    assert not out.get("failed"), out
    assert {p: (state / p).read_bytes() for p in _files(state)} == before
    assert out["changed"] is (args != {"action": "status"})


def test_diff_shows_the_record_before_and_after(tmp_path, run_action):
    base = {"state_dir": str(tmp_path), "host": "n1"}
    out = run_action(onboard_stage, dict(base, stage="inventory", problems=["no BMC"]), diff=True)
    assert json.loads(out["diff"]["before"])["status"] == "new"
    after = json.loads(out["diff"]["after"])
    assert after["status"] == "failed" and after == json.loads((tmp_path / "onboarding" / "n1.json").read_text())
    assert out["diff"]["after_header"] == str(tmp_path / "onboarding" / "n1.json")
    assert "diff" not in run_action(onboard_stage, dict(base, stage="inventory", problems=["no BMC"]))
    assert "diff" not in run_action(onboard_stage, dict(base, action="status"), diff=True)  # nothing changes


def test_health_fails_worst_first_and_refuses_unknown_severities(tmp_path, run_action):
    base = {"state_dir": str(tmp_path), "host": "n1", "stage": "health"}
    findings = [
        {"severity": "P2", "check": "ib.port", "component": "mlx5_0", "message": "down"},
        {"severity": "P0", "check": "gpu.xid", "component": "gpu3", "message": "Xid 79"},
    ]
    out = run_action(onboard_stage, dict(base, findings=findings))
    assert out["result"]["problems"] == ["P0 gpu.xid gpu3: Xid 79", "P2 ib.port mlx5_0: down"]
    out = run_action(onboard_stage, dict(base, findings=findings, fail_severities=["P4"]))
    assert out["failed"] is True and "fail_severities" in out["msg"]
