#!/usr/bin/env python3
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inspection of real-sized captures without ansible-playbook (issue 41; not part of `make test`).

  .venv/bin/python bench/bench_realsize_floor.py --sim build/offsim/n10000-ini-real --nodes 500 --out DIR

What ``inspect_cluster`` does for a simulated cluster's captured targets (``bench_offline.py --inventory ini
--real-size`` generates one), called in a plain Python loop: ``inspect_nodes`` (parse on every CPU, evaluate,
cluster view; the platform read from the cluster capture) and ``write_reports``, with a fresh state directory and
a fixed ``now`` so two runs over the same captures must give the same report. Prints the phases' seconds and
writes ``DIR/outcome.json``: every node's status and findings and the cluster findings, as compact sorted JSON,
the bytes to compare before and after a change (``cmp``); ``--profile FILE`` writes a cProfile of the parent (CPU
time: on a shared machine wall time says little). ``cpu_s``: the CPU seconds of the run and its workers.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import json
import os
import resource
import shlex
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "build"))

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.platform import collect_platform  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pool as _pool  # noqa: E402

NOW = datetime.datetime(2026, 12, 8, 0, 0, 0, tzinfo=datetime.timezone.utc)


def hosts_of(sim: Path, n: int) -> dict:
    """The first ``n`` captured hosts of the simulated cluster's INI inventory, as inspect_cluster passes them."""
    hosts = {}
    for line in (sim / "inventory" / "hosts.ini").read_text().splitlines():
        if not line or line[0] in "#[":
            continue
        name, *pairs = shlex.split(line)
        hv = dict(p.split("=", 1) for p in pairs)
        hosts[name] = {
            "capture_dir": hv["gpuops_capture_dir"],
            "previous_capture_dir": hv.get("gpuops_previous_capture_dir"),
            "rack": hv.get("gpuops_rack"),
            "leaf": hv.get("gpuops_leaf_switch"),
            "power": hv.get("gpuops_power_domain"),
            "node_class": hv.get("gpuops_node_class"),
        }
        if len(hosts) >= n:
            break
    return hosts


def outcome(report: dict) -> bytes:
    """What must not change: each node's status, reason and findings, the cluster findings, the summary."""
    keep = {
        "nodes": {
            h: {k: n.get(k) for k in ("status", "status_reason", "severity", "findings", "domains")}
            for h, n in report["nodes"].items()
        },
        "cluster_findings": report.get("cluster_findings"),
        "summary": report.get("summary"),
    }
    return json.dumps(keep, sort_keys=True, separators=(",", ":"), default=str).encode()


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", type=Path, default=REPO / "build" / "offsim" / "n10000-ini-real")
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--out", required=True, help="the report directory (outcome.json written there too)")
    ap.add_argument("--workers", type=int)
    ap.add_argument("--profile", help="a cProfile of the parent process to this file")
    args = ap.parse_args()
    hosts = hosts_of(args.sim, args.nodes)
    gv = yaml.safe_load((args.sim / "inventory" / "group_vars" / "gpu_nodes.yml").read_text())
    platform = collect_platform(capture_dir=str(args.sim / "cluster"))
    prof = cProfile.Profile(time.process_time) if args.profile else None
    # the CPU seconds of each pooled phase (the first map is the read, the second the evaluation): the workers are
    # reaped when a map ends, so their time is in RUSAGE_CHILDREN by then
    pooled: list = []
    inner = _pool.map_hosts

    def timed_map(*a, **kw):
        c0 = _cpu()
        try:
            return inner(*a, **kw)
        finally:
            pooled.append(round(_cpu() - c0, 1))

    _pool.map_hosts = timed_map  # CPU: the machine is shared
    timing: dict = {}
    with tempfile.TemporaryDirectory(prefix="realsize-floor-") as state:
        cpu0 = _cpu()
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        report = _inspect.inspect_nodes(
            hosts,
            profiles=gv.get("gpuops_profiles"),
            state_dir=state,
            now=NOW,
            timing=timing,
            progress=False,
            platform=platform,
            workers=args.workers,
        )
        t1 = time.perf_counter()
        _inspect.write_reports(report, args.out)
        t2 = time.perf_counter()
        cpu = _cpu() - cpu0
        if prof:
            prof.disable()
            prof.dump_stats(args.profile)
    Path(args.out, "outcome.json").write_bytes(outcome(report))
    timing = {k: round(v, 2) if isinstance(v, float) else v for k, v in timing.items()}
    print(
        json.dumps(
            dict(
                nodes=len(hosts),
                inspect_s=round(t1 - t0, 2),
                reports_s=round(t2 - t1, 2),
                total_s=round(t2 - t0, 2),
                # this process and its workers, user + system: what the run cost whatever else ran
                cpu_s=round(cpu, 1),
                cpu_read_s=pooled[0] if pooled else None,
                cpu_evaluate_s=pooled[1] if len(pooled) > 1 else None,
                phases=timing,
                load=os.getloadavg(),
            )
        )
    )


if __name__ == "__main__":
    main()
