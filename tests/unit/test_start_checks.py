# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 41, the safety net: what every playbook checks first (gpuops.cluster.start_checks, run by
gpuops.cluster.limit_guard and by restore.yml).

* Every disruptive playbook refuses to start without the audit callback, before any change: real ansible-playbook
  runs of the real playbooks (local, no test bed) with a fake scontrol that records each call; a refused run never
  calls it. Before issue 41, corrective isolate drained a node with the callback off and no warning.
* Misspelled gpuops_* variables (the issue's three: -e gpuops_target, -e gpuops_fail_onn, gpuops_leaf_swtich on the
  hosts) warn with the documented name (docs/inventory.md); -e gpuops_strict_vars=true makes them fatal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import start_checks as sc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
REFUSED = "refused before any change: the audit callback gpuops.cluster.audit is not enabled"
FAKE_SCONTROL = """#!/bin/sh
printf '%%s\\n' "$*" >> %(calls)s
echo "fake scontrol: no Slurm in unit tests" >&2
exit 1
"""
ISOLATE = ["-e", json.dumps({"isolate_nodes": ["gpu-node-02"], "isolate_reason": "Xid 79"}), "-e", "gpuops_ticket=T-1"]


@pytest.fixture()
def bed(tmp_path):
    calls = tmp_path / "scontrol-calls"
    fake = tmp_path / "scontrol"
    fake.write_text(FAKE_SCONTROL % {"calls": calls})
    fake.chmod(0o700)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    py = sys.executable
    host = "{ansible_connection: local, ansible_python_interpreter: %s, %%s}" % py
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  vars:\n"
        "    gpuops_slurm_controller: {host: localhost, scontrol_path: %s}\n"
        "    gpuops_state_dir: %s\n"
        "  hosts:\n    localhost: {ansible_connection: local, ansible_python_interpreter: %s}\n"
        "  children:\n    gpu_nodes:\n      hosts:\n"
        "        gpu-node-01: %s\n        gpu-node-02: %s\n"
        % (fake, state, py, host % "gpuops_rack: r1", host % "gpuops_leaf_swtich: leaf-1")
    )
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "gpu_nodes.yml").write_text("gpuops_node_clas: h100-sxm-8\n")

    def run(playbook, *args, audit=False, env_extra=None):
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"), ANSIBLE_NOCOLOR="1")
        env.update(ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), GPUOPS_STATE_DIR=str(state))
        env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
        env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
        env.pop("GPUOPS_AUDIT_ACTIVE", None)
        if audit:
            env["ANSIBLE_CALLBACKS_ENABLED"] = "gpuops.cluster.audit"
        env.update(env_extra or {})
        proc = subprocess.run(
            [os.path.join(BIN, "ansible-playbook"), "-i", str(inv), os.path.join(ROOT, "playbooks", playbook)] + list(args),
            capture_output=True, text=True, timeout=240, env=env, check=False, cwd=str(tmp_path),
        )  # fmt: skip
        called = calls.read_text().splitlines() if calls.exists() else []
        return proc, proc.stdout + proc.stderr, called

    return run, state, tmp_path


def _audit_events(state):
    log = state / "audit" / "audit.log"
    return [json.loads(line).get("event") for line in log.read_text().splitlines()] if log.exists() else []


# ------------------------------------------------------------------------------ the audit trail, before any change
def test_isolate_refuses_without_the_audit_callback_before_any_slurm_call(bed):
    run, _state, _tmp = bed
    proc, out, called = run("isolate.yml", *ISOLATE)
    assert proc.returncode == 2 and "isolate " + REFUSED in out, out[-3000:]
    assert called == []  # not even the guard's read
    assert "Isolate nodes within the blast-radius guard" not in out  # the playbook's own plays never started


def test_isolate_with_the_callback_goes_on_to_slurm(bed):
    run, _state, _tmp = bed
    proc, out, called = run("isolate.yml", *ISOLATE, audit=True)
    assert REFUSED not in out and called and called[0] == "show node", out[-3000:]


def test_check_mode_says_it_would_refuse_and_changes_nothing(bed):
    run, _state, _tmp = bed
    proc, out, called = run("isolate.yml", *ISOLATE, "--check")
    assert "check mode: would refuse: isolate " + REFUSED in out, out[-3000:]


def test_the_opt_out_runs_and_is_recorded(bed):
    run, state, _tmp = bed
    proc, out, called = run("isolate.yml", *ISOLATE, "-e", "gpuops_allow_unaudited=true")
    assert REFUSED not in out and "runs WITHOUT the audit callback" in out and called[:1] == ["show node"]
    assert "unaudited_opt_out" in _audit_events(state)


def test_the_opt_out_is_never_templated(bed):
    run, _state, tmp = bed
    marker = tmp / "marker"
    hostile = "{{ lookup('pipe', 'touch %s') }}" % marker
    proc, out, called = run("isolate.yml", *ISOLATE, "-e", json.dumps({"gpuops_allow_unaudited": hostile}))
    assert proc.returncode == 2 and "gpuops_allow_unaudited must be true or false" in out, out[-3000:]
    assert not marker.exists() and called == []


@pytest.mark.parametrize(
    "playbook, args",
    [
        ("resume.yml", ["-e", json.dumps({"resume_nodes": ["gpu-node-02"]}), "-e", "gpuops_ticket=T-1"]),
        ("gpu_reset.yml", ["-e", "gpuops_targets=gpu-node-02", "-e", "gpuops_ticket=T-1"]),
        ("replace.yml", ["-e", "replace_host=gpu-node-02", "-e", "gpuops_ticket=T-1"]),
        ("upgrade.yml", ["-e", "gpuops_targets=gpu-node-02", "-e", "gpuops_change_id=CHG-1"]),
        ("onboard.yml", ["-e", "gpuops_targets=gpu-node-02", "-e", "gpuops_change_id=CHG-1"]),
        ("restore.yml", ["-e", "gpuops_backup_id=20261203T083801224091Z-gpu-node-02", "-l", "gpu-node-02"]),
    ],
)
def test_every_disruptive_playbook_refuses_first(bed, playbook, args):
    run, _state, _tmp = bed
    proc, out, called = run(playbook, *args)
    workflow = playbook[:-4]
    assert proc.returncode == 2 and "%s %s" % (workflow, REFUSED) in out, out[-3000:]
    assert called == []
    # the refusal is the run's first task result (nothing ran before it but the --limit check)
    first_fatal = out.index("fatal:")
    assert "ok: [" not in out[:first_fatal] and "changed: [" not in out[:first_fatal]


def test_leak_response_keeps_its_documented_opt_out(bed):
    """docs/leak.md: a missing audit callback never blocks the leak response; the opt-out is recorded."""
    run, state, _tmp = bed
    proc, out, _called = run("leak_response.yml", "-e", "leak_response_source=gpu-node-02", "--check")
    assert REFUSED not in out and "leak_response runs WITHOUT the audit callback" in out, out[-3000:]


def test_read_only_playbooks_do_not_need_the_callback(bed):
    run, _state, _tmp = bed
    proc, out, _called = run("limit_guard.yml")
    assert proc.returncode == 0 and REFUSED not in out, out[-3000:]


# ------------------------------------------------------------------------------ unknown variables
def test_misspelled_variables_warn_with_the_documented_name(bed):
    run, _state, _tmp = bed
    proc, out, _called = run("limit_guard.yml", "-e", "gpuops_target=gpu-node-01", "-e", "gpuops_fail_onn=P1")
    flat = " ".join(out.split())
    assert proc.returncode == 0, out[-3000:]
    assert "unknown variable gpuops_target (extra vars): did you mean gpuops_targets?" in flat
    assert "unknown variable gpuops_fail_onn (extra vars): did you mean gpuops_fail_on?" in flat
    assert "unknown variable gpuops_leaf_swtich (host gpu-node-02): did you mean gpuops_leaf_switch?" in flat
    assert "unknown variable gpuops_node_clas (group gpu_nodes): did you mean gpuops_node_class?" in flat
    assert "gpuops_rack" not in flat and "gpuops_state_dir" not in flat  # documented names are quiet


def test_strict_vars_makes_them_fatal_before_anything_runs(bed):
    run, _state, _tmp = bed
    proc, out, called = run("isolate.yml", *ISOLATE, "-e", "gpuops_strict_vars=true", audit=True)
    flat = " ".join(out.split())
    assert proc.returncode == 2 and "gpuops_strict_vars=true: unknown variable gpuops_leaf_swtich" in flat, out[-3000:]
    assert called == []


def test_strict_vars_is_never_templated(bed):
    run, _state, tmp = bed
    marker = tmp / "marker"
    hostile = "{{ lookup('pipe', 'touch %s') }}" % marker
    proc, out, called = run("limit_guard.yml", "-e", json.dumps({"gpuops_strict_vars": hostile}))
    assert proc.returncode == 2 and "gpuops_strict_vars must be true or false" in out and not marker.exists()


# ------------------------------------------------------------------------------ the pure parts
DOC = open(os.path.join(ROOT, "docs", "inventory.md"), encoding="utf-8").read()


def test_documented_names_are_the_page_s():
    known = sc.documented_names(DOC)
    # names the page documents in its tables (read by eye from docs/inventory.md)
    assert {"gpuops_targets", "gpuops_fail_on", "gpuops_leaf_switch", "gpuops_ticket", "gpuops_strict_vars"} <= known
    assert "gpuops_" not in known and not any(n.startswith("__") for n in known)


@pytest.mark.parametrize(
    "name, want",
    [("gpuops_leaf_swtich", "gpuops_leaf_switch"), ("gpuops_fail_onn", "gpuops_fail_on"),
     ("gpuops_target", "gpuops_targets"), ("gpuops_zzzz_qqq", None)],
)  # fmt: skip
def test_nearest(name, want):
    assert sc.nearest(name, sc.documented_names(DOC)) == want


def test_unknown_variables_lists_places_and_ignores_others():
    known = {"gpuops_rack"}
    srcs = {"host h%d" % i: ["gpuops_rakc", "ansible_host", "__gpuops_input"] for i in range(5)}
    srcs["extra vars"] = ["gpuops_rack", "isolate_nodes", 3]
    [(name, where, near)] = sc.unknown_variables(srcs, known)
    assert name == "gpuops_rakc" and where == ["host h0", "host h1", "host h2", "2 more"] and near == "gpuops_rack"


@pytest.mark.parametrize(
    "disruptive, audited, allow, check, want",
    [(True, False, False, False, "refuse"), (True, False, False, True, "would_refuse"),
     (True, False, True, False, "opt_out"), (True, True, False, False, "ok"), (False, False, False, False, "ok")],
)  # fmt: skip
def test_audit_decision(disruptive, audited, allow, check, want):
    assert sc.audit_decision(disruptive, audited, allow, check) == want
