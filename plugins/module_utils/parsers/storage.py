# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers of the Lustre and NFS client outputs (docs/storage.md, docs/capture.md "Storage files").

Lustre: ``lfs df`` (1K-blocks), ``-h``/``-H`` (bytes, human), ``-i``/``-ih`` (inodes), ``-v`` (state flags), with or
without a header (``-N``), both summary spellings, ``inactive device`` / strerror target lines and the targets a
listing leaves out; ``lfs check servers|osts|mdts|mgts|all`` (stdout and stderr); ``lctl get_param health_check``
(one or two entries, the old multi-line form, ``-n``); ``lctl dl [-t]``. NFS: ``nfsstat -m``, ``nfsstat -c``/``-rc``
and the options of NFS entries of ``/proc/mounts`` (``_node_parse.parse_mounts``). IBM Storage Scale (GPFS) ``-Y``
outputs are in ``storage_gpfs``. Formats and quirks: ../shared/reference/cluster-formats.md sections 5 and 7.

Every parser raises the collection's ``ParseError`` on input it cannot read at all (empty, nothing it knows);
given an ``errors`` list, a malformed line costs that line only (a ``parse`` entry, ``Records``) and what the tool
printed about itself (``lfs: cannot open ...``) is a ``tool_error`` entry. A shell prompt or the command line an
operator pasted with the output (``[root@c1 ~]# lfs df -h``) is skipped.

Runs on managed nodes (Python 3.8+) and on the controller. Stdlib only, no Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    error_record,
    parse_int,
)

DOMAIN = "storage"

#: ``lfs df -h`` unit suffixes: powers of 1024 (``-H``: lower-case ``k`` and powers of 1000, LU-man lfs-df.1).
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5, "E": 1024**6}
_UNITS.update({"Z": 1024**7, "Y": 1024**8, "k": 1000})
_HUMAN = re.compile(r"^([0-9]{1,20}(?:\.[0-9]{1,6})?)([KkMGTPEZY]?)$")
_PCT = re.compile(r"^([0-9]{1,3})%$")
#: ``<uuid> <total> <used> <avail> <pct>% <mount>[MDT:0] [flags]`` (flags with ``-v``: D N R S I f, or ``(0NN)``)
_LFS_ROW = re.compile(
    r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(/\S*?)(?:\[(MDT|OST):([0-9]{1,6})\])?(?:\s+(\S+))?\s*$"
)
_LFS_FLAGS = re.compile(r"^([DNRSIf]*)(?:\((0[0-7]{0,6})\))?$")
_LFS_SUMMARY = re.compile(r"^filesystem[_ ]summary:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(/\S*?)(?:\[[^\]]*\])?\s*$")
#: ``<uuid> : inactive device`` / ``<uuid>: Input/output error`` / ``<uuid> : Resource temporarily unavailable``
_LFS_TARGET_MSG = re.compile(r"^([^\s:]+)\s*:\s*(\S.*?)\s*$")
_TARGET_NAME = re.compile(r"^(?:(?P<fs>[A-Za-z0-9_.]{1,32})-)?(?P<kind>MDT|OST)(?P<idx>[0-9a-fA-F]{4,8})(?:[-_].*)?$")
#: A shell prompt and/or the command an operator pasted above the output (never an output line: see _TOOL_MSG).
_PROMPT = re.compile(
    r"^(?:(?:\[[^\]]{0,80}\]|[^\s$#%>]{0,80})\s?[$#%>]\s*)?(?:sudo\s+)?(?:\S{0,80}/)?"
    r"(?:lfs|lctl|mmhealth|mmlsdisk|mmdf|nfsstat)(?:\s+[^\s:]+)*\s*$"
)
#: What lfs/lctl print about themselves on stderr (``lfs: cannot open '/x': No such file or directory``).
_TOOL_MSG = re.compile(r"^(?:lfs|lctl)(?: [a-z_]{1,20})?: (?!error: check)(.+)$")
#: lfs df state flags (LU-man lfs-df.1, ``-v``).
LFS_FLAGS = {
    "D": "degraded",
    "N": "no_create",
    "R": "read_only",
    "S": "out_of_space",
    "I": "out_of_inodes",
    "f": "flash",
}
#: A listing that leaves out more targets than this is not read as "missing targets" (a garbled index).
MAX_MISSING = 32


def is_prompt(line: str) -> bool:
    """A shell prompt with a storage command (``$ lfs df -h``, ``[root@c1 ~]# mmhealth node show -Y``) or the bare
    command line: what an operator pastes above the output, not output."""
    return bool(_PROMPT.match(line.strip()))


def _lines(text: Any, parser: str, source: Optional[str]) -> List[str]:
    if not isinstance(text, str):
        raise ParseError("input is not text", parser, source)
    lines = text.splitlines()
    if not any(line.strip() for line in lines):
        raise ParseError("empty output", parser, source)
    return lines


def tool_message(rec: Records, message: str, line: int) -> None:
    """What the tool printed about itself: a ``tool_error`` entry (the evidence of that part is missing)."""
    rec.errors.append(error_record(rec.domain, "tool_error", message[:300], rec.source, rec.parser, line))


def _size(token: str, human: bool) -> int:
    """A ``lfs df`` number: a count (1K-blocks are multiplied by the caller) or a human size (``388.9G``)."""
    m = _HUMAN.match(token)
    if not m or (m.group(2) and not human):
        raise ParseError("not a size: %r" % token[:40])
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def _pct(token: str) -> int:
    m = _PCT.match(token)
    if not m or int(m.group(1)) > 100:
        raise ParseError("not a percentage: %r" % token[:40])
    return int(m.group(1))


def target_name(uuid: str) -> Dict[str, Optional[str]]:
    """``myth-OST0001_UUID`` / ``snx11168-OST00d8-osc-ffff..`` -> ``{fs, kind, name}`` (name ``myth-OST0001``).

    Without a filesystem (``OST000a``, lfs's placeholder when the UUID is unknown) the name is the target's."""
    base = uuid[:-5] if uuid.endswith("_UUID") else uuid
    m = _TARGET_NAME.match(base)
    if not m:
        return {"fs": None, "kind": None, "name": base}
    fs = m.group("fs")
    name = "%s%s" % (m.group("kind"), m.group("idx"))
    return {"fs": fs, "kind": m.group("kind"), "name": "%s-%s" % (fs, name) if fs else name}


def _hex_index(name: str) -> Optional[int]:
    """The index in a target name (``OST000a`` -> 10: lfs prints the name's index in hex, ``[OST:10]`` in decimal)."""
    m = re.search(r"(?:MDT|OST)([0-9a-fA-F]{4,8})$", name)
    return int(m.group(1), 16) if m else None


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
    raise ParseError(
        "unknown lfs df column %r (lfs df, -h, -H and -i are read: 1K-blocks, bytes or Inodes)" % cols[1][:40]
    )


def _df_values(groups: List[str], mode: str) -> Dict[str, Any]:
    """``[total, used, avail, pct]`` -> numbers; ``mode`` None (no header): human sizes are bytes, else 1K-blocks."""
    if mode is None:
        mode = "bytes" if any(g[-1:].isalpha() for g in groups[:3]) else "kib"
    human = mode != "kib"
    scale = 1024 if mode == "kib" else 1
    total, used, avail = (_size(g, human) * scale for g in groups[:3])
    return {"total": total, "used": used, "avail": avail, "used_pct": _pct(groups[3])}


def _new_fs(mode: Optional[str], header: bool) -> Dict[str, Any]:
    return {"name": None, "mount": None, "mode": mode, "header": header, "targets": [], "summary": None}


def parse_lfs_df(
    text: str, source: Optional[str] = None, errors: Optional[list] = None, mode: Optional[str] = None
) -> List[Dict[str, Any]]:
    """``lfs df`` / ``-h`` / ``-H`` / ``-i`` / ``-v`` (several filesystems, each with a header and a summary).

    Returns ``[{name, mount, mode ("kib"|"bytes"|"inodes"), targets: [{name, uuid, kind, index, total, used,
    avail, used_pct, state, flags, detail}], summary: {total, used, avail, used_pct} | None}]``. Sizes are bytes
    (``kib`` and ``bytes`` modes) or inode counts (``inodes``); ``used_pct`` is the percentage lfs printed.
    ``state``: ``active`` (a row with numbers), ``inactive`` (``inactive device``), ``unavailable`` (``Resource
    temporarily unavailable``, Lustre <= 2.9), ``error`` (another strerror, in ``detail``) or ``missing`` (an index
    the listing skips: since 2.10 deactivated targets are hidden unless ``-v``, and EAGAIN targets are skipped).
    ``flags``: the ``-v`` state letters as words (``degraded``, ``read_only``, ...; ``unknown:0NN`` for octal).
    ``mode``: what the caller knows a headerless (``-N``) listing to be (``inodes`` for ``lfs df -i -N``).
    """
    parser = "lfs_df"
    lines = _lines(text, parser, source)
    rec = Records(parser, source, DOMAIN, errors)
    start = len(rec.errors)  # the caller's list may hold other sources' entries
    out: List[Dict[str, Any]] = []
    cur: Optional[Dict[str, Any]] = None
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or rec.too_long(raw, no) or is_prompt(line):
            continue
        with rec.at(no):
            if line.startswith("UUID"):
                cur = _new_fs(_df_mode(line), True)
                out.append(cur)
                continue
            m = _TOOL_MSG.match(line)
            if m:
                tool_message(rec, "lfs df: %s" % line[:200], no)
                continue
            if cur is None or cur["summary"] is not None:  # no header (-N), or a second headerless filesystem
                cur = _new_fs(mode, False)
                out.append(cur)
            _df_line(cur, line, no)
    out = [fs for fs in out if fs["targets"] or fs["summary"]]
    if not out:
        if len(rec.errors) > start:  # only tool messages or bad lines: those entries say why
            return rec.finish(out)
        raise ParseError("no lfs df header (UUID ...) and no target rows in the output", parser, source)
    for fs in out:
        _close_fs(fs, rec)
    return rec.finish(out)


def _close_fs(fs: Dict[str, Any], rec: Records) -> None:
    if not fs["name"] and fs["mount"]:  # old target names (mds-lustre-0_UUID): the mount names it
        fs["name"] = fs["mount"].rstrip("/").rsplit("/", 1)[-1] or fs["mount"]
    if fs["mode"] is None:
        fs["mode"] = "kib"
    for t in fs["targets"]:
        if t["name"] and fs["name"] and "-" not in t["name"] and t["kind"]:  # OST000a: lfs's placeholder
            t["name"] = "%s-%s" % (fs["name"], t["name"])
    if fs["summary"] is None:
        rec.add("filesystem %s: no filesystem summary line (truncated output?)" % (fs["name"] or fs["mount"]))
    elif fs["header"]:
        _missing_targets(fs, rec)


def _missing_targets(fs: Dict[str, Any], rec: Records) -> None:
    """Indices a complete listing skips (0 .. highest): targets lfs did not print (hidden or skipped)."""
    for kind in ("MDT", "OST"):
        seen = {t["index"] for t in fs["targets"] if t["kind"] == kind and t["index"] is not None}
        if not seen:
            continue
        gaps = sorted(set(range(max(seen) + 1)) - seen)
        if len(gaps) > MAX_MISSING:
            rec.add("filesystem %s: %d %s indices missing (garbled index?)" % (fs["name"], len(gaps), kind))
            continue
        for idx in gaps:
            name = "%s%04x" % (kind, idx)
            fs["targets"].append(
                {
                    "name": "%s-%s" % (fs["name"], name) if fs["name"] else name,
                    "uuid": None,
                    "kind": kind,
                    "index": idx,
                    "state": "missing",
                    "flags": [],
                    "detail": "not listed by lfs df (deactivated targets are hidden unless -v since Lustre 2.10; "
                    "unreachable ones are skipped)",
                    "total": None,
                    "used": None,
                    "avail": None,
                    "used_pct": None,
                }
            )


def _flags(token: Optional[str]) -> List[str]:
    if not token:
        return []
    m = _LFS_FLAGS.match(token)
    if not m:
        raise ParseError("unknown lfs df state flags %r (D N R S I f, or (0NN))" % token[:20])
    out = [LFS_FLAGS[c] for c in m.group(1)]
    if m.group(2) is not None:
        out.append("unknown:%s" % m.group(2))
    return out


def _df_line(cur: Dict[str, Any], line: str, no: int) -> None:
    m = _LFS_SUMMARY.match(line)
    if m:
        cur["summary"] = _df_values([m.group(i) for i in range(1, 5)], cur["mode"])
        cur["mount"] = cur["mount"] or m.group(5)
        return
    m = _LFS_ROW.match(line)
    if m and m.group(7):
        tn = target_name(m.group(1))
        rec = dict(tn, uuid=m.group(1), index=parse_int(m.group(8)), state="active", detail=None)
        rec["kind"] = m.group(7)
        rec["flags"] = _flags(m.group(9))
        vals = _df_values([m.group(i) for i in range(2, 6)], cur["mode"])
        if cur["mode"] is None:
            cur["mode"] = "bytes" if any(m.group(i)[-1:].isalpha() for i in (2, 3, 4)) else "kib"
        rec.update(vals)
        cur["targets"].append(rec)
        cur["mount"] = cur["mount"] or m.group(6)
        cur["name"] = cur["name"] or tn["fs"]
        return
    m = _LFS_TARGET_MSG.match(line)
    tn = target_name(m.group(1)) if m else None
    if not m or not tn or not tn["kind"]:
        raise ParseError("not an lfs df target row: %r" % line[:80], line=no)
    msg = m.group(2)
    low = msg.lower()
    state = "inactive" if low == "inactive device" else ("unavailable" if "temporarily unavailable" in low else "error")
    cur["name"] = cur["name"] or tn["fs"]
    cur["targets"].append(
        dict(
            tn,
            uuid=m.group(1),
            index=_hex_index(tn["name"] or ""),
            state=state,
            flags=[],
            detail=msg[:200],
            total=None,
            used=None,
            avail=None,
            used_pct=None,
        )
    )


_CHECK_STATE = re.compile(r"^(\S+?):?\s+(active|inactive)\.?\s*$")
_CHECK_ERR = re.compile(r"^(?:[^:']{0,40}:\s+)?error:\s+check\s+'?([^':\s]+)'?:\s*(.*?)\s*$")


def parse_lfs_check(text: str, source: Optional[str] = None, errors: Optional[list] = None) -> List[Dict[str, Any]]:
    """``lfs check servers|osts|mdts|mgts|all`` (stdout and stderr together): ``[{name, fs, kind, target, state,
    error}]``.

    ``<obd> active.`` / ``<obd>: active`` (Lustre 2.7) -> ``active``; ``<obd> inactive.`` (ENOTCONN) ->
    ``inactive``; ``lfs check: error: check '<obd>': <strerror> (<errno>)`` -> ``error``. ``kind`` is MDT/OST/MGC;
    ``target`` the target name. ``lfs check: cannot find mounted Lustre filesystem`` is a ``tool_error`` entry.
    """
    parser = "lfs_check"
    lines = _lines(text, parser, source)
    rec = Records(parser, source, DOMAIN, errors)
    start = len(rec.errors)
    out: List[Dict[str, Any]] = []
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or rec.too_long(raw, no) or is_prompt(line):
            continue
        with rec.at(no):
            m = _CHECK_STATE.match(line)
            if m:
                state, err = m.group(2), None
            else:
                m = _CHECK_ERR.match(line)
                state, err = "error", (m.group(2) if m else None)
            if not m:
                if _TOOL_MSG.match(line):
                    tool_message(rec, line[:200], no)
                    continue
                raise ParseError("not an lfs check line: %r" % line[:80], line=no)
            obd = m.group(1)
            tn = target_name(obd)
            kind = tn["kind"] or ("MGC" if obd.startswith("MGC") else None)
            out.append({"name": obd, "fs": tn["fs"], "kind": kind, "target": tn["name"], "state": state, "error": err})
    if not out and len(rec.errors) == start:
        raise ParseError("no server lines", parser, source)
    return rec.finish(out)


_UNHEALTHY_DEV = re.compile(r"^(?:device\s+(\S+)\s+reported unhealthy|(\S+?):\s+device reported unhealthy)\s*$")
_HC_NAME = re.compile(r"^(?:[A-Za-z0-9_./-]{0,200}\.)?health_check=")


def parse_health_check(text: str, source: Optional[str] = None, errors: Optional[list] = None) -> Dict[str, Any]:
    """``lctl get_param health_check`` (``-n``, or the file): ``{healthy, devices: [unhealthy names], lbug,
    entries}``.

    Lustre prints ``healthy``, ``NOT HEALTHY`` or ``LBUG``; before 2.10 the offenders came first (``device <name>
    reported unhealthy``), since 2.16.59 on the console (``<dev>: device reported unhealthy``, also read). Until
    LU-14590 sysfs and debugfs both had the parameter, so one call can print two ``health_check=`` entries:
    ``entries`` counts them, and one unhealthy entry makes the result unhealthy. A line it does not know costs
    that line; no state at all is a ParseError.
    """
    parser = "health_check"
    lines = _lines(text, parser, source)
    rec = Records(parser, source, DOMAIN, errors)
    state: Optional[bool] = None
    devices: List[str] = []
    lbug = False
    entries = 0
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or rec.too_long(raw, no) or is_prompt(line):
            continue
        if _HC_NAME.match(line):
            entries += 1
            line = line.split("=", 1)[1].strip()
            if not line:
                continue
        with rec.at(no):
            low = line.lower()
            m = _UNHEALTHY_DEV.match(line)
            if m:
                devices.append(m.group(1) or m.group(2))
            elif low == "healthy":
                state = True if state is None else state
            elif low in ("not healthy", "not_healthy", "unhealthy"):
                state = False
            elif low == "lbug":
                lbug, state = True, False
            else:
                raise ParseError("unexpected health_check line: %r" % line[:80], line=no)
    if state is None and not devices:
        raise ParseError("no health state in the output", parser, source)
    out = {"healthy": bool(state) and not devices and not lbug, "devices": devices, "lbug": lbug, "entries": entries}
    return rec.finish(out)


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
        if not raw.strip() or rec.too_long(raw, no) or is_prompt(raw):
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
        if not line or rec.too_long(raw, no) or is_prompt(line):
            continue
        with rec.at(no):
            if line.startswith("Warning: "):  # nfsstat -m: an unreadable /proc/mounts (stderr)
                tool_message(rec, "nfsstat: %s" % line[:200], no)
                continue
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
