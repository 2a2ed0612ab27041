# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Batch planner for rolling, disruptive node work (firmware/driver upgrades): a pure, deterministic function.

``plan_batches(nodes, constraints)`` orders the nodes that need work into batches so that no batch takes more
than a share of any partition offline (nodes already drained or down count against it), no batch holds more
than N nodes of one rack / leaf switch / power domain, a small canary batch goes first, and batches that no
longer fit the maintenance window are not planned (``deferred``). See docs/upgrades.md.

``plan_hosts(hosts, ...)`` is the whole upgrade plan of gpuops.cluster.upgrade_plan: per host the steps to its
baseline (``_upgrade.plan_node``), the hosts blocked or at target, and the batches of the others.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils.upgrade import plan as _upgrade

STATES = ("idle", "drained", "down", "allocated")
#: Slurm base states / flags mapped onto the four planner states.
_SLURM_STATE = {
    "idle": "idle",
    "mixed": "allocated",
    "allocated": "allocated",
    "alloc": "allocated",
    "mix": "allocated",
    "completing": "allocated",
    "down": "down",
    "drained": "drained",
    "draining": "drained",
    "drain": "drained",
    "fail": "down",
    "failing": "drained",
    "maint": "drained",
    "reserved": "allocated",
    "future": "down",
    "unknown": "down",
    "no_respond": "down",
    "not_responding": "down",
    "power_down": "down",
    "powered_down": "down",
    "powering_down": "down",
}
NODE_KEYS = frozenset(
    ("name", "partition", "rack", "leaf", "power", "est_duration_s", "state", "priority", "upgrade", "class")
)
CONSTRAINT_KEYS = frozenset(
    (
        "max_offline_share",
        "max_per_rack",
        "max_per_leaf",
        "max_per_power",
        "canary_size",
        "max_batch_size",
        "window_s",
        "batch_overhead_s",
        "partition_sizes",
        "include_down",
    )
)
DEFAULTS: Dict[str, Any] = {
    "max_offline_share": 0.1,
    "max_per_rack": 1,
    "max_per_leaf": None,
    "max_per_power": None,
    "canary_size": 1,
    "max_batch_size": None,
    "window_s": None,
    "batch_overhead_s": 0,
    "partition_sizes": {},
    "include_down": False,
}
#: Unknown rack/leaf/power: all such nodes share one domain (conservative), named like this.
UNKNOWN = "(unknown)"
#: Order of work by state: drained nodes cost no extra capacity, idle ones no jobs, allocated ones need a drain.
_STATE_RANK = {"drained": 0, "down": 1, "idle": 2, "allocated": 3}


class PlanError(ValueError):
    """Invalid planner input; ``key`` names the offending key (``nodes[3].state``, ``constraints.max_per_rack``)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__("%s: %s" % (key, message))
        self.key = key
        self.message = message


def slurm_state(state: Any) -> Optional[str]:
    """Map a Slurm state as printed (``IDLE+DRAIN``, ``MIXED``, ``DOWN*``, ``ALLOCATED+DRAIN``) to a planner state.

    DOWN wins over DRAIN, DRAIN over the base state (a draining node is offline for new work).
    """
    if not isinstance(state, str) or not state.strip():
        return None
    parts = [p.strip().strip("*~#!%$@^-").lower() for p in state.replace("|", "+").split("+")]
    mapped = [_SLURM_STATE.get(p) for p in parts if p]
    for wanted in ("down", "drained", "allocated", "idle"):
        if wanted in mapped:
            return wanted
    return None


def _nonneg_int(value: Any, key: str, allow_none: bool = True) -> Optional[int]:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PlanError(key, "must be an integer >= 0, got %r" % (value,))
    return value


def _number(value: Any, key: str, allow_none: bool = True) -> Optional[float]:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or not math.isfinite(value):
        raise PlanError(key, "must be a finite number >= 0, got %r" % (value,))
    return float(value)


def check_constraints(constraints: Any) -> Dict[str, Any]:
    """Defaults merged with ``constraints``; unknown keys and bad values raise PlanError naming the key."""
    if constraints is None:
        constraints = {}
    if not isinstance(constraints, dict):
        raise PlanError("constraints", "must be a mapping")
    for k in sorted(constraints, key=str):
        if k not in CONSTRAINT_KEYS:
            raise PlanError("constraints.%s" % k, "unknown key (known: %s)" % ", ".join(sorted(CONSTRAINT_KEYS)))
    c = dict(DEFAULTS)
    c.update(constraints)
    share = c["max_offline_share"]
    shares = share if isinstance(share, dict) else {"default": share}
    clean_shares = {}
    for p, s in shares.items():
        v = _number(s, "constraints.max_offline_share" + ("" if not isinstance(share, dict) else ".%s" % p), False)
        if v is None or v > 1:
            raise PlanError("constraints.max_offline_share", "a share is between 0 and 1, got %r" % (s,))
        clean_shares[str(p)] = v
    clean_shares.setdefault("default", DEFAULTS["max_offline_share"])
    c["max_offline_share"] = clean_shares
    for k in ("max_per_rack", "max_per_leaf", "max_per_power", "max_batch_size"):
        c[k] = _nonneg_int(c[k], "constraints.%s" % k)
        if c[k] == 0:
            raise PlanError("constraints.%s" % k, "0 would plan nothing; use null for no limit")
    c["canary_size"] = _nonneg_int(c["canary_size"], "constraints.canary_size", False)
    c["window_s"] = _number(c["window_s"], "constraints.window_s")
    c["batch_overhead_s"] = _number(c["batch_overhead_s"], "constraints.batch_overhead_s", False)
    sizes = c["partition_sizes"] or {}
    if not isinstance(sizes, dict):
        raise PlanError("constraints.partition_sizes", "must be a mapping partition -> node count")
    c["partition_sizes"] = {
        str(p): _nonneg_int(n, "constraints.partition_sizes.%s" % p, False) for p, n in sizes.items()
    }
    if not isinstance(c["include_down"], bool):
        raise PlanError("constraints.include_down", "must be true or false")
    return c


def _node_state(n: Dict[str, Any], key: str) -> str:
    state = n.get("state") or "idle"
    if state in STATES:
        return state
    mapped = slurm_state(state)
    if mapped is None:
        raise PlanError("%s.state" % key, "must be one of %s, got %r" % (", ".join(STATES), state))
    return mapped


def _node_partitions(n: Dict[str, Any], key: str) -> List[str]:
    parts = n.get("partition")
    if parts is None or parts == []:
        return [UNKNOWN]
    if isinstance(parts, str):
        return [p for p in parts.split(",") if p] or [UNKNOWN]
    if isinstance(parts, list) and all(isinstance(p, str) for p in parts):
        return sorted(set(parts))
    raise PlanError("%s.partition" % key, "must be a string or a list of strings")


def _check_node(i: int, n: Any, seen: set) -> Dict[str, Any]:
    key = "nodes[%d]" % i
    if not isinstance(n, dict):
        raise PlanError(key, "must be a mapping")
    if isinstance(n.get("name"), str) and n["name"]:
        key = "nodes[%d](%s)" % (i, n["name"])
    for k in sorted(n, key=str):
        if k not in NODE_KEYS:
            raise PlanError("%s.%s" % (key, k), "unknown key (known: %s)" % ", ".join(sorted(NODE_KEYS)))
    name = n.get("name")
    if not isinstance(name, str) or not name:
        raise PlanError("%s.name" % key, "must be a non-empty string")
    if name in seen:
        raise PlanError("%s.name" % key, "duplicate node %r" % name)
    seen.add(name)
    state = _node_state(n, key)
    parts = _node_partitions(n, key)
    prio = n.get("priority", 0)
    if prio is None:
        prio = 0
    if isinstance(prio, bool) or not isinstance(prio, (int, float)) or not math.isfinite(prio):
        raise PlanError("%s.priority" % key, "must be a number (higher goes earlier)")
    upgrade = n.get("upgrade", True)
    if not isinstance(upgrade, bool):
        raise PlanError("%s.upgrade" % key, "must be true or false")
    return {
        "name": name,
        "partitions": parts,
        "rack": str(n["rack"]) if n.get("rack") is not None else UNKNOWN,
        "leaf": str(n["leaf"]) if n.get("leaf") is not None else UNKNOWN,
        "power": str(n["power"]) if n.get("power") is not None else UNKNOWN,
        "est_duration_s": _number(n.get("est_duration_s", 0), "%s.est_duration_s" % key, False),
        "state": state,
        "priority": prio,
        "upgrade": upgrade,
    }


def _check_nodes(nodes: Any) -> List[Dict[str, Any]]:
    if not isinstance(nodes, list):
        raise PlanError("nodes", "must be a list of node mappings")
    seen: set = set()
    return [_check_node(i, n, seen) for i, n in enumerate(nodes)]


class _Rollout:
    """The state of one planning run: capacity per partition, the candidates, the batches built so far."""

    def __init__(self, all_nodes: List[Dict[str, Any]], c: Dict[str, Any]) -> None:
        self.c = c
        self.all_nodes = all_nodes
        # capacity per partition: the nodes we know of, or the declared size if larger
        self.total: Dict[str, int] = {}
        self.pre_offline: Dict[str, int] = {}
        for n in all_nodes:
            for p in n["partitions"]:
                self.total[p] = self.total.get(p, 0) + 1
                if n["state"] in ("drained", "down"):
                    self.pre_offline[p] = self.pre_offline.get(p, 0) + 1
        for p, size in c["partition_sizes"].items():
            if p in self.total and size > self.total[p]:
                self.total[p] = size
        self.cap = {p: int(math.floor(self.share_of(p) * self.total[p] + 1e-9)) for p in self.total}
        self.deferred: List[Dict[str, Any]] = []
        self.cands: List[Dict[str, Any]] = []
        for n in all_nodes:
            if not n["upgrade"]:
                continue
            if n["state"] == "down" and not c["include_down"]:
                self.deferred.append({"name": n["name"], "reason": "node is down (set include_down to plan it anyway)"})
                continue
            self.cands.append(n)
        # rack load (share of allocated nodes, all nodes counted) picks the canary's rack
        self.rack_nodes: Dict[str, int] = {}
        self.rack_alloc: Dict[str, int] = {}
        for n in all_nodes:
            self.rack_nodes[n["rack"]] = self.rack_nodes.get(n["rack"], 0) + 1
            if n["state"] == "allocated":
                self.rack_alloc[n["rack"]] = self.rack_alloc.get(n["rack"], 0) + 1
        self.remaining_in_rack: Dict[str, int] = {}
        for n in self.cands:
            self.remaining_in_rack[n["rack"]] = self.remaining_in_rack.get(n["rack"], 0) + 1
        self.limits = (("rack", c["max_per_rack"]), ("leaf", c["max_per_leaf"]), ("power", c["max_per_power"]))
        self.batches: List[Dict[str, Any]] = []
        self.elapsed = 0.0

    def share_of(self, p: str) -> float:
        return self.c["max_offline_share"].get(p, self.c["max_offline_share"]["default"])

    def rack_load(self, r: str) -> float:
        return self.rack_alloc.get(r, 0) / float(self.rack_nodes.get(r, 1))

    def time_left(self) -> Optional[float]:
        return None if self.c["window_s"] is None else self.c["window_s"] - self.elapsed

    def fresh_offline(self) -> Dict[str, int]:
        return dict((p, self.pre_offline.get(p, 0)) for p in self.total)

    def blocker(self, n: Dict[str, Any], counts: Dict[Tuple[str, str], int], offline: Dict[str, int]) -> Optional[str]:
        """Why ``n`` cannot join the batch being built (None: it can)."""
        for dom, lim in self.limits:
            if lim is not None and counts.get((dom, n[dom]), 0) >= lim:
                return "%s %s already has %d node(s) in the batch (max_per_%s: %d)" % (dom, n[dom], lim, dom, lim)
        if n["state"] in ("idle", "allocated"):  # drained/down nodes are offline already
            for p in n["partitions"]:
                if offline[p] + 1 > self.cap[p]:
                    return "partition %s: %d of %d node(s) would be offline, max_offline_share %s allows %d" % (
                        p,
                        offline[p] + 1,
                        self.total[p],
                        self.share_of(p),
                        self.cap[p],
                    )
        return None

    def order(self, canary: bool) -> List[Dict[str, Any]]:
        if canary:
            return sorted(
                self.cands,
                key=lambda n: (
                    n["state"] != "idle",  # a drained node may be broken: a poor canary
                    self.rack_load(n["rack"]),
                    n["rack"],
                    -n["priority"],
                    _STATE_RANK[n["state"]],
                    n["name"],
                ),
            )
        return sorted(
            self.cands,
            key=lambda n: (
                -n["priority"],
                _STATE_RANK[n["state"]],
                -self.remaining_in_rack[n["rack"]],
                n["rack"],
                n["name"],
            ),
        )

    def fill(self, canary: bool) -> Tuple[List[Dict[str, Any]], Dict[str, int]]:
        """The next batch (possibly empty) and the partitions' offline counts with it."""
        size_limit = self.c["canary_size"] if canary else self.c["max_batch_size"]
        left, overhead = self.time_left(), self.c["batch_overhead_s"]
        counts: Dict[Tuple[str, str], int] = {}
        offline = self.fresh_offline()
        batch: List[Dict[str, Any]] = []
        for n in self.order(canary):
            if size_limit is not None and len(batch) >= size_limit:
                break
            if left is not None and n["est_duration_s"] + overhead > left:
                continue
            if self.blocker(n, counts, offline) is not None:
                continue
            batch.append(n)
            for dom, _lim in self.limits:
                counts[(dom, n[dom])] = counts.get((dom, n[dom]), 0) + 1
            if n["state"] in ("idle", "allocated"):
                for p in n["partitions"]:
                    offline[p] += 1
        return batch, offline

    def add(self, batch: List[Dict[str, Any]], offline: Dict[str, int], canary: bool) -> None:
        duration = max(n["est_duration_s"] for n in batch) + self.c["batch_overhead_s"]
        self.elapsed += duration
        names = {n["name"] for n in batch}
        self.cands = [n for n in self.cands if n["name"] not in names]
        for n in batch:
            self.remaining_in_rack[n["rack"]] -= 1
        touched = sorted({p for n in batch for p in n["partitions"]})
        total = self.total
        self.batches.append(
            {
                "index": len(self.batches),
                "canary": canary,
                "hosts": [n["name"] for n in batch],
                "est_duration_s": duration,
                "ends_at_s": self.elapsed,
                "offline": {p: offline[p] for p in touched},
                "online_share": {p: round(1.0 - offline[p] / float(total[p]), 4) if total[p] else 1.0 for p in touched},
            }
        )

    def roll(self) -> None:
        while self.cands:
            canary = not self.batches and self.c["canary_size"] > 0
            batch, offline = self.fill(canary)
            if not batch:
                break
            self.add(batch, offline, canary)

    def defer_rest(self) -> None:
        """Whatever is left could not be placed: say why, node by node."""
        left, overhead = self.time_left(), self.c["batch_overhead_s"]
        for n in sorted(self.cands, key=lambda n: n["name"]):
            if left is not None and n["est_duration_s"] + overhead > left:
                reason = "window: needs %ds, %ds of the window left after %d batch(es)" % (
                    int(math.ceil(n["est_duration_s"] + overhead)),
                    int(max(left, 0)),
                    len(self.batches),
                )
            else:
                reason = self.blocker(n, {}, self.fresh_offline()) or "no batch could take it"
            self.deferred.append({"name": n["name"], "reason": reason})
        self.deferred.sort(key=lambda d: d["name"])

    def stats(self, ordered: List[str]) -> Dict[str, Any]:
        total = self.total
        min_share: Dict[str, float] = {}
        for b in self.batches:
            for p, s in b["online_share"].items():
                min_share[p] = min(min_share.get(p, 1.0), s)
        by_name = {n["name"]: n for n in self.all_nodes}
        per_rack_max = 0
        for b in self.batches:
            racks: Dict[str, int] = {}
            for h in b["hosts"]:
                r = by_name[h]["rack"]
                racks[r] = racks.get(r, 0) + 1
            per_rack_max = max([per_rack_max] + list(racks.values()))
        return {
            "batches": len(self.batches),
            "planned": len(ordered),
            "deferred": len(self.deferred),
            "est_total_s": self.elapsed,
            "window_s": self.c["window_s"],
            "capacity": {p: total[p] for p in sorted(total)},
            "already_offline": {p: self.pre_offline.get(p, 0) for p in sorted(total) if self.pre_offline.get(p)},
            "max_offline": {p: self.cap[p] for p in sorted(total)},
            "min_online_share": {p: min_share[p] for p in sorted(min_share)},
            "max_per_rack_in_batch": per_rack_max,
        }


def plan_batches(nodes: Any, constraints: Any = None) -> Dict[str, Any]:
    """Plan the rolling order. Deterministic: the same input always gives the same batches.

    ``nodes``: ``[{name, partition, rack, leaf, power, est_duration_s, state, priority, upgrade}]``; ``state`` is
    idle | drained | down | allocated (or a Slurm state as printed); ``upgrade: false`` nodes are not planned but
    count for their partition's capacity (and against it when drained/down). ``priority``: higher goes earlier.

    Returns ``{batches, deferred, batch_sizes, ordered_hosts, stats}``: each batch is
    ``{index, canary, hosts, est_duration_s, ends_at_s, offline: {partition: n}, online_share: {partition: share}}``,
    each deferred node ``{name, reason}``.
    """
    c = check_constraints(constraints)
    run = _Rollout(_check_nodes(nodes), c)
    run.roll()
    run.defer_rest()
    ordered = [h for b in run.batches for h in b["hosts"]]
    return {
        "batches": run.batches,
        "deferred": run.deferred,
        "batch_sizes": [len(b["hosts"]) for b in run.batches],
        "ordered_hosts": ordered,
        "stats": run.stats(ordered),
    }


# ------------------------------------------------------------------------------------------ upgrade plan


def _slurm_info(facts: Any) -> Tuple[Optional[str], Any]:
    """(state, partitions) of the node from its slurm facts, or (None, None)."""
    nodes = ((facts or {}).get("slurm") or {}).get("nodes") or []
    node = nodes[0] if nodes and isinstance(nodes[0], dict) else {}
    return slurm_state(node.get("state")), node.get("partitions") or None


def _host_steps(current: Dict[str, Any], target: Dict[str, Any], nc: Any, methods: Any) -> List[Dict[str, Any]]:
    if methods is not None and not isinstance(methods, dict):
        raise _upgrade.UpgradeError("gpuops_upgrade_methods", "must be a mapping node class -> steps")
    try:
        return _upgrade.plan_node(current, target, nc, (methods or {}).get(nc))
    except _upgrade.UpgradeError as exc:
        raise _upgrade.UpgradeError("gpuops_upgrade_methods.%s.%s" % (nc, exc.key[len("methods.") :]), exc.message)


def _plan_host(name: str, h: Dict[str, Any], baseline: Any, methods: Any, allow_downgrade: bool, res: Dict[str, Any]):
    """The planner node of one host; records its steps, or why it is blocked or skipped, in ``res``."""
    nc = h.get("node_class")
    target = _upgrade.target_for(baseline, nc)
    facts = h.get("facts")
    state, partitions = _slurm_info(facts)
    node = {
        "name": name,
        "partition": h.get("partition") or partitions,
        "rack": h.get("rack"),
        "leaf": h.get("leaf"),
        "power": h.get("power"),
        "state": h.get("state") or state or "idle",
        "priority": h.get("priority") or 0,
        "upgrade": False,
    }
    if target is None:
        res["blocked"].append({"host": name, "reason": "no baseline for node class %r (gpuops_node_class)" % (nc,)})
        return node
    if not isinstance(facts, dict):
        res["blocked"].append({"host": name, "reason": h.get("facts_error") or "no facts"})
        return node
    current = _upgrade.current_versions(facts)
    steps = _host_steps(current, target, nc, methods)
    summary = _upgrade.summarize(steps)
    res["nodes"][name] = {"node_class": nc, "current": current, "steps": steps, "summary": summary}
    if not steps:
        res["skipped"].append(name)
    elif summary["verify"]:
        reason = "current version unknown for: %s" % ", ".join(summary["verify"])
        res["blocked"].append({"host": name, "reason": reason})
    elif summary["downgrade"] and not allow_downgrade:
        res["blocked"].append({"host": name, "reason": "plan downgrades a component (allow_downgrade=false)"})
    else:
        node.update(upgrade=True, est_duration_s=summary["est_duration_s"])
    return node


def plan_hosts(
    hosts: Dict[str, Dict[str, Any]],
    baseline: Any,
    matrix: Any = None,
    methods: Any = None,
    constraints: Any = None,
    window_s: Optional[float] = None,
    allow_downgrade: bool = False,
) -> Dict[str, Any]:
    """The whole upgrade plan as a plain function. ``hosts``: {name: {facts, facts_error, node_class, rack, leaf,
    power, partition, state, priority}}. Returns ``{problems, nodes, skipped, blocked}`` plus ``plan_batches``'
    result and ``host_batches`` {host: batch index}; with baseline ``problems`` nothing is planned.
    Raises _upgrade.UpgradeError / PlanError for invalid input."""
    problems = _upgrade.validate_baseline(baseline, matrix)
    res: Dict[str, Any] = {"problems": problems, "nodes": {}, "skipped": [], "blocked": []}
    if problems:
        return res
    planner_nodes = [_plan_host(name, hosts[name], baseline, methods, allow_downgrade, res) for name in sorted(hosts)]
    cons = dict(constraints or {})
    if window_s is not None:
        cons["window_s"] = window_s
    res.update(plan_batches(planner_nodes, cons))
    res["host_batches"] = {h: b["index"] for b in res["batches"] for h in b["hosts"]}
    return res
