# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated cluster's host names, shared by generate.py and history.py (neither imports the other)."""

from __future__ import annotations


def hostnames(n: int) -> list:
    width = max(2, len(str(n)))
    return ["gpu-node-%0*d" % (width, i) for i in range(1, n + 1)]
