# Unit tests for plugins/modules/node_info.py (argument handling, check mode, result shape).
from __future__ import annotations

import json
import time

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import node as _node
from ansible_collections.gpuops.cluster.plugins.modules import node_info


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        node_info.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_live_check_mode(capsys):
    rc, out = run_module({"mounts": ["/", "/definitely-not-mounted"], "filesystems": ["/"], "services": [],
                          "_ansible_check_mode": True}, capsys)  # fmt: skip
    assert rc == 0 and out["changed"] is False
    node = out["node"]
    assert node["source"] == "live" and node["kernel"] and node["boot_id"]
    assert node["mounts"][0]["present"] is True and node["mounts"][0]["responsive"] is True
    assert node["mounts"][1] == {
        "path": "/definitely-not-mounted",
        "present": False,
        "responsive": None,
        "fstype": None,
        "device": None,
        "free_pct": None,
        "free_mib": None,
        "size_mib": None,
        "error": "not mounted",
    }
    assert node["filesystems"][0]["responsive"] is True and node["services"] == {}


def test_hung_probe_through_the_module(capsys, monkeypatch):
    monkeypatch.setattr(_node, "_probe_argv", lambda path: ["sleep", "30"])
    t0 = time.monotonic()
    rc, out = run_module({"mounts": ["/"], "services": [], "timeout": 1}, capsys)
    assert rc == 0 and time.monotonic() - t0 < 3
    assert out["node"]["mounts"][0]["responsive"] is False


def test_capture(tmp_path, capsys):
    (tmp_path / "node.json").write_text(json.dumps({"hostname": "gpu-node-07", "fabric_manager_version": "535.161.08"}))
    rc, out = run_module({"capture_dir": str(tmp_path), "mounts": [{"path": "/lustre", "fstype": "lustre"}]}, capsys)
    assert rc == 0
    node = out["node"]
    assert node["source"] == "capture:node.json" and node["hostname"] == "gpu-node-07"
    assert node["fabric_manager_version"] == "535.161.08"
    assert node["mounts"][0]["path"] == "/lustre" and node["mounts"][0]["present"] is None


def test_default_services(capsys):
    rc, out = run_module({}, capsys)
    assert rc == 0
    assert set(out["node"]["services"]) == {"nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm"}
