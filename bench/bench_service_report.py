#!/usr/bin/env python3
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time of the service report over a synthetic 10,000-node quarter (docs/service-report.md "Performance").

  .venv/bin/python bench/bench_service_report.py [--nodes 10000] [--periods 10] [--db-url postgresql+psycopg://...]

Fills a fresh store (SQLite in a temporary state directory, or the PostgreSQL database given) with a quarter
(2026Q4): per node ``--periods`` node periods (up, down, unknown; worst case 100 -> 1,000,000 rows), about one
incident per two nodes with finding history and part serials, hourly allocation samples of 8 partitions,
maintenance windows and reviews; bulk inserts, not the ledger writer. Then times compute() and rendering
(JSON, Markdown, HTML with the SVG charts) and prints the figures. Not part of make test.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "build"))

from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import report as sr  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import report_render as render  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_schema, open_store  # noqa: E402

S = 1790812800.0  # 2026-10-01T00:00:00Z
E = 1798761600.0  # 2027-01-01T00:00:00Z
SEVS = ("P0", "P1", "P2", "P3")
CLASSES = ("gpu", "hbm", "nvlink", "ib_link", "psu", "fan", "node", "storage")


def node_periods(nodes: int, per_node: int, rng: random.Random):
    span = (E - S) / per_node
    for n in range(nodes):
        host = "gpu-%05d" % n
        partition = "p%d" % (n % 8)
        t = S - rng.uniform(0, 86400)
        for i in range(per_node):
            state = "up" if i % 2 == 0 else rng.choice(("down", "down", "unknown"))
            end = None if i == per_node - 1 else t + rng.uniform(0.5, 1.5) * span
            yield {"host": host, "state": state, "status": state, "partition": partition, "gpus": 8,
                   "started_at": t, "ended_at": end, "last_seen": end or t}  # fmt: skip
            t = end if end is not None else t


def incidents(nodes: int, rng: random.Random):
    inc, fh = [], []
    for i in range(nodes // 2):
        host = "gpu-%05d" % rng.randrange(nodes)
        sev = rng.choice(SEVS)
        comp = rng.choice(CLASSES)
        det = rng.uniform(S, E)
        fp = "%s|%s.check:%d" % (host, comp, i)
        inc.append({"incident_id": "INC-B-%06d" % i, "fingerprint": fp, "host": host, "severity": sev,
                    "domain": comp, "component": comp, "title": "t", "source": "finding", "state": "closed",
                    "detected_at": det, "acknowledged_at": det + rng.uniform(60, 3600),
                    "located_at": det + rng.uniform(3600, 86400 * 3), "restored_at": det + rng.uniform(600, 86400 * 2),
                    "closed_at": det + 86400 * 3})  # fmt: skip
        fh.append({"fingerprint": fp, "host": host, "check_id": comp + ".check", "severity": sev, "component": comp,
                   "part_serial": "SN-%04d" % rng.randrange(nodes // 4 or 1), "first_seen": det,
                   "last_seen": det + 3600})  # fmt: skip
    return inc, fh


def fill(store, nodes: int, per_node: int) -> float:
    rng = random.Random(15)
    t = ledger_schema.tables().tables
    started = time.perf_counter()
    with store.begin() as conn:
        batch = []
        for row in node_periods(nodes, per_node, rng):
            batch.append(row)
            if len(batch) >= 50000:
                conn.execute(t["node_periods"].insert(), batch)
                batch = []
        if batch:
            conn.execute(t["node_periods"].insert(), batch)
        inc, fh = incidents(nodes, rng)
        conn.execute(t["incidents"].insert(), inc)
        conn.execute(t["finding_history"].insert(), fh)
        conn.execute(t["reviews"].insert(), [
            {"incident_id": r["incident_id"], "cause": "c", "fix": "f", "change_ref": "v1", "checks": ["gpu.xid"],
             "at": r["detected_at"] + 86400} for r in inc[:50]])  # fmt: skip
        runs = int((E - S) // 3600)
        conn.execute(t["allocation_samples"].insert(), [
            {"run_id": "r%05d" % r, "at": S + r * 3600.0, "partition": "p%d" % p, "gpus_total": nodes,
             "gpus_alloc": int(nodes * rng.uniform(0.4, 0.9))} for r in range(runs) for p in range(8)])  # fmt: skip
        conn.execute(t["maintenance_windows"].insert(), [
            {"window_id": "w%d" % w, "name": "w", "starts_at": S + w * 7 * 86400.0, "ends_at": S + w * 7 * 86400.0 + 8 * 3600,
             "scope": {"partitions": ["p%d" % (w % 8)]} if w % 3 else {"all": True}} for w in range(13)])  # fmt: skip
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--periods", type=int, default=10, help="node periods per node (100: 1,000,000 rows)")
    ap.add_argument("--db-url", default="", help="a fresh PostgreSQL database instead of SQLite")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(db_url=args.db_url) if args.db_url else open_store(state_dir=tmp)
        try:
            load_s = fill(store, args.nodes, args.periods)
            t0, c0 = time.perf_counter(), time.process_time()
            report = sr.compute(store, sr.parse_period("2026Q4", now=E), now=E)
            compute_s, compute_cpu = time.perf_counter() - t0, time.process_time() - c0
        finally:
            store.close()
        t1, c1 = time.perf_counter(), time.process_time()
        texts = render.rendered(report)
        render_s, render_cpu = time.perf_counter() - t1, time.process_time() - c1
        t2 = time.perf_counter()
        render.write(texts, tmp + "/out")
        write_s = time.perf_counter() - t2
    print("backend            %s" % ("postgresql" if args.db_url else "sqlite"))
    print("nodes              %d" % args.nodes)
    print("node periods       %d" % (args.nodes * args.periods))
    print("incidents          %d" % report["sla"]["incidents"])
    print("bulk load          %.1f s" % load_s)
    print("compute            %.1f s wall, %.1f s CPU (this process; the database engine's own CPU on PostgreSQL excluded)" % (compute_s, compute_cpu))
    print("render (3 files)   %.1f s wall, %.1f s CPU" % (render_s, render_cpu))
    print("load average       %.1f (other work on the machine inflates the wall times)" % os.getloadavg()[0])
    print("write              %.2f s" % write_s)
    print("html size          %.0f kB" % (len(texts["html"]) / 1024))
    print("availability       %s %%" % report["availability"]["cluster"])
    print("breaches           %d" % len(report["sla"]["breaches"]))
    print("peak allocation    %s" % report["capacity"]["peak_allocated_share"])


if __name__ == "__main__":
    main()
