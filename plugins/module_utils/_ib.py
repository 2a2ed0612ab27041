# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""InfiniBand / RoCE facts: sysfs, ``ibstat`` and ``ibstatus`` parsers and the ``ib`` domain collector.

Sources, best first: sysfs (``/sys/class/infiniband/<hca>/...``: the only source with error counters),
``ibstat`` text, ``ibstatus`` text. A capture directory may hold an allowlisted copy of the sysfs subtree
(``sys/class/infiniband/...``, written by :func:`capture_sysfs`) and/or ``ibstat.txt``.

Real sysfs is not a plain tree: ``/sys/class/infiniband/mlx5_0`` is a link into ``/sys/devices/...`` whose
``device`` and ``subsystem`` links lead back up (a loop for any recursive walk). This module never walks:
it lists the class directory, then reads fixed attribute paths below each HCA (``ports/<n>/counters/*``
is the deepest), opens every file non-blocking and reads only regular files. Attributes that cannot be
read (some ``hw_counters`` answer ``EINVAL``) are skipped.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import stat
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils import _capture
from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    UnsafeFileError,
    clean,
    decode,
    ensure_private_dir,
    error_record,
    internal_error,
    list_capture_dir,
    parse_int,
    read_capture_bytes,
    to_float,
    to_int,
    write_private_atomic,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, run_in_child, which

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

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}$")
_SAFE_COUNTER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")

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
_PORT_NUM = re.compile(r"[0-9]{1,5}\Z")
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


def norm_state(value: Optional[str]) -> Optional[str]:
    """Logical port state from sysfs (``4: ACTIVE``) or ibstat (``Active``) -> ``ACTIVE``."""
    v = _strip_code(value)
    if v is None:
        return None
    key = v.lower()
    if key in _STATE_NAMES:
        return _STATE_NAMES[key]
    return v.upper()


def norm_phys_state(value: Optional[str]) -> Optional[str]:
    """Physical state from sysfs (``5: LinkUp``, ``7: Phy Test``) or ibstat (``LinkUp``, ``PhyTest``)."""
    v = _strip_code(value)
    if v is None:
        return None
    key = v.lower()
    if key in _PHYS_NAMES:
        return _PHYS_NAMES[key]
    return v


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


def _port_record(port: int, raw: Dict[str, Any], counters: Optional[Dict[str, int]] = None) -> Dict[str, Any]:
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


def _hca_record(name: str, raw: Dict[str, Any], ports: List[Dict[str, Any]]) -> Dict[str, Any]:
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
# sysfs: safe snapshot, flat listing, HCAs from a snapshot
# ---------------------------------------------------------------------------------------------------------------


_OPEN_FLAGS = os.O_RDONLY
for _flag in ("O_NONBLOCK", "O_CLOEXEC", "O_NOCTTY", "O_NOFOLLOW"):
    _OPEN_FLAGS |= getattr(os, _flag, 0)


def read_attr(path: str) -> Optional[str]:
    """One sysfs attribute, stripped; None when absent, not a regular file (FIFO, dir, device) or unreadable.

    Opened with O_NONBLOCK (a FIFO planted in a tree cannot block us) and O_NOFOLLOW (sysfs attributes are never
    links: a link to a device is not opened at all); at most MAX_ATTR_BYTES are read.
    """
    flags = _OPEN_FLAGS
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_ATTR_BYTES)
    except OSError:  # EINVAL (some hw_counters), EIO (firmware), EACCES ...
        return None
    finally:
        os.close(fd)
    return decode(data).strip()


def _listdir(path: str) -> Optional[List[str]]:
    try:
        return os.listdir(path)
    except OSError:
        return None


def _capture_attr_reader(errors: List[Dict[str, Any]]) -> Callable[[str], Optional[str]]:
    """read_attr for a capture tree: the capture reader (no link, regular files only, capped), and a refused
    entry is an error naming it rather than a silent gap."""

    def read(path: str) -> Optional[str]:
        try:
            data = read_capture_bytes(path, MAX_ATTR_BYTES, "sysfs")
        except UnsafeFileError as exc:
            errors.append(exc.to_error(DOMAIN))
            return None
        return None if data is None else decode(data).strip()

    return read


def snapshot_sysfs(class_dir: str, confine: bool = False) -> Tuple[Dict[str, str], List[Dict[str, Any]]]:
    """Read the allowlisted attributes below ``class_dir`` (``.../sys/class/infiniband``).

    Returns ``({"mlx5_0/fw_ver": "28.41.1000", "mlx5_0/ports/1/counters/link_downed": "255", ...}, errors)``.
    Never walks: only the class directory, ``<hca>/ports``, ``<hca>/ports/<n>/{counters,hw_counters}`` are
    listed; entries are filtered by name; HCAs reached twice (two links to one device) are read once.
    ``confine`` (a capture tree, not the live sysfs): no directory or file that is a link is entered or read
    (the walk never leaves the capture), and each refused entry is an ``unreadable`` error naming it.
    """
    snap: Dict[str, str] = {}
    errors: List[Dict[str, Any]] = []
    listdir = list_capture_dir if confine else _listdir
    read = _capture_attr_reader(errors) if confine else read_attr
    names = listdir(class_dir)
    if names is None:
        if os.path.lexists(class_dir):
            errors.append(error_record(DOMAIN, "unreadable", f"cannot list {class_dir}", source="sysfs"))
        return snap, errors
    seen = set()
    for hca in sorted((n for n in names if _SAFE_NAME.match(n)), key=natural_key)[:MAX_HCAS]:
        hdir = os.path.join(class_dir, hca)
        try:
            real = os.path.realpath(hdir)
        except (OSError, RuntimeError):  # pragma: no cover - realpath is non-strict
            real = hdir
        if real in seen:
            continue
        seen.add(real)
        if not os.path.isdir(hdir) or (confine and os.path.islink(hdir)):  # a dangling or looping link, a file
            errors.append(error_record(DOMAIN, "unreadable", f"{hdir} is not a readable HCA directory", "sysfs"))
            continue
        found = False
        present = set(listdir(hdir) or ())  # list first: no failed open() per absent attribute
        for attr in HCA_ATTRS:
            v = read(os.path.join(hdir, attr)) if attr in present else None
            if v is not None:
                snap[f"{hca}/{attr}"] = v
                found = True
        ports = listdir(os.path.join(hdir, "ports")) if "ports" in present else None
        for pn in sorted((p for p in ports or () if p.isdigit() and len(p) < 6), key=int)[:MAX_PORTS]:
            pdir = os.path.join(hdir, "ports", pn)
            prefix = f"{hca}/ports/{pn}/"
            in_port = set(listdir(pdir) or ())
            for attr in PORT_ATTRS + (GID0,):
                v = read(os.path.join(pdir, attr)) if attr.split("/", maxsplit=1)[0] in in_port else None
                if v is not None:
                    snap[prefix + attr] = v
                    found = True
            for cdir in COUNTER_DIRS:
                entries = (listdir(os.path.join(pdir, cdir)) if cdir in in_port else None) or []
                for cname in sorted(e for e in entries if _SAFE_COUNTER.match(e))[:MAX_COUNTERS]:
                    v = read(os.path.join(pdir, cdir, cname))
                    if v is not None:
                        snap[f"{prefix}{cdir}/{cname}"] = v
        if not found:
            # keep the HCA visible even when nothing below it was readable
            snap.setdefault(f"{hca}/ports", "")
    return snap, errors


def parse_sysfs_flat(text: str, source: Optional[str] = None) -> Dict[str, str]:
    """A flattened sysfs listing (``grep -r . | sort`` in the class dir: ``./mlx5_0/fw_ver:28.41.1000``).

    Returns the same mapping as :func:`snapshot_sysfs`. Lines that are not ``path:value`` are skipped;
    raises ParseError when no line is.
    """
    snap: Dict[str, str] = {}
    for line in text.splitlines():
        path, sep, value = line.partition(":")
        if not sep:
            continue
        path = path.strip()
        if path.startswith("./"):
            path = path[2:]
        parts = path.split("/")
        if not parts or any(not p or p in (".", "..") for p in parts) or not _SAFE_NAME.match(parts[0]):
            continue
        snap[path] = value.strip()
    if not snap and text.strip():
        raise ParseError("no 'path:value' line found", "sysfs_flat", source, None)
    return snap


def hcas_from_snapshot(
    snap: Dict[str, str], source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """HCA records (docs/facts.md ``ib.hcas``) from a snapshot mapping.

    A port whose attributes cannot be read into a record is a ``parse`` entry in ``errors`` (the other ports
    and HCAs are kept); without an ``errors`` list it raises ParseError with the HCAs as ``partial``.
    """
    rec = Records("sysfs", source, DOMAIN, errors)
    hca_raw: Dict[str, Dict[str, Any]] = {}
    port_raw: Dict[Tuple[str, int], Dict[str, Any]] = {}
    counters: Dict[Tuple[str, int], Dict[str, Dict[str, int]]] = {}
    attr_map = {"hca_type": "ca_type", "fw_ver": "fw_version", "board_id": "board_id", "node_guid": "node_guid"}
    for path, value in snap.items():
        parts = path.split("/")
        hca = parts[0]
        if not _SAFE_NAME.match(hca):
            continue
        raw = hca_raw.setdefault(hca, {})
        if len(parts) == 2 and parts[1] in attr_map:
            raw[attr_map[parts[1]]] = value
            continue
        if len(parts) < 4 or parts[1] != "ports" or not _PORT_NUM.match(parts[2]):
            continue
        key = (hca, int(parts[2]))
        praw = port_raw.setdefault(key, {})
        rest = parts[3:]
        if len(rest) == 1 and rest[0] in PORT_ATTRS:
            praw[rest[0]] = value
        elif rest == ["gids", "0"]:
            praw["gid0"] = value
        elif len(rest) == 2 and rest[0] in COUNTER_DIRS:
            n = to_int(value)
            if n is not None:
                counters.setdefault(key, {}).setdefault(rest[0], {})[rest[1]] = n
    hcas = []
    for hca in sorted(hca_raw, key=natural_key):
        ports = []
        for (h, pn), praw in port_raw.items():
            if h != hca:
                continue
            by_dir = counters.get((h, pn), {})
            merged = dict(by_dir.get("counters", {}))
            for name, val in by_dir.get("hw_counters", {}).items():
                merged["hw_" + name if name in merged else name] = val
            with rec.at(None):
                ports.append(_port_record(pn, praw, dict(sorted(merged.items()))))
        with rec.at(None):
            hcas.append(_hca_record(hca, hca_raw[hca], ports))
    return rec.finish(hcas)


def read_sysfs_class(class_dir: str, confine: bool = False) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """HCA records and error records from a sysfs class directory (live, or in a capture: ``confine``)."""
    snap, errors = snapshot_sysfs(class_dir, confine)
    return hcas_from_snapshot(snap, class_dir, errors), errors


def capture_sysfs(sysfs_root: str, dest_dir: str, timeout: Optional[float] = 30.0) -> Dict[str, Any]:
    """Copy the allowlisted IB attributes of ``<sysfs_root>/sys/class/infiniband`` into
    ``<dest_dir>/sys/class/infiniband/<hca>/...`` as plain files (never the whole tree, never links).

    The read runs in a child abandoned after ``timeout`` seconds (None: in this process). Returns
    ``{"hcas": [...names], "files": N, "collected_at": epoch, "errors": [...]}``.
    """
    class_dir = os.path.join(sysfs_root, _capture.SYSFS_IB)
    out: Dict[str, Any] = {"hcas": [], "files": 0, "collected_at": time.time(), "errors": []}
    if timeout is None:
        snap, errors = snapshot_sysfs(class_dir)
    else:
        res = run_in_child(snapshot_sysfs, (class_dir,), timeout)
        if not res.get("ok"):
            kind = "timeout" if res.get("timed_out") else "internal"
            msg = f"reading {class_dir}: {res.get('error')}"
            out["errors"].append(error_record(DOMAIN, kind, msg, source="sysfs"))
            return out
        snap, errors = res["value"]
    out["errors"].extend(errors)
    dest_class = os.path.join(dest_dir, _capture.SYSFS_IB)
    hcas = set()
    for rel, value in sorted(snap.items()):
        parts = rel.split("/")
        if any(not p or p in (".", "..") for p in parts):
            continue
        target = os.path.join(dest_class, *parts)
        try:
            if parts[1:] == ["ports"]:  # placeholder of an HCA with nothing readable: keep it visible
                ensure_private_dir(target)
                hcas.add(parts[0])
                continue
            write_private_atomic(target, value + "\n")  # 0600 in 0700 dirs, never through a link
        except OSError as exc:
            out["errors"].append(error_record(DOMAIN, "internal", f"cannot write {target}: {exc}", "sysfs"))
            continue
        hcas.add(parts[0])
        out["files"] += 1
    out["hcas"] = sorted(hcas, key=natural_key)
    return out


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
                recs.append(_port_record(pn, praw))
        with rec.at(raw.get("_line")):
            out.append(_hca_record(name, raw, recs))
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
                recs.append(_port_record(pn, praw))
        out.append(_hca_record(name, {}, recs))
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


# ---------------------------------------------------------------------------------------------------------------
# Collector
# ---------------------------------------------------------------------------------------------------------------


def _result(source: Optional[str] = None) -> Dict[str, Any]:
    return {"source": source, "collected_at": None, "boot_id": None, "hcas": [], "errors": []}


def _epoch(value: Any) -> Optional[float]:
    """Epoch seconds from a number or an ISO 8601 string (``2026-12-02T10:00:00Z``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str) or not value.strip():
        return None
    s = value.strip()
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.datetime.fromisoformat(s)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    return dt.timestamp()


def _ibstat_into(out: Dict[str, Any], text: str, stderr: str, source: str) -> None:
    """Parse ibstat text into ``out``, keeping partial results and reporting ibpanic / truncation."""
    try:
        out["hcas"] = parse_ibstat(text, source, out["errors"])
    except ParseError as exc:
        out["hcas"] = exc.partial or []
        out["errors"].append(exc.to_error(DOMAIN))
    panic = find_ibpanic(text)
    where = source
    if panic is None and stderr:
        panic = find_ibpanic(stderr)
        where = source + " (stderr)"
    if panic is not None:
        msg = f"{panic[1]} ({len(out['hcas'])} HCA(s) listed before it are kept)"
        out["errors"].append(error_record(DOMAIN, "tool_error", msg, source=where, parser="ibstat", line=panic[0]))


def _collect_capture(capture_dir: str) -> Dict[str, Any]:
    out = _result()
    try:
        meta = _capture.load_meta(capture_dir)
    except ParseError as exc:
        meta = {}
        out["errors"].append(exc.to_error(DOMAIN))
    out["collected_at"] = _epoch(meta.get("captured_at", meta.get("collected_at")))
    out["boot_id"] = clean(meta.get("boot_id")) if isinstance(meta.get("boot_id"), str) else None
    if out["boot_id"] is None:
        try:
            node = json.loads(_capture.read(capture_dir, "node.json") or "{}")
            if isinstance(node, dict) and isinstance(node.get("boot_id"), str):
                out["boot_id"] = clean(node["boot_id"])
        except (ParseError, ValueError):
            pass  # node.json is node_info's to report
    try:  # sys/class/infiniband must be real directories of the capture: a link out of it is refused
        class_dir = _capture.subdir(capture_dir, _capture.SYSFS_IB)
    except ParseError as exc:
        class_dir = None
        out["errors"].append(exc.to_error(DOMAIN))
    have_ibstat = os.path.lexists(_capture.path(capture_dir, "ibstat.txt"))  # a link too: refused by name below
    if class_dir is not None:
        hcas, errors = read_sysfs_class(class_dir, confine=True)
        if hcas or not have_ibstat:
            out.update(source="capture:sysfs", hcas=hcas)
            out["errors"].extend(errors)
            return out
    for name, parser in (("ibstat.txt", "ibstat"), ("ibstatus.txt", "ibstatus")):
        try:
            text = _capture.read(capture_dir, name)
        except ParseError as exc:
            out["source"] = "capture:" + name
            out["errors"].append(exc.to_error(DOMAIN, "unreadable"))
            return out
        if text is None:
            continue
        out["source"] = "capture:" + name
        status = _capture.file_status(meta, name)
        stderr = status.get("stderr") if isinstance(status.get("stderr"), str) else ""
        if parser == "ibstat":
            _ibstat_into(out, text, stderr, name)
        else:
            try:
                out["hcas"] = parse_ibstatus(text, name, out["errors"])
            except ParseError as exc:
                out["errors"].append(exc.to_error(DOMAIN))
        if status.get("timed_out"):
            out["errors"].append(error_record(DOMAIN, "timeout", f"{parser} timed out when captured", name))
        elif (
            isinstance(status.get("rc"), int)
            and status["rc"] != 0
            and not any(e["kind"] == "tool_error" for e in out["errors"])
        ):
            last = stderr.strip().splitlines()[-1][:300] if stderr.strip() else ""
            msg = f"{parser} exited {status['rc']}" + ((": " + last) if last else "")
            out["errors"].append(error_record(DOMAIN, "tool_error", msg, source=name))
        return out
    return out


def _collect_live(sysfs_root: str, timeout: float, ibstat_path: str) -> Dict[str, Any]:
    out = _result()
    start = time.monotonic()
    out["collected_at"] = time.time()
    boot = read_attr(os.path.join(sysfs_root, "proc", "sys", "kernel", "random", "boot_id"))
    out["boot_id"] = clean(boot)
    class_dir = os.path.join(sysfs_root, _capture.SYSFS_IB)
    if os.path.isdir(class_dir):
        # sysfs counters are PMA queries answered by the HCA firmware: a wedged HCA can block a read
        res = run_in_child(read_sysfs_class, (class_dir,), timeout)
        if res.get("ok"):
            hcas, errors = res["value"]
            out["errors"].extend(errors)
            if hcas:
                out.update(source="sysfs", hcas=hcas)
                return out
        else:
            kind = "timeout" if res.get("timed_out") else "internal"
            out["errors"].append(error_record(DOMAIN, kind, f"reading {class_dir}: {res.get('error')}", "sysfs"))
    if os.sep in ibstat_path:
        exe = ibstat_path if os.access(ibstat_path, os.X_OK) else None
    else:
        exe = which(ibstat_path)
    if not exe:
        if not os.path.isdir(class_dir):
            out["source"] = None  # no IB stack on this node: not an error, the policy knows what to expect
        return out
    remaining = max(1.0, timeout - (time.monotonic() - start))
    res = run_command([exe], timeout=remaining)
    out["source"] = "ibstat"
    if res.timed_out:
        out["errors"].append(error_record(DOMAIN, "timeout", res.describe(), source="ibstat"))
    elif res.error:
        out["errors"].append(error_record(DOMAIN, "missing", res.describe(), source="ibstat"))
        return out
    _ibstat_into(out, res.stdout, res.stderr, "ibstat")
    if res.rc not in (0, None) and not any(e["kind"] == "tool_error" for e in out["errors"]):
        out["errors"].append(error_record(DOMAIN, "tool_error", res.describe(), source="ibstat"))
    return out


def collect(
    capture_dir: Optional[str] = None,
    sysfs_root: str = "/",
    timeout: float = 30,
    ibstat_path: str = "ibstat",
) -> Dict[str, Any]:
    """The ``ib`` domain of docs/facts.md, from ``capture_dir`` or the live node (sysfs, then ibstat)."""
    try:
        if capture_dir:
            return _collect_capture(capture_dir)
        return _collect_live(sysfs_root or "/", float(timeout), ibstat_path or "ibstat")
    except Exception as exc:  # noqa: BLE001 - collector boundary: report, never raise
        out = _result()
        out["errors"].append(internal_error(DOMAIN, exc))
        return out
