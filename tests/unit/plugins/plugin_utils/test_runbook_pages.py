# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 41: the runbook pages themselves. The index links each runbook's Preconditions (read before Run); the
Xid 79 runbook waits for the drain to complete before it reboots (it rebooted right after a plain drain, under
the jobs still running). Slurm's words from /work/shared/reference/cluster-formats.md ("Node states"):
`draining` = DRAIN on an allocated/mixed/completing node, `drained` = DRAIN on a node with none of those."""

from __future__ import annotations

import os
import re

import pytest
from runbook_oracle import assert_resolves

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
RUNBOOKS = os.path.join(ROOT, "runbooks")


def _read(name):
    with open(os.path.join(RUNBOOKS, name), encoding="utf-8") as fh:
        return fh.read()


def _index_links():
    return re.findall(r"\| \[([a-z-]+\.md)\]\(([^)]+)\) \|", _read("README.md"))


def test_the_index_links_every_runbook_s_preconditions():
    links = _index_links()
    pages = sorted(n for n in os.listdir(RUNBOOKS) if n.endswith(".md") and n != "README.md")
    assert sorted(name for name, _target in links) == pages
    for name, target in links:
        assert target == name + "#preconditions", target
        assert_resolves("runbooks/" + target)


def _run_block(name):
    text = _read(name)
    run = text[text.index("\n## Run\n") :]
    return run[run.index("```") : run.index("```", run.index("```") + 3)]


def test_xid79_reboots_only_after_the_drain_completed():
    lines = _run_block("gpu-fell-off-bus.md").splitlines()
    reboot = next(i for i, line in enumerate(lines) if "ansible.builtin.reboot" in line)
    drain = next(i for i, line in enumerate(lines) if "gpuops.cluster.isolate" in line and "--check" not in line)
    # the wait: a loop that ends only when sinfo says drained (not draining) and squeue lists no job on the node
    waits = [i for i, line in enumerate(lines) if line.startswith("until ") and "sinfo" in line]
    assert waits and drain < waits[0] < reboot, lines
    wait = lines[waits[0]]
    assert "= drained ]" in wait and "draining" not in wait
    assert re.search(r"squeue -h -w gpu-node-07\b", wait) and '[ -z "$(squeue' in wait
    assert "done" in [line.strip() for line in lines[waits[0] + 1 : reboot]]


@pytest.mark.parametrize("state, done", [("drained", True), ("drained*", True), ("draining", False), ("mixed", False)])
def test_the_wait_loop_s_test_reads_sinfo_s_states(tmp_path, state, done):
    """Run the runbook's own loop condition with a fake sinfo/squeue: it passes for drained (also not responding,
    `*`), never for draining."""
    import subprocess

    wait = next(line for line in _run_block("gpu-fell-off-bus.md").splitlines() if line.startswith("until "))
    cond = wait[len("until ") : wait.rindex("; do")]
    for tool, out in (("sinfo", state), ("squeue", "")):
        p = tmp_path / tool
        p.write_text("#!/bin/sh\necho '%s'\n" % out if out else "#!/bin/sh\nexit 0\n")
        p.chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (tmp_path, os.environ.get("PATH", "")))
    rc = subprocess.run(["bash", "-c", cond], env=env, check=False).returncode
    assert (rc == 0) is done
