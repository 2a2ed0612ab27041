# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures of the plugin tests: Slurm as the isolation guard reads it.

``gpuops.cluster.isolation_guard`` runs ``<scontrol_path> show node`` through the task's connection, under its
lock. Here the connection is ``/bin/sh`` on this machine (what the local connection does) and ``scontrol`` a
script that prints the view a test sets."""

from __future__ import annotations

import subprocess

import pytest

SCONTROL = """#!/bin/sh
# a fake scontrol: `show node` prints the view the test set; anything else fails
echo "$*" >> '{log}'
[ "$1" = show ] && [ "$2" = node ] && [ "$#" -eq 2 ] || {{ echo "fake scontrol: $*" >&2; exit 1; }}
[ -e '{fail}' ] && {{ cat '{fail}' >&2; exit 1; }}
cat '{view}'
"""


class SlurmView:
    """``path``: the fake scontrol; ``set(text)``: what ``scontrol show node`` prints from now on; ``fail(msg)``:
    make it fail with ``msg``; ``reads``: how many times it was called."""

    def __init__(self, root):
        root.mkdir(exist_ok=True)
        self.view, self.log, self.failing = root / "view.txt", root / "calls.log", root / "fail.txt"
        self.path = str(root / "scontrol")
        with open(self.path, "w", encoding="utf-8") as fh:
            fh.write(SCONTROL.format(log=self.log, view=self.view, fail=self.failing))
        (root / "scontrol").chmod(0o755)
        self.view.write_text("", encoding="utf-8")

    def set(self, text):
        self.view.write_text(text + "\n", encoding="utf-8")

    def fail(self, msg):
        self.failing.write_text(msg + "\n", encoding="utf-8")

    @property
    def reads(self):
        return len(self.log.read_text(encoding="utf-8").splitlines()) if self.log.exists() else 0


def _local_sh(self, cmd, sudoable=True, in_data=None, executable=None, **_kw):  # pylint: disable=unused-argument
    proc = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, text=True, timeout=60, check=False)
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


@pytest.fixture
def slurm_view(tmp_path_factory, monkeypatch):
    """A fake Slurm for gpuops.cluster.isolation_guard: pass ``scontrol_path=slurm_view.path``."""
    from ansible_collections.gpuops.cluster.plugins.action import isolation_guard  # pylint: disable=import-outside-toplevel

    monkeypatch.setattr(isolation_guard.ActionModule, "_low_level_execute_command", _local_sh)
    return SlurmView(tmp_path_factory.mktemp("slurm"))
