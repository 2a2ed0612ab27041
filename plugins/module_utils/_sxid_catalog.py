# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVSwitch SXid catalogue as data: the Fabric Manager User Guide's classes and what we do about each.

Source: NVIDIA Fabric Manager User Guide DU-09883-001 v1.3 (Oct 2023), SXid error classes, as transcribed in
leptonai/gpud ``components/accelerator/nvidia/sxid/sxid.go`` (gpu-knowledge-2026.md section 4). A line reads
``nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up``.

Classes (``CLASSES``): ``non_fatal`` (the guide: no recovery, or check the link's mechanics; counted per link),
``non_fatal_reset`` (non-fatal, but the guide's recovery resets GPUs and switches or restarts the guest),
``potentially_fatal`` (the line's own Fatal/Non-fatal word decides), ``fatal`` (always: restart the host),
``notable`` (the guide's other codes). A code outside the guide falls back to the line's word: "fatal" or
"non-fatal". Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Tuple

GUIDE = "NVIDIA Fabric Manager User Guide DU-09883-001 v1.3 (Oct 2023), as transcribed in gpud sxid.go"


def _codes(*parts: Any) -> Tuple[int, ...]:
    out = []
    for p in parts:
        out.extend(range(p[0], p[1] + 1) if isinstance(p, tuple) else [p])
    return tuple(out)


#: class -> (codes, what the guide says to do, severity, action, severity/action when the line says "Fatal").
CLASSES: Dict[str, Tuple[Tuple[int, ...], str, str, str, Optional[Tuple[str, str]]]] = {
    "non_fatal": (
        _codes(
            11012,
            (11021, 11023),
            12021,
            12023,
            15008,
            15011,
            19049,
            19055,
            19057,
            19059,
            19062,
            19065,
            19068,
            19071,
            (24001, 24003),
            20001,
            20012,
            22013,
        ),
        "non-fatal (single-bit ECC, TX replay, connection, minion DLREQ): no recovery; repeats on a link -> check "
        "the link's mechanics",
        "P3",
        "monitor",
        None,
    ),
    "non_fatal_reset": (
        _codes(11004, 12028, 19084),
        "non-fatal by class, but the guide's recovery is a reset: 11004 ingress invalid ACL (fabric manager "
        "partition configuration), 12028 egress non-posted PRIV error (GPU traffic stalls), 19084 AN1 heartbeat "
        "timeout (reset all GPUs and NVSwitches)",
        "P1",
        "reboot",
        None,
    ),
    "potentially_fatal": (
        _codes(
            11001,
            11009,
            11013,
            (11018, 11020),
            12001,
            12002,
            12022,
            (12024, 12027),
            12030,
            12031,
            12032,
            14017,
            15001,
            15006,
            15009,
            15010,
            15012,
            15013,
            19047,
            19048,
            19054,
            19056,
            19058,
            19060,
            19061,
            19063,
            19064,
            19066,
            19067,
            19069,
            19070,
            20034,
            22012,
            (24004, 24007),
        ),
        "potentially fatal: when fatal, an access port -> restart the guest using it, a trunk port -> shut down "
        "the partitions crossing it (bare metal: restart the host)",
        "P2",
        "monitor",
        ("P1", "reboot"),
    ),
    "fatal": (
        _codes(12020, 22003, 22011, (23001, 23017)),
        "always fatal: restart the host (or a secondary bus reset of all GPUs and switches and a restart of the "
        "service VM)",
        "P1",
        "reboot",
        ("P1", "reboot"),
    ),
    "notable": (
        _codes(10001, 10002, 10003, 10004, 10005, 20009),
        "10001 host PRIV error, 10002 PRIV timeout, 10003 unhandled interrupt (fatal: reset all), 10004/10005 "
        "thermal event start/end (links may drop to a single lane), 20009 RX short error rate",
        "P2",
        "monitor",
        ("P1", "reboot"),
    ),
}

#: Codes whose own text in the guide differs from their class (code -> severity, action, note).
SPECIAL: Dict[int, Tuple[str, str, str]] = {
    10003: ("P1", "reboot", "unhandled interrupt: fatal, reset all GPUs and NVSwitches"),
    20009: ("P3", "monitor", "RX short error rate: watch the link"),
}


def _index() -> Dict[int, str]:
    out: Dict[int, str] = {}
    for name, (codes, _what, _sev, _act, _fatal) in CLASSES.items():
        for code in codes:
            out[code] = name
    return out


#: code -> class name.
CODE_CLASS: Dict[int, str] = _index()


def lookup(code: Any, fatal_word: Optional[bool] = None) -> Dict[str, Any]:
    """What to do about SXid ``code``: ``{"code", "known", "class", "fatal", "severity", "action", "guide"}``.

    ``fatal_word``: the line says "Fatal" (True), "Non-fatal" (False) or neither (None). A code outside the guide
    is P1 ``reboot`` when the line says fatal, else P2 ``monitor``."""
    try:
        key: Optional[int] = int(str(code).strip())
    except (TypeError, ValueError):
        key = None
    name = CODE_CLASS.get(key) if key is not None else None
    if name is None:
        fatal = bool(fatal_word)
        sev, action = ("P1", "reboot") if fatal else ("P2", "monitor")
        what = "not in the guide: the line's word '%s' decides" % ("fatal" if fatal else "non-fatal")
        return {"code": key, "known": False, "class": None, "fatal": fatal, "severity": sev, "action": action,
                "guide": what}  # fmt: skip
    _codes_, what, sev, action, on_fatal = CLASSES[name]
    fatal = name in ("fatal", "non_fatal_reset") or (bool(fatal_word) and on_fatal is not None)
    if fatal and on_fatal:
        sev, action = on_fatal
    if key in SPECIAL:
        sev, action, what = SPECIAL[key]
        fatal = action == "reboot"
    return {"code": key, "known": True, "class": name, "fatal": fatal, "severity": sev, "action": action,
            "guide": what}  # fmt: skip


def rows() -> Iterable[Tuple[int, str, str, str]]:
    """(code, class, severity, action) for every code of the guide, by code (docs/checks.md's table)."""
    for code in sorted(CODE_CLASS):
        e = lookup(code, None)
        yield code, e["class"], e["severity"], e["action"]
