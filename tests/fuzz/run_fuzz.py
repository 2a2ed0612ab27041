# -*- coding: utf-8 -*-
"""The long fuzz campaign over every parser (``make fuzz``; not part of ``make test``).

Generates mutated real samples (tests/unit/fuzz/fuzz_targets.py) and feeds them to each parser. The contract
(issue 12): no exception other than ParseError, no input over the per-input time limit (1 s), memory bounded.
Prints, per parser: inputs, inputs that raised ParseError, inputs that produced parse-error entries, other
exceptions, timeouts, the slowest input; then totals, wall time and peak RSS. Exit status 1 when any input
raised something else than ParseError or ran over the limit (the inputs are saved under --save-dir).

    python tests/fuzz/run_fuzz.py --total 1050000 --jobs 2 --seed 12
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import random
import resource
import signal
import sys
import time
import traceback
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "fuzz"))

import fuzz_targets as ft  # noqa: E402

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError  # noqa: E402

#: Generated inputs are cut to this size: the real outputs in the samples are at most a few hundred KiB (kernel
#: logs are fuzzed through a window), and repeated line-duplication would otherwise reach hundreds of MiB, past
#: what any parser is given (collectors refuse files over 64 MiB) and past any 1 s budget for honest reasons.
MAX_INPUT_CHARS = 1 << 20
#: Big samples (kernel logs of 100,000+ lines) are fuzzed through a window of this many lines.
WINDOW = {"kernel_log": 400, "ipmi_sdr": 400, "sysfs_ib": 600}
CHUNK = 2000


class _Timeout(BaseException):
    """Raised by SIGPROF inside a parse that runs over the per-input CPU time limit."""


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Timeout()


def _window(text: str, rng: random.Random, size: int) -> str:
    lines = text.splitlines(True)
    if len(lines) <= size:
        return text
    start = rng.randrange(len(lines) - size)
    return "".join(lines[start : start + size])


def _save(save_dir: str, name: str, text: str, what: str) -> str:
    os.makedirs(save_dir, mode=0o700, exist_ok=True)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    path = os.path.join(save_dir, "%s-%s-%s.txt" % (name, what, digest))
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as fh:
        fh.write(text)
    return path


def run_chunk(args: Tuple[str, int, int, float, str]) -> Dict[str, Any]:
    """Fuzz one target with ``count`` inputs from ``seed``; returns the chunk's figures."""
    name, seed, count, limit, save_dir = args
    target = ft.by_name()[name]
    rng = random.Random(seed)
    signal.signal(signal.SIGPROF, _alarm)
    out: Dict[str, Any] = {
        "name": name,
        "inputs": 0,
        "parse_error": 0,
        "with_entries": 0,
        "exceptions": 0,
        "timeouts": 0,
        "slowest": (0.0, 0, ""),
        "slowest_wall": 0.0,
        "examples": [],
        "bytes": 0,
    }
    for _i in range(count):
        base = rng.choice(target.inputs)
        if name in WINDOW:
            base = _window(base, rng, WINDOW[name])
        ops = [
            (rng.randrange(ft.N_OPS), rng.randrange(1 << 30), rng.randrange(1 << 30)) for _k in range(rng.randint(1, 5))
        ]
        text = target.apply(base, ops)[:MAX_INPUT_CHARS]
        errors: List[Dict[str, Any]] = []
        t0 = time.perf_counter()
        c0 = time.process_time()
        # CPU time, not wall time: this machine's 2 cores are shared, and a starved process is not a slow parser
        signal.setitimer(signal.ITIMER_PROF, limit)
        try:
            result = target.run(text, errors)
            if isinstance(result, dict) and isinstance(result.get("errors"), list):
                errors = errors + result["errors"]  # nccl, dcgmi, nvidia-smi keep their entries in the result
        except ParseError:
            out["parse_error"] += 1
        except _Timeout:
            out["timeouts"] += 1
            out["examples"].append("timeout: " + _save(save_dir, name, text, "timeout"))
        except Exception as exc:  # noqa: BLE001 - what the campaign looks for
            out["exceptions"] += 1
            tb = traceback.extract_tb(exc.__traceback__)
            where = "%s:%d" % (os.path.basename(tb[-1].filename), tb[-1].lineno) if tb else "?"
            if len(out["examples"]) < 20:
                path = _save(save_dir, name, text, "exception")
                out["examples"].append("%s %s: %s (%s)" % (where, type(exc).__name__, str(exc)[:120], path))
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        dt = time.process_time() - c0
        out["slowest_wall"] = max(out["slowest_wall"], time.perf_counter() - t0)
        out["inputs"] += 1
        out["bytes"] += len(text)
        if any(e.get("kind") == "parse" for e in errors):
            out["with_entries"] += 1
        if dt > out["slowest"][0]:
            out["slowest"] = (dt, len(text), hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16])
            if dt > 0.25:
                _save(save_dir, name, text, "slow")
    out["rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--total", type=int, default=1_050_000, help="inputs over all parsers (default 1,050,000)")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    ap.add_argument("--limit", type=float, default=1.0, help="per-input time limit in seconds (default 1)")
    ap.add_argument("--targets", nargs="*", help="parser names (default: all)")
    ap.add_argument("--save-dir", default=os.path.join(ROOT, "build", "fuzz"), help="where failing inputs go")
    ap.add_argument("--max-rss-mib", type=int, default=1024, help="fail when a worker's peak RSS exceeds this")
    opts = ap.parse_args(argv)

    names = opts.targets or sorted(ft.by_name())
    per = -(-opts.total // len(names))
    tasks = []
    for i, name in enumerate(names):
        left, k = per, 0
        while left > 0:
            n = min(CHUNK, left)
            tasks.append((name, opts.seed * 1_000_003 + i * 10_007 + k, n, opts.limit, opts.save_dir))
            left -= n
            k += 1
    random.Random(opts.seed).shuffle(tasks)
    print(
        "fuzz: %d parsers, %d inputs each, %d chunks, %d worker(s), limit %.1f s CPU per input"
        % (len(names), per, len(tasks), opts.jobs, opts.limit),
        flush=True,
    )
    t0 = time.time()
    totals: Dict[str, Dict[str, Any]] = {}
    done = 0
    # maxtasksperchild: RSS stays bounded even if a parser leaked (and the peak we report is per worker life)
    with multiprocessing.get_context("fork").Pool(opts.jobs, maxtasksperchild=50) as pool:
        for res in pool.imap_unordered(run_chunk, tasks):
            t = totals.setdefault(
                res["name"],
                {k: 0 for k in ("inputs", "parse_error", "with_entries", "exceptions", "timeouts", "bytes")},
            )
            for k in ("inputs", "parse_error", "with_entries", "exceptions", "timeouts", "bytes"):
                t[k] += res[k]
            t.setdefault("examples", []).extend(res["examples"])
            t["slowest_wall"] = max(t.get("slowest_wall", 0.0), res["slowest_wall"])
            if res["slowest"][0] > t.get("slowest", (0.0,))[0]:
                t["slowest"] = res["slowest"]
            t["rss_kib"] = max(t.get("rss_kib", 0), res["rss_kib"])
            done += res["inputs"]
            if done % 100_000 < CHUNK:
                print("  %d inputs, %.0f s" % (done, time.time() - t0), flush=True)
    wall = time.time() - t0
    peak_rss = max([resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss] + [t["rss_kib"] for t in totals.values()])
    print()
    print(
        "%-14s %9s %11s %12s %10s %8s %10s %9s"
        % ("parser", "inputs", "ParseError", "err.entries", "exceptions", "timeouts", "slowest_cpu", "MiB_in")
    )
    bad = 0
    for name in names:
        t = totals[name]
        bad += t["exceptions"] + t["timeouts"]
        print(
            "%-14s %9d %11d %12d %10d %8d %10.3f %9.0f"
            % (
                name,
                t["inputs"],
                t["parse_error"],
                t["with_entries"],
                t["exceptions"],
                t["timeouts"],
                t["slowest"][0],
                t["bytes"] / 1048576.0,
            )
        )
        for ex in t.get("examples", [])[:5]:
            print("    " + ex)
    n = sum(t["inputs"] for t in totals.values())
    slow = max(((t["slowest"][0], name, t["slowest"][1]) for name, t in totals.items()), default=(0.0, "-", 0))
    print()
    print(
        "total: %d inputs, %d exceptions other than ParseError, %d over %.1f s"
        % (n, sum(t["exceptions"] for t in totals.values()), sum(t["timeouts"] for t in totals.values()), opts.limit)
    )
    print(
        "slowest input: %.3f s CPU (%s, %d characters); slowest wall time of any input: %.3f s"
        % (slow + (max(t["slowest_wall"] for t in totals.values()),))
    )
    print("peak RSS (largest worker): %.0f MiB; wall time: %.0f s" % (peak_rss / 1024.0, wall))
    if peak_rss / 1024.0 > opts.max_rss_mib:
        print("FAIL: peak RSS over %d MiB" % opts.max_rss_mib)
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
