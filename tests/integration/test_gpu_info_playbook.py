# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Integration: gpuops.cluster.gpu_info through ansible-playbook on localhost (connection local), against a
capture directory holding a real 8x H100 ``nvidia-smi -q`` and live against the fake nvidia-smi on PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")
PLAY = os.path.join(ROOT, "tests", "integration", "playbooks", "gpu_info", "gpu_info.yml")
BIN = os.path.dirname(sys.executable)
PLAYBOOK = os.path.join(BIN, "ansible-playbook")

pytestmark = pytest.mark.skipif(not os.path.exists(PLAYBOOK), reason="ansible-playbook not installed in this venv")


def test_gpu_info_playbook(tmp_path):
    cap = tmp_path / "capture"
    cap.mkdir()
    shutil.copy(
        os.path.join(FIX, "nvidia-smi-q-text", "gpud-8xh100-535.161.08-hw-power-brake.txt"), cap / "nvidia-smi-q.txt"
    )
    out = tmp_path / "out.json"
    env = dict(os.environ)
    env.update(
        {
            "PATH": BIN + os.pathsep + env.get("PATH", ""),
            "ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, "build"),
            "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
            "ANSIBLE_INVENTORY": "localhost,",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_LOCALHOST_WARNING": "False",
        }
    )
    for var in ("FAKE_NVSMI_SLEEP", "FAKE_NVSMI_RC", "FAKE_NVSMI_TEXT", "FAKE_NVSMI_NVLINK_S", "FAKE_NVSMI_NVLINK_E"):
        env.pop(var, None)
    cmd = [
        PLAYBOOK,
        "-i",
        "localhost,",
        PLAY,
        "-e",
        json.dumps(
            {
                "capture_dir": str(cap),
                "fakebin": os.path.join(FIX, "bin"),
                "xml": os.path.join(FIX, "nvidia-smi-xml", "datakit-8xv100s-pcie-460.73.01.xml"),
                "out": str(out),
            }
        ),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout
    res = json.loads(out.read_text())
    cap_gpu, live = res["cap"], res["live"]
    assert cap_gpu["count"] == 8 and cap_gpu["driver_version"] == "535.161.08"
    assert [g["bus_id"] for g in cap_gpu["gpus"]][-1] == "00000000:DB:00.0"
    assert cap_gpu["gpus"][0]["pcie"]["replay_counter"] == 67
    assert live["count"] == 8 and live["gpus"][0]["power"]["draw_w"] == pytest.approx(232.8)
    assert [g["bus_id"] for g in live["gpus"] if "sw_power_cap" in g["throttle"]["active"]] == [
        "00000000:00:10.0",
        "00000000:00:13.0",
    ]
    assert res["auto"]["source"] == "nvidia-smi-xml"
