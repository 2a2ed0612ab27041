#!/usr/bin/env python3
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark a sliced inspection against an unsliced one (docs/scale-out.md; not part of `make test`).

  .venv/bin/python bench/bench_slices.py [--nodes 2000] [--slices 4] [--live 8] [--db-url postgresql://...]

One simulated cluster (tools/simcluster/generate.py: captured hosts with faults, a dead leaf switch among them)
plus ``--live`` local hosts (``ansible_connection: local``, each with its own interpreter and shell wrappers that put
the simulated node tools of its own node state on PATH: a live collection through gpuops.cluster.collect_info). The
slices run as concurrent ansible-runner processes, each with its own private data dir and ``--limit`` to its hosts
(AWX's cut: round robin over the inventory's hosts by index), then the merge, then an unsliced run of the same
inventory. Node verdicts (status and finding ids, actions, causes) and cluster findings are compared; prints
``sliced == unsliced: True`` or the differences, with timings, and writes a JSON summary.
The store is an embedded SQLite file under a temporary state dir, or ``--db-url`` (PostgreSQL).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from _benchenv import ansible_env  # noqa: E402  (bench/ is sys.path[0] when run as a script)

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = REPO / ".venv" / "bin"
FAULTS = "dead_leaf:2,xid79:3,xid48:2,row_remap_pending:2,ib_port_down:3,psu_failure:2,hung_mount:2,thermal_throttle:2"
TOOL_WRAPPER = '#!/bin/sh\nPYTHONPATH={tools} exec {python} -m simnode "$(basename "$0")" "$@"\n'
PY_WRAPPER = '#!/bin/sh\nexport SIMNODE_STATE={state} PATH={bin}:"$PATH"\nexec {python} "$@"\n'


def env() -> dict:
    return ansible_env(ANSIBLE_DEPRECATION_WARNINGS="False")


def add_live_hosts(work: Path, inventory: Path, count: int) -> list:
    """``count`` live local hosts in gpu_nodes (a rack of their own), each with its own simulated node state."""
    tools, python = REPO / "tools", "/usr/bin/python3"
    bindir = work / "live" / "bin"
    bindir.mkdir(parents=True)
    for tool in ("nvidia-smi", "ibstat", "ipmitool", "dcgmi", "journalctl", "dmesg", "scontrol"):
        path = bindir / tool
        path.write_text(TOOL_WRAPPER.format(tools=tools, python=python))
        path.chmod(0o755)
    inv = yaml.safe_load(inventory.read_text())
    hosts = inv["all"]["children"]["gpu_nodes"]["hosts"]
    names = []
    for i in range(1, count + 1):
        name = "live-node-%02d" % i
        node = work / "live" / name
        node.mkdir()
        state = node / "state.json"
        subprocess.run(
            [python, "-m", "simnode", "--state", str(state), "init", name, "--seed", str(i)],
            check=True,
            env=dict(os.environ, PYTHONPATH=str(tools)),
        )
        wrapper = node / "python"
        wrapper.write_text(PY_WRAPPER.format(state=state, bin=bindir, python=python))
        wrapper.chmod(0o755)
        # the shell commands run with (collect_info's shell capture): the same node state and tools
        shell = node / "sh"
        shell.write_text(PY_WRAPPER.format(state=state, bin=bindir, python="/bin/sh"))
        shell.chmod(0o755)
        hosts[name] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": str(wrapper),
            "ansible_shell_executable": str(shell),
            "gpuops_capture_dir": None,
            "gpuops_previous_capture_dir": None,
            "gpuops_rack": "rack-live",
            "gpuops_leaf_switch": "leaf-live",
            "gpuops_power_domain": "pdu-live",
        }
        names.append(name)
    inventory.write_text(yaml.safe_dump(inv, sort_keys=False))
    return names


def runner(work: Path, name: str, inventory: Path, extravars: dict, limit: str = "") -> subprocess.Popen:
    """One ansible-runner process with its own private data dir."""
    pdd = work / "runner" / name
    (pdd / "env").mkdir(parents=True)
    (pdd / "env" / "extravars").write_text(json.dumps(extravars))
    cmd = [str(VENV_BIN / "ansible-runner"), "run", str(pdd), "--project-dir", str(REPO / "playbooks")]
    cmd += ["-p", "inspect.yml", "--inventory", str(inventory), "--forks", "10"]
    if limit:  # the controller plays run on localhost: keep it (AWX cuts the inventory itself instead)
        cmd += ["--limit", limit + ",localhost"]
    log = open(work / ("%s.log" % name), "w")  # noqa: SIM115 (closed by the caller through wait())
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env(), cwd=str(REPO))


def wait(work: Path, procs: dict) -> None:
    bad = []
    for name, proc in procs.items():
        if proc.wait() != 0:
            bad.append(name)
    if bad:
        for name in bad:
            sys.stderr.write((work / ("%s.log" % name)).read_text()[-3000:])
        raise SystemExit("bench_slices: %s failed (logs in %s)" % (", ".join(bad), work))


def verdicts(report: dict) -> dict:
    nodes = {
        h: (n["status"], sorted((f["id"], f["severity"], f.get("action"), f.get("cause")) for f in n["findings"]))
        for h, n in report["nodes"].items()
    }
    cluster = sorted(
        (f["id"], f["severity"], f.get("action"), json.dumps((f.get("evidence") or {}).get("hosts"), sort_keys=True))
        for f in report["summary"]["cluster_findings"]
    )
    return {"nodes": nodes, "cluster": cluster}


def differences(a: dict, b: dict) -> list:
    out = []
    for host in sorted(set(a["nodes"]) | set(b["nodes"])):
        if a["nodes"].get(host) != b["nodes"].get(host):
            out.append("node %s: sliced %s != unsliced %s" % (host, a["nodes"].get(host), b["nodes"].get(host)))
    for f in sorted(set(a["cluster"]) ^ set(b["cluster"])):
        out.append("cluster finding only in %s: %s" % ("sliced" if f in a["cluster"] else "unsliced", f[0]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=2000, help="captured nodes")
    ap.add_argument("--slices", type=int, default=4)
    ap.add_argument("--live", type=int, default=8, help="live local hosts added to the captured ones")
    ap.add_argument("--db-url", default="", help="the shared store (PostgreSQL); default: SQLite in a temp state dir")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args(argv)
    if a.slices < 2 or a.nodes < a.slices:
        ap.error("--slices must be >= 2 and --nodes >= --slices")
    work = Path(tempfile.mkdtemp(prefix="bench-slices-"))
    timings = {}
    try:
        t = time.monotonic()
        subprocess.run(
            [sys.executable, str(REPO / "tools/simcluster/generate.py"), "--nodes", str(a.nodes), "--out",
             str(work / "sim"), "--faults", FAULTS],
            check=True, capture_output=True, env=env(),
        )  # fmt: skip
        inventory = work / "sim" / "inventory" / "hosts.yml"
        live = add_live_hosts(work, inventory, a.live)
        timings["generate_s"] = round(time.monotonic() - t, 1)
        hosts = sorted(yaml.safe_load(inventory.read_text())["all"]["children"]["gpu_nodes"]["hosts"])
        store = {"gpuops_db_url": a.db_url} if a.db_url else {"gpuops_state_dir": str(work / "state")}
        group = "bench-%d" % os.getpid()
        base = dict(store, gpuops_run_group=group)
        t = time.monotonic()
        procs = {
            "slice-%d" % k: runner(
                work,
                "slice-%d" % k,
                inventory,
                dict(base, gpuops_slice_mode="slice", gpuops_slice=k, gpuops_slice_count=a.slices),
                limit=",".join(hosts[k - 1 :: a.slices]),
            )
            for k in range(1, a.slices + 1)
        }
        wait(work, procs)
        timings["slices_s"] = round(time.monotonic() - t, 1)
        t = time.monotonic()
        merge = dict(
            base, gpuops_slice_mode="merge", gpuops_expect_slices=a.slices, gpuops_report_dir=str(work / "merged")
        )
        wait(work, {"merge": runner(work, "merge", inventory, merge)})
        timings["merge_s"] = round(time.monotonic() - t, 1)
        timings["sliced_total_s"] = round(timings["slices_s"] + timings["merge_s"], 1)
        t = time.monotonic()
        plain = {"gpuops_state_dir": str(work / "plain-state"), "gpuops_report_dir": str(work / "plain")}
        wait(work, {"unsliced": runner(work, "unsliced", inventory, plain)})
        timings["unsliced_s"] = round(time.monotonic() - t, 1)
        merged = json.loads((work / "merged" / "report.json").read_text())
        unsliced = json.loads((work / "plain" / "report.json").read_text())
        diff = differences(verdicts(merged), verdicts(unsliced))
        summary = {
            "nodes": len(hosts),
            "captured": len(hosts) - len(live),
            "live": len(live),
            "slices": a.slices,
            "store": "postgresql" if a.db_url else "sqlite",
            "equal": not diff,
            "differences": diff[:50],
            "cluster_findings": len(merged["summary"]["cluster_findings"]),
            "status": merged["summary"]["status"],
            "timings": timings,
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(),
        }
        os.makedirs(a.out, exist_ok=True)
        Path(a.out, "bench_slices.json").write_text(json.dumps(summary, indent=2) + "\n")
        print(
            "%d nodes (%d captured, %d live) in %d slices, store %s" % (
                len(hosts), len(hosts) - len(live), len(live), a.slices, summary["store"])
        )  # fmt: skip
        print("slices (concurrent) %.1f s + merge %.1f s = %.1f s; unsliced %.1f s; load average %s" % (
            timings["slices_s"], timings["merge_s"], timings["sliced_total_s"], timings["unsliced_s"],
            summary["load_average"]))  # fmt: skip
        print(
            "status %s; %d cluster findings"
            % (json.dumps(summary["status"], sort_keys=True), summary["cluster_findings"])
        )
        print("sliced == unsliced: %s" % (not diff))
        for line in diff[:50]:
            print("  " + line)
        return 0 if not diff else 1
    finally:
        if a.keep:
            print("work directory kept: %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
