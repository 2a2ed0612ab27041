# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Incidents and their SLA clocks in the ledger (docs/service.md).

An incident opens when a P0-P2 finding first appears (``_ledger.record_run``) or a ticket arrives
(:func:`record_ticket`); its id ``INC-YYYYMMDD-NNNN`` is drawn inside the transaction that holds the database lock
``ledger``, so two runs at once never give the same id. The steps after ``detected``: ``acknowledged``,
``on site`` (an engineer at the hardware), ``located`` (cause recorded), ``planned`` (the remote plan written),
``mitigated`` (isolated / workload moved), ``restored`` (back in service and healthy) and ``closed`` (the review
done for P0/P1), each an ``incident_events`` row saying who or what set it.

:func:`apply_step` is the operator command (``gpuops.cluster.incident``): idempotent (a step already taken changes
nothing and says so), out-of-order steps refused with the reason, check mode computes the change and writes
nothing. :func:`open_clocks` and :func:`sla_findings` turn the open incidents' clocks into ``service.sla``
findings and Prometheus samples. Outside text (causes, notes, ticket summaries) is stored as data.
"""

from __future__ import annotations

import datetime
import re
import time
from typing import Any, Dict, List, Optional, Set, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import sla as _sla
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_keys as _keys
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_schema

try:
    import sqlalchemy as sa
except ImportError:  # sanity import test
    sa = None

LOCK = "ledger"
INCIDENT_ID = re.compile(r"INC-[0-9]{8}-[0-9]{4,6}")
STEPS = ("acknowledge", "onsite", "locate", "plan", "mitigate", "restore", "close", "note")
_COLUMN = {
    "acknowledge": ("acknowledged_at", "acknowledged"),
    "onsite": ("onsite_at", "on site"),
    "locate": ("located_at", "located"),
    "plan": ("planned_at", "planned"),
    "mitigate": ("mitigated_at", "mitigated"),
    "restore": ("restored_at", "restored"),
    "close": ("closed_at", "closed"),
}
_TEXT_MAX = 4000
_T: Dict[str, Any] = {}


class IncidentError(ValueError):
    """An operator step that cannot be taken (unknown incident, out of order, missing review)."""


def tables() -> Dict[str, Any]:
    if not _T:
        _T.update(ledger_schema.tables().tables)
    return _T


def iso(ts: Optional[float]) -> Optional[str]:
    if ts is None:
        return None
    return datetime.datetime.fromtimestamp(float(ts), tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _new_ids(conn: Any, at: float, count: int) -> List[str]:
    """``count`` fresh incident ids of ``at``'s UTC day (call inside the locked transaction)."""
    t = tables()["incidents"]
    prefix = "INC-%s-" % datetime.datetime.fromtimestamp(at, tz=datetime.timezone.utc).strftime("%Y%m%d")
    last = 0
    for (iid,) in conn.execute(sa.select(t.c.incident_id).where(t.c.incident_id.like(prefix + "%"))):
        tail = iid[len(prefix) :]
        if tail.isdigit():
            last = max(last, int(tail))
    return ["%s%04d" % (prefix, last + i) for i in range(1, count + 1)]


def _event(iid: str, step: str, at: float, actor: str, source: str, detail: Optional[str] = None) -> Dict[str, Any]:
    return {"incident_id": iid, "step": step, "at": at, "actor": actor, "source": source, "detail": detail}


SEVERITY_RANK = {"P0": 0, "P1": 1, "P2": 2, "P3": 3}


def _open_holders(conn: Any, fps: List[str]) -> Dict[str, str]:
    """fingerprint -> the open incident that holds it (as the one that opened it, or joined), for ``fps``."""
    t = tables()
    inc, ev = t["incidents"], t["incident_events"]
    have: Dict[str, str] = {}
    for i in range(0, len(fps), 2000):
        part = fps[i : i + 2000]
        q = (
            sa.select(ev.c.detail, ev.c.incident_id)
            .join(inc, inc.c.incident_id == ev.c.incident_id)
            .where(inc.c.state == "open", ev.c.step == "joined", ev.c.detail.in_(part))
        )
        have.update((r[0], r[1]) for r in conn.execute(q))
        q = sa.select(inc.c.fingerprint, inc.c.incident_id).where(inc.c.state == "open", inc.c.fingerprint.in_(part))
        have.update((r[0], r[1]) for r in conn.execute(q))
    return have


def _open_fingerprints(conn: Any, fps: List[str]) -> Set[str]:
    """The fingerprints among ``fps`` that an open incident already holds (as the one that opened it, or joined)."""
    return set(_open_holders(conn, fps))


def _earlier(conn: Any, when: Dict[str, float]) -> List[str]:
    """Move open incidents' ``detected_at`` (and their ``detected`` event) back to an earlier detection of the same
    fault seen by another path (an inspection's evidence after an alert, an alert's startsAt after an inspection):
    ``when``: incident id -> time. Returns the ids moved."""
    t = tables()
    inc, ev = t["incidents"], t["incident_events"]
    moved = []
    for iid, at in sorted(when.items()):
        res = conn.execute(inc.update().where(inc.c.incident_id == iid, inc.c.detected_at > at).values(detected_at=at))
        if res.rowcount:
            conn.execute(
                ev.update().where(ev.c.incident_id == iid, ev.c.step == "detected", ev.c.at > at).values(at=at)
            )
            moved.append(iid)
    return moved


def _running(conn: Any, hosts: Set[str]) -> Dict[str, Tuple[str, str]]:
    """host -> (incident id, severity) of its open incident that is not restored yet (the latest)."""
    inc = tables()["incidents"]
    out: Dict[str, Tuple[str, str]] = {}
    names = sorted(hosts)
    for i in range(0, len(names), 2000):
        q = (
            sa.select(inc.c.host, inc.c.incident_id, inc.c.severity)
            .where(inc.c.state == "open", inc.c.restored_at.is_(None), inc.c.host.in_(names[i : i + 2000]))
            .order_by(inc.c.detected_at)
        )
        out.update((r.host, (r.incident_id, r.severity)) for r in conn.execute(q))
    return out


def insert_incidents(
    conn: Any, findings: List[Dict[str, Any]], at: float, detected: Optional[Dict[str, float]] = None
) -> List[str]:
    """Open incidents for new findings (finding_history values); returns the new ids. One fault is one incident
        (docs/service.md "One fault, one incident"): the new findings of one node in one run open ONE incident (its
        severity and component are the most severe finding's, ``detected_at`` the earliest), and a new finding on a node
        whose incident is still running joins it when it is not more severe (a more severe one opens its own incident:
        its clocks are stricter). The other findings are recorded as ``joined`` events; the incident is restored when
        all of them are gone. The new cluster findings of one run are one incident too (a rack that lost power is the rack
    finding and the capacity it took away); a later cluster finding opens its own. ``detected``: fingerprint -> when the fault was
        detected (its evidence time, ``_ledger.detection_times``); the run's time ``at`` for the others."""
    detected = detected or {}
    if not findings:
        return []
    t = tables()
    inc = t["incidents"]
    have = _open_holders(conn, [f["fingerprint"] for f in findings])
    todo = [f for f in findings if f["fingerprint"] not in have]
    earlier: Dict[str, float] = {}  # an alert opened it: this inspection's evidence may be older
    for f in findings:
        iid, when = have.get(f["fingerprint"]), detected.get(f["fingerprint"])
        if iid and when is not None:
            earlier[iid] = min(when, earlier.get(iid, when))
    if not todo:
        _earlier(conn, earlier)
        return []
    running = _running(conn, {f["host"] for f in todo if f.get("host")})
    groups: Dict[Any, List[Dict[str, Any]]] = {}
    events: List[Dict[str, Any]] = []
    for f in todo:
        host, fp = f.get("host"), f["fingerprint"]
        when = detected.get(fp, at)
        cur = running.get(host) if host else None
        if cur and SEVERITY_RANK.get(f["severity"], 9) >= SEVERITY_RANK.get(cur[1], 9):
            events.append(_event(cur[0], "joined", when, "inspection", "inspection", fp))
            earlier[cur[0]] = min(when, earlier.get(cur[0], when))
            continue
        groups.setdefault(host or "", []).append(f)
    ids = _new_ids(conn, at, len(groups)) if groups else []
    rows = []
    for iid, members in zip(ids, groups.values()):
        members.sort(key=lambda m: (SEVERITY_RANK.get(m["severity"], 9), detected.get(m["fingerprint"], at)))
        first = members[0]
        when = min(detected.get(m["fingerprint"], at) for m in members)
        rows.append(
            {
                "incident_id": iid,
                "fingerprint": first["fingerprint"],
                "host": first.get("host"),
                "severity": first["severity"],
                "domain": first.get("domain"),
                "component": first.get("component"),
                "title": first.get("summary"),
                "source": "finding",
                "state": "open",
                "detected_at": when,
            }
        )
        events.append(_event(iid, "detected", when, "inspection", "inspection", first["fingerprint"]))
        events.extend(_event(iid, "joined", when, "inspection", "inspection", m["fingerprint"]) for m in members[1:])
    if rows:
        conn.execute(inc.insert(), rows)
    if events:
        conn.execute(t["incident_events"].insert(), events)
    _earlier(conn, earlier)
    return ids


def restore_incidents(conn: Any, up: Set[str], still_open: Set[str], inspected: Set[str], at: float) -> List[str]:
    """Set ``restored`` on open incidents whose findings (the one that opened it and those that joined) are all
    gone and whose node is back ``up`` (a cluster finding: gone); returns the ids."""
    t = tables()
    inc, ev = t["incidents"], t["incident_events"]
    q = sa.select(inc.c.incident_id, inc.c.fingerprint, inc.c.host).where(
        inc.c.state == "open", inc.c.restored_at.is_(None), inc.c.fingerprint.is_not(None), inc.c.detected_at <= at
    )
    candidates = [r for r in conn.execute(q) if r.fingerprint not in still_open]
    joined: Dict[str, Set[str]] = {}
    cids = [r.incident_id for r in candidates]
    for i in range(0, len(cids), 2000):
        jq = sa.select(ev.c.incident_id, ev.c.detail).where(
            ev.c.step == "joined", ev.c.incident_id.in_(cids[i : i + 2000])
        )
        for iid, fp in conn.execute(jq):
            joined.setdefault(iid, set()).add(fp)
    ids = []
    for r in candidates:
        if joined.get(r.incident_id, set()) & still_open:
            continue
        if (r.host and r.host in up) or (not r.host and inspected):
            ids.append(r.incident_id)
    for i in range(0, len(ids), 2000):
        conn.execute(inc.update().where(inc.c.incident_id.in_(ids[i : i + 2000])).values(restored_at=at))
    if ids:
        conn.execute(
            t["incident_events"].insert(),
            [
                _event(iid, "restored", at, "inspection", "inspection", "back in service, finding cleared")
                for iid in ids
            ],
        )
    return ids


def _row(conn: Any, incident_id: str) -> Dict[str, Any]:
    if not isinstance(incident_id, str) or not INCIDENT_ID.fullmatch(incident_id):
        raise IncidentError("%r is not an incident id (INC-YYYYMMDD-NNNN)" % (incident_id,))
    inc = tables()["incidents"]
    row = conn.execute(sa.select(inc).where(inc.c.incident_id == incident_id)).mappings().first()
    if row is None:
        raise IncidentError("unknown incident %s (gpuops.cluster.incident -e gpuops_incident_step=list)" % incident_id)
    return dict(row)


def _text(value: Any, what: str, required: bool = False) -> Optional[str]:
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise IncidentError("%s is required for this step" % what)
        return None
    if not isinstance(value, str):
        raise IncidentError("%s must be text" % what)
    if len(value) > _TEXT_MAX:
        raise IncidentError("%s is longer than %d characters" % (what, _TEXT_MAX))
    return value


def _order(row: Dict[str, Any], step: str) -> None:
    """Refuse a step the incident is not ready for (the message says what comes first)."""
    iid = row["incident_id"]
    if row["state"] == "closed" and step != "close":
        raise IncidentError("incident %s is closed (%s): no further steps" % (iid, iso(row["closed_at"])))
    if step in ("onsite", "locate", "plan", "mitigate", "restore", "close") and row["acknowledged_at"] is None:
        raise IncidentError("incident %s is not acknowledged yet: acknowledge it before '%s'" % (iid, step))
    if step == "close" and row["state"] != "closed" and row["restored_at"] is None:
        raise IncidentError("incident %s is not restored yet: restore it before 'close'" % iid)


def _plan_close(row: Dict[str, Any], review: Optional[Dict[str, Any]], sla: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    review = review or {}
    needed = row["severity"] in (sla.get("review_required") or [])
    fields = {
        k: _text(review.get(k), "the review's %s (gpuops_review_%s)" % (k, k), needed)
        for k in ("cause", "fix", "change_ref")
    }
    checks = review.get("checks") or []
    if isinstance(checks, str):
        checks = [c.strip() for c in checks.split(",") if c.strip()]
    if not isinstance(checks, list) or not all(
        isinstance(c, str) and re.fullmatch(r"[a-z0-9_.]{1,128}", c) for c in checks
    ):
        raise IncidentError("gpuops_review_checks must be a list of check ids such as gpu.xid")
    if not any(fields.values()) and not checks:
        return None
    if fields["change_ref"] and len(fields["change_ref"]) > 255:
        raise IncidentError("the review's change_ref is longer than 255 characters")
    return {
        "cause": fields["cause"] or "",
        "fix": fields["fix"] or "",
        "change_ref": fields["change_ref"] or "",
        "checks": checks,
    }


def plan_step(
    row: Dict[str, Any], step: str, cause: Any = None, review: Any = None, sla: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]:
    """What ``step`` changes on ``row``: {changed, msg, values, review}; raises IncidentError when refused."""
    if step not in STEPS:
        raise IncidentError("unknown step %r (one of %s)" % (step, ", ".join(STEPS)))
    sla = sla or _sla.DEFAULT_SLA
    iid = row["incident_id"]
    if step == "note":
        _order(row, step)
        return {
            "changed": True,
            "msg": "note added to %s" % iid,
            "values": {},
            "review": None,
            "detail": _text(cause, "the note (gpuops_incident_cause)", True),
        }
    _order(row, step)
    column, word = _COLUMN[step]
    if row[column] is not None:
        return {
            "changed": False,
            "msg": "incident %s is already %s (%s): nothing to do" % (iid, word, iso(row[column])),
            "values": {},
            "review": None,
            "detail": None,
        }
    values: Dict[str, Any] = {}
    detail = _text(cause, "the cause (gpuops_incident_cause)", step == "locate")
    if step == "locate":
        values["cause"] = detail
    planned = None
    if step == "close":
        planned = _plan_close(row, review, sla)
        values["state"] = "closed"
    return {
        "changed": True,
        "msg": "incident %s %s" % (iid, word),
        "values": values,
        "review": planned,
        "detail": detail,
    }


def apply_step(
    store: Any, request: Dict[str, Any], sla: Optional[Dict[str, Any]] = None, check_mode: bool = False
) -> Dict[str, Any]:
    """Take one operator step on an incident (one transaction under the lock ``ledger``). ``request``:
    {incident, step, by, cause?, review? {cause, fix, change_ref, checks}, now?}. Check mode reads only and
    returns what would change. Returns {changed, msg, step, incident (as after the step), review}."""
    incident_id, step = request.get("incident"), request.get("step")
    actor = _text(request.get("by"), "who takes the step (gpuops_incident_by)", True)[:255]
    cause, review, now = request.get("cause"), request.get("review"), request.get("now")
    at = float(now if now is not None else time.time())
    t = tables()
    ctx = store.read() if check_mode else store.begin(lock=LOCK)
    with ctx as conn:
        row = _row(conn, incident_id)
        plan = plan_step(row, step, cause, review, sla)
        after = dict(row, **plan["values"])
        if plan["changed"] and step != "note":
            after[_COLUMN[step][0]] = at
        if plan["changed"] and not check_mode:
            inc = t["incidents"]
            if step != "note":
                conn.execute(
                    inc.update()
                    .where(inc.c.incident_id == incident_id)
                    .values(**dict(plan["values"], **{_COLUMN[step][0]: at}))
                )
            if plan["review"] is not None:
                conn.execute(t["reviews"].insert(), dict(plan["review"], incident_id=incident_id, actor=actor, at=at))
            word = "note" if step == "note" else _COLUMN[step][1]
            conn.execute(
                t["incident_events"].insert(), _event(incident_id, word, at, actor, "operator", plan["detail"])
            )
    msg = plan["msg"] if not (check_mode and plan["changed"]) else "would be: " + plan["msg"]
    return {"changed": plan["changed"], "msg": msg, "step": step, "incident": after, "review": plan["review"]}


def open_incidents(conn: Any) -> List[Dict[str, Any]]:
    inc = tables()["incidents"]
    q = sa.select(inc).where(inc.c.state == "open").order_by(inc.c.detected_at, inc.c.incident_id)
    return [dict(r) for r in conn.execute(q).mappings()]


def open_clocks(store: Any, sla: Optional[Dict[str, Any]] = None, now: Optional[float] = None) -> List[Dict[str, Any]]:
    """Every open incident with its clocks at ``now`` (``_sla.clocks``); an unknown SLA profile of an incident is
    reported on the incident (``clock_error``) instead of stopping the run."""
    now = float(now if now is not None else time.time())
    with store.read() as conn:
        rows = open_incidents(conn)
    out = []
    for row in rows:
        try:
            row["clocks"] = _sla.clocks(row, now, sla)
        except _sla.SlaError as exc:
            row["clocks"], row["clock_error"] = [], str(exc)
        out.append(row)
    return out


def sla_findings(incidents: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """``service.sla`` cluster findings: one per breached or at-risk clock of an open incident. P1 for a breached
    clock of a P0/P1 incident, P2 otherwise."""
    out = []
    for inc in incidents:
        for c in inc.get("clocks") or []:
            if c["state"] not in ("breached", "at_risk"):
                continue
            severe = c["state"] == "breached" and inc["severity"] in ("P0", "P1")
            code = "%s_%s" % (c["clock"], c["state"])
            component = "incident:%s" % inc["incident_id"]
            out.append(
                {
                    "check": "service.sla",
                    "severity": "P1" if severe else "P2",
                    "component": component,
                    "code": code,
                    "message": "incident %s (%s%s): the %s clock %s (target %s, due %s%s)"
                    % (
                        inc["incident_id"],
                        inc["severity"],
                        ", " + inc["host"] if inc.get("host") else "",
                        c["clock"],
                        "is breached" if c["state"] == "breached" else "is about to breach",
                        c["target"],
                        iso(c["due"]),
                        ", %.0f s late" % c["late_s"] if c["late_s"] else "",
                    ),
                    "action": "none",
                    "rule": "service.sla: the incident's %s target per sla.targets" % c["clock"],
                    "evidence": {
                        "incident": inc["incident_id"],
                        "severity": inc["severity"],
                        "clock": c["clock"],
                        "target": c["target"],
                        "due": iso(c["due"]),
                        "late_s": round(c["late_s"], 1),
                    },
                    "host": None,
                    "cause": None,
                    "id": "cluster:service.sla:%s:%s" % (component, code),
                    "runbook": None,
                    "runbook_link": None,
                }
            )
    return out


def record_ticket(store: Any, ticket: Dict[str, Any], now: Optional[float] = None) -> Dict[str, Any]:
    """Record a ticket the hook received (``tickets``) and open an incident from it (source ``ticket``, its
    severity); a ticket id already recorded changes nothing. Returns {ticket_id, incident_id, recorded}."""
    at = float(now if now is not None else time.time())
    tid = ticket.get("ticket_id")
    tid = str(tid) if isinstance(tid, int) and not isinstance(tid, bool) else tid
    if not isinstance(tid, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}", tid):
        raise IncidentError("ticket id %r is not a ticket id" % (tid,))
    sev = ticket.get("severity") if ticket.get("severity") in _sla.SEVERITIES else "P2"
    host = ticket.get("host") if isinstance(ticket.get("host"), str) else None
    summary = str(ticket.get("summary") or "")[:_TEXT_MAX]
    t = tables()
    with store.begin(lock=LOCK) as conn:
        have = conn.execute(sa.select(t["tickets"].c.incident_id).where(t["tickets"].c.ticket_id == tid)).first()
        if have is not None:
            return {"ticket_id": tid, "incident_id": have[0], "recorded": False}
        iid = _new_ids(conn, at, 1)[0]
        conn.execute(
            t["incidents"].insert(),
            {
                "incident_id": iid,
                "host": host,
                "severity": sev,
                "title": summary,
                "source": "ticket",
                "ticket_id": tid,
                "state": "open",
                "detected_at": at,
                "component": "other",
            },
        )
        conn.execute(t["incident_events"].insert(), _event(iid, "detected", at, "ticket-hook", "hook", "ticket " + tid))
        conn.execute(
            t["tickets"].insert(),
            {
                "ticket_id": tid,
                "received_at": at,
                "source": str(ticket.get("source") or "hook")[:64],
                "severity": sev,
                "host": host,
                "summary": summary,
                "incident_id": iid,
            },
        )
    return {"ticket_id": tid, "incident_id": iid, "recorded": True}


def _realtime_one(conn: Any, ev: Dict[str, Any], at: float, windows: Dict[str, str]) -> Dict[str, Any]:
    """Open or join the incident of one validated event (inside the locked transaction); returns its result."""
    t = tables()
    inc, iev = t["incidents"], t["incident_events"]
    host, fp, src = ev["host"], ev["fingerprint"], ev["source"]
    out = {k: ev[k] for k in ("host", "check_id", "severity", "source", "fingerprint")}
    iid = _open_holders(conn, [fp]).get(fp)
    if iid is None and ev["code"] is None:  # a health-check series names no code: the same check and component
        q = sa.select(inc.c.incident_id).where(inc.c.state == "open", inc.c.fingerprint.startswith(fp, autoescape=True))
        iid = conn.execute(q).scalar()
    cur = _running(conn, {host}).get(host)
    if iid is None and cur and SEVERITY_RANK[ev["severity"]] >= SEVERITY_RANK.get(cur[1], 9):
        iid = cur[0]  # one fault, one incident: the node's running incident, as insert_incidents joins
    floor_at = (
        at if iid is None else conn.execute(sa.select(inc.c.detected_at).where(inc.c.incident_id == iid)).scalar()
    )
    np_ = t["node_periods"]
    seen = [  # the node's sightings before the fault: a period's first and last (record_run's floor)
        conn.execute(sa.select(sa.func.max(c)).where(np_.c.host == host, c < floor_at)).scalar()
        for c in (np_.c.started_at, np_.c.last_seen)
    ]
    when = max([min(ev["detected_at"], at)] + [float(x) for x in seen if x is not None])  # never after now
    if iid is None:
        iid = _new_ids(conn, at, 1)[0]
        row = {"incident_id": iid, "fingerprint": fp, "host": host, "severity": ev["severity"], "state": "open"}
        row.update(component=ev["component_class"], title=ev["summary"] or None, source=src, detected_at=when)
        conn.execute(inc.insert(), row)
        conn.execute(iev.insert(), _event(iid, "detected", when, src, "realtime", fp))
        out["outcome"] = "opened"
    else:
        seen = sa.select(iev.c.id).where(iev.c.incident_id == iid, iev.c.actor == src, iev.c.detail == fp)
        out["outcome"] = "repeat" if conn.execute(seen.limit(1)).first() else "joined"
        conn.execute(iev.insert(), _event(iid, out["outcome"], at, src, "realtime", fp))
        _earlier(conn, {iid: when})
    why = None if ev["suppress"] is False else ev["suppress"] or windows.get(host)
    out.update(incident_id=iid, act=False, suppressed=why, runbook=ev["runbook"])
    out["detected_at"] = conn.execute(sa.select(inc.c.detected_at).where(inc.c.incident_id == iid)).scalar()
    if why:
        conn.execute(
            iev.insert(),
            _event(iid, "suppressed", at, src, "realtime", ("%s: %s" % (ev["runbook"] or "-", why))[:_TEXT_MAX]),
        )
    elif ev["runbook"]:
        acted = sa.select(iev.c.at).where(
            iev.c.incident_id == iid, iev.c.step == "acted", iev.c.detail == ev["runbook"]
        )
        done = conn.execute(acted.limit(1)).scalar()
        if done is None:  # claimed before the runbook acts: a repeat in the meantime finds it and is skipped
            conn.execute(iev.insert(), _event(iid, "acted", at, src, "realtime", ev["runbook"]))
            out["act"] = True
        else:
            out["acted_at"] = done
    return out


def record_realtime(
    store: Any, events: List[Dict[str, Any]], now: Optional[float] = None, sla: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]:
    """The ledger entry of the real-time paths (EDA alerts, the node health check; docs/service.md "Real-time
    events"), one transaction under the lock ``ledger``. Each event (``_keys.realtime_event``; a bad one is refused
    with its reason, the others go on) opens an incident or joins the open one of the same fault: the fingerprint an
    inspection's finding has, else the node's running incident when not more severe; the earlier detection of either
    path wins, bounded as ``record_run`` bounds it. ``act``: once per incident and runbook, never in a maintenance
    window or with ``suppress``. Returns {at, results, opened, joined, repeats, suppressed, below, refused, act}."""
    if not isinstance(events, list):
        raise IncidentError("record_realtime needs a list of events, not %s" % type(events).__name__)
    at = float(now if now is not None else time.time())
    opens = (sla or _sla.DEFAULT_SLA).get("open_severities") or []
    results: List[Dict[str, Any]] = []
    valid = []
    for i, raw in enumerate(events):
        try:
            valid.append((i, _keys.realtime_event(raw)))
        except _keys.RealtimeError as exc:
            results.append({"index": i, "outcome": "refused", "error": "event %d: %s" % (i, exc), "act": False})
    if valid:
        with store.begin(lock=LOCK) as conn:
            windows = _keys.windows_in_force(
                conn, tables()["maintenance_windows"], {ev["host"] for _i, ev in valid}, at
            )
            for i, ev in valid:
                if ev["severity"] not in opens:
                    results.append({"index": i, "host": ev["host"], "outcome": "below", "act": False})
                    continue
                results.append(dict(_realtime_one(conn, ev, at, windows), index=i))
    results.sort(key=lambda r: r["index"])
    out: Dict[str, Any] = {"at": at, "results": results, "suppressed": [r for r in results if r.get("suppressed")]}
    for key, word in (("opened",) * 2, ("joined",) * 2, ("repeats", "repeat"), ("below",) * 2, ("refused",) * 2):
        out[key] = [r for r in results if r["outcome"] == word]
    out["act"] = {r["host"]: r["incident_id"] for r in results if r.get("act")}
    return out
