# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm maintenance reservations as maintenance windows (issue 39; pure, controller side).

``scontrol show reservation [<name>]`` prints one record per reservation, records separated by a blank line, each a
run of ``Key=Value`` words over several indented lines (Slurm's reservations guide and ``scontrol(1)``)::

    ReservationName=gpuops-maint StartTime=2026-09-12T01:00:00 EndTime=2026-09-12T05:00:00 Duration=04:00:00
       Nodes=gpu-node-[01-04] NodeCnt=4 CoreCnt=896 Features=(null) PartitionName=(null) Flags=MAINT,IGNORE_JOBS,SPEC_NODES
       TRES=cpu=896
       Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a
       MaxStartDelay=(null)

A value runs to the next word that starts a key (a name may hold spaces: ``ReservationName=maintenance weekend``;
``TRES=cpu=896`` is one value). Times are the local time of the process that ran scontrol (the change guard runs it
with ``TZ=UTC``); ``Nodes=ALL`` (old releases) is the whole cluster.

- :func:`parse`: the records as dicts of raw strings; raises :class:`ReservationError` on text that is not
  scontrol's (no record, a record without ``ReservationName``), and ``[]`` for "No reservations in the system".
- :func:`window`: one record -> ``{name, start, end, hosts | all, flags, state}`` (epoch seconds), or a
  :class:`ReservationError` naming the field (a time Slurm leaves ``Unknown``, an end not after the start: an
  ``infinite`` reservation has no end to count planned downtime to, a host list that does not expand).
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm_cli import hostlist as _hostlist

try:
    from zoneinfo import ZoneInfo
except ImportError:  # Python < 3.9 on the controller: UTC only
    ZoneInfo = None

_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z_]*)=")
_NONE = ("", "(null)", "n/a", "none")
NO_RESERVATIONS = "no reservations in the system"


class ReservationError(ValueError):
    """The text is not a reservation as scontrol prints it."""


def _record(text: str) -> Dict[str, str]:
    keys = list(_KEY.finditer(text))
    out: Dict[str, str] = {}
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(text)
        out.setdefault(m.group(1), " ".join(text[m.end() : end].split()))
    return out


def parse(text: Optional[str]) -> List[Dict[str, str]]:
    """The reservations of ``scontrol show reservation`` output, in order (see the module doc)."""
    if text is None or not str(text).strip():
        raise ReservationError("no scontrol output")
    body = str(text).strip()
    if body.lower().startswith(NO_RESERVATIONS):
        return []
    chunks = [c for c in re.split(r"\n\s*\n", body) if c.strip()]
    out = []
    for chunk in chunks:
        rec = _record(chunk)
        if not rec.get("ReservationName"):
            raise ReservationError("not a reservation record (no ReservationName=): %r" % chunk.strip()[:120])
        out.append(rec)
    return out


def find(records: List[Dict[str, str]], name: str) -> Optional[Dict[str, str]]:
    return next((r for r in records if r.get("ReservationName") == name), None)


def _time(rec: Dict[str, str], key: str, tz: Any) -> float:
    raw = rec.get(key)
    if raw is None:
        raise ReservationError("reservation %s has no %s" % (rec.get("ReservationName"), key))
    try:
        dt = datetime.datetime.strptime(raw, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise ReservationError("reservation %s: %s=%s is not a time" % (rec.get("ReservationName"), key, raw)) from None
    return dt.replace(tzinfo=tz).timestamp()


def _zone(timezone: str) -> Any:
    if timezone in ("UTC", "Etc/UTC", "utc"):
        return datetime.timezone.utc
    if ZoneInfo is None:
        raise ReservationError("time zone %r needs Python 3.9+ (zoneinfo) on the controller" % timezone)
    try:
        return ZoneInfo(timezone)
    except (KeyError, ValueError) as exc:
        raise ReservationError("unknown time zone %r: %s" % (timezone, exc)) from None


def flags(rec: Dict[str, str]) -> List[str]:
    return [f.strip().upper() for f in (rec.get("Flags") or "").split(",") if f.strip()]


def window(rec: Dict[str, str], timezone: str = "UTC") -> Dict[str, Any]:
    """One reservation record as a window: ``{name, start, end, hosts, all, flags, state}``."""
    name = rec.get("ReservationName") or ""
    tz = _zone(timezone)
    start, end = _time(rec, "StartTime", tz), _time(rec, "EndTime", tz)
    if end <= start:
        raise ReservationError(
            "reservation %s has no end after its start (Duration=%s): no planned window to count"
            % (name, rec.get("Duration"))
        )
    nodes = (rec.get("Nodes") or "").strip()
    fl = flags(rec)
    whole = nodes.upper() == "ALL" or "ALL_NODES" in fl
    try:
        hosts = [] if nodes.upper() == "ALL" or nodes.lower() in _NONE else _hostlist.expand(nodes)
    except _hostlist.HostlistError as exc:
        raise ReservationError("reservation %s: Nodes=%s: %s" % (name, nodes, exc)) from None
    if not whole and not hosts:
        raise ReservationError("reservation %s holds no nodes (Nodes=%s)" % (name, nodes))
    return {
        "name": name,
        "start": start,
        "end": end,
        "hosts": hosts,
        "all": whole,
        "flags": fl,
        "state": rec.get("State"),
    }


def is_maintenance(rec: Dict[str, str]) -> bool:
    """A MAINT reservation (Slurm accounts it as maintenance; the change guard creates them with MAINT)."""
    return "MAINT" in flags(rec)
