# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.isolate_outcome (plugin_utils/change/isolate_outcome.py): what an isolation did, per node.

Expected values are the contract written in docs/isolation.md (isolate_result's keys, the refused/failed/
unconfirmed/done/already outcomes, requeued_jobs[].nodes and unrequeueable_jobs[].nodes listing every node of
the job, the maintenance marker) and docs/operations.md ("Outcomes and exit codes"), typed out by hand here.
The slurm_node entries are shaped as its RETURN documents them (node_results).
"""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cluster.plugins.action import isolate_outcome as A
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import isolate_outcome as iso

GUARD = {
    "allowed": ["n1", "n2", "n3"],
    "already_isolated": ["n4"],
    "refused_by_guard": [{"node": "n5", "reason": "cluster: 3 of 8 out of service, limit 2"}],
    "limits": {"cluster": 2},
    "overridden": False,
    "override_reason": "",
    "would_refuse": [],
    "out_of_service": ["n4"],
    "recently_isolated": [],
    "operator": "ops",
}
REQUEST = {"isolate_nodes": ["n1", "n2", "n3", "n4", "n5"], "isolate_ticket": "INC-9", "isolate_reason": "Xid 79"}
FINDINGS = [
    {"host": "n1", "severity": "P1", "check": "gpu.xid"},
    {"host": "n9", "severity": "P0", "check": "gpu.xid"},
    {"severity": "P2", "check": "no host"},
]


def entry(name, **kw):
    e = {"name": name, "node": name, "changed": True, "failed": False, "msg": None, "state_before": "IDLE",
         "slurm_state": "IDLE+DRAIN", "reason": "gpuops: Xid 79 [INC-9]", "drained": True, "draining": False,
         "jobs": [], "requeued": [], "not_requeueable": [], "cancelled": [], "verify_error": None,
         "verified": {"slurm_state": "IDLE+DRAIN", "reason": "gpuops: Xid 79 [INC-9]", "drained": True,
                      "draining": False, "down": False}}  # fmt: skip
    e.update(kw)
    return e


def context(**kw):
    c = {"mode": "drain", "check_mode": False, "cancel_unrequeueable": False, "change_class": "corrective",
         "run_id": "R1", "findings": FINDINGS, "now": "2026-12-07T21:00:00Z"}  # fmt: skip
    c.update(kw)
    return c


def test_partial_after_the_guard():
    out = iso.partial(["n1", "n5"], GUARD)
    assert out == {
        "n1": {"outcome": "unconfirmed", "detail": "the run stopped before Slurm confirmed the drain",
               "decision": "allowed by the blast-radius guard"},
        "n5": {"outcome": "refused", "detail": "cluster: 3 of 8 out of service, limit 2",
               "decision": "refused by the blast-radius guard"},
    }  # fmt: skip


def test_backend_outcomes_done_already_failed_unconfirmed_refused():
    slurm = {
        "node_results": [
            entry("n1"),
            # Slurm refused the drain (scontrol's own words)
            entry("n2", failed=True, msg="Invalid node name specified", slurm_state=None, state_before=None,
                  verified=None, verify_error="Invalid node name specified"),
            # drained, then Slurm could not be read back
            entry("n3", verified=None, verify_error="Unable to contact slurm controller"),
            entry("n4", changed=False),
        ]
    }  # fmt: skip
    out = iso.backend(REQUEST["isolate_nodes"], GUARD, slurm, REQUEST, context())
    nodes = out["outcome"]
    assert nodes["n1"] == {"outcome": "done", "detail": "drained", "decision": "isolated (drain)",
                           "slurm_state": "IDLE+DRAIN", "slurm_reason": "gpuops: Xid 79 [INC-9]"}  # fmt: skip
    assert nodes["n2"] == {"outcome": "failed", "detail": "the drain did not happen",
                           "error": "Invalid node name specified", "decision": "allowed by the blast-radius guard",
                           "slurm_state": None, "slurm_reason": None}  # fmt: skip
    assert nodes["n3"]["outcome"] == "unconfirmed" and nodes["n3"]["detail"] == "the drain was sent but not confirmed"
    assert nodes["n3"]["error"] == "Slurm could not be read after the drain: Unable to contact slurm controller"
    assert nodes["n3"]["slurm_state"] == "IDLE+DRAIN"  # what the drain step saw
    assert nodes["n4"]["outcome"] == "already" and nodes["n4"]["detail"] == "already out of service in Slurm"
    assert nodes["n5"]["outcome"] == "refused" and nodes["n5"]["slurm_state"] is None
    assert out["done"] == ["n1"] and out["unchanged"] == ["n4"]
    # claims: done only where Slurm shows the drain; n4 was never claimed (already out of service)
    assert out["release_done"] == ["n1"] and out["release_failed"] == ["n2", "n3"]
    res = out["result"]
    assert res["isolated"] == ["n1"] and res["already_isolated"] == ["n4"]
    assert res["failed"] == [
        {"node": "n2", "outcome": "failed", "msg": "Invalid node name specified"},
        {"node": "n3", "outcome": "unconfirmed",
         "msg": "Slurm could not be read after the drain: Unable to contact slurm controller"},
    ]  # fmt: skip
    assert res["refused_by_guard"] == GUARD["refused_by_guard"]
    assert res["states"] == {"n1": "IDLE+DRAIN", "n3": "IDLE+DRAIN", "n4": "IDLE+DRAIN"}
    assert res["guard"]["limits"] == {"cluster": 2} and "operator" not in res["guard"]
    assert res["mode"] == "drain" and res["ticket"] == "INC-9" and res["findings"] == 3


def test_a_node_slurm_shows_in_service_after_the_drain_failed():
    slurm = {"node_results": [entry("n1", verified={"slurm_state": "IDLE", "reason": None, "drained": False,
                                                    "draining": False, "down": False})]}  # fmt: skip
    out = iso.backend(["n1"], {"allowed": ["n1"]}, slurm, REQUEST, context())
    assert (
        out["outcome"]["n1"]["outcome"] == "failed"
        and out["outcome"]["n1"]["error"] == "Slurm shows IDLE after the drain"
    )
    assert out["outcome"]["n1"]["slurm_state"] == "IDLE" and out["release_done"] == []


def test_down_is_out_of_service_and_draining_counts():
    down = entry(
        "n1", verified={"slurm_state": "DOWN", "reason": "x", "drained": False, "draining": False, "down": True}
    )
    busy = entry("n2", verified={"slurm_state": "MIXED+DRAIN", "reason": "x", "drained": False, "draining": True})
    out = iso.backend(
        ["n1", "n2"], {"allowed": ["n1", "n2"]}, {"node_results": [down, busy]}, REQUEST, context(mode="down")
    )
    assert [out["outcome"][n]["outcome"] for n in ("n1", "n2")] == ["done", "done"]
    assert out["outcome"]["n1"]["detail"] == "set DOWN" and out["outcome"]["n1"]["decision"] == "isolated (down)"


def test_jobs_requeued_and_unrequeueable_name_every_node_of_the_job():
    a = entry("a", requeued=[11], jobs=[{"job_id": 11, "other_nodes": []}, {"job_id": 12, "other_nodes": ["b"]}],
              not_requeueable=[{"job_id": 12, "other_nodes": ["b"]}])  # fmt: skip
    b = entry("b", requeued=[13], jobs=[{"job_id": 13, "other_nodes": ["a", "c"]}],
              not_requeueable=[{"job_id": 12, "other_nodes": ["a"]}])  # fmt: skip
    out = iso.backend(["a", "b"], {"allowed": ["a", "b"]}, {"node_results": [a, b]}, REQUEST, context(mode="requeue"))
    assert out["result"]["requeued_jobs"] == [{"job_id": 11, "nodes": ["a"]}, {"job_id": 13, "nodes": ["b", "a", "c"]}]
    why = "not requeueable (--no-requeue, interactive or not a batch job); left running"
    assert out["result"]["unrequeueable_jobs"] == [{"job_id": 12, "nodes": ["a", "b"], "reason": why}]
    assert out["outcome"]["a"]["detail"] == "drained, jobs requeued"
    out = iso.backend(["a"], {"allowed": ["a"]}, {"node_results": [a]}, REQUEST, context(cancel_unrequeueable=True))
    assert out["result"]["unrequeueable_jobs"][0]["reason"].endswith("; cancelled")


def test_markers_for_done_and_unchanged_nodes_with_their_own_findings():
    slurm = {"node_results": [entry("n1"), entry("n4", changed=False)]}
    out = iso.backend(["n1", "n4"], GUARD, slurm, dict(REQUEST, isolate_operator="alice"), context())
    assert sorted(out["markers"]) == ["n1", "n4"]
    assert out["markers"]["n1"] == {
        "schema": "gpuops.maintenance/v1", "node": "n1", "who": "alice", "when": "2026-12-07T21:00:00Z",
        "why": "Xid 79", "ticket": "INC-9", "mode": "drain", "change_class": "corrective", "run_id": "R1",
        "slurm_state": "IDLE+DRAIN", "findings": [{"host": "n1", "severity": "P1", "check": "gpu.xid"}],
    }  # fmt: skip
    assert out["markers"]["n4"]["findings"] == []
    # no operator given: the guard's (the controller user)
    assert iso.backend(["n1"], GUARD, slurm, REQUEST, context())["markers"]["n1"]["who"] == "ops"


def test_check_mode_says_would_be_and_a_skipped_back_end_reached_nobody():
    slurm = {"node_results": [entry("n1", verified=None, slurm_state="IDLE")]}
    out = iso.backend(["n1"], {"allowed": ["n1"]}, slurm, REQUEST, context(check_mode=True))
    assert out["outcome"]["n1"]["detail"] == "would be drained" and out["outcome"]["n1"]["slurm_state"] == "IDLE"
    out = iso.backend(["n1"], {"allowed": ["n1"]}, {"skipped": True}, REQUEST, context())
    assert out["outcome"]["n1"] == {"outcome": "not_started", "detail": "the back end did not reach this node",
                                    "slurm_state": None, "slurm_reason": None}  # fmt: skip
    assert out["release_failed"] == ["n1"] and out["markers"] == {}


def test_rescue_fails_what_was_not_finished_with_the_tools_words():
    current = {"a": {"outcome": "refused", "detail": "limit"}, "b": {"outcome": "not_started"}}
    failed = {
        "msg": "non-zero return code",
        "stderr": "  slurm_load_node error:\n  Unable to contact slurm controller\n",
    }
    out = iso.rescue(["a", "b", "c"], current, "isolate : Blast-radius guard", failed)
    assert out["a"] == {"outcome": "refused", "detail": "limit"}
    want = {"outcome": "failed", "detail": "the run stopped at: isolate : Blast-radius guard",
            "error": "slurm_load_node error: Unable to contact slurm controller"}  # fmt: skip
    assert out["b"] == want and out["c"] == want
    assert iso.rescue(["a"], {}, "", {})["a"]["error"] == "failed"
    assert iso.rescue(["a"], {}, "", {"msg": "boom"})["a"]["detail"] == "the run stopped at: a task"


def test_rescue_error_is_cut_as_jinja_truncate_300():
    assert iso.error_text({"msg": "x" * 305}) == "x" * 305  # within the leeway of 5
    words = ("word " * 80).strip()  # 399 characters
    cut = iso.error_text({"msg": words})
    assert cut.endswith("...") and len(cut) <= 300 and cut == ("word " * 59).strip() + "..."


@pytest.mark.parametrize("bad", ["a b", "gpu-[1-2]", "-x", "", "{{ lookup('pipe','id') }}"])
def test_bad_node_names_fail_clearly(run_action, bad):
    out = run_action(A, {"step": "guard", "nodes": ["ok", bad], "guard": {}})
    assert out["failed"] and "invalid node name" in out["msg"]


def test_action_steps(run_action):
    out = run_action(A, {"step": "guard", "nodes": ["n5"], "guard": GUARD})
    assert not out.get("failed") and out["outcome"]["n5"]["outcome"] == "refused" and out["changed"] is False
    out = run_action(A, {"step": "backend", "nodes": ["n1"], "guard": GUARD, "request": REQUEST,
                         "slurm": {"node_results": [entry("n1")]}})  # fmt: skip
    assert out["outcome"]["n1"]["outcome"] == "done" and out["result"]["isolated"] == ["n1"]
    out = run_action(A, {"step": "backend", "nodes": ["n1"], "mode": "sideways"})
    assert out["failed"] and "sideways" in out["msg"]
