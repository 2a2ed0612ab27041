# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The isolation blast-radius guard (docs/isolation.md).

Decides once per run, before any drain, which of the nodes a run wants to isolate it may isolate: the
result must not take more than a configured share or count of any partition, any rack or the whole cluster
out of service, counting the nodes that are already drained or down, the nodes another run has *claimed*
and not released yet, and the nodes gpuops isolated within ``window_s`` (default one hour) even when they
have been resumed since (a flapping node keeps counting).

``decide`` is pure. The store runs it (``state_store.DbStateStore.guard_and_claim``, issue 36) under the
database lock ``isolation-guard`` and, in the same transaction, records the allowed nodes as *claims* (table
``guard_claims``): from that moment they count for every other run, so two concurrent runs (an event-driven one
and an on-call one) cannot both pass the cap, whichever drains first. A claim counts until it is released
(``DbStateStore.release_claims``: ``done`` once the drain went through, after which Slurm's view and the flap
window count the node; ``failed`` when the drain did not happen, after which the claim counts for nothing), or
until it expires after ``claim_ttl_s`` (default 24 h) when its run died before releasing it. Neither depends on
``window_s``: ``window_s: 0`` turns off the flap window, never the cap. This module holds the rules and the
pieces the store composes (``claim_entries``, ``keep_s``, ``check_release``, ``mark_released``,
``release_answer``), and the reader of an older collection's ``<state_dir>/isolation/history.json``
(``load_history``; the store imports that file once).

The Slurm view is read in the same critical section: ``cluster`` may be a callable (the action passes its
``scontrol show node`` read), called once after the lock is taken, so every decision sees the drains of every run
that decided before it. That is what makes a ``done`` release safe: the claim is held from the decision until
Slurm shows the drain, and from then on the next run reads Slurm after the release (a view read before the lock
could predate another run's drain and let two runs pass the cap together; issue 35).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Union

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import severity_rank
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.state import StateError

LOCK_NAME = "isolation-guard"

DEFAULT_POLICY: Dict[str, Any] = {
    "max_share_partition": 0.25,
    "max_count_partition": None,
    "max_share_rack": 0.5,
    "max_count_rack": None,
    "max_share_cluster": 0.25,
    "max_count_cluster": None,
    "min_allowed": 1,  # a share that rounds down below this still allows this many (0: strict)
    "window_s": 3600,  # flap window: a node isolated this recently counts even when resumed since
    "claim_ttl_s": 86400,  # safety expiry of a claim its run never released (crashed); not the flap window
}

#: Claim states in the history. ``claimed``: counts until released or expired. ``done``: the drain went through
#: (Slurm's view counts the node; the flap window counts it after a resume). ``failed``: no drain happened.
CLAIMED, DONE, FAILED = "claimed", "done", "failed"
CLAIM_OUTCOMES = (DONE, FAILED)

_UNAVAILABLE_FLAGS = ("DRAIN", "DRAINED", "DRAINING", "DOWN", "FAIL", "FAILING", "MAINT", "REBOOT_REQUESTED")
_UNAVAILABLE_BASE = ("DOWN", "FUTURE", "FAIL")


class GuardError(Exception):
    """Bad guard input (policy values, target list)."""


#: The cluster view the guard decides on: ``{node: {partitions, rack, state}}``, or a callable that reads it now.
ClusterView = Union[Dict[str, Dict[str, Any]], Callable[[], Dict[str, Dict[str, Any]]]]


def read_cluster(cluster: ClusterView) -> Dict[str, Dict[str, Any]]:
    """The view itself, or what the callable reads now. The backends call it after taking the guard's lock."""
    view = cluster() if callable(cluster) else cluster
    if not isinstance(view, dict):
        raise GuardError("the cluster view must be a mapping node -> {partitions, rack, state}")
    return view


@dataclass(frozen=True)
class Claim:
    """Who claims the allowed nodes (``run_id``, ``ticket``) and whether to record the claims at all
    (``record=False``: decide only, as check mode does), waiting at most ``lock_timeout`` s for the lock."""

    run_id: str = ""
    ticket: str = ""
    record: bool = True
    lock_timeout: float = 60.0


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
    """Guard settings over the defaults; every bad value is refused with a GuardError naming the key.

    ``max_share_*``: a number in (0, 1], or null (no share limit for that scope). ``max_count_*``: an integer
    >= 0, or null. ``min_allowed`` and ``window_s``: integers >= 0. ``claim_ttl_s``: an integer > 0. Booleans,
    strings and fractional counts are refused, as are unknown keys (a typo must not silently drop a limit).
    """
    if policy is None:
        policy = {}
    if not isinstance(policy, dict):
        raise GuardError("guard settings must be a mapping, got %s" % type(policy).__name__)
    out = dict(DEFAULT_POLICY)
    for key, value in policy.items():
        if key not in DEFAULT_POLICY:
            raise GuardError("unknown guard setting %r (known: %s)" % (key, ", ".join(sorted(DEFAULT_POLICY))))
        nullable = key.startswith("max_")
        if value is None and nullable:
            out[key] = None
            continue
        if key.startswith("max_share"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise GuardError("guard setting %s must be a number in (0, 1] or null, got %r" % (key, value))
            if not (0 < float(value) <= 1):  # NaN fails this too
                raise GuardError("guard setting %s must be in (0, 1], got %r" % (key, value))
            out[key] = float(value)
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise GuardError(
                "guard setting %s must be an integer%s, got %r" % (key, " or null" if nullable else "", value)
            )
        low = 1 if key == "claim_ttl_s" else 0
        if value < low:
            raise GuardError("guard setting %s must be >= %d, got %r" % (key, low, value))
        out[key] = value
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


def _entry_time(entry: Any) -> Optional[float]:
    try:
        when = float(entry.get("time"))
    except (TypeError, ValueError, AttributeError):
        return None
    return when if math.isfinite(when) else None


def recent_nodes(history: Iterable[Dict[str, Any]], now: float, window_s: float) -> List[str]:
    """Nodes gpuops isolated (or claimed) within the flap window before ``now`` (failed claims excepted)."""
    out = set()
    for entry in history or []:
        when = _entry_time(entry)
        if when is None or not isinstance(entry.get("node"), str) or entry.get("state") == FAILED:
            continue
        if now - window_s <= when <= now + 60:
            out.add(entry["node"])
    return sorted(out)


def claimed_nodes(history: Iterable[Dict[str, Any]], now: float, ttl_s: float) -> List[str]:
    """Nodes with a claim not yet released (state ``claimed``, or none in an older history) and not older than
    the safety TTL. Independent of the flap window. A claim time in the future (clock step) counts too."""
    out = set()
    for entry in history or []:
        when = _entry_time(entry)
        if when is None or not isinstance(entry.get("node"), str):
            continue
        if entry.get("state", CLAIMED) == CLAIMED and now - when < ttl_s:
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
    cluster (Slurm's view plus the rack from the inventory). ``history``: ``[{node, time (epoch), state}]`` of
    earlier gpuops claims and isolations (see ``claimed_nodes`` / ``recent_nodes``). Targets are taken worst severity
    first; each is allowed only if, counting it,
    every scope it belongs to stays within its limit. Returns ``{allowed, already_isolated,
    refused_by_guard: [{node, reason}], overridden, would_refuse, limits, out_of_service, recently_isolated,
    claimed}``.
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
    flapping = set(recent_nodes(history or [], now, pol["window_s"])) & set(cluster)
    claimed = set(claimed_nodes(history or [], now, pol["claim_ttl_s"])) & set(cluster)
    counted = out_now | flapping | claimed

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
        "claimed": sorted(claimed),
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
    path = history_path(state_dir)
    try:
        with open(path, "rb") as fh:
            data = _safejson.loads(fh.read(), what="isolation history")  # nested too deep: a ValueError
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise StateError("cannot read isolation history %s: %s" % (path, exc)) from exc
    entries = data.get("entries") if isinstance(data, dict) else None
    return [e for e in entries or [] if isinstance(e, dict)]


def keep_s(pol: Dict[str, Any]) -> float:
    """How long the history keeps an entry: the longest of the flap window, the claim TTL and a day."""
    return max(pol["window_s"], pol["claim_ttl_s"], 86400)


def claim_entries(allowed: Iterable[str], claim: Claim, t: float, override_reason: str = "") -> List[Dict[str, Any]]:
    """The history entries (state ``claimed``) that record ``claim``'s allowed nodes at time ``t``."""
    out = []
    for node in allowed:
        entry = {"node": node, "time": t, "run_id": claim.run_id, "ticket": claim.ticket, "state": CLAIMED}
        if override_reason:
            entry["override_reason"] = override_reason
        out.append(entry)
    return out


def check_release(run_id: Any, outcomes: Any) -> None:
    """Refuse a release without a run id, or with an outcome other than done/failed (GuardError)."""
    if not isinstance(run_id, str) or not run_id:
        raise GuardError("releasing claims needs the run_id that made them")
    if not isinstance(outcomes, dict):
        raise GuardError("outcomes must be a mapping node -> done|failed")
    for node, outcome in outcomes.items():
        if not isinstance(node, str) or not node or outcome not in CLAIM_OUTCOMES:
            raise GuardError("bad claim outcome %r -> %r (done or failed)" % (node, outcome))


def mark_released(history: List[Dict[str, Any]], run_id: str, outcomes: Dict[str, str], t: float) -> Dict[str, str]:
    """Set the outcome on ``run_id``'s open claims of the nodes in ``outcomes`` (in place); returns them."""
    released: Dict[str, str] = {}
    for entry in history:
        node = entry.get("node")
        open_claim = entry.get("run_id") == run_id and entry.get("state", CLAIMED) == CLAIMED
        if open_claim and isinstance(node, str) and node in outcomes:
            entry["state"] = outcomes[node]
            entry["released_at"] = t
            released[node] = outcomes[node]
    return released


def release_answer(released: Dict[str, str], outcomes: Dict[str, str]) -> Dict[str, Any]:
    return {"released": released, "not_claimed": sorted(n for n in outcomes if n not in released)}
