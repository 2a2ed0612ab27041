# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 21, observation 6, end to end: the isolate command of runbooks/gpu-fell-off-bus.md, pasted as written
(only the inventory swapped for a local one), run by the real ansible-playbook against a stateful fake scontrol:
the drain's Slurm reason carries every word of the reason and the ticket. The old documented form
`-e 'isolate_reason=Xid 79 gpu3'` loses the words (the observed `gpuops: Xid [INC-4]`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import doc_commands as dc  # noqa: E402

ROOT = dc.ROOT
BIN = os.path.dirname(sys.executable)
NODE = "gpu-node-07"

# `show node` prints the node in scontrol's text form; `update` changes the state file and is recorded.
FAKE_SCONTROL = r"""#!%(python)s
import json, sys
state_path, calls = %(state)r, %(calls)r
with open(calls, "a") as fh:
    fh.write(json.dumps(sys.argv[1:]) + "\n")
nodes = json.load(open(state_path))
args = sys.argv[1:]
def show(name, n):
    reason = ("\n   Reason=%%s [root@2026-12-03T03:00:00]" %% n["reason"]) if n.get("reason") else ""
    return ("NodeName=%%s Arch=x86_64 CoresPerSocket=8\n   CPUAlloc=0 CPUTot=16 CPULoad=0.01\n   Gres=gpu:h100:8\n"
            "   NodeAddr=%%s NodeHostName=%%s Version=22.05.8\n   RealMemory=1000 AllocMem=0 FreeMem=900 Sockets=2 Boards=1\n"
            "   State=%%s ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n   Partitions=gpu\n"
            "   BootTime=2026-12-01T00:00:00 SlurmdStartTime=2026-12-01T00:01:00%%s\n\n") %% (name, name, name, n["state"], reason)
if args[:2] == ["show", "node"]:
    names = args[2:] or sorted(nodes)
    missing = [n for n in names if n not in nodes]
    if missing:
        sys.stderr.write("Node %%s not found\n" %% missing[0]); sys.exit(1)
    sys.stdout.write("".join(show(n, nodes[n]) for n in names)); sys.exit(0)
if args[:2] == ["show", "job"]:
    print("No jobs in the system"); sys.exit(0)
if args and args[0] == "update":
    kv = dict(a.split("=", 1) for a in args[1:])
    n = nodes[kv["NodeName"]]
    if kv.get("State") == "DRAIN":
        n["state"], n["reason"] = "IDLE+DRAIN", kv.get("Reason", "")
    elif kv.get("State") == "RESUME":
        n["state"], n["reason"] = "IDLE", ""
    elif "Reason" in kv:
        n["reason"] = kv["Reason"]
    json.dump(nodes, open(state_path, "w")); sys.exit(0)
sys.stderr.write("fake scontrol: unsupported %%s\n" %% args); sys.exit(1)
"""


def _documented(source, marker):
    """The command of `source` (a runbook) whose text holds `marker`, as the operator pastes it."""
    commands, _skipped = dc.extract(os.path.join(ROOT, source), ROOT)
    found = [c for c in commands if marker in c.text and "--check" not in c.argv]
    assert found, "no documented command in %s holds %r" % (source, marker)
    return found[0].argv


@pytest.fixture()
def run_isolate(tmp_path):
    state, calls = tmp_path / "slurm.json", tmp_path / "calls"
    state.write_text(json.dumps({n: {"state": "IDLE"} for n in ("gpu-node-06", NODE, "gpu-node-08")}))
    fake = tmp_path / "scontrol"
    fake.write_text(FAKE_SCONTROL % {"python": sys.executable, "state": str(state), "calls": str(calls)})
    fake.chmod(0o700)
    gstate = tmp_path / "gpuops"
    gstate.mkdir(mode=0o700)
    py = sys.executable
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  vars:\n"
        "    gpuops_slurm_controller: {host: localhost, scontrol_path: %s}\n"
        "    isolate_marker_path: %s\n"
        "  hosts:\n    localhost: {ansible_connection: local, ansible_python_interpreter: %s}\n"
        "  children:\n    gpu_nodes:\n      hosts:\n%s"
        % (
            fake,
            tmp_path / "maintenance.json",
            py,
            "".join(
                "        %s: {ansible_connection: local, ansible_python_interpreter: %s, gpuops_rack: r1}\n" % (n, py)
                for n in ("gpu-node-06", NODE, "gpu-node-08")
            ),
        )
    )

    def run(argv):
        argv = list(argv)
        argv[argv.index("-i") + 1] = str(inv)
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"), ANSIBLE_NOCOLOR="1")
        env.update(ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), GPUOPS_STATE_DIR=str(gstate))
        env.update(ANSIBLE_CALLBACKS_ENABLED="gpuops.cluster.audit", PATH=BIN + os.pathsep + env.get("PATH", ""))
        proc = subprocess.run(
            [os.path.join(BIN, argv[0])] + argv[1:],
            capture_output=True,
            text=True,
            timeout=240,
            env=env,
            check=False,
            cwd=str(tmp_path),
        )
        return proc, json.loads(state.read_text())[NODE]

    return run


def _roles_take_gpuops_ticket():
    with open(os.path.join(ROOT, "roles", "isolate", "defaults", "main.yml"), encoding="utf-8") as fh:
        return "gpuops_ticket" in fh.read()


pytestmark = pytest.mark.skipif(
    not _roles_take_gpuops_ticket(), reason="roles/isolate does not default isolate_ticket to gpuops_ticket yet"
)


def test_the_documented_isolate_command_keeps_the_whole_reason(run_isolate):
    argv = _documented("runbooks/gpu-fell-off-bus.md", "gpuops.cluster.isolate")
    _pb, extra, _err = dc.parse_playbook_args(argv)
    reason, ticket = extra["isolate_reason"], extra["gpuops_ticket"]
    assert len(reason.split()) > 1
    proc, node = run_isolate(argv)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert node["state"] == "IDLE+DRAIN"
    assert node["reason"] == "gpuops: %s [%s]" % (reason, ticket), node


def test_the_old_key_value_form_is_refused_naming_the_json_form(run_isolate):
    """What README.md and docs/isolation.md used to say: the reason reached Slurm as its first word only, silently
    (issue 35 item 8). Now the input check refuses the run before the role, naming the JSON form; the node is
    untouched."""
    argv = _documented("runbooks/gpu-fell-off-bus.md", "gpuops.cluster.isolate")
    _pb, extra, _err = dc.parse_playbook_args(argv)
    i = next(i for i, a in enumerate(argv) if a.startswith("{") and "isolate_reason" in a)
    data = json.loads(argv[i])
    reason = data.pop("isolate_reason")
    argv[i] = json.dumps(data)
    old = argv + ["-e", "isolate_reason=%s" % reason]
    assert dc.words_kept_problems(old), "the documented-command check must refuse this form"
    proc, node = run_isolate(old)
    out = proc.stdout.replace('\\"', '"')
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "was cut at a space" in out and """-e '{"isolate_reason": %s}'""" % json.dumps(reason) in out, out[-3000:]
    assert node == {"state": "IDLE"}, node
