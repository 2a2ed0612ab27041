#!/usr/bin/env python3
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU cost of one node's collection from a capture directory (all domains), per domain.

  .venv/bin/python bench/bench_collect.py [--reps 50]

Generates a small simulated cluster (8 x H100, 8 HCAs, BMC, DCGM, Slurm) and measures process CPU time
(time.process_time: unaffected by other load on the machine) of _collect.collect_all(capture_dir=...).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "build"))

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import collect as _collect  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                str(REPO / "tools/simcluster/generate.py"),
                "--nodes",
                "8",
                "--out",
                tmp,
                "--seed",
                "1",
                "--faults",
                "none",
            ],
            check=True,
            capture_output=True,
        )
        caps = sorted((Path(tmp) / "captures").iterdir())
        for c in caps:  # warm up imports and the page cache
            _collect.collect_all(capture_dir=str(c))
        per_domain = {}
        t0 = time.process_time()
        n = 0
        for _rep in range(args.reps):
            for c in caps:
                facts = _collect.collect_all(capture_dir=str(c))
                n += 1
                for d, t in facts["timings"].items():
                    per_domain[d] = per_domain.get(d, 0.0) + t
        cpu_ms = 1000 * (time.process_time() - t0) / n
        assert not facts["errors"], facts["errors"]
        out = {
            "nodes_measured": n,
            "cpu_ms_per_node": round(cpu_ms, 2),
            "wall_ms_per_domain": {d: round(1000 * t / n, 2) for d, t in sorted(per_domain.items())},
            "gpus": len(facts["gpu"]["gpus"]),
            "hcas": len(facts["ib"]["hcas"]),
        }
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
