# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fake node tools for live-collection tests (the PATH holding only them: ``fake_path`` in conftest.py)."""

from __future__ import annotations


def write_tool(bindir, name, body):
    """A shell script ``bindir/name`` running ``body``."""
    path = bindir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
