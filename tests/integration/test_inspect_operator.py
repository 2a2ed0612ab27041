# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 14: the inspection as an operator runs it (real ansible-playbook, default callback, no test bed).

Output a person can follow (no warning, one line per stage, nothing per host), clear errors for an empty
target set and bad settings, the gpuops_fail_on exit code, GPUOPS_STATE_DIR honoured by every role, and
gpuops.prom in node_exporter's textfile directory.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import _state_db

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
GENERATE = REPO / "tools" / "simcluster" / "generate.py"
STATE_DIR_ROLES = ("gpu_reset", "inspect", "isolate", "leak_response", "onboard", "replace", "resume", "upgrade")
STATE_DIR_EXPR = "{{ gpuops_state_dir | default(lookup('ansible.builtin.env', 'GPUOPS_STATE_DIR'), true) }}"


def _env(**extra):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("ANSIBLE_") or k == "GPUOPS_STATE_DIR":
            env.pop(k)  # the operator's plain shell: default callback, no stray settings
    env.update(
        {
            "PATH": "%s:%s" % (VENV_BIN, env.get("PATH", "")),
            "ANSIBLE_COLLECTIONS_PATH": str(REPO / "build"),
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
        }
    )
    env.update(extra)
    return env


def _generate(out: Path, nodes: int, faults: str = "default") -> Path:
    cmd = [sys.executable, str(GENERATE), "--nodes", str(nodes), "--out", str(out), "--seed", "7", "--faults", faults]
    subprocess.run(cmd, check=True, capture_output=True, text=True, env=_env())
    return out / "inventory"


def _inspect(inventory: Path, *extra: str, env=None, playbook: str = "playbooks/inspect.yml"):
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(REPO / playbook), *extra]
    return subprocess.run(
        cmd, capture_output=True, text=True, env=env or _env(), cwd=str(REPO), timeout=300, check=False
    )


@pytest.fixture(scope="module")
def sims(tmp_path_factory):
    root = tmp_path_factory.mktemp("sims")
    return {n: _generate(root / ("sim%d" % n), n) for n in (16, 64)}


def _stage_lines(out: str):
    """The lines that are not Ansible's frame (banners, per-task status, the debug braces, the recap)."""
    frame = re.compile(r'^(PLAY |TASK |PLAY RECAP|ok: |skipping: |included: |\S+\s+: ok=|\s*[\[\]{}],?$|\s*"msg": \[$)')
    return [ln.strip() for ln in out.splitlines() if ln.strip() and not frame.match(ln)]


def test_offline_run_prints_no_warning_and_one_line_per_stage(sims, tmp_path):
    runs = {}
    for n, inv in sims.items():
        proc = _inspect(inv, "-e", "gpuops_report_dir=%s" % (tmp_path / ("r%d" % n)))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        runs[n] = proc
    out64 = runs[64].stdout + runs[64].stderr
    assert "WARNING" not in out64 and "[DEPRECATION" not in out64, out64
    # nothing per host: 16 and 64 nodes print exactly as many lines, and no node's name at all (the plan runs on
    # localhost since issue 17: a play over the targets cost ~2 ms per target for each of its tasks)
    lines = {n: (p.stdout + p.stderr).count("\n") for n, p in runs.items()}
    assert lines[16] == lines[64], lines
    # was 120 (56 + one add_host line per node) before issue 14; +5 for the play that refuses a --limit without
    # localhost (issue 17: its header, its task, one "skipping" line); +2 for the skipped task that refuses
    # auto-isolation without the audit trail (issue 41: its header, one "skipping" line); +3 for the skipped task
    # that records an EDA run's alerts on their incidents (issue 39/40: header, blank line, one "skipping" line)
    assert lines[64] <= 67, (lines, out64)
    assert set(re.findall(r"gpu-node-\d+", out64)) == set(), out64
    stages = _stage_lines(runs[64].stdout)
    assert stages == [
        '"msg": "plan: 64 targets, 0 live, 64 from capture directories"',
        '"collected 0/0 live (0 unreachable, 0 failed), 64 from capture directories",',
        '"evaluated 64 nodes: healthy 51, degraded 6, faulty 7, unreachable 0, error 0; findings P0 0, P1 12, P2 14, '
        'P3 8 (2 cluster findings)",',
        '"reports written: %s"' % (tmp_path / "r64"),
    ], stages
    # the summary agrees with report.json
    report = json.loads((tmp_path / "r64" / "report.json").read_text())
    # issue 20: +6 optics faults; issue 19: the platform's fragmentation (P2) and full OST (P1) cluster findings
    assert report["summary"]["severity"] == {"P0": 0, "P1": 12, "P2": 14, "P3": 8}


@pytest.mark.parametrize(
    "fail_on, expect", [("P0", 0), ("P1", 12), ("P2", 26), ("P3", 34)], ids=["P0-none", "P1", "P2", "P3"]
)
def test_fail_on_exits_non_zero_with_the_count_last(sims, tmp_path, fail_on, expect):
    proc = _inspect(sims[64], "-e", "gpuops_report_dir=%s" % tmp_path, "-e", "gpuops_fail_on=%s" % fail_on)
    report = json.loads((tmp_path / "report.json").read_text())  # the reports are written either way
    sev = report["summary"]["severity"]
    assert sum(sev[s] for s in ("P0", "P1", "P2", "P3")[: int(fail_on[1]) + 1]) == expect
    if expect == 0:
        assert proc.returncode == 0, proc.stdout[-3000:]
        return
    assert proc.returncode == 2, proc.stdout[-3000:]
    body = proc.stdout.split("PLAY RECAP")[0].strip().splitlines()
    assert body[-1].startswith("fatal: [localhost]: FAILED!"), body[-3:]
    assert body[-1].endswith('%d finding(s) at or above %s"}' % (expect, fail_on)), body[-1]


@pytest.mark.parametrize("value", ["P9", "p1", "high", "P1,P2"])
def test_fail_on_bad_value_is_a_clear_error_before_anything_is_read(sims, tmp_path, value):
    proc = _inspect(sims[16], "-e", "gpuops_report_dir=%s" % tmp_path, "-e", "gpuops_fail_on=%s" % value)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "gpuops_fail_on" in out and "Traceback" not in out, out[-3000:]
    assert not tmp_path.joinpath("report.json").exists()


def test_empty_target_set_names_the_pattern(sims, tmp_path):
    # no gpu_nodes group at all
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump({"all": {"children": {"compute": {"hosts": {"n1": {"gpuops_capture_dir": "/x"}}}}}}))
    cases = [
        (inv, [], "gpu_nodes"),
        (sims[16], ["-e", "gpuops_targets=rack-none", "-e", "gpuops_allow_target_patterns=true"], "rack-none"),
        (sims[16], ["-e", "gpuops_targets=gpu_nodes:&nothing_here", "-e", "gpuops_allow_target_patterns=true"], "gpu_nodes:&nothing_here"),
    ]
    for i, (inventory, extra, pattern) in enumerate(cases):
        report_dir = tmp_path / ("r%d" % i)
        proc = _inspect(inventory, "-e", "gpuops_report_dir=%s" % report_dir, *extra)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, out[-3000:]
        assert "the host pattern %r" % pattern in out and "matched no host in the inventory" in out, out[-3000:]
        assert "is undefined" not in out and "Traceback" not in out, out[-3000:]
        assert not report_dir.exists()


def test_the_plan_on_localhost_sees_the_targets_a_play_over_them_would(sims, tmp_path):
    """The plan resolves gpuops_targets itself (issue 17): --limit still applies (a list, a pattern, a file of
    names; each with localhost, where the plan and the evaluation run), exclusions still apply, and a limit that
    leaves nothing names the pattern."""
    names_file = tmp_path / "retry"
    names_file.write_text("gpu-node-05\ngpu-node-02\nlocalhost\n")
    cases = [
        (["-l", "gpu-node-03,gpu-node-01,localhost"], ["gpu-node-01", "gpu-node-03"]),
        (["-l", "gpu_nodes:!gpu-node-0*:localhost"], ["gpu-node-%02d" % i for i in range(10, 17)]),
        (["-l", "@%s" % names_file], ["gpu-node-02", "gpu-node-05"]),
        (["-e", "gpuops_targets=gpu_nodes:!gpu-node-1*", "-e", "gpuops_allow_target_patterns=true"], ["gpu-node-%02d" % i for i in range(1, 10)]),
    ]
    for i, (extra, want) in enumerate(cases):
        report_dir = tmp_path / ("r%d" % i)
        proc = _inspect(sims[16], "-e", "gpuops_report_dir=%s" % report_dir, *extra)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, (extra, out[-3000:])
        assert "plan: %d targets, 0 live, %d from capture directories" % (len(want), len(want)) in out, out[-3000:]
        report = json.loads((report_dir / "report.json").read_text())
        assert sorted(report["nodes"]) == want, extra
    proc = _inspect(
        sims[16],
        "-e",
        "gpuops_report_dir=%s" % (tmp_path / "none"),
        "-l",
        "gpu-node-01,localhost",
        "-e",
        "gpuops_targets=gpu_nodes:!gpu-node-01",
        "-e",
        "gpuops_allow_target_patterns=true",
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "the host pattern 'gpu_nodes:!gpu-node-01'" in out, out[-3000:]
    assert "matched no host in the inventory" in out and not (tmp_path / "none").exists()


def test_inspect_honours_gpuops_state_dir_from_the_environment(sims, tmp_path):
    env_state, var_state = tmp_path / "env-state", tmp_path / "var-state"
    proc = _inspect(
        sims[16], "-e", "gpuops_report_dir=%s" % (tmp_path / "r1"), env=_env(GPUOPS_STATE_DIR=str(env_state))
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert _state_db.host_names(env_state) == ["gpu-node-%02d" % i for i in range(1, 17)]
    # gpuops_state_dir still wins over the environment
    proc = _inspect(
        sims[16],
        "-e",
        "gpuops_report_dir=%s" % (tmp_path / "r2"),
        "-e",
        "gpuops_state_dir=%s" % var_state,
        env=_env(GPUOPS_STATE_DIR=str(tmp_path / "unused")),
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert _state_db.host_state(var_state, "gpu-node-01") and not (tmp_path / "unused").exists()


def test_every_role_reads_gpuops_state_dir_then_the_environment(tmp_path):
    """The same default in every role that keeps state: gpuops_state_dir, else GPUOPS_STATE_DIR."""
    for role in STATE_DIR_ROLES:
        defaults = yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text())
        value = defaults["%s_state_dir" % role]
        assert value.startswith(STATE_DIR_EXPR[:-3]), (role, value)  # upgrade adds "or './state'"
        spec = (REPO / "roles" / role / "meta" / "argument_specs.yml").read_text()
        assert "GPUOPS_STATE_DIR" in spec, role
    play = [
        {
            "hosts": "localhost",
            "connection": "local",
            "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"},
            "gather_facts": False,
            "vars_files": [str(REPO / "roles" / r / "defaults" / "main.yml") for r in STATE_DIR_ROLES],
            "tasks": [
                {
                    "name": "Write what each role would use",
                    "ansible.builtin.copy": {
                        "dest": str(tmp_path / "out.json"),
                        "content": "{{ {%s} | to_json }}"
                        % ", ".join("'%s': %s_state_dir" % (r, r) for r in STATE_DIR_ROLES),
                    },
                }
            ],
        }
    ]
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump(play))
    for extra, want in (([], "/srv/from-env"), (["-e", "gpuops_state_dir=/srv/from-var"], "/srv/from-var")):
        proc = _inspect("localhost,", *extra, playbook=str(path), env=_env(GPUOPS_STATE_DIR="/srv/from-env"))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert json.loads((tmp_path / "out.json").read_text()) == dict.fromkeys(STATE_DIR_ROLES, want)
    # neither set: empty (state off) except upgrade, which keeps ./state
    proc = _inspect("localhost,", playbook=str(path), env=_env())
    got = json.loads((tmp_path / "out.json").read_text())
    assert got == dict(dict.fromkeys(STATE_DIR_ROLES, ""), upgrade="./state"), got


def test_prom_also_written_to_the_textfile_directory(sims, tmp_path):
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    os.chmod(textfile, 0o2755)  # setgid: the file takes the directory's group (node_exporter's, in production)
    proc = _inspect(
        sims[16], "-e", "gpuops_report_dir=%s" % (tmp_path / "r"), "-e", "gpuops_textfile_dir=%s" % textfile
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    prom = textfile / "gpuops.prom"
    assert prom.read_text() == (tmp_path / "r" / "gpuops.prom").read_text()
    assert stat.S_IMODE(prom.stat().st_mode) == 0o640
    assert sorted(os.listdir(textfile)) == ["gpuops.prom"]  # no temporary file left behind
    assert "reports written: %s (gpuops.prom also in %s)" % (tmp_path / "r", prom) in proc.stdout
    # check mode leaves node_exporter's file alone
    prom.write_text("# old\n")
    proc = _inspect(
        sims[16], "--check", "-e", "gpuops_report_dir=%s" % (tmp_path / "r2"), "-e", "gpuops_textfile_dir=%s" % textfile
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert prom.read_text() == "# old\n"
    # a directory that does not exist: a clear error before anything is read
    proc = _inspect(
        sims[16], "-e", "gpuops_report_dir=%s" % (tmp_path / "r3"), "-e", "gpuops_textfile_dir=%s" % (tmp_path / "no")
    )
    assert proc.returncode != 0 and "gpuops_textfile_dir" in proc.stdout and "is not a directory" in proc.stdout
    assert not (tmp_path / "r3").exists()


def test_a_limit_without_localhost_is_refused_not_a_silent_success(sims, tmp_path):
    """Every play that plans, evaluates and reports runs on localhost: a --limit without it used to skip them all
    and exit 0 with nothing inspected. Now the run stops first and says how to limit (a pattern, a file of names)."""
    names_file = tmp_path / "retry"
    names_file.write_text("gpu-node-02\n")
    for limit, hint in (("gpu-node-01", "--limit 'gpu-node-01,localhost'"), ("@%s" % names_file, "a localhost line")):
        report_dir = tmp_path / ("r-%d" % len(limit))
        proc = _inspect(sims[16], "-e", "gpuops_report_dir=%s" % report_dir, "-l", limit)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, out[-3000:]
        assert "leaves out localhost" in out and hint in out and "gpuops_targets=PATTERN" in out, out[-3000:]
        assert "plan:" not in out and not report_dir.exists()
