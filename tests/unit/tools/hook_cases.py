# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ticket payloads for the hook's unit tests (test_runbook_hook.py, test_runbook_hook_boundaries.py)."""

from __future__ import annotations

import pytest
from gpuops_runbook import hook


def payload(**kw):
    """A valid payload (gpu_fell_off_bus on gpu-node-02, requested by alice) with ``kw`` set; None drops a key."""
    p = {"ticket": "OPS-7", "runbook": "gpu_fell_off_bus", "nodes": ["gpu-node-02"], "requester": "alice"}
    p.update(kw)
    return {k: v for k, v in p.items() if v is not None}


def resolve_errors(data, p, hosts, policy):
    """The PayloadError ``hook.resolve`` raises for ``p`` (the test fails when it resolves)."""
    with pytest.raises(hook.PayloadError) as exc:
        hook.resolve(p, data, hosts, policy)
    return exc.value
