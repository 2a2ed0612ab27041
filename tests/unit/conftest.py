# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared unit-test fixtures: run a controller step (action plugin) as Ansible would, without a play."""

from __future__ import annotations

import os
from unittest import mock

import pytest


def _run_action(action_module, args, check_mode=False, task_vars=None, diff=False):
    """Run ``action_module.ActionModule`` with ``args``; returns the task result dict (never raises on failure)."""
    task = mock.MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = check_mode
    task.diff = diff
    play_context = mock.MagicMock()
    play_context.check_mode = check_mode
    play_context.diff = diff
    action = action_module.ActionModule(
        task, mock.MagicMock(), play_context, loader=None, templar=None, shared_loader_obj=None
    )
    return action.run(task_vars=dict(task_vars or {}))


@pytest.fixture
def run_action():
    """``run_action(plugins.action.<step>, args, check_mode=False, task_vars=None)`` -> result dict."""
    return _run_action


@pytest.fixture
def fake_path(tmp_path, monkeypatch):
    """A PATH holding only the tools a test writes (plus sh, cat, sleep for their bodies)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for real in ("sh", "cat", "sleep"):
        target = next(os.path.join(d, real) for d in ("/bin", "/usr/bin") if os.path.exists(os.path.join(d, real)))
        os.symlink(target, str(bindir / real))
    monkeypatch.setenv("PATH", str(bindir))
    return bindir
