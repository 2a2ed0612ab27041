# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The isolation blast-radius guard (docs/isolation.md).

Decides once per run, before any drain, which of the nodes a run wants to isolate it may isolate: the
result must not take more than a configured share or count of any partition, any rack or the whole cluster
out of service, counting the nodes that are already drained or down and the nodes gpuops isolated within a
window (default one hour) even when they have been resumed since (a flapping node keeps counting).

``decide`` is pure. ``guard_and_claim`` runs it under ``StateLock(state_dir, "isolation-guard")`` and, in the
same critical section, records the allowed nodes in ``<state_dir>/isolation/history.json`` as *claims*: from
that moment they count for every other run, so two concurrent runs (an event-driven one and an on-call one)
cannot both pass the cap, whichever drains first.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._state import (
    StateError,
    StateLock,
    atomic_write_json,
)

HISTORY_SCHEMA = "gpuops.isolation-history/v1"
LOCK_NAME = "isolation-guard"

DEFAULT_POLICY: Dict[str, Any] = {
    "max_share_partition": 0.25,
    "max_count_partition": None,
    "max_share_rack": 0.5,
    "max_count_rack": None,
    "max_share_cluster": 0.25,
    "max_count_cluster": None,
    "min_allowed": 1,  # a share that rounds down below this still allows this many (0: strict)
    "window_s": 3600,
}

_SEVERITY_RANK = {"P0": 0, "P1": 1, "P2": 2, "P3": 3}
_UNAVAILABLE_FLAGS = ("DRAIN", "DRAINED", "DRAINING", "DOWN", "FAIL", "FAILING", "MAINT", "REBOOT_REQUESTED")
_UNAVAILABLE_BASE = ("DOWN", "FUTURE", "FAIL")


class GuardError(Exception):
    """Bad guard input (policy values, target list)."""


def severity_rank(severity: Any) -> int:
    return _SEVERITY_RANK.get(str(severity).upper() if severity is not None else "", 9)


def slurm_unavailable(state: Optional[str]) -> bool:
    """True when a Slurm node state means the node is out of service (drained, draining, down, failed)."""
    if not state:
        return False
    s = str(state).upper().replace("*", "").replace("~", "").replace("#", "").replace("%", "")
    parts = [p for p in s.split("+") if p]
    if not parts:
        return False
    if parts[0] in _UNAVAILABLE_BASE or parts[0] in ("DRAINED", "DRAINING"):
        return True
    return any(p in _UNAVAILABLE_FLAGS for p in parts[1:])


def normalize_policy(policy: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    out = dict(DEFAULT_POLICY)
    for key, value in (policy or {}).items():
        if key not in DEFAULT_POLICY:
            raise GuardError("unknown guard setting %r (known: %s)" % (key, ", ".join(sorted(DEFAULT_POLICY))))
        if value is None or value == "":
            out[key] = None
            continue
        try:
            num = float(value)
        except (TypeError, ValueError):
            raise GuardError("guard setting %s must be a number, got %r" % (key, value)) from None
        if math.isnan(num) or num < 0 or (key.startswith("max_share") and num > 1):
            raise GuardError("guard setting %s out of range: %r" % (key, value))
        out[key] = num if key.startswith("max_share") else int(num)
    return out


def normalize_targets(targets: Iterable[Any]) -> List[Dict[str, Any]]:
    """Targets as ``[{node, severity}]``: names, or dicts with ``node``/``name`` and an optional ``severity``."""
    if isinstance(targets, (str, bytes, dict)):
        raise GuardError("targets must be a list, got %s" % type(targets).__name__)
    out: List[Dict[str, Any]] = []
    seen = set()
    for t in targets or []:
        if isinstance(t, str):
            node, sev = t, None
        elif isinstance(t, dict):
            node, sev = t.get("node") or t.get("name"), t.get("severity")
        else:
            raise GuardError("a target must be a node name or a dict with node, got %r" % (t,))
        if not isinstance(node, str) or not node:
            raise GuardError("target without a node name: %r" % (t,))
        if node in seen:
            continue
        seen.add(node)
        out.append({"node": node, "severity": sev})
    out.sort(key=lambda t: (severity_rank(t["severity"]), t["node"]))
    return out


def targets_from_findings(nodes: Iterable[str], findings: Optional[Iterable[Any]]) -> List[Dict[str, Any]]:
    """``[{node, severity}]``: each node with the worst severity of its own findings (None without any)."""
    worst: Dict[str, Any] = {}
    for f in findings or []:
        if not isinstance(f, dict) or not isinstance(f.get("host"), str):
            continue
        sev = f.get("severity")
        if f["host"] not in worst or severity_rank(sev) < severity_rank(worst[f["host"]]):
            worst[f["host"]] = sev
    if isinstance(nodes, (str, bytes)):
        raise GuardError("nodes must be a list of names")
    return [{"node": n, "severity": worst.get(n)} for n in nodes or []]


def _limit(size: int, share: Optional[float], count: Optional[int], min_allowed: int) -> Optional[int]:
    limits = []
    if share is not None:
        limits.append(max(int(math.floor(size * share + 1e-9)), min(min_allowed, size)))
    if count is not None:
        limits.append(count)
    return min(limits) if limits else None


def recent_nodes(history: Iterable[Dict[str, Any]], now: float, window_s: float) -> List[str]:
    """Nodes gpuops isolated (or claimed) within the window before ``now``."""
    out = set()
    for entry in history or []:
        try:
            when = float(entry.get("time"))
        except (TypeError, ValueError, AttributeError):
            continue
        if now - window_s <= when <= now + 60 and isinstance(entry.get("node"), str):
            out.add(entry["node"])
    return sorted(out)


def decide(
    targets: Iterable[Any],
    cluster: Dict[str, Dict[str, Any]],
    history: Optional[Iterable[Dict[str, Any]]] = None,
    policy: Optional[Dict[str, Any]] = None,
    now: Optional[float] = None,
    override_reason: str = "",
) -> Dict[str, Any]:
    """Decide which targets may be isolated.

    ``cluster``: ``{node: {partitions: [..], rack: str|None, state: "IDLE+DRAIN"}}`` for every node of the
    cluster (Slurm's view plus the rack from the inventory). ``history``: ``[{node, time (epoch)}]`` of
    earlier gpuops isolations. Targets are taken worst severity first; each is allowed only if, counting it,
    every scope it belongs to stays within its limit. Returns ``{allowed, already_isolated,
    refused_by_guard: [{node, reason}], overridden, would_refuse, limits, out_of_service}``.
    """
    pol = normalize_policy(policy)
    now = time.time() if now is None else float(now)
    tlist = normalize_targets(targets)
    cluster = cluster or {}
    min_allowed = int(pol["min_allowed"] or 0)

    scopes: Dict[str, List[str]] = {"cluster": sorted(cluster)}
    for name, info in cluster.items():
        for part in info.get("partitions") or []:
            scopes.setdefault("partition:%s" % part, []).append(name)
        if info.get("rack"):
            scopes.setdefault("rack:%s" % info["rack"], []).append(name)
    limits: Dict[str, Optional[int]] = {}
    for scope, members in scopes.items():
        kind = scope.split(":", 1)[0]
        limits[scope] = _limit(len(members), pol["max_share_" + kind], pol["max_count_" + kind], min_allowed)

    out_now = {n for n, info in cluster.items() if slurm_unavailable(info.get("state"))}
    flapping = set(recent_nodes(history or [], now, pol["window_s"] or 0)) & set(cluster)
    counted = out_now | flapping

    def scopes_of(node: str) -> List[str]:
        info = cluster.get(node) or {}
        s = ["cluster"] + ["partition:%s" % p for p in info.get("partitions") or []]
        if info.get("rack"):
            s.append("rack:%s" % info["rack"])
        return s

    allowed: List[str] = []
    already: List[str] = []
    refused: List[Dict[str, str]] = []
    would_refuse: List[Dict[str, str]] = []
    for t in tlist:
        node = t["node"]
        if node not in cluster:
            refused.append({"node": node, "reason": "not a node of the cluster (unknown to Slurm)"})
            continue
        if node in out_now:
            already.append(node)
            continue
        trial = counted | {node}
        over = []
        for scope in scopes_of(node):
            lim = limits.get(scope)
            if lim is None:
                continue
            n = len(trial & set(scopes[scope]))
            if n > lim:
                over.append(
                    "%s would have %d of %d nodes out of service (limit %d)" % (scope, n, len(scopes[scope]), lim)
                )
        if over:
            msg = "blast-radius guard: " + "; ".join(over)
            if override_reason:
                would_refuse.append({"node": node, "reason": msg})
            else:
                refused.append({"node": node, "reason": msg})
                continue
        allowed.append(node)
        counted = trial
    return {
        "allowed": allowed,
        "already_isolated": already,
        "refused_by_guard": refused,
        "overridden": bool(override_reason) and bool(would_refuse),
        "override_reason": override_reason or None,
        "would_refuse": would_refuse,
        "limits": dict(sorted(limits.items())),
        "out_of_service": sorted(out_now),
        "recently_isolated": sorted(flapping),
    }


def cluster_from_slurm(nodes: Iterable[Dict[str, Any]], racks: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The guard's cluster view from ``_slurm_parse.parse_show_node`` records plus ``{node: rack}``."""
    racks = racks or {}
    out: Dict[str, Any] = {}
    for n in nodes or []:
        name = n.get("name")
        if not name:
            continue
        out[name] = {"partitions": list(n.get("partitions") or []), "rack": racks.get(name), "state": n.get("state")}
    return out


def history_path(state_dir: str) -> str:
    return os.path.join(state_dir, "isolation", "history.json")


def load_history(state_dir: str) -> List[Dict[str, Any]]:
    import json

    path = history_path(state_dir)
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read().decode("utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise StateError("cannot read isolation history %s: %s" % (path, exc)) from exc
    entries = data.get("entries") if isinstance(data, dict) else None
    return [e for e in entries or [] if isinstance(e, dict)]


def prune_history(history: Iterable[Dict[str, Any]], now: float, keep_s: float) -> List[Dict[str, Any]]:
    out = []
    for e in history:
        try:
            if float(e.get("time")) >= now - keep_s:
                out.append(e)
        except (TypeError, ValueError):
            continue
    return out


def guard_and_claim(
    state_dir: str,
    targets: Iterable[Any],
    cluster: Dict[str, Dict[str, Any]],
    policy: Optional[Dict[str, Any]] = None,
    override_reason: str = "",
    run_id: str = "",
    ticket: str = "",
    claim: bool = True,
    lock_timeout: float = 60.0,
    now: Optional[float] = None,
) -> Dict[str, Any]:
    """``decide`` under the isolation-guard lock, recording the allowed nodes as claims in the same
    critical section (skipped with ``claim=False``, e.g. in check mode)."""
    pol = normalize_policy(policy)
    with StateLock(state_dir, LOCK_NAME, timeout=lock_timeout):
        t = time.time() if now is None else float(now)
        history = load_history(state_dir)
        result = decide(targets, cluster, history, pol, t, override_reason)
        if claim and result["allowed"]:
            history = prune_history(history, t, max(pol["window_s"] or 0, 86400))
            for node in result["allowed"]:
                history.append({"node": node, "time": t, "run_id": run_id, "ticket": ticket})
            atomic_write_json(history_path(state_dir), {"schema": HISTORY_SCHEMA, "entries": history})
    return result
