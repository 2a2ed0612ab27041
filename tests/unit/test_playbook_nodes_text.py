# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/isolate.yml and resume.yml take the AWX survey's node text (`isolate_nodes_text`,
`resume_nodes_text`): real ansible-playbook runs of the real playbooks (local, no test bed) with the extra vars
file written as AWX writes it (every answer `!unsafe`).

Nothing here reaches Slurm: the inventory's controller runs a fake scontrol that records its arguments and
fails, so isolate.yml stops at its first read ("show node") after the inputs were validated, and resume.yml (in
check mode, without the inspection gate) only tries to read the nodes. Refused inputs never get that far: the
fake is never called and the marker a template would create never appears."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
THREE = ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
EXACTLY_ONE = "exactly one of the two and not empty"

FAKE_SCONTROL = """#!/bin/sh
printf '%%s\\n' "$*" >> %(calls)s
echo "fake scontrol: no Slurm in unit tests" >&2
exit 1
"""


def unsafe_yaml(values):
    """An extra vars file as AWX writes it: every string tagged !unsafe (JSON strings are YAML scalars)."""

    def dump(v):
        if isinstance(v, str):
            return "!unsafe %s" % json.dumps(v)
        if isinstance(v, list):
            return "[%s]" % ", ".join(dump(x) for x in v)
        return json.dumps(v)

    return "".join("%s: %s\n" % (k, dump(v)) for k, v in values.items())


@pytest.fixture()
def bed(tmp_path):
    calls = tmp_path / "scontrol-calls"
    fake = tmp_path / "scontrol"
    fake.write_text(FAKE_SCONTROL % {"calls": calls})
    fake.chmod(0o700)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n"
        "  vars:\n"
        "    gpuops_slurm_controller: {host: localhost, scontrol_path: %s}\n"
        "    gpuops_state_dir: %s\n"
        "  hosts:\n"
        "    localhost: {ansible_connection: local, ansible_python_interpreter: %s}\n"
        "  children:\n"
        "    gpu_nodes:\n"
        "      hosts:\n"
        "        gpu-node-01: {ansible_connection: local, ansible_python_interpreter: %s}\n"
        "        gpu-node-02: {ansible_connection: local, ansible_python_interpreter: %s}\n"
        "        gpu-node-03: {ansible_connection: local, ansible_python_interpreter: %s}\n"
        % (fake, state, sys.executable, sys.executable, sys.executable, sys.executable)
    )
    marker = tmp_path / "marker"

    def run(playbook, values=None, *extra):
        args = []
        if values is not None:
            ev = tmp_path / "extravars"
            ev.write_text(unsafe_yaml(values))
            args = ["-e", "@%s" % ev]
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"), ANSIBLE_NOCOLOR="1")
        env.update(ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
        env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
        # the disruptive playbooks refuse to start without the audit trail (issue 41): these runs have it
        env.update(ANSIBLE_CALLBACKS_ENABLED="gpuops.cluster.audit", GPUOPS_STATE_DIR=str(state))
        proc = subprocess.run(
            [os.path.join(BIN, "ansible-playbook"), "-i", str(inv), os.path.join(ROOT, "playbooks", playbook)]
            + args
            + list(extra),
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            check=False,
            cwd=str(tmp_path),
        )
        try:
            out = json.loads(proc.stdout)
        except ValueError:
            pytest.fail("no JSON from ansible-playbook: %s %s" % (proc.stdout[-2000:], proc.stderr[-2000:]))
        # the playbook's first own play: after the --limit guard (gpuops.cluster.limit_guard, always first)
        play = [p for p in out["plays"] if not p["play"]["name"].startswith("A --limit keeps localhost")][0]
        tasks = [(t["task"]["name"], t["hosts"].get("localhost", {})) for t in play["tasks"]]
        called = calls.read_text().splitlines() if calls.exists() else []
        return proc, tasks, called

    return marker, run


def _task(tasks, name):
    found = [r for n, r in tasks if n == name or n.endswith(" : " + name)]  # role tasks: "role : name"
    assert found, "task %r did not run: %s" % (name, [t[0] for t in tasks])
    return found[-1]


def _refusal(proc, tasks):
    """The failed task's message (the play's only failure)."""
    failed = [(n, r) for n, r in tasks if r.get("failed")]
    assert proc.returncode == 2 and len(failed) == 1, (proc.returncode, [t[0] for t in tasks])
    return failed[0][1].get("msg", "")


TICKET = {"isolate_ticket": "OPS-1", "isolate_reason": "Xid 79 gpu3"}


def test_isolate_takes_the_survey_text(bed):
    """The survey's answer, commas, spaces and a newline, written !unsafe: the role gets the three nodes."""
    marker, run = bed
    reason = "Xid 79 {{ lookup('pipe', 'touch %s') }}" % marker  # literal text under AWX, never rendered
    proc, tasks, called = run(
        "isolate.yml",
        {
            "isolate_nodes_text": "gpu-node-01, gpu-node-02\ngpu-node-03",
            "isolate_ticket": "OPS-1",
            "isolate_reason": reason,
        },
        "--check",
    )
    first = _task(tasks, "Outside input is data (refuse templates in extra vars, validate ids and nodes)")
    assert first["ansible_facts"]["__gpuops_input"]["isolate_nodes_text"] == THREE
    role_in = _task(tasks, "Take the ticket, the reason and the nodes as data")["ansible_facts"]["__isolate_in"]
    assert role_in["isolate_nodes"] == THREE and role_in["isolate_reason"] == reason
    # the inputs passed; the first Slurm call is the guard's read (under its lock), and the fake stops the run there
    guard = (
        "Blast-radius guard (Slurm read and one decision under the state lock, allowed nodes claimed at once; "
        "check mode claims nothing)"
    )
    assert _task(tasks, guard).get("failed")
    assert called == ["show node"]
    assert proc.returncode == 2 and not marker.exists()


def test_isolate_list_input_still_works(bed):
    _marker, run = bed
    proc, tasks, called = run("isolate.yml", dict(TICKET, isolate_nodes=["gpu-node-02"]), "--check")
    role_in = _task(tasks, "Take the ticket, the reason and the nodes as data")["ansible_facts"]["__isolate_in"]
    assert role_in["isolate_nodes"] == ["gpu-node-02"] and called == ["show node"]


@pytest.mark.parametrize(
    "values, needle",
    [
        # a template in the survey text, !unsafe as AWX passes it: split into words that are no host names
        (
            {"isolate_nodes_text": "gpu-node-01, {{ lookup('pipe', 'touch %(m)s') }}"},
            "isolate_nodes_text: bad host names '{{', \"lookup('pipe'\", \"'touch\"",
        ),
        ({"isolate_nodes_text": "gpu-node-01,{{lookup('pipe','touch %(m)s')}}"}, "isolate_nodes_text: bad host names"),
        (
            {"isolate_nodes_text": "gpu-node-01\n{%% if true %%}x{%% endif %%}"},
            "isolate_nodes_text: bad host names '{%'",
        ),
        ({"isolate_nodes_text": "gpu-node-01, gpu-node-99"}, "isolate_nodes_text: not in the inventory: gpu-node-99"),
        ({"isolate_nodes_text": "gpu-node-01;touch %(m)s"}, "isolate_nodes_text: bad host names 'gpu-node-01;touch'"),
        ({"isolate_nodes_text": "gpu-node-01\x1b[2J"}, "isolate_nodes_text: bad host names 'gpu-node-01\\x1b[2J'"),
        # in the list, a newline is part of the name (a `^...$` match would take it)
        ({"isolate_nodes": ["gpu-node-01\n"]}, "isolate_nodes: bad host names 'gpu-node-01\\n'"),
        ({"isolate_nodes": ["gpu-node-01"], "isolate_nodes_text": "gpu-node-02"}, EXACTLY_ONE),
        ({}, EXACTLY_ONE),
        ({"isolate_nodes_text": " ,\n, "}, EXACTLY_ONE),
    ],
    ids=[
        "jinja",
        "jinja-no-spaces",
        "jinja-statement",
        "unknown",
        "shell",
        "control",
        "newline",
        "both",
        "none",
        "empty",
    ],
)
def test_isolate_refuses_bad_node_input_by_name(bed, values, needle):
    marker, run = bed
    values = {k: (v % {"m": marker} if isinstance(v, str) else v) for k, v in values.items()}
    proc, tasks, called = run("isolate.yml", dict(TICKET, **values))
    assert needle in _refusal(proc, tasks)
    assert called == [] and not marker.exists()
    assert not [t[0] for t in tasks if t[0].startswith("gpuops.cluster.isolate : ")]  # the role never ran


def test_isolate_refuses_a_trusted_template_in_the_text(bed):
    """Given as a plain -e (trusted in ansible-core 2.19), a template in the text is refused before anything
    renders it, like any other named input."""
    marker, run = bed
    hostile = "gpu-node-01, {{ lookup('pipe', 'touch %s') }}" % marker
    proc, tasks, called = run("isolate.yml", TICKET, "-e", json.dumps({"isolate_nodes_text": hostile}))
    assert "extra vars isolate_nodes_text hold template syntax" in _refusal(proc, tasks)
    assert called == [] and not marker.exists()


def test_resume_takes_the_survey_text(bed):
    """resume.yml: the text reaches the role as the three nodes (check mode, no inspection gate: the fake
    scontrol is asked about each node, nothing is cleared)."""
    marker, run = bed
    proc, tasks, called = run(
        "resume.yml",
        {"resume_nodes_text": "gpu-node-01,gpu-node-02 \n gpu-node-03\n", "resume_ticket": "OPS-2"},
        "--check",
        "-e",
        "resume_inspect=false",
    )
    first = _task(tasks, "Outside input is data (refuse templates in extra vars, validate ids and nodes)")
    assert first["ansible_facts"]["__gpuops_input"]["resume_nodes_text"] == THREE
    drain = _task(tasks, "Remove the gpuops drain from the nodes that passed")
    # one slurm_node call for the batch (issue 36), one entry per node, each failed by the fake scontrol
    assert sorted(e["name"] for e in drain["node_results"]) == THREE and all(e["failed"] for e in drain["node_results"])
    assert len(called) == 3 and all(c.split()[:2] == ["show", "node"] for c in called), called
    assert _task(tasks, "Set resume_result")["ansible_facts"]["resume_result"]["resumed"] == []
    assert not marker.exists()


@pytest.mark.parametrize(
    "values, needle",
    [
        ({"resume_nodes_text": "gpu-node-01 {{ 7 * 7 }}"}, "resume_nodes_text: bad host names '{{', '*', '}}'"),
        ({"resume_nodes_text": "gpu-node-42"}, "resume_nodes_text: not in the inventory: gpu-node-42"),
        ({"resume_nodes": ["gpu-node-01\n"]}, "resume_nodes: bad host names 'gpu-node-01\\n'"),
        ({"resume_nodes": ["gpu-node-01"], "resume_nodes_text": "gpu-node-01"}, EXACTLY_ONE),
        ({}, EXACTLY_ONE),
    ],
    ids=["jinja", "unknown", "newline", "both", "none"],
)
def test_resume_refuses_bad_node_input_by_name(bed, values, needle):
    _marker, run = bed
    proc, tasks, called = run("resume.yml", dict({"resume_ticket": "OPS-2"}, **values))
    assert needle in _refusal(proc, tasks)
    assert called == []
