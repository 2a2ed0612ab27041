# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 41, two of its paper cuts, with the real ansible-playbook:

- an inspection with ``gpuops_auto_isolate=true`` drains nodes, so without the audit callback it refuses before any
  change, as every other disruptive playbook does (``gpuops_allow_unaudited=true`` opts out, recorded); a plain
  inspection does not need the callback;
- ansible-core 2.19 prints an intended refusal as ``[ERROR]: Task failed`` with a source excerpt, like a crash: the
  stdout callback ``gpuops.cluster.oneline`` prints it as one line and leaves real crashes as they are.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from playbook_env import REPO, VENV_BIN, playbook_env

GENERATE = REPO / "tools" / "simcluster" / "generate.py"
REFUSED = "refused before any change: the audit callback gpuops.cluster.audit is not enabled"
# a stand-in for Slurm's client: records every call, lists the four simulated nodes IDLE
FAKE_SCONTROL = """#!/bin/sh
echo "$*" >> "%(log)s"
if [ "$1" = "show" ] && [ "$2" = "node" ]; then
  for n in 01 02 03 04; do
    printf 'NodeName=gpu-node-%%s Arch=x86_64 CoresPerSocket=1\\n   State=IDLE ThreadsPerCore=1\\n   Partitions=gpu\\n\\n' "$n"
  done
fi
exit 0
"""
OPEN_GUARD = {"max_share_cluster": 1, "max_share_partition": 1, "max_share_rack": 1}


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """Four simulated nodes, one with a lost GPU (a P1 fault of its own: auto-isolation drains it)."""
    out = tmp_path_factory.mktemp("sim")
    cmd = [sys.executable, str(GENERATE), "--nodes", "4", "--out", str(out), "--seed", "7", "--faults", "gpu_missing:1"]
    subprocess.run(cmd, check=True, capture_output=True, text=True, env=playbook_env())
    key = json.loads((out / "answer_key.json").read_text())
    faulty = sorted(h for h, v in key["hosts"].items() if v)
    assert len(faulty) == 1, key["hosts"]
    return out, faulty[0]


def _run(args, tmp: Path, audit: bool = False, stdout: str = "", cwd: Path = REPO, **extra_env: str):
    env = playbook_env(GPUOPS_STATE_DIR=str(tmp / "state"), **extra_env)
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    env.pop("ANSIBLE_STDOUT_CALLBACK", None)
    if audit:
        env["ANSIBLE_CALLBACKS_ENABLED"] = "gpuops.cluster.audit"
    if stdout:
        env["ANSIBLE_STDOUT_CALLBACK"] = stdout
    cmd = [str(VENV_BIN / "ansible-playbook")] + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(cwd), timeout=300, check=False)
    return proc, proc.stdout + proc.stderr


def _auto(sim, tmp: Path, *extra: str):
    inv, _faulty = sim
    log = tmp / "scontrol.log"
    scontrol = tmp / "scontrol"
    scontrol.write_text(FAKE_SCONTROL % {"log": log})
    scontrol.chmod(0o755)
    controller = {"gpuops_slurm_controller": {"host": "localhost", "scontrol_path": str(scontrol)}}
    args = ["-i", str(inv / "inventory"), str(REPO / "playbooks" / "inspect.yml")]
    args += ["-e", "gpuops_report_dir=%s" % (tmp / "report"), "-e", "gpuops_state_dir=%s" % (tmp / "state")]
    args += ["-e", json.dumps(dict(controller, gpuops_isolation_guard=OPEN_GUARD)), "-e", "gpuops_auto_isolate=true"]
    return args + list(extra), log


def _drained(log: Path) -> list:
    if not log.exists():
        return []
    words = [w for ln in log.read_text().splitlines() if ln.startswith("update") for w in ln.split()]
    return sorted({w.split("=", 1)[1] for w in words if w.startswith("NodeName=")})


def _audit_events(tmp: Path) -> list:
    log = tmp / "state" / "audit" / "audit.log"
    return [json.loads(ln).get("event") for ln in log.read_text().splitlines()] if log.exists() else []


# ------------------------------------------------------------------------------ item 2: auto-isolation needs the audit
def test_auto_isolation_without_the_audit_callback_refuses_before_anything(sim, tmp_path):
    args, log = _auto(sim, tmp_path)
    proc, out = _run(args, tmp_path)
    assert proc.returncode == 2, out[-3000:]
    assert "inspect with gpuops_auto_isolate=true " + REFUSED in out, out[-3000:]
    assert not log.exists(), log.read_text()  # Slurm never asked, nothing drained
    assert not (tmp_path / "report").exists()  # refused before anything was read or written
    assert "PLAY [Inspection | plan" not in out, out[-3000:]


def test_auto_isolation_with_the_audit_callback_drains(sim, tmp_path):
    _inv, faulty = sim
    args, log = _auto(sim, tmp_path)
    proc, out = _run(args, tmp_path, audit=True)
    assert proc.returncode == 0, out[-3000:]
    assert REFUSED not in out
    assert _drained(log) == [faulty], log.read_text() if log.exists() else out[-3000:]
    events = _audit_events(tmp_path)
    assert events[:1] == ["run_start"] and events[-1:] == ["run_end"] and "unaudited_opt_out" not in events, events


def test_auto_isolation_opt_out_drains_and_is_recorded(sim, tmp_path):
    _inv, faulty = sim
    args, log = _auto(sim, tmp_path, "-e", "gpuops_allow_unaudited=true")
    proc, out = _run(args, tmp_path)
    assert proc.returncode == 0, out[-3000:]
    assert "runs WITHOUT the audit callback" in out, out[-3000:]
    assert _drained(log) == [faulty]
    assert "unaudited_opt_out" in _audit_events(tmp_path)


def test_a_plain_inspection_needs_no_callback(sim, tmp_path):
    inv, _faulty = sim
    args = ["-i", str(inv / "inventory"), str(REPO / "playbooks" / "inspect.yml")]
    args += ["-e", "gpuops_report_dir=%s" % (tmp_path / "report"), "-e", "gpuops_state_dir=%s" % (tmp_path / "state")]
    proc, out = _run(args, tmp_path)
    assert proc.returncode == 0 and REFUSED not in out, out[-3000:]
    assert (tmp_path / "report" / "report.json").exists()


# ------------------------------------------------------------------------------ item 1: one line for a refusal
def test_a_refusal_is_one_line_with_the_oneline_callback(tmp_path):
    args = ["gpuops.cluster.isolate", "-e", json.dumps({"isolate_nodes": ["gpu-node-02"]}), "-e", "gpuops_ticket=T-1"]
    args += ["-e", "gpuops_state_dir=%s" % (tmp_path / "state")]
    before, out_before = _run(args, tmp_path)
    assert before.returncode == 2 and "[ERROR]: Task failed" in out_before and "Origin: " in out_before, out_before
    proc, out = _run(args, tmp_path, stdout="gpuops.cluster.oneline")
    assert proc.returncode == 2, out[-3000:]  # the exit status is unchanged
    lines = [ln for ln in out.splitlines() if REFUSED in ln]
    assert len(lines) == 1 and lines[0].startswith("REFUSED [localhost]: start_checks: isolate " + REFUSED), out
    for crash_mark in ("[ERROR]", "Origin:", "fatal:", "^ column", "task path:"):
        assert crash_mark not in out, (crash_mark, out)
    assert "PLAY RECAP" in out and "failed=1" in out


def test_the_limit_guard_refusal_is_one_line(tmp_path):
    proc, out = _run(["gpuops.cluster.isolate", "-l", "gpu-node-01"], tmp_path, stdout="gpuops.cluster.oneline")
    assert proc.returncode == 2, out[-3000:]
    refused = [ln for ln in out.splitlines() if ln.startswith("REFUSED [gpu-node-01]: --limit gpu-node-01 leaves out")]
    assert len(refused) == 1 and "--limit 'gpu-node-01,localhost'" in refused[0], out
    assert "[ERROR]" not in out and "fatal:" not in out, out


def test_gpuops_fail_on_is_one_failed_line(sim, tmp_path):
    """An intended failure that is not a refusal: FAILED, the message on one line."""
    inv, _faulty = sim
    args = ["-i", str(inv / "inventory"), str(REPO / "playbooks" / "inspect.yml"), "-e", "gpuops_fail_on=P1"]
    args += ["-e", "gpuops_report_dir=%s" % (tmp_path / "report"), "-e", "gpuops_state_dir=%s" % (tmp_path / "state")]
    proc, out = _run(args, tmp_path, stdout="gpuops.cluster.oneline")
    assert proc.returncode == 2, out[-3000:]
    body = out.split("PLAY RECAP")[0].strip().splitlines()
    assert body[-1].startswith("FAILED [localhost]: ") and "finding(s) at or above P1" in body[-1], body[-3:]
    assert "[ERROR]" not in out and "fatal:" not in out, out[-3000:]


CRASH_ACTION = """
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        return {}["no such key"]
"""


def test_a_crash_keeps_the_default_output(tmp_path):
    """A raised exception, and a failure of a playbook that is not the collection's, print exactly as by default."""
    (tmp_path / "action_plugins").mkdir()
    (tmp_path / "action_plugins" / "crash_here.py").write_text(CRASH_ACTION)
    (tmp_path / "pb.yml").write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - name: Crash\n      crash_here:\n      ignore_errors: true\n"
        "    - name: Fail in my own playbook\n      ansible.builtin.fail:\n        msg: refused by me\n"
    )
    runs = {}
    for cb in ("", "gpuops.cluster.oneline"):
        proc, out = _run(["-i", "localhost,", "pb.yml"], tmp_path, stdout=cb, cwd=tmp_path)
        assert proc.returncode == 2, out[-3000:]
        runs[cb] = out
    out = runs["gpuops.cluster.oneline"]
    assert "[ERROR]: Task failed: 'no such key'" in out and "Origin: " in out, out
    assert "fatal: [localhost]: FAILED! => " in out and "...ignoring" in out, out
    assert "[ERROR]: Task failed: Action failed: refused by me" in out, out  # not the collection's: default
    assert "REFUSED" not in out and "FAILED [" not in out, out
    strip = [ln for ln in runs[""].splitlines() if "delta" not in ln]
    assert [ln for ln in out.splitlines() if "delta" not in ln] == strip  # identical to the default callback
    # and its traceback, where tracebacks are asked for (ansible-core 2.19: DISPLAY_TRACEBACK)
    tb = {"ANSIBLE_DISPLAY_TRACEBACK": "error"}
    proc, out = _run(["-i", "localhost,", "pb.yml"], tmp_path, stdout="gpuops.cluster.oneline", cwd=tmp_path, **tb)
    assert "Traceback (most recent call last)" in out and "KeyError" in out, out[-3000:]
