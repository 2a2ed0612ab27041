# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Job-aware Xid attribution (issue 38): one crashing job is not many failing GPUs.

When the inspection has the scheduler's job view (the platform facts: ``squeue`` running jobs and the ``sacct``
history, docs/capture.md "Cluster capture directory"), application-class Xids that appear on the nodes of ONE job
within ``job_storm.window_s`` become one cluster finding ``job.xid_storm`` (component ``job:<id>``, action
``restart_app``) naming the job, its user and account; each node's Xid finding it explains keeps its severity,
its action becomes ``monitor`` (the original in ``evidence.original_action``) and ``cause`` names the job finding,
as a correlated member's does (docs/findings.md). Auto-isolation never drains a node for such a finding
(``gate.auto_isolation_targets``). A hardware-class Xid (79, 48, 94, 95, ...) on one of those nodes is never
attributed: it stands alone and acts as before.

Application class (``app_class_codes``): Xid 13, 31, 43, 45, 69 (issue 38; NVIDIA's catalog: 13/31 RESTART_APP
with WORKFLOW_XID_13/31, 43 "GPU stopped processing" reported when an application faults or is killed, 45
"preemptive cleanup" of a killed context, 69 RESTART_APP) and every code whose NVIDIA immediate resolution is
RESTART_APP in the Xid catalogue data (``_xid_catalog.CATALOG``, from NVIDIA's sheet), except the codes the
catalogue files under a hardware category (memory, pcie, nvlink, hardware, power, thermal, fabric): 94 (contained
ECC error: NVIDIA says RESTART_APP, but it is a memory fault), 32 and 80 (PCIe signal quality), 68.

Only dated Xids count (the evidence's ``first``..``last`` time): an Xid is a job's when the job's allocation
(``start``..``end``, or the collection time for a job still running) held that node at that time, give or take the
window (Xid 43/45 follow a job's end by seconds). An Xid that two jobs could explain is attributed to neither.

The job view is read through :func:`job_view`, the one place that knows the scheduler parsers' record shape
(``parsers/sched.py``): a later format change touches that function only. Pure Python, no Ansible imports; runs on
the controller.
"""

from __future__ import annotations

import datetime
from typing import Any, Dict, List, Optional, Set, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import (
    DEFAULT_POLICY,
    SEVERITIES,
    PolicyError,
    is_withheld,
    respond_by,
)

CHECK = "job.xid_storm"
#: Named application-class Xids (issue 38; NVIDIA Xid catalog, health-policy-facts.md section 4).
NAMED_APP_XIDS = (13, 31, 43, 45, 69)
#: Catalogue categories that make a RESTART_APP code a hardware-class Xid (never attributed to a job).
HARDWARE_CATEGORIES = ("memory", "pcie", "nvlink", "hardware", "power", "thermal", "fabric")
#: NVIDIA's RESTART_APP codes (sheet "Catalog" of https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html
#: as of 2025-10-29), less the hardware categories above: used only when the catalogue data cannot be read.
FALLBACK_RESTART_APP = (8, 11, 13, 25, 31, 39, 40, 41, 60, 69, 70, 71, 72, 75, 76, 77, 82, 83, 84, 85, 86, 88, 89)
FALLBACK_RESTART_APP += (96, 97, 98, 99, 100, 101, 102, 103, 104, 105) + tuple(range(126, 136)) + (139,)
#: Policy defaults (the policy's ``job_storm`` section overrides them; docs/checks.md "Job-aware Xid attribution").
DEFAULTS: Dict[str, Any] = {"enabled": True, "window_s": 600, "min_nodes": 2, "severity": "P2"}
#: Job states whose allocation still holds its nodes (sacct prints no end time for them).
_RUNNING = ("RUNNING", "SUSPENDED", "COMPLETING", "RESIZING")
#: At most this many hosts are listed in a job finding's evidence (the count is always whole).
MAX_LISTED = 200


def app_class_codes() -> frozenset:
    """The Xid codes attributed to a job: :data:`NAMED_APP_XIDS` and the catalogue's RESTART_APP codes outside
    :data:`HARDWARE_CATEGORIES`."""
    codes: Set[int] = set(NAMED_APP_XIDS)
    try:
        from ansible_collections.gpuops.cluster.plugins.module_utils import _xid_catalog

        catalog = _xid_catalog.CATALOG
        for code, entry in catalog.items():
            if entry.get("nvidia_action") == "RESTART_APP" and entry.get("category") not in HARDWARE_CATEGORIES:
                codes.add(int(code))
    except (ImportError, AttributeError, TypeError, ValueError):  # the catalogue's data unreadable: NVIDIA's list
        codes.update(FALLBACK_RESTART_APP)
    return frozenset(codes)


def config(policy: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The policy's ``job_storm`` section over :data:`DEFAULTS`; PolicyError naming the key for a bad value (the
    types were checked by ``merge_policy``)."""
    cfg = dict(DEFAULTS, **((policy or {}).get("job_storm") or {}))
    if cfg["severity"] not in SEVERITIES:
        raise PolicyError("policy key 'job_storm.severity' must be one of %s" % ", ".join(SEVERITIES))
    if not isinstance(cfg["window_s"], (int, float)) or isinstance(cfg["window_s"], bool) or cfg["window_s"] < 0:
        raise PolicyError("policy key 'job_storm.window_s' must be a number of seconds >= 0")
    if not isinstance(cfg["min_nodes"], int) or isinstance(cfg["min_nodes"], bool) or cfg["min_nodes"] < 2:
        raise PolicyError("policy key 'job_storm.min_nodes' must be an integer >= 2 (one node is not a storm)")
    return cfg


def _epoch(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    t = parse_time(value)
    return t.timestamp() if t is not None else None


def job_view(platform: Any) -> List[Dict[str, Any]]:
    """The jobs the platform facts know: ``[{job_id, user, account, partition, state, nodes (set of Slurm node
    names), start, end (epoch or None), source}]``, one per job id (sacct's record completed by squeue's).

    Reads ``platform["scheduler"]["jobs"]`` (squeue: pending and running) and ``["history"]`` (sacct); a job with
    no node or no start time (pending, never ran) is left out. Records that are not dicts are skipped."""
    sched = platform.get("scheduler") if isinstance(platform, dict) else None
    if not isinstance(sched, dict):
        return []
    jobs: Dict[str, Dict[str, Any]] = {}
    for source in ("history", "jobs"):
        records = sched.get(source)
        for rec in records if isinstance(records, list) else []:
            if not isinstance(rec, dict) or rec.get("job_id") in (None, ""):
                continue
            nodes = rec.get("nodes")
            nodes = {str(n) for n in nodes if isinstance(n, str) and n} if isinstance(nodes, (list, tuple)) else set()
            start = _epoch(rec.get("start"))
            if not nodes or start is None:
                continue
            job = jobs.setdefault(str(rec["job_id"]), {"job_id": str(rec["job_id"]), "nodes": set(), "source": []})
            job["nodes"] |= nodes
            job["source"].append("sacct" if source == "history" else "squeue")
            for key in ("user", "account", "partition", "state"):
                if not job.get(key) and rec.get(key) not in (None, ""):
                    job[key] = str(rec[key])
            job["start"] = min(start, job.get("start", start))
            end = _epoch(rec.get("end"))
            if source == "jobs" or end is None or str(rec.get("state") or "") in _RUNNING:
                job["running"] = True  # its allocation lasts until the collection
            else:
                job["end"] = max(end, job.get("end") or end)
    return [
        dict(j, user=j.get("user"), account=j.get("account"), end=None if j.pop("running", False) else j.get("end"))
        for j in jobs.values()
    ]


def _iso(epoch: float) -> Optional[str]:
    return iso_z(datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc))


def _host_index(hosts: List[str], names: Dict[str, str]) -> Dict[Any, Set[str]]:
    """Slurm node name -> the inspected hosts it stands for: the host's Slurm name (``names``), its name, or its
    short name (up to the first dot). Built once: a job's hosts are then looked up, never searched for (40,000 jobs
    over 10,000 hosts took 100 s as a scan of every host per job)."""
    index: Dict[Any, Set[str]] = {}
    for h in hosts:
        for key in (names.get(h), h, h.split(".", 1)[0]):
            index.setdefault(key, set()).add(h)
    return index


def _hosts_of(job_nodes: Set[str], index: Dict[Any, Set[str]]) -> Set[str]:
    """The inspected hosts a job's Slurm node names stand for (``index``: :func:`_host_index`)."""
    out: Set[str] = set()
    for name in job_nodes:
        got = index.get(name)
        if got:
            out |= got
    return out


def _candidates(nodes: Dict[str, Dict[str, Any]], codes: frozenset) -> List[Tuple[str, Dict[str, Any], float, float]]:
    """(host, finding, first, last) of every dated application-class Xid finding nothing explains yet."""
    out = []
    for host in sorted(nodes):
        for f in (nodes[host] or {}).get("findings") or []:
            if not isinstance(f, dict) or f.get("check") != "gpu.xid" or f.get("cause") or is_withheld(f):
                continue
            try:
                code = int(str(f.get("code")))
            except ValueError:
                continue
            ev = f.get("evidence") if isinstance(f.get("evidence"), dict) else {}
            first, last = parse_time(ev.get("first")), parse_time(ev.get("last"))
            if code not in codes or first is None:
                continue
            out.append((host, f, first.timestamp(), (last or first).timestamp()))
    return out


def _owner(
    jobs: List[Dict[str, Any]], host_jobs: Dict[str, List[int]], item: Tuple, ref: float, window: float
) -> Optional[int]:
    """The index of the one job that held the item's host when its Xid happened (strictly, else within the window);
    None when no job or more than one could explain it. ``host_jobs``: host -> the indexes of the jobs that hold
    it, ascending."""
    host, _finding, first, last = item
    for slack in (0.0, window):
        hits = [
            i
            for i in host_jobs.get(host, ())
            for job in (jobs[i],)
            if job["start"] - slack <= last and first <= (job["end"] if job["end"] is not None else ref) + slack
        ]
        if len(hits) == 1:
            return hits[0]
        if hits:
            return None  # two jobs on the node at that time: the Xid is neither's alone
    return None


def _densest(items: List[Tuple[str, Dict[str, Any], float, float]], window: float):
    """The items whose first times lie in the one ``window`` that holds the most hosts (then the most items)."""
    items = sorted(items, key=lambda it: it[2])
    best: List[Tuple[str, Dict[str, Any], float, float]] = []
    lo = 0
    for hi in range(len(items)):
        while items[hi][2] - items[lo][2] > window:
            lo += 1
        span = items[lo : hi + 1]
        if (len({it[0] for it in span}), len(span)) > (len({it[0] for it in best}), len(best)):
            best = span  # the most hosts, then the most Xids of theirs
    return best


def attribute(
    nodes: Dict[str, Dict[str, Any]],
    platform: Any,
    policy: Optional[Dict[str, Any]],
    now: Any,
    names: Optional[Dict[str, str]] = None,
) -> List[Dict[str, Any]]:
    """The ``job.xid_storm`` cluster findings of an inspection; the node findings they explain are REWRITTEN IN
    PLACE (action ``monitor``, ``evidence.original_action``, ``cause`` = the job finding's id, ``evidence.job_id``).

    ``nodes``: ``{host: {"findings": [...]}}``; ``platform``: the platform facts (None: no job view, nothing is
    attributed); ``policy``: the merged policy (its ``job_storm`` section over :data:`DEFAULTS`); ``now``: the
    report time (respond_by; the end of a running job's allocation when the facts carry no ``collected_at``);
    ``names``: host -> Slurm NodeName where they differ."""
    cfg = config(policy)
    jobs = job_view(platform)
    if not cfg["enabled"] or not jobs:
        return []
    now_dt = parse_time(now)
    ref = _epoch(platform.get("collected_at")) if isinstance(platform, dict) else None
    ref = ref if ref is not None else (now_dt.timestamp() if now_dt else 0.0)
    window = float(cfg["window_s"])
    hosts = sorted(nodes)
    index = _host_index(hosts, names or {})
    job_hosts = [_hosts_of(job["nodes"], index) for job in jobs]
    host_jobs: Dict[str, List[int]] = {}
    for i, held in enumerate(job_hosts):
        for h in held:
            host_jobs.setdefault(h, []).append(i)
    by_job: Dict[int, List[Tuple[str, Dict[str, Any], float, float]]] = {}
    for item in _candidates(nodes, app_class_codes()):
        owner = _owner(jobs, host_jobs, item, ref, window)
        if owner is not None:
            by_job.setdefault(owner, []).append(item)
    out = []
    for i in sorted(by_job, key=lambda k: jobs[k]["job_id"]):
        storm = _densest(by_job[i], window)
        if len({it[0] for it in storm}) >= int(cfg["min_nodes"]):
            out.append(_storm_finding(jobs[i], len(job_hosts[i]), storm, cfg, policy, now))
    return out


def _storm_finding(job, inspected, storm, cfg, policy, now) -> Dict[str, Any]:
    """The job finding for ``storm`` ([(host, finding, first, last)]) and the rewrite of its members."""
    hosts = sorted({it[0] for it in storm})
    codes = sorted({int(str(it[1]["code"])) for it in storm})
    first, last = min(it[2] for it in storm), max(it[3] for it in storm)
    code = ",".join(str(c) for c in codes)
    fid = "cluster:%s:job:%s:%s" % (CHECK, job["job_id"], code)
    who = ", ".join("%s %s" % (k, job[k]) for k in ("user", "account") if job.get(k))
    finding = {
        "check": CHECK,
        "severity": cfg["severity"],
        "component": "job:%s" % job["job_id"],
        "code": code,
        "message": "job %s%s raised application-class Xid %s on %d nodes within %d s: one application crash, not %d "
        "GPU faults; the job's owner restarts it, the nodes stay in service"
        % (job["job_id"], " (%s)" % who if who else "", code, len(hosts), int(last - first), len(hosts)),
        "action": "restart_app",
        "rule": "job_storm: application-class Xids on >= %d nodes of one job within window_s=%s"
        % (cfg["min_nodes"], cfg["window_s"]),
        "respond_by": respond_by(cfg["severity"], now, policy or DEFAULT_POLICY),
        "evidence": {
            "job_id": job["job_id"],
            "user": job.get("user"),
            "account": job.get("account"),
            "partition": job.get("partition"),
            "state": job.get("state"),
            "job_view": sorted(set(job["source"])),
            "codes": codes,
            "nodes": len(hosts),
            "job_nodes_inspected": inspected,
            "hosts": hosts[:MAX_LISTED],
            "first": _iso(first),
            "last": _iso(last),
        },
        "host": None,
        "cause": None,
        "id": fid,
    }
    for _host, f, _first, _last in storm:
        ev = f.setdefault("evidence", {})
        if isinstance(ev, dict):
            ev["original_action"] = f.get("action")
            ev["job_id"] = job["job_id"]
        f["action"] = "monitor"
        f["cause"] = fid
    return finding


def is_storm_cause(cause: Any) -> bool:
    """True for the ``cause`` of a node finding a job storm explains (an application crash, not an incident)."""
    return isinstance(cause, str) and cause.startswith("cluster:%s:" % CHECK)
