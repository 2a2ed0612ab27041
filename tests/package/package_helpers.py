# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers for the package stage (`make package`): run the real command-line tools the way a user would, in an
environment with nothing from this checkout in it (no ansible.cfg, no build/ on PYTHONPATH or the collections
path, no site-packages collections, a private HOME)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def clean_env(home: Path, collections: Optional[Path] = None, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """os.environ without ANSIBLE_*, PYTHON*, GPUOPS_* and MOLECULE_* (what `make` and the developer loop set),
    with HOME=home and, when given, the collections path `collections` alone (site-packages not scanned)."""
    drop = ("ANSIBLE_", "PYTHON", "GPUOPS_", "MOLECULE_", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        PATH=str(BIN) + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
        HOME=str(home),
        LC_ALL="C.UTF-8",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        PYTHONDONTWRITEBYTECODE="1",  # nothing may appear in the installed collection (collection verify)
    )
    if collections is not None:
        env.update(ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false")
    env.update(extra or {})
    return env


def run(
    cmd: List[str], cwd: Path, env: Dict[str, str], ok: bool = True, timeout: int = 120
) -> subprocess.CompletedProcess:
    """Run cmd; with ok=True a non-zero exit fails the test with the command's output."""
    proc = subprocess.run(
        [str(c) for c in cmd], cwd=str(cwd), env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if ok and proc.returncode != 0:
        pytest.fail(
            "%s -> rc %d\n--- stdout\n%s\n--- stderr\n%s"
            % (" ".join(map(str, cmd)), proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
        )
    return proc
