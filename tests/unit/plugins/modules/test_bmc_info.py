# Unit tests for plugins/modules/bmc_info.py (argument handling, mode choice, env fallback, check mode).
from __future__ import annotations

import json
import os
import shutil

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cluster.plugins.modules import bmc_info

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        bmc_info.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


@pytest.fixture
def calls(monkeypatch):
    seen = []

    def fake(**kw):
        seen.append(kw)
        return {"source": "fake", "errors": []}

    monkeypatch.setattr(bmc_info, "collect", fake)
    return seen


def test_capture_check_mode(tmp_path, capsys):
    shutil.copy(
        os.path.join(FIX, "ipmitool-sdr", "hpe-proliant-sdr-type-power-supply.txt"), tmp_path / "ipmitool-sdr.txt"
    )
    rc, out = run_module({"capture_dir": str(tmp_path), "_ansible_check_mode": True}, capsys)
    assert rc == 0 and out["changed"] is False
    assert out["bmc"]["source"] == "capture" and len(out["bmc"]["sensors"]) == 3


def test_modes(calls, capsys):
    run_module({}, capsys)
    run_module({"bmc_host": "10.0.0.5", "protocol": "ipmi", "port": 6230}, capsys)
    run_module({"bmc_host": "10.0.0.5", "validate_certs": False, "timeout": 5}, capsys)
    assert [c["mode"] for c in calls] == ["inband", "ipmi_lan", "redfish"]
    assert calls[1]["port"] == 6230 and calls[2]["validate_certs"] is False and calls[2]["timeout"] == 5


def test_credentials_from_env_and_no_log(calls, capsys, monkeypatch):
    monkeypatch.setenv("GPUOPS_BMC_USER", "envuser")
    monkeypatch.setenv("GPUOPS_BMC_PASSWORD", "envSecret-123")
    rc, out = run_module({"bmc_host": "h"}, capsys)
    assert rc == 0 and calls[0]["user"] == "envuser" and calls[0]["password"] == "envSecret-123"
    assert "envSecret-123" not in json.dumps(out)
    run_module({"bmc_host": "h", "bmc_user": "u", "bmc_password": "explicit"}, capsys)
    assert calls[1]["user"] == "u" and calls[1]["password"] == "explicit"


def test_bad_protocol(capsys):
    rc, out = run_module({"bmc_host": "h", "protocol": "telnet"}, capsys)
    assert rc == 1 and out["failed"] and "protocol" in out["msg"]
