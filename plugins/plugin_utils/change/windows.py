# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Maintenance windows: validation, the active window and the next one (pure; controller side).

The window format is documented in docs/windows.md. Three kinds of entries:

* weekly recurring slots: ``{name, weekly: {days: [sat, sun], start: "02:00", duration: "4h"}, timezone}``
* one-off dated windows: ``{name, start: "2026-12-05T22:00", end: "2026-12-06T04:00", timezone}``
  (``duration`` instead of ``end`` is accepted)
* freezes / blackouts: either form with ``freeze: true``; a freeze overrides every window it overlaps.

Times are wall-clock times in the entry's ``timezone`` (IANA name, default ``UTC``). A wall time that does not
exist (inside a DST gap) is shifted forward by the gap (PEP 495 ``fold=0``); an ambiguous one (the repeated hour
when clocks go back) means its first occurrence. A weekly slot's end is ``start + duration`` in wall-clock time,
so a 02:00 + 4h slot ends at 06:00 local even on a DST day (3 h or 5 h of real time).

This runs on the controller only (``zoneinfo`` needs Python 3.9+), but stays importable on Python 3.8:
``zoneinfo`` is imported lazily.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time

UTC = datetime.timezone.utc

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DAY_ALIASES = {
    "monday": "mon",
    "tuesday": "tue",
    "wednesday": "wed",
    "thursday": "thu",
    "friday": "fri",
    "saturday": "sat",
    "sunday": "sun",
    "tues": "tue",
    "thur": "thu",
    "thurs": "thu",
}
WINDOW_KEYS = frozenset(("name", "weekly", "start", "end", "duration", "timezone", "freeze", "description"))
WEEKLY_KEYS = frozenset(("days", "start", "duration", "end"))
_HHMM = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
_DURATION = re.compile(r"^(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?$")
_DT_FORMATS = ("%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S")
#: How far ahead next_window() looks (a long freeze can hide a year of weekly slots, not more).
HORIZON_DAYS = 400
#: A window can never last longer than this (catches "duration: 9999d").
MAX_DURATION = datetime.timedelta(days=31)

Interval = Tuple[datetime.datetime, datetime.datetime, Dict[str, Any]]


class WindowError(ParseError, ValueError):
    """A window definition is invalid. ``key`` names the offending key (``windows[2].weekly.start``).

    A ParseError (parser ``windows``, source = the key), so collector-style boundaries can report it.
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message, parser="windows", source=key)
        self.key = key

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


def get_zone(name: Any, key: str = "timezone") -> datetime.tzinfo:
    """The tzinfo for an IANA zone name (``UTC`` without zoneinfo)."""
    if not isinstance(name, str) or not name.strip():
        raise WindowError(key, f"timezone must be an IANA name such as Europe/Berlin, got {name!r}")
    name = name.strip()
    if name.upper() in ("UTC", "Z", "ETC/UTC"):
        return UTC
    try:
        import zoneinfo  # Python 3.9+; this code runs on the controller
    except ImportError:  # pragma: no cover - Python 3.8
        raise WindowError(key, f"timezone {name!r} needs Python 3.9+ (zoneinfo) on the controller") from None
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise WindowError(key, f"unknown timezone {name!r}") from None


def parse_duration(value: Any, key: str = "duration") -> datetime.timedelta:
    """``"4h"``, ``"90m"``, ``"1h30m"``, ``"2d"``, ``"45s"`` or a number of seconds -> timedelta (> 0, <= 31 days)."""
    if isinstance(value, bool):
        raise WindowError(key, f"duration must be like 4h, 90m or 1h30m, got {value!r}")
    if isinstance(value, (int, float)):
        td = datetime.timedelta(seconds=value)
    elif isinstance(value, str):
        m = _DURATION.match(value.strip().lower())
        if not value.strip() or not m or not any(m.groups()):
            raise WindowError(key, f"duration must be like 4h, 90m or 1h30m, got {value!r}")
        d, h, mi, s = (int(g) if g else 0 for g in m.groups())
        td = datetime.timedelta(days=d, hours=h, minutes=mi, seconds=s)
    else:
        raise WindowError(key, f"duration must be like 4h, 90m or 1h30m, got {value!r}")
    if td <= datetime.timedelta(0):
        raise WindowError(key, f"duration must be positive, got {value!r}")
    if td > MAX_DURATION:
        raise WindowError(key, f"duration {value!r} is longer than 31 days")
    return td


def _parse_hhmm(value: Any, key: str) -> Tuple[int, int]:
    m = _HHMM.match(value.strip()) if isinstance(value, str) else None
    if not m:
        raise WindowError(key, f"time must be HH:MM (00:00-23:59), got {value!r}")
    return int(m.group(1)), int(m.group(2))


def _parse_local_dt(value: Any, key: str) -> datetime.datetime:
    if isinstance(value, datetime.datetime):
        return value.replace(tzinfo=None) if value.tzinfo is None else value
    if isinstance(value, str):
        for fmt in _DT_FORMATS:
            try:
                return datetime.datetime.strptime(value.strip(), fmt)
            except ValueError:
                continue
    raise WindowError(key, f"date-time must be YYYY-MM-DDTHH:MM in the window's timezone, got {value!r}")


def to_utc(local: datetime.datetime, tz: datetime.tzinfo) -> datetime.datetime:
    """A wall-clock time in ``tz`` as an aware UTC datetime (DST gap: shifted forward; overlap: first occurrence)."""
    if local.tzinfo is not None:
        return local.astimezone(UTC)
    return local.replace(tzinfo=tz, fold=0).astimezone(UTC)


def parse_now(value: Any) -> datetime.datetime:
    """An aware UTC datetime from a datetime, an ISO 8601 string (``Z`` or offset; naive means UTC) or epoch seconds.

    The parsing is ``_timeutil.parse_time`` (the collection's one time parser); this adds the window error.
    """
    dt = parse_time(value)
    if dt is not None:
        return dt
    if isinstance(value, str) and value.strip():
        raise WindowError("now", "clock must be ISO 8601 (2026-12-05T23:00:00Z) or epoch seconds")
    raise WindowError("now", f"clock must be ISO 8601 (2026-12-05T23:00:00Z) or epoch seconds, got {value!r}")


def _validate_one(raw: Any, key: str) -> Dict[str, Any]:
    if not isinstance(raw, dict):
        raise WindowError(key, f"each window must be a mapping, got {type(raw).__name__}")
    unknown = sorted(str(k) for k in raw if k not in WINDOW_KEYS)
    if unknown:
        raise WindowError(
            f"{key}.{unknown[0]}",
            f"unknown key (allowed: {', '.join(sorted(WINDOW_KEYS))})",
        )
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise WindowError(key + ".name", "every window needs a non-empty name")
    tzname = raw.get("timezone", "UTC")
    tz = get_zone(tzname, key + ".timezone")
    freeze = raw.get("freeze", False)
    if not isinstance(freeze, bool):
        raise WindowError(key + ".freeze", f"must be true or false, got {freeze!r}")
    out: Dict[str, Any] = {
        "name": name.strip(),
        "timezone": tzname.strip(),
        "freeze": freeze,
        "tz": tz,
        "description": raw.get("description"),
    }
    weekly = raw.get("weekly")
    if weekly is not None:
        for k in ("start", "end", "duration"):
            if k in raw:
                raise WindowError(f"{key}.{k}", "a weekly window takes start/duration inside 'weekly'")
        out.update(_validate_weekly(weekly, key + ".weekly"))
    else:
        out.update(_validate_dated(raw, key, tz, freeze))
    return out


def _weekdays(days: Any, key: str) -> List[int]:
    if isinstance(days, str):
        days = [days]
    if not isinstance(days, list) or not days:
        raise WindowError(key, "must be a non-empty list of mon..sun")
    dayset = set()
    for i, raw_day in enumerate(days):
        dk = f"{key}[{i}]"
        if not isinstance(raw_day, str):
            raise WindowError(dk, f"day must be one of {', '.join(DAYS)}, got {raw_day!r}")
        d = _DAY_ALIASES.get(raw_day.strip().lower(), raw_day.strip().lower())
        if d not in DAYS:
            raise WindowError(dk, f"day must be one of {', '.join(DAYS)}, got {raw_day!r}")
        dayset.add(DAYS.index(d))
    return sorted(dayset)


def _validate_weekly(weekly: Any, key: str) -> Dict[str, Any]:
    """A weekly slot ``{days, start, duration | end}`` (``key`` is ``windows[i].weekly``)."""
    if not isinstance(weekly, dict):
        raise WindowError(key, "must be a mapping {days, start, duration}")
    unknown = sorted(str(k) for k in weekly if k not in WEEKLY_KEYS)
    if unknown:
        raise WindowError(f"{key}.{unknown[0]}", f"unknown key (allowed: {', '.join(sorted(WEEKLY_KEYS))})")
    days = _weekdays(weekly.get("days"), key + ".days")
    if "start" not in weekly:
        raise WindowError(key + ".start", "missing (HH:MM)")
    hh, mm = _parse_hhmm(weekly.get("start"), key + ".start")
    if ("duration" in weekly) == ("end" in weekly):
        raise WindowError(key + ".duration", "give exactly one of duration (4h) or end (HH:MM)")
    if "duration" in weekly:
        dur = parse_duration(weekly["duration"], key + ".duration")
    else:
        eh, em = _parse_hhmm(weekly["end"], key + ".end")
        minutes = (eh * 60 + em - hh * 60 - mm) % (24 * 60) or 24 * 60
        dur = datetime.timedelta(minutes=minutes)
    return {"kind": "weekly", "days": days, "start_time": (hh, mm), "duration": dur}


def _validate_dated(raw: Dict[str, Any], key: str, tz: datetime.tzinfo, freeze: bool) -> Dict[str, Any]:
    """A one-off window ``{start, end | duration}`` as UTC start and end."""
    if "start" not in raw:
        raise WindowError(key + ".start", "missing: give weekly {...} or a dated start (YYYY-MM-DDTHH:MM)")
    start = _parse_local_dt(raw["start"], key + ".start")
    if ("end" in raw) == ("duration" in raw):
        raise WindowError(key + ".end", "give exactly one of end (YYYY-MM-DDTHH:MM) or duration (4h)")
    if "end" in raw:
        end = _parse_local_dt(raw["end"], key + ".end")
        s_utc, e_utc = to_utc(start, tz), to_utc(end, tz)
        if e_utc <= s_utc:
            raise WindowError(key + ".end", f"end {raw['end']!r} is not after start {raw['start']!r}")
        if not freeze and e_utc - s_utc > MAX_DURATION:
            raise WindowError(key + ".end", "a window longer than 31 days is not a maintenance window")
    else:
        dur = parse_duration(raw["duration"], key + ".duration")
        s_utc = to_utc(start, tz)
        e_utc = to_utc(start.replace(tzinfo=None) + dur, tz) if start.tzinfo is None else s_utc + dur
    return {"kind": "dated", "start": s_utc, "end": e_utc}


def validate(windows: Any, key: str = "windows") -> List[Dict[str, Any]]:
    """Validate a list of window definitions; return them normalized. Raises WindowError naming the bad key."""
    if windows is None:
        return []
    if isinstance(windows, dict):
        windows = [windows]
    if not isinstance(windows, list):
        raise WindowError(key, f"must be a list of windows, got {type(windows).__name__}")
    out = [_validate_one(w, f"{key}[{i}]") for i, w in enumerate(windows)]
    seen = set()
    for i, w in enumerate(out):
        ident = (w["name"], w["freeze"])
        if ident in seen:
            raise WindowError(f"{key}[{i}].name", f"duplicate window name {w['name']!r}")
        seen.add(ident)
    return out


def _occurrences(w: Dict[str, Any], lo: datetime.datetime, hi: datetime.datetime) -> Iterable[Interval]:
    """The intervals of one normalized window that overlap [lo, hi) (UTC)."""
    if w["kind"] == "dated":
        if w["end"] > lo and w["start"] < hi:
            yield (w["start"], w["end"], w)
        return
    tz = w["tz"]
    hh, mm = w["start_time"]
    dur = w["duration"]
    first = (lo.astimezone(tz) - dur).date() - datetime.timedelta(days=1)
    last = hi.astimezone(tz).date() + datetime.timedelta(days=1)
    day = first
    while day <= last:
        if day.weekday() in w["days"]:
            local = datetime.datetime(day.year, day.month, day.day, hh, mm)
            s, e = to_utc(local, tz), to_utc(local + dur, tz)
            if e > lo and s < hi and e > s:
                yield (s, e, w)
        day += datetime.timedelta(days=1)


def _subtract(pieces: List[Interval], cuts: List[Tuple[datetime.datetime, datetime.datetime]]) -> List[Interval]:
    for cs, ce in cuts:
        nxt: List[Interval] = []
        for s, e, w in pieces:
            if ce <= s or cs >= e:
                nxt.append((s, e, w))
                continue
            if s < cs:
                nxt.append((s, cs, w))
            if ce < e:
                nxt.append((ce, e, w))
        pieces = nxt
    return pieces


def effective_intervals(windows: List[Dict[str, Any]], lo: datetime.datetime, hi: datetime.datetime) -> List[Interval]:
    """Open intervals of the (normalized) windows in [lo, hi), freezes cut out, sorted by start."""
    opens: List[Interval] = []
    freezes: List[Tuple[datetime.datetime, datetime.datetime]] = []
    for w in windows:
        for s, e, ww in _occurrences(w, lo, hi):
            if w["freeze"]:
                freezes.append((s, e))
            else:
                opens.append((s, e, ww))
    return sorted(_subtract(opens, sorted(freezes)), key=lambda iv: (iv[0], iv[1]))


def _freeze_at(windows: List[Dict[str, Any]], now: datetime.datetime) -> Optional[Interval]:
    for w in windows:
        if w["freeze"]:
            for s, e, ww in _occurrences(w, now, now + datetime.timedelta(seconds=1)):
                if s <= now < e:
                    return (s, e, ww)
    return None


def _describe(iv: Interval, now: datetime.datetime) -> Dict[str, Any]:
    s, e, w = iv
    tz = w["tz"]
    return {
        "name": w["name"],
        "timezone": w["timezone"],
        "start": s.isoformat(),
        "end": e.isoformat(),
        "start_local": s.astimezone(tz).isoformat(),
        "end_local": e.astimezone(tz).isoformat(),
        "remaining_s": max(0, int((e - now).total_seconds())),
        "starts_in_s": max(0, int((s - now).total_seconds())),
    }


def _normalized(windows: Any) -> List[Dict[str, Any]]:
    if isinstance(windows, list) and all(isinstance(w, dict) and "tz" in w for w in windows):
        return windows
    return validate(windows)


def active_window(windows: Any, now: Any) -> Optional[Dict[str, Any]]:
    """The window open at ``now`` (freezes applied) with ``remaining_s`` until it closes, or None.

    Overlapping or back-to-back windows count as one (``remaining_s`` runs to the end of the union);
    the end is cut at the next freeze.
    """
    ws = _normalized(windows)
    now = parse_now(now)
    if _freeze_at(ws, now) is not None:
        return None
    ivs = _merge(effective_intervals(ws, now - MAX_DURATION, now + MAX_DURATION))
    cur = [iv for iv in ivs if iv[0] <= now < iv[1]]
    return _describe(cur[0], now) if cur else None


def active_freeze(windows: Any, now: Any) -> Optional[Dict[str, Any]]:
    """The freeze covering ``now``, or None."""
    now = parse_now(now)
    iv = _freeze_at(_normalized(windows), now)
    return _describe(iv, now) if iv else None


def next_window(windows: Any, now: Any, horizon_days: int = HORIZON_DAYS) -> Optional[Dict[str, Any]]:
    """The first window (freezes applied) that opens after ``now``, or None within the horizon."""
    ws = _normalized(windows)
    now = parse_now(now)
    for days in (16, 64, horizon_days):
        hi = now + datetime.timedelta(days=days)
        for iv in effective_intervals(ws, now, hi):
            if iv[0] > now:
                return _describe(iv, now)
        if days >= horizon_days:
            break
    return None


def _intersect(a: List[Interval], b: List[Interval]) -> List[Interval]:
    out: List[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            name = a[i][2]["name"] if a[i][2]["name"] == b[j][2]["name"] else a[i][2]["name"] + "+" + b[j][2]["name"]
            w = dict(a[i][2], name=name)
            out.append((s, e, w))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _merge(ivs: List[Interval]) -> List[Interval]:
    """Sort and merge overlapping intervals (the first window's name wins, as in active_window)."""
    out: List[Interval] = []
    for s, e, w in sorted(ivs, key=lambda iv: (iv[0], iv[1])):
        if out and s <= out[-1][1]:
            ps, pe, pw = out[-1]
            if e > pe:
                out[-1] = (ps, e, pw if pe - ps >= e - s else w)
            continue
        out.append((s, e, w))
    return out


def common_windows(windows_by_host: Dict[str, Any], now: Any, horizon_days: int = HORIZON_DAYS) -> Dict[str, Any]:
    """Where all hosts can be worked on together.

    Returns ``{active, next, freeze, hosts_without_windows, per_host}``: ``active`` is the window open now for
    every host (``remaining_s`` until the first of them closes), ``next`` the first time all are open together.
    """
    now = parse_now(now)
    # Hosts usually share their group's definition: validate and evaluate each distinct definition once,
    # so a 2,000-node play costs what one host costs.
    by_def: Dict[str, List[Dict[str, Any]]] = {}
    host_def: Dict[str, str] = {}
    for host in sorted(windows_by_host):
        raw = windows_by_host[host]
        try:
            k = json.dumps(raw, sort_keys=True, default=repr)
        except (TypeError, ValueError):
            k = repr(raw)
        if k not in by_def:
            by_def[k] = validate(raw, key=f"{host}.windows")
        host_def[host] = k
    groups = by_def
    active_by_def = {k: active_window(ws, now) for k, ws in groups.items()}
    freeze = None
    for ws in groups.values():
        freeze = freeze or active_freeze(ws, now)
    per_host = {h: active_by_def[k] for h, k in host_def.items()}
    missing = sorted(h for h, k in host_def.items() if not any(not w["freeze"] for w in groups[k]))
    result: Dict[str, Any] = {
        "active": None,
        "next": None,
        "freeze": freeze,
        "hosts_without_windows": missing,
        "hosts_outside": sorted(h for h, a in per_host.items() if a is None),
        "per_host": per_host,
    }
    if not host_def or missing:
        return result
    for days in (16, 64, horizon_days):
        lo, hi = now - MAX_DURATION, now + datetime.timedelta(days=days)
        common: Optional[List[Interval]] = None
        for ws in groups.values():
            ivs = _merge(effective_intervals(ws, lo, hi))
            common = ivs if common is None else _intersect(common, ivs)
        common = common or []
        if result["active"] is None:
            cur = [iv for iv in common if iv[0] <= now < iv[1]]
            if cur:
                result["active"] = _describe(cur[0], now)
        upcoming = [iv for iv in common if iv[0] > now]
        if upcoming:
            result["next"] = _describe(upcoming[0], now)
            break
        if days >= horizon_days:
            break
    return result
