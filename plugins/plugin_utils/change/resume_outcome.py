# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a return to service did, node by node: the logic of the action ``gpuops.cluster.resume_outcome``.

The resume role keeps the order of its steps (inspection gate, undrain, markers cleared, result) and asks this
module what they mean:

- :func:`pending` - before anything: every node ``not_started`` (what a run that stops reports);
- :func:`gate` - after the inspection: the nodes refused, with why (a P0/P1 finding of their own not in
  ``ignore_checks``, or an inspection that could not see the node);
- :func:`backend` - after ``gpuops.cluster.slurm_node`` (``names``, ``state: resumed``): the nodes back in service,
  left drained by someone else's reason, failed, the markers to clear, the per-node outcome and ``resume_result``.

docs/isolation.md describes the result. No Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

GATE_REFUSED = "refused by the inspection gate"
GATE_PASSED = "passed the inspection gate"
_BLOCKING = ("P0", "P1")
_BLIND = ("collector.error", "node.unreachable")


def pending(nodes: List[str]) -> Dict[str, Dict[str, Any]]:
    return {n: {"outcome": "not_started", "detail": "the run stopped before resuming this node"} for n in nodes}


def _messages(findings: List[Dict[str, Any]]) -> str:
    return "; ".join(str(f.get("message", "")) for f in findings)


def gate(nodes: List[str], inspection: Dict[str, Any], ignore_checks: Iterable[str]) -> Dict[str, str]:
    """node -> why it may not go back: P0/P1 findings of its own, or an inspection blind to it."""
    ignore = set(ignore_checks or [])
    blocked: Dict[str, str] = {}
    for n in nodes:
        node = (inspection or {}).get(n)
        if not isinstance(node, dict):
            node = {"status": "error", "findings": []}
        findings = [f for f in node.get("findings") or [] if isinstance(f, dict)]
        bad = [f for f in findings if f.get("severity") in _BLOCKING and f.get("check") not in ignore]
        blind = [f for f in findings if f.get("check") in _BLIND]
        if bad:
            blocked[n] = "inspection failed: " + _messages(bad)
        elif node.get("status") in ("error", "unreachable") and blind:
            blocked[n] = "inspection incomplete (%s): %s" % (node.get("status"), _messages(blind))
    return blocked


def _still_drained(e: Dict[str, Any]) -> str:
    return "still drained by someone else: %s" % (e["reason"] if "reason" in e else "?")


def backend(
    nodes: List[str], blocked: Dict[str, str], slurm: Dict[str, Any], context: Dict[str, Any]
) -> Dict[str, Any]:
    """``context``: force, inspect (the gate ran), check_mode, ticket."""
    rows = slurm.get("node_results") if isinstance(slurm, dict) else None
    entries = [e for e in rows or [] if isinstance(e, dict) and isinstance(e.get("name"), str)]
    by_name = {e["name"]: e for e in entries}
    left = []
    for e in entries:
        if e.get("failed"):
            left.append({"node": e["name"], "reason": e.get("msg") or "failed"})
        elif e.get("drained") or e.get("draining"):
            left.append({"node": e["name"], "reason": _still_drained(e)})
    cleared = [e["name"] for e in entries if not e.get("failed")]
    left_nodes = {x["node"] for x in left}
    kept = "gpuops drain removed, the other reason kept" + ("" if context.get("force") else " (resume_force=false)")
    outcome: Dict[str, Dict[str, Any]] = {}
    for n in nodes:
        e = by_name.get(n)
        if n in blocked:
            outcome[n] = {"outcome": "refused", "detail": blocked[n], "decision": GATE_REFUSED}
        elif e is None:
            outcome[n] = {"outcome": "not_started", "detail": "not reached"}
        elif e.get("failed"):
            outcome[n] = {"outcome": "failed", "detail": "Slurm refused the resume", "error": e.get("msg") or "failed",
                          "decision": GATE_PASSED}  # fmt: skip
        elif e.get("drained") or e.get("draining"):
            outcome[n] = {"outcome": "left_drained", "detail": _still_drained(e), "decision": kept,
                          "slurm_state": e.get("slurm_state"), "slurm_reason": e.get("reason")}  # fmt: skip
        else:
            changed = bool(e.get("changed"))
            outcome[n] = {
                "outcome": "done" if changed else "already",
                "detail": ("would be " if context.get("check_mode") else "") + "back in service"
                if changed
                else "already in service",
                "decision": GATE_PASSED if context.get("inspect") else "resumed without the inspection gate",
                "slurm_state": e.get("slurm_state"),
            }
    return {
        "outcome": outcome,
        "cleared": cleared,
        "result": {
            "resumed": [n for n in cleared if n not in left_nodes],
            "changed": [e["name"] for e in entries if e.get("changed") and not e.get("failed")],
            "refused": [{"node": n, "reason": r} for n, r in blocked.items()],
            "left_drained": left,
            "ticket": context.get("ticket"),
            "nodes": outcome,
        },
    }
