#!/usr/bin/env python3
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report files of one inspection, before and after issue 41 (not part of `make test`).

  .venv/bin/python bench/bench_report_sizes.py --sim build/offsim/n10000-ini-real --nodes 2000 \
      --old-template build/old-template

Inspects the first N captured nodes of a generated cluster (``bench_offline.py`` writes them; ``--real-size``
for real-sized captures) in this process (``_inspect.inspect_nodes``, no ansible-playbook), then writes its
reports twice: as before issue 41 (the facts inline in report.json: ``inline_facts=True``; report.html from
``--old-template``, a directory holding the previous report.html.j2, e.g. ``git show 8ffbec8:plugins/plugin_utils/
report_templates/report.html.j2``) and as now (facts.json.gz beside report.json, the new report.html). Prints
one JSON line: each file's size in MiB and each write's seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import tempfile
import time
from pathlib import Path

import yaml

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect


def hosts_of(sim: Path, n: int) -> tuple:
    hosts = {}
    for line in (sim / "inventory" / "hosts.ini").read_text().splitlines():
        if not line.startswith("gpu-node-"):
            continue
        name, *pairs = shlex.split(line)
        v = dict(p.split("=", 1) for p in pairs)
        hosts[name] = {
            "capture_dir": v["gpuops_capture_dir"],
            "rack": v.get("gpuops_rack"),
            "leaf": v.get("gpuops_leaf_switch"),
            "power": v.get("gpuops_power_domain"),
            "node_class": v.get("gpuops_node_class"),
        }
        if len(hosts) == n:
            break
    profiles = yaml.safe_load((sim / "inventory" / "group_vars" / "gpu_nodes.yml").read_text())["gpuops_profiles"]
    return hosts, profiles


def sizes(d: str) -> dict:
    return {name: round(os.path.getsize(os.path.join(d, name)) / 2**20, 2) for name in sorted(os.listdir(d))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", required=True)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--old-template", help="a directory with the report.html.j2 of before issue 41")
    args = ap.parse_args()
    hosts, profiles = hosts_of(Path(args.sim), args.nodes)
    timing: dict = {}
    t0 = time.perf_counter()
    report = _inspect.inspect_nodes(hosts, profiles=profiles, timing=timing, progress=print)
    out = {"nodes": len(hosts), "inspect_s": round(time.perf_counter() - t0, 1), "phases_s": timing}
    with tempfile.TemporaryDirectory(prefix="bench-sizes-") as tmp:
        for label, kwargs in (
            ("before", {"inline_facts": True, "templates_dir": args.old_template}),
            ("after", {}),
        ):
            if label == "before" and not args.old_template:
                kwargs.pop("templates_dir")
            d = os.path.join(tmp, label)
            t = time.perf_counter()
            _inspect.write_reports(report, d, progress=False, **kwargs)
            out[label] = {"write_s": round(time.perf_counter() - t, 1), "files_mib": sizes(d)}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
