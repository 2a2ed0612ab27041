# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The write side of the service ledger (docs/service.md): an inspection run goes into the store.

:func:`record_run` writes one inspection report as ONE transaction under the database lock ``ledger``: a ``runs``
row, each node's service period (run-length: an unchanged node extends its open period, a changed one closes it at
this run's time and opens a new one), each finding's life (first/last seen, cleared), the scheduler's GPU
allocation per partition, and the incident clocks the inspection moves (``detected`` for a P0-P2 finding that first
appears, ``restored`` for a node back ``up`` with its finding gone). Bulk statements throughout: 10,000 nodes take
well under two seconds. :func:`prune` applies the retention policy. Incidents' operator steps, the audit trail and
tickets are in ``_ledger_incidents``.

Node service state (the contract shared with the service report and the simulator's answer key):
``down`` when the scheduler says the node is out of service (drained, draining, down, fail, maint) or the node has a
P0/P1 finding (status ``faulty``); ``unknown`` when its status is ``error`` or ``unreachable``; otherwise ``up``.
"""

from __future__ import annotations

import datetime
import hashlib
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import sla as _sla
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_schema
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.ledger_incidents import (
    LOCK,
    insert_incidents,
    restore_incidents,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.ledger_keys import component_class
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.ledger_keys import fingerprint as _fingerprint

try:
    import sqlalchemy as sa
except ImportError:  # sanity import test
    sa = None

_T: Dict[str, Any] = {}
CHUNK = 2000
#: Slurm state words that put a node out of service.
OUT_OF_SERVICE = {"DRAIN", "DRAINED", "DRAINING", "DOWN", "FAIL", "FAILING", "MAINT", "NOT_RESPONDING", "NO_RESPOND"}
#: The audit's own floor: changes derived from the audit trail are kept at least this long (compliance regimes).
AUDIT_MIN_DAYS = 183


class LedgerError(Exception):
    """A bad argument to the ledger (a retention below the audit floor, a malformed report)."""


def tables() -> Dict[str, Any]:
    if not _T:
        _T.update(ledger_schema.tables().tables)
    return _T


def report_time(report: Dict[str, Any]) -> float:
    """The report's ``generated_at`` as epoch seconds (now when it has none)."""
    text = report.get("generated_at")
    if isinstance(text, str) and text:
        try:
            when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise LedgerError("report generated_at %r is not an ISO time" % text) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.timezone.utc)
        return when.timestamp()
    return time.time()


def _slurm_record(facts: Any, host: str) -> Optional[Dict[str, Any]]:
    if not isinstance(facts, dict):
        return None
    slurm = facts.get("slurm") if isinstance(facts.get("slurm"), dict) else {}
    records = [r for r in slurm.get("nodes") or [] if isinstance(r, dict)]
    short = host.split(".", 1)[0]
    for rec in records:
        if rec.get("name") in (host, short, facts.get("hostname")):
            return rec
    return records[0] if len(records) == 1 and facts.get("mode") == "capture" else None


def _state_words(rec: Optional[Dict[str, Any]]) -> set:
    if not rec:
        return set()
    words = {str(f).upper() for f in rec.get("flags") or []} | {str(rec.get("base_state") or "").upper()}
    words |= set(str(rec.get("state") or "").upper().replace("*", "+NOT_RESPONDING").split("+"))
    return words


def _gpus(facts: Any, rec: Optional[Dict[str, Any]]) -> int:
    if rec and isinstance(rec.get("gres_gpus"), int):
        return rec["gres_gpus"]
    gpu = facts.get("gpu") if isinstance(facts, dict) and isinstance(facts.get("gpu"), dict) else {}
    return len([g for g in gpu.get("gpus") or [] if isinstance(g, dict)])


#: cluster findings that speak for a whole failure domain (docs/cluster.md): a rack, power domain or leaf down
DOMAIN_CHECKS = ("cluster.rack", "cluster.power", "cluster.leaf")


def cluster_view(report: Dict[str, Any]) -> Dict[str, Dict[str, str]]:
    """What the cluster level knows of nodes it could not read itself: ``{"scheduler_out": {host: why},
    "domain_down": {host: finding id}}`` from the scheduler's node list (report ``platform.nodes_out``) and the
    P0/P1 cluster findings of a failure domain (a rack or power domain that lost power, a dead leaf), whose
    ``evidence.hosts`` name the members."""
    platform = report.get("platform") if isinstance(report.get("platform"), dict) else {}
    out = platform.get("nodes_out") if isinstance(platform.get("nodes_out"), dict) else {}
    down: Dict[str, str] = {}
    summary = report.get("summary") if isinstance(report.get("summary"), dict) else {}
    for f in summary.get("cluster_findings") or []:
        if not isinstance(f, dict) or f.get("severity") not in ("P0", "P1"):
            continue
        if not str(f.get("check") or "").startswith(DOMAIN_CHECKS):
            continue
        evidence = f.get("evidence") if isinstance(f.get("evidence"), dict) else {}
        for h in evidence.get("hosts") or []:
            if isinstance(h, str):
                down.setdefault(h, str(f.get("id") or f.get("check")))
    return {"scheduler_out": {str(k): str(v) for k, v in out.items()}, "domain_down": down}


def node_state(host: str, node: Dict[str, Any], view: Optional[Dict[str, Dict[str, str]]] = None) -> Dict[str, Any]:
    """A report node entry -> {state, status, reason, partition, gpus}: the service terms' rule (docs/service.md).

    ``down``: the scheduler says the node is out of service or not responding (its own record, a scheduler finding,
    or the cluster's node list in ``view``), or the node has a P0/P1 finding (status ``faulty``), or it could not be
    read while the scheduler or a whole-domain-down finding (its rack or power domain) says it is down. ``unknown``:
    neither the node nor the scheduler could read it. ``up`` otherwise."""
    view = view or {}
    status = node.get("status") or "healthy"
    facts = node.get("facts")
    rec = _slurm_record(facts, host)
    listed = view.get("scheduler_out") or {}
    sched_why = listed.get(host) or listed.get(host.split(".", 1)[0])
    sched_out = (
        bool(_state_words(rec) & OUT_OF_SERVICE)
        or bool(sched_why)
        or any(
            f.get("check") == "scheduler.node_state" and f.get("code") in ("DOWN", "DRAIN")
            for f in node.get("findings") or []
            if isinstance(f, dict)
        )
    )
    domain = (view.get("domain_down") or {}).get(host)
    reason = node.get("status_reason") or (rec or {}).get("reason")
    if status == "faulty" or (sched_out and status not in ("error", "unreachable")):
        state = "down"
    elif status in ("error", "unreachable") and (sched_out or domain):
        # not read, but the scheduler or its whole domain says it is out: time lost, not time unseen
        state = "down"
        reason = "%s; %s" % (
            status,
            "scheduler: %s" % (sched_why or "out of service") if sched_out else "domain down: %s" % domain,
        )
    elif status in ("error", "unreachable"):
        state = "unknown"
    else:
        state = "up"
    parts = (rec or {}).get("partitions") or []
    return {
        "state": state,
        "status": status,
        "reason": str(reason)[:2000] if reason else None,
        "partition": str(parts[0]) if parts else None,
        "gpus": _gpus(facts, rec),
    }


def _chunks(items: List[Any], size: int = CHUNK) -> Iterable[List[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _update_ids(conn: Any, table: Any, ids: List[int], values: Dict[str, Any]) -> None:
    for part in _chunks(ids):
        conn.execute(table.update().where(table.c.id.in_(part)).values(**values))


def transition_times(
    report: Dict[str, Any], nodes: Dict[str, Dict[str, Any]], observed: Dict[str, float], at: float
) -> Dict[str, float]:
    """When a node's state changed, from its own evidence (docs/service.md "Node service state"): a node found down
    went down at the earliest evidence time of its P0/P1 findings; a node found up came back at its Slurm BootTime
    (it rebooted into service). Each only when it lies between the node's previous sighting and this run; the
    caller uses it only for a node whose state did change. Without such evidence the run's time is the change."""
    out: Dict[str, float] = {}
    for host, n in (report.get("nodes") or {}).items():
        floor = observed.get(host)
        state = (nodes.get(host) or {}).get("state")
        if floor is None or not isinstance(n, dict) or state not in ("down", "up"):
            continue
        if state == "down":
            times = [
                evidence_time(f)
                for f in n.get("findings") or []
                if isinstance(f, dict) and f.get("severity") in ("P0", "P1")
            ]
        else:
            times = [_epoch((_slurm_record(n.get("facts"), host) or {}).get("boot_time"))]
        found = [x for x in times if x is not None and floor < x < at]
        if found:
            out[host] = min(found)
    return out


def _periods(
    conn: Any, nodes: Dict[str, Dict[str, Any]], at: float, run_id: str, since: Optional[Dict[str, float]] = None
) -> Dict[str, int]:
    since = since or {}
    t = tables()["node_periods"]
    open_rows = conn.execute(
        sa.select(t.c.id, t.c.host, t.c.state, t.c.partition, t.c.gpus, t.c.started_at).where(t.c.ended_at.is_(None))
    ).all()
    current = {r.host: r for r in open_rows}
    extend, close, new = [], [], []
    for host, n in nodes.items():
        row = current.get(host)
        if row is not None and n["status"] in ("unreachable", "error"):
            # not read this run: its GPUs and partition are what they were (a rack without power still has its
            # GPUs; counting 0 would make its downtime cost nothing)
            n = dict(n, gpus=n["gpus"] or row.gpus, partition=n["partition"] or row.partition)
        if row is not None and (row.state, row.partition, row.gpus) == (n["state"], n["partition"], n["gpus"]):
            extend.append(row.id)
            continue
        change = at
        if row is not None:
            when = since.get(host)
            if when is not None and row.state != n["state"] and row.started_at < when < at:
                change = when  # the evidence says when (transition_times)
            close.append((row.id, change))
        new.append(dict(n, host=host, started_at=change, last_seen=at, last_run_id=run_id))
    by_time: Dict[float, List[int]] = {}
    for rid, when in close:
        by_time.setdefault(when, []).append(rid)
    for when, ids in by_time.items():
        _update_ids(conn, t, ids, {"ended_at": when, "last_seen": at})
    if extend and len(extend) + len(close) == len(open_rows):
        # every open period is a node of this run (a whole-cluster run): one statement, no id list
        conn.execute(t.update().where(t.c.ended_at.is_(None)).values(last_seen=at, last_run_id=run_id))
    else:
        _update_ids(conn, t, extend, {"last_seen": at, "last_run_id": run_id})
    for part in _chunks(new):
        conn.execute(t.insert(), part)
    return {"extended": len(extend), "closed": len(close), "opened": len(new)}


#: evidence keys that carry the time a fault was first seen in the evidence itself (kernel log, SEL, Slurm's reason
#: time, an alert's startsAt, the first sighting a node kept in its state): the incident's clocks start there
EVIDENCE_TIME_KEYS = ("first", "first_seen", "time", "reason_time", "active_since", "startsAt", "starts_at")


def _epoch(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value > 0 else None
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        when = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def evidence_time(finding: Dict[str, Any]) -> Optional[float]:
    """The earliest time the finding's own evidence names (EVIDENCE_TIME_KEYS), or None."""
    ev = finding.get("evidence") if isinstance(finding.get("evidence"), dict) else {}
    times = [_epoch(ev.get(k)) for k in EVIDENCE_TIME_KEYS]
    times += [_epoch(t) for t in ev.get("times") or [] if not isinstance(ev.get("times"), (str, bytes))]
    found = [t for t in times if t is not None]
    return min(found) if found else None


def _pairs(report: Dict[str, Any]) -> Iterable[Tuple[str, str, Dict[str, Any]]]:
    """(fingerprint, host, finding) of every finding in the report (node and cluster findings)."""
    for host, n in (report.get("nodes") or {}).items():
        for f in n.get("findings") or []:
            if isinstance(f, dict):
                yield _fingerprint(host, f), host, f
    summary = report.get("summary") or {}
    for f in summary.get("cluster_findings") or []:
        if isinstance(f, dict):
            yield _fingerprint("", f), "", f


def _finding_rows(report: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """fingerprint -> finding_history values of every finding in the report (node and cluster findings)."""
    out: Dict[str, Dict[str, Any]] = {}
    for fp, host, f in _pairs(report):
        ev = f.get("evidence") if isinstance(f.get("evidence"), dict) else {}
        serial = ev.get("serial") or ev.get("gpu_serial") or ev.get("part_serial")
        out[fp] = {
            "fingerprint": fp,
            "host": host or None,
            "check_id": str(f.get("check") or "unknown")[:128],
            "code": str(f.get("code"))[:128] if f.get("code") is not None else None,
            "severity": str(f.get("severity") or "P3")[:4],
            "domain": str(f.get("domain"))[:32] if f.get("domain") else None,
            "component": component_class(f.get("check"), f.get("component")),
            "part_serial": str(serial)[:128] if serial else None,
            "action": str(f.get("action"))[:32] if f.get("action") else None,
            "summary": str(f.get("message") or "")[:4000],
        }
    return out


def last_observed(conn: Any, hosts: Iterable[str], at: float) -> Dict[str, float]:
    """Each host's last observation before ``at`` (its latest period's ``last_seen``), and ``""`` -> the previous
    run's time (for cluster findings). Read before the run updates the periods."""
    np_ = tables()["node_periods"]
    out: Dict[str, float] = {}
    for part in _chunks(sorted(set(hosts))):
        q = (
            sa.select(np_.c.host, sa.func.max(np_.c.last_seen))
            .where(np_.c.host.in_(part), np_.c.last_seen < at)
            .group_by(np_.c.host)
        )
        out.update((h, float(t)) for h, t in conn.execute(q) if t is not None)
    runs = tables()["runs"]
    prev_run = conn.execute(sa.select(sa.func.max(runs.c.started_at)).where(runs.c.started_at < at)).scalar()
    if prev_run is not None:
        out[""] = float(prev_run)
    return out


def detection_times(
    report: Dict[str, Any], fingerprints: Iterable[str], at: float, observed: Dict[str, float]
) -> Dict[str, float]:
    """When each new finding's fault was detected (docs/service.md "Clocks start at the fault"): the earliest time
    its evidence names, never before the previous clean observation of its host (``observed``, from
    :func:`last_observed`: a new finding was not there when the host was last seen), never after the run. Without
    an evidence time: the run's time."""
    wanted = set(fingerprints)
    out: Dict[str, float] = {}
    for fp, host, f in _pairs(report):
        if fp not in wanted:
            continue
        t = evidence_time(f)
        if t is None or t >= at:
            out[fp] = at
            continue
        floor = observed.get(host or "")
        out[fp] = max(t, floor) if floor is not None else t
    return out


def _findings(conn: Any, report: Dict[str, Any], at: float, run_id: str) -> Tuple[List[Dict[str, Any]], set]:
    """Write finding_history; returns (the findings that first appeared, the fingerprints open after the run)."""
    t = tables()["finding_history"]
    rows = _finding_rows(report)
    hosts = set(report.get("nodes") or {}) | {""}
    open_rows = conn.execute(sa.select(t.c.id, t.c.fingerprint, t.c.host).where(t.c.cleared_at.is_(None))).all()
    seen, cleared, still = [], [], set()
    for r in open_rows:
        if r.fingerprint in rows:
            seen.append(r.id)
            still.add(r.fingerprint)
        elif (r.host or "") in hosts:
            cleared.append(r.id)  # its node (or the cluster) was inspected and the finding is gone
        else:
            still.add(r.fingerprint)  # not inspected this run (a slice): unknown, left open
    _update_ids(conn, t, cleared, {"cleared_at": at, "last_run_id": run_id})
    _update_ids(conn, t, seen, {"last_seen": at, "last_run_id": run_id})
    new = [dict(v, first_seen=at, last_seen=at, last_run_id=run_id) for fp, v in rows.items() if fp not in still]
    for part in _chunks(new):
        conn.execute(t.insert(), part)
    return new, still | {v["fingerprint"] for v in new}


def _alloc_from_facts(report: Dict[str, Any]) -> Dict[str, Dict[str, int]]:
    """Per partition {gpus, gpus_allocated} from the nodes' Slurm records when they carry AllocTRES (else none)."""
    out: Dict[str, Dict[str, int]] = {}
    for host, n in (report.get("nodes") or {}).items():
        rec = _slurm_record(n.get("facts"), host)
        raw = (rec or {}).get("raw") if isinstance((rec or {}).get("raw"), dict) else {}
        if not rec or "AllocTRES" not in raw or not isinstance(rec.get("gres_gpus"), int) or not rec.get("partitions"):
            continue
        alloc = 0
        for item in str(raw.get("AllocTRES") or "").split(","):
            key, _sep, value = item.partition("=")
            if key.strip() == "gres/gpu" and value.strip().isdigit():
                alloc = int(value)
        part = out.setdefault(str(rec["partitions"][0]), {"gpus": 0, "gpus_allocated": 0})
        part["gpus"] += rec["gres_gpus"]
        part["gpus_allocated"] += alloc
    return out


def allocation(report: Dict[str, Any]) -> Dict[str, Dict[str, int]]:
    """The scheduler's own GPU figures per partition: report ``platform.capacity`` (the platform facts), else the
    nodes' Slurm records (AllocTRES); empty when neither says (never invented)."""
    cap = ((report.get("platform") or {}).get("capacity")) or {}
    if isinstance(cap, dict) and cap:
        return {
            str(p): {"gpus": int(c.get("gpus") or 0), "gpus_allocated": int(c.get("gpus_allocated") or 0)}
            for p, c in cap.items()
            if isinstance(c, dict)
        }
    return _alloc_from_facts(report)


def default_run_id(report: Dict[str, Any], kind: str) -> str:
    """A run id from the report itself, so that recording the same report twice is a no-op."""
    h = hashlib.sha256()
    h.update(str(report.get("generated_at")).encode("utf-8"))
    h.update(str((report.get("policy") or {}).get("hash")).encode("utf-8"))
    for host in sorted(report.get("nodes") or {}):
        h.update(("|%s=%s" % (host, (report["nodes"][host] or {}).get("status"))).encode("utf-8"))
    return "%s-%s" % (kind, h.hexdigest()[:24])


def record_run(
    store: Any,
    report: Dict[str, Any],
    run_id: Optional[str] = None,
    kind: str = "inspect",
    now: Optional[float] = None,
    sla: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """Write one inspection report into the ledger as one transaction (lock ``ledger``); returns what was written.
    Recording the same run id again writes nothing (``recorded: false``). ``sla``: the policy's ``sla`` block
    (which severities open an incident); ``now``: the run's time (default: the report's ``generated_at``)."""
    if not isinstance(report, dict) or not isinstance(report.get("nodes"), dict):
        raise LedgerError("record_run needs an inspection report (a mapping with nodes)")
    sla = sla or _sla.DEFAULT_SLA
    at = float(now) if now is not None else report_time(report)
    run_id = run_id or default_run_id(report, kind)
    view = cluster_view(report)
    nodes = {host: node_state(host, n or {}, view) for host, n in report["nodes"].items()}
    alloc = allocation(report)
    t = tables()
    out: Dict[str, Any] = {"run_id": run_id, "at": at, "recorded": False}
    with store.begin(lock=LOCK) as conn:
        if conn.execute(sa.select(t["runs"].c.run_id).where(t["runs"].c.run_id == run_id)).first():
            return out
        summary = report.get("summary") or {}
        conn.execute(
            t["runs"].insert(),
            {
                "run_id": run_id,
                "kind": kind,
                "started_at": at,
                "finished_at": at,
                "policy_version": str((report.get("policy") or {}).get("version") or "")[:64] or None,
                "policy_hash": str((report.get("policy") or {}).get("hash") or "")[:128] or None,
                "nodes_total": len(nodes),
                "summary": {k: summary.get(k) for k in ("nodes", "status", "severity")},
            },
        )
        observed = last_observed(conn, nodes, at)  # before the periods move on: the previous clean sightings
        out["periods"] = _periods(conn, nodes, at, run_id, transition_times(report, nodes, observed, at))
        new, still_open = _findings(conn, report, at, run_id)
        if alloc:
            conn.execute(
                t["allocation_samples"].insert(),
                [
                    {
                        "run_id": run_id,
                        "at": at,
                        "partition": p[:128],
                        "gpus_total": c["gpus"],
                        "gpus_alloc": c["gpus_allocated"],
                    }
                    for p, c in sorted(alloc.items())
                ],
            )
        # a node finding explained by a cluster finding (a rack down, a job's Xid storm: its ``cause``) is part of
        # that incident, not one of its own
        caused = {fp for fp, _host, f in _pairs(report) if f.get("cause")}
        opens = [
            f
            for f in new
            if f["severity"] in (sla.get("open_severities") or [])
            and not f["check_id"].startswith("service.")
            and f["fingerprint"] not in caused
        ]
        detected = detection_times(report, [f["fingerprint"] for f in opens], at, observed)
        out["incidents_opened"] = insert_incidents(conn, opens, at, detected)
        up = {h for h, n in nodes.items() if n["state"] == "up"}
        out["incidents_restored"] = restore_incidents(conn, up, still_open, set(nodes), at)
        out.update(recorded=True, findings_new=len(new), allocation=sorted(alloc))
    return out


def prune(store: Any, policy: Optional[Dict[str, Any]] = None, now: Optional[float] = None) -> Dict[str, int]:
    """Delete ledger rows older than ``sla.retention_days`` (default 400): closed periods and cleared findings
    that ended before the cut, runs and allocation samples, closed incidents (with their events and review).
    Changes derived from the audit trail are never deleted younger than 183 days; a retention below that is
    refused (LedgerError)."""
    sla = (policy or {}).get("sla") or {}
    days = sla.get("retention_days", _sla.DEFAULT_SLA["retention_days"])
    if not isinstance(days, (int, float)) or isinstance(days, bool) or days < AUDIT_MIN_DAYS:
        raise LedgerError(
            "sla.retention_days must be a number of days of at least %d (audit records are kept six months for "
            "compliance), got %r" % (AUDIT_MIN_DAYS, days)
        )
    now = float(now if now is not None else time.time())
    cut = now - float(days) * 86400.0
    t = tables()
    done: Dict[str, int] = {}
    with store.begin(lock=LOCK) as conn:
        stmts = {
            "node_periods": t["node_periods"].delete().where(t["node_periods"].c.ended_at < cut),
            "finding_history": t["finding_history"].delete().where(t["finding_history"].c.cleared_at < cut),
            "allocation_samples": t["allocation_samples"].delete().where(t["allocation_samples"].c.at < cut),
            "runs": t["runs"].delete().where(t["runs"].c.started_at < cut),
            "changes": t["changes"].delete().where(t["changes"].c.at < min(cut, now - AUDIT_MIN_DAYS * 86400.0)),
            "tickets": t["tickets"].delete().where(t["tickets"].c.received_at < cut),
        }
        old = sa.select(t["incidents"].c.incident_id).where(
            t["incidents"].c.state == "closed", t["incidents"].c.closed_at < cut
        )
        ids = [r[0] for r in conn.execute(old)]
        for part in _chunks(ids):
            for name in ("incident_events", "reviews", "incidents"):
                tab = t[name]
                conn.execute(tab.delete().where(tab.c.incident_id.in_(part)))
        for name, stmt in stmts.items():
            done[name] = conn.execute(stmt).rowcount or 0
        done["incidents"] = len(ids)
    return done
