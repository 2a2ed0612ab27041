# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures of the package stage (helpers: package_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def package_home(tmp_path_factory) -> Path:
    """A private, empty HOME: no ~/.ansible.cfg, ~/.ansible/collections or pip configuration of the caller's."""
    return tmp_path_factory.mktemp("home")
