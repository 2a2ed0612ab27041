# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an Xid line says beyond its code: the Xid 74 NVLink error registers and the Xid 13 GPC/TPC.

Xid 74 follows NVIDIA's WORKFLOW_NVLINK_ERR (Xid catalog, "Resolution Bucket" WORKFLOW_NVLINK_ERR; implemented the
same way in NVIDIA/NVSentinel docs/designs/022-workflow-nvlink-err.md): the line carries seven registers,
``link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)``; the first, third, fourth and fifth are decoded bit by bit.
Some bits are benign (ignore, or an ECC threshold with no uncorrectable error: continue), some are sympathetic (a
healthy peer of a failing GPU logs them: follow the other error), some point at the link hardware (check the
mechanical connection, reseat), some need repetition on the same link before they mean anything.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

_XID74 = re.compile(r"link\s+(\d+)\s*\(\s*((?:0x[0-9a-fA-F]+\s*,\s*){6}0x[0-9a-fA-F]+)\s*\)")
_GPC_TPC = re.compile(r"\bGPC\s+(\d+)\s*,\s*TPC\s+(\d+)")

#: (register index 0-6, bits, kind): NVIDIA's per-bit rules for Xid 74.
XID74_BITS: Tuple[Tuple[int, Tuple[int, ...], str], ...] = (
    (0, (0, 23, 30), "benign"),
    (0, (1, 20), "sympathetic"),
    (0, (4, 5), "ecc_parity"),
    (0, (8, 9, 12, 16, 17, 24, 28), "hardware"),
    (0, (21, 22), "marginal_si"),
    (0, (27, 29), "repeat_bug"),
    (2, (0, 1, 2, 6), "ecc_parity"),
    (2, (13,), "unexpected"),
    (2, (16, 19), "repeat_diag"),
    (2, (17, 18), "repeat_bug"),
    (3, (16, 17), "sympathetic"),
    (3, (18,), "sympathetic_fabric"),
    (4, (18, 19, 21, 22, 24, 25, 27, 28), "ecc_parity"),
    (4, (20, 23, 26, 29), "threshold"),
)
#: Registers NVIDIA decodes; bits in the others (second, sixth, seventh) are not analysed.
_DECODED_REGISTERS = (0, 2, 3, 4)
#: Kinds that are not a fault of this GPU's link by themselves.
PASSIVE = frozenset(("benign", "threshold", "sympathetic", "sympathetic_fabric"))


def decode_xid74(text: Any) -> Optional[Dict[str, Any]]:
    """``{"link": int, "registers": [7 ints], "bits": [(register, bit, kind), ...]}`` for an Xid 74 message, or
    None when the line carries no register dump (older drivers). Bits outside NVIDIA's rules are ``unlisted``."""
    m = _XID74.search(str(text or ""))
    if not m:
        return None
    regs = [int(v.strip(), 16) for v in m.group(2).split(",")]
    kinds = {(reg, bit): kind for reg, bits, kind in XID74_BITS for bit in bits}
    found: List[Tuple[int, int, str]] = []
    for reg in _DECODED_REGISTERS:
        for bit in range(32):
            if regs[reg] >> bit & 1:
                found.append((reg, bit, kinds.get((reg, bit), "unlisted")))
    return {"link": int(m.group(1)), "registers": regs, "bits": found}


def gpc_tpc(text: Any) -> Optional[Tuple[int, int]]:
    """(GPC, TPC) of an Xid 13 "Graphics SM ... on (GPC 1, TPC 2, SM 0)" line, or None."""
    m = _GPC_TPC.search(str(text or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def _per_link(decoded: Iterable[Dict[str, Any]]) -> Dict[Tuple[int, str], int]:
    """How many lines set a kind on each link: {(link, kind): lines}."""
    out: Dict[Tuple[int, str], int] = {}
    for d in decoded:
        for kind in {k for _reg, _bit, k in d["bits"]}:
            out[(d["link"], kind)] = out.get((d["link"], kind), 0) + 1
    return out


#: (condition, severity, action, reason), first match wins. A condition sees the kinds set on any line, the most
#: lines one link set each kind on, whether another error explains sympathetic bits, and the repeat count.
_XID74_RULES: Tuple[Tuple[Callable[[set, Dict[str, int], bool, int], bool], str, str, str], ...] = (
    (
        lambda k, m, p, r: bool(k & {"hardware", "marginal_si"}),
        "P1",
        "reseat",
        "link hardware or marginal signal integrity: check the link connection, reseat, run diag if it persists",
    ),
    (
        lambda k, m, p, r: m.get("ecc_parity", 0) > 2,
        "P1",
        "contact_vendor",
        "ECC/parity error repeated on the same link (more than 2): report to the vendor",
    ),
    (
        lambda k, m, p, r: bool(k & {"unexpected", "unlisted"}),
        "P2",
        "contact_vendor",
        "bits NVIDIA does not expect in production: report a bug",
    ),
    (
        lambda k, m, p, r: m.get("repeat_bug", 0) >= r,
        "P2",
        "contact_vendor",
        "repeated on the same link: report a bug",
    ),
    (
        lambda k, m, p, r: m.get("repeat_diag", 0) >= r,
        "P2",
        "diagnose",
        "repeated on the same link: run field diagnostics",
    ),
    (
        lambda k, m, p, r: bool(k & {"ecc_parity", "repeat_bug", "repeat_diag"}),
        "P3",
        "monitor",
        "needs repetition on the same link before it is a fault",
    ),
    (
        lambda k, m, p, r: bool(k & {"sympathetic", "sympathetic_fabric"}) and p,
        "P3",
        "monitor",
        "sympathetic: follow the other error (a healthy peer of a failing link)",
    ),
    (
        lambda k, m, p, r: "sympathetic_fabric" in k,
        "P2",
        "reset_gpu",
        "sympathetic bits with no other error: a reset of the fabric is required",
    ),
    (
        lambda k, m, p, r: "sympathetic" in k,
        "P2",
        "contact_vendor",
        "sympathetic bits with no other error: report a bug",
    ),
)


def xid74_verdict(decoded: List[Dict[str, Any]], peer_fault: bool, repeat: int = 2) -> Tuple[str, str, str]:
    """(severity, action, reason) for one GPU's decoded Xid 74 lines.

    ``peer_fault``: another error explains sympathetic bits (a primary Xid 74 on another GPU, an SXid, another
    hardware Xid). ``repeat``: lines on one link that make a "repeated" rule hold (ECC/parity needs more than 2).
    """
    seen = _per_link(decoded)
    kinds = {kind for (_link, kind) in seen}
    most = {kind: max(n for (_link, k), n in seen.items() if k == kind) for kind in kinds}
    for cond, sev, action, why in _XID74_RULES:
        if cond(kinds, most, peer_fault, repeat):
            return sev, action, why
    return "P3", "none", "benign bits (ignore, or an ECC threshold without an uncorrectable error): continue"


def is_primary(decoded: List[Dict[str, Any]]) -> bool:
    """True when the lines set a bit that is a fault of this link (not only benign/sympathetic ones)."""
    return any(kind not in PASSIVE for d in decoded for _reg, _bit, kind in d["bits"])
