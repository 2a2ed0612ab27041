# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an Xid line says beyond its code: the Xid 74 NVLink error registers, the NVLink5 Xid 144-150 sub-cases and
the Xid 13 GPC/TPC.

Xid 74 follows NVIDIA's WORKFLOW_NVLINK_ERR (Xid catalog, "Resolution Bucket" WORKFLOW_NVLINK_ERR; implemented the
same way in NVIDIA/NVSentinel docs/designs/022-workflow-nvlink-err.md): the line carries seven registers,
``link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)``; the first, third, fourth and fifth are decoded bit by bit.
Some bits are benign (ignore, or an ECC threshold with no uncorrectable error: continue), some are sympathetic (a
healthy peer of a failing GPU logs them: follow the other error), some point at the link hardware (check the
mechanical connection, reseat), some need repetition on the same link before they mean anything. NVIDIA: "The
first, third, fourth and fifth registers are valid for Hopper-based products": lines of other GPUs (A100) are not
decoded (``is_hopper``).

Xid 144-150 follow WORKFLOW_NVLINK5_ERR: ``<unit> <Fatal|Nonfatal> <XC0|XC1> <iN> Link <n> (<intrInfo> <errorStatus>
...)``; the sheet "Xid 144-150 Decode" (``_xid_nvidia.DECODE_144_150``) matches IntrInfo against a bit mask (V1 for
drivers before R575, V2 from R575) and the error status, and names the resolution bucket.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._xid_nvidia import DECODE_144_150

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
        "reset_gpu",
        "link hardware or marginal signal integrity: a GPU reset or node reboot clears it; if a field resolution "
        "is required check the link's mechanical connection and reseat, run field diag if it persists",
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
        "P2",
        "reset_gpu",
        "a GPU reset or node reboot is needed to clear an Xid 74 (NVIDIA); not yet repeated on the same link, "
        "so no report yet",
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


_HOPPER = re.compile(r"\b(?:GH|H)(?:100|200|800|20)\b", re.IGNORECASE)


def is_hopper(gpu: Any) -> Optional[bool]:
    """True for a Hopper GPU (facts ``architecture``, else the name), False for another known GPU, None unknown."""
    if not isinstance(gpu, dict):
        return None
    arch = str(gpu.get("architecture") or "").strip().lower()
    if arch:
        return arch == "hopper"
    name = str(gpu.get("name") or "").strip()
    return bool(_HOPPER.search(name)) if name else None


# ------------------------------------------------------------------------------------------ NVLink5 (144-150)

_NVL5 = re.compile(
    r"([A-Za-z][A-Za-z0-9_/]*)\s+(Non-?fatal|Fatal)\s+(?:XC\d\s+)?(?:i\d+\s+)?Link\s+(-?\d+)\s*"
    r"\(\s*(0x[0-9a-fA-F]+)[\s,]+(0x[0-9a-fA-F]+)",
    re.IGNORECASE,
)
#: Decode sheet bucket -> (severity, action) when it can be followed from the line alone.
NVLINK5_BUCKETS = {"RESET_GPU": ("P1", "reset_gpu"), "IGNORE": ("P3", "monitor")}
_RANK = {"RESET_GPU": 0, "XID_154_EVAL": 1, "IGNORE": 2}


def _mask_ok(mask: str, value: int) -> bool:
    """A sheet mask (binary, most significant bit first, '-' = don't care) against a 32-bit value."""
    mask = mask.strip()
    if not mask or any(ch not in "01-" for ch in mask):
        return False
    for i, ch in enumerate(reversed(mask)):
        if ch != "-" and (value >> i & 1) != int(ch):
            return False
    return True


def _status_ok(cell: str, status: int) -> bool:
    if not cell.strip():
        return True  # the sheet leaves it empty: any status (NETIR link events)
    try:
        return any(int(v.strip(), 16) == status for v in cell.split("/"))
    except ValueError:
        return False


def _driver_major(driver: Any) -> Optional[int]:
    m = re.match(r"\s*(\d+)", str(driver or ""))
    return int(m.group(1)) if m else None


def decode_nvlink5(code: int, text: Any, driver: Any = None) -> Optional[Dict[str, Any]]:
    """The decode sheet's row for an Xid 144-150 line: ``{"unit", "fatal", "link", "intr_info", "error_status",
    "version", "subcode", "bucket", "investigatory", "severity"}`` (``bucket`` None when no row matches), or None
    when the line does not carry the unit/link/registers. ``driver``: the driver version (V1 before R575, V2
    from R575, the other when that one matches no row); unknown -> both, the one whose subcode names the line's
    unit first."""
    m = _NVL5.search(str(text or ""))
    if not m:
        return None
    intr, status = int(m.group(4), 16), int(m.group(5), 16)
    major = _driver_major(driver)
    # the driver's format first; the other one when the line does not match it (a driver updated since, or the
    # facts describe another GPU source)
    versions = ((1, "V2"), (0, "V1")) if major is not None and major >= 575 else ((0, "V1"), (1, "V2"))
    hits: List[Tuple[str, Tuple[Any, ...], str]] = []
    for off, ver in versions:
        if hits and major is not None:
            break
        for row in DECODE_144_150:
            if row[0] != code or not _status_ok(row[4], status):
                continue
            if _mask_ok(row[2 + off], intr):
                hits.append((ver, row, row[5]))
            elif row[8] and _mask_ok(row[6 + off], intr):  # "Action 2": the promoted form of the same error
                hits.append((ver, row, row[8]))
    unit = m.group(1).upper()
    # the line's unit names the row (V1/V2 names differ: NETIR_LINK_EVT/NETIR_LINK_DOWN); then the worst bucket
    hits.sort(key=lambda h: (unit not in h[1][1].upper().replace(" ", "_").split("/"), _RANK.get(h[2], 3)))
    out: Dict[str, Any] = {
        "unit": m.group(1),
        "fatal": m.group(2).lower() == "fatal",
        "link": int(m.group(3)),
        "intr_info": "0x%08x" % intr,
        "error_status": "0x%08x" % status,
        "version": None,
        "subcode": None,
        "bucket": None,
        "investigatory": None,
        "severity": None,
    }
    if hits:
        ver, row, bucket = hits[0]
        out.update(version=ver, subcode=row[1], bucket=bucket, investigatory=row[9] or None, severity=row[10] or None)
    return out


def nvlink5_verdict(decoded: List[Dict[str, Any]], xid154: Optional[Tuple[str, str]]) -> Optional[Tuple[str, str, str]]:
    """(severity, action, reason) for one GPU's decoded Xid 144-150 lines, or None when no line matched a row.
    ``xid154``: the (severity, action) of the Xid 154 on the same GPU, for XID_154_EVAL sub-cases."""
    rows = sorted((d for d in decoded if d.get("bucket")), key=lambda d: _RANK.get(d["bucket"], 3))
    if not rows:
        return None
    d = rows[0]
    what = "%s error status %s (%s, IntrInfo %s)" % (d["subcode"], d["error_status"], d["version"], d["intr_info"])
    if d["bucket"] == "XID_154_EVAL":
        if xid154:
            return xid154[0], xid154[1], "%s: XID_154_EVAL, the Xid 154 on this GPU decides" % what
        return "P3", "restart_app", "%s: XID_154_EVAL without an Xid 154: RESTART_APP" % what
    sev, action = NVLINK5_BUCKETS.get(d["bucket"], ("P2", "monitor"))
    return sev, action, "%s: %s" % (what, d["bucket"])
