# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers of the parallel-storage outputs (docs/storage.md): Lustre, IBM Storage Scale (GPFS) and NFS.

Lustre: ``lfs df`` (1K-blocks), ``lfs df -h`` (bytes, human), ``lfs df -i`` / ``-ih`` (inodes), ``lfs check
servers``, ``lctl get_param health_check``, ``lctl dl [-t]`` (device states). Storage Scale: the ``-Y``
(colon, ``HEADER``-described) output of ``mmhealth node show``, ``mmlsdisk`` and ``mmdf``. NFS: ``nfsstat -m``
and the options of NFS entries of ``/proc/mounts`` (``_node_parse.parse_mounts``).

Every parser raises the collection's ``ParseError`` on input it cannot read (empty, no header, a truncated
or garbled record); given an ``errors`` list, a malformed record costs that record only (``Records``).

Runs on managed nodes (Python 3.8+) and on the controller. Stdlib only, no Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional
from urllib.parse import unquote

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    parse_int,
)

DOMAIN = "storage"

#: ``lfs df -h`` unit suffixes (lfs prints powers of 1024 with one decimal).
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5, "E": 1024**6}
_HUMAN = re.compile(r"^([0-9]{1,20}(?:\.[0-9]{1,6})?)([KMGTPE]?)$")
_PCT = re.compile(r"^([0-9]{1,3})%$")
#: ``<uuid> <total> <used> <avail> <pct>% <mount>[MDT:0]``
_LFS_ROW = re.compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(/\S*?)(?:\[(MDT|OST):([0-9]{1,6})\])?\s*(?:\*+)?$")
_LFS_SUMMARY = re.compile(r"^filesystem[_ ]summary:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(/\S*?)(?:\[[^\]]*\])?\s*$")
_LFS_INACTIVE = re.compile(r"^(\S+)\s*:\s*inactive device\s*$")
_TARGET_NAME = re.compile(r"^(?:(?P<fs>[A-Za-z0-9_.]{1,32})-)?(?P<kind>MDT|OST)(?P<idx>[0-9a-fA-F]{4,8})(?:[-_].*)?$")


def _lines(text: Any, parser: str, source: Optional[str]) -> List[str]:
    if not isinstance(text, str):
        raise ParseError("input is not text", parser, source)
    lines = text.splitlines()
    if not any(line.strip() for line in lines):
        raise ParseError("empty output", parser, source)
    return lines


def _size(token: str, human: bool) -> int:
    """A ``lfs df`` number: a count (1K-blocks are multiplied by the caller) or a human size (``388.9G``)."""
    m = _HUMAN.match(token)
    if not m or (m.group(2) and not human):
        raise ParseError("not a size: %r" % token[:40])
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def _pct(token: str) -> int:
    m = _PCT.match(token)
    if not m:
        raise ParseError("not a percentage: %r" % token[:40])
    return int(m.group(1))


def target_name(uuid: str) -> Dict[str, Optional[str]]:
    """``myth-OST0001_UUID`` / ``snx11168-OST00d8-osc-ffff..`` -> ``{fs, kind, name}`` (name ``myth-OST0001``)."""
    base = uuid[:-5] if uuid.endswith("_UUID") else uuid
    m = _TARGET_NAME.match(base)
    if not m:
        return {"fs": None, "kind": None, "name": base}
    fs = m.group("fs")
    name = "%s%s" % (m.group("kind"), m.group("idx"))
    return {"fs": fs, "kind": m.group("kind"), "name": "%s-%s" % (fs, name) if fs else name}


def _df_mode(header: str) -> str:
    cols = header.split()
    if len(cols) < 2:
        raise ParseError("not an lfs df header: %r" % header[:80])
    second = cols[1].lower()
    if second == "inodes":
        return "inodes"
    if second == "bytes":
        return "bytes"
    if second in ("1k-blocks", "1k-blocks:"):
        return "kib"
    raise ParseError("unknown lfs df column %r (expected 1K-blocks, bytes or Inodes)" % cols[1][:40])


def _df_values(m: Any, mode: str) -> Dict[str, Any]:
    human = mode != "kib"
    scale = 1024 if mode == "kib" else 1
    total, used, avail = (_size(m.group(i), human) * scale for i in (2, 3, 4))
    return {"total": total, "used": used, "avail": avail, "used_pct": _pct(m.group(5))}


def parse_lfs_df(text: str, source: Optional[str] = None, errors: Optional[list] = None) -> List[Dict[str, Any]]:
    """``lfs df`` / ``lfs df -h`` / ``lfs df -i`` (several filesystems, each with a header and a summary).

    Returns ``[{name, mount, mode ("kib"|"bytes"|"inodes"), targets: [{name, uuid, kind, index, total, used,
    avail, used_pct, state}], summary: {total, used, avail, used_pct} | None}]``. Sizes are bytes (``kib``
    and ``bytes`` modes) or inode counts (``inodes`` mode); ``used_pct`` is the percentage lfs printed.
    A target lfs lists as ``inactive device`` has state ``inactive`` and no numbers.
    """
    parser = "lfs_df"
    lines = _lines(text, parser, source)
    rec = Records(parser, source, DOMAIN, errors)
    out: List[Dict[str, Any]] = []
    cur: Optional[Dict[str, Any]] = None
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or rec.too_long(raw, no):
            continue
        with rec.at(no):
            if line.startswith("UUID"):
                cur = {"name": None, "mount": None, "mode": _df_mode(line), "targets": [], "summary": None}
                out.append(cur)
                continue
            if cur is None:
                raise ParseError("record before the UUID header: %r" % line[:80], line=no)
            _df_line(cur, line, no)
    if not out:
        raise ParseError("no lfs df header (UUID ...) in the output", parser, source)
    for fs in out:
        if not fs["name"] and fs["mount"]:  # old target names (mds-lustre-0_UUID): the mount names it
            fs["name"] = fs["mount"].rstrip("/").rsplit("/", 1)[-1] or fs["mount"]
        if fs["summary"] is None:
            rec.add("filesystem %s: no filesystem summary line (truncated output?)" % (fs["name"] or fs["mount"]))
    return rec.finish(out)


def _df_line(cur: Dict[str, Any], line: str, no: int) -> None:
    m = _LFS_SUMMARY.match(line)
    if m:
        if cur["summary"] is not None:
            raise ParseError("second summary for one filesystem", line=no)
        vals = _df_values(_Shift(m), cur["mode"])
        cur["summary"] = vals
        cur["mount"] = cur["mount"] or m.group(5)
        return
    if cur["summary"] is not None:
        raise ParseError("target after the filesystem summary without a new header: %r" % line[:80], line=no)
    m = _LFS_INACTIVE.match(line)
    if m:
        tn = target_name(m.group(1))
        cur["name"] = cur["name"] or tn["fs"]
        cur["targets"].append(
            dict(tn, uuid=m.group(1), index=None, state="inactive", total=None, used=None, avail=None, used_pct=None)
        )
        return
    m = _LFS_ROW.match(line)
    if not m or not m.group(7):
        raise ParseError("not an lfs df target row: %r" % line[:80], line=no)
    tn = target_name(m.group(1))
    rec = dict(tn, uuid=m.group(1), index=parse_int(m.group(8)), state="active")
    rec["kind"] = m.group(7)
    rec.update(_df_values(m, cur["mode"]))
    cur["targets"].append(rec)
    cur["mount"] = cur["mount"] or m.group(6)
    cur["name"] = cur["name"] or tn["fs"]


class _Shift:
    """The summary match seen with the groups of a target row (``group(i)`` -> ``group(i - 1)``)."""

    def __init__(self, m: Any) -> None:
        self.m = m

    def group(self, i: int) -> str:
        return self.m.group(i - 1)


_CHECK_OK = re.compile(r"^(\S+)\s+active\.\s*$")
_CHECK_ERR = re.compile(r"^(?:[^:']{0,40}:\s+)?error:\s+check\s+'?([^':\s]+)'?:\s*(.*?)\s*$")


def parse_lfs_check(text: str, source: Optional[str] = None, errors: Optional[list] = None) -> List[Dict[str, Any]]:
    """``lfs check servers`` (stdout and stderr together): ``[{name, fs, kind, target, state, error}]``.

    ``<obd> active.`` -> ``active``; ``lfs check: error: check '<obd>': <strerror> (<errno>)`` -> ``error``
    (the format of liblustreapi's target check). ``kind`` is MDT/OST/MGC/...; ``target`` the target name.
    """
    parser = "lfs_check"
    lines = _lines(text, parser, source)
    rec = Records(parser, source, DOMAIN, errors)
    out: List[Dict[str, Any]] = []
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or rec.too_long(raw, no):
            continue
        with rec.at(no):
            m = _CHECK_OK.match(line)
            state, err = "active", None
            if not m:
                m = _CHECK_ERR.match(line)
                state, err = "error", (m.group(2) if m else None)
            if not m:
                raise ParseError("not an lfs check line: %r" % line[:80], line=no)
            obd = m.group(1)
            tn = target_name(obd)
            kind = tn["kind"] or ("MGC" if obd.startswith("MGC") else None)
            out.append({"name": obd, "fs": tn["fs"], "kind": kind, "target": tn["name"], "state": state, "error": err})
    if not out:
        raise ParseError("no server lines", parser, source)
    return rec.finish(out)


_UNHEALTHY_DEV = re.compile(r"^device\s+(\S+)\s+reported unhealthy\s*$")


def parse_health_check(text: str, source: Optional[str] = None) -> Dict[str, Any]:
    """``lctl get_param health_check`` (or the bare file): ``{healthy, devices: [unhealthy names], lbug}``.

    Lustre prints ``healthy``, or one ``device <name> reported unhealthy`` line per sick device, then
    ``NOT HEALTHY`` (and ``LBUG`` after a kernel assertion). Anything else is a ParseError.
    """
    parser = "health_check"
    lines = _lines(text, parser, source)
    state: Optional[bool] = None
    devices: List[str] = []
    lbug = False
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if line.startswith("health_check="):
            line = line.split("=", 1)[1].strip()
        if not line:
            continue
        low = line.lower()
        m = _UNHEALTHY_DEV.match(line)
        if m:
            devices.append(m.group(1))
        elif low == "healthy":
            state = True if state is None else state
        elif low in ("not healthy", "not_healthy", "unhealthy"):
            state = False
        elif low == "lbug":
            lbug, state = True, False
        else:
            raise ParseError("unexpected health_check line: %r" % line[:80], parser, source, no)
    if state is None and not devices:
        raise ParseError("no health state in the output", parser, source)
    return {"healthy": bool(state) and not devices and not lbug, "devices": devices, "lbug": lbug}


_DL_ROW = re.compile(r"^\s*([0-9]{1,6})\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+([0-9]{1,9})(?:\s+(\S+))?\s*$")


def parse_lctl_dl(text: str, source: Optional[str] = None, errors: Optional[list] = None) -> List[Dict[str, Any]]:
    """``lctl dl`` / ``lctl dl -t``: ``[{index, status, type, name, uuid, refs, nid, target, kind, fs}]``.

    ``status`` is ``UP`` for a set-up device; anything else (``ST`` stopping, ``AT`` attached only, ``IN``
    inactive) is not serving.
    """
    parser = "lctl_dl"
    lines = _lines(text, parser, source)
    rec = Records(parser, source, DOMAIN, errors)
    out: List[Dict[str, Any]] = []
    for no, raw in enumerate(lines, 1):
        if not raw.strip() or rec.too_long(raw, no):
            continue
        with rec.at(no):
            m = _DL_ROW.match(raw)
            if not m:
                raise ParseError("not an lctl dl row: %r" % raw.strip()[:80], line=no)
            tn = target_name(m.group(4))
            out.append(
                {
                    "index": parse_int(m.group(1)),
                    "status": m.group(2),
                    "type": m.group(3),
                    "name": m.group(4),
                    "uuid": m.group(5),
                    "refs": parse_int(m.group(6)),
                    "nid": m.group(7),
                    "target": tn["name"] if tn["kind"] else None,
                    "kind": tn["kind"],
                    "fs": tn["fs"],
                }
            )
    if not out:
        raise ParseError("no devices", parser, source)
    return rec.finish(out)


# ---------------------------------------------------------------------------------------------------------------
# IBM Storage Scale (GPFS): the -Y format
# ---------------------------------------------------------------------------------------------------------------


def parse_mm_y(
    text: str, command: str, source: Optional[str] = None, errors: Optional[list] = None
) -> Dict[str, List[Dict[str, str]]]:
    """The ``-Y`` output of an ``mm*`` command: ``{section: [row dict]}``.

    Each ``<command>:<section>:HEADER:<field>:...`` line names the fields of the data lines of that section
    that follow (``<command>:<section>:0:1:...``). Values are percent-decoded (``%3A`` is ``:``, mmclidecode).
    A data line without a header, or with fewer fields than its header, is a malformed record.
    """
    parser = "%s_Y" % command
    lines = _lines(text, parser, source)
    rec = Records(parser, source, DOMAIN, errors)
    headers: Dict[str, List[str]] = {}
    out: Dict[str, List[Dict[str, str]]] = {}
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or rec.too_long(raw, no):
            continue
        with rec.at(no):
            parts = line.split(":")
            if parts[0] != command or len(parts) < 4:
                raise ParseError("not a %s -Y line: %r" % (command, line[:80]), line=no)
            section = parts[1]
            if parts[2] == "HEADER":
                headers[section] = parts[3:]
                continue
            fields = headers.get(section)
            if fields is None:
                raise ParseError("%s row before its HEADER line" % (section or "data"), line=no)
            values = parts[3:]
            want = len([f for f in fields if f])
            if len(values) < want:
                raise ParseError(
                    "%s row has %d fields, its header %d (truncated?)" % (section, len(values), want), line=no
                )
            out.setdefault(section, []).append({f: unquote(v) for f, v in zip(fields, values) if f})
    if not headers:
        raise ParseError("no HEADER line: not %s -Y output" % command, parser, source)
    return rec.finish(out)


def parse_mmhealth(text: str, source: Optional[str] = None, errors: Optional[list] = None) -> Dict[str, Any]:
    """``mmhealth node show -Y``: ``{states: [{node, component, entity, entity_type, status, since}],
    events: [{node, component, entity, event, arguments, since, identifier, message, severity}]}``."""
    sec = parse_mm_y(text, "mmhealth", source, errors)
    states = [
        {
            "node": r.get("node"),
            "component": r.get("component"),
            "entity": r.get("entityname"),
            "entity_type": r.get("entitytype"),
            "status": (r.get("status") or "").upper() or None,
            "since": r.get("laststatuschange"),
        }
        for r in sec.get("State", [])
    ]
    events = []
    for r in sec.get("Event", []):
        events.append(
            {
                "node": r.get("node"),
                "component": r.get("component"),
                "entity": r.get("entityname"),
                "event": r.get("event"),
                "arguments": r.get("arguments"),
                "since": r.get("activesince"),
                "identifier": r.get("identifier"),
                "hidden": r.get("ishidden") == "yes",
            }
        )
    if not states and not events:
        raise ParseError("no State or Event rows", "mmhealth_Y", source)
    return {"states": states, "events": events}


def parse_mmlsdisk(text: str, source: Optional[str] = None, errors: Optional[list] = None) -> List[Dict[str, Any]]:
    """``mmlsdisk <fs> -Y``: ``[{name, status, availability, pool, metadata, data, size_kb, failure_group}]``."""
    sec = parse_mm_y(text, "mmlsdisk", source, errors)
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
    if not disks:
        raise ParseError("no disk rows", "mmlsdisk_Y", source)
    return disks


def _opt_int(value: Optional[str]) -> Optional[int]:
    if value is None or not value.strip():
        return None
    return parse_int(value)


def parse_mmdf(text: str, source: Optional[str] = None, errors: Optional[list] = None) -> Dict[str, Any]:
    """``mmdf <fs> -Y``: ``{size_kb, free_kb, used_pct, inodes: {used, free, allocated, max, used_pct},
    nsds: [{name, pool, size_kb, free_kb, used_pct}]}``; inode use is against ``maxInodes``."""
    sec = parse_mm_y(text, "mmdf", source, errors)
    tot = sec.get("fsTotal") or []
    if not tot or "fsSize" not in tot[0]:
        raise ParseError("no fsTotal row with fsSize (truncated or garbled?)", "mmdf_Y", source)
    try:
        return _mmdf_values(sec, tot[0])
    except KeyError as exc:
        raise ParseError("mmdf -Y row without the field %s" % exc, "mmdf_Y", source) from None


def _mmdf_values(sec: Dict[str, List[Dict[str, str]]], tot: Dict[str, str]) -> Dict[str, Any]:
    size, free = parse_int(tot["fsSize"]), parse_int(tot["freeBlocks"])
    out: Dict[str, Any] = {
        "size_kb": size,
        "free_kb": free,
        "used_pct": _used_pct(size - free, size),
        "inodes": None,
        "nsds": [],
    }
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


# ---------------------------------------------------------------------------------------------------------------
# NFS
# ---------------------------------------------------------------------------------------------------------------

_NFSSTAT_FROM = re.compile(r"^(/\S*) from (\S+?):(/\S*)\s*$")


def parse_nfsstat_m(text: str, source: Optional[str] = None, errors: Optional[list] = None) -> List[Dict[str, Any]]:
    """``nfsstat -m``: ``[{mount, server, export, options: {name: value | True}}]``.

    ``<mount> from <server>:<export>`` starts a record; its `` Flags:`` line (possibly wrapped over several
    indented lines) holds the mount options.
    """
    parser = "nfsstat_m"
    lines = _lines(text, parser, source)
    rec = Records(parser, source, DOMAIN, errors)
    out: List[Dict[str, Any]] = []
    cur: Optional[Dict[str, Any]] = None
    flags: List[str] = []

    def close() -> None:
        if cur is not None:
            if not flags:
                rec.add("mount %s: no Flags line (truncated?)" % cur["mount"])
            cur["options"] = parse_options(",".join(flags))

    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or rec.too_long(raw, no):
            continue
        with rec.at(no):
            m = _NFSSTAT_FROM.match(line)
            if m:
                close()
                cur, flags = {"mount": m.group(1), "server": m.group(2), "export": m.group(3), "options": {}}, []
                out.append(cur)
            elif cur is not None and line.startswith("Flags:"):
                flags = [line.split(":", 1)[1].strip().rstrip(",")]
            elif cur is not None and flags and raw[:1].isspace():
                flags.append(line.rstrip(","))
            else:
                raise ParseError("not an nfsstat -m line: %r" % line[:80], line=no)
    close()
    if not out:
        raise ParseError("no NFS mounts in the output", parser, source)
    return rec.finish(out)


def parse_options(text: str) -> Dict[str, Any]:
    """``rw,relatime,vers=4.2,hard`` -> ``{"rw": True, "relatime": True, "vers": "4.2", "hard": True}``."""
    out: Dict[str, Any] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        out[key] = value if sep else True
    return out


def parse_nfsstat_rpc(text: str, source: Optional[str] = None) -> Dict[str, int]:
    """``nfsstat -c`` / ``nfsstat -rc``: the ``Client rpc stats:`` counters ``{calls, retrans, authrefrsh}``
    (cumulative since boot). The per-operation tables that follow are not read. No such section: ParseError."""
    parser = "nfsstat_rpc"
    lines = [line.strip() for line in _lines(text, parser, source)]
    for no, line in enumerate(lines):
        if line != "Client rpc stats:":
            continue
        head = lines[no + 1].split() if no + 1 < len(lines) else []
        vals = lines[no + 2].split() if no + 2 < len(lines) else []
        if head[:2] != ["calls", "retrans"] or len(vals) != len(head):
            raise ParseError("Client rpc stats: header and values do not match (truncated?)", parser, source, no + 2)
        return {name: parse_int(val) for name, val in zip(head, vals)}
    raise ParseError("no 'Client rpc stats:' section", parser, source)
