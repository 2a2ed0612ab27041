# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Platform checks over jobs and GPUs: scheduler.queue, scheduler.job_failures, scheduler.fragmentation,
scheduler.capacity (called by ``_checks.platform.check_platform``; thresholds in ``policy["scheduler"]``).

``platform_summary(platform_facts, now)`` gives the figures behind them (pending-wait percentiles per partition
and reason, allocated GPU share per partition) for report.json's ``platform`` section.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform.findings import Out, as_dict, node_out

#: pending reasons that mean "waiting for GPUs/nodes" (the ones fragmentation and the wait threshold look at)
RESOURCE_REASONS = ("Resources", "Priority", "ReqNodeNotAvail", "Reservation")
#: Slurm's final job states (sacct's base state of a job that has ended), except CANCELLED: a cancelled job is the
#: user's decision. Only these count as finished jobs: a job still pending, running, suspended, requeued or
#: resizing, or one whose end slurmdbd has not recorded yet (sacct shows it RUNNING), has no outcome to count.
ENDED_STATES = ("COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY")
#: ends Slurm puts on the node (cluster-formats.md 2, [SL-doc]): never counted with a user's FAILED/OUT_OF_MEMORY
NODE_SIDE = ("NODE_FAIL", "BOOT_FAIL", "LAUNCH_FAILED")
_USABLE = ("idle", "mixed", "allocated", "completing")


def percentile(values: List[float], q: float) -> Optional[float]:
    """The ``q`` quantile (0..1) by linear interpolation; None for no values."""
    if not values:
        return None
    v = sorted(values)
    pos = (len(v) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def _waits(jobs: List[Dict[str, Any]], ref: float) -> Dict[str, Any]:
    hours = [max(0.0, ref - float(j["submit"])) / 3600.0 for j in jobs if isinstance(j.get("submit"), (int, float))]
    return {
        "pending": len(jobs),
        "p50_hours": _round(percentile(hours, 0.5)),
        "p90_hours": _round(percentile(hours, 0.9)),
        "max_hours": _round(max(hours) if hours else None),
    }


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 2)


def _pending(sched: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [j for j in sched.get("jobs") or [] if isinstance(j, dict) and j.get("state") == "PENDING"]


def queue_stats(sched: Dict[str, Any], ref: float) -> Dict[str, Any]:
    """Pending-wait figures: ``{"partitions": {p: {...}}, "reasons": {r: {...}}, "partition_reason": {...}}``."""
    pend = _pending(sched)
    by_part: Dict[str, List[Dict[str, Any]]] = {}
    by_reason: Dict[str, List[Dict[str, Any]]] = {}
    by_both: Dict[str, List[Dict[str, Any]]] = {}
    for j in pend:
        part, reason = str(j.get("partition") or "?"), str(j.get("reason") or "None")
        by_part.setdefault(part, []).append(j)
        by_reason.setdefault(reason, []).append(j)
        by_both.setdefault("%s/%s" % (part, reason), []).append(j)
    return {
        "partitions": {k: _waits(v, ref) for k, v in sorted(by_part.items())},
        "reasons": {k: _waits(v, ref) for k, v in sorted(by_reason.items())},
        "partition_reason": {k: _waits(v, ref) for k, v in sorted(by_both.items())},
    }


def check_queue(out: Out, sched: Dict[str, Any], sp: Dict[str, Any], ref: float) -> None:
    """scheduler.queue: a partition whose jobs waiting for resources wait too long (90th percentile)."""
    stats = queue_stats(sched, ref)
    for key, w in stats["partition_reason"].items():
        part, reason = key.split("/", 1)
        if reason not in RESOURCE_REASONS or w["pending"] < sp["queue_min_jobs"]:
            continue
        if (w["p90_hours"] or 0) < sp["queue_p90_hours"]:
            continue
        out.add(
            "scheduler.queue",
            sp["queue"],
            "partition:%s" % part,
            "wait",
            "partition %s: %d jobs pending for %s, wait p50 %.1f h, p90 %.1f h, max %.1f h (threshold p90 %s h)"
            % (part, w["pending"], reason, w["p50_hours"], w["p90_hours"], w["max_hours"], sp["queue_p90_hours"]),
            "scheduler.queue_p90_hours=%s, queue_min_jobs=%d" % (sp["queue_p90_hours"], sp["queue_min_jobs"]),
            {"partition": part, "reason": reason, "wait": w, "partition_waits": stats["partitions"].get(part)},
        )


def _failure_counts(history: List[Dict[str, Any]], states: Tuple[str, ...]) -> Tuple[Dict[str, Any], int, int]:
    per: Dict[str, Dict[str, Any]] = {}
    total = failed = 0
    for j in history:
        state = str(j.get("state") or "")
        if state not in ENDED_STATES and state not in states:
            continue  # not ended (or cancelled): no outcome yet
        total += 1
        bad = state in states
        failed += bad
        for node in j.get("nodes") or []:
            c = per.setdefault(node, {"jobs": 0, "failed": 0, "node_fail": 0, "states": {}, "job_ids": []})
            c["jobs"] += 1
            if bad:
                c["failed"] += 1
                c["node_fail"] += state in NODE_SIDE
                c["states"][state] = c["states"].get(state, 0) + 1
                c["job_ids"] = (c["job_ids"] + [j.get("job_id")])[-10:]  # the latest ten
    return per, total, failed


def check_job_failures(out: Out, sched: Dict[str, Any], sp: Dict[str, Any]) -> None:
    """scheduler.job_failures: the cluster's failure rate over the sacct window, and nodes that fail jobs
    (NODE_FAIL, or failures clustering on the node) as node findings of those nodes."""
    history = [j for j in sched.get("history") or [] if isinstance(j, dict)]
    if not history:
        return
    per, total, failed = _failure_counts(history, tuple(sp["failure_states"]))
    requeues = sum(int(j.get("restarts") or 0) for j in history)
    node_side = sum(
        1 for j in history if str(j.get("state") or "") in NODE_SIDE and j.get("state") in sp["failure_states"]
    )
    rate = float(failed) / total if total else 0.0
    if total >= sp["failure_min_jobs"] and rate >= sp["failure_rate"]:
        out.add(
            "scheduler.job_failures",
            sp["job_failures"],
            "cluster",
            "rate",
            "%d of %d finished jobs failed (%.0f%%, threshold %.0f%%) in the accounting window (%d ended by a node "
            "failure, %d by the job itself); %d requeues"
            % (failed, total, 100 * rate, 100 * sp["failure_rate"], node_side, failed - node_side, requeues),
            "scheduler.failure_rate=%s over >= %d jobs" % (sp["failure_rate"], sp["failure_min_jobs"]),
            {
                "failed": failed,
                "node_side": node_side,
                "user_side": failed - node_side,
                "total": total,
                "rate": round(rate, 3),
                "requeues": requeues,
            },
        )
    for node, c in sorted(per.items()):
        share = float(c["failed"]) / c["jobs"]
        rest = float(failed - c["failed"]) / (total - c["jobs"]) if total > c["jobs"] else 0.0
        clustered = (
            c["failed"] >= sp["node_min_failures"]
            and share >= sp["node_failure_share"]
            and share >= sp["node_failure_ratio"] * rest  # against the other nodes: not a cluster-wide problem
        )
        if not (clustered or c["node_fail"]):
            continue
        code = "failures" if clustered else "NODE_FAIL"
        out.add(
            "scheduler.job_failures",
            sp["job_failures"],
            "slurm:jobs",
            code,
            "%s failed %d of its %d jobs (%s) in the accounting window: a node that kills jobs is a suspect even "
            "when its hardware checks are green"
            % (node, c["failed"], c["jobs"], ", ".join("%s %d" % kv for kv in sorted(c["states"].items()))),
            "scheduler.node_min_failures=%d, node_failure_share=%s, node_failure_ratio=%s; any NODE_FAIL"
            % (sp["node_min_failures"], sp["node_failure_share"], sp["node_failure_ratio"]),
            {
                "jobs": c["jobs"],
                "failed": c["failed"],
                "node_side": c["node_fail"],  # NODE_FAIL / BOOT_FAIL: Slurm blamed the node
                "user_side": c["failed"] - c["node_fail"],  # FAILED, OUT_OF_MEMORY...: the job's own end
                "states": c["states"],
                "job_ids": c["job_ids"],
                "cluster_rate": round(rate, 3),
                "other_nodes_rate": round(rest, 3),
            },
            host=node,
        )


def _partitions(sched: Dict[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    parts: Dict[str, List[Dict[str, Any]]] = {}
    for n in sched.get("nodes") or []:
        if isinstance(n, dict):
            for p in n.get("partitions") or ["?"]:
                parts.setdefault(str(p), []).append(n)
    return parts


def _free(n: Dict[str, Any]) -> int:
    if str(n.get("state") or "") not in _USABLE or n.get("flags"):
        return 0
    return max(0, int(n.get("gpus") or 0) - int(n.get("gpus_alloc") or 0))


def check_fragmentation(out: Out, sched: Dict[str, Any], sp: Dict[str, Any]) -> None:
    """scheduler.fragmentation: free GPUs in a partition that no pending job shape can use."""
    pend = [j for j in _pending(sched) if j.get("reason") in RESOURCE_REASONS and int(j.get("gpus_per_node") or 0)]
    for part, nodes in sorted(_partitions(sched).items()):
        shapes = sorted({int(j["gpus_per_node"]) for j in pend if j.get("partition") == part})
        if not shapes:
            continue
        free = [_free(n) for n in nodes]
        total, largest = sum(free), max(free or [0])
        smallest = shapes[0]
        if total < max(sp["fragmentation_min_free_gpus"], smallest) or largest >= smallest:
            continue
        waiting = sum(1 for j in pend if j.get("partition") == part)
        out.add(
            "scheduler.fragmentation",
            sp["fragmentation"],
            "partition:%s" % part,
            "fragmented",
            "partition %s: %d GPUs free but scattered (at most %d free on one node) while %d jobs wait for "
            "%s GPUs per node" % (part, total, largest, waiting, "/".join(str(s) for s in shapes)),
            "scheduler.fragmentation_min_free_gpus=%d" % sp["fragmentation_min_free_gpus"],
            {
                "free_gpus": total,
                "largest_free_on_one_node": largest,
                "nodes_with_free_gpus": sum(1 for f in free if f),
                "pending_shapes": shapes,
                "pending_jobs": waiting,
            },
        )


def capacity_stats(sched: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Per partition: GPUs in service (not down/drained), allocated, and the allocated share."""
    out: Dict[str, Dict[str, Any]] = {}
    for part, nodes in sorted(_partitions(sched).items()):
        total = sum(int(n.get("gpus") or 0) for n in nodes)
        in_service = sum(int(n.get("gpus") or 0) for n in nodes if not node_out(n))
        alloc = sum(int(n.get("gpus_alloc") or 0) for n in nodes)
        out[part] = {
            "gpus": total,
            "gpus_in_service": in_service,
            "gpus_allocated": alloc,
            "allocated_share": round(float(alloc) / in_service, 3) if in_service else None,
        }
    return out


def check_capacity(out: Out, sched: Dict[str, Any], sp: Dict[str, Any]) -> None:
    """scheduler.capacity: a partition's allocated GPU share at or over the expansion trigger (advice)."""
    for part, c in capacity_stats(sched).items():
        share = c["allocated_share"]
        if share is None or share < sp["capacity_trigger"]:
            continue
        out.add(
            "scheduler.capacity",
            sp["capacity"],
            "partition:%s" % part,
            "trigger",
            "partition %s: %d of %d in-service GPUs allocated (%.0f%%, expansion trigger %.0f%%)"
            % (part, c["gpus_allocated"], c["gpus_in_service"], 100 * share, 100 * sp["capacity_trigger"]),
            "scheduler.capacity_trigger=%s" % sp["capacity_trigger"],
            dict(c, partition=part),
        )


def storage_unknown(platform_facts: Any) -> List[Dict[str, Any]]:
    """The storage parts a partial capture did not hold (the storage facts' ``unknown``: ``[{part, files,
    message}]``, docs/findings.md "What was not seen")."""
    rows = as_dict(as_dict(platform_facts).get("storage")).get("unknown")
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def platform_summary(platform_facts: Any, now: float) -> Optional[Dict[str, Any]]:
    """The figures for report.json ``platform``: queue waits and GPU capacity, the scheduler parts not captured
    (``unseen``) and the storage parts not captured (``storage_unknown``); None without scheduler facts (with
    storage facts alone: only ``storage_unknown``, when a storage part is unknown)."""
    sched = as_dict(as_dict(platform_facts).get("scheduler"))
    if not sched:
        unknown = storage_unknown(platform_facts)
        return {"state": None, "unseen": [], "storage_unknown": unknown} if unknown else None
    ref = as_dict(platform_facts).get("collected_at")
    ref = float(ref) if isinstance(ref, (int, float)) and not isinstance(ref, bool) else now
    return {
        "state": sched.get("state"),
        "unseen": sched.get("unseen") or [],
        "storage_unknown": storage_unknown(platform_facts),
        "controllers": sched.get("controllers"),
        "accounting": sched.get("accounting"),
        "queue": queue_stats(sched, ref),
        "capacity": capacity_stats(sched),
        "jobs_in_history": len(sched.get("history") or []),
    }
