# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.resume_outcome (plugin_utils/change/resume_outcome.py): what a return to service did, per node.

Expected values are docs/isolation.md's contract for resume (the inspection gate refuses a node with P0/P1
findings of its own or one the inspection could not see; another person's drain stays, the node is left
drained; resume_result's keys) and docs/operations.md's outcome vocabulary, typed out by hand.
"""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.action import resume_outcome as A
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import resume_outcome as res

INSPECTION = {
    "bad": {"status": "ok", "findings": [{"check": "gpu.xid", "severity": "P0", "message": "Xid 79 on GPU 3"},
                                         {"check": "scheduler.node_state", "severity": "P1", "message": "drained"}]},
    "drained-only": {"status": "ok", "findings": [{"check": "scheduler.node_state", "severity": "P1", "message": "x"}]},
    "blind": {"status": "unreachable", "findings": [{"check": "node.unreachable", "severity": "P1", "message": "ssh"}]},
    "clean": {"status": "ok", "findings": [{"check": "gpu.temp", "severity": "P3", "message": "warm"}]},
}  # fmt: skip


def test_gate():
    blocked = res.gate(["bad", "drained-only", "blind", "clean", "missing"], INSPECTION, ["scheduler.node_state"])
    assert blocked["bad"] == "inspection failed: Xid 79 on GPU 3"
    assert "drained-only" not in blocked and "clean" not in blocked
    assert blocked["blind"] == "inspection failed: ssh"
    # no inspection at all: status error, but nothing says it was blind -> not refused by this rule
    assert "missing" not in blocked
    assert res.gate(
        ["n"], {"n": {"status": "error", "findings": [{"check": "collector.error", "message": "boom"}]}}, []
    ) == {"n": "inspection incomplete (error): boom"}


def entry(name, **kw):
    e = {"name": name, "node": name, "changed": True, "failed": False, "msg": None, "slurm_state": "IDLE",
         "reason": None, "drained": False, "draining": False}  # fmt: skip
    e.update(kw)
    return e


def test_backend_outcomes():
    slurm = {"node_results": [
        entry("a"),
        entry("b", changed=False),
        entry("c", slurm_state="IDLE+DRAIN", reason="bob PSU swap", drained=True),
        entry("d", failed=True, msg="scontrol: error: Invalid node state specified", slurm_state=None),
    ]}  # fmt: skip
    out = res.backend(["a", "b", "c", "d", "e", "x"], {"x": "inspection failed: Xid 79"}, slurm,
                      {"force": False, "inspect": True, "check_mode": False, "ticket": "T-1"})  # fmt: skip
    o = out["outcome"]
    assert o["a"] == {"outcome": "done", "detail": "back in service", "decision": "passed the inspection gate",
                      "slurm_state": "IDLE"}  # fmt: skip
    assert o["b"]["outcome"] == "already" and o["b"]["detail"] == "already in service"
    assert o["c"] == {"outcome": "left_drained", "detail": "still drained by someone else: bob PSU swap",
                      "decision": "gpuops drain removed, the other reason kept (resume_force=false)",
                      "slurm_state": "IDLE+DRAIN", "slurm_reason": "bob PSU swap"}  # fmt: skip
    assert o["d"] == {
        "outcome": "failed",
        "detail": "Slurm refused the resume",
        "error": "scontrol: error: Invalid node state specified",
        "decision": "passed the inspection gate",
    }
    assert o["e"] == {"outcome": "not_started", "detail": "not reached"}
    assert o["x"] == {
        "outcome": "refused",
        "detail": "inspection failed: Xid 79",
        "decision": "refused by the inspection gate",
    }
    assert out["cleared"] == ["a", "b", "c"]
    r = out["result"]
    assert r["resumed"] == ["a", "b"] and r["changed"] == ["a", "c"]
    assert r["refused"] == [{"node": "x", "reason": "inspection failed: Xid 79"}]
    assert r["left_drained"] == [{"node": "c", "reason": "still drained by someone else: bob PSU swap"},
                                 {"node": "d", "reason": "scontrol: error: Invalid node state specified"}]  # fmt: skip
    assert r["ticket"] == "T-1" and r["nodes"] == o


def test_check_mode_and_no_gate_and_force():
    slurm = {"node_results": [entry("a"), entry("c", reason="bob", draining=True)]}
    out = res.backend(["a", "c"], {}, slurm, {"force": True, "inspect": False, "check_mode": True})
    assert out["outcome"]["a"]["detail"] == "would be back in service"
    assert out["outcome"]["a"]["decision"] == "resumed without the inspection gate"
    assert out["outcome"]["c"]["decision"] == "gpuops drain removed, the other reason kept"
    # every node blocked: slurm_node skipped
    out = res.backend(["a"], {"a": "inspection failed: x"}, {"skipped": True}, {})
    assert out["outcome"]["a"]["outcome"] == "refused" and out["cleared"] == [] and out["result"]["resumed"] == []


def test_action(run_action):
    out = run_action(A, {"step": "pending", "nodes": ["a", "b"]})
    assert out["outcome"] == {n: {"outcome": "not_started", "detail": "the run stopped before resuming this node"}
                              for n in ("a", "b")}  # fmt: skip
    out = run_action(A, {"step": "gate", "nodes": ["a b"]})
    assert out["failed"] and "invalid node name" in out["msg"]
