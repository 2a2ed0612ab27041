# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The live inspection under Mitogen's ``mitogen_linear`` strategy (an optional accelerator, docs/performance.md).

Mitogen is not a dependency: the test runs where ``ansible_mitogen`` is importable (the venv, once mitogen is in
requirements-dev.txt) or where ``GPUOPS_MITOGEN_PATH`` names a directory holding it (``pip install --target DIR
mitogen``), and is skipped otherwise. Same bed, same inventory: the verdicts must be those of the linear strategy.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _mitogen_dir():
    path = os.environ.get("GPUOPS_MITOGEN_PATH")
    if path and (Path(path) / "ansible_mitogen").is_dir():
        return Path(path)
    spec = importlib.util.find_spec("ansible_mitogen")
    return Path(spec.origin).parent.parent if spec and spec.origin else None


def _verdicts(report_dir):
    report = json.loads((report_dir / "report.json").read_text())
    return {h: (n["mode"], n["status"], n["severity"]) for h, n in report["nodes"].items()}, report


def test_live_inspection_under_mitogen_linear_gives_the_linear_verdicts(testbed, tmp_path):
    mitogen = _mitogen_dir()
    if mitogen is None:
        pytest.skip("mitogen is not installed (requirements-dev.txt) and GPUOPS_MITOGEN_PATH is not set")
    runs = {}
    for strategy in ("linear", "mitogen_linear"):
        env = dict(testbed.env, ANSIBLE_STRATEGY=strategy)
        if strategy != "linear":
            env.update(
                ANSIBLE_STRATEGY_PLUGINS=str(mitogen / "ansible_mitogen" / "plugins" / "strategy"),
                PYTHONPATH=os.pathsep.join(p for p in (str(mitogen), env.get("PYTHONPATH")) if p),
            )
        report_dir = tmp_path / strategy
        cmd = [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(testbed.inventory)]
        cmd += [str(REPO / "playbooks" / "inspect.yml"), "-e", "gpuops_report_dir=%s" % report_dir]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env, cwd=str(REPO), check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        runs[strategy] = _verdicts(report_dir)
    verdicts, report = runs["mitogen_linear"]
    assert set(verdicts) == set(testbed.nodes)
    assert all(mode == "live" for mode, _status, _sev in verdicts.values())
    assert report["summary"]["nodes"] == len(testbed.nodes)
    assert verdicts == runs["linear"][0]
