# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``ethtool -m <if>`` (module EEPROM / DOM: SFF-8472, SFF-8636, CMIS) and ``ethtool -S <if>`` text.

``ethtool -m`` prints ``Key<padding> : Value`` lines (ethtool ``sff-common.c``, ``qsfp.c``, ``cmis.c``,
``sfpdiag.c``). Per-lane readings carry ``(Channel N)`` (``(Chan N)`` for some flags); powers read
``0.9720 mW / -0.12 dBm`` (``-inf dBm`` at 0 mW); thresholds are four lines per quantity (high/low alarm and
warning); flags are ``On``/``Off``. A port whose driver cannot read the module prints one error line
(``Cannot get module EEPROM information: Operation not supported``, ``netlink error: ...``): not a fault.

Pasted or cut outputs often start further down (at ``Transceiver type`` or at the DOM lines, the ``Identifier``
line left out): the fields that are there are read; only text with no module field at all is not ``ethtool -m``.
A module EEPROM that reads as garbage (identifier 0xff, or every threshold band impossible: all zero, all the
same maximum, high below low) is marked ``unreadable`` with the reason: its readings and flags mean nothing.

``ethtool -S`` prints ``NIC statistics:`` then ``name: value`` lines (mlx5: ``rx_prio3_pause``,
``tx_prio3_pause``, ``rx_pause_ctrl_phy``, ...).

Pure: text in, plain data out. Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    MAX_LINE_CHARS,
    ParseError,
    clean,
    to_float,
    to_int,
)

PARSER = "ethtool-m"
_KV = re.compile(r"^\s*([A-Za-z][^:]{0,80}?)\s*:\s?(.*)$")
_LANE = re.compile(r"\(\s*(?:Channel|Chan|Lane)\s*([0-9]+)\s*\)", re.I)
_DBM = re.compile(r"(-?inf|[-+]?[0-9]+(?:\.[0-9]+)?)\s*dBm", re.I)
_MW = re.compile(r"([-+]?[0-9]+(?:\.[0-9]+)?)\s*mW")
_ERRORS = ("cannot get module eeprom", "operation not supported", "netlink error", "no such device", "not supported")

#: quantity -> (key prefixes of the current reading, per-lane) ; thresholds follow ``<name> <level> threshold``
_READINGS = {
    "rx_power": ("rcvr signal avg optical power", "receiver signal average optical power", "rx power"),
    "tx_power": ("transmit avg optical power", "laser output power", "tx power"),
    "bias": ("laser tx bias current", "laser bias current"),
}
_THRESHOLD_NAMES = {
    "laser rx power": "rx_power_dbm",
    "laser output power": "tx_power_dbm",
    "laser bias current": "bias_ma",
    "module temperature": "temperature_c",
    "module voltage": "voltage_v",
}
_IDENT_CODE = re.compile(r"^\s*0x([0-9a-fA-F]{1,2})\b")
_TH_RE = re.compile(r"^(.*?)\s+(high|low)\s+(alarm|warning)\s+threshold$", re.I)
_FLAG_RE = re.compile(r"^(.*?)\s+(high|low)\s+(alarm|warning)\s*(?:\(.*\))?$", re.I)


def power_dbm(value: Any) -> Optional[float]:
    """``0.9720 mW / -0.12 dBm`` -> -0.12; ``0.0000 mW / -inf dBm`` -> -40.0 (no light); ``N/A`` -> None."""
    v = clean(value)
    if not isinstance(v, str):
        return None
    m = _DBM.search(v)
    if m:
        return -40.0 if m.group(1).lower().endswith("inf") else to_float(m.group(1))
    mw = _MW.search(v)
    if mw:
        p = to_float(mw.group(1))
        return None if p is None else (-40.0 if p <= 0 else round(10 * math.log10(p), 2))
    return None


def _reading_kind(key: str) -> Optional[str]:
    low = key.lower()
    if "threshold" in low or "alarm" in low or "warning" in low:
        return None
    for kind, prefixes in _READINGS.items():
        if any(low.startswith(p) for p in prefixes):
            return kind
    return None


def _put_lane(lst: List[Optional[float]], lane: int, value: Optional[float]) -> None:
    while len(lst) < lane:
        lst.append(None)
    lst[lane - 1] = value


def _threshold(out: Dict[str, Any], key: str, value: str) -> bool:
    m = _TH_RE.match(key.strip())
    if not m:
        return False
    name = _THRESHOLD_NAMES.get(m.group(1).strip().lower())
    if name is None:
        return True
    if name.endswith("_dbm"):
        val = power_dbm(value)
    else:
        val = to_float(value)
    out["thresholds"].setdefault(name, {})["%s_%s" % (m.group(2).lower(), m.group(3).lower())] = val
    return True


def _flag(out: Dict[str, Any], key: str, value: str) -> bool:
    base = _LANE.sub("", key).strip()
    m = _FLAG_RE.match(base)
    if not m or value.strip().lower() not in ("on", "off"):
        return False
    name = _THRESHOLD_NAMES.get(m.group(1).strip().lower().replace("laser tx power", "laser output power"))
    if name is None:
        return True
    if value.strip().lower() == "on":
        lane = _LANE.search(key)
        out["flags_on"].append(
            {
                "quantity": name,
                "level": "%s_%s" % (m.group(2).lower(), m.group(3).lower()),
                "lane": int(lane.group(1)) if lane else None,
            }
        )
    return True


def parse_ethtool_module(text: str, source: Optional[str] = None) -> Dict[str, Any]:
    """Parse ``ethtool -m`` output into ``{identifier, transceiver_type, vendor, part_number, serial,
    temperature_c, voltage_v, bias_ma[], tx_power_dbm[], rx_power_dbm[], thresholds{quantity: {high_alarm,
    low_alarm, high_warning, low_warning}}, flags_on[], ddm, unreadable, unsupported, message}``.

    A port whose module cannot be read gives ``unsupported: True`` (not a fault). An output without the
    ``Identifier`` line is read from the fields it has. Raises ParseError for text with no module field at all
    (an error message, a garbled or empty file).
    """
    if not isinstance(text, str):
        raise ParseError("not text", PARSER, source)
    out: Dict[str, Any] = {
        "identifier": None,
        "transceiver_type": None,
        "vendor": None,
        "part_number": None,
        "serial": None,
        "temperature_c": None,
        "voltage_v": None,
        "bias_ma": [],
        "tx_power_dbm": [],
        "rx_power_dbm": [],
        "thresholds": {},
        "flags_on": [],
        "ddm": False,
        "unreadable": None,
        "unsupported": False,
        "message": None,
    }
    fields = known = 0
    for raw in text.splitlines():
        if len(raw) > MAX_LINE_CHARS:
            continue  # one broken line costs that line, not the module
        line = raw.strip()
        if not line:
            continue
        if any(e in line.lower() for e in _ERRORS) and ":" in line and fields == 0:
            out["unsupported"] = True
            out["message"] = line[:300]
            continue
        m = _KV.match(line)
        if not m:
            continue
        key, value = m.group(1).strip(), m.group(2).strip()
        fields += 1
        known += 1 if _field(out, key, value) else 0
    if out["unsupported"] and fields == 0:
        return out
    if known == 0:
        raise ParseError(
            "no module EEPROM field (Identifier, Transceiver type, DOM readings or thresholds): not ethtool -m output",
            PARSER,
            source,
        )
    out["ddm"] = bool(out["rx_power_dbm"] or out["temperature_c"] is not None)
    out["unreadable"] = garbage_reason(out)
    return out


def garbage_reason(mod: Dict[str, Any]) -> Optional[str]:
    """Why a module's EEPROM reads as garbage, or None: identifier 0xff (an all-ones read: no answer on the
    I2C bus), or thresholds printed for some quantity and none of them an ordered band (high alarm above low
    alarm): all zero (an empty A2h page faked by the driver) or all the same maximum. A module whose Rx/Tx
    power thresholds alone are zero (not programmed) while its temperature or voltage band is real is readable.
    """
    m = _IDENT_CODE.match(str(mod.get("identifier") or ""))
    if m and int(m.group(1), 16) == 0xFF:
        return "identifier 0xff"
    bands = [b for b in (mod.get("thresholds") or {}).values() if isinstance(b, dict)]
    if not bands:
        return None
    good = 0
    for b in bands:
        lo, hi = b.get("low_alarm"), b.get("high_alarm")
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and hi > lo:
            good += 1
    if good:
        return None
    values = sorted({v for b in bands for v in b.values() if isinstance(v, (int, float))})
    if not values:
        return None
    shown = ", ".join("%g" % v for v in values[:3]) + (", ..." if len(values) > 3 else "")
    return "no threshold band is ordered (high alarm above low alarm): thresholds read %s" % shown


_STATIC = {
    "identifier": "identifier",
    "vendor name": "vendor",
    "vendor pn": "part_number",
    "vendor sn": "serial",
}


def _field(out: Dict[str, Any], key: str, value: str) -> bool:
    """Read one ``Key : Value`` line into ``out``; True when the key is a module EEPROM field this parser knows."""
    low = key.lower()
    if low in _STATIC:
        out[_STATIC[low]] = clean(value)
        return True
    if low == "transceiver type":
        if out["transceiver_type"] is None:
            out["transceiver_type"] = clean(value)
        return True
    if _threshold(out, key, value) or _flag(out, key, value):
        return True
    if low == "module temperature":
        out["temperature_c"] = to_float(value)
        return True
    if low == "module voltage":
        out["voltage_v"] = to_float(value)
        return True
    kind = _reading_kind(key)
    if kind is None:
        return False
    lane_m = _LANE.search(key)
    lane = int(lane_m.group(1)) if lane_m else 1
    if not 1 <= lane <= 16:
        return True
    val = to_float(value) if kind == "bias" else power_dbm(value)
    target = {"rx_power": "rx_power_dbm", "tx_power": "tx_power_dbm", "bias": "bias_ma"}[kind]
    _put_lane(out[target], lane, val)
    return True


_STAT = re.compile(r"^\s*([A-Za-z0-9_.\[\]-]{1,128}):\s*([0-9]+)\s*$")


def parse_ethtool_stats(text: str, source: Optional[str] = None) -> Dict[str, int]:
    """``ethtool -S`` -> ``{counter: value}``. Raises ParseError when no counter line is found."""
    if not isinstance(text, str):
        raise ParseError("not text", "ethtool-S", source)
    out: Dict[str, int] = {}
    for i, raw in enumerate(text.splitlines()):
        if len(raw) > MAX_LINE_CHARS:
            raise ParseError("line over %d characters" % MAX_LINE_CHARS, "ethtool-S", source, i + 1)
        m = _STAT.match(raw)
        if m:
            v = to_int(m.group(2))
            if v is not None:
                out[m.group(1)] = v
    if not out:
        first = (text.strip().splitlines() or ["empty output"])[0][:200]
        raise ParseError("no counters found: %s" % first, "ethtool-S", source)
    return out
