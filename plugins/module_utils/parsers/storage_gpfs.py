# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers of the IBM Storage Scale (GPFS) outputs (docs/storage.md): the ``-Y`` form of ``mmhealth node show``,
``mmhealth cluster show`` (and its table form), ``mmlsdisk <fs>`` and ``mmdf <fs>``.

The ``-Y`` form (../shared/reference/cluster-formats.md section 6): colon-separated; field 1 the command, field 2
the record type (empty for ``mmlsdisk``), field 3 ``HEADER`` on the row that names the fields of the data rows of
that type that follow (the most recent HEADER of the same command and type wins; types interleave). Values are
percent-encoded (``%3A`` is ``:``): split on ``:`` first, then decode each field. A row may carry more fields than
its header (newer event rows append ``message:eventtype:severity``: read as such when the header lacks them) or
fewer (missing trailing fields are absent keys); a row without a field its parser needs costs that row.

Runs on managed nodes (Python 3.8+) and on the controller. Stdlib only, no Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence
from urllib.parse import unquote

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, Records, parse_int
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.storage import (
    DOMAIN,
    _lines,
    is_prompt,
    tool_message,
)

#: The fields newer releases append to ``mmhealth:Event`` rows without naming them in the HEADER.
EVENT_EXTRAS = ("message", "eventtype", "severity")
#: ``mmlsdisk: File system gpfs0 is not mounted.``: the command's own message (a sentence after ``<cmd>: ``).
_MM_MSG = re.compile(r"^(mm[a-z]{2,20}): (\S.*)$")


def parse_mm_y(
    text: str,
    command: str,
    source: Optional[str] = None,
    errors: Optional[list] = None,
    required: Optional[Dict[str, Sequence[str]]] = None,
) -> Dict[str, List[Dict[str, str]]]:
    """The ``-Y`` output of an ``mm*`` command: ``{record type: [row dict]}`` (see the module docstring).

    ``required``: record type -> fields a row of that type must have (a row without one is a malformed record);
    a name ending ``#`` must be an integer too.
    A data row before any HEADER of its type is a malformed record; no HEADER at all is a ParseError.
    """
    parser = "%s_Y" % command
    lines = _lines(text, parser, source)
    rec = Records(parser, source, DOMAIN, errors)
    start = len(rec.errors)  # the caller's list may hold other sources' entries
    headers: Dict[str, List[str]] = {}
    out: Dict[str, List[Dict[str, str]]] = {}
    need = required or {}
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or rec.too_long(raw, no) or is_prompt(line):
            continue
        with rec.at(no):
            parts = line.split(":")
            if parts[0] != command or len(parts) < 4:
                m = _MM_MSG.match(line)
                if m and m.group(1) == command:
                    tool_message(rec, line[:200], no)
                    continue
                raise ParseError("not a %s -Y line: %r" % (command, line[:80]), line=no)
            section = parts[1]
            if parts[2] == "HEADER":
                headers[section] = parts[3:]
                continue
            fields = headers.get(section)
            if fields is None:
                raise ParseError("%s row before its HEADER line" % (section or "data"), line=no)
            row = _row(fields, parts[3:], command, section)
            _check_row(row, need.get(section, ()), section, no)
            out.setdefault(section, []).append(row)
    if not headers and not any(e.get("kind") == "tool_error" for e in rec.errors[start:]):
        raise ParseError("no HEADER line: not %s -Y output" % command, parser, source)
    return rec.finish(out)


def _check_row(row: Dict[str, str], need: Sequence[str], section: str, no: int) -> None:
    lacking = [f.rstrip("#") for f in need if not row.get(f.rstrip("#"))]
    if lacking:
        raise ParseError("%s row without %s (truncated?)" % (section or "data", ", ".join(lacking)), line=no)
    for f in need:
        if f.endswith("#"):
            parse_int(row[f[:-1]])


def _row(fields: List[str], values: List[str], command: str, section: str) -> Dict[str, str]:
    row = {f: unquote(v) for f, v in zip(fields, values) if f}
    named = len(fields)
    while named and not fields[named - 1]:  # the HEADER's trailing ':' names no field
        named -= 1
    extra = values[named:]
    while extra and not extra[-1]:
        extra.pop()
    if command == "mmhealth" and section == "Event" and len(extra) >= 3 and "severity" not in row:
        # message:eventtype:severity appended; a raw ':' in the message joins it back together
        row["message"] = unquote(":".join(extra[:-2]))
        row["eventtype"], row["severity"] = unquote(extra[-2]), unquote(extra[-1])
    return row


_CLUSTER_HEAD = ("component", "total", "failed", "degraded", "healthy", "other")


def parse_mmhealth(text: str, source: Optional[str] = None, errors: Optional[list] = None) -> Dict[str, Any]:
    """``mmhealth node show -Y`` and ``mmhealth cluster show -Y`` (one file may hold both, and several nodes):

    ``{states: [{node, component, entity, entity_type, status, since}], events: [{node, component, entity,
    entity_type, event, arguments, since, identifier, hidden, message, type, severity}], summary: [{component,
    entity, total, failed, degraded, healthy, other}]}``. ``status`` and ``severity`` are upper case as printed
    (``severity`` None where the release prints none). The table form of ``mmhealth cluster show`` (``Component
    Total Failed Degraded Healthy Other``) is read into ``summary`` too.
    """
    if isinstance(text, str) and "mmhealth:" not in text:
        return _cluster_table(text, source, errors)
    sec = parse_mm_y(
        text,
        "mmhealth",
        source,
        errors,
        {"State": ("component", "status"), "Event": ("component", "event"), "Summary": ("component",)},
    )
    states = [
        {
            "node": r.get("node"),
            "component": r.get("component"),
            "entity": r.get("entityname") or r.get("node"),
            "entity_type": r.get("entitytype"),
            "status": (r.get("status") or "").upper(),
            "since": r.get("laststatuschange"),
        }
        for r in sec.get("State", [])
    ]
    events = [
        {
            "node": r.get("node"),
            "component": r.get("component"),
            "entity": r.get("entityname") or r.get("node"),
            "entity_type": r.get("entitytype"),
            "event": r.get("event"),
            "arguments": r.get("arguments"),
            "since": r.get("activesince"),
            "identifier": r.get("identifier"),
            "hidden": (r.get("ishidden") or "").lower() == "yes",
            "message": r.get("message"),
            "type": r.get("eventtype"),
            "severity": (r.get("severity") or "").upper() or None,
        }
        for r in sec.get("Event", [])
    ]
    summary = []
    for r in sec.get("Summary", []):
        row: Dict[str, Any] = {"component": r.get("component"), "entity": r.get("entityname")}
        for key in _CLUSTER_HEAD[1:]:
            row[key] = _opt_int(r.get(key))
        summary.append(row)
    if not states and not events and not summary:
        raise ParseError("no State, Event or Summary rows", "mmhealth_Y", source)
    return {"states": states, "events": events, "summary": summary}


def _cluster_table(text: Any, source: Optional[str], errors: Optional[list]) -> Dict[str, Any]:
    """``mmhealth cluster show`` (no ``-Y``): a ``Component Total Failed Degraded Healthy Other`` table."""
    parser = "mmhealth_cluster"
    lines = _lines(text, parser, source)
    rec = Records(parser, source, DOMAIN, errors)
    start = len(rec.errors)
    summary: List[Dict[str, Any]] = []
    header = False
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or rec.too_long(raw, no) or is_prompt(line) or set(line) <= set("-= "):
            continue
        with rec.at(no):
            cols = line.split()
            if tuple(c.lower() for c in cols) == _CLUSTER_HEAD:
                header = True
                continue
            if not header:
                raise ParseError(
                    "not mmhealth output: mmhealth node show -Y, mmhealth cluster show -Y and the cluster table "
                    "(Component Total Failed Degraded Healthy Other) are read",
                    line=no,
                )
            if len(cols) != 6:
                raise ParseError("not an mmhealth cluster row: %r" % line[:80], line=no)
            row: Dict[str, Any] = {"component": cols[0], "entity": None}
            for key, val in zip(_CLUSTER_HEAD[1:], cols[1:]):
                row[key] = parse_int(val)
            summary.append(row)
    if not summary and len(rec.errors) == start:
        raise ParseError("no mmhealth rows", parser, source)
    return rec.finish({"states": [], "events": [], "summary": summary})


def parse_mmlsdisk(text: str, source: Optional[str] = None, errors: Optional[list] = None) -> List[Dict[str, Any]]:
    """``mmlsdisk <fs> -Y``: ``[{name, status, availability, pool, metadata, data, size_kb, failure_group}]``."""
    sec = parse_mm_y(text, "mmlsdisk", source, errors, {"": ("nsdName", "status", "availability")})
    disks = []
    for r in sec.get("", []):
        disks.append(
            {
                "name": r.get("nsdName"),
                "status": r.get("status"),
                "availability": r.get("availability"),
                "pool": r.get("storagePool"),
                "metadata": r.get("metadata") == "yes",
                "data": r.get("data") == "yes",
                "failure_group": r.get("failureGroup"),
                "size_kb": _opt_int(r.get("diskSizeKB")),
            }
        )
    if not disks and not sec:  # no row at all: fine only when mmlsdisk said why (a tool_error entry)
        if errors is None or not any(e.get("kind") == "tool_error" and e.get("source") == source for e in errors):
            raise ParseError("no disk rows", "mmlsdisk_Y", source)
    return disks


def _opt_int(value: Optional[str]) -> Optional[int]:
    """An optional number: None when absent or not a number (it is not what the row is read for)."""
    if value is None or not re.fullmatch(r"[0-9]{1,30}", value.strip()):
        return None
    return int(value.strip())


def parse_mmdf(text: str, source: Optional[str] = None, errors: Optional[list] = None) -> Dict[str, Any]:
    """``mmdf <fs> -Y``: ``{size_kb, free_kb, used_pct, inodes: {used, free, allocated, max, used_pct},
    nsds: [{name, pool, size_kb, free_kb, used_pct}]}``; inode use is against ``maxInodes``."""
    sec = parse_mm_y(
        text,
        "mmdf",
        source,
        errors,
        {
            "fsTotal": ("fsSize#", "freeBlocks#"),
            "nsd": ("nsdName", "diskSize#", "freeBlocks#"),
            "inode": ("usedInodes#", "freeInodes#", "allocatedInodes#", "maxInodes#"),
        },
    )
    tot = sec.get("fsTotal") or []
    if not tot and not sec.get("nsd"):
        raise ParseError("no fsTotal or nsd row (truncated or garbled?)", "mmdf_Y", source)
    return _mmdf_values(sec, tot[0] if tot else None)


def _mmdf_values(sec: Dict[str, List[Dict[str, str]]], tot: Optional[Dict[str, str]]) -> Dict[str, Any]:
    """The numbers (every field was checked by parse_mm_y); no fsTotal row: the filesystem's use is unknown."""
    out: Dict[str, Any] = {"size_kb": None, "free_kb": None, "used_pct": None, "inodes": None, "nsds": []}
    if tot is not None:
        size, free = parse_int(tot["fsSize"]), parse_int(tot["freeBlocks"])
        out.update(size_kb=size, free_kb=free, used_pct=_used_pct(size - free, size))
    ino = sec.get("inode") or []
    if ino:
        used, mx = parse_int(ino[0]["usedInodes"]), parse_int(ino[0]["maxInodes"])
        out["inodes"] = {
            "used": used,
            "free": parse_int(ino[0]["freeInodes"]),
            "allocated": parse_int(ino[0]["allocatedInodes"]),
            "max": mx,
            "used_pct": _used_pct(used, mx),
        }
    for r in sec.get("nsd", []):
        dsize, dfree = parse_int(r["diskSize"]), parse_int(r["freeBlocks"])
        out["nsds"].append(
            {
                "name": r.get("nsdName"),
                "pool": r.get("storagePool"),
                "size_kb": dsize,
                "free_kb": dfree,
                "used_pct": _used_pct(dsize - dfree, dsize),
            }
        )
    return out


def _used_pct(used: int, total: int) -> Optional[float]:
    return round(100.0 * used / total, 1) if total > 0 else None
