# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ipmitool System Event Log: ``sel list`` / ``sel elist`` rows and their dates (re-exported by ``_ipmi``).

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    parse_int,
    to_float,
    to_int,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.ipmi_sdr import (
    SEL_SENSOR_TYPES,
    LEAK_NAME,
    state_severity,
    text_records,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z

# ---------------------------------------------------------------------------------------------------- SEL

_TZ_OFFSETS = {
    "UTC": 0,
    "GMT": 0,
    "Z": 0,
    "EST": -5,
    "EDT": -4,
    "CST": -6,
    "CDT": -5,
    "MST": -7,
    "MDT": -6,
    "PST": -8,
    "PDT": -7,
    "CET": 1,
    "CEST": 2,
    "WET": 0,
    "WEST": 1,
    "EET": 2,
    "EEST": 3,
    "BST": 1,
    "JST": 9,
    "KST": 9,
}

_DATE_PATTERNS = (
    (re.compile(r"^([0-9]{1,2})/([0-9]{1,2})/([0-9]{4})$"), ("m", "d", "Y")),
    (re.compile(r"^([0-9]{1,2})/([0-9]{1,2})/([0-9]{2})$"), ("m", "d", "y")),
    (re.compile(r"^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})$"), ("Y", "m", "d")),
    (re.compile(r"^([0-9]{1,2})\.([0-9]{1,2})\.([0-9]{4})$"), ("d", "m", "Y")),
)

_TIME = re.compile(r"^([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?(?:\s*([AaPp][Mm]))?(?:\s+([A-Za-z][A-Za-z0-9+:-]*))?$")


#: per-process tables of a SEL's recurring texts (a node's SEL repeats a few dozen dates, sensors and events over
#: hundreds of rows, and its peers the same ones): bounded, cleared when full. Each holds what the general code
#: answers for that text, so a hit gives the same row (tests/unit/plugins/module_utils/test_parse_fast_paths.py).
_TABLE_MAX = 8192
#: date column -> "YYYY-MM-DD" (a valid day from year 1000: the time is appended), None (no such date: the row's
#: time is None whatever its time column), or "" (the general path decides)
_DATES: Dict[str, Optional[str]] = {}
#: (sensor column, event column, direction column) -> (sensor type, name, number, event, direction, severity)
_SEMANTICS: Dict[Tuple[str, str, str], Tuple[Any, ...]] = {}
_PLAIN_TIME = re.compile(r"[0-9]{2}:[0-9]{2}:[0-9]{2}")
_RECORD_ID = re.compile(r"^[0-9a-fA-F]{1,8}$")


def _date_prefix(date_s: str) -> Optional[str]:
    """:data:`_DATES`' answer for a stripped date column."""
    for rx, order in _DATE_PATTERNS:
        m = rx.match(date_s)
        if m:
            parts = dict(zip(order, (int(v) for v in m.groups())))
            break
    else:
        return None
    year = parts.get("Y", 2000 + parts.get("y", 0))
    if year < 1000:
        return ""  # strftime's %Y of a 3-digit year is not zero-padded everywhere: the general path
    try:
        datetime.date(year, parts["m"], parts["d"])
    except ValueError:
        return None
    return "%04d-%02d-%02d" % (year, parts["m"], parts["d"])


def sel_time(date_s: str, time_s: str) -> Optional[str]:
    """ISO 8601 time from a SEL date and time column; None for Pre-Init / Unspecified / unparseable."""
    date_s = (date_s or "").strip()
    time_s = (time_s or "").strip()
    prefix = _DATES.get(date_s, "")
    if prefix == "" and date_s not in _DATES:
        if len(_DATES) >= _TABLE_MAX:
            _DATES.clear()
        prefix = _DATES[date_s] = _date_prefix(date_s)
    if prefix is None:
        return None  # not a date, or no such day: the general path's None whatever the time
    if prefix and _PLAIN_TIME.fullmatch(time_s) and time_s[:2] < "24" and time_s[3:5] < "60" and time_s[6:] < "60":
        return prefix + "T" + time_s  # a naive HH:MM:SS: what strftime writes for it
    return _sel_time(date_s, time_s)


def _sel_time(date_s: str, time_s: str) -> Optional[str]:
    """:func:`sel_time`'s general path (stripped columns)."""
    parts: Dict[str, int] = {}
    for rx, order in _DATE_PATTERNS:
        m = rx.match(date_s)
        if m:
            for key, val in zip(order, m.groups()):
                parts[key] = int(val)
            break
    else:
        return None
    year = parts.get("Y", 2000 + parts.get("y", 0))
    m = _TIME.match(time_s)
    if not m:
        return None
    hour, minute, second = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    ampm = (m.group(4) or "").upper()
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm == "PM" else 0)
    try:
        dt = datetime.datetime(year, parts["m"], parts["d"], hour, minute, second)
    except ValueError:
        return None
    tz = m.group(5)
    if tz:
        tz_u = tz.upper()
        off = _TZ_OFFSETS.get(tz_u)
        om = re.match(r"^(?:UTC|GMT)?([+-])([0-9]{1,2}):?([0-9]{2})?$", tz_u)
        if off is not None:
            if off == 0:
                return iso_z(dt)  # a naive time is UTC to iso_z
            return dt.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=off))).isoformat()
        if om:
            delta = datetime.timedelta(hours=int(om.group(2)), minutes=int(om.group(3) or 0))
            if om.group(1) == "-":
                delta = -delta
            return dt.replace(tzinfo=datetime.timezone(delta)).isoformat()
    return dt.strftime("%Y-%m-%dT%H:%M:%S")


def split_sel_sensor(col: str) -> Tuple[Optional[str], Optional[str], Optional[int]]:
    """``'Power Supply PS1 Status'`` -> ``('Power Supply', 'PS1 Status', None)``;
    ``'Fan #0x0c'`` -> ``('Fan', '#0x0c', 12)`` (no SDR name: the number stands in, so sensors stay apart)."""
    col = col.strip()
    for t in SEL_SENSOR_TYPES:
        if col == t or col.startswith(t + " "):
            rest = col[len(t) :].strip()
            m = re.match(r"^#0x([0-9a-fA-F]+)$", rest)
            if m:
                return t, "#0x%02x" % parse_int(m.group(1), 16), parse_int(m.group(1), 16)
            return t, rest or None, None
    m = re.match(r"^(.*?)\s*#0x([0-9a-fA-F]+)$", col)
    if m:
        return (m.group(1) or None), "#0x%02x" % parse_int(m.group(2), 16), parse_int(m.group(2), 16)
    return None, col or None, None


_SEL_READING = re.compile(
    r"Reading\s+([-+]?[0-9.]+)\s*(?:[<>]|!=|=)\s*Threshold\s+([-+]?[0-9.]+)\s*(.*)$",
    re.I,
)


def parse_sel(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """``ipmitool sel list`` / ``sel elist``. Record ids are hex. Pre-Init and Unspecified times are None.

    A malformed entry is a ``parse`` entry in ``errors`` and the other entries are kept; an entry whose only
    flaw is its reading (``Reading 2.7.1 > Threshold 2.5``) is kept with reading and threshold null, plus
    that entry. Without an ``errors`` list it raises ParseError with the events as ``partial``.
    """
    rec = text_records(text, "ipmitool_sel", source, errors)
    events: List[Dict[str, Any]] = []
    content = False
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        content = True
        if "|" not in s or rec.too_long(s, lineno):
            continue  # 'SEL has no entries', 'Unable to send command', ...
        cols = [c.strip() for c in s.split("|")]
        if len(cols) < 4 or not _RECORD_ID.match(cols[0]):
            continue
        with rec.at(lineno):
            ev = _sel_entry(cols, lineno, rec)
            events.append(ev)
    if content and not events and not rec.count and not re.search(r"no entries", text, re.I):
        if any("|" in ln for ln in text.splitlines()):
            raise ParseError("no SEL records found", "ipmitool_sel", source, 1)
    return rec.finish(events)


def _sel_entry(cols: List[str], lineno: int, rec: Records) -> Dict[str, Any]:
    """One ``sel list``/``elist`` row (``cols``: the ``|`` columns, the first a hex record id)."""
    rec_id = int(cols[0], 16)
    date_s, time_s = cols[1], cols[2]
    rest = cols[3:]
    time_iso = sel_time(date_s, time_s)
    preinit = None
    if date_s.lower().replace("-", "") == "preinit":
        preinit = to_int(time_s)
    if rest and rest[0].startswith("OEM record"):
        return {
            "id": rec_id,
            "time": time_iso,
            "sensor_type": "OEM",
            "sensor": rest[0],
            "sensor_number": None,
            "event": " | ".join(rest[1:]) or None,
            "direction": None,
            "severity": "ok",
            "reading": None,
            "threshold": None,
            "preinit_seconds": preinit,
            "line": lineno,
        }
    sensor_col = rest[0] if rest else ""
    event = rest[1] if len(rest) > 1 else ""
    direction_raw = rest[2] if len(rest) > 2 else ""
    extra = " | ".join(rest[3:]) if len(rest) > 3 else ""
    key = (sensor_col, event, direction_raw)
    sem = _SEMANTICS.get(key)
    if sem is None:
        sem = _semantics(sensor_col, event, direction_raw)
        if len(_SEMANTICS) >= _TABLE_MAX:
            _SEMANTICS.clear()
        _SEMANTICS[key] = sem
    stype, sname, snum, event_clean, direction, severity = sem
    reading = threshold = None
    m = _SEL_READING.search(extra) if extra else None
    if m:
        reading, threshold = _sel_number(m.group(1)), _sel_number(m.group(2))
        if reading is None or threshold is None:
            rec.add(
                "SEL entry %s: reading %r / threshold %r is not a number" % (cols[0], m.group(1), m.group(2)), lineno
            )
            reading = threshold = None
    return {
        "id": rec_id,
        "time": time_iso,
        "sensor_type": stype,
        "sensor": sname,
        "sensor_number": snum,
        "event": event_clean,
        "direction": direction,
        "severity": severity,
        "reading": reading,
        "threshold": threshold,
        "preinit_seconds": preinit,
        "line": lineno,
    }


def _semantics(sensor_col: str, event: str, direction_raw: str) -> Tuple[Any, ...]:
    """A SEL row's sensor, event, direction and severity from its sensor, event and direction columns."""
    stype, sname, snum = split_sel_sensor(sensor_col)
    direction = None
    d = direction_raw.lower()
    if d.startswith("deasserted"):
        direction = "deasserted"
    elif d.startswith("asserted"):
        direction = "asserted"
    event_clean = re.sub(r"\s*\(\)\s*$", "", event).strip() or None
    severity = state_severity(event_clean or "")
    if (
        direction == "asserted"
        and LEAK_NAME.search(sname or sensor_col)
        and (event_clean or "").lower()
        in ("state asserted", "device present", "transition to critical from less severe")
    ):
        severity = "critical"  # a leak sensor is a generic discrete sensor: its asserted state is the leak
    if direction == "deasserted":
        low = (event_clean or "").lower()
        severity = "non_critical" if low in ("fully redundant", "presence detected", "device present") else "ok"
    return stype, sname, snum, event_clean, direction, severity


def _sel_number(token: str) -> Optional[float]:
    """A SEL reading or threshold: one plain decimal number (``2.7.1`` is not one)."""
    return to_float(token) if re.fullmatch(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", token) else None
