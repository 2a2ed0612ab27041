# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for ipmitool output: sdr / sdr elist / sensor, sel list / elist, sel info, mc info, fru print.

Every parser takes text and returns plain data (docs/facts.md, ``bmc`` domain). Lines that are not
table rows (``Unable to send command: ...``, blank lines, headers) are skipped. Formats:
/work/shared/reference/formats.md section 7 (ipmitool 1.8.19 lib/ipmi_sdr.c, ipmi_sensor.c, ipmi_sel.c).

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    clean,
    num_unit,
    parse_int,
    to_float,
    to_int,
)

DOMAIN = "bmc"

#: Sensor status vocabulary (docs/facts.md), worst last.
STATUS_ORDER = ("ok", "unknown", "not_present", "non_critical", "critical", "non_recoverable")

_STATUS = {
    "ok": "ok",
    "nc": "non_critical",
    "lnc": "non_critical",
    "unc": "non_critical",
    "cr": "critical",
    "lcr": "critical",
    "ucr": "critical",
    "nr": "non_recoverable",
    "lnr": "non_recoverable",
    "unr": "non_recoverable",
    "ns": "not_present",
    "na": "not_present",
}

#: ipmitool's unit strings -> normalized unit.
_UNITS = {
    "degrees c": "C",
    "% degrees c": "C",
    "degrees f": "F",
    "volts": "V",
    "% volts": "V",
    "amps": "A",
    "% amps": "A",
    "watts": "W",
    "% watts": "W",
    "rpm": "RPM",
    "% rpm": "RPM",
    "percent": "%",
    "cfm": "CFM",
    "feet": "ft",
    "unspecified": None,
    "discrete": None,
}

_UNIT_TYPE = {"C": "temperature", "F": "temperature", "V": "voltage", "A": "current", "W": "power", "RPM": "fan"}

#: ipmitool sensor type names (lib/ipmi_sdr.c sensor_type_desc + 'Unknown'), longest first for prefix matching.
SEL_SENSOR_TYPES = sorted(
    (
        "Temperature",
        "Voltage",
        "Current",
        "Fan",
        "Physical Security",
        "Platform Security",
        "Processor",
        "Power Supply",
        "Power Unit",
        "Cooling Device",
        "Other",
        "Memory",
        "Drive Slot / Bay",
        "POST Memory Resize",
        "System Firmwares",
        "System Firmware Progress",
        "Event Logging Disabled",
        "Watchdog1",
        "Watchdog 1",
        "System Event",
        "Critical Interrupt",
        "Button",
        "Module / Board",
        "Microcontroller",
        "Add-in Card",
        "Chassis",
        "Chip Set",
        "Other FRU",
        "Cable / Interconnect",
        "Terminator",
        "System Boot Initiated",
        "Boot Error",
        "OS Boot",
        "OS Critical Stop",
        "Slot / Connector",
        "System ACPI Power State",
        "Watchdog2",
        "Watchdog 2",
        "Platform Alert",
        "Entity Presence",
        "Monitor ASIC",
        "LAN",
        "Management Subsystem Health",
        "Battery",
        "Session Audit",
        "Version Change",
        "FRU State",
        "Unknown",
        "OEM reserved",
    ),
    key=len,
    reverse=True,
)

# Discrete states that mean trouble, scanned in the reading text of discrete sensors and in SEL events.
_CRITICAL_WORDS = (
    "failure detected",
    "ac lost",
    "drive fault",
    "uncorrectable",
    "ierr",
    "thermal trip",
    "insufficient resources",
    "sensor failure",
    "pci serr",
    "pci perr",
    "bus fatal",
    "fatal nmi",
    "machine check",
    "leak detected",
    "transition to critical",
)
_NONCRIT_WORDS = (
    "predictive failure",
    "redundancy lost",
    "redundancy degraded",
    "non-redundant",
    "logging limit reached",
    "correctable ecc",
    "intrusion",
    "config error",
    "configuration error",
    "transition to non-critical",
    "throttled",
    "log full",
    "log almost full",
)
_NONREC_WORDS = ("non-recoverable", "transition to non-recoverable")


def _worst(a: str, b: str) -> str:
    return a if STATUS_ORDER.index(a) >= STATUS_ORDER.index(b) else b


def state_severity(text: str) -> str:
    """Severity of one discrete state / SEL event text: ok | non_critical | critical | non_recoverable."""
    t = (text or "").lower()
    if any(w in t for w in _NONREC_WORDS):
        return "non_recoverable"
    if "non-critical going" in t:
        return "non_critical"
    if "critical going" in t:
        return "critical"
    # 'Non-Redundant: Insufficient Resources' is critical; other non-redundant states are warnings.
    if any(w in t for w in _CRITICAL_WORDS):
        return "critical"
    if any(w in t for w in _NONCRIT_WORDS):
        return "non_critical"
    return "ok"


#: A leak detector (a discrete sensor whose asserted state is the leak). Only these are ``leak``.
_LEAK_NAME = re.compile(r"leak|moisture|drip|\bwet\b", re.I)
#: Coolant flow, pressure, level, temperature and pumps: ``coolant`` (cooling findings, never a leak).
_COOLANT_NAME = re.compile(
    r"coolant|liquid|fluid|water|pump|\bcdu\b|(?<!air)(?<!air )flow|\bpress(?:ure)?\b|\bl/min\b", re.I
)
_INTRUSION_NAME = re.compile(r"intru|physical scrty|chassis open|cover", re.I)
_PSU_NAME = re.compile(r"^(?:ps\s*\d|psu|pwr\s*supply|power\s*supply|power\s*supplies)|\bpsu?\d|\bps\d", re.I)


def classify(name: str, unit: Optional[str], entity: Optional[str] = None, discrete: bool = False) -> str:
    """Sensor type from its name, unit and (elist) entity id: temperature, fan, voltage, current, power,
    power_supply, leak, coolant, intrusion, memory, processor, drive, other. ``leak`` is a leak detector only:
    a leak name on a discrete (or unit-less) sensor; coolant flow/pressure/temperature sensors are ``coolant``."""
    n = name or ""
    if _LEAK_NAME.search(n) and (discrete or unit is None):
        return "leak"
    if _COOLANT_NAME.search(n):
        return "coolant"
    if _INTRUSION_NAME.search(n):
        return "intrusion"
    ent = (entity or "").split(".")[0]
    if discrete and (_PSU_NAME.search(n) or ent == "10"):
        return "power_supply"
    if unit in _UNIT_TYPE:
        return _UNIT_TYPE[unit]
    lname = n.lower()
    if _PSU_NAME.search(n) or ent == "10":
        return "power_supply"
    if "temp" in lname:
        return "temperature"
    if "fan" in lname or ent in ("29", "30"):
        return "fan"
    if re.search(r"\bv(?:olt|core|bat|cc|dd)|\d\.\d+v\b|\d+v\b", lname):
        return "voltage"
    if "curr" in lname or "amp" in lname:
        return "current"
    if "pwr" in lname or "power" in lname or "watt" in lname:
        return "power"
    if "ecc" in lname or "dimm" in lname or "mem" in lname:
        return "memory"
    if "cpu" in lname or "proc" in lname:
        return "processor"
    if "drive" in lname or "disk" in lname or "hdd" in lname:
        return "drive"
    return "other"


def _unit(raw: Optional[str]) -> Optional[str]:
    if raw is None:
        return None
    key = raw.strip().lower()
    if key in _UNITS:
        return _UNITS[key]
    return raw.strip() or None


def _reading(text: str) -> Tuple[Optional[float], Optional[str]]:
    value, unit = num_unit(text)
    if value is None:
        return None, None
    return value, _unit(unit)


#: Sensor-specific offsets of the Power Supply sensor type (IPMI 2.0 table 42-3, sensor type 08h).
_PSU_BITS = (
    "Presence detected",
    "Failure detected",
    "Predictive failure",
    "Power Supply AC lost",
    "AC lost or out-of-range",
    "AC out-of-range, but present",
    "Config Error",
    "Power Supply Inactive",
)


def _raw_discrete(stype: str, raw: str) -> Tuple[List[str], str]:
    """States and status from the raw state byte that plain ``ipmitool sdr`` prints for discrete sensors."""
    try:
        bits = int(raw, 16)
    except ValueError:
        return [], "unknown"
    if stype == "power_supply":
        states = [s for i, s in enumerate(_PSU_BITS) if bits & (1 << i)]
        status = "ok"
        for s in states:
            status = _worst(status, state_severity(s))
        return states, status
    if stype == "leak":
        return (["State Asserted"], "critical") if bits & 0x02 else ([], "ok")
    if stype == "intrusion":
        return (["General Chassis intrusion"], "non_critical") if bits & 0x01 else ([], "ok")
    return [], "ok"


def _discrete_status(stype: str, states: List[str], status: str) -> str:
    """The status column says ``ok`` for discrete sensors whatever their state: read the states."""
    for s in states:
        sev = state_severity(s)
        low = s.lower()
        if stype == "leak" and (low == "state asserted" or "leak" in low or "transition to critical" in low):
            sev = "critical"
        if stype == "intrusion" and low == "state asserted":
            sev = "non_critical"
        if stype == "power_supply" and low in ("device absent", "presence detected deasserted"):
            sev = "critical"
        if sev != "ok":
            status = _worst(status, sev)
    return status


def _sensor(name: str, stype: str, reading, unit, status, states, thresholds, number=None, entity=None):
    return {
        "name": name,
        "type": stype,
        "reading": reading,
        "unit": unit,
        "status": status,
        "states": states,
        "thresholds": thresholds,
        "number": number,
        "entity": entity,
    }


_SENSOR_NUM = re.compile(r"^([0-9A-Fa-f]{1,2})h$")
_ENTITY = re.compile(r"^[0-9]+\.[0-9]+$")


def parse_sdr(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """``ipmitool sdr`` / ``sdr list`` (3 columns), ``sdr elist`` (5 columns) or ``sensor`` (10 columns).

    The layout is detected per line, so a file with stray lines of another layout still parses.
    Raises ParseError only when the text has content but not a single sensor row (and no malformed one).
    A malformed sensor row is a ``parse`` entry in ``errors`` and the other sensors are kept; without an
    ``errors`` list it raises ParseError with the sensors as ``partial``.
    """
    if not isinstance(text, str):
        raise ParseError("input is not text", "ipmitool_sdr", source)
    rec = Records("ipmitool_sdr", source, DOMAIN, errors)
    sensors: List[Dict[str, Any]] = []
    content = False
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        content = True
        if "|" not in line or rec.too_long(line, lineno):
            continue  # 'Unable to send command: Invalid argument' and other interleaved stderr lines
        cols = [c.strip() for c in line.split("|")]
        name = cols[0]
        if not name:
            continue
        with rec.at(lineno):
            if len(cols) >= 10:
                sensors.append(_sensor_row(cols))
            elif len(cols) >= 5 and _SENSOR_NUM.match(cols[1]) and _ENTITY.match(cols[3]):
                sensors.append(_elist_row(cols[0], cols[1], cols[2], cols[3], "|".join(cols[4:]).strip()))
            elif len(cols) == 3:
                sensors.append(_sdr_row(cols[0], cols[1], cols[2]))
    if content and not sensors and not rec.count:
        raise ParseError("no sensor rows found", "ipmitool_sdr", source, 1)
    return rec.finish(sensors)


def _sdr_row(name: str, value: str, status_col: str) -> Dict[str, Any]:
    status = _STATUS.get(status_col.lower(), "unknown")
    if re.match(r"^0x[0-9a-fA-F]+$", value):
        stype = classify(name, None, discrete=True)
        states, dstatus = _raw_discrete(stype, value)
        if status == "ok":
            status = dstatus
        return _sensor(name, stype, None, None, status, states, {})
    reading, unit = _reading(value)
    if reading is None:
        # 'Not Readable', 'no reading', 'disabled': no reading is 'not present', never a failure
        if clean(value) is None or value.lower() in ("not readable", "no reading", "disabled"):
            status = "not_present" if status in ("ok", "not_present", "unknown") else status
    stype = classify(name, unit)
    return _sensor(name, stype, reading, unit, status, [], {})


def _elist_row(name: str, num: str, status_col: str, entity: str, rest: str) -> Dict[str, Any]:
    status = _STATUS.get(status_col.lower(), "unknown")
    number = int(num[:-1], 16)
    parts = [p.strip() for p in rest.split(",")] if rest else []
    reading: Optional[float] = None
    unit: Optional[str] = None
    states: List[str] = []
    for i, p in enumerate(parts):
        if not p:
            continue
        if i == 0:
            r, u = _reading(p)
            if r is not None:
                reading, unit = r, u
                continue
        states.append(p)
    if clean(rest) is None or rest.lower() in ("no reading", "disabled", "not readable"):
        states = []
        if status in ("ok", "unknown"):
            status = "not_present" if rest else status
    discrete = bool(states) or (reading is None and status != "not_present")
    stype = classify(name, unit, entity, discrete=discrete and unit in (None, "W"))
    status = _discrete_status(stype, states, status)
    return _sensor(name, stype, reading, unit, status, states, {}, number, entity)


_THRESH_KEYS = ("lnr", "lcr", "lnc", "unc", "ucr", "unr")


def _sensor_row(cols: List[str]) -> Dict[str, Any]:
    name, value, unit_raw, status_col = cols[0], cols[1], cols[2], cols[3]
    thresholds: Dict[str, float] = {}
    for key, raw in zip(_THRESH_KEYS, cols[4:10]):
        v, _u = num_unit(raw)
        if v is not None:
            thresholds[key] = v
    unit = _unit(unit_raw) if unit_raw else None
    states: List[str] = []
    if re.match(r"^0x[0-9a-fA-F]{4}$", status_col):
        # discrete sensor: the value column is the raw state byte (as in plain 'sdr'), the status column the
        # state word (0x0300 = offsets 0 and 1 asserted)
        stype = classify(name, None, discrete=True)
        raw = value if re.match(r"^0x[0-9a-fA-F]+$", value) else "0x%02x" % (int(status_col, 16) >> 8)
        states, status = _raw_discrete(stype, raw)
        return _sensor(name, stype, None, None, status, states, thresholds)
    reading, _u = num_unit(value)
    status = _STATUS.get(status_col.lower(), "unknown")
    if reading is None:
        status = "not_present" if status in ("ok", "not_present", "unknown") else status
    stype = classify(name, unit)
    return _sensor(name, stype, reading, unit, status, states, thresholds)


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


def sel_time(date_s: str, time_s: str) -> Optional[str]:
    """ISO 8601 time from a SEL date and time column; None for Pre-Init / Unspecified / unparseable."""
    date_s = (date_s or "").strip()
    time_s = (time_s or "").strip()
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
                return dt.strftime("%Y-%m-%dT%H:%M:%S") + "Z"
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
    if not isinstance(text, str):
        raise ParseError("input is not text", "ipmitool_sel", source)
    rec = Records("ipmitool_sel", source, DOMAIN, errors)
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
        if len(cols) < 4 or not re.match(r"^[0-9a-fA-F]{1,8}$", cols[0]):
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
        and _LEAK_NAME.search(sname or sensor_col)
        and (event_clean or "").lower()
        in ("state asserted", "device present", "transition to critical from less severe")
    ):
        severity = "critical"  # a leak sensor is a generic discrete sensor: its asserted state is the leak
    if direction == "deasserted":
        low = (event_clean or "").lower()
        severity = "non_critical" if low in ("fully redundant", "presence detected", "device present") else "ok"
    reading = threshold = None
    m = _SEL_READING.search(extra)
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


def _sel_number(token: str) -> Optional[float]:
    """A SEL reading or threshold: one plain decimal number (``2.7.1`` is not one)."""
    return to_float(token) if re.fullmatch(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", token) else None


# ---------------------------------------------------------------------------------------------------- key/value


def _kv_lines(text: str) -> List[Tuple[int, int, str, str]]:
    """(lineno, indent, key, value) for ``Key : Value`` lines; continuation lines have key ''."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if ":" in line:
            key, _sep, value = line.partition(":")
            out.append((lineno, indent, key.strip(), value.strip()))
        else:
            out.append((lineno, indent, "", line.strip()))
    return out


def _unknown_name(v: Optional[str]) -> Optional[str]:
    v = clean(v)
    if v is None or re.match(r"^unknown\b", v, re.I):
        return None
    return v


#: IANA enterprise numbers of common BMC vendors, for 'Manufacturer Name : Unknown (0x...)'.
IANA_VENDORS = {
    2: "IBM",
    11: "Hewlett-Packard",
    343: "Intel Corporation",
    674: "Dell Inc.",
    2011: "Huawei",
    5771: "Cisco Systems",
    7244: "Quanta",
    10876: "Super Micro Computer Inc.",
    19046: "Lenovo",
    33049: "Mellanox Technologies LTD",
}


def parse_mc_info(text: str, source: Optional[str] = None) -> Dict[str, Any]:
    """``ipmitool mc info``."""
    if not isinstance(text, str):
        raise ParseError("input is not text", "ipmitool_mc_info", source)
    raw: Dict[str, Any] = {}
    lists: Dict[str, List[str]] = {}
    current = None
    for _lineno, indent, key, value in _kv_lines(text):
        if key and indent < 4:
            raw[key] = value
            current = key
            if value == "":
                lists[key] = []
        elif current is not None and current in lists:
            lists[current].append(value if not key else "%s: %s" % (key, value))
    if not raw:
        if text.strip():
            raise ParseError("no 'Key : Value' lines", "ipmitool_mc_info", source, 1)
        return {}
    mid = to_int(raw.get("Manufacturer ID"))
    manufacturer = _unknown_name(raw.get("Manufacturer Name")) or IANA_VENDORS.get(mid or -1)
    pid = raw.get("Product ID")
    return {
        "firmware_revision": clean(raw.get("Firmware Revision")),
        "ipmi_version": clean(raw.get("IPMI Version")),
        "manufacturer": manufacturer,
        "manufacturer_id": mid,
        "product": _unknown_name(raw.get("Product Name")),
        "product_id": to_int(pid.split()[0]) if pid else None,
        "device_id": to_int(raw.get("Device ID")),
        "device_revision": to_int(raw.get("Device Revision")),
        "device_available": {"yes": True, "no": False}.get((raw.get("Device Available") or "").lower()),
        "additional_device_support": lists.get("Additional Device Support", []),
        "aux_firmware_rev_info": lists.get("Aux Firmware Rev Info", []),
    }


def parse_sel_info(text: str, source: Optional[str] = None) -> Dict[str, Any]:
    """``ipmitool sel info`` (or plain ``ipmitool sel``): entries, free space, percent used, overflow."""
    if not isinstance(text, str):
        raise ParseError("input is not text", "ipmitool_sel_info", source)
    raw = {k: v for _l, _i, k, v in _kv_lines(text) if k}
    if not raw:
        if text.strip():
            raise ParseError("no 'Key : Value' lines", "ipmitool_sel_info", source, 1)
        return {}
    overflow = (raw.get("Overflow") or "").lower()
    return {
        "version": clean(raw.get("Version")),
        "entries": to_int(raw.get("Entries")),
        "free_space_bytes": to_int(raw.get("Free Space")),
        "percent_used": to_int((raw.get("Percent Used") or "").rstrip("%")),
        "last_add_time": clean(raw.get("Last Add Time")),
        "overflow": True if overflow == "true" else False if overflow == "false" else None,
    }


def parse_fru(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """``ipmitool fru print``: one entry per ``FRU Device Description`` block.

    A malformed block is a ``parse`` entry in ``errors`` and the other blocks are kept; without an ``errors``
    list it raises ParseError with the entries as ``partial``.
    """
    if not isinstance(text, str):
        raise ParseError("input is not text", "ipmitool_fru", source)
    rec = Records("ipmitool_fru", source, DOMAIN, errors)
    blocks: List[Dict[str, Any]] = []
    cur: Optional[Dict[str, str]] = None
    for lineno, _indent, key, value in _kv_lines(text):
        if key == "FRU Device Description":
            cur = {"_desc": value, "_line": lineno}
            blocks.append(cur)  # type: ignore[arg-type]
            continue
        if cur is None:
            if key:
                cur = {"_desc": "", "_line": lineno}
                blocks.append(cur)  # type: ignore[arg-type]
            else:
                continue
        if key:
            cur.setdefault(key, value)
        elif "not present" in value.lower():
            cur["_absent"] = value
    if text.strip() and not blocks:
        raise ParseError("no FRU blocks found", "ipmitool_fru", source, 1)
    out: List[Dict[str, Any]] = []
    for b in blocks:
        with rec.at(b.get("_line")):
            out.append(_fru_entry(b))
    return rec.finish(out)


def _fru_entry(b: Dict[str, Any]) -> Dict[str, Any]:
    """One FRU block (``Key: value`` pairs, ``_desc`` the description line) -> a ``fru`` entry."""
    desc = b.get("_desc", "")
    m = re.match(r"^(.*?)\s*\(ID\s*([0-9]+)\)\s*$", desc)
    name = (m.group(1) if m else desc).strip() or None
    fru_id = parse_int(m.group(2)) if m else None

    def g(*keys: str, b: Dict[str, str] = b) -> Optional[str]:
        for k in keys:
            v = clean(b.get(k))
            if v is not None:
                return v
        return None

    return {
        "name": name,
        "id": fru_id,
        "present": "_absent" not in b,
        "product": g("Product Name", "Board Product"),
        "manufacturer": g("Product Manufacturer", "Board Mfg"),
        "serial": g("Product Serial", "Board Serial", "Chassis Serial"),
        "part": g("Product Part Number", "Board Part Number", "Chassis Part Number"),
        "version": g("Product Version"),
        "board_serial": g("Board Serial"),
        "board_product": g("Board Product"),
        "board_part": g("Board Part Number"),
        "chassis_serial": g("Chassis Serial"),
        "asset_tag": g("Product Asset Tag"),
    }


def looks_like(text: str) -> str:
    """Guess which ipmitool listing a capture holds: sdr | sel | mc_info | fru | sel_info | unknown."""
    for line in text.splitlines()[:50]:
        s = line.strip()
        if not s:
            continue
        if s.startswith("FRU Device Description"):
            return "fru"
        if s.startswith("SEL Information"):
            return "sel_info"
        if s.startswith("Device ID") or s.startswith("Firmware Revision"):
            return "mc_info"
        if "|" in s:
            cols = [c.strip() for c in s.split("|")]
            if re.match(r"^[0-9a-fA-F]{1,8}$", cols[0]) and len(cols) >= 5 and ("/" in cols[1] or "Init" in cols[1]):
                return "sel"
            return "sdr"
    return "unknown"
