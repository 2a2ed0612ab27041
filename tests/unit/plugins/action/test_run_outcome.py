# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.run_outcome: per-node outcomes, the outcome file, audit records, the exit code."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.gpuops.cluster.plugins.action import run_outcome as A
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import outcome as _outcome
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as _audit


def _args(tmp_path, **extra):
    args = {
        "workflow": "isolate",
        "run_id": "20261203T031500Z-1a2b3c4d",
        "requested_state": "drained",
        "requested": ["gpu-node-03", "gpu-node-07"],
        "nodes": {
            "gpu-node-03": {"outcome": "done", "detail": "drained", "decision": "isolated", "slurm_state": "DRAINED"},
            "gpu-node-07": {"outcome": "already", "detail": "was drained"},
        },
        "ticket": "INC-4712",
        "change_id": "CHG-1",
        "state_dir": str(tmp_path / "state"),
    }
    args.update(extra)
    return {k: v for k, v in args.items() if v is not None}


def _audit_lines(tmp_path):
    log = tmp_path / "state" / "audit" / "audit.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_all_success_is_ok_and_writes_a_private_outcome_file(tmp_path, run_action):
    out = run_action(A, _args(tmp_path))
    assert not out.get("failed"), out
    assert out["changed"] is False  # a record, not a change: the play stays idempotent
    path = tmp_path / "state" / "runs" / "isolate" / "20261203T031500Z-1a2b3c4d.json"
    assert out["path"] == str(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "state" / "runs" / "isolate").stat().st_mode) == 0o700
    doc = json.loads(path.read_text())
    assert doc["schema"] == "gpuops.outcome/v1" and doc["success"] is True and doc["exit_code"] == 0
    assert doc["counts"] == {"done": 1, "already": 1}
    assert doc["ticket"] == "INC-4712" and doc["change_id"] == "CHG-1" and doc["requested_state"] == "drained"
    assert doc["nodes"]["gpu-node-03"] == {
        "outcome": "done", "detail": "drained", "decision": "isolated", "error": None,
        "slurm_state": "DRAINED", "slurm_reason": None,
    }  # fmt: skip
    assert doc["started"] and doc["finished"] and doc["check_mode"] is False
    assert (
        out["summary"]
        == ("gpuops outcome: isolate 20261203T031500Z-1a2b3c4d: OK done=1 already=1 -> exit 0")
        == doc["summary"]
    )
    assert out["lines"] == ["gpu-node-03: done (drained)", "gpu-node-07: already (was drained)"]


@pytest.mark.parametrize("bad", ["refused", "failed", "not_started", "left_drained", "unconfirmed"])
def test_any_node_not_a_success_fails_the_task_with_the_summary(tmp_path, run_action, bad):
    nodes = {"gpu-node-03": {"outcome": "done"}, "gpu-node-07": {"outcome": bad, "detail": "why"}}
    out = run_action(A, _args(tmp_path, nodes=nodes))
    assert out["failed"] is True
    assert out["msg"] == out["summary"]
    assert "INCOMPLETE" in out["msg"] and "%s=1" % bad in out["msg"] and out["msg"].endswith("-> exit 2")
    doc = json.loads(open(out["path"]).read())
    assert doc["success"] is False and doc["exit_code"] == 2


def test_fail_false_reports_without_failing(tmp_path, run_action):
    out = run_action(A, _args(tmp_path, nodes={"gpu-node-03": {"outcome": "refused"}}, fail=False))
    assert not out.get("failed") and out["outcome"]["exit_code"] == 2


def test_a_requested_node_missing_from_nodes_is_not_started(tmp_path, run_action):
    out = run_action(A, _args(tmp_path, nodes={"gpu-node-03": {"outcome": "done"}}))
    assert out["failed"] is True
    assert out["outcome"]["nodes"]["gpu-node-07"]["outcome"] == "not_started"
    assert out["outcome"]["counts"] == {"done": 1, "not_started": 1}


def test_skipped_counts_as_success(tmp_path, run_action):
    out = run_action(A, _args(tmp_path, nodes={"gpu-node-03": {"outcome": "skipped"}}, requested=["gpu-node-03"]))
    assert not out.get("failed") and out["outcome"]["success"] is True


def test_one_audit_record_per_node_in_the_state_dir_chain(tmp_path, run_action, monkeypatch):
    monkeypatch.delenv("GPUOPS_AUDIT_LOG", raising=False)
    monkeypatch.delenv("GPUOPS_AUDIT_HEAD", raising=False)
    nodes = {
        "gpu-node-03": {"outcome": "failed", "error": "slurm_load_node error: Unable to contact slurm controller"},
        "gpu-node-07": {"outcome": "refused", "decision": "guard: limit 2", "detail": "refused by the guard"},
    }
    run_action(A, _args(tmp_path, nodes=nodes))
    recs = [r for r in _audit_lines(tmp_path) if r["event"] == "outcome"]
    assert [r["node"] for r in recs] == ["gpu-node-03", "gpu-node-07"]
    assert all(r["ticket"] == "INC-4712" and r["change_id"] == "CHG-1" and r["workflow"] == "isolate" for r in recs)
    assert recs[0]["outcome"] == "failed" and "Unable to contact slurm controller" in recs[0]["error"]
    assert recs[1]["decision"] == "guard: limit 2" and recs[1]["host"] == "gpu-node-07"
    log = str(tmp_path / "state" / "audit" / "audit.log")
    assert _audit.verify(log, expected_head=str(tmp_path / "state" / "audit" / "head.json"))["ok"] is True


def test_secrets_are_redacted_in_the_file_and_the_audit(tmp_path, run_action, monkeypatch):
    monkeypatch.delenv("GPUOPS_AUDIT_LOG", raising=False)
    nodes = {"gpu-node-03": {"outcome": "failed", "error": "login as admin with S3cr3tPw! refused; token=abcdef123"}}
    out = run_action(
        A, _args(tmp_path, nodes=nodes, requested=["gpu-node-03"]), task_vars={"gpuops_bmc_password": "S3cr3tPw!"}
    )
    text = open(out["path"]).read() + (tmp_path / "state" / "audit" / "audit.log").read_text()
    assert "S3cr3tPw!" not in text and "abcdef123" not in text
    assert "login as admin with ******** refused; token=********" in text


def test_check_mode_writes_nothing_but_still_reports_and_fails(tmp_path, run_action):
    out = run_action(A, _args(tmp_path, nodes={"gpu-node-03": {"outcome": "refused"}}), check_mode=True)
    assert out["failed"] is True and "check mode" in out["summary"] and out["path"] is None
    assert out["outcome"]["check_mode"] is True
    assert not (tmp_path / "state").exists()
    ok = run_action(A, _args(tmp_path, report=str(tmp_path / "r.json")), check_mode=True)
    assert not ok.get("failed") and not (tmp_path / "state").exists() and not (tmp_path / "r.json").exists()


def test_without_a_state_dir_nothing_is_written(tmp_path, run_action, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = run_action(A, _args(tmp_path, state_dir=None))
    assert not out.get("failed") and out["path"] is None and list(tmp_path.iterdir()) == []


def test_merges_into_the_run_report(tmp_path, run_action):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"batches": [1, 2]}))
    out = run_action(A, _args(tmp_path, report=str(report)))
    data = json.loads(report.read_text())
    assert data["batches"] == [1, 2] and data["outcome"]["run_id"] == "20261203T031500Z-1a2b3c4d"
    assert out["report"] == str(report) and stat.S_IMODE(report.stat().st_mode) == 0o600


def test_a_report_that_is_not_json_is_left_alone_with_a_warning(tmp_path, run_action):
    report = tmp_path / "report.md"
    report.write_text("# not json\n")
    out = run_action(A, _args(tmp_path, report=str(report)))
    assert not out.get("failed") and report.read_text() == "# not json\n"
    assert any("not JSON" in w for w in out["warnings"])
    assert os.path.exists(out["path"])  # the outcome file is still written


@pytest.mark.parametrize(
    "extra,msg",
    [
        ({"nodes": {"gpu-node-03": {"outcome": "success"}}}, "not in the vocabulary"),
        ({"nodes": {"gpu-node-03": {"detail": "no outcome"}}}, "not in the vocabulary"),
        ({"nodes": {"gpu-node-03": "done"}}, "must be a mapping"),
        ({"nodes": {"gpu-node-03": {"outcome": "done", "colour": "red"}}}, "unknown key"),
        ({"nodes": {"../etc": {"outcome": "done"}}}, "invalid node name"),
        ({"run_id": "../../x"}, "invalid run_id"),
        ({"workflow": "reboot"}, "value of workflow must be one of"),
        ({"run_id": None}, "run_id"),
    ],
)
def test_bad_input_is_a_clear_error_and_writes_nothing(tmp_path, run_action, extra, msg):
    out = run_action(A, _args(tmp_path, **extra))
    assert out.get("failed") is True and msg in out["msg"], out
    assert not (tmp_path / "state").exists()


def test_vocabulary_is_the_contract():
    assert list(_outcome.VOCABULARY) == [
        "done", "already", "skipped", "refused", "failed", "not_started", "left_drained", "unconfirmed",
    ]  # fmt: skip
    assert [o for o, ok in _outcome.VOCABULARY.items() if ok] == ["done", "already", "skipped"]


def test_controller_user_falls_back_to_the_passwd_name(monkeypatch):
    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("LOGNAME", raising=False)
    import pwd

    assert _outcome.controller_user() == pwd.getpwuid(os.getuid()).pw_name


def test_the_guard_names_the_controller_user_for_the_marker(tmp_path, run_action, monkeypatch, slurm_view):
    """Observation 5: the isolate marker's `who` falls back to the guard's `operator` (never `unknown`)."""
    from ansible_collections.gpuops.cluster.plugins.action import isolation_guard as G

    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("LOGNAME", raising=False)
    slurm_view.set("NodeName=gpu-node-01 State=IDLE Partitions=gpu\nNodeName=gpu-node-02 State=IDLE Partitions=gpu")
    args = {"nodes": ["gpu-node-01"], "scontrol_path": slurm_view.path, "state_dir": str(tmp_path), "run_id": "r"}
    out = run_action(G, args, check_mode=True)
    import pwd

    assert out["operator"] == pwd.getpwuid(os.getuid()).pw_name != "unknown"
