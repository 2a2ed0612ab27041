# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers of the rolling upgrade on the node side: the Redfish SimpleUpdate protocol.

Redfish (DSP0266 "Asynchronous operations", UpdateService.SimpleUpdate):
  POST .../UpdateService/Actions/UpdateService.SimpleUpdate {ImageURI, Targets?, TransferProtocol?}
  -> 202 Accepted + ``Location`` (a TaskMonitor) and often a Task body; 200/204 = done at once.
  GET the monitor: 202 while running (``Retry-After``), then 200 with the Task (or 204 / 404 once it is gone).
  The Task's ``TaskState`` (Completed | Exception | Killed | Cancelled | ...) and ``TaskStatus`` tell the outcome.
  The image is then *staged*: it takes effect after the activation (BMC reset, host reboot or power cycle).

Everything here is pure: the HTTP call is a function passed in (``get(url) -> (status, headers, body)``), the
clock and sleep too, so the polling loop is tested without a BMC. No Ansible imports. The run report is
controller code: plugins/plugin_utils/upgrade/report.py.
"""

from __future__ import annotations

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
