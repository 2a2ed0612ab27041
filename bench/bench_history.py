#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark a simulated quarter (issue 15): generate, load into the store, and report it.

    .venv/bin/python bench/bench_history.py [--nodes 10000] [--days 90] [--db-url URL] [--keep DIR] [--json]

Phases: ``generate`` (tools/simcluster/history.py: the JSONL history and its answer key), ``load`` (open the store,
migrate, bulk-insert every ledger table), and when plugins/plugin_utils/service/report.py exists ``report``
(``parse_period``, ``compute(store, period)``; then the render module's charts, Markdown, HTML and JSON). Each phase prints wall seconds, this process's CPU
seconds (the machine is shared: wall time includes waiting for a core; a PostgreSQL server's own CPU is not in
it) and the peak RSS sampled with psutil. Without --db-url the store is a fresh SQLite under a temporary state dir.
Not part of `make test`. Target (issue 15): generate + load + report of a 10,000-node quarter under 2 minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import conftest  # noqa: E402,F401  (makes ansible_collections.gpuops.cluster importable)

from simcluster import history as H  # noqa: E402
from simcluster import score_history  # noqa: E402
from simcluster.generate import hostnames  # noqa: E402

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store  # noqa: E402

SERVICE_REPORT = "ansible_collections.gpuops.cluster.plugins.plugin_utils.service.report"


class Phase:
    """Wall and CPU seconds and the peak RSS (psutil, sampled every 50 ms) of a block."""

    def __init__(self, name: str, results: list) -> None:
        self.name, self.results = name, results
        self.proc = psutil.Process()
        self.peak = 0
        self.stop = threading.Event()

    def _sample(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            self.stop.wait(0.05)

    def __enter__(self):
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)
        row = {
            "phase": self.name,
            "wall_s": round(time.perf_counter() - self.t0, 2),
            "cpu_s": round(time.process_time() - self.c0, 2),
            "peak_rss_mib": round(self.peak / 2**20, 1),
        }
        self.results.append(row)
        print(
            "%-9s %7.2f s wall  %7.2f s cpu  peak RSS %7.1f MiB"
            % (row["phase"], row["wall_s"], row["cpu_s"], row["peak_rss_mib"])
        )


def _report(store, key: dict, results: list) -> None:
    """compute (``parse_period``, ``compute(store, period)``) and render (``_service_report_render``: charts,
    to_markdown, to_html, to_json, where present) as two phases."""
    try:
        sr = importlib.import_module(SERVICE_REPORT)
    except ImportError:
        print("report    skipped: plugins/plugin_utils/service/report.py is not in this checkout")
        return
    with Phase("compute", results):
        report = sr.compute(store, sr.parse_period(key["period"]))
    lines, ok = score_history.score(report, {"history": key})
    print("\n".join("          " + line for line in lines))
    print("          against the answer key: %s" % ("PASS" if ok else "FAIL"))
    try:
        rd = importlib.import_module(SERVICE_REPORT + "_render")
    except ImportError:
        return
    with Phase("render", results):
        svgs = rd.charts(report) if hasattr(rd, "charts") else None
        for name in ("to_json", "to_markdown"):
            if hasattr(rd, name):
                getattr(rd, name)(report)
        if hasattr(rd, "to_html"):
            rd.to_html(report, svgs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--days", type=int, default=90)
    ap.add_argument("--start", default="2026-10-01")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--db-url", help="a PostgreSQL URL (an EMPTY database); default: SQLite in a temporary dir")
    ap.add_argument("--keep", help="write the history here and keep it (default: a temporary dir, removed)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON at the end")
    a = ap.parse_args(argv)
    work = a.keep or tempfile.mkdtemp(prefix="bench-history-")
    results: list = []
    try:
        with Phase("generate", results):
            key = H.write_history(hostnames(a.nodes), work, a.days, H.parse_start(a.start), a.seed)
        print("          %s" % H.summary(key, os.path.join(work, "history")))
        with open(os.path.join(work, "history_key.json"), "w", encoding="utf-8") as fh:
            json.dump({"history": key}, fh, indent=1, sort_keys=True)
        with Phase("load", results):
            store = open_store(state_dir=os.path.join(work, "state"), db_url=a.db_url)
            counts = H.load_history(store, os.path.join(work, "history"))
        print("          %d rows into %s" % (sum(counts.values()), store.url))
        with contextlib.closing(store):
            _report(store, key, results)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    total = sum(r["wall_s"] for r in results)
    print(
        "total     %7.2f s wall  %7.2f s cpu  (%d nodes, %d days)"
        % (total, sum(r["cpu_s"] for r in results), a.nodes, a.days)
    )
    if a.json:
        print(json.dumps({"nodes": a.nodes, "days": a.days, "phases": results, "total_wall_s": total}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
