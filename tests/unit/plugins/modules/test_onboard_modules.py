# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.nccl_test_info (a module) and gpuops.cluster.onboard_stage (an action) as Ansible runs them."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cluster.plugins.action import onboard_stage
from ansible_collections.gpuops.cluster.plugins.modules import nccl_test_info

from action_runner import _run_action  # tests/unit/action_runner.py

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "nccl"


def run(mod, args, capsys):
    if mod is onboard_stage:  # a controller step: an action plugin
        args = dict(args)
        out = _run_action(mod, args, check_mode=bool(args.pop("_ansible_check_mode", False)))
        return (1 if out.get("failed") else 0), out
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        mod.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_nccl_capture_dir(tmp_path, capsys):
    (tmp_path / "nccl-all-reduce.txt").write_text((FIX / "allreduce-low-busbw.txt").read_text())
    rc, out = run(nccl_test_info, {"capture_dir": str(tmp_path), "_ansible_check_mode": True}, capsys)
    assert rc == 0 and out["changed"] is False and out["rails"] == []
    assert out["nccl"]["avg_busbw_gbps"] == pytest.approx(119.9139) and out["nccl"]["errors"] == []


def test_nccl_per_rail_env(tmp_path, capsys):
    exe = tmp_path / "all_reduce_perf"
    exe.write_text(
        '#!/bin/sh\necho "$NCCL_IB_HCA" >> %s/rails\ncat %s\n' % (tmp_path, FIX / "allreduce-2node-16rank-large.txt")
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    rc, out = run(nccl_test_info, {"path": str(exe), "rails": ["mlx5_0", "mlx5_3"], "timeout": 10}, capsys)
    assert rc == 0 and [r["rail"] for r in out["rails"]] == ["mlx5_0", "mlx5_3"]
    assert (tmp_path / "rails").read_text().split() == ["mlx5_0", "mlx5_3"]
    assert out["nccl"] == out["rails"][0]["result"] and len(out["nccl"]["rows"]) == 4


def test_onboard_stage_record_status_signoff(tmp_path, capsys):
    base = {"state_dir": str(tmp_path), "host": "n1", "node_class": "h100"}
    rc, out = run(onboard_stage, dict(base, action="status"), capsys)
    assert rc == 0 and out["resume_from"] == 0 and out["next_stage"] == "inventory" and out["changed"] is False
    rc, out = run(
        onboard_stage,
        dict(base, stage="inventory", problems=["GPU count 7, profile expects 8"], ticket="T-1", by="alice"),
        capsys,
    )
    assert (
        out["result"]["passed"] is False and out["reason"] == "onboard inventory failed: GPU count 7, profile expects 8"
    )
    rec = json.loads((tmp_path / "onboarding" / "n1.json").read_text())
    assert rec["status"] == "failed" and rec["stages"]["inventory"]["by"] == "alice"
    findings = [{"severity": "P3", "check": "scheduler.node_state", "component": "slurm", "message": "drained"}]
    run(onboard_stage, dict(base, stage="inventory", problems=[]), capsys)  # an empty list = evaluate: no profile
    rc, out = run(onboard_stage, dict(base, stage="health", findings=findings), capsys)
    assert out["result"]["passed"] is True
    rc, out = run(onboard_stage, dict(base, stage="service", slurm_text="Node n1 not found"), capsys)
    assert out["result"]["problems"][0].startswith("scontrol show node n1:")
    rc, out = run(onboard_stage, dict(base, action="signoff", _ansible_check_mode=True), capsys)
    assert 'gpuops_onboard_accepted{host="n1"} 0' in out["prometheus"]
    assert not (tmp_path / "onboarding" / "n1.signoff.md").exists()  # check mode writes nothing
    rc, out = run(onboard_stage, dict(base, action="signoff"), capsys)
    assert (tmp_path / "onboarding" / "n1.signoff.md").read_text().startswith("# Onboarding sign-off: n1")
    rc, out = run(onboard_stage, dict(base, action="status", restart=True), capsys)
    assert out["changed"] is True and out["resume_from"] == 0 and out["record"]["history"][-1]["status"] == "restarted"
    (tmp_path / "onboarding" / "n1.json").write_text("{")
    rc, out = run(onboard_stage, dict(base, action="status"), capsys)
    assert rc == 1 and "unreadable" in out["msg"]
