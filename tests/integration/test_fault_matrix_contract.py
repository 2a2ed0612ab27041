# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fault matrix's outcome contract (``_fault_matrix.check_outcome``) on recorded runs, without the test bed.

A killed slurmctld makes the client print one of several texts, depending on the moment the kill lands (issue 36:
a clean-clone run got ``slurm_load_node error: Transport endpoint is not connected`` where the test wanted
``Unable to contact slurm controller``). The contract accepts any text of that documented set, and still fails a
run whose failed node carries no error at all, or another one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _fault_matrix import SLURMCTLD_GONE, check_outcome

SUMMARY = "gpuops outcome: isolate r1: 1 failed -> exit 2"


class Recorded:
    """What a finished ``_fault_matrix.Run`` leaves: its exit status, outcome file, audit records and output."""

    workflow = "isolate"

    def __init__(self, tmp: Path, error: str) -> None:
        self.state = tmp
        self.rc = 2
        entry = {"outcome": "failed", "detail": "drain failed", "error": error}
        self.doc = {
            "schema": "gpuops.outcome/v1",
            "workflow": "isolate",
            "exit_code": 2,
            "success": False,
            "ticket": "INC-1",
            "nodes": {"gpu-node-01": entry},
            "counts": {"failed": 1},
            "summary": SUMMARY,
        }
        self.rec = {"event": "outcome", "workflow": "isolate", "node": "gpu-node-01", "outcome": "failed"}
        self.rec.update(ticket="INC-1", error=error)
        self.out = SUMMARY + "\n"

    def outcome(self):
        return json.loads(json.dumps(self.doc))

    def outcome_records(self, node=None):
        return [self.rec] if node in (None, "gpu-node-01") else []

    def tail(self):
        return self.out


@pytest.mark.parametrize(
    "error",
    [
        "slurm_load_node error: Unable to contact slurm controller (connect failure)",
        "slurm_load_node error: Transport endpoint is not connected",  # the clean-clone run's text
        "slurm_update error: Connection reset by peer",
        "scontrol: error: Zero Bytes were transmitted or received",
    ],
)
def test_any_text_of_a_killed_slurmctld_passes(tmp_path, error):
    doc = check_outcome(
        Recorded(tmp_path, error), {"gpu-node-01": ("failed",)}, rc=2, ticket="INC-1", error=SLURMCTLD_GONE
    )
    assert doc["nodes"]["gpu-node-01"]["error"] == error


@pytest.mark.parametrize("error", ["", "Invalid node state specified", None])
def test_a_failed_node_without_the_tools_error_fails_the_contract(tmp_path, error):
    run = Recorded(tmp_path, error)
    with pytest.raises(AssertionError, match="none of"):
        check_outcome(run, {"gpu-node-01": ("failed",)}, rc=2, ticket="INC-1", error=SLURMCTLD_GONE)


def test_one_text_is_still_one_text(tmp_path):
    run = Recorded(tmp_path, "slurm_load_node error: Transport endpoint is not connected")
    with pytest.raises(AssertionError, match="none of"):
        check_outcome(run, {"gpu-node-01": ("failed",)}, rc=2, error="Unable to contact slurm controller")
