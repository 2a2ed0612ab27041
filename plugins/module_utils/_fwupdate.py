# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers of the rolling upgrade: the Redfish SimpleUpdate protocol and the run report.

Redfish (DSP0266 "Asynchronous operations", UpdateService.SimpleUpdate):
  POST .../UpdateService/Actions/UpdateService.SimpleUpdate {ImageURI, Targets?, TransferProtocol?}
  -> 202 Accepted + ``Location`` (a TaskMonitor) and often a Task body; 200/204 = done at once.
  GET the monitor: 202 while running (``Retry-After``), then 200 with the Task (or 204 / 404 once it is gone).
  The Task's ``TaskState`` (Completed | Exception | Killed | Cancelled | ...) and ``TaskStatus`` tell the outcome.
  The image is then *staged*: it takes effect after the activation (BMC reset, host reboot or power cycle).

Everything here is pure: the HTTP call is a function passed in (``get(url) -> (status, headers, body)``), the
clock and sleep too, so the polling loop is tested without a BMC. No Ansible imports.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

PARSER = "fwupdate"
RUNNING_STATES = ("New", "Starting", "Running", "Pending", "Suspended", "Interrupted", "Stopping", "Service")
DONE_OK = ("Completed",)
DONE_BAD = ("Exception", "Killed", "Cancelled", "Cancelling")
RESET_TYPES = ("On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "ForceOn", "PushPowerButton",
               "PowerCycle", "FullPowerCycle", "Nmi")  # fmt: skip
SIMPLE_UPDATE = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"


class UpdateError(Exception):
    """The update failed or timed out; ``task`` is the last Task document seen (or None)."""

    def __init__(self, message: str, task: Optional[Dict[str, Any]] = None, timed_out: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.task = task
        self.timed_out = timed_out


def _header(headers: Any, name: str) -> Optional[str]:
    if not isinstance(headers, dict):
        return None
    for k, v in headers.items():
        if isinstance(k, str) and k.lower() == name.lower():
            return v if isinstance(v, str) else None
    return None


def simple_update_body(
    image_uri: str, targets: Optional[List[str]] = None, transfer_protocol: Optional[str] = None
) -> Dict[str, Any]:
    """The SimpleUpdate action body; refuses an empty image URI."""
    if not isinstance(image_uri, str) or not image_uri.strip():
        raise ParseError(PARSER, "image_uri is required", source="simple_update")
    body: Dict[str, Any] = {"ImageURI": image_uri.strip()}
    if targets:
        body["Targets"] = [str(t) for t in targets]
    if transfer_protocol:
        body["TransferProtocol"] = transfer_protocol
    return body


def accepted(status: int, headers: Any, body: Any) -> Dict[str, Any]:
    """Interpret the POST's answer: ``{done, monitor, task}``; raises UpdateError when the BMC refused it."""
    task = body if isinstance(body, dict) and "TaskState" in body else None
    if status == 202:
        monitor = _header(headers, "Location") or (task or {}).get("TaskMonitor")
        if not monitor and isinstance(task, dict):
            monitor = task.get("@odata.id")
        if not monitor:
            raise UpdateError("202 Accepted without a Location (task monitor)", task)
        return {"done": False, "monitor": monitor, "task": task}
    if status in (200, 204):
        if task is not None and task_outcome(task)["state"] in DONE_BAD:
            raise UpdateError("update failed: %s" % task_outcome(task)["message"], task)
        return {"done": True, "monitor": None, "task": task}
    raise UpdateError("SimpleUpdate refused: HTTP %s%s" % (status, _error_message(body)), task)


def reset_sequence(reset_type: str, allowable: Any) -> List[str]:
    """ResetTypes to send for ``reset_type`` given the system's AllowableValues (None/garbage = trust the ask).

    A power cycle the BMC does not offer is done as ForceOff then On; any other type it does not offer raises.
    """
    if reset_type not in RESET_TYPES:
        raise UpdateError("unknown ResetType %r" % (reset_type,))
    allowed = [a for a in allowable if isinstance(a, str)] if isinstance(allowable, list) else []
    if not allowed or reset_type in allowed:
        return [reset_type]
    if reset_type in ("PowerCycle", "FullPowerCycle") and "ForceOff" in allowed and "On" in allowed:
        return ["ForceOff", "On"]
    raise UpdateError("the BMC does not offer ResetType %s (allowed: %s)" % (reset_type, ", ".join(allowed)))


def error_message(body: Any) -> str:
    return _error_message(body)


def _error_message(body: Any) -> str:
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            msg = err.get("message")
            ext = err.get("@Message.ExtendedInfo")
            if not msg and isinstance(ext, list) and ext and isinstance(ext[0], dict):
                msg = ext[0].get("Message")
            if msg:
                return ": %s" % msg
    return ""


def task_outcome(task: Any) -> Dict[str, Any]:
    """``{state, status, percent, message, running}`` of a Task document (missing fields tolerated)."""
    if not isinstance(task, dict):
        raise ParseError(PARSER, "task is not a JSON object", source="task")
    state = task.get("TaskState")
    state = state if isinstance(state, str) else "Unknown"
    msgs = []
    for m in task.get("Messages") or []:
        if isinstance(m, dict) and isinstance(m.get("Message"), str):
            msgs.append(m["Message"])
    pct = task.get("PercentComplete")
    return {
        "id": task.get("Id"),
        "state": state,
        "status": task.get("TaskStatus") if isinstance(task.get("TaskStatus"), str) else None,
        "percent": pct if isinstance(pct, (int, float)) and not isinstance(pct, bool) else None,
        "message": "; ".join(msgs) or state,
        "running": state in RUNNING_STATES,
    }


def poll_task(
    get: Callable[[str], Tuple[int, Dict[str, str], Any]],
    monitor: str,
    timeout: float,
    interval: float = 1.0,
    max_interval: float = 30.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Dict[str, Any]:
    """Poll a task monitor until the task ends; returns ``{task, outcome, polls}``.

    202 = still running (honours ``Retry-After``, capped at ``max_interval``); 200 with a Task = its state
    decides; 204/404 after at least one 202 = the monitor is gone, which DSP0266 allows once the task completed.
    Raises UpdateError on a failed task, an HTTP error or the timeout.
    """
    deadline = clock() + timeout
    polls = 0
    last: Optional[Dict[str, Any]] = None
    while True:
        status, headers, body = get(monitor)
        polls += 1
        task = body if isinstance(body, dict) and "TaskState" in body else None
        if task is not None:
            last = task
        if status == 202 or (status == 200 and task is not None and task_outcome(task)["running"]):
            wait = interval
            retry = _header(headers, "Retry-After")
            if retry and retry.strip().isdigit():
                wait = float(retry.strip())
            wait = max(0.0, min(wait, max_interval))
            if clock() + wait > deadline:
                pct = task_outcome(last)["percent"] if last else None
                raise UpdateError(
                    "task %s still running after %ss (%s%% done)" % (monitor, int(timeout), pct), last, timed_out=True
                )
            sleep(wait)
            continue
        if status == 200 and task is not None:
            out = task_outcome(task)
            if out["state"] in DONE_OK:
                return {"task": task, "outcome": out, "polls": polls}
            raise UpdateError("update task %s: %s (%s)" % (out["id"], out["state"], out["message"]), task)
        if status in (204, 404) and polls > 1:
            return {"task": last, "outcome": task_outcome(last) if last else None, "polls": polls}
        raise UpdateError("task monitor %s: HTTP %s%s" % (monitor, status, _error_message(body)), last)


def firmware_versions(members: Any) -> Dict[str, Optional[str]]:
    """FirmwareInventory members -> ``{Id: Version}`` (members without an Id are skipped)."""
    out: Dict[str, Optional[str]] = {}
    for m in members if isinstance(members, list) else []:
        if isinstance(m, dict) and isinstance(m.get("Id"), str):
            v = m.get("Version")
            out[m["Id"]] = v if isinstance(v, str) else None
    return out


# --------------------------------------------------------------------------------------------- run report

RESULT_ORDER = ("failed", "not_started", "upgraded", "at_target", "blocked")


def _fmt_version(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, dict):
        return ", ".join("%s %s" % (k, _fmt_version(x)) for k, x in sorted(v.items()))
    if isinstance(v, list):
        uniq = sorted({str(x) for x in v})
        return "/".join(uniq) if uniq else "-"
    return str(v)


def _list(v: Any) -> List[Any]:
    return v if isinstance(v, list) else []


def _dict(v: Any) -> Optional[Dict[str, Any]]:
    return v if isinstance(v, dict) else None


def node_rows(record: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per planned component of a node record: component, from, to, result, duration."""
    rows = []
    applied = {a.get("component"): a for a in _list(record.get("applied")) if isinstance(a, dict)}
    for step in _list(record.get("steps")):
        if not isinstance(step, dict):
            continue
        comp = step.get("component")
        a = applied.get(comp)
        rows.append(
            {
                "component": comp,
                "from": step.get("from"),
                "to": step.get("to"),
                "applied": a is not None,
                "seconds": a.get("seconds") if a else None,
            }
        )
    return rows


def build_report(
    change_id: str,
    records: List[Dict[str, Any]],
    planned: Optional[List[str]] = None,
    blocked: Optional[List[Dict[str, Any]]] = None,
    deferred: Optional[List[Dict[str, Any]]] = None,
    batches: Optional[List[Dict[str, Any]]] = None,
    generated_at: str = "",
) -> Dict[str, Any]:
    """The run report: per node from/to versions, result, duration; planned nodes without a record are
    ``not_started`` (the window closed, or the rollout stopped before their batch)."""
    by_host: Dict[str, Dict[str, Any]] = {}
    for rec in records:
        if isinstance(rec, dict) and isinstance(rec.get("host"), str):
            by_host[rec["host"]] = rec
    nodes = []
    for host in sorted(by_host):
        rec = by_host[host]
        dur = rec.get("duration_s")
        try:
            dur = round(float(dur), 1) if dur is not None else None
        except (TypeError, ValueError):
            dur = None
        nodes.append(
            {
                "host": host,
                "batch": rec.get("batch"),
                "result": str(rec.get("result") or "unknown"),
                "stage": rec.get("stage"),
                "message": rec.get("message"),
                "duration_s": dur,
                "components": node_rows(rec),
                "rollback": _dict(rec.get("rollback")),
                "evidence": rec.get("evidence"),
                "slurm": _dict(rec.get("slurm")),
            }
        )
    for host in _list(planned):
        if isinstance(host, str) and host not in by_host:
            nodes.append({"host": host, "batch": None, "result": "not_started", "stage": None,
                          "message": "not started (window closed or rollout stopped)", "duration_s": None,
                          "components": [], "rollback": None, "evidence": None, "slurm": None})  # fmt: skip
    for b in _list(blocked):
        if isinstance(b, dict) and b.get("host") not in by_host:
            nodes.append({"host": b.get("host"), "batch": None, "result": "blocked", "stage": None,
                          "message": b.get("reason"), "duration_s": None, "components": [], "rollback": None,
                          "evidence": None, "slurm": None})  # fmt: skip
    counts: Dict[str, int] = {}
    for n in nodes:
        counts[n["result"]] = counts.get(n["result"], 0) + 1
    return {
        "change_id": change_id,
        "generated_at": generated_at,
        "counts": counts,
        "ok": not any(n["result"] in ("failed", "not_started", "unknown") for n in nodes),
        "batches": _list(batches),
        "deferred": _list(deferred),
        "nodes": nodes,
    }


def _md_cell(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Dict[str, Any]) -> str:
    """The report as Markdown: a summary line, one table row per node component, then failures in detail."""
    lines = ["# Upgrade run %s" % _md_cell(report.get("change_id") or "(no change id)"), ""]
    if report.get("generated_at"):
        lines += ["Generated %s." % report["generated_at"], ""]
    counts = report.get("counts") or {}
    lines.append("Result: **%s** - %s" % (
        "complete" if report.get("ok") else "INCOMPLETE",
        ", ".join("%d %s" % (counts[k], k) for k in sorted(counts, key=lambda k: (RESULT_ORDER + (k,)).index(k)))
        or "no nodes",
    ))  # fmt: skip
    lines += ["", "| node | batch | result | component | from | to | duration (s) |", "|---|---|---|---|---|---|---|"]
    for n in report.get("nodes") or []:
        comps = n.get("components") or [{}]
        for i, c in enumerate(comps):
            lines.append(
                "| %s | %s | %s | %s | %s | %s | %s |"
                % (
                    _md_cell(n.get("host")) if i == 0 else "",
                    _md_cell("-" if n.get("batch") is None else n.get("batch")) if i == 0 else "",
                    _md_cell(n.get("result")) if i == 0 else "",
                    _md_cell(c.get("component") or "-"),
                    _md_cell(_fmt_version(c.get("from"))),
                    _md_cell(_fmt_version(c.get("to"))),
                    _md_cell("-" if n.get("duration_s") is None else n.get("duration_s")) if i == 0 else "",
                )
            )
    bad = [n for n in report.get("nodes") or [] if n.get("result") not in ("upgraded", "at_target")]
    if bad:
        lines += ["", "## Not upgraded", ""]
        for n in bad:
            extra = []
            if n.get("stage"):
                extra.append("stage %s" % n["stage"])
            if n.get("slurm"):
                extra.append("slurm %s" % _fmt_version({k: v for k, v in n["slurm"].items() if v is not None}))
            if n.get("rollback"):
                extra.append("rollback %s" % ("ok" if n["rollback"].get("ok") else "FAILED"))
            if n.get("evidence"):
                extra.append("evidence %s" % n["evidence"])
            lines.append("- **%s** (%s): %s%s" % (_md_cell(n.get("host")), n.get("result"), _md_cell(n.get("message") or ""),
                                                  (" - " + "; ".join(_md_cell(e) for e in extra)) if extra else ""))  # fmt: skip
    for d in report.get("deferred") or []:
        if isinstance(d, dict):
            lines.append("- deferred %s: %s" % (_md_cell(d.get("name")), _md_cell(d.get("reason"))))
    return "\n".join(lines) + "\n"


def render_json(report: Dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True, default=str) + "\n"
