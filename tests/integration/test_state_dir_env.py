# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPUOPS_STATE_DIR alone (no gpuops_state_dir, no <role>_state_dir) is what isolate, resume and gpu_reset use.

Issue 14: every runbook tells operators to export GPUOPS_STATE_DIR; these roles used to read only the variable,
so escalation, counter rates and isolation markers silently went nowhere. Real Slurm on the test bed.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
from simnode import faults  # noqa: E402

import _state_db  # noqa: E402

VENV_BIN = REPO / ".venv" / "bin"
OPEN = {"max_share_cluster": 1, "max_share_partition": 1, "max_share_rack": 1}


@pytest.fixture(scope="module", autouse=True)
def _clean_bed_first(testbed):
    testbed.reset()


def _run(testbed, tmp_path: Path, plays, state_dir: Path):
    """ansible-playbook with GPUOPS_STATE_DIR in its environment and no state dir variable anywhere."""
    path = tmp_path / ("play-%d.yml" % int(time.monotonic() * 1e6))
    path.write_text(json.dumps(plays), encoding="utf-8")
    env = dict(testbed.env, GPUOPS_STATE_DIR=str(state_dir))
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(testbed.inventory), str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(REPO), timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc


def _role_play(role: str, role_vars, out: Path, hosts: str = "localhost"):
    return [
        {
            "hosts": hosts,
            "gather_facts": False,
            "tasks": [
                {
                    "name": "role",
                    "block": [
                        {"ansible.builtin.include_role": {"name": "gpuops.cluster.%s" % role}, "vars": role_vars}
                    ],
                    "always": [
                        {
                            "ansible.builtin.copy": {
                                "content": "{{ %s_result | default({}) | to_json }}" % role,
                                "dest": str(out),
                            },  # fmt: skip
                            "delegate_to": "localhost",
                        }
                    ],
                }
            ],
        }
    ]


def test_isolate_and_resume_use_gpuops_state_dir_from_the_environment(testbed, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    node = testbed.nodes[5]
    out = tmp_path / "isolate.json"
    v = {"isolate_nodes": [node], "isolate_ticket": "T-14", "isolate_reason": "state dir from the environment",
         "isolate_guard_policy": OPEN, "isolate_requeue_after": 0}  # fmt: skip
    _run(testbed, tmp_path, _role_play("isolate", v, out), state)
    assert "DRAIN" in testbed.node_state(node)
    marker = json.loads((state / "isolation" / ("%s.json" % node)).read_text())
    assert "T-14" in json.dumps(marker)
    assert node in [c["node"] for c in _state_db.claims(state)]  # the guard's claim, in the state dir's store
    # resume: the inspection gate keeps its memory (host documents) in the same directory, the marker goes
    out = tmp_path / "resume.json"
    _run(testbed, tmp_path, _role_play("resume", {"resume_nodes": [node], "resume_ticket": "T-14"}, out), state)
    res = json.loads(out.read_text())
    assert res["resumed"] == [node], res
    assert _state_db.host_state(state, node) is not None
    assert not (state / "isolation" / ("%s.json" % node)).exists()
    testbed.wait_for(lambda: testbed.node_state(node).rstrip("*") == "IDLE", timeout=30, what="node idle")


def test_gpu_reset_records_the_reset_under_gpuops_state_dir(testbed, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    node = testbed.nodes[6]
    with testbed.edit_state(node) as s:
        faults.apply(s, "row_remap_pending", random.Random(4), gpu=2)
    out = tmp_path / "reset.json"
    _run(testbed, tmp_path, _role_play("gpu_reset", {"gpu_reset_ticket": "T-14"}, out, hosts=node), state)
    res = json.loads(out.read_text())
    assert res["outcome"] == "reset" and res["gpus"] == [2], res
    host_state = _state_db.host_state(state, node)
    assert [r["bus_id"] for r in host_state["resets"]] == [testbed.load_state(node)["gpus"][2]["bus_id"]]
    testbed.wait_for(lambda: testbed.node_state(node).rstrip("*") == "IDLE", timeout=30, what="node idle")
