# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""InfiniBand / RoCE text, pure: port state and rate vocabulary, GUIDs, counter ceilings, the HCA and port records
of docs/facts.md (``ib`` domain), ``ibstat`` / ``ibstatus`` parsers and counter deltas (docs/infiniband.md).
``_ib`` re-exports its public names.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    clean,
    parse_int,
    to_float,
    to_int,
)

DOMAIN = "ib"

#: Per-HCA attributes read from (and copied by capture_sysfs from) ``<hca>/``.
HCA_ATTRS = ("hca_type", "fw_ver", "board_id", "node_guid", "sys_image_guid", "node_type", "node_desc", "hw_rev")
#: Per-port attributes read from ``<hca>/ports/<n>/``.
PORT_ATTRS = ("state", "phys_state", "rate", "link_layer", "lid", "sm_lid", "sm_sl", "lid_mask_count", "cap_mask")
#: Per-port directories whose every (safely named, regular) file is a counter.
COUNTER_DIRS = ("counters", "hw_counters")
#: GID 0 holds the port GUID in its low 64 bits (what ibstat prints as "Port GUID").
GID0 = "gids/0"

#: Bit width of the PMA PortCounters that saturate (rdma-core libibmad/fields.c, kernel core/sysfs.c).
#: A counter at 2**bits - 1 stops counting: its value means "at least".
COUNTER_BITS = {
    "symbol_error": 16,
    "link_error_recovery": 8,
    "link_downed": 8,
    "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16,
    "port_rcv_switch_relay_errors": 16,
    "port_xmit_discards": 16,
    "port_xmit_constraint_errors": 8,
    "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 4,
    "VL15_dropped": 16,
    "port_xmit_wait": 32,
}

#: Limits that keep a strange tree from costing time or memory.
MAX_HCAS = 256
MAX_PORTS = 64
MAX_COUNTERS = 512
MAX_ATTR_BYTES = 4096

SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}$")
SAFE_COUNTER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")

# sysfs state / phys_state names (kernel drivers/infiniband/core/sysfs.c) and ibstat's (infiniband-diags ibstat.c).
_STATE_NAMES = {
    "nop": None,
    "???": None,
    "down": "DOWN",
    "init": "INIT",
    "initializing": "INIT",
    "armed": "ARMED",
    "active": "ACTIVE",
    "active_defer": "ACTIVE_DEFER",
}
_PHYS_NAMES = {
    "<unknown>": None,
    "no state change": None,
    "???": None,
    "sleep": "Sleep",
    "polling": "Polling",
    "disabled": "Disabled",
    "portconfigurationtraining": "PortConfigurationTraining",
    "linkup": "LinkUp",
    "linkerrorrecovery": "LinkErrorRecovery",
    "phy test": "PhyTest",
    "phytest": "PhyTest",
}

_RATE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(?:Gb/sec)?\s*(?:\(\s*(?:([0-9]+)X)?\s*([A-Za-z0-9]*)\s*\))?")
_CA_RE = re.compile(r"^\s*CA\s+'([^']*)'\s*$")
_PORT_RE = re.compile(r"^\s*Port\s+([0-9]+)\s*:\s*$")
_IBSTATUS_RE = re.compile(r"^\s*Infiniband device\s+'([^']*)'\s+port\s+([0-9]+)\s+status:\s*$")
PORT_NUM = re.compile(r"[0-9]{1,5}\Z")
_HEX_GUID = re.compile(r"^(?:0x)?([0-9a-fA-F]{1,16})$")
_COLON_GUID = re.compile(r"^([0-9a-fA-F]{1,4}):([0-9a-fA-F]{1,4}):([0-9a-fA-F]{1,4}):([0-9a-fA-F]{1,4})$")

_IBSTAT_HCA_KEYS = {
    "ca type": "ca_type",
    "number of ports": "num_ports",
    "firmware version": "fw_version",
    "hardware version": "hw_version",
    "node guid": "node_guid",
    "system image guid": "system_image_guid",
}
_IBSTAT_PORT_KEYS = {
    "state": "state",
    "physical state": "phys_state",
    "rate": "rate",
    "base lid": "lid",
    "lmc": "lmc",
    "sm lid": "sm_lid",
    "capability mask": "cap_mask",
    "port guid": "port_guid",
    "link layer": "link_layer",
}
_IBSTATUS_KEYS = {
    "default gid": "gid0",
    "base lid": "lid",
    "sm lid": "sm_lid",
    "state": "state",
    "phys state": "phys_state",
    "rate": "rate",
    "link_layer": "link_layer",
}


# ---------------------------------------------------------------------------------------------------------------
# Value normalisation (pure)
# ---------------------------------------------------------------------------------------------------------------


def natural_key(name: str) -> List[Any]:
    """Sort ``mlx5_2`` before ``mlx5_10`` (ASCII digit runs compare by value, whatever their length)."""
    out: List[Any] = []
    for t in re.split(r"([0-9]+)", name):
        if not t:
            continue
        if "0" <= t[0] <= "9":
            v = t.lstrip("0")
            out.append((0, len(v), v))
        else:
            out.append((1, 0, t))
    return out


def _strip_code(value: Optional[str]) -> Optional[str]:
    """``"4: ACTIVE"`` -> ``"ACTIVE"``; ``"Active"`` -> ``"Active"``. (Not clean(): "Disabled" is a state here.)"""
    if not isinstance(value, str) or not value.strip():
        return None
    v = value.strip()
    m = re.match(r"^[0-9]+\s*:\s*(.*)$", v)
    return m.group(1).strip() if m else v


def _norm_word(value: Optional[str], names: Dict[str, str], unknown: Callable[[str], str]) -> Optional[str]:
    """``value`` without its numeric code, as spelled in ``names``; a word ``names`` lacks goes through ``unknown``."""
    v = _strip_code(value)
    if v is None:
        return None
    key = v.lower()
    return names[key] if key in names else unknown(v)


def norm_state(value: Optional[str]) -> Optional[str]:
    """Logical port state from sysfs (``4: ACTIVE``) or ibstat (``Active``) -> ``ACTIVE``."""
    return _norm_word(value, _STATE_NAMES, str.upper)


def norm_phys_state(value: Optional[str]) -> Optional[str]:
    """Physical state from sysfs (``5: LinkUp``, ``7: Phy Test``) or ibstat (``LinkUp``, ``PhyTest``)."""
    return _norm_word(value, _PHYS_NAMES, str)


def parse_rate(value: Optional[str]) -> Dict[str, Any]:
    """``"400 Gb/sec (4X NDR)"`` (sysfs, ibstatus) or ``"400"`` / ``"40 (FDR10)"`` (ibstat).

    Returns ``{rate_gbps, rate_label, width, speed}``; unparsable values keep only the label.
    """
    label = clean(value)
    out: Dict[str, Any] = {"rate_gbps": None, "rate_label": label, "width": None, "speed": None}
    if label is None:
        return out
    m = _RATE_RE.match(label)
    if not m:
        return out
    out["rate_gbps"] = to_float(m.group(1))
    if m.group(2):
        out["width"] = f"{m.group(2)}X"
    if m.group(3):
        out["speed"] = m.group(3).upper()
    return out


def norm_guid(value: Optional[str]) -> Optional[str]:
    """``0x946dae0300cde72c`` (ibstat) or ``946d:ae03:00cd:e72c`` (sysfs) -> ``0x946dae0300cde72c``."""
    v = clean(value)
    if v is None:
        return None
    m = _COLON_GUID.match(v)
    if m:
        return "0x" + "".join(g.zfill(4) for g in m.groups()).lower()
    m = _HEX_GUID.match(v)
    if m:
        return "0x" + m.group(1).zfill(16).lower()
    return None


def guid_from_gid(value: Optional[str]) -> Optional[str]:
    """Port GUID = the low 64 bits of GID 0 (``fe80:0000:0000:0000:0015:5dff:fd34:11eb``); None if unset."""
    v = clean(value)
    if v is None:
        return None
    groups = v.split(":")
    if len(groups) != 8 or not all(re.match(r"^[0-9a-fA-F]{1,4}$", g) for g in groups):
        return None
    guid = "".join(g.zfill(4) for g in groups[4:]).lower()
    if guid == "0" * 16:
        return None
    return "0x" + guid


def saturated(counters: Dict[str, Any]) -> List[str]:
    """Names of counters stuck at their ceiling (8-bit 255, 4-bit 15, ...): the value means "at least"."""
    out = []
    for name in sorted(counters):
        bits = COUNTER_BITS.get(name)
        val = counters[name]
        if bits is not None and isinstance(val, int) and val >= (1 << bits) - 1:
            out.append(name)
    return out


def port_record(port: int, raw: Dict[str, Any], counters: Optional[Dict[str, int]] = None) -> Dict[str, Any]:
    rec: Dict[str, Any] = {
        "port": port,
        "state": norm_state(raw.get("state")),
        "phys_state": norm_phys_state(raw.get("phys_state")),
    }
    rec.update(parse_rate(raw.get("rate")))
    rec["link_layer"] = clean(raw.get("link_layer"))
    rec["lid"] = to_int(raw.get("lid"))
    rec["sm_lid"] = to_int(raw.get("sm_lid"))
    guid = norm_guid(raw.get("port_guid")) if raw.get("port_guid") is not None else guid_from_gid(raw.get("gid0"))
    rec["port_guid"] = guid
    rec["counters"] = dict(counters or {})
    rec["saturated"] = saturated(rec["counters"])
    return rec


def hca_record(name: str, raw: Dict[str, Any], ports: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {
        "name": name,
        "ca_type": clean(raw.get("ca_type")),
        "board_id": clean(raw.get("board_id")),
        "fw_version": clean(raw.get("fw_version")),
        "node_guid": norm_guid(raw.get("node_guid")),
        "serial": None,
        "ports": sorted(ports, key=lambda p: p["port"]),
    }


# ---------------------------------------------------------------------------------------------------------------
# ibstat / ibstatus text (pure)
# ---------------------------------------------------------------------------------------------------------------


def find_ibpanic(text: str) -> Optional[Tuple[int, str]]:
    """``(line, message)`` of the first ``ibpanic:`` line (ibstat died, e.g. a device vanished), else None."""
    for lineno, line in enumerate(text.splitlines(), 1):
        idx = line.find("ibpanic:")
        if idx >= 0:
            return lineno, line[idx:].strip()[:500]
    return None


def parse_ibstat(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """Parse ``ibstat`` output (TAB- or space-indented) into HCA records.

    ``ibpanic:`` and other unrecognised lines are skipped (see :func:`find_ibpanic`). Raises ParseError when
    non-empty text holds no ``CA '...'`` block, or when the last block is cut short (``partial`` = the HCAs).
    A malformed port (``Port 99999999999:``) is a ``parse`` entry in ``errors``, its lines are not given to
    another port, and the rest is kept; without an ``errors`` list it raises ParseError with ``partial``.
    """
    rec = Records("ibstat", source, DOMAIN, errors)
    hcas: List[Tuple[str, Dict[str, Any], Dict[int, Dict[str, Any]]]] = []
    cur_hca: Optional[Tuple[str, Dict[str, Any], Dict[int, Dict[str, Any]]]] = None
    cur_port: Optional[Dict[str, Any]] = None
    lineno = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _CA_RE.match(line)
        if m:
            cur_hca = (m.group(1), {"_line": lineno}, {})
            hcas.append(cur_hca)
            cur_port = None
            continue
        if cur_hca is None:
            continue
        m = _PORT_RE.match(line)
        if m:
            cur_port = None
            with rec.at(lineno):
                pn = parse_int(m.group(1))
                cur_port = cur_hca[2].setdefault(pn, {"_line": lineno})
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        k = key.strip().lower()
        if k in _IBSTAT_HCA_KEYS:
            cur_hca[1][_IBSTAT_HCA_KEYS[k]] = value.strip()
        elif k in _IBSTAT_PORT_KEYS and cur_port is not None:
            cur_port[_IBSTAT_PORT_KEYS[k]] = value.strip()
    if not hcas:
        if any(line.strip() and "ibpanic:" not in line for line in text.splitlines()):
            raise ParseError("no CA block found", "ibstat", source, None)
        return rec.finish([])
    out = []
    for name, raw, ports in sorted(hcas, key=lambda h: natural_key(h[0])):
        recs = []
        for pn, praw in ports.items():
            with rec.at(praw.get("_line")):
                recs.append(port_record(pn, praw))
        with rec.at(raw.get("_line")):
            out.append(hca_record(name, raw, recs))
    name, raw, ports = hcas[-1]  # the last one printed is the one a truncation cuts
    announced = to_int(raw.get("num_ports"))
    last_port = ports[max(ports)] if ports else None
    if (announced is not None and len(ports) < announced) or (last_port is not None and "link_layer" not in last_port):
        raise ParseError(f"output ends inside CA '{name}' (truncated)", "ibstat", source, lineno or None, partial=out)
    return rec.finish(out)


def parse_ibstatus(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """Parse ``ibstatus`` output (one block per port, ``Infiniband device 'mlx5_0' port 1 status:``).

    A malformed port block is a ``parse`` entry in ``errors`` and the other ports are kept; without an
    ``errors`` list it raises ParseError with the HCAs as ``partial``.
    """
    rec = Records("ibstatus", source, DOMAIN, errors)
    blocks: Dict[str, Dict[int, Dict[str, Any]]] = {}
    cur: Optional[Dict[str, Any]] = None
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _IBSTATUS_RE.match(line)
        if m:
            cur = None
            with rec.at(lineno):
                cur = blocks.setdefault(m.group(1), {}).setdefault(parse_int(m.group(2)), {"_line": lineno})
            continue
        if cur is None:
            continue
        key, sep, value = line.partition(":")
        k = key.strip().lower()
        if sep and k in _IBSTATUS_KEYS:
            v = value.strip()
            cur[_IBSTATUS_KEYS[k]] = None if v.lower() == "unknown" else v
    if not blocks and text.strip():
        raise ParseError("no 'Infiniband device ... status:' block found", "ibstatus", source, None)
    out = []
    for name, ports in sorted(blocks.items(), key=lambda kv: natural_key(kv[0])):
        recs = []
        for pn, praw in ports.items():
            with rec.at(praw.get("_line")):
                recs.append(port_record(pn, praw))
        out.append(hca_record(name, {}, recs))
    return rec.finish(out)


# ---------------------------------------------------------------------------------------------------------------
# Counter deltas between two readings (docs/infiniband.md)
# ---------------------------------------------------------------------------------------------------------------


def compare(previous: Optional[Dict[str, Any]], current: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Counter deltas and rates per port between two ``ib`` results (docs/infiniband.md).

    Returns ``{"mlx5_0/1": {"baseline": None | reason, "interval_s", "deltas", "rates_per_s", "saturated"}}``.
    A port starts a new baseline (no deltas, no finding) when there is no earlier reading of it, the boot id or
    the HCA firmware changed, the interval is not positive, or any counter went down (cleared by someone).
    A counter at its ceiling now has delta None and is listed in ``saturated`` ("saturated, delta unknown").
    """
    prev = previous if isinstance(previous, dict) else {}
    t0, t1 = prev.get("collected_at"), current.get("collected_at")
    interval = t1 - t0 if isinstance(t0, (int, float)) and isinstance(t1, (int, float)) else None
    b0, b1 = prev.get("boot_id"), current.get("boot_id")
    rebooted = bool(b0 and b1 and b0 != b1)
    old_hcas = {h.get("name"): h for h in prev.get("hcas") or [] if isinstance(h, dict)}
    out: Dict[str, Dict[str, Any]] = {}
    for hca in current.get("hcas") or []:
        old_hca = old_hcas.get(hca.get("name"))
        old_ports = {p.get("port"): p for p in (old_hca or {}).get("ports") or [] if isinstance(p, dict)}
        for port in hca.get("ports") or []:
            key = "{}/{}".format(hca.get("name"), port.get("port"))
            rec: Dict[str, Any] = {
                "baseline": None,
                "interval_s": interval,
                "deltas": {},
                "rates_per_s": {},
                "saturated": list(port.get("saturated") or []),
            }
            out[key] = rec
            old = old_ports.get(port.get("port"))
            cur_c = port.get("counters") or {}
            old_c = (old or {}).get("counters") or {}
            if old is None:
                rec["baseline"] = "no earlier reading"
            elif rebooted:
                rec["baseline"] = "new boot id"
            elif old_hca and old_hca.get("fw_version") != hca.get("fw_version"):
                rec["baseline"] = "HCA firmware changed"
            elif interval is None or interval <= 0:
                rec["baseline"] = "no usable interval between the readings"
            elif any(isinstance(old_c.get(n), int) and isinstance(v, int) and v < old_c[n] for n, v in cur_c.items()):
                rec["baseline"] = "counters went down (cleared)"
            if rec["baseline"]:
                continue
            for name, val in cur_c.items():
                before = old_c.get(name)
                if not isinstance(val, int) or not isinstance(before, int):
                    continue
                if name in rec["saturated"]:
                    rec["deltas"][name] = None
                    continue
                rec["deltas"][name] = val - before
                rec["rates_per_s"][name] = (val - before) / interval
    return out
