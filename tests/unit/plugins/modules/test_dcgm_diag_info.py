# Tests for the gpuops.cluster.dcgm_diag_info module (with the fake dcgmi of tests/fixtures/bin).
from __future__ import annotations

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cluster.plugins.modules import dcgm_diag_info

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))
FAKE = os.path.join(FIXTURES, "bin", "dcgmi")


def run(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        dcgm_diag_info.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_runs_the_requested_level(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(
        "FAKE_DCGMI_FIXTURE", os.path.join(FIXTURES, "dcgmi-diag", "dcgm-userguide-4.0-r3-per-gpu-pass.txt")
    )
    monkeypatch.setenv("FAKE_DCGMI_ARGS", str(tmp_path / "args"))
    rc, out = run({"run_level": 3, "dcgmi_path": FAKE, "timeout": 10, "_ansible_check_mode": True}, capsys)
    assert rc == 0 and out["changed"] is False
    d = out["dcgm"]
    assert (d["source"], d["level"], d["layout"], d["overall"]) == ("dcgmi", 3, "dcgm4", "pass")
    assert d["gpus"] == {"0": "pass", "1": "pass", "2": "pass", "3": "pass"}
    assert (tmp_path / "args").read_text().split() == ["diag", "-r", "3"]


def test_hang_is_a_timeout_record(capsys, monkeypatch):
    monkeypatch.setenv("FAKE_DCGMI_SLEEP", "30")
    rc, out = run({"dcgmi_path": FAKE, "timeout": 0.5}, capsys)
    assert rc == 0
    assert [e["kind"] for e in out["dcgm"]["errors"]] == ["timeout"] and out["dcgm"]["overall"] is None


def test_could_not_run(capsys, monkeypatch):
    monkeypatch.setenv("FAKE_DCGMI_FIXTURE", os.path.join(FIXTURES, "dcgmi-diag", "dcgm-issue254-plugin-dir-error.txt"))
    monkeypatch.setenv("FAKE_DCGMI_RC", "226")
    rc, out = run({"dcgmi_path": FAKE, "timeout": 10}, capsys)
    assert [e["kind"] for e in out["dcgm"]["errors"]] == ["tool_error", "tool_error"]
    assert out["dcgm"]["tests"] == []


def test_capture_dir_and_missing_binary(tmp_path, capsys):
    with open(os.path.join(FIXTURES, "dcgmi-diag", "ml-engineering-deployment-error-row-remap-pending.txt")) as fh:
        (tmp_path / "dcgmi-diag.txt").write_text(fh.read())
    rc, out = run({"capture_dir": str(tmp_path)}, capsys)
    assert out["dcgm"]["source"] == "capture:dcgmi-diag.txt" and out["dcgm"]["gpus"] == {"3": "fail"}
    rc, out = run({"dcgmi_path": str(tmp_path / "no-dcgmi")}, capsys)
    assert [e["kind"] for e in out["dcgm"]["errors"]] == ["missing"]


def test_invalid_level(capsys):
    rc, out = run({"run_level": 7}, capsys)
    assert rc == 1 and "run_level" in out["msg"]
