# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ticket hook reads a disruptive run's outcome file and turns it into per-node outcomes and an exit code."""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools"))
from gpuops_runbook import hook, outcomes  # noqa: E402


def _doc(**nodes):
    ok = all(o in ("done", "already", "skipped") for o in nodes.values())
    return {
        "schema": "gpuops.outcome/v1",
        "workflow": "isolate",
        "run_id": "R1",
        "success": ok,
        "exit_code": 0 if ok else 2,
        "counts": {},
        "summary": "gpuops outcome: isolate R1: ...",
        "requested_state": "drained",
        "nodes": {n: {"outcome": o, "detail": "d-" + n, "error": None} for n, o in nodes.items()},
    }


def _events(res, kind="runner_on_failed"):
    return [
        {"event": "runner_on_ok", "event_data": {"host": "localhost", "res": {"changed": False}}},
        {"event": kind, "event_data": {"host": "localhost", "res": res}},
    ]


@pytest.mark.parametrize(
    "nodes,rc",
    [
        ({"a": "done", "b": "already", "c": "skipped"}, 0),
        ({"a": "done", "b": "refused"}, 3),
        ({"a": "refused", "b": "refused"}, 3),
        ({"a": "refused", "b": "failed"}, 4),
        ({"a": "done", "b": "not_started"}, 4),
        ({"a": "left_drained"}, 4),
        ({"a": "unconfirmed"}, 4),
    ],
)
def test_exit_code_table(nodes, rc):
    assert outcomes.outcome_rc(_doc(**nodes)) == rc


def test_the_outcome_file_is_read_and_merged_into_the_result(tmp_path):
    doc = _doc(a="done", b="refused")
    path = tmp_path / "runs" / "isolate" / "R1.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))
    # the event's copy differs: the file wins (the hook reads the outcome file)
    stale = dict(doc, nodes={"a": {"outcome": "failed"}})
    events = _events({"failed": True, "outcome": stale, "path": str(path)})
    result = {"nodes": {"a": {"status": "ok", "failures": []}}}
    rc = hook._exit_code("failed", 2, events, result)
    assert rc == 3
    assert result["outcome"]["path"] == str(path) and result["outcome"]["run_id"] == "R1"
    assert result["nodes"]["a"]["outcome"] == "done" and result["nodes"]["a"]["status"] == "ok"
    assert result["nodes"]["b"]["outcome"] == "refused" and result["nodes"]["b"]["detail"] == "d-b"


def test_check_mode_outcome_without_a_file_comes_from_the_event():
    events = _events({"outcome": _doc(a="done"), "path": None}, kind="runner_on_ok")
    result = {"nodes": {}}
    assert hook._exit_code("successful", 0, events, result) == 0 and result["outcome"]["path"] is None


def test_without_an_outcome_step_the_runner_decides():
    assert hook._exit_code("successful", 0, [], {"nodes": {}}) == 0
    assert hook._exit_code("failed", 2, [], {"nodes": {}}) == 1


def test_all_done_but_a_later_failure_is_a_failure():
    events = _events({"outcome": _doc(a="done"), "path": None}, kind="runner_on_ok")
    assert hook._exit_code("failed", 2, events, {"nodes": {}}) == 1
