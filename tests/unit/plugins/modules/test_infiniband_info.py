# Unit tests for plugins/modules/infiniband_info.py (argument handling, check mode, result shape).
from __future__ import annotations

import json
import os
import shutil

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cluster.plugins.modules import infiniband_info

FIX = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures"))


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        infiniband_info.main()
    out = json.loads(capsys.readouterr().out)
    return exc.value.code, out


def test_capture_sysfs_tree(tmp_path, capsys):
    cap = tmp_path / "cap"
    shutil.copytree(os.path.join(FIX, "sysfs-infiniband", "gpud-h100-8x-cx7-tree"), str(cap / "sys/class/infiniband"))
    rc, out = run_module({"capture_dir": str(cap), "_ansible_check_mode": True}, capsys)
    assert rc == 0 and out["changed"] is False
    ib = out["ib"]
    assert ib["source"] == "capture:sysfs" and ib["errors"] == [] and len(ib["hcas"]) == 9
    mlx5_1 = [h for h in ib["hcas"] if h["name"] == "mlx5_1"][0]
    assert mlx5_1["ports"][0]["saturated"] == ["excessive_buffer_overrun_errors", "link_downed"]


def test_live_with_fake_root_and_ibstat(tmp_path, capsys):
    exe = tmp_path / "ibstat"
    exe.write_text("#!/bin/sh\ncat '%s'\n" % os.path.join(FIX, "ibstat", "gpud-h100-cx7-ib-some-down.txt"))
    exe.chmod(0o755)
    rc, out = run_module({"sysfs_root": str(tmp_path), "ibstat_path": str(exe), "timeout": 5}, capsys)
    assert rc == 0
    assert out["ib"]["source"] == "ibstat" and len(out["ib"]["hcas"]) == 12
    down = [h["name"] for h in out["ib"]["hcas"] if h["ports"][0]["state"] == "DOWN"]
    assert down == ["mlx5_2", "mlx5_7", "mlx5_8"]


def test_bad_argument_fails(capsys):
    rc, out = run_module({"timeout": "soon"}, capsys)
    assert rc == 1 and out["failed"] is True and "timeout" in out["msg"]
