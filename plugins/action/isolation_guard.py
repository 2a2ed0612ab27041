# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.isolation_guard: the blast-radius decision and its claims (docs/isolation.md).

``action: decide`` runs the store's ``guard_and_claim`` (store/state_store.py: one decision under the
``isolation-guard`` lock; the allowed nodes are claimed at once), ``action: release`` its ``release_claims`` once
the back end ran. Check mode decides and reports but claims and writes nothing.

The decision's Slurm view is read here, inside the guard's critical section: ``scontrol show node`` runs
through the task's connection (the role delegates the task to the Slurm controller, as its other ``scontrol``
calls) after the lock is taken, never in an earlier task whose view could predate another run's drain.
"""

from __future__ import annotations

import contextlib
import shlex

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm import parse_show_node
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import guard as _guard
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state_store as _state_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change.outcome import controller_user
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.state import StateError


@contextlib.contextmanager
def _opened(p):
    """The claims' backend: the store when db_url (gpuops_db_url) is set, else the state directory."""
    store = _state_store.open_state(p["state_dir"], p["db_url"], need="the guard")
    try:
        yield store
    finally:
        store.close()


def _decide(p, check_mode, read_slurm):
    """``read_slurm()``: the text of ``scontrol show node``, called once, under the guard's lock (not in check
    mode, which takes no lock)."""

    def cluster():
        nodes = parse_show_node(read_slurm(), "scontrol show node")
        # Slurm's names back to the inventory's (gpuops_slurm_node_name), so targets, racks and claims agree
        back = {str(v): str(k) for k, v in (p["slurm_names"] or {}).items() if v and str(v) != str(k)}
        if back:
            nodes = [dict(n, name=back.get(n.get("name"), n.get("name"))) for n in nodes]
        return _guard.cluster_from_slurm(nodes, p["racks"])

    claim = _guard.Claim(
        run_id=p["run_id"] or "", ticket=p["ticket"], record=not check_mode, lock_timeout=p["lock_timeout"]
    )
    with _opened(p) as store:
        result = store.guard_and_claim(
            _guard.targets_from_findings(p["nodes"], p["findings"]),
            cluster,  # read by the store once it holds the lock
            policy=p["policy"],
            override_reason=p["override_reason"],
            claim=claim,
        )
    before = sorted(result["claimed"])
    after = sorted(set(before) | set(result["allowed"]))
    result["changed"] = after != before
    result["diff"] = {"before": {"claimed": before}, "after": {"claimed": after}}
    result["operator"] = controller_user()  # the marker's "who" when no operator is named
    return result


def _release(p, check_mode):
    outcomes = {node: _guard.FAILED for node in p["failed"]}
    for node in p["done"]:
        if node in outcomes:
            raise StepError("node %s is both done and failed" % node)
        outcomes[node] = _guard.DONE
    with _opened(p) as store:
        result = store.release_claims(p["run_id"], outcomes, lock_timeout=p["lock_timeout"], write=not check_mode)
    released = result["released"]
    result["changed"] = bool(released)
    result["diff"] = {
        "before": {"claims": {node: _guard.CLAIMED for node in sorted(released)}},
        "after": {"claims": dict(sorted(released.items()))},
    }
    return result


class ActionModule(ControllerAction):
    NAME = "isolation_guard"
    _requires_connection = True  # scontrol show node runs on the Slurm controller (the task's delegate)
    ARGUMENT_SPEC = dict(
        action=dict(type="str", choices=["decide", "release"], default="decide"),
        state_dir=dict(type="path", required=True),
        db_url=dict(type="str"),
        run_id=dict(type="str"),
        nodes=dict(type="list", elements="str"),
        findings=dict(type="list", elements="raw", default=[]),
        scontrol_path=dict(type="str", default="scontrol"),
        racks=dict(type="dict", default={}),
        slurm_names=dict(type="dict", default={}),
        policy=dict(type="dict", default={}),
        override_reason=dict(type="str", default=""),
        ticket=dict(type="str", default=""),
        done=dict(type="list", elements="str", default=[]),
        failed=dict(type="list", elements="str", default=[]),
        lock_timeout=dict(type="float", default=60.0),
    )
    REQUIRED_IF = [("action", "decide", ["nodes"]), ("action", "release", ["run_id"])]

    def _scontrol_show_node(self, scontrol_path):
        """``scontrol show node`` on the task's host (read-only: it runs in check mode too); its stdout."""
        cmd = "LC_ALL=C " + shlex.join([scontrol_path, "show", "node"])
        res = self._low_level_execute_command(cmd, sudoable=True)
        if res.get("rc") != 0:  # nothing decided or claimed; the tool's own words in msg and stderr
            said = " ".join(str(res.get("stderr") or res.get("stdout") or "").split())[:300]
            raise StepError(
                "isolation guard: %s failed (rc %s): %s" % (cmd, res.get("rc"), said or "no output"),
                rc=res.get("rc"),
                stderr=res.get("stderr") or "",
            )
        return res.get("stdout") or ""

    def step(self, args, check_mode, task_vars):
        try:
            if args["action"] == "release":
                result = _release(args, check_mode)
            elif not args["scontrol_path"]:
                raise _guard.GuardError("scontrol_path must not be empty")
            else:
                result = _decide(args, check_mode, lambda: self._scontrol_show_node(args["scontrol_path"]))
        except (_guard.GuardError, StateError, ParseError) as exc:
            raise StepError("isolation guard: %s" % exc) from exc
        if not self._task.diff:
            result.pop("diff")
        return result
