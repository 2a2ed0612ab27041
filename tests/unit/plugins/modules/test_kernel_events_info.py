# Tests for the gpuops.cluster.kernel_events_info module.
from __future__ import annotations

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import kernel_events as _kernel_events
from ansible_collections.gpuops.cluster.plugins.modules import kernel_events_info

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "xid-kmsg")


def run(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        kernel_events_info.main()
    out = json.loads(capsys.readouterr().out)
    return exc.value.code, out


def test_capture_dir_with_gpu_mapping(tmp_path, capsys):
    with open(os.path.join(FIX, "gpud-xid48-63-94-dbe-rowremap-contained.log"), encoding="utf-8") as fh:
        (tmp_path / "kernel.log").write_text(fh.read())
    (tmp_path / "capture.json").write_text(json.dumps({"boot_id": "abc"}))
    rc, out = run(
        {
            "capture_dir": str(tmp_path),
            "gpus": [{"index": 5, "bus_id": "00000000:19:00.0"}],
            "_ansible_check_mode": True,
        },
        capsys,
    )
    assert rc == 0 and out["changed"] is False
    k = out["kernel"]
    assert (k["source"], k["boot_id"], k["errors"]) == ("capture:kernel.log", "abc", [])
    assert [e["code"] for e in k["events"]] == [48, 63] + [94] * 9
    assert {e["gpu_index"] for e in k["events"]} == {5}


def test_since_filters_capture_and_max_events(tmp_path, capsys):
    with open(os.path.join(FIX, "gpud-xid13-43-sm-warp-exception.log"), encoding="utf-8") as fh:
        (tmp_path / "kernel.log").write_text(fh.read())
    rc, out = run({"capture_dir": str(tmp_path), "since": "2025-01-21T04:00:00Z", "max_events": 5}, capsys)
    k = out["kernel"]
    assert k["since"] == "2025-01-21T04:00:00Z"
    assert len(k["events"]) == 5 and k["events_dropped"] == 297


def test_internal_error_is_reported_not_raised(tmp_path, capsys, monkeypatch):
    def boom(**kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr(kernel_events_info, "collect", boom)
    rc, out = run({"capture_dir": str(tmp_path)}, capsys)
    assert rc == 0 and out["kernel"]["errors"][0]["kind"] == "internal"
    assert "RuntimeError: bug" in out["kernel"]["errors"][0]["message"]


def test_bad_option_fails(capsys):
    rc, out = run({"max_events": "many"}, capsys)
    assert rc == 1 and out["failed"] is True


def test_live_uses_journalctl(tmp_path, capsys, monkeypatch):
    exe = tmp_path / "journalctl"
    exe.write_text(
        "#!/bin/sh\necho '2026-12-02T09:58:01+0000 h kernel: NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off "
        "the bus.'\n"
    )
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (tmp_path, os.environ.get("PATH", "")))
    monkeypatch.setattr(_kernel_events, "live_boot_id", lambda: "live-boot")
    rc, out = run({"timeout": 5}, capsys)
    k = out["kernel"]
    assert (k["source"], k["boot_id"], [e["code"] for e in k["events"]]) == ("journalctl", "live-boot", [79])
