# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an isolation did, node by node: the logic of the action ``gpuops.cluster.isolate_outcome``.

The isolate role keeps the order of its steps (guard, Slurm, release, markers, result) and asks this module
what they mean. Three questions, three pure functions of what happened:

- :func:`partial` - after the blast-radius guard: each node refused (with the guard's reason) or, until the
  back end's work is verified, ``unconfirmed``; what a run that stops half-way reports;
- :func:`backend` - after ``gpuops.cluster.slurm_node`` (``names``, one entry per node) read Slurm back: which
  nodes are done / already isolated / failed / unconfirmed, the jobs requeued and the jobs that could not be,
  Slurm's state and reason per node, the claims to release ``done`` and ``failed``, the maintenance markers,
  the per-node outcome (``gpuops.outcome/v1`` vocabulary, change/outcome.py) and ``isolate_result``;
- :func:`rescue` - in the playbook's ``rescue:``: every node the run had not finished failed, with the tool's
  own words.

docs/isolation.md describes the result; the exit status is ``gpuops.cluster.run_outcome``'s (exit 2 unless every
node is done or already). No Ansible imports.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Optional

MODES = ("drain", "requeue", "down")
DONE_DETAIL = {"drain": "drained", "requeue": "drained, jobs requeued", "down": "set DOWN"}
REFUSED = "refused by the blast-radius guard"
ALLOWED = "allowed by the blast-radius guard"
MARKER_SCHEMA = "gpuops.maintenance/v1"
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,252}")
_GUARD_KEYS = ("limits", "overridden", "override_reason", "would_refuse", "out_of_service", "recently_isolated")
_ERROR_MAX = 300


def check_nodes(nodes: Iterable[Any]) -> List[str]:
    """The requested inventory names, each a full match of a host name (ValueError naming the first bad one)."""
    out = []
    for node in nodes or []:
        if not isinstance(node, str) or not _NODE.fullmatch(node):
            raise ValueError("invalid node name %r" % (node,))
        if node not in out:
            out.append(node)
    return out


def _refusals(guard: Dict[str, Any]) -> Dict[str, str]:
    """node -> the guard's reason, first one wins."""
    out: Dict[str, str] = {}
    for r in guard.get("refused_by_guard") or []:
        if isinstance(r, dict) and isinstance(r.get("node"), str) and r["node"] not in out:
            out[r["node"]] = r.get("reason")
    return out


def partial(nodes: List[str], guard: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Right after the guard: refused nodes say why; every other node is ``unconfirmed`` until Slurm shows it."""
    refused = _refusals(guard)
    out = {}
    for n in nodes:
        if n in refused:
            out[n] = {"outcome": "refused", "detail": refused[n], "decision": REFUSED}
        else:
            out[n] = {
                "outcome": "unconfirmed",
                "detail": "the run stopped before Slurm confirmed the drain",
                "decision": ALLOWED,
            }
    return out


def _entries(slurm: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The slurm_node result's per-node entries (none when the task was skipped or never ran)."""
    rows = slurm.get("node_results") if isinstance(slurm, dict) else None
    return [e for e in rows or [] if isinstance(e, dict) and isinstance(e.get("name"), str)]


def _failures(entries: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """``[{node, outcome, msg}]``: Slurm refused or timed out (failed), then what Slurm shows afterwards: not
    readable (unconfirmed) or not out of service (failed). One per node, the first reason."""
    out: List[Dict[str, Any]] = []
    for e in entries:
        if e.get("failed"):
            out.append({"node": e["name"], "outcome": "failed", "msg": e.get("msg") or "failed"})
    seen = {f["node"] for f in out}
    for e in entries:
        if e["name"] in seen or e.get("state_before") is None:
            continue
        seen_state = e.get("verified") or {}
        if e.get("verify_error"):
            msg = "Slurm could not be read after the drain: %s" % e["verify_error"]
            out.append({"node": e["name"], "outcome": "unconfirmed", "msg": msg})
        elif seen_state.get("slurm_state") is not None:
            state = str(seen_state["slurm_state"])
            if not (seen_state.get("drained") or seen_state.get("draining") or "DOWN" in state):
                out.append({"node": e["name"], "outcome": "failed", "msg": "Slurm shows %s after the drain" % state})
    return out


def _jobs(entries: List[Dict[str, Any]], cancel: bool) -> Dict[str, List[Dict[str, Any]]]:
    """Requeued jobs and jobs that could not be, each once, with every node of the job."""
    before: Dict[Any, List[str]] = {}
    for e in entries:
        for j in e.get("jobs") or []:
            if isinstance(j, dict) and j.get("job_id") not in before:
                before[j.get("job_id")] = list(j.get("other_nodes") or [])
    requeued: List[Dict[str, Any]] = []
    unrequeueable: List[Dict[str, Any]] = []
    why = "not requeueable (--no-requeue, interactive or not a batch job)" + (
        "; cancelled" if cancel else "; left running"
    )
    for e in entries:
        for jid in e.get("requeued") or []:
            if all(r["job_id"] != jid for r in requeued):
                requeued.append({"job_id": jid, "nodes": list(dict.fromkeys([e["name"]] + before.get(jid, [])))})
        for j in e.get("not_requeueable") or []:
            if isinstance(j, dict) and all(u["job_id"] != j.get("job_id") for u in unrequeueable):
                nodes = [e["name"]] + list(j.get("other_nodes") or [])
                unrequeueable.append({"job_id": j.get("job_id"), "nodes": nodes, "reason": why})
    return {"requeued": requeued, "unrequeueable": unrequeueable}


def marker(
    node: str, request: Dict[str, Any], guard: Dict[str, Any], context: Dict[str, Any], state: Optional[str]
) -> Dict[str, Any]:
    """The maintenance marker of one isolated node (the state directory's copy and the node's)."""
    findings = [f for f in context.get("findings") or [] if isinstance(f, dict) and f.get("host") == node]
    return {
        "schema": MARKER_SCHEMA,
        "node": node,
        "who": request.get("isolate_operator") or guard.get("operator") or None,
        "when": context.get("now") or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "why": request.get("isolate_reason"),
        "ticket": request.get("isolate_ticket"),
        "mode": context.get("mode"),
        "change_class": context.get("change_class"),
        "run_id": context.get("run_id"),
        "slurm_state": state,
        "findings": findings,
    }


def backend(
    nodes: List[str],
    guard: Dict[str, Any],
    slurm: Dict[str, Any],
    request: Dict[str, Any],
    context: Dict[str, Any],
) -> Dict[str, Any]:
    """Everything the role reports once the back end has run (or was skipped: no node allowed).

    ``context``: mode, check_mode, cancel_unrequeueable, change_class, run_id, findings (and ``now`` for tests).
    """
    mode = context.get("mode") or "drain"
    if mode not in MODES:
        raise ValueError("mode must be one of %s, got %r" % (", ".join(MODES), mode))
    entries = _entries(slurm)
    failed = _failures(entries)
    bad = {f["node"] for f in failed}
    good = [e for e in entries if e.get("slurm_state") is not None and e["name"] not in bad]
    done = [e["name"] for e in good if e.get("changed")]
    unchanged = [e["name"] for e in good if not e.get("changed")]
    states: Dict[str, Any] = {e["name"]: e["slurm_state"] for e in entries if e.get("slurm_state") is not None}
    reasons: Dict[str, Any] = {}
    for e in entries:
        if isinstance(e.get("verified"), dict):
            states[e["name"]] = e["verified"].get("slurm_state")
            reasons[e["name"]] = e["verified"].get("reason")
    jobs = _jobs(entries, bool(context.get("cancel_unrequeueable")))
    refused = _refusals(guard)
    already = set(guard.get("already_isolated") or [])
    by_fail = {}
    for f in failed:
        by_fail.setdefault(f["node"], f)
    would = "would be " if context.get("check_mode") else ""
    outcome: Dict[str, Dict[str, Any]] = {}
    for n in nodes:
        if n in refused:
            entry = {"outcome": "refused", "detail": refused[n], "decision": REFUSED}
        elif n in by_fail:
            f = by_fail[n]
            sent = "did not happen" if f["outcome"] == "failed" else "was sent but not confirmed"
            entry = {
                "outcome": f["outcome"],
                "detail": "the %s %s" % (mode, sent),
                "error": f["msg"],
                "decision": ALLOWED,
            }
        elif n in done:
            entry = {"outcome": "done", "detail": would + DONE_DETAIL[mode], "decision": "isolated (%s)" % mode}
        elif n in unchanged or n in already:
            entry = {"outcome": "already", "detail": "already out of service in Slurm"}
        else:
            entry = {"outcome": "not_started", "detail": "the back end did not reach this node"}
        entry.update(slurm_state=states.get(n), slurm_reason=reasons.get(n))
        outcome[n] = entry
    allowed = [n for n in guard.get("allowed") or [] if isinstance(n, str)]
    release_done = [n for n in dict.fromkeys(done + unchanged) if n in allowed]
    guard_view = {k: guard.get(k) for k in _GUARD_KEYS}
    return {
        "outcome": outcome,
        "done": done,
        "unchanged": unchanged,
        "release_done": release_done,
        "release_failed": [n for n in allowed if n not in release_done],
        "markers": {n: marker(n, request, guard, context, states.get(n)) for n in done + unchanged},
        "result": {
            "nodes": outcome,
            "isolated": done,
            "already_isolated": unchanged,
            "refused_by_guard": list(guard.get("refused_by_guard") or []),
            "failed": failed,
            "unrequeueable_jobs": jobs["unrequeueable"],
            "requeued_jobs": jobs["requeued"],
            "states": states,
            "guard": guard_view,
            "mode": mode,
            "ticket": request.get("isolate_ticket"),
            "findings": len(context.get("findings") or []),
        },
    }


def truncate(text: str, length: int = _ERROR_MAX) -> str:
    """Jinja's ``truncate(length)`` as Ansible runs it (leeway 5, words kept whole, ``...``)."""
    if len(text) <= length + 5:
        return text
    return text[: length - 3].rsplit(" ", 1)[0] + "..."


def error_text(failed_result: Any) -> str:
    """The failed task's own words: its stderr, else its msg, whitespace folded, cut as Jinja's truncate(300)."""
    res = failed_result if isinstance(failed_result, dict) else {}
    text = str(res.get("stderr") or "").strip() or str(res.get("msg") if res.get("msg") is not None else "failed")
    return truncate(re.sub(r"\s+", " ", text))


def rescue(
    nodes: List[str], current: Dict[str, Any], failed_task: str, failed_result: Any
) -> Dict[str, Dict[str, Any]]:
    """The run broke off: a node with no outcome yet (or ``not_started``) failed where the run stopped."""
    current = current if isinstance(current, dict) else {}
    error = error_text(failed_result)
    out = {}
    for n in nodes:
        cur = current.get(n) if isinstance(current.get(n), dict) else {}
        if cur.get("outcome", "not_started") == "not_started":
            out[n] = {
                "outcome": "failed",
                "detail": "the run stopped at: %s" % (failed_task or "a task"),
                "error": error,
            }
        else:
            out[n] = cur
    return out
