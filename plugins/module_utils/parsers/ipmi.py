# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for ipmitool output: sdr / sdr elist / sensor, sel list / elist, sel info, mc info, fru print.

Every parser takes text and returns plain data (docs/facts.md, ``bmc`` domain). Lines that are not
table rows (``Unable to send command: ...``, blank lines, headers) are skipped. Formats:
/work/shared/reference/formats.md section 7 (ipmitool 1.8.19 lib/ipmi_sdr.c, ipmi_sensor.c, ipmi_sel.c).

The sensor listings live in ``_ipmi_sdr``, the event log in ``_ipmi_sel``; this module holds the key/value
listings and re-exports the others' public names, so callers import every ipmitool parser from here.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    clean,
    parse_int,
    to_int,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.ipmi_sdr import (
    DOMAIN,
    SEL_SENSOR_TYPES,
    STATUS_ORDER,
    classify,
    parse_sdr,
    state_severity,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.ipmi_sel import (
    parse_sel,
    sel_time,
    split_sel_sensor,
)

#: the public names, some of them re-exported from the modules this one was split into
__all__ = [
    "DOMAIN",
    "IANA_VENDORS",
    "SEL_SENSOR_TYPES",
    "STATUS_ORDER",
    "classify",
    "looks_like",
    "parse_fru",
    "parse_mc_info",
    "parse_sdr",
    "parse_sel",
    "parse_sel_info",
    "sel_time",
    "split_sel_sensor",
    "state_severity",
]

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
