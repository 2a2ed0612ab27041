# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one source of time parsing and formatting, for node and controller code (Python 3.8+, stdlib only).

``parse_time`` accepts what real evidence and operators write: ISO 8601 with ``Z``/``z``, ``+hh:mm`` or
``+hhmm`` offsets, a space or ``T`` between date and time, ``,`` or ``.`` before any number of fraction digits
(3.8's ``fromisoformat`` wants exactly 3 or 6), epoch seconds as numbers or digit strings, and datetimes.
``iso_z`` and ``utcnow_iso`` write the collection's form: UTC with a ``Z``.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Optional

UTC = datetime.timezone.utc

_FRACTION = re.compile(r"^(.*[T ]\d\d:\d\d:\d\d)[.,](\d+)(.*)$")
_OFFSET_NO_COLON = re.compile(r"^(.*[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?[+-]\d\d)(\d\d)$")
_EPOCH = re.compile(r"^\d+(\.\d+)?$")


def parse_time(value: Any, assume_utc: bool = True) -> Optional[datetime.datetime]:
    """``value`` as a datetime, or None when it is not a time.

    With ``assume_utc`` (the default) the result is aware and in UTC, and a time without an offset is taken as
    UTC. With ``assume_utc=False`` a time without an offset stays naive (a wall-clock time) and an aware one keeps
    its offset, for callers that compare wall clocks when one side has no offset.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, datetime.datetime):
        dt = value
    elif isinstance(value, (int, float)):
        return _from_epoch(float(value))
    elif isinstance(value, str):
        s = value.strip()
        if not s or len(s) > 64 or not s.isascii():
            return None
        if _EPOCH.match(s):
            return _from_epoch(float(s))
        if s[-1] in "Zz":
            s = s[:-1] + "+00:00"
        m = _FRACTION.match(s)
        if m:
            s = "%s.%s%s" % (m.group(1), (m.group(2) + "000000")[:6], m.group(3))
        m = _OFFSET_NO_COLON.match(s)
        if m:
            s = "%s:%s" % (m.group(1), m.group(2))
        try:
            dt = datetime.datetime.fromisoformat(s)
        except ValueError:
            return None
    else:
        return None
    if not assume_utc:
        return dt
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def _from_epoch(seconds: float) -> Optional[datetime.datetime]:
    try:
        return datetime.datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def iso_z(dt: Optional[datetime.datetime], timespec: str = "seconds") -> Optional[str]:
    """An aware (or UTC-naive) datetime as ``2026-12-02T10:00:00Z``; ``timespec`` as in ``isoformat``."""
    if dt is None:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(UTC)


def utcnow_iso(timespec: str = "seconds") -> str:
    """Now, as ``iso_z`` writes it."""
    return iso_z(utcnow(), timespec)  # type: ignore[return-value]
