# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a controller step (action plugin) as Ansible would, without a play.

A module of its own (tests/unit is on sys.path under pytest), not ``from conftest import``: with several
conftest.py files in the tree, the name ``conftest`` is whichever one was imported first.
"""

from __future__ import annotations

from unittest import mock


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
