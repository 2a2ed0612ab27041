# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel log parser: one timestamp per line (ISO, ctime, syslog, monotonic) and the GPU, PCIe, NIC and memory
events of docs/facts.md (``kernel`` domain) - NVIDIA Xid and SXid, fallen off the bus, AER, mlx5 link and power,
MCE and EDAC. ``_kernel_events`` re-exports its public names and adds the collector.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    normalize_bus_id,
    parse_int,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._xid_catalog import recovery_action_name

PARSER = "kernel_log"
DOMAIN = "kernel"
KINDS = ("xid", "sxid", "fallen_off_bus", "gsp_timeout", "aer", "mlx5_link", "mlx5_power", "mce", "edac")

#: Keep at most this many events (the most recent); one incident can print hundreds of Xid 13 lines.
DEFAULT_MAX_EVENTS = 5000
#: ``raw`` is cut to this many characters.
MAX_RAW = 1000

# Month abbreviations: C locale plus the common journalctl locales (pl, de, fr, es, it, pt, nl, cs, sv).
_MONTHS: Dict[str, int] = {}
for _num, _names in enumerate(
    (
        "jan sty jän janv ene gen led januar januari",
        "feb lut fév févr fev úno unor februar februari",
        "mar mär mars marz bře brez",
        "apr kwi avr abr dub duben",
        "may maj mai mag kvě kve",
        "jun cze juin giu čvn cvn juni",
        "jul lip juil lug čvc cvc juli",
        "aug sie août ago srp augusti",
        "sep wrz sept set zář zar",
        "oct paź paz okt ott out říj rij",
        "nov lis",
        "dec gru dez déc dic dic pro",
    ),
    start=1,
):
    for _n in _names.split():
        _MONTHS[_n] = _num

_FACILITY = re.compile(
    r"^\s*(?:kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|local[0-7])\s*:\s*"
    r"(?:emerg|alert|crit|err|warn|notice|info|debug)\s*:\s?"
)
_ISO = re.compile(
    r"^\s*(?:[^\W\d_]{2,4}\.?\s+)?([0-9]{4})-([0-9]{2})-([0-9]{2})[T ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:[.,]([0-9]{1,9}))?"
    r"\s?(Z|UTC|GMT|[+-][0-9]{2}:?[0-9]{2})?(?=\s|$)"
)
_CTIME = re.compile(
    r"^\s*\[\s*(?:[^\W\d_]{2,4}\.?\s+)?([^\W\d_]{3,5})\.?\s+([0-9]{1,2})\s+([0-9]{2}):([0-9]{2}):([0-9]{2})\s+([0-9]{4})\s*\]"
)
_MONO = re.compile(r"^\s*\[\s*([0-9]+\.[0-9]+)\s*\]")
_SYSLOG = re.compile(
    r"^\s*([^\W\d_]{3,5})\.?\s+([0-9]{1,2})\s+([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?(?=\s)"
)

_XID = re.compile(r"NVRM: Xid \(\s*(?:PCI:)?([^)]*)\)[^:]*:\s*([0-9]+)\s*(?:,\s*(.*))?$")
_SXID = re.compile(r"SXid \(\s*(?:PCI:)?([^)]*)\)[^:]*:\s*([0-9]+)\s*(?:,\s*(.*))?$")
_PID_NAME = re.compile(r"^pid\s*=\s*('?<?[^,>']*>?'?)\s*,\s*name\s*=\s*(.*?)(?:,\s*(.*))?$")
_CAUSED = re.compile(r"(?:caused by|due to) (?:an? )?previous Xid(?:\(s\)|s)?\s*:?\s*([0-9]+)", re.IGNORECASE)
_RECOVERY = re.compile(
    r"recovery action changed from\s+(?:(0x[0-9a-fA-F]+|[0-9]+)\s*)?(?:\(([^)]*)\))?\s*to\s+"
    r"(?:(0x[0-9a-fA-F]+|[0-9]+)\s*)?(?:\(([^)]*)\))?",
    re.IGNORECASE,
)
#: An Xid 154 line cut before its new action ends ("... to", "... to 0x1 (GPU Reset"); what may follow it.
_RECOVERY_OPEN = re.compile(r"recovery action changed from\b.*\bto(?:\s+(?:0x[0-9a-fA-F]+|[0-9]+))?(?:\s*\([^)]*)?\s*$",
                            re.IGNORECASE)  # fmt: skip
_RECOVERY_TAIL = re.compile(r"^(?:0x[0-9a-fA-F]+|[0-9]+)?\s*\(?[A-Za-z0-9 ]*\)?\.?$")
_CONTINUATION = re.compile(r"^\s*(?:\S+\s+)?kernel:\s*|^\s*")
#: GSP heartbeat / RPC timeouts printed without an Xid line (open-gpu-kernel-modules #1125, #1230): the GPU is
#: ``GPU<n>`` (the driver's instance). ``_kgspLogXid119`` banners belong to the Xid 119 line they frame.
_GSP = re.compile(
    r"NVRM: (?:GPU(\d+) )?(?:_kgspIsHeartbeatTimedOut: Heartbeat timed out|_kgspRpcRecvPoll: GSP RM heartbeat timed out"
    r"|_kgspLogRpcTimeout: \*+ GSP Timeout \*+|.*?Timeout after \d+s of waiting for RPC response from GPU(\d+) GSP)"
)
_SEVERITY_WORD = re.compile(r"\b(Non-?fatal|Fatal)\b", re.IGNORECASE)
_FALLEN = re.compile(r"fallen off the bus", re.IGNORECASE)
_FALLEN_ADDR = (
    re.compile(r"NVRM: GPU at (?:PCI:)?([0-9A-Fa-f:.]+)\s+has fallen off the bus"),
    re.compile(r"NVRM: GPU (?:at )?(?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-9])?):"),
    re.compile(r"NVRM: The NVIDIA GPU (?:at PCI:)?([0-9A-Fa-f:.]+)"),
)
_THE_NVIDIA_GPU = re.compile(r"NVRM: The NVIDIA GPU (?:at PCI:)?([0-9A-Fa-f:.]+)")
_AER_RECEIVED = re.compile(
    r"AER: (?:Multiple )?(Corrected|Correctable|Uncorrected|Uncorrectable)(?: \((Non-Fatal|Fatal)\))? error"
    r"(?: message)? received(?: from)?:?\s*(?:id=([0-9a-fA-F]{4})|(\S+))",
    re.IGNORECASE,
)
_AER_BUS_ERROR = re.compile(
    r"(?:^|\s)(?:\S+ )?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]):\s+(?:AER: )?PCIe Bus Error:\s*"
    r"severity=([A-Za-z]+(?: \((?:Non-Fatal|Fatal)\))?)(?:,\s*type=([^,]+))?",
)
#: ``<driver> <BDF>: [AER: ]`` before the AER text: who printed the line (``pcieport`` = a PCIe port/bridge)
_AER_WHO = re.compile(r"(\S+) ([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]):\s*(?:AER:\s*)?$")
_MLX5_LINK = re.compile(
    r"mlx5_core ([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])(?: (\S+?))?:\s+Link (up|down)\b"
)
_MLX5_POWER = re.compile(
    r"mlx5_core ([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]).*?insufficient power on the PCIe slot"
    r"(?:\s*\(([0-9]+)W\))?",
    re.IGNORECASE,
)
_MCE_BANK = re.compile(
    r"mce: \[Hardware Error\]: CPU ([0-9]+): Machine Check(?: Exception)?:\s*([0-9]+) Bank ([0-9]+):\s*([0-9a-fA-F]+)"
)
_MCE_LOGGED = re.compile(r"mce: \[Hardware Error\]: Machine check events logged")
_MCE_OTHER = re.compile(
    r"(mce: Uncorrected hardware memory error|Memory failure: 0x[0-9a-fA-F]+|Kernel panic - not syncing: "
    r"Fatal machine check|\[Hardware Error\]: event severity: (corrected|recoverable|fatal))",
    re.IGNORECASE,
)
_EDAC = re.compile(r"EDAC (?:\S+ )?MC([0-9]+): (?:([0-9]+) )?(CE|UE)\b\s*(.*)$")

#: Cheap pre-filter: a line without any of these cannot be an event.
_INTERESTING = re.compile(
    r"Xid|NVRM|AER|PCIe Bus Error|mlx5_core|carrier|mce:|EDAC|Hardware Error|Memory failure|machine check"
)
_ALIGN_SPACES = re.compile(r",\s{2,}")
_QUOTES = "\"'`"
_SXID_DETAIL = re.compile(r"^(Severity\s+([0-9]+)|Data\s*\{)")
_CARRIER = re.compile(r"(?:^|\s)([A-Za-z][\w.-]*): (Lost|Gained) carrier\b")


def _clip(s: str) -> str:
    return s if len(s) <= MAX_RAW else s[:MAX_RAW] + "..."


def _tz(text: Optional[str]) -> str:
    if not text:
        return ""
    if text in ("Z", "UTC", "GMT"):
        return "+00:00"
    t = text.replace(":", "")
    return "%s:%s" % (t[:3], t[3:5])


def _valid(year: int, month: int, day: int, hh: int, mm: int, ss: int) -> bool:
    try:
        datetime.datetime(year, month, day, hh, mm, min(ss, 59))
    except ValueError:
        return False
    return True


def _fmt(fields: Tuple[int, int, int, int, int, int], frac: str = "", tz: str = "") -> str:
    """``(year, month, day, hh, mm, ss)`` and the fraction and offset as the ISO time of a kernel event."""
    s = "%04d-%02d-%02dT%02d:%02d:%02d" % fields
    if frac:
        s += "." + (frac + "000000")[:6]
    return s + tz


def split_time(line: str, ref: Optional[datetime.datetime] = None) -> Tuple[Optional[str], str]:
    """Return ``(iso_timestamp_or_None, rest_of_line)`` for one kernel log line.

    ``ref`` is the time the log was read (for syslog lines without a year): the year is the one that
    puts the line at or before ``ref`` (plus a day of clock skew).
    """
    rest = line
    m = _FACILITY.match(rest)
    if m:
        rest = rest[m.end() :]
    m = _ISO.match(rest)
    if m:
        y, mo, d, hh, mi, ss = (parse_int(g) for g in m.groups()[:6])
        if _valid(y, mo, d, hh, mi, ss):
            return _fmt((y, mo, d, hh, mi, ss), m.group(7) or "", _tz(m.group(8))), rest[m.end() :]
        return None, rest[m.end() :]
    m = _CTIME.match(rest)
    if m:
        month = _MONTHS.get(m.group(1).lower())
        day, hh, mi, ss, y = (parse_int(g) for g in m.groups()[1:])
        if month and _valid(y, month, day, hh, mi, ss):
            return _fmt((y, month, day, hh, mi, ss)), rest[m.end() :]
        return None, rest[m.end() :]
    m = _MONO.match(rest)
    if m:
        return None, rest[m.end() :]
    m = _SYSLOG.match(rest)
    if m:
        month = _MONTHS.get(m.group(1).lower())
        day, hh, mi, ss = (parse_int(g) for g in m.groups()[1:5])
        if month and ref is not None:
            year = ref.year
            if _valid(year, month, day, hh, mi, ss):
                cand = datetime.datetime(year, month, day, hh, mi, min(ss, 59))
                if cand - ref.replace(tzinfo=None) > datetime.timedelta(days=1):
                    year -= 1
            if _valid(year, month, day, hh, mi, ss):
                return _fmt((year, month, day, hh, mi, ss), m.group(6) or ""), rest[m.end() :]
        return None, rest[m.end() :]
    return None, rest


def _pid(value: str) -> Optional[int]:
    v = value.strip().strip("'\"")
    return parse_int(v) if v.isascii() and v.isdigit() else None


def _process(value: str) -> Optional[str]:
    v = value.strip().strip("'\"")
    if not v or v == "<unknown>":
        return None
    return v


def _severity_word(msg: str) -> Optional[str]:
    m = _SEVERITY_WORD.search(msg)
    if not m:
        return None
    return "fatal" if m.group(1).lower() == "fatal" else "nonfatal"


def _event(kind: str, lineno: int, raw: str, ts: Optional[str], **kw: Any) -> Dict[str, Any]:
    ev: Dict[str, Any] = {
        "kind": kind,
        "code": None,
        "bus_id": None,
        "gpu_index": None,
        "pid": None,
        "process": None,
        "message": "",
        "timestamp": ts,
        "caused_by": None,
        "recovery_action": None,
        "severity": None,
        "detail": {},
        "line": lineno,
        "raw": _clip(raw),
    }
    ev.update(kw)
    return ev


def _xid_event(kind: str, m: re.Match[str], lineno: int, raw: str, ts: Optional[str]) -> Dict[str, Any]:
    addr, code, tail = m.group(1), parse_int(m.group(2)), (m.group(3) or "").strip()
    tail = _ALIGN_SPACES.sub(", ", tail)
    pid = process = None
    msg = tail
    pm = _PID_NAME.match(tail)
    if pm:
        pid, process, msg = _pid(pm.group(1)), _process(pm.group(2)), (pm.group(3) or "").strip()
    if any(q in raw[: m.start()] for q in _QUOTES):
        msg = msg.rstrip(_QUOTES + ",; ").rstrip()  # a line quoted in a ticket or a doc
    ev = _event(kind, lineno, raw, ts, code=code, bus_id=normalize_bus_id(addr), pid=pid, process=process)
    ev["message"] = msg
    ev["severity"] = _severity_word(msg)
    cm = _CAUSED.search(msg)
    if cm:
        ev["caused_by"] = parse_int(cm.group(1))
    _recovery(ev, msg)
    return ev


def _recovery(ev: Dict[str, Any], msg: str) -> None:
    """Xid 154's new recovery action. NVIDIA's number (``nvmlDeviceGpuRecoveryAction_t``) is authoritative; the
    words in parentheses drift between drivers (``PF FLR``, ``OS Reboot``) and are only the fallback."""
    rm = _RECOVERY.search(msg)
    if rm:
        ev["recovery_action"] = recovery_action_name(rm.group(3)) or recovery_action_name(rm.group(4))
        ev["detail"] = {
            "previous_action": recovery_action_name(rm.group(1)) or recovery_action_name(rm.group(2)),
            "new_action_code": _num(rm.group(3)),
            "new_action_text": (rm.group(4) or "").strip() or None,
        }


def _num(tok: Optional[str]) -> Optional[int]:
    if not tok:
        return None
    return parse_int(tok[2:], 16) if tok.lower().startswith("0x") else parse_int(tok)


def _unwrap_xid154(lines: Sequence[str], idx: int, ev: Dict[str, Any], consumed: set) -> None:
    """An Xid 154 line cut before its new action (terminal or ticket wrapping): join up to two following lines that
    are not events of their own."""
    msg = ev["message"]
    for j in (idx + 1, idx + 2):
        if not _RECOVERY_OPEN.search(msg) or j >= len(lines):
            return
        body = _CONTINUATION.sub("", split_time(lines[j])[1], count=1)
        body = body[len("NVRM:") :].strip() if body.startswith("NVRM:") else body.strip()
        after_number = msg.count("(") <= msg.count(")") and not msg.endswith("to")
        if not body or not _RECOVERY_TAIL.match(body) or (after_number and not body.startswith("(")):
            return
        msg = (msg + (" " if not msg.endswith("(") else "") + body).strip()
        consumed.add(j)
        ev["message"] = msg
        _recovery(ev, msg)


def _aer_severity(word: str, qual: Optional[str]) -> str:
    w = word.lower()
    if w.startswith("correct"):
        return "corrected"
    if (qual or "").lower() == "fatal" or "(fatal)" in w:
        return "fatal"
    return "uncorrected"


def _aer_id_to_bus(ident: str) -> Optional[str]:
    try:
        v = int(ident, 16)
    except ValueError:
        return None
    return "%08X:%02X:%02X.%d" % (0, v >> 8, (v >> 3) & 0x1F, v & 7)


def parse_kernel_log(
    text: str,
    source: Optional[str] = None,
    ref_time: Optional[datetime.datetime] = None,
    errors: Optional[List[Dict[str, Any]]] = None,
) -> List[Dict[str, Any]]:
    """Parse a kernel log into events (docs/facts.md ``kernel.events``), in log order.

    Unrecognised lines are skipped. A line that looks like an event but is malformed (a 5,000-digit Xid code)
    is a ``parse`` entry in ``errors`` and the lines after it still count; without an ``errors`` list it
    raises ParseError with the events as ``partial``. Raises ParseError when ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise ParseError("kernel log is not text", PARSER, source)
    rec = Records(PARSER, source, DOMAIN, errors)
    lines = text.splitlines()
    events: List[Dict[str, Any]] = []
    box: List[Optional[Dict[str, Any]]] = [None]  # the last AER event (an 'error received' line's detail follows)
    consumed: set = set()
    for idx, line in enumerate(lines):
        if idx in consumed or not line.strip():
            continue
        if not _INTERESTING.search(line) or rec.too_long(line, idx + 1):
            continue
        with rec.at(idx + 1):
            _line_event(lines, idx, line, ref_time, events, box, consumed)
    return rec.finish(events)


def _line_event(
    lines: Sequence[str],
    idx: int,
    line: str,
    ref_time: Optional[datetime.datetime],
    events: List[Dict[str, Any]],
    box: List[Optional[Dict[str, Any]]],
    consumed: set,
) -> None:
    """The event (if any) of one kernel log line, appended to ``events``."""
    lineno = idx + 1
    ts = split_time(line, ref_time)[0]
    m = _XID.search(line)
    if m and "SXid" not in line:
        ev = _xid_event("xid", m, lineno, line, ts)
        if ev["code"] == 154:
            _unwrap_xid154(lines, idx, ev, consumed)
        events.append(ev)
        return
    m = _SXID.search(line)
    if m:
        _add_sxid(events, _xid_event("sxid", m, lineno, line, ts))
        return
    gm = _GSP.search(line) if "NVRM:" in line and "Xid" not in line else None
    if gm:
        inst = gm.group(1) or gm.group(2)
        msg = line[gm.start() + len("NVRM:") :].strip()
        events.append(
            _event(
                "gsp_timeout", lineno, line, ts, message=msg, detail={"gpu_instance": parse_int(inst) if inst else None}
            )
        )
        return
    if "NVRM:" in line:
        _add_fallen(events, _fallen(lines, idx, line, ts, consumed), lineno)
        return
    if "AER" in line or "PCIe Bus Error" in line:
        last_aer = box[0]
        ev = _aer(line, lineno, ts, last_aer)
        if ev is not None:
            if ev is not last_aer:
                events.append(ev)
            box[0] = ev
        return
    if "mlx5_core" in line:
        ev = _mlx5(line, lineno, ts)
    elif "carrier" in line:
        ev = _carrier(line, lineno, ts) or _mce_edac(line, lineno, ts)
    else:
        ev = _mce_edac(line, lineno, ts)
    if ev is not None:
        events.append(ev)


def _add_sxid(events: List[Dict[str, Any]], ev: Dict[str, Any]) -> None:
    """An SXid event, or its "Severity N Engine instance ..." / "Data {...}" line detailing the SXid just above."""
    prev = events[-1] if events else None
    dm = _SXID_DETAIL.match(ev["message"])
    if (
        dm
        and prev is not None
        and prev["kind"] == "sxid"
        and (prev["code"], prev["bus_id"]) == (ev["code"], ev["bus_id"])
        and ev["line"] - prev["line"] <= 3
    ):
        prev["detail"]["severity_level" if dm.group(2) else "data"] = (
            parse_int(dm.group(2)) if dm.group(2) else ev["message"]
        )
        return
    events.append(ev)


def _add_fallen(events: List[Dict[str, Any]], ev: Optional[Dict[str, Any]], lineno: int) -> None:
    if ev is None:
        return
    # Newer drivers print "GPU ...: GPU has fallen off the bus." right after the Xid 79 line.
    for prev in reversed(events[-3:]):
        if prev["kind"] == "xid" and prev["code"] == 79 and prev["bus_id"] == ev["bus_id"]:
            if lineno - prev["line"] <= 5:
                ev["detail"]["xid79_line"] = prev["line"]
            break
    events.append(ev)


def _mlx5(line: str, lineno: int, ts: Optional[str]) -> Optional[Dict[str, Any]]:
    """mlx5_core link up/down and insufficient slot power."""
    m = _MLX5_LINK.search(line)
    if m:
        state = m.group(3)
        return _event(
            "mlx5_link",
            lineno,
            line,
            ts,
            bus_id=normalize_bus_id(m.group(1)),
            message="Link %s" % state,
            detail={"state": state, "interface": m.group(2)},
        )
    m = _MLX5_POWER.search(line)
    if not m:
        return None
    watts = parse_int(m.group(2)) if m.group(2) else None
    return _event(
        "mlx5_power",
        lineno,
        line,
        ts,
        bus_id=normalize_bus_id(m.group(1)),
        message=line[max(line.lower().find("detected insufficient"), m.start()) :].strip(),
        detail={"slot_power_w": watts},
    )


def _carrier(line: str, lineno: int, ts: Optional[str]) -> Optional[Dict[str, Any]]:
    """``<iface>: Lost carrier`` / ``Gained carrier`` as an mlx5_link event."""
    m = _CARRIER.search(line)
    if not m:
        return None
    state = "down" if m.group(2) == "Lost" else "up"
    return _event(
        "mlx5_link",
        lineno,
        line,
        ts,
        message="%s carrier" % m.group(2),
        detail={"state": state, "interface": m.group(1), "via": "carrier"},
    )


def _fallen(lines: Sequence[str], idx: int, line: str, ts: Optional[str], consumed: set) -> Optional[Dict[str, Any]]:
    """'fallen off the bus' without an Xid token, single- or multi-line (continuations start with NVRM:)."""
    text = line
    m = _THE_NVIDIA_GPU.search(line)
    if m and not _FALLEN.search(line):
        # Multi-line form: join up to 3 following NVRM continuation lines.
        joined = [line.strip()]
        for j in range(idx + 1, min(idx + 4, len(lines))):
            nxt = lines[j]
            body = split_time(nxt)[1].strip()
            body = re.sub(r"^(?:\S+ )?kernel:\s*", "", body)
            if not body.startswith("NVRM:") or "Xid" in body or _THE_NVIDIA_GPU.search(body):
                break
            joined.append(body[len("NVRM:") :].strip())
            consumed.add(j)
            if _FALLEN.search(body):
                break
        text = " ".join(joined)
        if not _FALLEN.search(text):
            for j in range(idx + 1, idx + len(joined)):
                consumed.discard(j)
            return None
    elif not _FALLEN.search(line):
        return None
    bus = None
    for rx in _FALLEN_ADDR:
        am = rx.search(text)
        if am:
            bus = normalize_bus_id(am.group(1))
            if bus:
                break
    nv = text.find("NVRM:")
    msg = re.sub(r"\s+", " ", text[nv + 5 :] if nv >= 0 else text).strip()
    raw = "\n".join([line] + [lines[j] for j in sorted(consumed) if idx < j <= idx + 3])
    return _event("fallen_off_bus", idx + 1, raw, ts, bus_id=bus, message=msg)


def _aer(line: str, lineno: int, ts: Optional[str], last: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    m = _AER_RECEIVED.search(line)
    if m:
        bus = _aer_id_to_bus(m.group(3)) if m.group(3) else normalize_bus_id((m.group(4) or "").rstrip(",."))
        fields: Dict[str, Any] = {"severity": _aer_severity(m.group(1), m.group(2)), "message": line[m.start() :]}
        who = _AER_WHO.search(line[: m.start()])
        # the port that received the error message (the source's root port): the source's upstream side
        fields["detail"] = {"reporter": normalize_bus_id(who.group(2)) if who else None}
    else:
        m = _AER_BUS_ERROR.search(line)
        if not m:
            return None
        bus = normalize_bus_id(m.group(1))
        err_type = (m.group(3) or "").strip() or None
        who = _AER_WHO.search(line[: m.end(1)] + ":")
        driver = who.group(1) if who and who.group(1) != "kernel:" else None  # pcieport, nvidia, mlx5_core, ...
        # The "PCIe Bus Error" line right after "error received" describes the same error.
        if last is not None and 0 < lineno - last["line"] <= 3 and last["bus_id"] in (bus, None):
            last["bus_id"] = bus
            last["detail"]["type"] = err_type
            last["detail"]["driver"] = driver
            return last
        fields = {
            "severity": _aer_severity(m.group(2), None),
            "message": line[line.find("PCIe Bus Error") :],
            "detail": {"type": err_type, "driver": driver},
        }
    fields["message"] = fields["message"].strip()
    return _event("aer", lineno, line, ts, bus_id=bus, **fields)


def _mce_edac(line: str, lineno: int, ts: Optional[str]) -> Optional[Dict[str, Any]]:
    m = _EDAC.search(line)
    if m:
        return _event(
            "edac",
            lineno,
            line,
            ts,
            severity="corrected" if m.group(3) == "CE" else "uncorrected",
            message=line[m.start() :].strip(),
            detail={"mc": parse_int(m.group(1)), "count": parse_int(m.group(2)) if m.group(2) else None},
        )
    m = _MCE_BANK.search(line)
    if m:
        status = parse_int(m.group(4), 16)
        return _event(
            "mce",
            lineno,
            line,
            ts,
            severity="uncorrected" if (status >> 61) & 1 else "corrected",
            message=line[m.start() :].strip(),
            detail={"cpu": parse_int(m.group(1)), "bank": parse_int(m.group(3)), "status": "0x%x" % status},
        )
    m = _MCE_LOGGED.search(line)
    if m:
        return _event("mce", lineno, line, ts, message=line[m.start() :].strip())
    m = _MCE_OTHER.search(line)
    if m:
        word = (m.group(2) or "").lower()
        sev = "corrected" if word == "corrected" else ("fatal" if "fatal" in m.group(1).lower() else "uncorrected")
        return _event("mce", lineno, line, ts, severity=sev, message=line[m.start() :].strip())
    return None
