# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The outcome of a disruptive run: one outcome per node from a fixed vocabulary, one exit code.

Every disruptive playbook (isolate, resume, gpu_reset, upgrade, onboard, replace, leak_response) ends with the
action ``gpuops.cluster.run_outcome``. This module is its logic, free of Ansible: :func:`build` validates and
computes the outcome document (schema ``gpuops.outcome/v1``), :func:`write` stores it privately and atomically
under ``<state_dir>/runs/<workflow>/<run_id>.json``, :func:`audit_records` gives one audit record per node, and
:func:`merge_report` adds the outcome to the workflow's own JSON run report. docs/operations.md, "Outcomes and
exit codes", is the reader's description.
"""

from __future__ import annotations

import json
import os
import pwd
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._files import write_private_atomic
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as _audit
from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson

SCHEMA = "gpuops.outcome/v1"
#: The vocabulary, in the order the summary lists it, with whether the outcome is a success.
VOCABULARY: Dict[str, bool] = {
    "done": True,
    "already": True,
    "skipped": True,
    "refused": False,
    "failed": False,
    "not_started": False,
    "left_drained": False,
    "unconfirmed": False,
}
WORKFLOWS = ("isolate", "resume", "gpu_reset", "upgrade", "onboard", "replace", "leak_response", "backup", "restore")
EXIT_OK = 0
EXIT_INCOMPLETE = 2
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}")
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,252}")
_TEXT_MAX = 2000
#: ``password=...``, ``token: ...`` and the like inside a tool's message: the value is redacted.
_SECRET_IN_TEXT = re.compile(
    r"((?:pass(?:word|wd|phrase)?|secret|token|api_?key|private_?key|credential|authorization)\s*[=:]\s*)"
    r"(\"[^\"]*\"|'[^']*'|\S+)",
    re.I,
)
_NODE_KEYS = ("outcome", "detail", "decision", "error", "slurm_state", "slurm_reason")


class OutcomeError(ValueError):
    """The outcome asked for is not valid (unknown outcome, bad node or run id)."""


def controller_user() -> str:
    """Who runs this on the controller: ``$USER``/``$LOGNAME``, else the passwd name of the uid, else ``uid:N``."""
    for var in ("USER", "LOGNAME"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:  # no passwd entry (a container with an arbitrary uid)
        return "uid:%d" % os.getuid()


def redact(text: Any, secrets: Iterable[str] = ()) -> Optional[str]:
    """``text`` as a string, without the given secret values or ``key=value`` secrets, cut to a sane length."""
    if text is None:
        return None
    s = text if isinstance(text, str) else str(text)
    s = _audit.scrub(s, secrets)
    s = _SECRET_IN_TEXT.sub(lambda m: m.group(1) + "********", s)
    return s[:_TEXT_MAX]


def _node_entry(node: str, raw: Any, secrets: Iterable[str]) -> Dict[str, Any]:
    if not isinstance(node, str) or not _NODE.fullmatch(node):
        raise OutcomeError("invalid node name %r" % (node,))
    if not isinstance(raw, dict):
        raise OutcomeError("node %s: the outcome must be a mapping with 'outcome', got %r" % (node, type(raw).__name__))
    unknown = sorted(set(raw) - set(_NODE_KEYS))
    if unknown:
        raise OutcomeError(
            "node %s: unknown key(s) %s (allowed: %s)" % (node, ", ".join(unknown), ", ".join(_NODE_KEYS))
        )
    outcome = raw.get("outcome")
    if outcome not in VOCABULARY:
        raise OutcomeError("node %s: outcome %r is not in the vocabulary (%s)" % (node, outcome, ", ".join(VOCABULARY)))
    entry = {k: redact(raw.get(k), secrets) if raw.get(k) not in (None, "") else None for k in _NODE_KEYS}
    entry["outcome"] = outcome
    return entry


def build(
    workflow: str,
    run_id: str,
    requested: List[str],
    nodes: Dict[str, Any],
    meta: Dict[str, Any],
    secrets: Iterable[str] = (),
) -> Dict[str, Any]:
    """The outcome document. ``meta``: ticket, change_id, requested_state, check_mode, started, finished.

    A requested node missing from ``nodes`` is ``not_started``; the run succeeds only when every node (requested
    or reported) has a success outcome (done, already, skipped).
    """
    if workflow not in WORKFLOWS:
        raise OutcomeError("unknown workflow %r (one of %s)" % (workflow, ", ".join(WORKFLOWS)))
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        raise OutcomeError("invalid run_id %r (letters, digits and ._:+- only)" % (run_id,))
    secrets = list(secrets)
    table: Dict[str, Dict[str, Any]] = {}
    for node in requested:
        if node not in (nodes or {}):
            table[node] = _node_entry(
                node, {"outcome": "not_started", "detail": "the run stopped before reaching this node"}, secrets
            )
    for node, raw in (nodes or {}).items():
        table[node] = _node_entry(node, raw, secrets)
    order = list(dict.fromkeys(list(requested) + sorted(nodes or {})))
    table = {n: table[n] for n in order}
    counts = {o: 0 for o in VOCABULARY}
    for entry in table.values():
        counts[entry["outcome"]] += 1
    success = all(VOCABULARY[e["outcome"]] for e in table.values())
    doc = {
        "schema": SCHEMA,
        "workflow": workflow,
        "run_id": run_id,
        "ticket": meta.get("ticket") or None,
        "change_id": meta.get("change_id") or None,
        "requested_state": meta.get("requested_state") or None,
        "requested": list(requested),
        "check_mode": bool(meta.get("check_mode")),
        "started": meta.get("started") or meta.get("finished"),
        "finished": meta.get("finished"),
        "success": success,
        "exit_code": EXIT_OK if success else EXIT_INCOMPLETE,
        "counts": {o: n for o, n in counts.items() if n},
        "nodes": table,
    }
    doc["summary"] = summary_line(doc)
    return doc


def summary_line(doc: Dict[str, Any]) -> str:
    """``gpuops outcome: <workflow> <run_id>: OK|INCOMPLETE done=N ... -> exit 0|2``."""
    counts = " ".join("%s=%d" % (o, doc["counts"][o]) for o in VOCABULARY if doc["counts"].get(o)) or "no nodes"
    return "gpuops outcome: %s %s: %s%s %s -> exit %d" % (
        doc["workflow"],
        doc["run_id"],
        "OK" if doc["success"] else "INCOMPLETE",
        " (check mode: would be)" if doc["check_mode"] else "",
        counts,
        doc["exit_code"],
    )


def node_lines(doc: Dict[str, Any]) -> List[str]:
    """One line per node: ``<node>: <outcome> (<detail>)``, plus the error when there is one."""
    out = []
    for node, e in doc["nodes"].items():
        line = "%s: %s" % (node, e["outcome"])
        if e.get("detail"):
            line += " (%s)" % e["detail"]
        if e.get("error"):
            line += ": %s" % e["error"]
        out.append(line)
    return out


def outcome_path(state_dir: str, workflow: str, run_id: str) -> str:
    return os.path.join(state_dir, "runs", workflow, run_id + ".json")


def write(state_dir: str, doc: Dict[str, Any]) -> str:
    """Write the document to ``<state_dir>/runs/<workflow>/<run_id>.json`` (dirs 0700, file 0600, atomic)."""
    path = outcome_path(state_dir, doc["workflow"], doc["run_id"])
    return write_private_atomic(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")


def audit_records(doc: Dict[str, Any], audit_run_id: Optional[str], extra: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One ``outcome`` audit record per node (the callback's run id when it is live, else the workflow's)."""
    recs = []
    for node, e in doc["nodes"].items():
        rec = dict(extra)
        rec.update(
            {
                "event": "outcome",
                "run_id": audit_run_id or doc["run_id"],
                "workflow_run_id": doc["run_id"],
                "workflow": doc["workflow"],
                "node": node,
                "host": node,
                "outcome": e["outcome"],
                "success": VOCABULARY[e["outcome"]],
                "decision": e.get("decision"),
                "detail": e.get("detail"),
                "error": e.get("error"),
                "slurm_state": e.get("slurm_state"),
                "slurm_reason": e.get("slurm_reason"),
                "ticket": doc["ticket"],
                "change_id": doc["change_id"],
                "requested_state": doc["requested_state"],
                "exit_code": doc["exit_code"],
            }
        )
        recs.append(rec)
    return recs


def append_audit(state_dir: str, records: List[Dict[str, Any]]) -> str:
    """Append the records to the audit chain of ``state_dir`` (the chain the audit callback writes)."""
    log = _audit.default_log_path(state_dir)
    head = os.environ.get("GPUOPS_AUDIT_HEAD") or _audit.default_head_path(log)
    for rec in records:
        _audit.append(log, rec, head_path=head)
    return log


def merge_report(path: str, doc: Dict[str, Any]) -> Tuple[str, bool]:
    """Put the outcome into the workflow's JSON run report under ``outcome`` (created when missing).

    Returns ``(path, created)``. A report that is not a JSON object is left alone (ValueError).
    """
    data: Dict[str, Any] = {}
    created = not os.path.exists(path)
    if not created:
        with open(path, "rb") as f:
            try:
                data = _safejson.loads(f.read(), what="the run report")
            except (ValueError, UnicodeDecodeError) as e:
                raise ValueError("the run report %s is not JSON (%s): outcome not merged" % (path, e)) from None
        if not isinstance(data, dict):
            raise ValueError("the run report %s is not a JSON object: outcome not merged" % path)
    data["outcome"] = doc
    write_private_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path, created
