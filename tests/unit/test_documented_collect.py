# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 41: README's capture command `gpuops.cluster.collect -l gpu-node-07` failed (the --limit guard wants
localhost). The README, collect.yml's header and docs/capture.md now name the node with gpuops_targets; this runs
README's command as written (its inventory replaced by one whose gpu-node-07 is this machine, local connection)
and checks the capture lands in ./captures/gpu-node-07/<timestamp>/ as docs/capture.md says."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def _documented(path, pattern):
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        found = [m.group(0) for m in re.finditer(pattern, fh.read())]
    assert found, "%s no longer documents the capture command" % path
    return found


def _run(tmp_path, argv):
    inv = tmp_path / "inventory"
    py = sys.executable
    inv.write_text(
        "all:\n  hosts:\n    localhost: {ansible_connection: local, ansible_python_interpreter: %s}\n"
        "  children:\n    gpu_nodes:\n      hosts:\n"
        "        gpu-node-07: {ansible_connection: local, ansible_python_interpreter: %s}\n" % (py, py)
    )
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"), ANSIBLE_NOCOLOR="1")
    env.update(ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), PATH=BIN + os.pathsep + env.get("PATH", ""))
    argv = [os.path.join(BIN, argv[0])] + argv[1:] + ["-e", "capture_tool_timeout=5"]
    argv[argv.index("-i") + 1] = str(inv)
    return subprocess.run(argv, capture_output=True, text=True, timeout=240, env=env, check=False, cwd=str(tmp_path))


def test_readme_s_collect_command_works_as_written(tmp_path):
    (line,) = _documented("README.md", r"ansible-playbook -i inventory gpuops\.cluster\.collect [^#\n]*")
    proc = _run(tmp_path, shlex.split(line))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    stamps = os.listdir(tmp_path / "captures" / "gpu-node-07")
    assert len(stamps) == 1 and re.fullmatch(r"\d{8}T\d{6}Z", stamps[0])
    assert (tmp_path / "captures" / "gpu-node-07" / stamps[0] / "capture.json").is_file()


def test_every_documented_collect_command_names_the_node_without_limit():
    for path in ("README.md", "docs/capture.md", "playbooks/collect.yml"):
        for cmd in _documented(path, r"ansible-playbook [^`\n]*gpuops\.cluster\.collect(?![_\w])[^`\n]*"):
            assert " -l " not in cmd and "--limit" not in cmd and "gpuops_targets=" in cmd, (path, cmd)


def test_a_limit_without_localhost_is_still_refused_with_the_working_form(tmp_path):
    """The guard stays (it keeps the input check on localhost) and names the form the docs use."""
    proc = _run(tmp_path, ["ansible-playbook", "-i", "inventory", "gpuops.cluster.collect", "-l", "gpu-node-07"])
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0 and "leaves out localhost" in out and "-e gpuops_targets=PATTERN" in out
    assert not (tmp_path / "captures").exists()
