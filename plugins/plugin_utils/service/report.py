# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service report (docs/service-report.md): availability, SLA, capacity and reliability over a period.

``parse_period`` reads ``2026Q4``, ``2026-10-01/2026-12-31`` (inclusive end date) or ``2026-10``; ``compute``
reads the ledger (``_db/ledger_schema.py``) through ``Store.read()`` and returns the report dict (schema
``gpuops.service_report/v1``) following the issue 15 contract's definitions exactly:

- a period is [S, E); every node period is clipped to it (an open period runs until min(E, now));
- GPU-seconds = duration x ``node_periods.gpus``; ``down`` time inside a maintenance window covering the node is
  planned, the rest unplanned; availability = 100 x up / (up + unplanned), ``unknown`` time in neither term;
- an incident belongs to the period when detected_at is in [S, E); its breaches are ``_sla.breached`` at min(E, now);
- capacity: per run, sum(gpus_alloc) / sum(gpus_total) of its ``allocation_samples``; the peak over runs in [S, E).

Node periods are read in one streaming pass (server-side cursor on PostgreSQL); incidents, allocation samples and
reviews are aggregated per period. Rendering (Markdown, HTML with SVG charts) is in ``_service_report_render``.
Pure controller code, no Ansible imports.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import sla as _sla

try:
    import sqlalchemy as sa
except ImportError:  # the sanity import test
    sa = None

SCHEMA = "gpuops.service_report/v1"
COMPONENT_CLASSES = ("gpu", "hbm", "nvlink", "ib_link", "psu", "fan", "node", "storage", "scheduler", "other")
#: Classes whose parts only nodes with GPUs have (MTBF counts the up time of nodes with gpus > 0 for these).
GPU_CLASSES = ("gpu", "hbm", "nvlink")

_QUARTER = re.compile(r"(\d{4})[Qq]([1-4])")
_MONTH = re.compile(r"(\d{4})-(\d{2})")
_RANGE = re.compile(r"(\d{4}-\d{2}-\d{2})/(\d{4}-\d{2}-\d{2})")
_UTC = datetime.timezone.utc


class ServiceReportError(ValueError):
    """A period that cannot be read, or ledger data the report cannot use (the message says which)."""


# ---------------------------------------------------------------------------------------------- periods
def _ts(year: int, month: int, day: int = 1) -> float:
    return datetime.datetime(year, month, day, tzinfo=_UTC).timestamp()


def _date(text: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise ServiceReportError("period: %r is not a date (YYYY-MM-DD)" % text) from None


def _relative(text: str, now: Optional[float]) -> str:
    """``last-quarter`` / ``last-month`` (the one that ended most recently before ``now``, UTC) as its label, for
    a schedule that reports the period just ended (awx/controller.yml)."""
    if text not in ("last-quarter", "last-month"):
        return text
    t = datetime.datetime.fromtimestamp(
        float(now) if now is not None else datetime.datetime.now(tz=_UTC).timestamp(), tz=_UTC
    )
    if text == "last-month":
        year, month = (t.year - 1, 12) if t.month == 1 else (t.year, t.month - 1)
        return "%04d-%02d" % (year, month)
    quarter = (t.month - 1) // 3 + 1
    year, quarter = (t.year - 1, 4) if quarter == 1 else (t.year, quarter - 1)
    return "%04dQ%d" % (year, quarter)


def parse_period(text: Any, now: Optional[float] = None) -> Dict[str, Any]:
    """``{start, end, label}`` (UTC epoch seconds, end exclusive) of ``2026Q4`` (a quarter), ``2026-10`` (a
    month), ``2026-10-01/2026-12-31`` (dates, the end date included), or ``last-quarter`` / ``last-month`` (the
    one that ended most recently before ``now``). A period that starts after ``now``
    (default: the current time) is refused, and so is anything else, with a message that says what is accepted."""
    if not isinstance(text, str) or not text.strip():
        raise ServiceReportError("period must be text such as 2026Q4, 2026-10 or 2026-10-01/2026-12-31")
    text = _relative(text.strip(), now)
    m = _QUARTER.fullmatch(text)
    if m:
        year, quarter = int(m.group(1)), int(m.group(2))
        first = 3 * (quarter - 1) + 1
        start = _ts(year, first)
        end = _ts(year + 1, 1) if quarter == 4 else _ts(year, first + 3)
        label = "%dQ%d" % (year, quarter)
    elif _MONTH.fullmatch(text):
        m = _MONTH.fullmatch(text)
        year, month = int(m.group(1)), int(m.group(2))
        if not 1 <= month <= 12:
            raise ServiceReportError("period %r: month must be 01..12" % text)
        start = _ts(year, month)
        end = _ts(year + 1, 1) if month == 12 else _ts(year, month + 1)
        label = text
    elif _RANGE.fullmatch(text):
        m = _RANGE.fullmatch(text)
        first, last = _date(m.group(1)), _date(m.group(2))
        if last < first:
            raise ServiceReportError("period %r ends before it starts" % text)
        start = _ts(first.year, first.month, first.day)
        end = start + ((last - first).days + 1) * 86400.0
        label = text
    else:
        raise ServiceReportError(
            "period %r is not understood: use a quarter (2026Q4), a month (2026-10), an inclusive date range "
            "(2026-10-01/2026-12-31), UTC, or last-quarter / last-month" % (text[:64],)
        )
    if now is not None and start > float(now):
        raise ServiceReportError("period %s starts in the future" % label)
    return {"start": start, "end": end, "label": label}


def iso(ts: Optional[float]) -> Optional[str]:
    if ts is None:
        return None
    return datetime.datetime.fromtimestamp(float(ts), tz=_UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------- intervals
def _union(intervals: Iterable[Tuple[float, float]]) -> List[Tuple[float, float]]:
    out: List[List[float]] = []
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(span[0], span[1]) for span in out]


def _split(a: float, b: float, covered: List[Tuple[float, float]]) -> Tuple[List[Tuple[float, float]], List[Tuple]]:
    """[a, b) split into (inside ``covered``, outside) pieces; ``covered`` is a sorted disjoint union."""
    inside, outside = [], []
    cursor = a
    for wa, wb in covered:
        if wb <= cursor:
            continue
        if wa >= b:
            break
        lo, hi = max(wa, cursor), min(wb, b)
        if lo > cursor:
            outside.append((cursor, lo))
        inside.append((lo, hi))
        cursor = hi
    if cursor < b:
        outside.append((cursor, b))
    return inside, outside


class _Buckets:
    """GPU-seconds per trend bucket (a day for periods up to 31 days, else a week from the period's start)."""

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.width = 86400.0 if end - start <= 31 * 86400 else 7 * 86400.0
        self.count = max(1, int(-(-(end - start) // self.width)))
        self.up = [0.0] * self.count
        self.down = [0.0] * self.count

    def add(self, acc: List[float], a: float, b: float, gpus: int) -> None:
        i = int((a - self.start) // self.width)
        while a < b and i < self.count:
            edge = min(b, self.start + (i + 1) * self.width)
            acc[i] += (edge - a) * gpus
            a, i = edge, i + 1

    def series(self) -> List[List[Any]]:
        out = []
        for i in range(self.count):
            total = self.up[i] + self.down[i]
            out.append([self.start + i * self.width, round(100.0 * self.up[i] / total, 3) if total else None])
        return out


# ---------------------------------------------------------------------------------------------- availability
def _pct(up: float, unplanned: float) -> Optional[float]:
    total = up + unplanned
    return round(100.0 * up / total, 3) if total > 0 else None


def _hours(seconds: float) -> float:
    return round(seconds / 3600.0, 3)


class _Windows:
    """The maintenance windows of the period by scope, and the union covering one (host, partition), cached."""

    def __init__(self, rows: Iterable[Any], start: float, end: float) -> None:
        self.all: List[Tuple[float, float]] = []
        self.hosts: Dict[str, List[Tuple[float, float]]] = {}
        self.parts: Dict[str, List[Tuple[float, float]]] = {}
        for starts_at, ends_at, scope in rows:
            span = (max(float(starts_at), start), min(float(ends_at), end))
            scope = scope if isinstance(scope, dict) else {}
            if scope.get("all") is True:
                self.all.append(span)
                continue
            for host in scope.get("hosts") or []:
                self.hosts.setdefault(str(host), []).append(span)
            for part in scope.get("partitions") or []:
                self.parts.setdefault(str(part), []).append(span)
        self._cache: Dict[Tuple[str, Optional[str]], List[Tuple[float, float]]] = {}

    def covering(self, host: str, partition: Optional[str]) -> List[Tuple[float, float]]:
        key = (host, partition)
        found = self._cache.get(key)
        if found is None:
            spans = self.all + self.hosts.get(host, []) + (self.parts.get(partition, []) if partition else [])
            found = self._cache[key] = _union(spans)
        return found


def _availability(conn: Any, t: Any, start: float, end: float, horizon: float) -> Dict[str, Any]:
    """One streaming pass over the node periods that overlap [start, end)."""
    np_ = t.tables["node_periods"]
    mw = t.tables["maintenance_windows"]
    windows = _Windows(
        conn.execute(
            sa.select(mw.c.starts_at, mw.c.ends_at, mw.c.scope).where(mw.c.starts_at < end, mw.c.ends_at > start)
        ),
        start,
        end,
    )
    # per (host, partition): [up, unplanned, planned, unknown] GPU-seconds, up node-seconds (MTBF), most GPUs seen
    acc: Dict[Tuple[str, Optional[str]], List[float]] = {}
    buckets = _Buckets(start, end)
    query = (
        sa.select(np_.c.host, np_.c.state, np_.c.partition, np_.c.gpus, np_.c.started_at, np_.c.ended_at)
        .where(np_.c.started_at < end, sa.or_(np_.c.ended_at.is_(None), np_.c.ended_at > start))
        .execution_options(stream_results=True, yield_per=20000)
    )
    for host, state, partition, gpus, started, ended in conn.execute(query):
        a = started if started > start else start
        b = horizon if ended is None else ended
        b = b if b < end else end
        row = acc.get((host, partition))
        if row is None:
            row = acc[(host, partition)] = [0.0, 0.0, 0.0, 0.0, 0.0, 0]
        gpus = gpus or 0
        row[5] = max(row[5], gpus)
        if b <= a:
            continue
        if state == "up":
            row[0] += (b - a) * gpus
            row[4] += b - a
            buckets.add(buckets.up, a, b, gpus)
        elif state == "down":
            covered = windows.covering(host, partition)
            inside, outside = _split(a, b, covered) if covered else ((), ((a, b),))
            row[2] += sum(y - x for x, y in inside) * gpus
            for x, y in outside:
                row[1] += (y - x) * gpus
                buckets.add(buckets.down, x, y, gpus)
        else:  # unknown (or a state this collection does not know: not observed)
            row[3] += (b - a) * gpus
    return _availability_figures(acc, buckets)


def _availability_figures(acc: Dict[Tuple[str, Optional[str]], List[float]], buckets: _Buckets) -> Dict[str, Any]:
    hosts: Dict[str, List[float]] = {}
    parts: Dict[str, List[float]] = {}
    for (host, partition), row in acc.items():
        for target in [hosts.setdefault(host, [0.0] * 6)] + (
            [parts.setdefault(partition, [0.0] * 6)] if partition is not None else []
        ):
            for i in range(5):
                target[i] += row[i]
            target[5] = max(target[5], row[5])
    total = [sum(v[i] for v in hosts.values()) for i in range(4)]
    return {
        "cluster": _pct(total[0], total[1]),
        "nodes": {h: _pct(v[0], v[1]) for h, v in sorted(hosts.items())},
        "partitions": {p: _pct(v[0], v[1]) for p, v in sorted(parts.items())},
        "up_gpu_hours": _hours(total[0]),
        "unplanned_gpu_hours": _hours(total[1]),
        "planned_gpu_hours": _hours(total[2]),
        "unknown_gpu_hours": _hours(total[3]),
        "trend": buckets.series(),
        "trend_bucket_s": buckets.width,
        "_up_node_s": {h: v[4] for h, v in hosts.items()},
        "_has_gpus": {h: v[5] > 0 for h, v in hosts.items()},
    }


# ---------------------------------------------------------------------------------------------- incidents and SLA
_INCIDENT_COLUMNS = (
    "incident_id",
    "fingerprint",
    "host",
    "severity",
    "domain",
    "component",
    "title",
    "source",
    "sla_profile",
    "state",
    "detected_at",
    "acknowledged_at",
    "onsite_at",
    "located_at",
    "planned_at",
    "mitigated_at",
    "restored_at",
    "closed_at",
)


def _incidents(conn: Any, t: Any, start: float, end: float) -> List[Dict[str, Any]]:
    inc = t.tables["incidents"]
    query = (
        sa.select(*[inc.c[name] for name in _INCIDENT_COLUMNS])
        .where(inc.c.detected_at >= start, inc.c.detected_at < end)
        .order_by(inc.c.detected_at, inc.c.incident_id)
    )
    return [dict(row._mapping) for row in conn.execute(query)]


def _sla_figures(incidents: List[Dict[str, Any]], at: float, policy_sla: Dict[str, Any]) -> Dict[str, Any]:
    by_sev = {s: {"incidents": 0, "breached": 0, "compliance_pct": None} for s in _sla.SEVERITIES}
    breaches: List[str] = []
    details: List[Dict[str, Any]] = []
    for incident in incidents:
        sev = incident["severity"]
        if sev not in by_sev:
            raise ServiceReportError("incident %s has an unknown severity %r" % (incident["incident_id"], sev))
        try:
            missed = _sla.breached(incident, now=at, sla=policy_sla)
        except _sla.SlaError as exc:
            raise ServiceReportError("incident %s: %s" % (incident["incident_id"], exc)) from None
        by_sev[sev]["incidents"] += 1
        if missed:
            by_sev[sev]["breached"] += 1
            breaches.append(incident["incident_id"])
            details.append({"incident_id": incident["incident_id"], "severity": sev, "clocks": missed})
    for row in by_sev.values():
        if row["incidents"]:
            row["compliance_pct"] = round(100.0 * (row["incidents"] - row["breached"]) / row["incidents"], 3)
    return {
        "incidents": len(incidents),
        "breaches": sorted(breaches),
        "breach_details": sorted(details, key=lambda d: d["incident_id"]),
        "by_severity": by_sev,
        "evaluated_at": iso(at),
    }


def _component(incident: Dict[str, Any]) -> str:
    comp = incident.get("component")
    return comp if comp in COMPONENT_CLASSES else "other"


def _incident_counts(incidents: List[Dict[str, Any]]) -> Dict[str, Any]:
    by_domain: Dict[str, Dict[str, int]] = {}
    by_sev = dict.fromkeys(_sla.SEVERITIES, 0)
    for incident in incidents:
        by_sev[incident["severity"]] += 1
        row = by_domain.setdefault(incident.get("domain") or "other", dict.fromkeys(_sla.SEVERITIES, 0))
        row[incident["severity"]] += 1
    return {
        "total": len(incidents),
        "open": sum(1 for i in incidents if i.get("state") != "closed"),
        "by_severity": by_sev,
        "by_domain": {d: by_domain[d] for d in sorted(by_domain)},
    }


def _refuse_the_future(conn: Any, t: Any, now: float) -> None:
    """Ledger rows that start after the report's "now" are an error (a clock set wrong, a simulator that ran
    ahead): charting them would report time that has not happened."""
    slack = 300.0  # controllers' clocks disagree by seconds, not by five minutes
    checks = (
        ("node_periods", "started_at", "host"),
        ("incidents", "detected_at", "incident_id"),
    )
    for table, column, ident in checks:
        tab = t.tables[table]
        row = conn.execute(
            sa.select(tab.c[ident], tab.c[column]).where(tab.c[column] > now + slack).order_by(tab.c[column]).limit(1)
        ).first()
        if row is not None:
            raise ServiceReportError(
                "the ledger has %s rows after the report's time %s (first: %s at %s): refusing to report time "
                "that has not happened; check the controller's clock or generate the report later"
                % (table, iso(now), row[0], iso(row[1]))
            )


def _reliability(incidents: List[Dict[str, Any]], avail: Dict[str, Any], buckets: float, start: float) -> Dict:
    """MTTR (restored incidents) and MTBF (observed up node-time / failures) per component class, in hours."""
    repair: Dict[str, List[float]] = {}
    failures: Dict[str, int] = {}
    trend: Dict[int, List[float]] = {}
    for incident in incidents:
        cls = _component(incident)
        failures[cls] = failures.get(cls, 0) + 1
        if incident.get("restored_at") is not None:
            hours = (float(incident["restored_at"]) - float(incident["detected_at"])) / 3600.0
            repair.setdefault(cls, []).append(hours)
            trend.setdefault(int((float(incident["detected_at"]) - start) // buckets), []).append(hours)
    up = avail["_up_node_s"]
    up_all = sum(up.values())
    up_gpu = sum(s for h, s in up.items() if avail["_has_gpus"].get(h))
    mttr = {c: round(sum(v) / len(v), 3) for c, v in sorted(repair.items())}
    mtbf = {c: round((up_gpu if c in GPU_CLASSES else up_all) / n / 3600.0, 3) for c, n in sorted(failures.items())}
    series = [[start + i * buckets, round(sum(v) / len(v), 3)] for i, v in sorted(trend.items())]
    # MTBF as an operator reads it: days, with the number of failures it rests on (one failure is not a rate)
    mtbf_days = {c: {"days": round(h / 24.0, 2), "failures": failures[c]} for c, h in mtbf.items()}
    return {
        "mttr_h": mttr,
        "mtbf_h": mtbf,
        "mtbf_days": mtbf_days,
        "failures": dict(sorted(failures.items())),
        "mttr_trend": series,
    }


def _repeat_offenders(conn: Any, t: Any, incidents: List[Dict[str, Any]], start: float, end: float) -> Dict:
    per_host: Dict[str, List[str]] = {}
    for incident in incidents:
        if incident.get("host"):
            per_host.setdefault(incident["host"], []).append(incident["incident_id"])
    inc, fh = t.tables["incidents"], t.tables["finding_history"]
    query = (
        sa.select(inc.c.incident_id, inc.c.host, fh.c.part_serial)
        .join(fh, fh.c.fingerprint == inc.c.fingerprint)
        .where(inc.c.detected_at >= start, inc.c.detected_at < end, fh.c.part_serial.is_not(None))
        .distinct()
    )
    per_serial: Dict[str, Dict[str, set]] = {}
    for incident_id, host, serial in conn.execute(query):
        if not serial:
            continue
        entry = per_serial.setdefault(serial, {"ids": set(), "hosts": set()})
        entry["ids"].add(incident_id)
        if host:
            entry["hosts"].add(host)
    nodes = [
        {"host": h, "incidents": len(ids), "incident_ids": sorted(ids)} for h, ids in per_host.items() if len(ids) >= 2
    ]
    serials = [
        {"serial": s, "incidents": len(e["ids"]), "incident_ids": sorted(e["ids"]), "hosts": sorted(e["hosts"])}
        for s, e in per_serial.items()
        if len(e["ids"]) >= 2
    ]
    nodes.sort(key=lambda r: (-r["incidents"], r["host"]))
    serials.sort(key=lambda r: (-r["incidents"], r["serial"]))
    return {"nodes": nodes, "serials": serials}


def _reviews(conn: Any, t: Any, start: float, end: float) -> List[Dict[str, Any]]:
    """Reviews written in the period or of incidents detected in it."""
    rv, inc = t.tables["reviews"], t.tables["incidents"]
    query = (
        sa.select(rv.c.incident_id, rv.c.cause, rv.c.fix, rv.c.change_ref, rv.c.checks, rv.c.actor, rv.c.at)
        .join(inc, inc.c.incident_id == rv.c.incident_id)
        .where(
            sa.or_(
                sa.and_(rv.c.at >= start, rv.c.at < end),
                sa.and_(inc.c.detected_at >= start, inc.c.detected_at < end),
            )
        )
        .order_by(rv.c.at, rv.c.incident_id)
    )
    out = []
    for row in conn.execute(query):
        checks = row.checks if isinstance(row.checks, list) else []
        out.append(
            {
                "incident_id": row.incident_id,
                "cause": row.cause,
                "fix": row.fix,
                "change_ref": row.change_ref,
                "checks": sorted({str(c) for c in checks}),
                "actor": row.actor,
                "at": iso(row.at),
            }
        )
    return out


# ---------------------------------------------------------------------------------------------- capacity
def _capacity(conn: Any, t: Any, start: float, end: float, trigger: float) -> Dict[str, Any]:
    al = t.tables["allocation_samples"]
    query = (
        sa.select(al.c.run_id, sa.func.min(al.c.at), sa.func.sum(al.c.gpus_alloc), sa.func.sum(al.c.gpus_total))
        .where(al.c.at >= start, al.c.at < end)
        .group_by(al.c.run_id)
    )
    series = []
    for _run, at, alloc, total in conn.execute(query):
        if total:
            series.append([float(at), round(float(alloc) / float(total), 4)])
    series.sort()
    peak = max((s for _at, s in series), default=None)
    over = [at for at, s in series if s >= trigger]
    return {
        "peak_allocated_share": peak,
        "trigger": trigger,
        "series": series,
        "samples": len(series),
        "above_trigger": len(over),
        "first_above_trigger": iso(over[0]) if over else None,
    }


# ---------------------------------------------------------------------------------------------- the report
def compute(
    store: Any, period: Dict[str, Any], policy_sla: Optional[Dict[str, Any]] = None, now: Optional[float] = None
) -> Dict[str, Any]:
    """The service report of ``period`` (``parse_period``) from the ledger in ``store`` (``_db.open_store``).

    ``policy_sla``: the policy's ``sla`` key (targets, profiles, capacity_trigger), default ``_sla.DEFAULT_SLA``;
    ``now`` (epoch s, default the current time): open periods and running SLA clocks are evaluated at
    min(period end, now). Raises StoreError (the store) or ServiceReportError (ledger data it cannot use)."""
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import (  # pylint: disable=import-outside-toplevel
        ledger_schema,
    )

    sla = dict(_sla.DEFAULT_SLA)
    sla.update(policy_sla or {})
    now = float(now) if now is not None else datetime.datetime.now(tz=_UTC).timestamp()
    start, end = float(period["start"]), float(period["end"])
    horizon = min(end, now)
    trigger = float(sla.get("capacity_trigger", 0.7))
    t = ledger_schema.tables()
    with store.read() as conn:
        _refuse_the_future(conn, t, now)
        avail = _availability(conn, t, start, end, horizon)
        incidents = _incidents(conn, t, start, end)
        offenders = _repeat_offenders(conn, t, incidents, start, end)
        reviews = _reviews(conn, t, start, end)
        capacity = _capacity(conn, t, start, end, trigger)
    rel = _reliability(incidents, avail, avail["trend_bucket_s"], start)
    del avail["_up_node_s"], avail["_has_gpus"]
    target = sla.get("availability_target")
    avail["target"] = target
    avail["target_met"] = None if target is None or avail["cluster"] is None else avail["cluster"] >= float(target)
    figures = _sla_figures(incidents, horizon, sla)
    figures["targets"] = {sev: _sla.targets_for(sev, sla) for sev in _sla.SEVERITIES}
    return {
        "schema": SCHEMA,
        "generated_at": iso(now),
        "period": {
            "start": iso(start),
            "end": iso(end),
            "label": period.get("label") or "%s/%s" % (iso(start), iso(end)),
            "start_ts": start,
            "end_ts": end,
            "days": round((end - start) / 86400.0, 3),
            # a period that has not ended is partial: counted up to the generation time, never beyond
            "partial": now < end,
            "counted_until": iso(horizon),
        },
        "availability": avail,
        "sla": figures,
        "incidents": _incident_counts(incidents),
        "capacity": capacity,
        "mttr_h": rel["mttr_h"],
        "mtbf_h": rel["mtbf_h"],
        "mtbf_days": rel["mtbf_days"],
        "failures": rel["failures"],
        "mttr_trend": rel["mttr_trend"],
        "repeat_offenders": offenders,
        "reviews": reviews,
        "checks_changed_by_reviews": sorted({c for r in reviews for c in r["checks"]}),
    }
