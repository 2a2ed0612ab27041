# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm node isolation: ``scontrol`` command wrappers and the drain/resume decision logic.

The decision logic (:func:`plan`) is a pure function of the node's current state, the jobs on it and
the request; :class:`Scontrol` is the only place that runs anything. Text parsing lives in
``_slurm_parse``: Debian's Slurm 22.05.8 has no ``scontrol --json`` ("unrecognized option"), so the text form
is used.

Reason ownership: a drain set by gpuops carries ``reason_prefix`` (default ``gpuops:``). Slurm has one
reason per node, so when a person already drained the node, isolation keeps their text and appends ours
(``"bad fan; gpuops: gpu.xid 79"``); resume removes only our part and leaves the node drained while
another reason remains; a drain set by someone else is cleared only with ``force``.

Runs on the controller or the Slurm head node (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm import parse_show_job, parse_show_node
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm_cli import hostlist

#: Job states that still occupy a node (a node is not drained while one of these is on it).
ACTIVE_JOB_STATES = frozenset(
    ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESIZING")
)
#: Separator between someone else's reason and the gpuops part.
REASON_SEP = "; "
STATES = ("drained", "resumed", "down", "present")


class SlurmError(Exception):
    """An scontrol call failed (message includes the command and its error output)."""


# ----------------------------------------------------------------------------------------------------------
# pure helpers


def gpuops_reason(reason: str, prefix: str) -> str:
    """The gpuops part of a reason: ``prefix reason`` unless ``reason`` already starts with the prefix."""
    reason = " ".join((reason or "").split())
    if reason.startswith(prefix):
        return reason
    return ("%s %s" % (prefix, reason)).strip()


def split_reason(reason: Optional[str], prefix: str) -> Tuple[Optional[str], Optional[str]]:
    """Split a node reason into (someone else's part, the gpuops part); either may be None."""
    if not reason:
        return None, None
    reason = reason.strip()
    if reason.startswith(prefix):
        return None, reason
    idx = reason.find(REASON_SEP + prefix)
    if idx >= 0:
        return (reason[:idx].strip() or None), reason[idx + len(REASON_SEP) :].strip()
    return reason, None


def join_reason(others: Optional[str], ours: Optional[str]) -> Optional[str]:
    parts = [p for p in (others, ours) if p]
    return REASON_SEP.join(parts) if parts else None


def jobs_on_node(jobs: Sequence[Dict[str, Any]], node: str) -> List[Dict[str, Any]]:
    """Active jobs whose node list includes ``node``, as small dicts for the module's result.

    A node list Slurm would not print (``parsers/slurm_cli/hostlist.py`` refuses it) is a SlurmError naming the
    job: which nodes that job holds is unknown, so nothing is decided on a guess."""
    out = []
    for job in jobs:
        state = (job.get("state") or "").upper()
        try:
            nodes = hostlist.expand(job.get("node_list"))
        except hostlist.HostlistError as exc:
            raise SlurmError("scontrol show job: job %s: unreadable NodeList: %s" % (job.get("job_id"), exc)) from None
        if node not in nodes or state not in ACTIVE_JOB_STATES:
            continue
        out.append(
            {
                "job_id": job.get("job_id"),
                "name": job.get("name"),
                "user": job.get("user"),
                "state": state,
                "node_list": job.get("node_list"),
                "other_nodes": [n for n in nodes if n != node],
                "requeueable": bool(job.get("batch_flag")) and bool(job.get("requeue")),
            }
        )
    return out


def node_status(node: Dict[str, Any], jobs: Sequence[Dict[str, Any]], prefix: str) -> Dict[str, Any]:
    """Summary of one node: state, reason parts, drained/draining booleans, active jobs.

    DRAINED = (IDLE or DOWN) + DRAIN with nothing COMPLETING and no active job; DRAINING = DRAIN otherwise.
    """
    base = (node.get("base_state") or "").upper()
    flags = [str(f).upper() for f in node.get("flags") or []]
    drain_flag = "DRAIN" in flags or base in ("DRAINED", "DRAINING", "DRAIN")
    busy = bool(jobs) or "COMPLETING" in flags or base in ("ALLOCATED", "ALLOC", "MIXED", "COMPLETING", "DRAINING")
    drained = drain_flag and not busy and base in ("IDLE", "DOWN", "DRAINED", "DRAIN")
    others, ours = split_reason(node.get("reason"), prefix)
    return {
        "name": node.get("name"),
        "state": node.get("state"),
        "base_state": base or None,
        "flags": flags,
        "reason": node.get("reason"),
        "reason_user": node.get("reason_user"),
        "reason_time": node.get("reason_time"),
        "gpuops_reason": ours,
        "other_reason": others,
        "drain": drain_flag,
        "drained": drained,
        "draining": drain_flag and not drained,
        "down": base == "DOWN",
        "jobs": list(jobs),
    }


def plan(
    state: str,
    status: Dict[str, Any],
    reason: Optional[str] = None,
    prefix: str = "gpuops:",
    force: bool = False,
    requeue: bool = False,
) -> Dict[str, Any]:
    """What to do to bring one node to ``state``. Pure: returns a plan, runs nothing.

    Returns ``{"updates": [{key: value}, ...], "requeue": [job_id, ...], "not_requeueable": [jobs],
    "warnings": [...], "after": {"state_word", "reason"}, "message": str}``. ``changed`` is
    ``bool(updates or requeue)``. ``updates`` are ``scontrol update NodeName=...`` key/values in order.
    """
    if state not in STATES:
        raise ValueError("state must be one of %s" % ", ".join(STATES))
    out: Dict[str, Any] = {
        "updates": [],
        "requeue": [],
        "not_requeueable": [],
        "warnings": [],
        "after_reason": status.get("reason"),
        "message": "node %s is %s" % (status.get("name"), status.get("state")),
    }
    if state in ("drained", "down"):
        if not reason or not reason.strip():
            raise ValueError("reason is required for state=%s" % state)
        _plan_stop(out, state, status, gpuops_reason(reason, prefix))
        if requeue:
            _plan_requeue(out, status)
    elif state == "resumed":
        _plan_resume(out, status, force)
    return out


def _plan_stop(out: Dict[str, Any], state: str, status: Dict[str, Any], want: str) -> None:
    """Drain or down with our reason ``want``, keeping anyone else's reason next to it."""
    others, ours = status.get("other_reason"), status.get("gpuops_reason")
    new_reason = join_reason(others, want)
    if state == "drained":
        if not status.get("drain") or ours != want:
            out["updates"].append({"State": "DRAIN", "Reason": new_reason or want})
            out["after_reason"] = new_reason
            out["message"] = "drain %s: %s" % (status.get("name"), new_reason)
        if others and ours is None:
            out["warnings"].append("node was already drained by someone else (%s); their reason is kept" % others)
    elif not status.get("down") or ours != want:
        out["updates"].append({"State": "DOWN", "Reason": new_reason or want})
        out["after_reason"] = new_reason
        out["message"] = "down %s: %s" % (status.get("name"), new_reason)


def _plan_requeue(out: Dict[str, Any], status: Dict[str, Any]) -> None:
    """Requeue the node's running jobs that allow it; the others keep running, with a warning."""
    for job in status.get("jobs") or []:
        if job.get("state") not in ("RUNNING", "SUSPENDED", "CONFIGURING"):
            continue
        if job.get("requeueable"):
            out["requeue"].append(job["job_id"])
        else:
            out["not_requeueable"].append(job)
    if out["not_requeueable"]:
        out["warnings"].append(
            "jobs that cannot be requeued keep running: %s"
            % ", ".join(
                "%s (nodes %s)" % (j.get("job_id"), ",".join(j.get("other_nodes") or []) or "-")
                for j in out["not_requeueable"]
            )
        )


def _plan_resume(out: Dict[str, Any], status: Dict[str, Any], force: bool) -> None:
    """Resume, unless someone else's reason holds the node (then only our reason goes, or ``force``)."""
    others, ours = status.get("other_reason"), status.get("gpuops_reason")
    blocked = status.get("drain") or status.get("down")
    if blocked and ours is None and others is not None and not force:
        out["warnings"].append(
            "node %s is %s by someone else (%s): not resumed, use force=true to override"
            % (status.get("name"), "drained" if status.get("drain") else "down", others)
        )
        out["message"] = "left as is: reason set by someone else"
    elif blocked and ours is not None and others is not None and not force:
        out["updates"].append({"State": "DRAIN", "Reason": others})
        out["after_reason"] = others
        out["message"] = "removed the gpuops reason; node stays drained for: %s" % others
        out["warnings"].append(out["message"])
    elif blocked:
        out["updates"].append({"State": "RESUME"})
        out["after_reason"] = None
        out["message"] = "resume %s" % status.get("name")
        if others is not None:
            out["warnings"].append("force: cleared a drain set by someone else (%s)" % others)


# ----------------------------------------------------------------------------------------------------------
# scontrol wrapper


class Scontrol:
    """``scontrol`` calls with LC_ALL=C and a timeout (via _runner.run_command)."""

    def __init__(self, path: str = "scontrol", timeout: float = 30.0) -> None:
        self.path = path or "scontrol"
        self.timeout = timeout
        self.commands: List[List[str]] = []

    def _run(self, args: Sequence[str]) -> str:
        argv = [self.path] + list(args)
        self.commands.append(argv)
        res = run_command(argv, timeout=self.timeout)
        if not res.ok:
            raise SlurmError(res.describe())
        return res.stdout

    def show_node(self, name: str) -> Dict[str, Any]:
        nodes = parse_show_node(self._run(["show", "node", name]), source="scontrol show node")
        for node in nodes:
            if node.get("name") == name:
                return node
        raise SlurmError("scontrol show node %s: node not in the output" % name)

    def show_jobs(self) -> List[Dict[str, Any]]:
        return parse_show_job(self._run(["show", "job"]), source="scontrol show job")

    def update_node(self, name: str, values: Dict[str, str]) -> None:
        self._run(["update", "NodeName=%s" % name] + ["%s=%s" % (k, v) for k, v in values.items()])

    def requeue(self, job_id: int) -> None:
        self._run(["requeue", str(job_id)])


def read_status(sc: Scontrol, name: str, prefix: str) -> Dict[str, Any]:
    node = sc.show_node(name)
    return node_status(node, jobs_on_node(sc.show_jobs(), name), prefix)
