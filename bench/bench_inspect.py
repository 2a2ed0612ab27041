#!/usr/bin/env python3
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark the inspection (not part of `make test`).

  .venv/bin/python bench/bench_inspect.py [--sizes 100,500,1000] [--naive 100,200] [--out bench/results]

(a) gpuops offline inspection: ansible-playbook playbooks/inspect.yml over N generated capture hosts, reports included;
(b) a naive playbook doing similar checks as separate command tasks with Jinja parsing (bench/naive/);
(c) the floor: collectors + policy + reports called in a plain Python loop, no Ansible.
Prints wall time and per-host cost and writes a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _benchenv import ansible_env  # noqa: E402  (bench/ is sys.path[0] when run as a script)

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "build"))
VENV_BIN = REPO / ".venv" / "bin"


def env():
    return ansible_env()


def generate(out: Path, n: int) -> None:
    subprocess.run(
        [
            sys.executable,
            str(REPO / "tools/simcluster/generate.py"),
            "--nodes",
            str(n),
            "--out",
            str(out),
            "--seed",
            "7",
        ],
        check=True,
        capture_output=True,
        env=env(),
    )


def timed(argv, **kw):
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env(), cwd=str(REPO), check=False, **kw)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit("failed: %s\n%s" % (" ".join(map(str, argv)), proc.stdout[-2000:] + proc.stderr[-2000:]))
    return dt


def _playbook(sim: Path, playbook: str, extra: str) -> list:
    """ansible-playbook argv for ``playbook`` over the simulated cluster ``sim`` with one extra var."""
    return [str(VENV_BIN / "ansible-playbook"), "-i", str(sim / "inventory"), playbook, "-e", extra]


def floor(sim: Path) -> float:
    import yaml

    from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect

    inv = yaml.safe_load((sim / "inventory" / "hosts.yml").read_text())
    gv = (
        yaml.safe_load((sim / "inventory" / "group_vars" / "gpu_nodes.yml").read_text())
        if (sim / "inventory" / "group_vars" / "gpu_nodes.yml").exists()
        else {}
    )
    profiles = gv.get("gpuops_profiles", {})
    hosts = {}
    for h, hv in inv["all"]["children"]["gpu_nodes"]["hosts"].items():
        hosts[h] = {
            "capture_dir": hv["gpuops_capture_dir"],
            "previous_capture_dir": hv.get("gpuops_previous_capture_dir"),
            "rack": hv.get("gpuops_rack"),
            "leaf": hv.get("gpuops_leaf_switch"),
            "power": hv.get("gpuops_power_domain"),
            "node_class": hv.get("gpuops_node_class"),
        }
    t0 = time.perf_counter()
    report = _inspect.inspect_nodes(hosts, profiles=profiles)
    with tempfile.TemporaryDirectory() as d:
        _inspect.write_reports(report, d)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,500,1000")
    ap.add_argument("--naive", default="100,200")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        sizes = sorted({int(x) for x in args.sizes.split(",") if x} | {int(x) for x in args.naive.split(",") if x})
        for n in sizes:
            sim = tmp / ("sim%d" % n)
            generate(sim, n)
            row = {"nodes": n}
            if str(n) in args.sizes.split(","):
                row["gpuops_s"] = timed(
                    _playbook(sim, "playbooks/inspect.yml", "gpuops_report_dir=%s" % (tmp / ("r%d" % n)))
                )
                row["floor_s"] = floor(sim)
            if str(n) in args.naive.split(","):
                naive = _playbook(
                    sim, "bench/naive/naive_inspect.yml", "naive_report=%s" % (tmp / ("naive%d.json" % n))
                )
                row["naive_s"] = timed(naive + ["-f", "10"])
            for k in ("gpuops_s", "floor_s", "naive_s"):
                if k in row:
                    row[k.replace("_s", "_ms_per_host")] = round(1000 * row[k] / n, 1)
                    row[k] = round(row[k], 2)
            if "naive_s" in row and "gpuops_s" in row:
                row["speedup_vs_naive"] = round(row["naive_s"] / row["gpuops_s"], 1)
            print(json.dumps(row), flush=True)
            results.append(row)
    os.makedirs(args.out, exist_ok=True)
    out = Path(args.out) / "bench_inspect.json"
    out.write_text(json.dumps(results, indent=1))
    print("written", out)


if __name__ == "__main__":
    main()
