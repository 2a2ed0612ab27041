# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared helpers for the pure parsers and collectors of gpuops.cluster.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import math
import os
import re
import traceback
from typing import Any, Dict, List, Optional, Tuple


#: Strings that real tools print instead of a value. Compared after strip() and lower().
SENTINELS = frozenset(
    s.lower()
    for s in (
        "",
        "N/A",
        "[N/A]",
        "NA",
        "[Not Supported]",
        "Not Supported",
        "[Requested functionality has been deprecated]",
        "[Unknown Error]",
        "Unknown Error",
        "Unknown",
        "[Unknown]",
        "[Insufficient Permissions]",
        "[GPU requires reset]",
        "[Not Available]",
        "Not Available",
        "ns",
        "no reading",
        "not readable",
        "disabled",
        "none",
        "(null)",
        "-",
    )
)

# ASCII digits only: ``\\d`` and ``str.isdigit()`` also accept ``²`` or ``٣``, which no tool prints as a number.
_NUM_UNIT = re.compile(r"^\s*([-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*(\S.*)?$")
_ASCII_INT = re.compile(r"[-+]?[0-9]+")
_ASCII_HEX = re.compile(r"0[xX][0-9a-fA-F]+")

#: Longest number token the helpers convert (a 64-bit counter has 20 digits; 5,000 digits is not a reading).
MAX_NUMBER_CHARS = 64
#: Parse-error entries one parse call lists; further malformed records are counted in one more entry.
MAX_RECORD_ERRORS = 20
#: Longest line a line-oriented parser reads as a record: no tool prints a longer one, and a 100,000-character
#: line would cost regular expressions seconds. A longer line is a parse-error entry, not a record.
MAX_LINE_CHARS = 4096

#: Limit on what a collector reads from one file or one command (a 'huge' input is an error, not an OOM).
MAX_INPUT_BYTES = 64 * 1024 * 1024


class ParseError(Exception):
    """Raised by every parser in this collection for input it cannot parse.

    ``parser`` names the parser, ``source`` the file or command, ``line`` the 1-based line (or None).
    ``partial`` may carry what was parsed before the error (e.g. the complete GPUs before a truncation).
    """

    def __init__(
        self,
        message: str,
        parser: str = "",
        source: Optional[str] = None,
        line: Optional[int] = None,
        partial: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.parser = parser
        self.source = source
        self.line = line
        self.partial = partial

    def __str__(self) -> str:
        where = self.source or "<input>"
        if self.line is not None:
            where = "%s:%d" % (where, self.line)
        return "%s: %s: %s" % (self.parser or "parser", where, self.message)

    #: The collector-error kind this exception becomes (UnsafeFileError: ``unreadable``).
    kind = "parse"

    def to_error(self, domain: str, kind: Optional[str] = None) -> Dict[str, Any]:
        kind = self.kind if kind is None or self.kind != "parse" else kind
        return error_record(domain, kind, self.message, source=self.source, parser=self.parser, line=self.line)


def error_record(
    domain: str,
    kind: str,
    message: str,
    source: Optional[str] = None,
    parser: Optional[str] = None,
    line: Optional[int] = None,
) -> Dict[str, Any]:
    """One collector error, as every collector reports it (the policy turns it into ``collector.error``).

    ``kind`` is one of: ``parse`` (bad or truncated output), ``tool_error`` (the tool printed an error
    or exited non-zero), ``timeout`` (killed after its timeout), ``missing`` (tool or file absent where
    it was required), ``unreadable`` (a device the driver cannot read), ``internal`` (a bug: reported, not
    raised), ``skipped`` (not run, or killed early, because the collection's time budget was spent: a part not
    seen, never evidence of a hang).
    """
    return {
        "domain": domain,
        "kind": kind,
        "message": message,
        "source": source,
        "parser": parser,
        "line": line,
    }


def internal_error(domain: str, exc: BaseException, redact: Optional[str] = None) -> Dict[str, Any]:
    """The error record of a bug caught at a collector boundary (kind ``internal``, source ``file:line``)."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = "%s:%d" % (os.path.basename(tb[-1].filename), tb[-1].lineno) if tb else None
    msg = "%s: %s" % (type(exc).__name__, exc)
    if redact:
        msg = msg.replace(redact, "********")
    return error_record(domain, "internal", msg, source=where)


def clean(value: Any) -> Any:
    """Return None for the sentinel strings tools print instead of a value; strip other strings."""
    if value is None:
        return None
    if isinstance(value, str):
        v = value.strip()
        if v.lower() in SENTINELS:
            return None
        return v
    return value


def num_unit(value: Any) -> Tuple[Optional[float], Optional[str]]:
    """Split ``"67.03 W"`` into ``(67.03, "W")``; sentinels and garbage give ``(None, None)``.

    Only ASCII digits make a number, and only a finite one: ``inf``, ``nan``, ``1e999`` and over-long digit
    runs are garbage here (a counter, a reading or a bandwidth is never infinite).
    """
    # text, the common case, goes straight to the pattern: no sentinel starts with a number, and the pattern takes
    # the whitespace strip() would remove
    v = value if isinstance(value, str) else clean(value)
    if v is None:
        return None, None
    if isinstance(v, bool):
        return None, None
    if isinstance(v, (int, float)):
        try:
            f = float(v)
        except OverflowError:
            return None, None
        return (f, None) if math.isfinite(f) else (None, None)
    m = _NUM_UNIT.match(v if isinstance(v, str) else str(v))
    if not m or len(m.group(1)) > MAX_NUMBER_CHARS:
        return None, None
    try:
        f = float(m.group(1))
    except ValueError:
        return None, None
    if not math.isfinite(f):
        return None, None
    return f, (m.group(2).strip() if m.group(2) else None)


def to_float(value: Any) -> Optional[float]:
    """Number from a value that may carry a unit or be a sentinel (finite, ASCII digits only)."""
    return num_unit(value)[0]


def to_int(value: Any) -> Optional[int]:
    """Integer from a value that may carry a unit, be hex (``0x1f``) or be a sentinel (ASCII digits only)."""
    if isinstance(value, str):  # the common case first: a counter of plain ASCII digits (no sentinel is one)
        s = value.strip()
        if s.isdigit() and s.isascii() and len(s) <= MAX_NUMBER_CHARS:
            return int(s)
    v = clean(value)
    if v is None:
        return None
    if isinstance(v, int):  # bool too: True is 1
        return int(v)
    s = str(v).strip()
    if len(s) <= MAX_NUMBER_CHARS and _ASCII_INT.fullmatch(s):  # the common case, without float rounding
        return int(s)
    if s[:2] in ("0x", "0X"):
        return int(s, 16) if len(s) <= MAX_NUMBER_CHARS and _ASCII_HEX.fullmatch(s) else None
    f = to_float(s)
    if f is None:
        return None
    try:
        return int(f)
    except (OverflowError, ValueError):
        return None


def parse_int(text: str, base: int = 10) -> int:
    """Strict integer from a token a parser's pattern matched (``[0-9]+``, or hex digits with base 16).

    Raises ParseError for anything but ASCII digits, or more than MAX_NUMBER_CHARS of them: inside a
    parser's record boundary (``Records``) that costs the one record, not the domain.
    """
    s = text.strip() if isinstance(text, str) else ""
    rx = _ASCII_INT if base == 10 else re.compile(r"[0-9a-fA-F]+")
    if not s or len(s) > MAX_NUMBER_CHARS or not rx.fullmatch(s):
        raise ParseError("not a number: %r" % (text[:40] if isinstance(text, str) else text,))
    return int(s, base)


def to_bool(value: Any) -> Optional[bool]:
    """Enabled/Disabled, Yes/No, Active/Not Active, On/Off, True/False -> bool; else None."""
    v = value.strip().lower() if isinstance(value, str) else value
    if isinstance(v, bool):
        return v
    if not isinstance(v, str):
        return None
    if v in ("enabled", "enable", "yes", "active", "on", "true", "1", "pending"):
        return True
    if v in ("disabled", "disable", "no", "not active", "off", "false", "0", "inactive"):
        return False
    return None


class Records:
    """The per-record error boundary of a parser: a malformed record costs that record, never the domain.

    ``with rec.at(lineno): ...`` around one record (a line, a GPU block, a port, a SEL entry, a test row):
    a ParseError or any other exception raised inside becomes a ``parse`` error entry (error_record shape,
    with the line) in ``errors`` and the parser goes on with the next record. At most MAX_RECORD_ERRORS
    entries are listed; one more entry counts the rest. ``finish(result)`` returns the result, or, when the
    caller passed no ``errors`` list, raises ParseError with the result as ``partial`` (never a silent pass).
    """

    __slots__ = ("count", "domain", "errors", "external", "line", "parser", "source", "_more")

    def __init__(self, parser: str, source: Optional[str], domain: str, errors: Optional[list] = None) -> None:
        self.parser = parser
        self.source = source
        self.domain = domain
        self.external = errors is not None
        self.errors: list = errors if errors is not None else []
        self.count = 0
        self.line: Optional[int] = None
        self._more: Optional[Dict[str, Any]] = None

    def add(self, message: str, line: Optional[int] = None) -> None:
        self.count += 1
        if self.count <= MAX_RECORD_ERRORS:
            self.errors.append(error_record(self.domain, "parse", message[:300], self.source, self.parser, line))
            return
        extra = self.count - MAX_RECORD_ERRORS
        msg = "%d more malformed record%s (only the first %d are listed)" % (
            extra,
            "" if extra == 1 else "s",
            MAX_RECORD_ERRORS,
        )
        if self._more is None:
            self._more = error_record(self.domain, "parse", msg, self.source, self.parser, line)
            self.errors.append(self._more)
        else:
            self._more["message"] = msg

    def too_long(self, text: str, line: Optional[int]) -> bool:
        """True (and a parse-error entry) when ``text`` is over MAX_LINE_CHARS: the caller skips the line."""
        if len(text) <= MAX_LINE_CHARS:
            return False
        self.add("line of %d characters is over the %d-character limit of a record" % (len(text), MAX_LINE_CHARS), line)
        return True

    def at(self, line: Optional[int]) -> Records:
        self.line = line
        return self

    def __enter__(self) -> Records:
        return self

    def __exit__(self, etype: Any, exc: Any, tb: Any) -> bool:
        if exc is None or not isinstance(exc, Exception):
            return False
        if isinstance(exc, ParseError):
            self.add("malformed record: %s" % exc.message, exc.line or self.line)
        else:
            self.add("malformed record: %s: %s" % (type(exc).__name__, str(exc)[:200]), self.line)
        return True

    def finish(self, result: Any) -> Any:
        if self.errors and not self.external:
            first = self.errors[0]
            raise ParseError(
                "%s (%d malformed record%s)" % (first["message"], max(self.count, 1), "" if self.count < 2 else "s"),
                self.parser,
                self.source,
                first["line"],
                partial=result,
            )
        return result


#: normalize_bus_id's answers by text (a node has a dozen addresses, its peers the same ones): bounded, cleared
#: when full; a check evaluates ~30 addresses a node
_BUS_IDS: Dict[str, Optional[str]] = {}
_BUS_IDS_MAX = 4096


def normalize_bus_id(value: Any) -> Optional[str]:
    """Normalize a PCI address to nvidia-smi's long form ``00000000:07:00.0`` (upper-case hex).

    Accepts ``0000:07:00.0``, ``00000000:07:00.0``, ``07:00.0``, ``GPU0000:07:00.0``, ``PCI:0000:07:00``.
    Returns None for redacted or malformed addresses.
    """
    if isinstance(value, str):
        try:
            return _BUS_IDS[value]
        except KeyError:
            pass
        out = _normalize_bus_id(value)
        if len(_BUS_IDS) >= _BUS_IDS_MAX:
            _BUS_IDS.clear()
        _BUS_IDS[value] = out
        return out
    return _normalize_bus_id(value)


def _normalize_bus_id(value: Any) -> Optional[str]:
    v = clean(value)
    if v is None:
        return None
    s = str(v).strip().upper()
    for prefix in ("GPU", "PCI:"):
        if s.startswith(prefix):
            s = s[len(prefix) :]
    m = re.match(r"^(?:([0-9A-F]{1,8}):)?([0-9A-F]{1,2}):([0-9A-F]{1,2})(?:\.([0-7]))?$", s)
    if not m:
        return None
    dom, bus, dev, fn = m.group(1) or "0", m.group(2), m.group(3), m.group(4) or "0"
    return "%08X:%02X:%02X.%s" % (int(dom, 16), int(bus, 16), int(dev, 16), fn)


def lines_of(text: str) -> List[str]:
    return text.splitlines()
