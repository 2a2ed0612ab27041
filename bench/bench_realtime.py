#!/usr/bin/env python3
"""Real-time path latency on the test bed (issue 40): `make bench-realtime`.

Brings the bed up (tests/testbed/testbed.sh, 4 nodes by default) and the real-time chain on it
(tests/testbed/realtime.sh: health check under slurmd, node_exporter, Prometheus, Alertmanager, ansible-rulebook),
runs each fault N times, one at a time, healing the node in between (default state, health-check memory cleared,
resumed, no alert left firing), prints per fault p50/p95/max from injection to detection, to action started and
to action verified, with the intervals it ran with, and brings everything down. The last line is
`realtime p95: xid79_drained=<s> leak_power_off=<s> ib_down_drained=<s>`.

    bench/bench_realtime.py [--n 10] [--ib-n N] [--faults xid79,leak,ib_down] [--keep] (GPUOPS_TB: the bed's dir)

Faults: xid79 (an Xid 79 line in the node's kernel log and the GPU lost: slurmd's health check drains the node);
leak (the Redfish emulator's ColdPlate0 LeakDetector Critical, in the hub netns: the rulebook's leak watch,
gpuops.cluster.redfish_leak, polls it every GPUOPS_RT_LEAK_INTERVAL s -> playbooks/leak_response.yml through
the guard and the audit -> the system's power Off on the emulator); ib_down (IB port 1 of one HCA Disabled in
sysfs/ibstat: slurmd's health check drains the node on the health_check_ib_down_runs-th consecutive DOWN run).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "testbed" / "lib"))
from rtchain import Chain  # noqa: E402

TESTBED = REPO / "tests" / "testbed"


def pct(values, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[k]


def sh(*cmd, env=None, timeout=600):
    proc = subprocess.run(list(cmd), env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode:
        sys.exit("bench_realtime: %s failed:\n%s%s" % (" ".join(cmd), proc.stdout[-2000:], proc.stderr[-3000:]))
    return proc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10, help="runs of each fault (>= 10 for published figures)")
    ap.add_argument("--ib-n", type=int, default=None, help="runs of ib_down (default --n; each takes ~2-3 min)")
    ap.add_argument("--faults", default="xid79,leak,ib_down")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--keep", action="store_true", help="use a bed that is up, leave it up")
    ap.add_argument("--hc-interval", type=int, default=5)
    ap.add_argument("--leak-interval", type=float, default=2.0, help="the leak watch's Redfish poll (s)")
    ap.add_argument("--ib-down-runs", type=int, default=3, help="health_check_ib_down_runs")
    args = ap.parse_args()
    tb = os.environ.get("GPUOPS_TB", "/tmp/gpuops-tb-bench-rt")
    env = dict(os.environ, GPUOPS_TB=tb, GPUOPS_RT_HC_INTERVAL=str(args.hc_interval),
               GPUOPS_RT_LEAK_INTERVAL="%g" % args.leak_interval, GPUOPS_RT_IB_DOWN_RUNS=str(args.ib_down_runs))  # fmt: skip
    t_up = time.time()
    if not args.keep:
        sh("bash", str(TESTBED / "testbed.sh"), "up", str(args.nodes), env=env)
    try:
        sh("bash", str(TESTBED / "realtime.sh"), "up", env=env)
        print("bed and chain up in %.1f s (%s)" % (time.time() - t_up, tb), flush=True)
        results = run(Chain(tb), args)
    finally:
        if not args.keep:
            subprocess.run(["bash", str(TESTBED / "realtime.sh"), "down"], env=env, capture_output=True, check=False)
            subprocess.run(["bash", str(TESTBED / "testbed.sh"), "down"], env=env, capture_output=True, check=False)
    report(results, args)


def run(c, args):
    faults = [f for f in args.faults.split(",") if f]
    for host in c.nodes:
        c.heal(host, timeout=180)
    results = {f: [] for f in faults}
    failed = {}
    hosts = c.nodes[1:] or c.nodes
    for f in faults:
        n = args.ib_n if f == "ib_down" and args.ib_n is not None else args.n
        for i in range(n):
            host = c.leak_source() if f == "leak" else hosts[i % len(hosts)]
            heal = (lambda: c.leak_heal(timeout=240)) if f == "leak" else (lambda h=host: c.heal(h, timeout=240))
            try:
                if f == "xid79":
                    r = c.time_xid79(host, timeout=60)
                elif f == "leak":
                    r = c.time_leak(timeout=180)
                else:
                    r = c.time_ib_down(host, timeout=180)
            except AssertionError as exc:  # a trial that did not reach its action: said, counted, not timed
                print("  %s #%d on %s: FAILED %s" % (f, i + 1, host, exc), flush=True)
                failed[f] = failed.get(f, 0) + 1
                heal()
                continue
            results[f].append(r)
            print("  %s #%d on %s: %s" % (f, i + 1, host, " ".join("%s=%.2f" % kv for kv in sorted(r.items()))),
                  flush=True)  # fmt: skip
            heal()
    for f, n in failed.items():
        print("%s: %d trial(s) did not reach the action within the deadline" % (f, n))
    return results


def report(results, args):
    print()
    print("intervals: HealthCheckInterval=%d s; health_check_ib_down_runs=%d; leak watch Redfish poll %g s;"
          " scrape 1 s; rule groups: gpuops-collection 30 s (GpuopsNodeHealth*), gpuops-infiniband 30 s with"
          " IbPortDown for: 1m; Alertmanager gpuops-eda route group_wait 10 s, group_interval 1 m;"
          " health_check_call_timeout 5 s" % (args.hc_interval, args.ib_down_runs, args.leak_interval))  # fmt: skip
    print("%-9s %3s  %-24s %-24s %-24s" % ("fault", "n", "detect p50/p95/max s", "started p50/p95/max s",
                                            "verified p50/p95/max s"))  # fmt: skip
    p95 = {}
    for f, rs in results.items():
        if not rs:
            continue
        cols = []
        for k in ("detect", "started", "verified"):
            v = [r[k] for r in rs]
            cols.append("%6.2f %6.2f %6.2f" % (pct(v, 50), pct(v, 95), max(v)))
        print("%-9s %3d  %-24s %-24s %-24s" % (f, len(rs), *cols))
        p95[f] = pct([r["verified"] for r in rs], 95)
        if f == "xid79":
            hc = [r["hc_run_s"] for r in rs]
            print("health check run (s): p50 %.2f p95 %.2f max %.2f" % (pct(hc, 50), pct(hc, 95), max(hc)))

    def fmt(f):
        return "%.1f" % p95[f] if f in p95 else "n/a"

    print("realtime p95: xid79_drained=%s leak_power_off=%s ib_down_drained=%s"
          % (fmt("xid79"), fmt("leak"), fmt("ib_down")))  # fmt: skip


if __name__ == "__main__":
    main()
