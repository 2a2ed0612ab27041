# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tried as a new user (issue 20): a ticket attachment holding only `mlxlink -d mlx5_0 -m -c` output, whose lane 2
Rx power is under the warning level, analysed offline by `ansible-playbook gpuops.cluster.inspect`: the report
shows ib.optics for mlx5_0/1. No test bed, no profile: a few seconds."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import yaml

from playbook_env import playbook_env

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
FIX = REPO / "tests" / "fixtures"


def test_mlxlink_capture_with_rx_under_warning_shows_ib_optics(tmp_path):
    cap = tmp_path / "ticket-4711"
    cap.mkdir()
    shutil.copy(str(FIX / "mlxlink" / "derived-osfp-ndr-rx-low-warning.txt"), str(cap / "mlxlink-mlx5_0.txt"))
    shutil.copy(str(FIX / "mlxlink" / "sigcomm26-bf3-qsfp28-dac-no-ddm.txt"), str(cap / "mlxlink-mlx5_1.txt"))
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": {"gpu-node-41": {
        "gpuops_capture_dir": str(cap)}}}}}}))  # fmt: skip
    report = tmp_path / "report"
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", str(inv), "gpuops.cluster.inspect",
         "-e", "gpuops_report_dir=%s" % report],
        capture_output=True, text=True, env=playbook_env(), cwd=str(REPO), timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "1 from capture directories" in proc.stdout
    data = json.loads((report / "report.json").read_text())
    node = data["nodes"]["gpu-node-41"]
    optics = [f for f in node["findings"] if f["check"] == "ib.optics"]
    assert [(f["component"], f["severity"], f["action"], f["code"]) for f in optics] == [
        ("mlx5_0/1", "P2", "reseat", "rx_power")
    ]
    assert "lane 2 -8.15 dBm" in optics[0]["message"]
    # the passive DAC of mlx5_1 (DDM N/A, BER 15E-255) raises nothing
    assert not [f for f in node["findings"] if f["component"] == "mlx5_1/1"]
    assert "ib.optics" in (report / "report.md").read_text()
