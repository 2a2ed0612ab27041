# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``mlxlink -d <dev> -m -c`` text (NVIDIA MFT / mstflint ``mstlink``): transceiver module and physical-layer facts.

Layout (mstflint ``mlxlink_commander.cpp``, docs/capture.md): sections ``Operational Info``, ``Supported Info``,
``Troubleshooting Info``, ``Tool Information``, ``Module Info`` (``-m``) and ``Physical Counters and BER Info``
(``-c``), each a title, a dashed underline and ``Key<padding>: Value`` lines. Errors and warnings (``-E- ...``,
``-W- ...``) go to stderr but are often captured interleaved. Terminal runs add ANSI colour codes.

The DDM lines carry the module's thresholds: ``Rx Power Current [dBm] : 1.886,1.989,2.281,1.976 [-10.41..6]`` is one
value per lane and ``[low..high]`` (the PDDR module-info page's ``rx_power_low_th``/``rx_power_high_th``: the
module's alarm thresholds, e.g. 3.3 V +-10 % for the voltage). Sentinels are not readings: ``N/A`` (no DDM, passive
copper), ``0 [0..0]`` (DDM page empty), BER ``15E-255`` (no error seen: BER ~ 0), Rx power ``-40`` dBm (0 mW).

Pure: text in, plain data out. Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    MAX_LINE_CHARS,
    ParseError,
    clean,
    to_float,
    to_int,
)

PARSER = "mlxlink"
#: The Rx/Tx power a module reports for "no light" (0 mW): a floor, not a measurement.
NO_LIGHT_DBM = -40.0
#: BER exponents at or below this are mlxlink's "no error counted" (``15E-255``), not a rate.
ZERO_BER_EXP = -200

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_KV = re.compile(r"^\s*([A-Za-z][^:]{0,80}?)\s*:\s?(.*)$")
_DASHES = re.compile(r"^\s*-{3,}\s*$")
_RANGE = re.compile(r"^(.*?)\s*\[\s*([-+0-9.eE]+)\s*\.\.\s*([-+0-9.eE]+)\s*\]\s*$")
_BER = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*[eE]\s*([-+]?[0-9]+)\s*$")
_TOOL_MSG = re.compile(r"^\s*-([EW])-\s*(.*)$")
#: ``0x00000075 (HDR,EDR,FDR,QDR,SDR)``: the speed mask and its names (mstflint ``supportedInfoPage``)
_SPEED_LIST = re.compile(r"^\s*(?:0x[0-9a-fA-F]+)?\s*\(([^()]*)\)\s*$")

SECTIONS = (
    "Operational Info",
    "Supported Info",
    "Troubleshooting Info",
    "Tool Information",
    "Module Info",
    "Physical Counters and BER Info",
)


def _lanes(text: Optional[str]) -> List[Optional[float]]:
    if text is None:
        return []
    return [to_float(x) for x in text.split(",") if x.strip() != ""]


def value_range(value: Any) -> Tuple[Optional[str], Optional[Tuple[float, float]]]:
    """``"54 [-5..75]"`` -> ``("54", (-5.0, 75.0))``; a value without a range -> ``(value, None)``.

    ``[0..0]`` (an empty DDM threshold page) is no range.
    """
    v = clean(value)
    if v is None:
        return None, None
    m = _RANGE.match(str(v))
    if not m:
        return str(v), None
    lo, hi = to_float(m.group(2)), to_float(m.group(3))
    rng = (lo, hi) if lo is not None and hi is not None and lo < hi else None
    return (clean(m.group(1)), rng)


def parse_ber(value: Any) -> Dict[str, Any]:
    """``"1E-7"`` -> ``{"value": 1e-07, "zero": False}``; ``15E-255`` -> ``{"value": 0.0, "zero": True}``;
    ``N/A`` or garbage -> ``{"value": None, "zero": False}``."""
    v = clean(value)
    m = _BER.match(str(v)) if isinstance(v, str) else None
    if not m:
        return {"value": None, "zero": False}
    exp = int(m.group(2))
    if exp <= ZERO_BER_EXP:
        return {"value": 0.0, "zero": True}
    try:
        return {"value": float(m.group(1)) * (10.0**exp), "zero": False}
    except OverflowError:
        return {"value": None, "zero": False}


def speed_list(value: Any) -> Optional[List[str]]:
    """``0x00000075 (HDR,EDR,FDR,QDR,SDR)`` -> ``["HDR", "EDR", "FDR", "QDR", "SDR"]``; ``N/A`` or no list -> None.

    ``Enabled Link Speed`` is what the port's protocol admin mask enables, ``Supported Cable Speed`` what the
    cable's EEPROM declares (mstflint ``supportedInfoPage``: ``core_to_phy_link_proto_enabled`` and
    ``cable_link_speed_cap``)."""
    v = clean(value)
    m = _SPEED_LIST.match(str(v)) if isinstance(v, str) else None
    if not m:
        return None
    names = [x.strip() for x in m.group(1).split(",") if x.strip()]
    return names or None


#: InfiniBand speed names -> Gb/s per lane (IBTA signalling rates; mlxlink prints ``IB-<name>`` when active).
IB_LANE_GBPS = {
    "SDR": 2.5,
    "DDR": 5.0,
    "QDR": 10.0,
    "FDR10": 10.3125,
    "FDR": 14.0625,
    "EDR": 25.78125,
    "HDR": 53.125,
    "NDR": 106.25,
    "XDR": 212.5,
}
_ETH_SPEED = re.compile(r"^(?:BaseTx?|BaseT)?\s*([0-9]+(?:\.[0-9]+)?)\s*([GM])", re.I)


def speed_gbps(name: Any) -> Optional[float]:
    """One speed name as mlxlink prints it -> a comparable rate: InfiniBand (``IB-HDR``, ``HDR``) in Gb/s per lane,
    Ethernet (``25GbE``, ``100G_2X``, ``100M``) in Gb/s per port; None for anything else (``N/A``, ``-``)."""
    v = clean(name)
    if not isinstance(v, str):
        return None
    v = v.strip()
    ib = IB_LANE_GBPS.get(v[3:].upper() if v.upper().startswith("IB-") else v.upper())
    if ib is not None:
        return ib
    m = _ETH_SPEED.match(v)
    if not m:
        return None
    val = float(m.group(1))
    return val / 1000.0 if m.group(2).upper() == "M" else val


def _split_sections(text: str, source: Optional[str]) -> Tuple[Dict[str, Dict[str, str]], List[str], List[str]]:
    sections: Dict[str, Dict[str, str]] = {}
    messages: List[str] = []
    unparsed: List[str] = []
    current: Optional[str] = None
    lines = _ANSI.sub("", text).splitlines()
    for i, raw in enumerate(lines):
        if len(raw) > MAX_LINE_CHARS:  # one broken line costs that line, not the file
            unparsed.append("line %d over %d characters: skipped" % (i + 1, MAX_LINE_CHARS))
            continue
        line = raw.rstrip()
        if not line.strip() or _DASHES.match(line):
            continue
        msg = _TOOL_MSG.match(line)
        if msg:
            messages.append(("%s: %s" % ("error" if msg.group(1) == "E" else "warning", msg.group(2).strip()))[:300])
            continue
        title = line.strip()
        if title in SECTIONS and i + 1 < len(lines) and _DASHES.match(lines[i + 1]):
            current = title
            sections.setdefault(current, {})
            continue
        kv = _KV.match(line)
        if kv and current is not None:
            sections[current][kv.group(1).strip()] = kv.group(2).strip()
        elif "not supported" in line.lower() or "unable" in line.lower() or "error" in line.lower():
            messages.append(line.strip()[:300])
        else:
            unparsed.append(line.strip()[:120])
    return sections, messages, unparsed


def _ddm(mod: Dict[str, str], key: str) -> Tuple[List[Optional[float]], Optional[Tuple[float, float]]]:
    raw, rng = value_range(mod.get(key))
    return _lanes(raw), rng


def _module(mod: Dict[str, str]) -> Optional[Dict[str, Any]]:
    if not mod:
        return None
    temp, temp_rng = _ddm(mod, "Temperature [C]")
    volt, volt_rng = _ddm(mod, "Voltage [mV]")
    bias, bias_rng = _ddm(mod, "Bias Current [mA]")
    rx, rx_rng = _ddm(mod, "Rx Power Current [dBm]")
    tx, tx_rng = _ddm(mod, "Tx Power Current [dBm]")
    ddm_flag = clean(mod.get("Digital Diagnostic Monitoring"))
    # DDM readings mean something only with a threshold page: "0 [0..0]" and "N/A" are "not reported"
    ddm = bool(rx_rng or temp_rng) and (ddm_flag is None or ddm_flag.lower() != "no")
    return {
        "identifier": clean(mod.get("Identifier")),
        "compliance": clean(mod.get("Compliance")),
        "cable_type": clean(mod.get("Cable Type")),
        "cable_technology": clean(mod.get("Cable Technology")),
        "vendor": clean(mod.get("Vendor Name")),
        "part_number": clean(mod.get("Vendor Part Number")),
        "serial": clean(mod.get("Vendor Serial Number")),
        "revision": clean(mod.get("Rev")),
        "fw_version": clean(mod.get("FW Version")),
        "ddm": ddm,
        "temperature_c": temp[0] if temp and temp_rng else None,
        "voltage_mv": volt[0] if volt and volt_rng else None,
        "bias_ma": bias if bias_rng else [],
        "rx_power_dbm": rx if rx_rng else [],
        "tx_power_dbm": tx if tx_rng else [],
        # [low..high] of the module's DDM page: its alarm thresholds (no separate warning band is printed)
        "thresholds": {
            "temperature_c": _th(temp_rng),
            "voltage_mv": _th(volt_rng),
            "bias_ma": _th(bias_rng),
            "rx_power_dbm": _th(rx_rng),
            "tx_power_dbm": _th(tx_rng),
        },
        "rx_los": [to_int(x) for x in (clean(mod.get("Rx LOS [per lane]")) or "").split(",") if to_int(x) is not None],
        "module_state": clean(mod.get("Module State")),
    }


def _th(rng: Optional[Tuple[float, float]]) -> Optional[Dict[str, Optional[float]]]:
    if rng is None:
        return None
    return {"low_alarm": rng[0], "high_alarm": rng[1], "low_warning": None, "high_warning": None}


def _phy(cnt: Dict[str, str]) -> Optional[Dict[str, Any]]:
    if not cnt:
        return None
    raw_lanes = [to_int(x) for x in (clean(cnt.get("Raw Physical Errors Per Lane")) or "").split(",")]
    raw_lanes = [x for x in raw_lanes if x is not None]
    eff = parse_ber(cnt.get("Effective Physical BER"))
    raw = parse_ber(cnt.get("Raw Physical BER"))
    sym = parse_ber(cnt.get("Symbol BER"))
    return {
        "time_since_clear_min": to_float(cnt.get("Time Since Last Clear [Min]")),
        "effective_errors": to_int(cnt.get("Effective Physical Errors")),
        "effective_ber": eff["value"],
        "raw_ber": raw["value"],
        "symbol_errors": to_int(cnt.get("Symbol Errors")),
        "symbol_ber": sym["value"],
        "raw_errors_per_lane": raw_lanes,
        # UFM telemetry: with FEC on, the raw (pre-FEC) errors are the corrected ones; the effective errors the
        # ones FEC could not correct
        "fec_corrected": sum(raw_lanes) if raw_lanes else None,
        "fec_uncorrectable": to_int(cnt.get("Effective Physical Errors")),
        "link_down": to_int(cnt.get("Link Down Counter")),
        "link_error_recovery": to_int(cnt.get("Link Error Recovery Counter")),
    }


def parse_mlxlink(text: str, source: Optional[str] = None) -> Dict[str, Any]:
    """Parse ``mlxlink -m -c`` output into ``{state, physical_state, speed, width, fec, recommendation,
    status_opcode, group_opcode, enabled_speeds, cable_speeds, fw_version, module, phy, messages, unsupported}``.

    ``module``/``phy`` are None when their section is absent (a command without ``-m``/``-c``, or one that
    failed). ``unsupported`` is True when the tool said a query is not supported (not a fault). Raises
    ParseError when the text holds no mlxlink section at all (an error message or a truncated file).
    """
    if not isinstance(text, str):
        raise ParseError("not text", PARSER, source)
    sections, messages, _unparsed = _split_sections(text, source)
    if not sections:
        detail = messages[0] if messages else (text.strip().splitlines() or ["empty output"])[0][:200]
        raise ParseError("no mlxlink section found: %s" % detail, PARSER, source)
    op = sections.get("Operational Info", {})
    sup = sections.get("Supported Info", {})
    ts = sections.get("Troubleshooting Info", {})
    tool = sections.get("Tool Information", {})
    return {
        "state": clean(op.get("State")),
        "physical_state": clean(op.get("Physical state")),
        "speed": clean(op.get("Speed")),
        "width": clean(op.get("Width")),
        "fec": clean(op.get("FEC")),
        "recommendation": (clean(ts.get("Recommendation")) or "").rstrip(".") or None,
        "status_opcode": to_int(ts.get("Status Opcode")),
        "group_opcode": clean(ts.get("Group Opcode")),
        # "Enabled Link Speed (Ext.)" on Ethernet ports with extended protocol masks
        "enabled_speeds": speed_list(sup.get("Enabled Link Speed") or sup.get("Enabled Link Speed (Ext.)")),
        "cable_speeds": speed_list(sup.get("Supported Cable Speed") or sup.get("Supported Cable Speed (Ext.)")),
        "fw_version": clean(tool.get("Firmware Version")),
        "module": _module(sections.get("Module Info", {})),
        "phy": _phy(sections.get("Physical Counters and BER Info", {})),
        "messages": messages[:20],
        "unsupported": any("not supported" in m.lower() for m in messages),
    }
