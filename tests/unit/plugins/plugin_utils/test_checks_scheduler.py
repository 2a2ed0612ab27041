# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scheduler check (_checks/scheduler.py): the node's Slurm state."""

from __future__ import annotations


import pytest

from checks_helpers import HOST, facts, only, run


# ------------------------------------------------------------------------------- scheduler, node, collectors


@pytest.mark.parametrize(
    "state, flags, reason, sev",
    [
        ("DOWN*", [], "Not responding", "P1"),
        ("IDLE+DRAIN", ["DRAIN"], "gpuops: gpu.xid T-1", "P3"),
        ("MIXED+DRAIN", ["DRAIN"], "bad fan", "P3"),
        ("IDLE", [], None, None),
    ],
)
def test_scheduler_node_state(state, flags, reason, sev):
    sl = {
        "nodes": [
            {
                "name": HOST,
                "state": state,
                "base_state": state.split("+")[0].rstrip("*"),
                "flags": flags,
                "reason": reason,
            },
            {"name": "other", "state": "DOWN", "flags": []},
        ]
    }
    fs = only(run(facts(slurm=sl))[0], "scheduler.node_state")
    assert [f["severity"] for f in fs] == ([sev] if sev else [])
