# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm isolation of a list of nodes in one call: drain (or down), requeue, grace, wait, read back.

``gpuops.cluster.slurm_node`` with ``names`` runs :func:`run_batch`: the same per-node steps the isolate role
used to run as up to seven looped tasks, in this order, with one result per node:

1. per node, in the order given: read (``show node``, ``show job``), :func:`_slurm.plan`, ``update`` and
   ``requeue`` (so a controller that dies half-way leaves the first nodes drained and the rest failed, with the
   tool's own words);
2. ``down`` with ``keep_drained``: the DOWN nodes are drained too (ReturnToService=2 puts a DOWN node whose
   slurmd answers back to IDLE);
3. ``requeue_after`` > 0: the draining nodes get that long to run out, then their running jobs are requeued;
4. ``cancel_unrequeueable``: ``scancel`` of the jobs that could not be requeued;
5. ``wait``: until every node is drained, at most ``wait_timeout`` seconds for all of them together;
6. ``verify``: what Slurm shows afterwards (a drain counts only when Slurm shows it).

Check mode plans step 1 and does nothing else. Errors are per node (``failed``/``msg``, ``verify_error``): one
node that Slurm refuses never hides what happened to the others. Runs where scontrol runs (Python 3.8+);
no Ansible imports.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command
from ansible_collections.gpuops.cluster.plugins.module_utils._slurm import Scontrol, SlurmError, plan, read_status

#: A Slurm node name (and an inventory name standing for one): a host name, never a host list or an option.
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_ERRORS = (SlurmError, ParseError, ValueError)


def check_name(name: Any, what: str = "node name") -> str:
    """``name`` when it fully matches :data:`NODE_NAME`, else ValueError naming it."""
    if not isinstance(name, str) or not NODE_NAME.fullmatch(name):
        raise ValueError(
            "invalid %s %r: a host name (letters, digits, '.', '_', '-'; no host list, space or '=')" % (what, name)
        )
    return name


def pairs(names: Sequence[Any], slurm_names: Optional[Dict[str, Any]] = None) -> List[Tuple[str, str]]:
    """``[(name, Slurm name), ...]``: each name (an inventory name) with its Slurm NodeName from ``slurm_names``
    (itself when absent). Every name is validated; duplicates are dropped, the order kept."""
    table = slurm_names or {}
    out: List[Tuple[str, str]] = []
    for name in names:
        check_name(name)
        mapped = table.get(name) or name
        check_name(mapped, "Slurm node name for %s" % name)
        if all(name != n for n, _m in out):
            out.append((name, mapped))
    return out


def _entry(name: str, node: str) -> Dict[str, Any]:
    return {
        "name": name,
        "node": node,
        "changed": False,
        "failed": False,
        "msg": None,
        "state_before": None,
        "reason_before": None,
        "slurm_state": None,
        "reason": None,
        "drained": False,
        "draining": False,
        "jobs": [],
        "requeued": [],
        "not_requeueable": [],
        "cancelled": [],
        "message": None,
        "warnings": [],
        "verified": None,
        "verify_error": None,
    }


class Batch:
    """One isolation request over several nodes; :meth:`run` returns one entry per node."""

    def __init__(
        self,
        sc: Scontrol,
        params: Dict[str, Any],
        check_mode: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sc = sc
        self.p = params
        self.check_mode = check_mode
        self.sleep = sleep
        self.clock = clock
        self.prefix = params.get("reason_prefix") or "gpuops:"

    def _read(self, e: Dict[str, Any]) -> Dict[str, Any]:
        return read_status(self.sc, e["node"], self.prefix)

    def _apply(self, e: Dict[str, Any], todo: Dict[str, Any]) -> None:
        for values in todo["updates"]:
            self.sc.update_node(e["node"], values)
        for job_id in todo["requeue"]:
            self.sc.requeue(job_id)

    def run(self, names: List[Tuple[str, str]]) -> List[Dict[str, Any]]:
        p = self.p
        entries = [_entry(n, m) for n, m in names]
        for e in entries:
            self._stop(e)
        if self.check_mode:
            return entries
        ok = [e for e in entries if not e["failed"]]
        if p["state"] == "down" and p.get("keep_drained"):
            for e in ok:
                self._keep_drained(e)
        if p["state"] == "drained" and int(p.get("requeue_after") or 0) > 0:
            self._grace([e for e in ok if e["draining"] and not e["failed"]], int(p["requeue_after"]))
        if p.get("cancel_unrequeueable"):
            self._cancel(entries)
        if p.get("wait") and p["state"] == "drained":
            self._wait([e for e in entries if not e["failed"]], int(p.get("wait_timeout") or 0))
        if p.get("verify"):
            for e in entries:
                self._verify(e)
        return entries

    def _stop(self, e: Dict[str, Any]) -> None:
        """Step 1: drain (or down) and requeue one node; its state after (before in check mode)."""
        p = self.p
        try:
            before = self._read(e)
            e.update(state_before=before["state"], reason_before=before["reason"], jobs=before["jobs"])
            todo = plan(
                p["state"], before, p.get("reason"), self.prefix, p.get("force", False), p.get("requeue", False)
            )
            changed = bool(todo["updates"] or todo["requeue"])
            after = before
            if changed and not self.check_mode:
                self._apply(e, todo)
                after = self._read(e)
        except _ERRORS as exc:
            e.update(failed=True, msg=str(exc))
            return
        e.update(
            changed=changed,
            slurm_state=after["state"],
            reason=after["reason"] if after is not before or not changed else todo["after_reason"],
            drained=after["drained"],
            draining=after["draining"],
            requeued=list(todo["requeue"]),
            not_requeueable=list(todo["not_requeueable"]),
            message=todo["message"],
        )
        e["warnings"].extend(todo["warnings"])

    def _keep_drained(self, e: Dict[str, Any]) -> None:
        """Step 2: a DOWN node gets the DRAIN flag with the same reason."""
        try:
            now = self._read(e)
            todo = plan("drained", now, self.p.get("reason"), self.prefix)
            if todo["updates"]:
                self._apply(e, todo)
        except _ERRORS as exc:
            e.update(failed=True, msg="the node was set DOWN, then could not be drained: %s" % exc)

    def _grace(self, draining: List[Dict[str, Any]], grace: int) -> None:
        """Step 3: let the draining nodes run out for ``grace`` seconds, then requeue what still runs."""
        deadline = self.clock() + grace
        left = list(draining)
        while left and self.clock() < deadline:
            self.sleep(min(1.0, max(0.0, deadline - self.clock())))
            still = []
            for e in left:
                try:
                    if not self._read(e)["drained"]:
                        still.append(e)
                except _ERRORS:
                    still.append(e)  # unreadable now: the requeue below tries again
            left = still
        for e in left:
            try:
                now = self._read(e)
                todo = plan("drained", now, self.p.get("reason"), self.prefix, requeue=True)
                self._apply(e, todo)
            except _ERRORS as exc:
                e["warnings"].append("requeue after the grace period failed: %s" % exc)
                continue
            e["changed"] = e["changed"] or bool(todo["updates"] or todo["requeue"])
            e["requeued"].extend(j for j in todo["requeue"] if j not in e["requeued"])
            known = {j.get("job_id") for j in e["not_requeueable"]}
            e["not_requeueable"].extend(j for j in todo["not_requeueable"] if j.get("job_id") not in known)
            e["jobs"].extend(j for j in now["jobs"] if j.get("job_id") not in {k.get("job_id") for k in e["jobs"]})

    def _cancel(self, entries: List[Dict[str, Any]]) -> None:
        """Step 4: ``scancel`` each job that could not be requeued, once."""
        path = self.sc.path
        scancel = os.path.join(os.path.dirname(path), "scancel") if os.path.dirname(path) else "scancel"
        done: Dict[Any, Optional[str]] = {}
        for e in entries:
            for job in e["not_requeueable"]:
                jid = job.get("job_id")
                if jid not in done:
                    argv = [scancel, str(jid)]
                    self.sc.commands.append(argv)
                    res = run_command(argv, timeout=self.sc.timeout)
                    done[jid] = None if res.ok else res.describe()
                if done[jid] is None:
                    if jid not in e["cancelled"]:
                        e["cancelled"].append(jid)
                elif not e["failed"]:
                    e.update(failed=True, msg="scancel %s failed: %s" % (jid, done[jid]))

    def _wait(self, entries: List[Dict[str, Any]], timeout: int) -> None:
        """Step 5: wait until every node is drained (one deadline for all); the rest fail."""
        deadline = self.clock() + timeout
        left = list(entries)
        last: Dict[str, str] = {}
        while left:
            still = []
            for e in left:
                try:
                    now = self._read(e)
                except _ERRORS as exc:
                    e.update(failed=True, msg=str(exc))
                    continue
                last[e["name"]] = now["state"]
                if not now["drained"]:
                    still.append(e)
            left = still
            if not left or self.clock() >= deadline:
                break
            self.sleep(1.0)
        for e in left:
            e.update(failed=True, msg="node %s still %s after %s s" % (e["node"], last.get(e["name"]), timeout))

    def _verify(self, e: Dict[str, Any]) -> None:
        """Step 6: what Slurm shows now."""
        try:
            now = self._read(e)
        except _ERRORS as exc:
            e["verify_error"] = str(exc)
            return
        e["verified"] = {
            "slurm_state": now["state"],
            "reason": now["reason"],
            "drained": now["drained"],
            "draining": now["draining"],
            "down": now["down"],
        }


def run_batch(
    sc: Scontrol, names: List[Tuple[str, str]], params: Dict[str, Any], check_mode: bool = False, **kw: Any
) -> Dict[str, Any]:
    """The module's result for a list of nodes: ``changed``, ``failed``, ``msg``, ``node_results``."""
    entries = Batch(sc, params, check_mode, **kw).run(names)
    errors = ["%s: %s" % (e["node"], e["msg"]) for e in entries if e["failed"]]
    errors += ["%s: read back: %s" % (e["node"], e["verify_error"]) for e in entries if e["verify_error"]]
    return {
        "changed": any(e["changed"] or e["cancelled"] for e in entries),
        "failed": bool(errors),
        "msg": "; ".join(errors) if errors else "%d node(s) %s" % (len(entries), params["state"]),
        "node_results": entries,
        "warnings": [w for e in entries for w in e["warnings"]],
    }
