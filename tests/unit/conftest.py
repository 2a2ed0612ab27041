# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared unit-test fixtures: run a controller step (action plugin) as Ansible would, without a play."""

from __future__ import annotations

import os
import shutil

import pytest
from action_runner import _run_action


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


@pytest.fixture(scope="session")
def chromium():
    """The chromium executable for the browser tests (reports, service report); skip without it, unless CI=true:
    then fail."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true: chromium is not installed (make deps), the browser tests cannot run")
        pytest.skip("chromium not installed (make deps); CI=true makes this a failure")
    return found
