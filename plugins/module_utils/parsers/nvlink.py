# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# ruff: noqa: UP009, UP031 - the house header and %-formatting (Python 3.8 managed nodes) are intended
"""NVLink state and error counters: ``nvidia-smi nvlink -s`` / ``-e`` (and the ``dcgmi nvlink -e`` table).

``-s``: ``GPU 0: <name> (UUID: GPU-...)`` then ``<TAB or spaces> Link 0: 25 GB/s``; a link that is
down prints a non-``GB/s`` value (``<inactive>``); a GPU whose links are all down prints
``NVML: Unable to retrieve NVLink information as all links are inactive``.
``-e``: ``Link 0: Replay Errors: 0`` / ``Recovery Errors`` / ``CRC Errors`` per link.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    clean,
    parse_int,
    to_float,
    to_int,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._gpu_record import new_record

PARSER = "nvlink"
DOMAIN = "gpu"

_GPU_RE = re.compile(r"^GPU\s+([0-9]+)\s*:\s*(.*?)\s*(?:\(UUID:\s*([^)]*)\))?\s*$")
_DCGM_GPU_RE = re.compile(r"^\|\s*GPU ID:\s*([0-9]+)\s*\|")
_LINK_RE = re.compile(r"^Link\s+([0-9]+)\s*:\s*(.*)$")
_DCGM_LINK_RE = re.compile(r"^\|\s*Link\s+([0-9]+)\s*\|\s*([^|]+?)\s*\|\s*([^|]*?)\s*\|")
#: ``Link 3: Replay Errors: 0`` and ``Link 3: 26.562 GB/s``, stripped: the forms :func:`_line` reads the same way
_FAST_COUNTER = re.compile(r"Link ([0-9]{1,6}): ([A-Za-z][A-Za-z ]{0,40}): ([0-9]{1,18})")
_FAST_SPEED = re.compile(r"Link ([0-9]{1,6}): ([0-9]{1,6}(?:\.[0-9]{1,6})?) GB/s")

#: Error counter names as printed -> normalized key.
COUNTERS = {
    "replay errors": "replay",
    "replay error": "replay",
    "recovery errors": "recovery",
    "recovery error": "recovery",
    "crc errors": "crc_flit",
    "crc flit errors": "crc_flit",
    "crc flit error": "crc_flit",
    "crc data errors": "crc_data",
    "crc data error": "crc_data",
    # NVLink5 (Blackwell, R570+): the names ``nvidia-smi nvlink -e`` prints (driver 595.91.07, B300), the same
    # counters as NVML field ids 206-215, 219, 221 (gpu-knowledge-2026.md 3.1); no replay/recovery/CRC any more
    "malformed packet errors": "malformed",
    "buffer overrun errors": "buffer_overrun",
    "rx errors": "rx_errors",
    "rx remote errors": "rx_remote",
    "rx general errors": "rx_general",
    "local link integrity errors": "integrity",
    "tx discards": "tx_discards",
    "link recovery successful events": "recovery_successful",
    "link recovery failed events": "recovery_failed",
    "total link recovery events": "recovery_total",
    "effective errors": "effective_errors",
    "symbol errors": "symbol_errors",
    "effective ber": "effective_ber",
    "symbol ber": "symbol_ber",
}
#: counters printed as a bit error rate (``15e-255``: NVIDIA's floor, read as zero): a float, not a count
BER_COUNTERS = frozenset(("effective_ber", "symbol_ber"))
_BER_RE = re.compile(r"^\s*([0-9]{1,3}(?:\.[0-9]{1,6})?)\s*[eE]\s*([-+]?[0-9]{1,3})\s*$")


def ber_value(value: Any) -> Optional[float]:
    """``15e-255`` / ``1.5E-9`` -> float; 15E-255 (NVIDIA's "zero") -> 0.0; N/A -> None; else ParseError."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = _BER_RE.match(str(value))
    if m is None:
        if clean(value) is None:
            return None
        raise ParseError("BER value %r is not a number" % str(value).strip()[:40])
    mantissa, exponent = float(m.group(1)), int(m.group(2))
    if exponent <= -255:
        return 0.0
    return mantissa * 10.0**exponent


def _gpu(out: Dict[int, Dict[str, Any]], index: int, name: Optional[str], uuid: Optional[str]) -> Dict[str, Any]:
    g = out.get(index)
    if g is None:
        g = {"index": index, "name": name or None, "uuid": (uuid or "").strip() or None, "links": {}, "error": None}
        out[index] = g
    return g


def _link(g: Dict[str, Any], link: int) -> Dict[str, Any]:
    lk = g["links"].get(link)
    if lk is None:
        lk = {
            "link": link,
            "state": None,
            "speed_gbps": None,
            "errors": {"replay": None, "recovery": None, "crc_flit": None, "crc_data": None},
        }
        g["links"][link] = lk
    return lk


_KEY_CACHE: Dict[str, str] = {}


def _counter_key(name: str) -> str:
    key = _KEY_CACHE.get(name)
    if key is None:
        n = " ".join(name.lower().split())
        key = COUNTERS.get(n) or re.sub(r"[^a-z0-9]+", "_", n).strip("_")
        if len(_KEY_CACHE) < 256:
            _KEY_CACHE[name] = key
    return key


def parse(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> Dict[int, Dict[str, Any]]:
    """Parse ``nvlink -s`` and/or ``nvlink -e`` output (either or both concatenated).

    Returns ``{gpu_index: {index, name, uuid, links: {n: {link, state, speed_gbps, errors}}, error}}``.
    Raises ParseError when non-empty input has no GPU header at all. A malformed line is a ``parse`` entry
    in ``errors`` (the lines after it still count; a malformed GPU header drops that GPU's lines, never
    attaching them to the GPU above); without an ``errors`` list it raises ParseError with ``partial``.
    """
    if not isinstance(text, str):
        raise ParseError("input is not text", PARSER, source)
    rec = Records(PARSER, source, DOMAIN, errors)
    out: Dict[int, Dict[str, Any]] = {}
    state: Dict[str, Any] = {"cur": None, "saw_any": False}
    counter, speed = _FAST_COUNTER.fullmatch, _FAST_SPEED.fullmatch
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        cur = state["cur"]
        if cur is not None:
            # the lines that make up nearly all of the output, in the form _line reads them (a few digits: no
            # number here can be malformed), without the record boundary around each: ~3x faster
            m = counter(line)
            if m:
                _link(cur, int(m.group(1)))["errors"][_counter_key(m.group(2))] = int(m.group(3))
                continue
            m = speed(line)
            if m:
                lk = _link(cur, int(m.group(1)))
                lk["state"], lk["speed_gbps"] = "up", float(m.group(2))
                continue
        if rec.too_long(line, lineno):
            state["cur"] = None  # it may have been a GPU header: the lines after it belong to no GPU we know
            continue
        with rec.at(lineno):
            _line(out, state, line)
    if not state["saw_any"] and text.strip():
        if "Unable to determine the device handle" in text or "Unknown Error" in text:
            # the driver could not read a GPU: nvidia-smi printed its error instead; gpu facts report it
            return rec.finish(out)
        raise ParseError("no 'GPU N:' header in NVLink output: %r" % text.strip()[:120], PARSER, source, 1)
    return rec.finish(out)


def _line(out: Dict[int, Dict[str, Any]], state: Dict[str, Any], line: str) -> None:
    """One non-blank line of NVLink output into ``out`` (``state``: the current GPU, whether one was seen)."""
    cur = state["cur"]
    if line.startswith("GPU"):
        m = _GPU_RE.match(line)
        if m:
            state["cur"] = None  # a header that fails below must not leave its links to the GPU above
            state["cur"] = _gpu(out, parse_int(m.group(1)), m.group(2), m.group(3))
            state["saw_any"] = True
            return
    if line.startswith("|"):
        m = _DCGM_GPU_RE.match(line)
        if m:
            state["cur"] = None
            state["cur"] = _gpu(out, parse_int(m.group(1)), None, None)
            state["saw_any"] = True
            return
        m = _DCGM_LINK_RE.match(line)
        if m and cur is not None:
            lk = _link(cur, parse_int(m.group(1)))
            lk["errors"][_counter_key(m.group(2))] = _count(m.group(3))
        return
    if cur is None:
        return
    if line.startswith("NVML:") or "Unable to retrieve NVLink" in line:
        cur["error"] = line[:300]
        return
    m = _LINK_RE.match(line)
    if not m:
        return
    link = parse_int(m.group(1))
    rest = m.group(2).strip()
    name, sep, value = rest.rpartition(":")
    upper = rest.upper()
    if sep and name.strip() and not upper.endswith("GB/S"):
        lk = _link(cur, link)
        key = _counter_key(name)
        lk["errors"][key] = ber_value(value) if key in BER_COUNTERS else _count(value)
        return
    lk = _link(cur, link)
    if "GB/S" in upper:
        lk["state"] = "up"
        lk["speed_gbps"] = to_float(rest)
    else:
        lk["state"] = "down"
        lk["speed_gbps"] = None


def _count(value: str) -> Optional[int]:
    """An error counter: a non-negative integer, a sentinel (``N/A``: None), else a malformed line."""
    n = to_int(value)  # digits first: the common case, no sentinel is one
    if n is not None:
        return n
    if clean(value) is None:
        return None
    raise ParseError("counter value %r is not a number" % value.strip()[:40])


_ALL_INACTIVE = re.compile(r"all links are inactive", re.I)


def all_inactive_without_header(text: str) -> bool:
    """True for NVLink output that is only NVML's "... as all links are inactive" line (no ``GPU N:`` header:
    ``nvidia-smi nvlink -s -i N``, or a driver that prints it once): evidence that no link is up."""
    return bool(_ALL_INACTIVE.search(text)) and not any(_GPU_RE.match(ln.strip()) for ln in text.splitlines())


def gpu_records(*parsed: Dict[int, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """GPU records of docs/facts.md made from NVLink output alone (a capture without ``nvidia-smi -q``): index,
    name and UUID from the ``GPU N: <name> (UUID: ...)`` headers, every other value unknown. :func:`merge`
    attaches the links to them."""
    seen: Dict[int, Dict[str, Any]] = {}
    for data in parsed:
        for idx, nv in sorted(data.items()):
            rec = seen.get(idx)
            if rec is None:
                rec = seen[idx] = new_record(idx)
            rec["name"] = rec["name"] or nv.get("name")
            rec["uuid"] = rec["uuid"] or nv.get("uuid")
    return [seen[i] for i in sorted(seen)]


def merge(gpus: List[Dict[str, Any]], *parsed: Dict[int, Dict[str, Any]]) -> List[str]:
    """Attach parsed NVLink data to GPU records (by UUID, else by index). Returns unmatched GPU notes."""
    unmatched = []
    uuids = [g.get("uuid") for g in gpus if g.get("uuid")]
    # Masked captures repeat one UUID on every GPU: only a unique UUID identifies a GPU.
    by_uuid = {g["uuid"]: g for g in gpus if g.get("uuid") and uuids.count(g["uuid"]) == 1}
    by_index = {g.get("index"): g for g in gpus}
    for data in parsed:
        for idx, nv in sorted(data.items()):
            rec = None
            if nv["uuid"]:
                rec = by_uuid.get(nv["uuid"])
            if rec is None:
                rec = by_index.get(idx)
                if rec is not None and nv["uuid"] and rec.get("uuid") in by_uuid and rec.get("uuid") != nv["uuid"]:
                    rec = None  # the same index on another GPU: not this node's NVLink output
            if rec is None:
                unmatched.append("NVLink data for GPU %d (%s) matches no GPU" % (idx, nv["uuid"] or "no UUID"))
                continue
            cur = rec.get("nvlink") or {"links": [], "error": None}
            links = {lk["link"]: lk for lk in cur["links"]}
            for n, lk in sorted(nv["links"].items()):
                have = links.get(n)
                if have is None:
                    links[n] = {
                        "link": n,
                        "state": lk["state"],
                        "speed_gbps": lk["speed_gbps"],
                        "errors": dict(lk["errors"]),
                    }
                    continue
                if lk["state"] is not None:
                    have["state"] = lk["state"]
                    have["speed_gbps"] = lk["speed_gbps"]
                for k, v in lk["errors"].items():
                    if v is not None:
                        have["errors"][k] = v
            cur["links"] = [links[n] for n in sorted(links)]
            if nv["error"]:
                cur["error"] = nv["error"]
            rec["nvlink"] = cur
    return unmatched
