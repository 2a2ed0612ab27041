"""Renderers for the transceiver / link-quality evidence: `mlxlink -d <hca> -m -c`, `ethtool -m <if>`, `ethtool -S <if>`.

Layouts follow the real samples in tests/fixtures/mlxlink (mstflint `mlxlink_commander.cpp` field order: 35-column
keys, `value [low..high]` DDM lines, `15E-255` for "no error counted") and tests/fixtures/ethtool-m (SFF-8636
QSFP28: `Rcvr signal avg optical power(Channel N)`, four threshold lines per quantity, per-lane flags), ethtool-S
(mlx5 `rx_prio<N>_pause`). State: `hca["optics"]` overrides the healthy defaults; `state["netdevs"]` lists the
RoCE/Ethernet interfaces (`{"name", "module", "stats"}`) whose ethtool output a capture holds.
"""

from __future__ import annotations

import os

#: A healthy 400G OSFP optical module (values of the scitix/sichek sample, tests/fixtures/mlxlink).
DEFAULT_MODULE = {
    "temp": 47,
    "voltage_mv": 3261.2,
    "bias": [8.38, 8.38, 8.38, 8.38],
    "rx": [1.886, 1.989, 2.281, 1.976],
    "tx": [1.562, 1.427, 1.559, 1.761],
    "vendor": "NVIDIA",
    "pn": "MMA4Z00-NS",
}
DEFAULT_PHY = {"symbol_errors": 0, "symbol_ber": None, "effective_errors": 0, "effective_ber": None,
               "raw_lanes": [0, 0, 0, 0], "raw_ber": None, "link_down": 0, "recovery": 0}  # fmt: skip

_PHYS = {"Polling": "Polling", "Disabled": "Disabled", "LinkUp": "LinkUp"}


def _kv(key: str, value) -> str:
    return "%-35s: %s\n" % (key, value)


def _lanes(vals) -> str:
    return ",".join(("%.3f" % v).rstrip("0").rstrip(".") if isinstance(v, float) else str(v) for v in vals)


def _ber(v) -> str:
    """mlxlink prints BER as `<coef>E-<magnitude>`; nothing counted is `15E-255`."""
    if not v:
        return "15E-255"
    mag = 0
    while v < 1:
        v *= 10
        mag += 1
    return "%dE-%d" % (round(v), mag)


def mlxlink(state: dict, hca: dict) -> str:
    """`mlxlink -d <hca> -m -c` for the HCA's port 1."""
    p = hca["ports"][0]
    opt = hca.get("optics") or {}
    mod = dict(DEFAULT_MODULE, **(opt.get("module") or {}))
    phy = dict(DEFAULT_PHY, **(opt.get("phy") or {}))
    up = p["state"] == "ACTIVE"
    rx = mod["rx"] if up else [-40.0] * 4  # no light on a port without a link partner
    out = ["\nOperational Info\n----------------\n"]
    out.append(_kv("State", "Active" if up else "Disable"))
    out.append(_kv("Physical state", _PHYS.get(p["phys_state"], p["phys_state"]) if not up else "LinkUp"))
    out.append(_kv("Speed", "IB-%s" % p.get("speed", "NDR")))
    out.append(_kv("Width", p.get("width", "4X").lower()))
    out.append(_kv("FEC", "Ethernet_Consortium_LL_50G_RS_FEC_PLR -(272,257+1)"))
    out.append(_kv("Loopback Mode", "No Loopback"))
    out.append(_kv("Auto Negotiation", "ON"))
    out.append("\nTroubleshooting Info\n--------------------\n")
    out.append(_kv("Status Opcode", 0 if up else 1))
    out.append(_kv("Group Opcode", "N/A"))
    out.append(_kv("Recommendation", "No issue was observed" if up else "Check cable connection"))
    out.append("\nTool Information\n----------------\n")
    out.append(_kv("Firmware Version", hca.get("fw_ver", "28.39.1002")))
    out.append(_kv("amBER Version", "4.2"))
    out.append(_kv("MFT Version", "mft 4.26.1-3"))
    out.append("\nModule Info\n-----------\n")
    out.append(_kv("Temperature [C]", "%s [-5..75]" % mod["temp"]))
    out.append(_kv("Voltage [mV]", "%s [2970..3630]" % mod["voltage_mv"]))
    out.append(_kv("Bias Current [mA]", "%s [2..15]" % _lanes(mod["bias"])))
    out.append(_kv("Rx Power Current [dBm]", "%s [-10.41..6]" % _lanes(rx)))
    out.append(_kv("Tx Power Current [dBm]", "%s [-8.508..5]" % _lanes(mod["tx"])))
    out.append(_kv("Identifier", "OSFP"))
    out.append(_kv("Compliance", "IB NDR"))
    out.append(_kv("Cable Type", "Optical Module (separated)"))
    out.append(_kv("Vendor Name", mod["vendor"]))
    out.append(_kv("Vendor Part Number", mod["pn"]))
    out.append(_kv("Vendor Serial Number", "MT%s" % hca["node_guid"][-10:].upper()))
    out.append(_kv("Digital Diagnostic Monitoring", "Yes"))
    out.append("\nPhysical Counters and BER Info\n------------------------------\n")
    out.append(_kv("Time Since Last Clear [Min]", "%.1f" % max(1.0, (state["now"] - state["boot_time"]) / 60.0)))
    out.append(_kv("Symbol Errors", phy["symbol_errors"]))
    out.append(_kv("Symbol BER", _ber(phy["symbol_ber"])))
    out.append(_kv("Effective Physical Errors", phy["effective_errors"]))
    out.append(_kv("Effective Physical BER", _ber(phy["effective_ber"])))
    out.append(_kv("Raw Physical Errors Per Lane", ",".join(str(x) for x in phy["raw_lanes"])))
    out.append(_kv("Raw Physical BER", _ber(phy["raw_ber"])))
    out.append(_kv("Link Down Counter", phy["link_down"]))
    out.append(_kv("Link Error Recovery Counter", phy["recovery"]))
    return "".join(out)


def _mw(dbm: float) -> str:
    return "%.4f mW / %.2f dBm" % (10 ** (dbm / 10.0), dbm)


def ethtool_m(nd: dict) -> str:
    """`ethtool -m <if>`: a QSFP28 100GBASE-SR4 module (SFF-8636), as the real Cumulus sample prints it."""
    m = dict({"rx": [-0.12, -0.09, 0.55, 0.55], "temp": 30.56, "flags": []}, **(nd.get("module") or {}))
    rows = [
        ("Identifier", "0x11 (QSFP28)"),
        ("Transceiver type", "100G Ethernet: 100G Base-SR4 or 25GBase-SR"),
        ("Vendor name", "Mellanox"),
        ("Vendor PN", "MMA1B00-C100D"),
        ("Vendor SN", "MT1708FT01255"),
        ("Module temperature", "%.2f degrees C / %.2f degrees F" % (m["temp"], m["temp"] * 9 / 5 + 32)),
        ("Module voltage", "3.2350 V"),
        ("Alarm/warning flags implemented", "Yes"),
    ]
    rows += [("Laser tx bias current (Channel %d)" % i, "6.750 mA") for i in range(1, 5)]
    rows += [("Transmit avg optical power (Channel %d)" % i, _mw(1.3)) for i in range(1, 5)]
    rows += [("Rcvr signal avg optical power(Channel %d)" % i, _mw(v)) for i, v in enumerate(m["rx"], 1)]
    for i in range(1, 5):
        for lvl in ("high alarm  ", "low alarm   ", "high warning", "low warning "):
            flag = "On" if ("rx_power", lvl.strip(), i) in [tuple(f) for f in m["flags"]] else "Off"
            rows.append(("Laser rx power %s (Channel %d)" % (lvl, i), flag))
    rows += [
        ("Module temperature high alarm threshold", "80.00 degrees C / 176.00 degrees F"),
        ("Module temperature low alarm threshold", "-10.00 degrees C / 14.00 degrees F"),
        ("Module temperature high warning threshold", "70.00 degrees C / 158.00 degrees F"),
        ("Module temperature low warning threshold", "0.00 degrees C / 32.00 degrees F"),
        ("Laser rx power high alarm threshold", "3.4673 mW / 5.40 dBm"),
        ("Laser rx power low alarm threshold", "0.0467 mW / -13.31 dBm"),
        ("Laser rx power high warning threshold", "1.7378 mW / 2.40 dBm"),
        ("Laser rx power low warning threshold", "0.0933 mW / -10.30 dBm"),
    ]
    return "".join("\t%-42s: %s\n" % (k, v) for k, v in rows)


def ethtool_s(nd: dict) -> str:
    """`ethtool -S <if>` (mlx5): traffic and the per-priority PFC pause counters."""
    stats = dict({"rx_packets": 20693166921, "tx_packets": 20515332188, "rx_pause_ctrl_phy": 0,
                  "tx_pause_ctrl_phy": 0, "rx_prio3_pause": 1523, "tx_prio3_pause": 2847,
                  "rx_prio3_pause_duration": 48736, "rx_prio3_buf_discard": 0}, **(nd.get("stats") or {}))  # fmt: skip
    return "NIC statistics:\n" + "".join("     %s: %d\n" % (k, v) for k, v in stats.items())


def capture_files(state: dict) -> list:
    """(file name, text) of the optics evidence of a capture (docs/capture.md)."""
    out = [("mlxlink-%s.txt" % h["name"], mlxlink(state, h)) for h in state["hcas"]]
    for nd in state.get("netdevs") or []:
        out.append(("ethtool-m-%s.txt" % nd["name"], ethtool_m(nd)))
        out.append(("ethtool-S-%s.txt" % nd["name"], ethtool_s(nd)))
    return out


def write_capture(state: dict, out_dir: str, files: dict) -> None:
    """Write the optics files into a capture directory and record them in capture.json's `files`."""
    for name, text in capture_files(state):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as fh:
            fh.write(text)
        files[name] = {"rc": 0, "stderr": "", "timed_out": False, "duration": 0.4}
