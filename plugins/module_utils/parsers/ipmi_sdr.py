# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ipmitool sensor listings: the status and unit vocabulary, sensor classification, and the parser of
``sdr`` / ``sdr list`` / ``sdr elist`` / ``sensor`` (re-exported by ``_ipmi``).

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    clean,
    num_unit,
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


#: state_severity's answers by text (an SDR and a SEL repeat a few dozen state texts, and every node the same ones):
#: bounded, cleared when full
_SEVERITIES: Dict[str, str] = {}


def state_severity(text: str) -> str:
    """Severity of one discrete state / SEL event text: ok | non_critical | critical | non_recoverable."""
    # exactly str: a subclass may compare or lower differently
    # pylint: disable-next=unidiomatic-typecheck
    if type(text) is not str:  # noqa: E721
        return _state_severity(text)
    sev = _SEVERITIES.get(text)
    if sev is None:
        if len(_SEVERITIES) >= 4096:
            _SEVERITIES.clear()
        sev = _SEVERITIES[text] = _state_severity(text)
    return sev


def _state_severity(text: Any) -> str:
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
LEAK_NAME = re.compile(r"leak|moisture|drip|\bwet\b", re.I)
#: Coolant flow, pressure, level, temperature and pumps: ``coolant`` (cooling findings, never a leak).
_COOLANT_NAME = re.compile(
    r"coolant|liquid|fluid|water|pump|\bcdu\b|(?<!air)(?<!air )flow|\bpress(?:ure)?\b|\bl/min\b", re.I
)
_INTRUSION_NAME = re.compile(r"intru|physical scrty|chassis open|cover", re.I)
_PSU_NAME = re.compile(r"^(?:ps\s*\d|psu|pwr\s*supply|power\s*supply|power\s*supplies)|\bpsu?\d|\bps\d", re.I)


#: classify's and _reading's answers (a node's SDR names the same sensors and units as its peers': ~200 rows a node,
#: each through a dozen patterns): bounded, cleared when full
_CLASSES: Dict[Tuple[Any, ...], str] = {}
_READINGS: Dict[str, Tuple[Optional[float], Optional[str]]] = {}
_MEMO_MAX = 8192
_PLAIN = (str, type(None))


def classify(name: str, unit: Optional[str], entity: Optional[str] = None, discrete: bool = False) -> str:
    """Sensor type from its name, unit and (elist) entity id: temperature, fan, voltage, current, power,
    power_supply, leak, coolant, intrusion, memory, processor, drive, other. ``leak`` is a leak detector only:
    a leak name on a discrete (or unit-less) sensor; coolant flow/pressure/temperature sensors are ``coolant``."""
    # pylint: disable-next=unidiomatic-typecheck
    if type(name) not in _PLAIN or type(unit) not in _PLAIN or type(entity) not in _PLAIN or type(discrete) is not bool:
        return _classify(name, unit, entity, discrete)
    key = (name, unit, entity, discrete)
    stype = _CLASSES.get(key)
    if stype is None:
        if len(_CLASSES) >= _MEMO_MAX:
            _CLASSES.clear()
        stype = _CLASSES[key] = _classify(name, unit, entity, discrete)
    return stype


def _classify(name: Any, unit: Any, entity: Any, discrete: Any) -> str:
    n = name or ""
    if LEAK_NAME.search(n) and (discrete or unit is None):
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
    if _PSU_NAME.search(n) or ent == "10":
        return "power_supply"
    return _type_by_name(n.lower(), ent)


#: Sensor types by words in the (lower-case) name, first match wins; entity ids 29/30 are fans.
_NAME_TYPES = (
    ("temperature", re.compile(r"temp")),
    ("fan", re.compile(r"fan")),
    ("voltage", re.compile(r"\bv(?:olt|core|bat|cc|dd)|\d\.\d+v\b|\d+v\b")),
    ("current", re.compile(r"curr|amp")),
    ("power", re.compile(r"pwr|power|watt")),
    ("memory", re.compile(r"ecc|dimm|mem")),
    ("processor", re.compile(r"cpu|proc")),
    ("drive", re.compile(r"drive|disk|hdd")),
)


def _type_by_name(lname: str, ent: str) -> str:
    for stype, pattern in _NAME_TYPES:
        if pattern.search(lname) or (stype == "fan" and ent in ("29", "30")):
            return stype
    return "other"


def _unit(raw: Optional[str]) -> Optional[str]:
    if raw is None:
        return None
    key = raw.strip().lower()
    if key in _UNITS:
        return _UNITS[key]
    return raw.strip() or None


def _reading(text: str) -> Tuple[Optional[float], Optional[str]]:
    # exactly str (the table's key)
    # pylint: disable-next=unidiomatic-typecheck
    if type(text) is not str:  # noqa: E721
        return _read_value(text)
    got = _READINGS.get(text)
    if got is None:
        if len(_READINGS) >= _MEMO_MAX:
            _READINGS.clear()
        got = _READINGS[text] = _read_value(text)
    return got


def _read_value(text: Any) -> Tuple[Optional[float], Optional[str]]:
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


def text_records(text: Any, parser: str, source: Optional[str], errors: Optional[List[Dict[str, Any]]]) -> Records:
    """The record keeper of one ipmitool listing; input that is not text raises ParseError."""
    if not isinstance(text, str):
        raise ParseError("input is not text", parser, source)
    return Records(parser, source, DOMAIN, errors)


def sensor_record(name: str, stype: str, status: str, **fields: Any) -> Dict[str, Any]:
    """One sensor record; ``fields`` sets ``reading``, ``unit``, ``states``, ``thresholds``, ``number``, ``entity``."""
    rec: Dict[str, Any] = {
        "name": name,
        "type": stype,
        "reading": None,
        "unit": None,
        "status": status,
        "states": [],
        "thresholds": {},
        "number": None,
        "entity": None,
    }
    rec.update(fields)
    return rec


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
    rec = text_records(text, "ipmitool_sdr", source, errors)
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
        return sensor_record(name, stype, status, states=states)
    reading, unit = _reading(value)
    if reading is None:
        # 'Not Readable', 'no reading', 'disabled': no reading is 'not present', never a failure
        if clean(value) is None or value.lower() in ("not readable", "no reading", "disabled"):
            status = "not_present" if status in ("ok", "not_present", "unknown") else status
    stype = classify(name, unit)
    return sensor_record(name, stype, status, reading=reading, unit=unit)


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
    return sensor_record(name, stype, status, reading=reading, unit=unit, states=states, number=number, entity=entity)


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
        return sensor_record(name, stype, status, states=states, thresholds=thresholds)
    reading, _u = num_unit(value)
    status = _STATUS.get(status_col.lower(), "unknown")
    if reading is None:
        status = "not_present" if status in ("ok", "not_present", "unknown") else status
    stype = classify(name, unit)
    return sensor_record(name, stype, status, reading=reading, unit=unit, states=states, thresholds=thresholds)
