#!/usr/bin/env python3
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline inspection at scale, end to end (issue 17; not part of `make test`).

  .venv/bin/python bench/bench_offline.py --nodes 10000 [--no-repeat] [--workers N]

Generates the simulated cluster once (cached in build/offsim/n<N>, captured layout), reads its files into the page
cache (``--no-warm``: not), then runs the real
``ansible-playbook playbooks/inspect.yml`` over it twice with one state directory: cold (every capture parsed,
the facts cache filled) and repeat (unchanged captures: parsed facts from the cache, evaluation as always).
For each run: wall seconds, the peak resident memory of the controller's process tree (psutil, polled every
``--poll`` s, default 1: the sum of the proportional set size of ansible-playbook and all its children, so pages
shared after a fork count once), the load average before and after, the machine's CPU seconds during the run
(user, system, iowait, steal: /proc/stat), and the split per task (ansible.posix.profile_tasks)
and per phase inside the evaluation (the action's ``timing``: hostvars_s, read_s, evaluate_s, cluster_s,
reports_s; printed with -v). Prints one JSON line per run and writes build/offsim/result-<N>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

import _realsize  # noqa: E402
from _benchenv import ansible_env  # noqa: E402  (bench/ is sys.path[0] when run as a script)

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = REPO / ".venv" / "bin"
CACHE = REPO / "build" / "offsim"


def env(extra=None):
    return ansible_env(ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_tasks", **(extra or {}))


def generate(n: int, inventory_format: str = "yaml", real_size: bool = False) -> Path:
    sim = CACHE / ("n%d" % n if inventory_format == "yaml" else "n%d-%s" % (n, inventory_format))
    if real_size:  # padded to a real node's size once (_realsize): its own directory
        sim = sim.with_name(sim.name + "-real")
    if (sim / "answer_key.json").exists() and (not real_size or (sim / ".realsize").exists()):
        return sim
    if real_size and (sim / "answer_key.json").exists():
        print(json.dumps({"real_size": _realsize.pad_cluster(sim)}), flush=True)
        return sim
    shutil.rmtree(sim, ignore_errors=True)
    sim.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, str(REPO / "tools/simcluster/generate.py"), "--nodes", str(n), "--out", str(sim)]
    argv += ["--inventory-format", inventory_format]
    subprocess.run(argv + ["--seed", "7"], check=True, env=env())
    if real_size:
        print(json.dumps({"real_size": _realsize.pad_cluster(sim)}), flush=True)
    return sim


def _tree_pss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc] + proc.children(recursive=True):
        try:
            mem = p.memory_full_info()
            total += getattr(mem, "pss", mem.rss)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


#: seconds between two samples of the tree's memory. A sample reads smaps_rollup, whose cost grows with the memory
#: mapped: ~28 ms of CPU for a 2 GiB process; every 0.2 s that took ~14 % of one of the two cores from the run it
#: measured at 10,000 nodes. The sampler's own CPU time is reported (sampler_cpu_s).
POLL_S = 1.0


_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _machine_cpu() -> dict:
    """The whole machine's CPU seconds so far by kind (/proc/stat): a run's share of iowait and steal (time the
    hypervisor gave to others) says whether its wall time was its own."""
    try:
        with open("/proc/stat") as fh:
            ticks = [int(x) for x in fh.readline().split()[1 : 1 + len(_STAT_FIELDS)]]
    except (OSError, ValueError):
        return {}
    hz = os.sysconf("SC_CLK_TCK")
    return {k: t / hz for k, t in zip(_STAT_FIELDS, ticks)}


def warm_page_cache(sim: Path) -> dict:
    """Read every capture file once, so that a cold run measures the parse, not the disk: the files of a just
    generated cluster are in the page cache, those of one generated days ago may not be (a 10,000-node cold run
    took 142 s from disk and 94 s from memory, same code)."""
    t0 = time.perf_counter()
    files = size = 0
    for sub in ("captures", "previous", "cluster"):
        for root, _dirs, names in os.walk(sim / sub):
            for name in names:
                try:
                    with open(os.path.join(root, name), "rb") as fh:
                        while True:
                            chunk = fh.read(1 << 20)
                            if not chunk:
                                break
                            size += len(chunk)
                except OSError:
                    continue
                files += 1
    return {"files": files, "mib": round(size / 2**20), "s": round(time.perf_counter() - t0, 1)}


def run(sim: Path, state_dir: str, report_dir: str, extra_env=None) -> dict:
    """One ansible-playbook run of the inspection; its wall time, peak memory, load and phases."""
    # -v: the evaluate task's result (with its "timing") is printed
    argv = [str(VENV_BIN / "ansible-playbook"), "-v", "-i", str(sim / "inventory"), "playbooks/inspect.yml"]
    argv += ["-e", "gpuops_report_dir=%s" % report_dir, "-e", "gpuops_state_dir=%s" % state_dir]
    load_before = os.getloadavg()
    cpu_before = _machine_cpu()
    own_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out_path = Path(report_dir + ".log")
    with open(out_path, "w") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env(extra_env), cwd=str(REPO))
        ps = psutil.Process(proc.pid)
        peak = [0]

        sampler_cpu = [0.0]

        def poll():
            t_cpu = time.thread_time()
            while proc.poll() is None:
                peak[0] = max(peak[0], _tree_pss(ps))
                time.sleep(POLL_S)
            sampler_cpu[0] = time.thread_time() - t_cpu

        th = threading.Thread(target=poll, daemon=True)
        th.start()
        rc = proc.wait()
        wall = time.perf_counter() - t0
        th.join()
    cpu_after = _machine_cpu()
    own_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = out_path.read_text(errors="replace")
    if rc != 0:
        raise SystemExit("ansible-playbook failed (rc %d):\n%s" % (rc, text[-3000:]))
    tasks = {}
    for m in re.finditer(r"^(.+?) -+ (\d+\.\d+)s$", text, re.M):
        tasks[m.group(1).strip()[-60:]] = float(m.group(2))
    m = re.search(r'"timing": (\{[^{}]*\})', text)
    timing = json.loads(m.group(1)) if m else None
    return {
        "wall_s": round(wall, 1),
        "peak_pss_mib": round(peak[0] / 2**20),
        "sampler_cpu_s": round(sampler_cpu[0], 1),
        "load_before": [round(x, 1) for x in load_before],
        "load_after": [round(x, 1) for x in os.getloadavg()],
        # the machine's CPU seconds during the run (both cores): user + system is the work, iowait the disk,
        # steal the hypervisor's other guests
        "machine_cpu_s": {
            k: round(cpu_after[k] - cpu_before[k], 1) for k in ("user", "system", "iowait", "steal") if k in cpu_after
        },
        # the run's own CPU seconds (ansible-playbook and every process it waited for): on a shared machine the
        # work of the run, whatever the others took
        "run_cpu_s": {
            "user": round(own_after.ru_utime - own_before.ru_utime, 1),
            "system": round(own_after.ru_stime - own_before.ru_stime, 1),
        },
        "tasks_s": tasks,
        "phases_s": timing,
        "report_json_mib": round(os.path.getsize(os.path.join(report_dir, "report.json")) / 2**20, 1),
        # every report file's size (issue 41: report.json without the facts, facts.json.gz beside it)
        "files_mib": {
            name: round(os.path.getsize(os.path.join(report_dir, name)) / 2**20, 2)
            for name in sorted(os.listdir(report_dir))
            if os.path.isfile(os.path.join(report_dir, name))
        },
        "progress_lines": re.findall(r"^gpuops inspect: .* in [0-9.]+ s$", text, re.M),
    }


def _score(sim: Path, report_dir: str) -> dict:
    """The report against the simulated cluster's answer key (tools/simcluster/score.py): padding is benign."""
    sys.path.insert(0, str(REPO / "tools" / "simcluster"))
    import score  # noqa: PLC0415

    with open(os.path.join(report_dir, "report.json")) as fh:
        report = json.load(fh)
    result = score.score(report, json.loads((sim / "answer_key.json").read_text()))
    out = {k: (len(v) if isinstance(v, list) else v) for k, v in result.items()}
    out["examples"] = {k: [list(x) for x in v[:5]] for k, v in result.items() if isinstance(v, list) and v}
    return out


def main() -> None:
    global POLL_S
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--no-repeat", action="store_true", help="only the cold run")
    ap.add_argument("--workers", type=int, help="GPUOPS_INSPECT_WORKERS (default: every CPU)")
    ap.add_argument(
        "--inventory",
        choices=("yaml", "ini"),
        default="yaml",
        help="the simulated inventory's format: ansible-core loads 10,000 hosts in ~19 s of YAML, ~3.6 s of INI",
    )
    ap.add_argument(
        "--real-size",
        action="store_true",
        help="captures padded to a real node's size (a boot's kernel log, a full SEL and SDR, IB hw_counters: _realsize)",
    )
    ap.add_argument("--poll", type=float, default=POLL_S, help="seconds between memory samples (default %(default)s)")
    ap.add_argument(
        "--no-warm", action="store_true", help="do not read the captures into the page cache before the cold run"
    )
    args = ap.parse_args()
    POLL_S = args.poll
    sim = generate(args.nodes, args.inventory, args.real_size)
    if not args.no_warm:
        print(json.dumps({"page_cache_warmed": warm_page_cache(sim)}), flush=True)
    extra = {}
    if args.workers:
        extra["GPUOPS_INSPECT_WORKERS"] = str(args.workers)
    results = {"nodes": args.nodes, "cpus": os.cpu_count(), "inventory": args.inventory, "real_size": args.real_size}
    with tempfile.TemporaryDirectory(prefix="bench-offline-") as tmp:
        state = os.path.join(tmp, "state")
        for label in ("cold",) + (() if args.no_repeat else ("repeat",)):
            results[label] = run(sim, state, os.path.join(tmp, label), extra)
            results[label]["score"] = _score(sim, os.path.join(tmp, label))
            print(json.dumps({label: results[label]}), flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    suffix = ("" if args.inventory == "yaml" else "-" + args.inventory) + ("-real" if args.real_size else "")
    out = CACHE / ("result-%d%s.json" % (args.nodes, suffix))
    out.write_text(json.dumps(results, indent=1))
    print("written", out)


if __name__ == "__main__":
    main()
