#!/usr/bin/env python3
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run time of the node-side health check (the built zipapp) on a healthy test-bed node.

  GPUOPS_TB=/tmp/tb-x bash tests/testbed/testbed.sh up
  GPUOPS_TB=/tmp/tb-x .venv/bin/python bench/bench_health_check.py [--node gpu-node-02] [--reps 20]

Builds the program exactly as the role does (_health_check_bundle.build with the default policy), copies it into
the node, and runs it there ``--reps`` times with ``--dry-run --json`` (no scontrol update, no files written:
the bed is not changed). Reports the program's own run time (``run_seconds``: collection + evaluation), its CPU
time with every tool it ran (``cpu_seconds``: what a loaded machine does not inflate), and the
wall time of the whole process (interpreter start and zip import included), median and max, plus the CPU load
of the machine while it ran (the bed shares its cores with everything else).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "build"))

from ansible_collections.gpuops.cluster.plugins.plugin_utils.health_check import bundle as _health_check_bundle  # noqa: E402

PROG = "/usr/local/sbin/gpuops-health-check-bench"


def _node(node: str, *cmd: str, **kw) -> subprocess.CompletedProcess:
    sh = str(REPO / "tests" / "testbed" / "testbed.sh")
    return subprocess.run(["bash", sh, "node", node] + list(cmd), capture_output=True, text=True, check=True, **kw)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--node", default="gpu-node-02")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    if not os.environ.get("GPUOPS_TB"):
        sys.exit("set GPUOPS_TB to a running test bed (tests/testbed/testbed.sh up)")
    data = _health_check_bundle.build({"node_name": args.node, "state_file": "/tmp/gpuops-hc-bench/state.json"})
    staged = Path(os.environ["GPUOPS_TB"]) / "health-check-bench.pyz"  # /tmp is shared with the nodes
    staged.write_bytes(data)
    _node(args.node, "install", "-m", "0755", str(staged), PROG)
    staged.unlink()
    inner, wall, cpu = [], [], []
    load = os.getloadavg()[0]
    for _rep in range(args.reps):
        t0 = time.monotonic()
        out = _node(args.node, PROG, "--dry-run", "--json").stdout
        wall.append(time.monotonic() - t0)
        res = json.loads(out)
        if res["verdict"] != 0:
            sys.exit("node %s is not healthy: %s" % (args.node, res["status_reason"]))
        inner.append(res["run_seconds"])
        cpu.append(res["cpu_seconds"])
    _node(args.node, "rm", "-f", PROG)
    print(
        json.dumps(
            {
                "node": args.node,
                "reps": args.reps,
                "run_seconds_median": round(statistics.median(inner), 3),
                "run_seconds_max": round(max(inner), 3),
                "cpu_seconds_median": round(statistics.median(cpu), 3),
                "wall_seconds_median": round(statistics.median(wall), 3),
                "wall_seconds_max": round(max(wall), 3),
                "loadavg_1m_before": round(load, 2),
                "loadavg_1m_after": round(os.getloadavg()[0], 2),
                "cpus": os.cpu_count(),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
