# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared helpers for the pure parsers and collectors of gpuops.cluster.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import datetime
import os
import re
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

_NUM_UNIT = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S.*)?$")

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

    def to_error(self, domain: str, kind: str = "parse") -> Dict[str, Any]:
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
    it was required), ``unreadable`` (a device the driver cannot read), ``internal`` (a bug: reported, not raised).
    """
    return {
        "domain": domain,
        "kind": kind,
        "message": message,
        "source": source,
        "parser": parser,
        "line": line,
    }


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
    """Split ``"67.03 W"`` into ``(67.03, "W")``; sentinels and garbage give ``(None, None)``."""
    v = clean(value)
    if v is None:
        return None, None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v), None
    m = _NUM_UNIT.match(str(v))
    if not m:
        return None, None
    try:
        return float(m.group(1)), (m.group(2).strip() if m.group(2) else None)
    except ValueError:
        return None, None


def to_float(value: Any) -> Optional[float]:
    """Number from a value that may carry a unit or be a sentinel."""
    return num_unit(value)[0]


def to_int(value: Any) -> Optional[int]:
    """Integer from a value that may carry a unit, be hex (``0x1f``) or be a sentinel."""
    v = clean(value)
    if v is None:
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    s = str(v).strip()
    if s.isdigit():  # the common case, without a regex
        return int(s)
    if re.match(r"^0[xX][0-9a-fA-F]+$", s):
        return int(s, 16)
    f = to_float(s)
    if f is None:
        return None
    try:
        return int(f)
    except (OverflowError, ValueError):
        return None


def to_bool(value: Any) -> Optional[bool]:
    """Enabled/Disabled, Yes/No, Active/Not Active, On/Off, True/False -> bool; else None."""
    v = value.strip().lower() if isinstance(value, str) else value
    if isinstance(v, bool):
        return v
    if v in ("enabled", "enable", "yes", "active", "on", "true", "1", "pending"):
        return True
    if v in ("disabled", "disable", "no", "not active", "off", "false", "0", "inactive"):
        return False
    return None


def decode(data: bytes) -> str:
    """Bytes from a tool or a capture file to text; invalid UTF-8 never raises."""
    return data.decode("utf-8", errors="replace")


def read_text(path: str, max_bytes: int = MAX_INPUT_BYTES) -> Optional[str]:
    """Read a capture file as text. Returns None when missing. Raises ParseError when over max_bytes."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    if size > max_bytes:
        raise ParseError("file is %d bytes, over the %d byte limit" % (size, max_bytes), "read_text", path)
    try:
        with open(path, "rb") as fh:
            return decode(fh.read())
    except OSError as exc:
        raise ParseError("cannot read: %s" % exc, "read_text", path) from exc


def utcnow_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def normalize_bus_id(value: Any) -> Optional[str]:
    """Normalize a PCI address to nvidia-smi's long form ``00000000:07:00.0`` (upper-case hex).

    Accepts ``0000:07:00.0``, ``00000000:07:00.0``, ``07:00.0``, ``GPU0000:07:00.0``, ``PCI:0000:07:00``.
    Returns None for redacted or malformed addresses.
    """
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
