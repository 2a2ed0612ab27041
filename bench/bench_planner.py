#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark the rolling batch planner on 2,000 nodes in 64 racks, against a naive ``serial: 10%``.

    .venv/bin/python bench/bench_planner.py [--nodes 2000] [--racks 64] [--seed 7] [--json]

The naive rollout slices the hosts in inventory order (rack-major names) into 10% batches and ignores racks
and nodes already offline. For both, per batch: the nodes offline (already drained/down + the batch's
online nodes), the share of capacity kept online, the worst per-rack offline count. Figures in docs/upgrades.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
import conftest  # noqa: E402,F401  (makes ansible_collections.gpuops.cluster importable)

from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import planner as _planner  # noqa: E402


def make_cluster(n, racks, seed):
    rng = random.Random(seed)
    per_rack = int(math.ceil(n / float(racks)))
    nodes = []
    for i in range(n):
        rack = i // per_rack
        r = rng.random()
        state = "allocated" if r < 0.70 else "idle" if r < 0.95 else "drained" if r < 0.98 else "down"
        nodes.append(
            {
                "name": "gpu-r%02d-n%02d" % (rack, i % per_rack),
                "partition": "gpu",
                "rack": "r%02d" % rack,
                "leaf": "leaf%02d" % (rack // 2),  # two racks per leaf switch
                "power": "pdu-r%02d-%s" % (rack, "ab"[(i % per_rack) % 2]),  # two power domains per rack
                "est_duration_s": rng.choice((2700, 3000, 3600, 4200)),
                "state": state,
            }
        )
    return nodes


def batch_figures(nodes, batches):
    """Per batch: offline count, share online, worst per-rack offline (all recomputed from the input)."""
    idx = {n["name"]: n for n in nodes}
    pre = [n for n in nodes if n["state"] in ("drained", "down")]
    pre_rack = {}
    for n in pre:
        pre_rack[n["rack"]] = pre_rack.get(n["rack"], 0) + 1
    out = []
    for hosts in batches:
        rack = dict(pre_rack)
        extra = 0
        for h in hosts:
            if idx[h]["state"] in ("idle", "allocated"):
                extra += 1
                rack[idx[h]["rack"]] = rack.get(idx[h]["rack"], 0) + 1
        in_batch = {}
        for h in hosts:
            in_batch[idx[h]["rack"]] = in_batch.get(idx[h]["rack"], 0) + 1
        offline = len(pre) + extra
        out.append(
            {
                "size": len(hosts),
                "offline": offline,
                "online_share": 1.0 - offline / float(len(nodes)),
                "worst_rack_in_batch": max(in_batch.values()) if in_batch else 0,
                "worst_rack_offline": max(rack.values()) if rack else 0,
            }
        )
    return out


def summarize(name, figs, elapsed_s=None, deferred=0, est_s=None):
    return {
        "rollout": name,
        "batches": len(figs),
        "nodes": sum(f["size"] for f in figs),
        "deferred": deferred,
        "min_online_share": round(min(f["online_share"] for f in figs), 4) if figs else None,
        "mean_online_share": round(statistics.mean(f["online_share"] for f in figs), 4) if figs else None,
        "worst_rack_in_batch": max(f["worst_rack_in_batch"] for f in figs) if figs else 0,
        "worst_rack_offline": max(f["worst_rack_offline"] for f in figs) if figs else 0,
        "est_hours": round(est_s / 3600.0, 1) if est_s is not None else None,
        "plan_ms": round(elapsed_s * 1000, 1) if elapsed_s is not None else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--racks", type=int, default=64)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    nodes = make_cluster(a.nodes, a.racks, a.seed)
    constraints = {
        "max_offline_share": 0.1,
        "max_per_rack": 2,
        "max_per_leaf": 4,
        "max_per_power": 1,
        "canary_size": 1,
        "batch_overhead_s": 600,
        "include_down": False,
    }
    rows = []
    for label, extra in (("planner", {}), ("planner, 12 h window", {"window_s": 12 * 3600})):
        times = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            res = _planner.plan_batches(nodes, dict(constraints, **extra))
            times.append(time.perf_counter() - t0)
        figs = batch_figures(nodes, [b["hosts"] for b in res["batches"]])
        rows.append(summarize(label, figs, min(times), len(res["deferred"]), res["stats"]["est_total_s"]))
    # naive serial: 10% in inventory order, ignoring racks and nodes already offline; same per-batch time model
    size = int(math.ceil(0.1 * len(nodes)))
    order = sorted(n["name"] for n in nodes)
    naive = [order[i : i + size] for i in range(0, len(order), size)]
    idx = {n["name"]: n for n in nodes}
    naive_s = sum(max(idx[h]["est_duration_s"] for h in b) + constraints["batch_overhead_s"] for b in naive)
    rows.append(summarize("naive serial: 10%", batch_figures(nodes, naive), None, 0, naive_s))
    pre = sum(1 for n in nodes if n["state"] in ("drained", "down"))
    if a.json:
        print(json.dumps({"nodes": len(nodes), "racks": a.racks, "already_offline": pre, "rows": rows}, indent=2))
        return
    print("%d nodes, %d racks, %d already drained/down; constraints %s" % (len(nodes), a.racks, pre, constraints))
    hdr = ("rollout", "batches", "nodes", "deferred", "min_online", "mean_online", "rack/batch", "rack_off", "est_h",
           "plan_ms")  # fmt: skip
    print("%-22s %7s %6s %8s %10s %11s %10s %8s %6s %8s" % hdr)
    for r in rows:
        print(
            "%-22s %7d %6d %8d %10.3f %11.3f %10d %8d %6s %8s"
            % (
                r["rollout"],
                r["batches"],
                r["nodes"],
                r["deferred"],
                r["min_online_share"],
                r["mean_online_share"],
                r["worst_rack_in_batch"],
                r["worst_rack_offline"],
                r["est_hours"],
                r["plan_ms"] if r["plan_ms"] is not None else "-",
            )
        )


if __name__ == "__main__":
    main()
