# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Transceiver and link-quality evidence of the ``ib`` domain: ``mlxlink -m -c``, ``ethtool -m`` and ``ethtool -S``.

Adds to the ib facts (docs/facts.md):

- ``optics``: one record per port whose module was read: ``{component, hca, port, netdev, tool, source, module,
  phy, unsupported}``. ``module`` is the same shape for both tools (readings per lane, the module's thresholds,
  the flags it raised); ``phy`` the mlxlink physical counters (BER, FEC corrected/uncorrectable, link downs).
- ``netdev_counters``: ``{ifname: {source, counters}}`` from ``ethtool -S`` (RoCE PFC pause counters).

From a capture: ``mlxlink-<hca>.txt``, ``ethtool-m-<if>.txt``, ``ethtool-S-<if>.txt``. Live: one bounded call per
HCA (mlxlink) or per RoCE netdev (ethtool), only when the tool is on PATH, within what is left of the timeout.
A tool that is absent, says "not supported" or prints nothing usable is not a fault: an unparseable file is a
collector error record (kind ``parse``), never a finding about the link.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import re
import time
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import capture as _capture
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, error_record
from ansible_collections.gpuops.cluster.plugins.module_utils._files import list_capture_dir
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.ethtool import (
    parse_ethtool_module,
    parse_ethtool_stats,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.ib_optics_cmds import (
    _NAME,
    MAX_PORTS,
    PER_CALL_TIMEOUT_S,
    SAFE_NAME,
    _netdevs,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.mlxlink import parse_mlxlink
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, which

DOMAIN = "ib"
# the optics commands of a live capture are in _ib_optics_cmds (the node's capture imports no parser)
MLXLINK_FILE = re.compile(r"^mlxlink-" + _NAME + r"\.txt$")
ETHTOOL_M_FILE = re.compile(r"^ethtool-m-" + _NAME + r"\.txt$")
ETHTOOL_S_FILE = re.compile(r"^ethtool-S-" + _NAME + r"\.txt$")


def _module_from_mlxlink(m: Dict[str, Any]) -> Dict[str, Any]:
    mv = m.get("voltage_mv")
    th = dict(m.get("thresholds") or {})
    vth = th.pop("voltage_mv", None)
    if vth:
        th["voltage_v"] = {k: (v / 1000.0 if isinstance(v, (int, float)) else v) for k, v in vth.items()}
    return {
        "identifier": m.get("identifier"),
        "cable_type": m.get("cable_type"),
        "vendor": m.get("vendor"),
        "part_number": m.get("part_number"),
        "serial": m.get("serial"),
        "ddm": m.get("ddm"),
        "temperature_c": m.get("temperature_c"),
        "voltage_v": (mv / 1000.0) if isinstance(mv, (int, float)) else None,
        "bias_ma": m.get("bias_ma") or [],
        "rx_power_dbm": m.get("rx_power_dbm") or [],
        "tx_power_dbm": m.get("tx_power_dbm") or [],
        "thresholds": {k: v for k, v in th.items() if v},
        "flags_on": [],
        # mlxlink prints one [low..high] pair per quantity: the module's alarm thresholds, no warning band
        "warning_thresholds": False,
    }


def _module_from_ethtool(m: Dict[str, Any]) -> Dict[str, Any]:
    out = {k: m.get(k) for k in ("identifier", "vendor", "part_number", "serial", "temperature_c", "voltage_v")}
    out.update(
        cable_type=None,
        ddm=m.get("ddm"),
        bias_ma=m.get("bias_ma") or [],
        rx_power_dbm=m.get("rx_power_dbm") or [],
        tx_power_dbm=m.get("tx_power_dbm") or [],
        thresholds=m.get("thresholds") or {},
        flags_on=m.get("flags_on") or [],
        warning_thresholds=True,
        transceiver_type=m.get("transceiver_type"),
        unreadable=m.get("unreadable"),
    )
    return out


def _mlxlink_port(hca: str, source: str) -> Dict[str, Any]:
    """The fields naming the port of an ``optics`` record read with mlxlink (port 1 of the HCA, no netdev)."""
    return {"component": "%s/1" % hca, "hca": hca, "port": 1, "netdev": None, "tool": "mlxlink", "source": source}


def mlxlink_record(text: str, hca: str, source: str, errors: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """One ``optics`` record from ``mlxlink`` text; None (and an error record) when it cannot be parsed."""
    try:
        parsed = parse_mlxlink(text, source)
    except ParseError as exc:
        if "not supported" in str(exc).lower():
            return dict(_mlxlink_port(hca, source), module=None, phy=None, unsupported=True)
        # only -E- lines (no permission, device busy): the tool failed; anything else is not mlxlink output
        errors.append(exc.to_error(DOMAIN, "tool_error" if "section found: error:" in exc.message else None))
        return None
    mod = parsed.get("module")
    return dict(
        _mlxlink_port(hca, source),
        **{
            "state": parsed.get("state"),
            "speed": parsed.get("speed"),
            "width": parsed.get("width"),
            "physical_state": parsed.get("physical_state"),
            "fw_version": parsed.get("fw_version"),
            "fec": parsed.get("fec"),
            "recommendation": parsed.get("recommendation"),
            "status_opcode": parsed.get("status_opcode"),
            "group_opcode": parsed.get("group_opcode"),
            "enabled_speeds": parsed.get("enabled_speeds"),
            "cable_speeds": parsed.get("cable_speeds"),
            "module": _module_from_mlxlink(mod) if mod else None,
            "phy": parsed.get("phy"),
            "unsupported": bool(parsed.get("unsupported")) and not mod,
        },
    )


def ethtool_record(text: str, ifname: str, source: str, errors: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """One ``optics`` record from ``ethtool -m`` text; None (and an error record) when it cannot be parsed."""
    try:
        parsed = parse_ethtool_module(text, source)
    except ParseError as exc:
        errors.append(exc.to_error(DOMAIN))
        return None
    return {
        "component": "net:" + ifname,
        "hca": None,
        "port": None,
        "netdev": ifname,
        "tool": "ethtool",
        "source": source,
        "module": None if parsed.get("unsupported") else _module_from_ethtool(parsed),
        "phy": None,
        "unsupported": bool(parsed.get("unsupported")),
    }


def _stats_into(out: Dict[str, Any], text: str, ifname: str, source: str) -> None:
    try:
        counters = parse_ethtool_stats(text, source)
    except ParseError as exc:
        if "not supported" not in str(exc).lower():
            out["errors"].append(exc.to_error(DOMAIN))
        return
    out.setdefault("netdev_counters", {})[ifname] = {"source": source, "counters": counters}


def collect_capture(capture_dir: str, out: Dict[str, Any]) -> None:
    """Read the optics files of a capture directory into ``out`` (the ib facts being built)."""
    names = list_capture_dir(capture_dir) or []
    records: List[Dict[str, Any]] = []
    primary_failed = bool(out["errors"])  # a refused sysfs copy / broken ibstat: mlxlink does not stand in for it
    for name in names[: 16 * MAX_PORTS]:
        m_mlx, m_eth, m_st = MLXLINK_FILE.match(name), ETHTOOL_M_FILE.match(name), ETHTOOL_S_FILE.match(name)
        if not (m_mlx or m_eth or m_st):
            continue
        try:
            text = _capture.read(capture_dir, name)
        except ParseError as exc:
            out["errors"].append(exc.to_error(DOMAIN, "unreadable"))
            continue
        if text is None:
            continue
        if m_st:
            _stats_into(out, text, m_st.group(1), name)
            continue
        rec = (
            mlxlink_record(text, m_mlx.group(1), name, out["errors"])
            if m_mlx
            else ethtool_record(text, m_eth.group(1), name, out["errors"])  # type: ignore[union-attr]
        )
        if rec is not None:
            records.append(rec)
    if records:
        out["optics"] = records
        if not out.get("source") and not primary_failed:
            _ports_from_mlxlink(out, records)


_LANE_GBPS = {"NDR": 100.0, "XDR": 200.0, "HDR": 50.0, "EDR": 25.0, "FDR": 14.0625, "QDR": 10.0, "SDR": 2.5}


def _ports_from_mlxlink(out: Dict[str, Any], records: List[Dict[str, Any]]) -> None:
    """A capture with optics files but no sysfs/ibstat: the port records mlxlink itself shows (state, speed), so
    the ib domain is read (a partial capture is analysed on its own). ethtool-only: read, no HCA records."""
    out["source"] = "capture:mlxlink" if any(r["tool"] == "mlxlink" for r in records) else "capture:ethtool"
    for r in records:
        if r["tool"] != "mlxlink" or r.get("unsupported"):
            continue
        speed = str(r.get("speed") or "")
        gen = speed[3:] if speed.upper().startswith("IB-") else None
        lanes = re.match(r"^\s*([0-9]+)", str(r.get("width") or ""))
        rate = _LANE_GBPS.get(gen or "", 0.0) * int(lanes.group(1)) if gen and lanes else None
        port = {
            "port": 1,
            "state": "ACTIVE" if str(r.get("state") or "").lower() == "active" else "DOWN",
            "phys_state": r.get("physical_state"),
            "rate_gbps": rate,
            "link_layer": "InfiniBand" if gen else "Ethernet",
            "counters": {},
            "saturated": [],
        }
        out["hcas"].append(
            {
                "name": r["hca"],
                "ca_type": None,
                "board_id": None,
                "fw_version": r.get("fw_version"),
                "node_guid": None,
                "serial": None,
                "ports": [port],
            }
        )


def collect_live(out: Dict[str, Any], sysfs_root: str, deadline: float) -> None:
    """Run mlxlink per HCA (IB ports) and ethtool -m/-S per RoCE netdev, each bounded, until ``deadline``."""
    mlxlink, ethtool = which("mlxlink"), which("ethtool")
    if not (mlxlink or ethtool):
        return
    records: List[Dict[str, Any]] = []
    for hca in (out.get("hcas") or [])[:MAX_PORTS]:
        name = hca.get("name") if isinstance(hca, dict) else None
        if not isinstance(name, str) or not SAFE_NAME.match(name):
            continue
        roce = any(isinstance(p, dict) and p.get("link_layer") == "Ethernet" for p in hca.get("ports") or [])
        calls = []
        if mlxlink and not roce:
            calls.append(("mlxlink", [mlxlink, "-d", name, "-m", "-c"], name))
        if ethtool and roce:
            for ifname in _netdevs(sysfs_root, name):
                calls.append(("ethtool-m", [ethtool, "-m", ifname], ifname))
                calls.append(("ethtool-S", [ethtool, "-S", ifname], ifname))
        for kind, argv, target in calls:
            left = deadline - time.monotonic()
            if left < 1.0:
                out["errors"].append(error_record(DOMAIN, "timeout", "no time left for %s" % kind, source=kind))
                return
            res = run_command(argv, timeout=min(left, PER_CALL_TIMEOUT_S))
            if res.timed_out:
                out["errors"].append(error_record(DOMAIN, "timeout", res.describe(), source=kind))
                continue
            text = res.stdout if res.stdout.strip() else res.stderr
            if kind == "ethtool-S":
                _stats_into(out, text, target, kind)
                continue
            rec = (mlxlink_record if kind == "mlxlink" else ethtool_record)(text, target, kind, out["errors"])
            if rec is not None:
                records.append(rec)
    if records:
        out["optics"] = records
