# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One deep capture.json through the real inspection (issue 35, observation 1; no test bed needed).

A 4-node simulated cluster (``generate.py --nodes 4 --seed 7``) whose gpu-node-02 capture.json holds ``[`` x
100,000 then ``]`` x 100,000. Before the fix ``ansible-playbook gpuops.cluster.inspect`` stopped with
``maximum recursion depth exceeded while decoding a JSON array``: rc 2, no report.json and no gpuops.prom for
any node. Now that node is ``error`` with a collector.error naming capture.json, the others are judged, the
reports are written, and the exit code is the fail-on policy's: 0 without ``gpuops_fail_on``, 2 with
``gpuops_fail_on=P1`` (the simulated faults of the other nodes are P0/P1).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from playbook_env import playbook_env

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
GENERATE = REPO / "tools" / "simcluster" / "generate.py"
BAD = "gpu-node-02"
TIMEOUT_S = 120


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    root = tmp_path_factory.mktemp("deepjson")
    sim = root / "sim"
    subprocess.run(
        [sys.executable, str(GENERATE), "--nodes", "4", "--out", str(sim), "--seed", "7"],
        check=True,
        capture_output=True,
        text=True,
        env=playbook_env(),
    )
    (sim / "captures" / BAD / "capture.json").write_text("[" * 100000 + "]" * 100000)
    return root, sim


def _inspect(root: Path, sim: Path, name: str, *extra: str) -> tuple:
    report_dir = root / name
    proc = subprocess.run(
        [
            str(VENV_BIN / "ansible-playbook"),
            "-i",
            str(sim / "inventory"),
            str(REPO / "playbooks" / "inspect.yml"),
            "-e",
            "gpuops_report_dir=%s" % report_dir,
            "-e",
            "gpuops_state_dir=%s" % (root / ("state-" + name)),
            *extra,
        ],
        capture_output=True,
        text=True,
        env=playbook_env(),
        cwd=str(REPO),
        timeout=TIMEOUT_S,
        check=False,
    )
    return proc, report_dir


def _check_reports(proc, report_dir: Path) -> dict:
    out = proc.stdout + proc.stderr
    assert "recursion" not in out, out[-3000:]
    assert (report_dir / "report.json").is_file(), out[-3000:]
    prom = (report_dir / "gpuops.prom").read_text()
    report = json.loads((report_dir / "report.json").read_text())
    node = report["nodes"][BAD]
    assert node["status"] == "error", node
    errors = [f for f in node["findings"] if f["check"] == "collector.error"]
    text = json.dumps(errors)
    assert "capture.json" in text and "nesting deeper than 64 levels" in text, errors
    others = {h: n["status"] for h, n in report["nodes"].items() if h != BAD}
    assert sorted(others) == ["gpu-node-01", "gpu-node-03", "gpu-node-04"]
    assert "error" not in others.values(), others  # judged on their evidence
    assert "faulty" in others.values() and "healthy" in others.values(), others
    assert 'gpuops_node_status{node="%s",status="error"} 1' % BAD in prom
    for host, status in others.items():
        assert 'gpuops_node_status{node="%s",status="%s"} 1' % (host, status) in prom, host
    return report


def test_a_deep_capture_json_is_one_nodes_error_and_the_reports_are_written(sim):
    root, path = sim
    proc, report_dir = _inspect(root, path, "plain")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    _check_reports(proc, report_dir)


def test_with_fail_on_the_exit_code_is_the_policys_and_the_reports_are_written(sim):
    root, path = sim
    proc, report_dir = _inspect(root, path, "failon", "-e", "gpuops_fail_on=P1")
    assert proc.returncode == 2, (proc.stdout + proc.stderr)[-3000:]
    assert "gpuops_fail_on=P1" in proc.stdout + proc.stderr
    _check_reports(proc, report_dir)
