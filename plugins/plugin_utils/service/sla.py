# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SLA clocks of an incident (docs/service.md): the contract's targets per severity and whether each was met.

Targets are policy data (``sla.targets``, overridable per site or customer through ``sla.profiles.<name>``). The
service terms name five clocks, each optional per severity and all counted from ``detected_at`` (the earliest
evidence of the fault):

- ``respond``: until ``acknowledged_at`` (someone owns it);
- ``onsite``: until ``onsite_at`` (an engineer is at the hardware);
- ``locate``: until ``located_at`` (the cause is recorded);
- ``restore``: until ``restored_at`` (back in service and healthy);
- ``plan``: until ``planned_at`` (the remote tuning or repair plan is written).

A target is a duration: ``15m``, ``4h``, ``2d`` (calendar time), ``3bd`` (business days), ``next_business_day``
(the end of the next working day) or ``next_day`` (the end of the next calendar day). Business days are read from
the contract's calendar, ``sla.calendar``: ``timezone`` (an IANA name, default UTC), ``workdays`` (default
Monday to Friday) and ``holidays`` (ISO dates); a start outside working days counts from the next working day's
00:00 local time. The working days are enumerated with ``dateutil.rrule`` (a recurrence set with the holidays
excluded), not hand-made date arithmetic. A clock is *breached* when its step came after the due time, or has not
come and the due time has passed; it is *at risk* when it is still running and ``at_risk_share`` of its
allowance is spent.

Pure Python, no Ansible imports. Times are UTC epoch seconds (as the store keeps them).
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, List, Optional

try:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
except ImportError:  # Python 3.8 (the sanity import test); the controller runs 3.11+
    ZoneInfo = None  # type: ignore[assignment,misc]
    ZoneInfoNotFoundError = Exception  # type: ignore[assignment,misc]

try:
    from dateutil import rrule as _rrule
except ImportError:  # the sanity import test; requirements.txt lists python-dateutil
    _rrule = None

SEVERITIES = ("P0", "P1", "P2", "P3")
CLOCKS = (
    ("respond", "acknowledged_at"),
    ("onsite", "onsite_at"),
    ("locate", "located_at"),
    ("restore", "restored_at"),
    ("plan", "planned_at"),
)
WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")

DEFAULT_SLA: Dict[str, Any] = {
    # the service terms, one table per severity:
    # P0: respond 15 min, on site 4 h, fault located within 2 h (service restored first, by failover);
    # P1: respond 30 min, on site the next working day, node restored within 24 h (spare first, repair after);
    # P2: respond 2 h, remote first, a tuning plan within 3 working days;
    # P3: respond within 1 working day, then scheduled by ticket.
    "targets": {
        "P0": {"respond": "15m", "onsite": "4h", "locate": "2h"},
        "P1": {"respond": "30m", "onsite": "next_business_day", "restore": "24h"},
        "P2": {"respond": "2h", "plan": "3bd"},
        "P3": {"respond": "1bd"},
    },
    "calendar": {"timezone": "UTC", "workdays": ["MO", "TU", "WE", "TH", "FR"], "holidays": []},
    "availability_target": 99.5,  # percent of GPU time, compared in the service report
    "profiles": {},  # name -> {"P1": {"restore": "8h"}, ...} merged over targets (site or customer contracts)
    "at_risk_share": 0.8,  # a running clock with this share of its allowance spent is "about to breach"
    "open_severities": ["P0", "P1", "P2"],  # findings that open an incident
    "review_required": ["P0", "P1"],  # closing these needs a review record
    "retention_days": 400,  # the ledger keeps a year of quarterly reports (audit: at least 183)
    "capacity_trigger": 0.7,  # allocated GPU share that triggers an expansion plan
}

_TARGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(m|h|d|bd)\s*$")
_UNIT_S = {"m": 60.0, "h": 3600.0, "d": 86400.0}
_WORDS = ("next_day", "next_business_day")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class SlaError(Exception):
    """A malformed SLA target, calendar or profile."""


def check_target(value: Any, where: str) -> None:
    """Raise SlaError unless ``value`` is None, a word target or a duration like 15m, 4h, 2d, 3bd."""
    if value is None or value in _WORDS:
        return
    if not isinstance(value, str) or not _TARGET.match(value):
        raise SlaError(
            "SLA target %s must look like 15m, 4h, 2d, 3bd, next_business_day or next_day (got %r)" % (where, value)
        )


class Calendar:
    """The contract's working days: a time zone, the weekdays worked and the holidays (``sla.calendar``)."""

    def __init__(self, spec: Optional[Dict[str, Any]] = None) -> None:
        spec = dict(DEFAULT_SLA["calendar"], **(spec or {}))
        name = spec.get("timezone") or "UTC"
        if not isinstance(name, str):
            raise SlaError("sla.calendar.timezone must be an IANA time zone name such as Europe/Berlin")
        if name == "UTC":
            self.tz: datetime.tzinfo = datetime.timezone.utc  # also where zoneinfo is missing (the node's Python 3.8)
        elif ZoneInfo is None:
            raise SlaError("sla.calendar.timezone %r needs Python 3.9+ (zoneinfo) on the controller" % (name[:64],))
        else:
            try:
                self.tz = ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError):
                raise SlaError("sla.calendar.timezone %r is not a known IANA time zone" % (name[:64],)) from None
        days = spec.get("workdays")
        if not isinstance(days, list) or not days or any(d not in WEEKDAYS for d in days):
            raise SlaError("sla.calendar.workdays must be a non-empty list of %s" % ", ".join(WEEKDAYS))
        self.workdays = sorted({WEEKDAYS.index(d) for d in days})
        holidays = spec.get("holidays") or []
        if not isinstance(holidays, list):
            raise SlaError("sla.calendar.holidays must be a list of dates (YYYY-MM-DD)")
        self.holidays = set()
        for day in holidays:
            text = day.isoformat() if isinstance(day, datetime.date) else day
            if not isinstance(text, str) or not _DATE.fullmatch(text):
                raise SlaError("sla.calendar.holidays: %r is not a date (YYYY-MM-DD)" % (day,))
            try:
                self.holidays.add(datetime.date.fromisoformat(text))
            except ValueError:
                raise SlaError("sla.calendar.holidays: %r is not a date" % (text,)) from None

    def _workdays_from(self, day: datetime.date) -> Any:
        """The working days from ``day`` (included) on, as dates: a dateutil recurrence without the holidays."""
        if _rrule is None:  # a node's Python without dateutil (the health check): the same days, day by day
            return (
                d
                for d in (day + datetime.timedelta(days=n) for n in range(3700))
                if d.weekday() in self.workdays and d not in self.holidays
            )
        start = datetime.datetime(day.year, day.month, day.day)
        rules = _rrule.rruleset()
        rules.rrule(_rrule.rrule(_rrule.DAILY, dtstart=start, byweekday=self.workdays, count=3700))
        for holiday in self.holidays:
            if holiday >= day:
                rules.exdate(datetime.datetime(holiday.year, holiday.month, holiday.day))
        return (when.date() for when in rules)

    def _local(self, day: datetime.date, hour: float = 0.0) -> float:
        midnight = datetime.datetime(day.year, day.month, day.day, tzinfo=self.tz)
        return midnight.timestamp() + hour * 3600.0

    def business_days(self, start: float, amount: float) -> float:
        """``start`` + ``amount`` working days: the same local time of day ``int(amount)`` working days later
        (a start outside working days counts from the next working day's 00:00), then the fraction in hours."""
        t = datetime.datetime.fromtimestamp(float(start), tz=self.tz)
        days = self._workdays_from(t.date())
        first = next(days, None)
        if first is None:
            raise SlaError("sla.calendar has no working day in the next ten years")
        clock = (t.hour * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6) / 3600.0 if first == t.date() else 0.0
        day = first
        for _n in range(int(amount)):
            day = next(days)
        return self._local(day, clock) + (amount - int(amount)) * 86400.0

    def next_business_day_end(self, start: float) -> float:
        """The end (24:00 local) of the first working day after the local date of ``start``."""
        t = datetime.datetime.fromtimestamp(float(start), tz=self.tz)
        day = next(self._workdays_from(t.date() + datetime.timedelta(days=1)))
        return self._local(day + datetime.timedelta(days=1))

    def next_day_end(self, start: float) -> float:
        t = datetime.datetime.fromtimestamp(float(start), tz=self.tz)
        return self._local(t.date() + datetime.timedelta(days=2))


def calendar_of(sla: Optional[Dict[str, Any]]) -> Calendar:
    return Calendar((sla or {}).get("calendar"))


def targets_for(severity: str, sla: Optional[Dict[str, Any]] = None, profile: Optional[str] = None) -> Dict[str, Any]:
    """The clocks and targets of ``severity``: the policy's ``targets`` (the defaults when it has none), then
    ``profiles[profile]``. A severity row replaces the default row's clocks it names; ``None`` drops a clock."""
    sla = sla or DEFAULT_SLA
    if severity not in SEVERITIES:
        raise SlaError("unknown severity %r" % (severity,))
    out = dict(DEFAULT_SLA["targets"][severity])
    out.update((sla.get("targets") or {}).get(severity) or {})
    if profile:
        profiles = sla.get("profiles") or {}
        if profile not in profiles:
            raise SlaError("unknown SLA profile %r (known: %s)" % (profile, ", ".join(sorted(profiles)) or "none"))
        out.update((profiles[profile] or {}).get(severity) or {})
    known = [c for c, _col in CLOCKS]
    for clock, value in out.items():
        if clock not in known:
            raise SlaError("unknown SLA clock %s.%s (clocks: %s)" % (severity, clock, ", ".join(known)))
        check_target(value, "%s.%s" % (severity, clock))
    return {c: out[c] for c in known if out.get(c) is not None}


def due(start: float, target: Optional[str], calendar: Optional[Calendar] = None) -> Optional[float]:
    """The due time (epoch s) of a clock started at ``start`` with ``target``; None when the clock has no target."""
    if target is None:
        return None
    cal = calendar or Calendar()
    if target == "next_day":
        return cal.next_day_end(start)
    if target == "next_business_day":
        return cal.next_business_day_end(start)
    m = _TARGET.match(target)
    if not m:
        raise SlaError("bad SLA target %r" % (target,))
    amount, unit = float(m.group(1)), m.group(2)
    if unit != "bd":
        return float(start) + amount * _UNIT_S[unit]
    return cal.business_days(start, amount)


def clocks(
    incident: Dict[str, Any], now: float, sla: Optional[Dict[str, Any]] = None, at_risk_share: Optional[float] = None
) -> List[Dict[str, Any]]:
    """Each clock of ``incident`` (a mapping with ``severity``, ``detected_at`` and the step times, as the
    ``incidents`` table holds them; ``sla_profile`` optional) at ``now``: ``{clock, target, due, at, state,
    late_s, spent_share}``; ``state`` is ``met``, ``breached``, ``running``, ``at_risk`` or ``none`` (no target)."""
    sla = sla or DEFAULT_SLA
    share = float(at_risk_share if at_risk_share is not None else sla.get("at_risk_share", 0.8))
    start = float(incident["detected_at"])
    targets = targets_for(incident["severity"], sla, incident.get("sla_profile"))
    cal = calendar_of(sla)
    out = []
    for clock, column in CLOCKS:
        target = targets.get(clock)
        when = incident.get(column)
        deadline = due(start, target, cal)
        row: Dict[str, Any] = {"clock": clock, "target": target, "due": deadline, "at": when}
        if deadline is None:
            row.update(state="none", late_s=0.0, spent_share=None)
        elif when is not None:
            late = float(when) - deadline
            row.update(state="breached" if late > 0 else "met", late_s=max(late, 0.0), spent_share=None)
        else:
            allowance = max(deadline - start, 1.0)
            spent = (float(now) - start) / allowance
            late = float(now) - deadline
            state = "breached" if late > 0 else ("at_risk" if spent >= share else "running")
            row.update(state=state, late_s=max(late, 0.0), spent_share=round(spent, 4))
        out.append(row)
    return out


def breached(incident: Dict[str, Any], now: float, sla: Optional[Dict[str, Any]] = None) -> List[str]:
    """The clocks of ``incident`` that missed their target by ``now`` (empty: every target met or still running)."""
    return [c["clock"] for c in clocks(incident, now, sla) if c["state"] == "breached"]
