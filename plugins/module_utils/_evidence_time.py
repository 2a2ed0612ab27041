# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The evidence time of a capture: the time its evidence describes (docs/capture.md "Evidence time").

A capture is judged at the time it was taken, not at the time it is read: ``capture.json`` ``captured_at`` when
it is there; else the newest timestamp found in the evidence itself (the kernel log, the SEL, Redfish log
entries, Slurm's ``LastBusyTime``/``SlurmdStartTime``/``BootTime`` and reason stamps, the ``Timestamp`` header of
``nvidia-smi -q``); else the time of the inspection. A live collection's evidence time is its collection time.

Times later than the inspection plus a day (a BMC clock in 2036, a future ``ResumeAfterTime``) are not
evidence of when the capture was taken and are ignored. Runs on managed nodes (Python 3.8+) and on the
controller. No Ansible imports.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import capture as _capture
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import UTC, iso_z, parse_time, utcnow

SOURCE_META = "capture.json captured_at"
SOURCE_LIVE = "live collection"
SOURCE_NONE = "inspection time (no timestamp in the evidence)"
#: The start of the source of a capture that could not be read at all (followed by the path and why).
SOURCE_NONE_READ = "inspection time (nothing read)"

#: Slurm node fields whose times say the node was seen then (not ResumeAfterTime: that one is in the future)
SLURM_TIME_KEYS = ("LastBusyTime", "SlurmdStartTime", "BootTime")
#: capture file -> (regex of its header time, source name): ``nvidia-smi -q`` prints the time it ran
_HEADERS = (
    ("nvidia-smi-q.xml", re.compile(r"<timestamp>\s*([^<]{10,40}?)\s*</timestamp>"), "nvidia-smi-q.xml timestamp"),
    ("nvidia-smi-q.txt", re.compile(r"^\s*Timestamp\s*:\s*(.{10,40}?)\s*$", re.M), "nvidia-smi-q.txt Timestamp"),
)
_CTIME = re.compile(r"^(?:[A-Za-z]{3}\s+)?([A-Za-z]{3})\s+(\d{1,2})\s+(\d\d):(\d\d):(\d\d)\s+(\d{4})$")
_MONTHS = {m: i for i, m in enumerate(("jan feb mar apr may jun jul aug sep oct nov dec").split(), 1)}
#: how far into a capture file a header is looked for
_HEAD_CHARS = 4096


def _ctime(value: str) -> Optional[datetime.datetime]:
    """``Thu Nov 14 10:27:06 2024`` (nvidia-smi's header) as UTC; None when it is not that form."""
    m = _CTIME.match(value.strip())
    if not m or m.group(1).lower() not in _MONTHS:
        return None
    try:
        return datetime.datetime(
            int(m.group(6)),
            _MONTHS[m.group(1).lower()],
            int(m.group(2)),
            int(m.group(3)),
            int(m.group(4)),
            int(m.group(5)),
            tzinfo=UTC,
        )
    except ValueError:
        return None


_SEL_ADD = re.compile(
    r"^\s*Last Add Time\s*:\s*(\d\d)/(\d\d)/(\d{2}|\d{4})\s+(\d\d):(\d\d):(\d\d)(?:\s*([AP]M))?(?:\s+([A-Z]{3,4}))?",
    re.M,
)
#: the zone names ``ipmitool sel info`` prints (the BMC's zone); others count as UTC
_ZONES = {"UTC": 0, "GMT": 0, "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7}


def _sel_add_time(text: str) -> Optional[datetime.datetime]:
    """``Last Add Time : 12/02/26 13:10:43 UTC`` / ``09/11/2025 06:57:38 PM EDT`` of ``ipmitool sel info``."""
    m = _SEL_ADD.search(text)
    if not m:
        return None
    mo, d, y, hh, mi, ss = (int(g) for g in m.groups()[:6])
    y += 2000 if y < 100 else 0
    if m.group(7):
        hh = hh % 12 + (12 if m.group(7) == "PM" else 0)
    try:
        t = datetime.datetime(y, mo, d, hh, mi, ss, tzinfo=UTC)
    except ValueError:
        return None
    return t - datetime.timedelta(hours=_ZONES.get(m.group(8) or "UTC", 0))


def _as_dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


def fact_times(facts: Dict[str, Any], skip: Tuple[str, ...] = ()) -> Iterator[Tuple[Any, str]]:
    """Every (time value, source name) in the facts of a capture: kernel events, SEL entries, Redfish log
    entries, Slurm node times and reason stamps. ``skip``: domains not to look at."""
    if "kernel" not in skip:
        for ev in _as_list(_as_dict(facts.get("kernel")).get("events")):
            if isinstance(ev, dict) and ev.get("timestamp"):
                yield ev["timestamp"], "kernel.log"
    bmc = _as_dict(facts.get("bmc"))
    if "bmc" not in skip:
        for e in _as_list(bmc.get("sel")):
            if isinstance(e, dict) and e.get("time"):
                yield e["time"], "ipmitool-sel.txt"
        for e in _as_list(_as_dict(bmc.get("redfish")).get("log_entries")):
            if isinstance(e, dict) and e.get("created"):
                yield e["created"], "redfish log entries"
    if "slurm" not in skip:
        for n in _as_list(_as_dict(facts.get("slurm")).get("nodes")):
            if not isinstance(n, dict):
                continue
            raw = _as_dict(n.get("raw"))
            for key in SLURM_TIME_KEYS:
                if raw.get(key):
                    yield raw[key], "scontrol-show-node.txt %s" % key
            if n.get("reason_time"):
                yield n["reason_time"], "scontrol-show-node.txt reason stamp"


def header_times(capture_dir: str) -> Iterator[Tuple[Any, str]]:
    """The ``Timestamp`` header of the nvidia-smi files and the SEL's ``Last Add Time`` (``ipmitool sel info``) of
    ``capture_dir`` (an unreadable file is skipped: its domain reports it)."""
    for name, rx, source in _HEADERS:
        try:
            text = _capture.read(capture_dir, name)
        except ParseError:
            continue
        m = rx.search(text[:_HEAD_CHARS]) if text else None
        if m:
            yield (_ctime(m.group(1)) or m.group(1)), source
    try:
        text = _capture.read(capture_dir, "ipmitool-sel-info.txt")
    except ParseError:
        text = None
    t = _sel_add_time(text[:_HEAD_CHARS]) if text else None
    if t is not None:
        yield t, "ipmitool-sel-info.txt Last Add Time"


def newest(candidates: Any, now: Optional[datetime.datetime] = None) -> Tuple[Optional[datetime.datetime], str]:
    """The newest plausible time among ``(value, source)`` pairs: (time, its source), or (None, "")."""
    limit = (now or utcnow()) + datetime.timedelta(days=1)
    best: Optional[datetime.datetime] = None
    source = ""
    for value, src in candidates:
        t = value if isinstance(value, datetime.datetime) else parse_time(value)
        if t is None:
            continue
        if t.tzinfo is None:
            t = t.replace(tzinfo=UTC)
        if t > limit or t.year < 2000:
            continue
        if best is None or t > best:
            best, source = t, src
    return best, source


def resolve(meta: Dict[str, Any], candidates: Any, now: Optional[datetime.datetime] = None) -> Tuple[str, str]:
    """(evidence time as ISO ``Z``, its source) of a capture: ``captured_at`` of ``meta`` (capture.json), else
    the newest of ``candidates``, else ``now`` (the inspection)."""
    now = now or utcnow()
    t = parse_time(meta.get("captured_at")) if isinstance(meta, dict) else None
    if t is not None:
        return iso_z(t) or "", SOURCE_META
    best, source = newest(candidates, now)
    if best is not None:
        return iso_z(best) or "", source
    return iso_z(now) or "", SOURCE_NONE
