"""What a finished run did, read from ansible-runner's events and stats and from the audit log: one outcome per
node, the report paths tasks returned, and the audit run ids of the run."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional

_STATS = (("ok", "ok"), ("changed", "changed"), ("failures", "failed"), ("dark", "unreachable"), ("skipped", "skipped"))


def _record_failures(events: List[Dict[str, Any]], rec: Callable[[str], Dict[str, Any]]) -> None:
    """The first five failed/unreachable tasks per host (ignored errors are not failures)."""
    for ev in events:
        kind = ev.get("event")
        data = ev.get("event_data") or {}
        host = data.get("host")
        if not host or kind not in ("runner_on_failed", "runner_on_unreachable") or data.get("ignore_errors"):
            continue
        res = data.get("res") or {}
        msg = res.get("msg") if isinstance(res, dict) else None
        r = rec(host)
        if len(r["failures"]) < 5:
            r["failures"].append(
                {"task": data.get("task"), "kind": kind[len("runner_on_") :], "msg": str(msg or "")[:300]}
            )


def _record_inspections(
    events: List[Dict[str, Any]], rec: Callable[[str], Dict[str, Any]], nodes: List[str], out: Dict[str, Any]
) -> None:
    """An inspection analyses capture hosts on the controller: they get no task events of their own, but the
    inspect_cluster result says what was found on each node; that is their outcome."""
    for ev in events:
        if ev.get("event") != "runner_on_ok":
            continue
        res = (ev.get("event_data") or {}).get("res") or {}
        if not (isinstance(res, dict) and isinstance(res.get("nodes"), dict) and "summary" in res):
            continue
        for host, node in res["nodes"].items():
            if isinstance(node, dict) and (host in nodes or host in out):
                rec(host)["inspection"] = node.get("status")


def _status(r: Dict[str, Any]) -> str:
    if r["unreachable"]:
        return "unreachable"
    if r["failed"]:
        return "failed"
    if r["changed"]:
        return "changed"
    if r["ok"] or (r.get("inspection") and r["inspection"] != "unreachable"):
        return "ok"
    if r["skipped"]:
        return "skipped"
    return r["status"]


def node_outcomes(events: List[Dict[str, Any]], stats: Optional[Dict[str, Any]], nodes: List[str]) -> Dict[str, Any]:
    """Per host: counts from the runner stats, failed tasks from the events, one status word.

    Hosts of the play that are not in `nodes` (e.g. localhost for the report play) are listed too.
    """
    out: Dict[str, Any] = {}

    def rec(host: str) -> Dict[str, Any]:
        return out.setdefault(
            host,
            {"status": "not_run", "ok": 0, "changed": 0, "failed": 0, "unreachable": 0, "skipped": 0, "failures": []},
        )

    for n in nodes:
        rec(n)
    _record_failures(events, rec)
    for key, field in _STATS:
        for host, count in ((stats or {}).get(key) or {}).items():
            rec(host)[field] = int(count or 0)
    _record_inspections(events, rec, nodes, out)
    for r in out.values():
        r["status"] = _status(r)
    return out


def report_paths(events: List[Dict[str, Any]]) -> List[str]:
    """Report files/directories a task returned (report_dir, report_paths, reports, dest of a capture)."""
    found: List[str] = []
    for ev in events:
        if ev.get("event") != "runner_on_ok":
            continue
        res = (ev.get("event_data") or {}).get("res") or {}
        if not isinstance(res, dict):
            continue
        for key in ("report_dir", "report_paths", "reports"):
            val = res.get(key)
            vals = val if isinstance(val, list) else list(val.values()) if isinstance(val, dict) else [val]
            for v in vals:
                if isinstance(v, str) and v and v not in found:
                    found.append(v)
    return found


def audit_run_ids(audit_log: str, offset: int, pids: set, playbook: str) -> List[str]:
    """run_id of the run_start records appended after `offset` by our ansible-playbook process(es)."""
    ids: List[str] = []
    try:
        with open(audit_log, "rb") as fh:
            fh.seek(offset)
            for raw in fh:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(rec, dict) or rec.get("event") != "run_start":
                    continue
                if (pids and rec.get("pid") in pids) or (not pids and rec.get("playbook") == playbook):
                    if rec.get("run_id") and rec["run_id"] not in ids:
                        ids.append(rec["run_id"])
    except OSError:
        pass
    return ids


OUTCOME_SCHEMA = "gpuops.outcome/v1"
#: The hook's exit codes for a disruptive runbook that wrote an outcome (docs/operations.md): every node done
#: (or already there, or nothing to do) -> 0; nothing failed, only safety gates said no -> 3; anything failed,
#: was left drained, unconfirmed or not started -> 4.
RC_REFUSED_ONLY, RC_INCOMPLETE = 3, 4
_SUCCESS = ("done", "already", "skipped")


def _outcome_results(events: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The results of gpuops.cluster.run_outcome tasks among the runner events (ok or failed), in order."""
    found = []
    for ev in events:
        if ev.get("event") not in ("runner_on_ok", "runner_on_failed"):
            continue
        res = (ev.get("event_data") or {}).get("res") or {}
        doc = res.get("outcome") if isinstance(res, dict) else None
        if isinstance(doc, dict) and doc.get("schema") == OUTCOME_SCHEMA:
            found.append(res)
    return found


def run_outcome(events: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The run's outcome document: the file the last run_outcome task wrote (``path``), else the copy in its
    result (check mode writes no file). None when the playbook has no outcome step."""
    results = _outcome_results(events)
    if not results:
        return None
    res = results[-1]
    path = res.get("path")
    if isinstance(path, str) and path:
        try:
            with open(path, "rb") as fh:
                doc = json.loads(fh.read().decode("utf-8"))
            if isinstance(doc, dict) and doc.get("schema") == OUTCOME_SCHEMA:
                doc["path"] = path
                return doc
        except (OSError, ValueError):
            pass
    doc = dict(res["outcome"])
    doc["path"] = None
    return doc


def outcome_rc(doc: Dict[str, Any]) -> int:
    """0 every node a success; 3 the others all refused (safety gates, nothing changed); 4 otherwise."""
    bad = [e.get("outcome") for e in (doc.get("nodes") or {}).values() if isinstance(e, dict)]
    bad = [o for o in bad if o not in _SUCCESS]
    if not bad and doc.get("success") is not False:
        return 0
    return RC_REFUSED_ONLY if bad and all(o == "refused" for o in bad) else RC_INCOMPLETE


def merge_outcome(nodes: Dict[str, Any], doc: Dict[str, Any]) -> None:
    """Put each node's outcome (outcome, detail, error, slurm state/reason) next to the runner's counts."""
    for node, e in (doc.get("nodes") or {}).items():
        if not isinstance(e, dict):
            continue
        rec = nodes.setdefault(
            node,
            {"status": "not_run", "ok": 0, "changed": 0, "failed": 0, "unreachable": 0, "skipped": 0, "failures": []},
        )
        for key in ("outcome", "detail", "error", "decision", "slurm_state", "slurm_reason"):
            rec[key] = e.get(key)
