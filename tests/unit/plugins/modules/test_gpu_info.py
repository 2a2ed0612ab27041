# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpuops.cluster.gpu_info module (in process, with patch_module_args)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cluster.plugins.modules import gpu_info

FIX = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))


def run(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        gpu_info.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_capture_dir_in_check_mode(tmp_path, capsys):
    shutil.copy(
        os.path.join(FIX, "nvidia-smi-q-text", "gpud-8xh100-535.161.08-hw-power-brake.txt"),
        tmp_path / "nvidia-smi-q.txt",
    )
    rc, out = run({"capture_dir": str(tmp_path), "_ansible_check_mode": True}, capsys)
    assert rc == 0 and out["changed"] is False
    gpu = out["gpu"]
    assert (gpu["source"], gpu["count"], gpu["driver_version"], gpu["errors"]) == (
        "capture:nvidia-smi-q.txt",
        8,
        "535.161.08",
        [],
    )
    assert gpu["gpus"][0]["serial"] == "1650124031592"
    assert gpu["gpus"][0]["throttle"]["active"] == ["hw_slowdown", "hw_power_brake_slowdown"]


def test_live_with_nvidia_smi_path(capsys, monkeypatch):
    monkeypatch.setenv("FAKE_NVSMI_XML", os.path.join(FIX, "nvidia-smi-xml", "telegraf-2xrtxa5000-590.44.01-v13.xml"))
    for var in ("FAKE_NVSMI_SLEEP", "FAKE_NVSMI_RC", "FAKE_NVSMI_NVLINK_S", "FAKE_NVSMI_NVLINK_E"):
        monkeypatch.delenv(var, raising=False)
    rc, out = run({"use_nvml": False, "nvidia_smi_path": os.path.join(FIX, "bin", "nvidia-smi"), "timeout": 10}, capsys)
    gpu = out["gpu"]
    assert (gpu["source"], gpu["count"], len(gpu["gpus"])) == ("nvidia-smi-xml", 2, 2)
    assert gpu["gpus"][1]["bus_id"] == "00000000:C1:00.0"


def test_internal_error_is_reported_not_raised(tmp_path, capsys, monkeypatch):
    def boom(**kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr(gpu_info, "collect", boom)
    rc, out = run({"capture_dir": str(tmp_path)}, capsys)
    assert rc == 0 and out["gpu"]["errors"][0]["kind"] == "internal"
    assert out["gpu"]["gpus"] == []


def test_documentation_parses_and_lists_every_option():
    import yaml

    doc = yaml.safe_load(gpu_info.DOCUMENTATION)
    assert set(doc["options"]) == {"use_nvml", "nvidia_smi_path"}
    ret = yaml.safe_load(gpu_info.RETURN)
    assert set(ret["gpu"]["sample"]) == {"source", "driver_version", "cuda_version", "count", "gpus", "errors"}
    yaml.safe_load(gpu_info.EXAMPLES)


def test_return_sample_has_every_record_key():
    import yaml

    from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.nvsmi_xml import new_record

    sample = yaml.safe_load(gpu_info.RETURN)["gpu"]["sample"]["gpus"][0]
    rec = new_record(0)
    assert set(sample) == set(rec)
    for key, value in rec.items():
        if isinstance(value, dict) and key not in ("throttle",):
            assert set(sample[key]) == set(value), key
