# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser and runner for the NCCL tests' ``all_reduce_perf`` output (https://github.com/NVIDIA/nccl-tests).

The output is a ``#`` header (``# nThread 1 nGpus 8 minBytes ...``, ``#  Rank  0 Group  0 Pid ... on host device 0
[0x07] NVIDIA H100 80GB HBM3``), a column header (``size count type redop root time algbw busbw #wrong`` twice:
out-of-place and in-place; older releases print ``error`` instead of ``#wrong`` and have no ``root`` column), one row
per message size, then ``# Out of bounds values : 0 OK`` and ``# Avg bus bandwidth    : 123.45``.

Result (``parse()`` / ``collect()``)::

    source: all_reduce_perf | capture:nccl-all-reduce.txt
    ngpus: 8                 # from the header (per process: -g)
    ranks: [{rank, host, device, bus, name}]
    hosts: [gpu-node-01]     # hosts of the ranks, in order
    rows: [{size_b, count, type, redop, out: {time_us, algbw_gbps, busbw_gbps, wrong}, in: {...}}]
    avg_busbw_gbps: 123.45   # the tool's "Avg bus bandwidth" line (null when truncated before it)
    max_busbw_gbps: 480.1    # best busbw over the rows (out-of-place or in-place)
    peak_size_b: 8589934592  # the size where it was reached
    wrong: 0                 # sum of #wrong over all rows (a non-zero value is data corruption)
    out_of_bounds: 0         # "# Out of bounds values : N"
    complete: true           # the closing Avg line was printed
    errors: []
"""

from __future__ import annotations

import math
import os
import re
from typing import Any, Dict, List, Optional, Sequence

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    error_record,
    parse_int,
    to_float,
    to_int,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._files import read_text
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, which

DOMAIN = "nccl"
PARSER = "nccl_all_reduce"
CAPTURE_FILE = "nccl-all-reduce.txt"

_HEADER = re.compile(r"^#\s*nThread\s+([0-9]+)\s+nGpus\s+([0-9]+)\s+minBytes\s+([0-9]+)\s+maxBytes\s+([0-9]+)")
_RANK = re.compile(
    r"^#\s*Rank\s+([0-9]+)\s+(?:Group\s+[0-9]+\s+)?Pid\s+([0-9]+)\s+on\s+(\S+)\s+device\s+([0-9]+)\s+\[([^\]]*)\]\s*(.*)$"
)
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*([0-9]+)")
_COLS = re.compile(r"^#\s+size\s+count\s+type\s+redop\s+(root\s+)?time\s+algbw\s+busbw\s+(#wrong|error)")
_FAIL = re.compile(r"(Test (?:CUDA |NCCL )?failure|NCCL WARN|NCCL failure|unhandled .* error)", re.I)


def _num(tok: str, what: str, source: Optional[str], lineno: int) -> float:
    value = to_float(tok)
    if value is None or math.isnan(value) or math.isinf(value):
        raise ParseError("%s %r is not a number" % (what, tok), PARSER, source, lineno)
    return value


def _half(toks: List[str], source: Optional[str], lineno: int) -> Dict[str, Any]:
    """``time algbw busbw wrong`` of one half (out-of-place or in-place); ``wrong`` may be ``N/A``."""
    wrong: Any = None
    if toks[3] not in ("N/A", "n/a"):
        w = to_float(toks[3])
        if w is None or w < 0:
            raise ParseError("#wrong/error %r is not a number" % toks[3], PARSER, source, lineno)
        wrong = int(w) if w.is_integer() and "e" not in toks[3].lower() else w
    return {
        "time_us": _num(toks[0], "time", source, lineno),
        "algbw_gbps": _num(toks[1], "algbw", source, lineno),
        "busbw_gbps": _num(toks[2], "busbw", source, lineno),
        "wrong": wrong,
    }


def parse(text: str, source: Optional[str] = None) -> Dict[str, Any]:
    """Parse ``all_reduce_perf`` output. Raises ParseError when no result row and no header is recognisable
    (garbage). A broken result or header row (``inf`` or ``nan`` bandwidth, a non-ASCII digit, a 5,000-digit
    size) is a ``parse`` entry in ``errors`` and the other rows are kept (a truncated last row likewise)."""
    if not isinstance(text, str):
        raise ParseError("input is not text", PARSER, source)
    out = _blank(source)
    rec = Records(PARSER, source, DOMAIN, out["errors"])
    state = {"has_root": True, "seen_cols": False}
    lines = text.splitlines()
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or rec.too_long(line, lineno):
            continue
        with rec.at(lineno):
            _line(out, state, line, lines, lineno, source)
    if not out["rows"] and out["ngpus"] is None and not state["seen_cols"] and not out["failures"] and not rec.count:
        raise ParseError("no all_reduce_perf header or result rows", PARSER, source, None)
    return _summarize(out, source)


def _line(out: Dict[str, Any], state: Dict[str, Any], line: str, lines: List[str], lineno: int, source: Any) -> None:
    """One non-blank line of ``all_reduce_perf`` output into ``out``."""
    if line.startswith("#"):
        m = _HEADER.match(line)
        if m:
            out["nthreads"], out["ngpus"] = parse_int(m.group(1)), parse_int(m.group(2))
            out["min_bytes"], out["max_bytes"] = parse_int(m.group(3)), parse_int(m.group(4))
            return
        m = _RANK.match(line)
        if m:
            host = m.group(3)
            out["ranks"].append(
                {
                    "rank": parse_int(m.group(1)),
                    "pid": parse_int(m.group(2)),
                    "host": host,
                    "device": parse_int(m.group(4)),
                    "bus": m.group(5).strip(),
                    "name": m.group(6).strip() or None,
                }
            )
            if host not in out["hosts"]:
                out["hosts"].append(host)
            return
        m = _COLS.match(line)
        if m:
            state["has_root"] = bool(m.group(1))
            state["seen_cols"] = True
            return
        m = _AVG.match(line)
        if m:
            avg = to_float(m.group(1))
            if avg is None:
                raise ParseError("Avg bus bandwidth %r is not a number" % m.group(1), PARSER, source, lineno)
            out["avg_busbw_gbps"] = avg
            out["complete"] = True
            return
        m = _OOB.match(line)
        if m:
            out["out_of_bounds"] = parse_int(m.group(1))
        return
    if _FAIL.search(line):
        out["failures"].append(line[:300])
        return
    toks = line.split()
    if not toks or not (toks[0].isascii() and toks[0].isdigit()):
        return  # unrecognised line (NCCL INFO, launcher noise)
    has_root = state["has_root"]
    want = 13 if has_root else 12
    if len(toks) < want:
        if lineno == len(lines) or (lineno == len(lines) - 1 and not lines[-1].strip()):
            raise ParseError("truncated result row (%d fields)" % len(toks), PARSER, source, lineno)
        raise ParseError("result row has %d fields, expected %d" % (len(toks), want), PARSER, source, lineno)
    base = 5 if has_root else 4
    row = {
        "size_b": to_int(toks[0]),
        "count": to_int(toks[1]),
        "type": toks[2],
        "redop": toks[3],
        "root": to_int(toks[4]) if has_root else None,
        "out": _half(toks[base : base + 4], source, lineno),
        "in": _half(toks[base + 4 : base + 8], source, lineno),
    }
    if row["size_b"] is None or row["count"] is None:
        raise ParseError("size %r / count %r is not an integer" % (toks[0][:40], toks[1][:40]), PARSER, source, lineno)
    out["rows"].append(row)


def _summarize(out: Dict[str, Any], source: Any) -> Dict[str, Any]:
    """Totals over the parsed rows (wrong, best busbw and its size) and the truncation note."""
    best = None
    for row in out["rows"]:
        for half in (row["out"], row["in"]):
            if isinstance(half["wrong"], (int, float)) and not isinstance(half["wrong"], bool):
                # "#wrong" counts wrong elements; the older "error" column is a max relative error (float)
                if isinstance(half["wrong"], int):
                    out["wrong"] += half["wrong"]
            if best is None or half["busbw_gbps"] > best[0]:
                best = (half["busbw_gbps"], row["size_b"])
    if best is not None:
        out["max_busbw_gbps"], out["peak_size_b"] = best
    if out["rows"] and not out["complete"]:
        out["errors"].append(
            error_record(DOMAIN, "parse", "output ends before '# Avg bus bandwidth' (truncated?)", source, PARSER)
        )
    return out


def _blank(source: Optional[str]) -> Dict[str, Any]:
    return {
        "source": source,
        "ngpus": None,
        "nthreads": None,
        "min_bytes": None,
        "max_bytes": None,
        "ranks": [],
        "hosts": [],
        "rows": [],
        "avg_busbw_gbps": None,
        "max_busbw_gbps": None,
        "peak_size_b": None,
        "wrong": 0,
        "out_of_bounds": None,
        "complete": False,
        "failures": [],
        "errors": [],
    }


def from_text(text: str, source: str, path: Optional[str] = None) -> Dict[str, Any]:
    """parse() at the collector boundary: a ParseError becomes an error record (partial results kept)."""
    try:
        return parse(text, source)
    except ParseError as exc:
        if exc.source is None:
            exc.source = path or source
        result = _blank(source)
        result["errors"].append(exc.to_error(DOMAIN))
        return result


def argv_for(
    exe: str,
    min_bytes: str = "8",
    max_bytes: str = "8G",
    step_factor: int = 2,
    gpus: Optional[int] = None,
    launcher: Optional[Sequence[str]] = None,
    extra_args: Optional[Sequence[str]] = None,
) -> List[str]:
    """The command line: ``[launcher...] all_reduce_perf -b MIN -e MAX -f F [-g N] [extra...]``."""
    argv = list(launcher or []) + [exe, "-b", str(min_bytes), "-e", str(max_bytes), "-f", str(int(step_factor))]
    if gpus:
        argv += ["-g", str(int(gpus))]
    return argv + list(extra_args or [])


def collect(
    capture_dir: Optional[str] = None,
    timeout: float = 300.0,
    path: Optional[str] = None,
    env: Optional[Dict[str, str]] = None,
    **argv_kw: Any,
) -> Dict[str, Any]:
    """One all_reduce_perf result from ``capture_dir/nccl-all-reduce.txt`` or from running the tool.

    A timeout, a failed start or a non-zero exit is an error record (``timeout`` / ``missing`` / ``tool_error``);
    the partial output is still parsed (the rows printed before a hang are evidence)."""
    if capture_dir:
        fpath = os.path.join(capture_dir, CAPTURE_FILE)
        source = "capture:" + CAPTURE_FILE
        try:
            text = read_text(fpath)
        except ParseError as exc:
            result = _blank(source)
            result["errors"].append(exc.to_error(DOMAIN))
            return result
        if text is None:
            result = _blank(None)
            result["errors"].append(error_record(DOMAIN, "missing", "%s not found" % fpath, fpath))
            return result
        return from_text(text, source, fpath)
    exe = path or which("all_reduce_perf")
    if not exe or not os.path.exists(exe):
        result = _blank(None)
        result["errors"].append(
            error_record(DOMAIN, "missing", "all_reduce_perf not found (%s)" % (exe or "PATH"), "all_reduce_perf")
        )
        return result
    argv = argv_for(exe, **argv_kw)
    res = run_command(argv, timeout=timeout, env=env)
    result = from_text(res.stdout, "all_reduce_perf") if res.stdout.strip() else _blank("all_reduce_perf")
    result["argv"] = argv
    result["duration_s"] = round(res.duration, 3)
    if res.timed_out:
        result["errors"].append(error_record(DOMAIN, "timeout", res.describe(), "all_reduce_perf"))
    elif res.error is not None:
        result["errors"].append(error_record(DOMAIN, "missing", res.describe(), "all_reduce_perf"))
    elif res.rc != 0:
        msg = res.describe()
        if result["failures"]:
            msg += " (%s)" % result["failures"][0]
        result["errors"].append(error_record(DOMAIN, "tool_error", msg, "all_reduce_perf"))
    return result
