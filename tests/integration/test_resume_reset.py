# -*- coding: utf-8 -*-
"""Resume gate and GPU reset through real Slurm on the test bed (roles/resume, roles/gpu_reset).

The resume gate refuses a node while Xid 79 (GPU fallen off the bus) is in its current boot, still refuses
after the fake's log and GPU state are edited to hide it (the policy's memory keeps the fault until a new boot
id) and allows it after a reboot (the bed's reboot fake) and a clean inspection. GPU reset: success (recorded
in the state directory), refusal with a compute process attached, escalation to a reboot.
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


@pytest.fixture(scope="module", autouse=True)
def _clean_bed_first(testbed):
    testbed.reset()


def _run(testbed, tmp_path: Path, plays, name: str):
    path = tmp_path / ("%s-%d.yml" % (name, int(time.monotonic() * 1e6)))
    path.write_text(json.dumps(plays), encoding="utf-8")
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(testbed.inventory), str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, env=testbed.env, cwd=str(REPO), timeout=300, check=False)


def _save(var: str, out: Path, host: str = "localhost"):
    return {
        "hosts": "localhost",
        "gather_facts": False,
        "tasks": [
            {
                "name": "save",
                "ansible.builtin.copy": {
                    "content": "{{ hostvars['%s'].%s | default({}) | to_json }}" % (host, var),
                    "dest": str(out),
                },
            }
        ],
    }


def _resume_play(node: str, state_dir: Path):
    return {
        "hosts": "localhost",
        "gather_facts": False,
        "tasks": [
            {
                "name": "resume",
                "ansible.builtin.include_role": {"name": "gpuops.cluster.resume"},
                "vars": {"resume_nodes": [node], "resume_ticket": "T-2", "resume_state_dir": str(state_dir)},
            }
        ],
    }


def _resume(testbed, tmp_path, node, state_dir, reboot_first=False):
    out = tmp_path / ("resume-%d.json" % int(time.monotonic() * 1e6))
    plays = []
    if reboot_first:
        plays.append(
            {
                "hosts": node,
                "gather_facts": False,
                "tasks": [
                    {
                        "name": "reboot",
                        "ansible.builtin.reboot": {
                            "reboot_command": "{{ gpuops_reboot_command }}",
                            "boot_time_command": "{{ gpuops_boot_time_command }}",
                            "reboot_timeout": 120,
                        },
                    }
                ],
            }
        )
    plays += [_resume_play(node, state_dir), _save("resume_result", out)]
    proc = _run(testbed, tmp_path, plays, "resume")
    assert proc.returncode == 0, proc.stdout[-3000:]
    return json.loads(out.read_text())


def test_resume_gate_remembers_xid79_until_a_new_boot(testbed, tmp_path):
    node = testbed.nodes[-1]
    sd = tmp_path / "state"
    sd.mkdir()
    with testbed.edit_state(node) as s:
        faults.apply(s, "xid79", random.Random(3))
    testbed.scontrol("update", "NodeName=%s" % node, "State=DRAIN", "Reason=gpuops: Xid 79 [T-2]")
    res = _resume(testbed, tmp_path, node, sd)
    assert res["resumed"] == [] and [r["node"] for r in res["refused"]] == [node]
    assert "GPU is lost" in res["refused"][0]["reason"]
    assert "DRAIN" in testbed.node_state(node)
    # hide the fault in the fake (GPU readable again, log lines gone): the policy's memory still refuses
    with testbed.edit_state(node) as s:
        for g in s["gpus"]:
            g["lost"] = False
        s["kernel_log"] = [ln for ln in s["kernel_log"] if "NVRM" not in ln["msg"]]
    res = _resume(testbed, tmp_path, node, sd)
    assert [r["node"] for r in res["refused"]] == [node] and "still active" in res["refused"][0]["reason"]
    assert "DRAIN" in testbed.node_state(node)
    boot = testbed.boot_id(node)
    # a reboot (new boot id) and a clean inspection: back in service
    res = _resume(testbed, tmp_path, node, sd, reboot_first=True)
    assert testbed.boot_id(node) != boot
    assert res["resumed"] == [node] and res["refused"] == [] and res["left_drained"] == []
    testbed.wait_for(lambda: testbed.node_state(node).rstrip("*") == "IDLE", timeout=30, what="node idle")


def _gpu_reset(testbed, tmp_path, node, sd, **extra):
    out = tmp_path / ("reset-%d.json" % int(time.monotonic() * 1e6))
    v = {"gpu_reset_ticket": "T-3", "gpu_reset_state_dir": str(sd)}
    v.update(extra)
    save = {
        "name": "save",
        "ansible.builtin.copy": {"content": "{{ gpu_reset_result | default({}) | to_json }}", "dest": str(out)},
        "delegate_to": "localhost",
    }
    role = {"name": "reset", "ansible.builtin.include_role": {"name": "gpuops.cluster.gpu_reset"}, "vars": v}
    plays = [{"hosts": node, "gather_facts": False, "tasks": [{"block": [role], "always": [save]}]}]
    proc = _run(testbed, tmp_path, plays, "reset")
    assert out.exists(), proc.stdout[-3000:]
    return proc, json.loads(out.read_text())


def _remap_pending(testbed, node, gpu=2, **gpu_fields):
    with testbed.edit_state(node) as s:
        faults.apply(s, "row_remap_pending", random.Random(4), gpu=gpu)
        s["gpus"][gpu].update(gpu_fields)
        if "recovery_action" in gpu_fields:
            s["xml_layout"] = "v13"  # the XML layout that carries <gpu_recovery_action>


def test_gpu_reset_success_recorded_and_resumed(testbed, tmp_path):
    node = testbed.nodes[0]
    sd = tmp_path / "state"
    sd.mkdir()
    _remap_pending(testbed, node)
    assert testbed.load_state(node)["gpus"][2]["remap"]["pending"] is True
    proc, res = _gpu_reset(testbed, tmp_path, node, sd)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert res["outcome"] == "reset" and res["gpus"] == [2] and res["reset"] is True and res["resumed"] is True
    assert res["escalated"] is False
    assert testbed.load_state(node)["gpus"][2]["remap"]["pending"] is False
    host_state = _state_db.host_state(sd, node)
    assert [r["bus_id"] for r in host_state["resets"]] == [testbed.load_state(node)["gpus"][2]["bus_id"]]
    testbed.wait_for(lambda: testbed.node_state(node).rstrip("*") == "IDLE", timeout=30, what="node idle")
    # nothing pending any more: a second run does nothing (no drain)
    proc, res = _gpu_reset(testbed, tmp_path, node, sd)
    assert proc.returncode == 0 and res["outcome"] == "nothing_to_do"
    assert testbed.node_state(node).rstrip("*") == "IDLE"


def test_gpu_reset_refused_with_a_process_attached(testbed, tmp_path):
    node = testbed.nodes[1]
    sd = tmp_path / "state"
    sd.mkdir()
    _remap_pending(testbed, node, processes=[{"pid": 4242, "name": "python3", "type": "C", "used_mib": 1000}])
    proc, res = _gpu_reset(testbed, tmp_path, node, sd)
    assert proc.returncode != 0
    assert res["outcome"] == "refused_process_attached" and "4242" in res["msg"] and res["reset"] is False
    assert res["escalated"] is False and res["resumed"] is False
    assert testbed.load_state(node)["gpus"][2]["remap"]["pending"] is True  # never reset
    assert testbed.node_state(node) == "IDLE+DRAIN"  # left drained with the reason
    testbed.scontrol("update", "NodeName=%s" % node, "State=RESUME", check=False)


def test_gpu_reset_escalates_to_a_reboot(testbed, tmp_path):
    node = testbed.nodes[2]
    sd = tmp_path / "state"
    sd.mkdir()
    _remap_pending(testbed, node, recovery_action="node_reboot")
    boot = testbed.boot_id(node)
    proc, res = _gpu_reset(testbed, tmp_path, node, sd)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert res["outcome"] == "rebooted" and res["escalated"] is True and res["resumed"] is True
    assert "node_reboot" in res["msg"]
    assert testbed.boot_id(node) != boot
    st = testbed.load_state(node)["gpus"][2]
    assert st["remap"]["pending"] is False and st["recovery_action"] == "none"
    testbed.wait_for(lambda: testbed.node_state(node).rstrip("*") == "IDLE", timeout=30, what="node idle")
