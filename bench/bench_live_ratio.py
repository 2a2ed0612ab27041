#!/usr/bin/env python3
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The live path against a plain ping (not part of `make test`; docs/performance.md, "Live path vs ping").

  .venv/bin/python bench/bench_live_ratio.py [--hosts 60] [--forks 10] [--repeat 3] [--phases] [--floor]
      [--python-capture] [--node-parse] [--workdir DIR]

Builds N live local hosts (``ansible_connection=local``), each a simulated node: its own ``tools/simnode`` state
(generate.py --write-states) and its own tool directory (nvidia-smi, ibstat, ipmitool, dcgmi, journalctl, dmesg,
scontrol) put first on PATH by the host's interpreter wrapper (``ansible_python_interpreter``, set explicitly:
no interpreter discovery) and by its shell wrapper (``ansible_shell_executable``: the shell capture's script).
The fake tools answer with what the simulator prints for that node; each answer is rendered once (warm-up
run, not timed) and then replayed by a small shell script, so that the timed runs measure Ansible and the
collection, not the simulator's Python start-up.

Then, alternating, ``--repeat`` times: ``ansible-playbook bench/live_ping.yml`` (one ``ansible.builtin.ping`` per
host) and ``ansible-playbook playbooks/inspect.yml`` (live collection, evaluation, every report written), both
with ``-f FORKS`` over the same hosts. Prints each wall time with the 1-minute load average at its start, the
medians and the ratio; ``--phases`` adds one run of each with ``ansible.posix.profile_tasks`` (per-task times).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = REPO / ".venv" / "bin"
TOOLS = ("nvidia-smi", "ibstat", "ipmitool", "dcgmi", "journalctl", "dmesg", "scontrol")
NODE_PYTHON = "/usr/bin/python3"

# A fake tool, recording: the first call of an argument list asks the simulator (python3 -m simnode) and keeps its
# stdout, stderr, exit code and arguments; a repeated call replays them.
RECORD_SH = """#!/bin/sh
a="$*"
set -- "$(basename "$0")" "$@"
k=$(printf '%%s\\n' "$@" | md5sum); k=%(cache)s/${k%%%% *}
if [ ! -f "$k.rc" ]; then
  PYTHONPATH=%(tools)s %(py)s -m simnode --state %(state)s "$@" >"$k.out" 2>"$k.err"; echo $? >"$k.rc"
  printf '%%s' "$a" >"$k.args"; echo "$1" >"$k.tool"
fi
cat "$k.out"; cat "$k.err" >&2; read rc <"$k.rc"; exit "$rc"
"""


def _quote(text: str) -> str:
    return "'%s'" % text.replace("'", "'\\''")


def replay_script(cache: Path, tool: str, recorder: Path) -> str:
    """The tool after the warm-up: one ``case`` over the recorded argument lists, each answer one ``cat`` (the
    cost of a fast real tool: one process); an argument list never seen goes to the recorder."""
    lines = ["#!/bin/sh", 'case "$*" in']
    for args_file in sorted(cache.glob("*.args")):
        stem = args_file.with_suffix("")
        if (stem.parent / (stem.name + ".out")).exists() and _tool_of(stem) == tool:
            out, err = Path(str(stem) + ".out"), Path(str(stem) + ".err")
            rc = Path(str(stem) + ".rc").read_text().strip() or "1"
            if rc == "0" and not err.stat().st_size:
                action = "exec cat %s" % _quote(str(out))
            else:
                action = "cat %s; cat %s >&2; exit %s" % (_quote(str(out)), _quote(str(err)), rc)
            lines.append("%s) %s ;;" % (_quote(args_file.read_text()), action))
    lines += ['*) exec %s "$@" ;;' % _quote(str(recorder)), "esac", ""]
    return "\n".join(lines)


def _tool_of(stem: Path) -> str:
    return Path(str(stem) + ".tool").read_text().strip() if Path(str(stem) + ".tool").exists() else ""


PYTHON_SH = """#!/bin/sh
PATH=%(bin)s:$PATH
export PATH
exec %(py)s "$@"
"""


#: the checkout whose collection, playbooks/inspect.yml and ansible.cfg are measured (--repo: e.g. a "before" tree)
TARGET = [REPO]


def env(extra=None):
    e = dict(os.environ)
    e.update(
        PATH="%s:%s" % (VENV_BIN, e.get("PATH", "")),
        ANSIBLE_COLLECTIONS_PATH=str(TARGET[0] / "build"),
        ANSIBLE_CONFIG=str(TARGET[0] / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    for k in ("ANSIBLE_INVENTORY", "ANSIBLE_CALLBACKS_ENABLED", "ANSIBLE_STRATEGY", "ANSIBLE_KEEP_REMOTE_FILES"):
        e.pop(k, None)
    e.update(extra or {})
    return e


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def build(work: Path, n: int) -> Path:
    """Generate the simulated cluster and the live inventory; return the inventory directory."""
    import yaml

    sim = work / "sim"
    if sim.exists():
        shutil.rmtree(str(sim))
    subprocess.run(
        [sys.executable, str(REPO / "tools/simcluster/generate.py"), "--nodes", str(n), "--out", str(sim)]
        + ["--seed", "7", "--write-states", "--jobs", "2"],
        check=True,
        capture_output=True,
        env=env({"PYTHONPATH": "%s:%s" % (REPO / "build", REPO / "tools")}),
    )
    inv = yaml.safe_load((sim / "inventory" / "hosts.yml").read_text())
    if (work / "nodes").exists():
        shutil.rmtree(str(work / "nodes"))
    hosts = inv["all"]["children"]["gpu_nodes"]["hosts"]
    for host, hv in hosts.items():
        node = work / "nodes" / host
        (node / "bin").mkdir(parents=True, exist_ok=True)
        (node / "cache").mkdir(exist_ok=True)
        state = sim / "states" / ("%s.json" % host)
        (node / "rec").mkdir(exist_ok=True)
        for tool in TOOLS:
            _script(node / "bin" / tool, '#!/bin/sh\nexec %s "$@"\n' % (node / "rec" / tool))
            _script(
                node / "rec" / tool,
                RECORD_SH % {"cache": node / "cache", "tools": REPO / "tools", "py": NODE_PYTHON, "state": state},
            )
        _script(node / "python", PYTHON_SH % {"bin": node / "bin", "py": NODE_PYTHON})
        # the shell the connection runs commands with (the shell capture's script, the modules' wrapper): the same
        # tool directory first on PATH, as a real node has its tools on the system PATH
        _script(node / "sh", PYTHON_SH % {"bin": node / "bin", "py": "/bin/sh"})
        hv.pop("gpuops_capture_dir", None)
        hv.pop("gpuops_previous_capture_dir", None)
        hv.update(
            ansible_host="127.0.0.1",
            ansible_connection="local",
            ansible_python_interpreter=str(node / "python"),
            ansible_shell_executable=str(node / "sh"),
        )
    live = work / "inventory"
    if live.exists():
        shutil.rmtree(str(live))
    (live / "group_vars").mkdir(parents=True)
    (live / "hosts.yml").write_text(yaml.safe_dump(inv, sort_keys=False))
    # the node-class profiles; not the cluster capture directory (a live run reads no captured platform)
    shutil.copy(str(sim / "inventory" / "group_vars" / "gpu_nodes.yml"), str(live / "group_vars" / "gpu_nodes.yml"))
    return live


def _cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(argv, extra=None):
    """(wall s, 1-min load at the start, CPU s of the whole process tree, stdout) of one ansible-playbook run."""
    load = os.getloadavg()[0]
    c0, t0 = _cpu(), time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env(extra), cwd=str(TARGET[0]), check=False)
    dt, cpu = time.perf_counter() - t0, _cpu() - c0
    if proc.returncode != 0:
        raise SystemExit("failed: %s\n%s" % (" ".join(map(str, argv)), proc.stdout[-3000:] + proc.stderr[-3000:]))
    return dt, load, cpu, proc.stdout


def commands(inv: Path, work: Path, forks: int):
    pb = [str(VENV_BIN / "ansible-playbook"), "-i", str(inv), "-f", str(forks)]
    ping = pb + [str(REPO / "bench" / "live_ping.yml")]
    inspect = pb + [str(TARGET[0] / "playbooks" / "inspect.yml"), "-e", "gpuops_report_dir=%s" % (work / "reports")]
    inspect += ["-e", "gpuops_state_dir=%s" % (work / "state")]
    return ping, inspect


_PROFILE_LINE = re.compile(r"^(?P<task>.+?) -+ (?P<secs>\d+\.\d+)s$")


def phases(out: str):
    """Task lines of ansible.posix.profile_tasks' summary: [(task, seconds)]."""
    rows = []
    for line in out.splitlines():
        m = _PROFILE_LINE.match(line.strip())
        if m:
            rows.append((m.group("task"), float(m.group("secs"))))
    return rows


def _inventory_hosts(inv: Path) -> list:
    """The hosts of group gpu_nodes in ``inv`` (ansible-inventory --list)."""
    out = subprocess.run(
        [str(VENV_BIN / "ansible-inventory"), "-i", str(inv), "--list"],
        capture_output=True,
        text=True,
        env=env(),
        check=True,
    ).stdout
    return json.loads(out).get("gpu_nodes", {}).get("hosts", [])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=60)
    ap.add_argument("--forks", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--phases", action="store_true", help="one more run of each with ansible.posix.profile_tasks")
    ap.add_argument("--workdir", default="/tmp/gpuops-bench-live")
    ap.add_argument("--keep", action="store_true", help="reuse an existing work directory (no regeneration)")
    ap.add_argument("--repo", default=str(REPO), help="measure this checkout's collection (built: make setup)")
    ap.add_argument(
        "--inventory",
        help="an existing inventory of real hosts instead of the local ones (the test bed's $GPUOPS_TB/inventory.yml:"
        " sshd in network namespaces, real SSH; issue 41): no hosts are built, the nodes' own tools answer",
    )
    ap.add_argument(
        "--floor",
        action="store_true",
        help="also time bench/live_tools_floor.yml (one shell module per host running collect_info's tool calls) and"
        " bench/live_tools_floor_raw.yml (the same calls in one raw command: no Python on the node)",
    )
    ap.add_argument(
        "--python-capture",
        action="store_true",
        help="also time the inspection with gpuops_capture_via=python (the capture module on the node)",
    )
    ap.add_argument(
        "--node-parse",
        action="store_true",
        help="also time the inspection with gpuops_parse_on=node (the parsers on the node, as before 2026-12-04)",
    )
    args = ap.parse_args()
    TARGET[0] = Path(args.repo).resolve()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    inv = Path(args.inventory).resolve() if args.inventory else work / "inventory"
    if args.inventory:
        args.hosts = len(_inventory_hosts(inv))
        print("over SSH: %d hosts of %s" % (args.hosts, inv), flush=True)
    elif not (args.keep and inv.exists()):
        t0 = time.perf_counter()
        inv = build(work, args.hosts)
        print("built %d live local hosts in %.1f s (%s)" % (args.hosts, time.perf_counter() - t0, work), flush=True)
    ping, inspect = commands(inv, work, args.forks)
    runs = [("ping", ping), ("inspect", inspect)]
    if args.floor:
        runs.append(("floor", ping[:-1] + [str(REPO / "bench" / "live_tools_floor.yml")]))
        runs.append(("rawfloor", ping[:-1] + [str(REPO / "bench" / "live_tools_floor_raw.yml")]))
    if args.python_capture:
        runs.append(("pycap", inspect + ["-e", "gpuops_capture_via=python"]))
    if args.node_parse:
        runs.append(("node", inspect + ["-e", "gpuops_parse_on=node"]))
    run(inspect)  # warm-up, not timed: renders every tool answer once, warms the page cache
    for node in [] if args.inventory else sorted((work / "nodes").iterdir()):
        for tool in TOOLS:
            _script(node / "bin" / tool, replay_script(node / "cache", tool, node / "rec" / tool))
    run(ping)
    rows = {name: [] for name, _argv in runs}
    for i in range(args.repeat):
        for name, argv in runs:
            dt, load, cpu, _out = run(argv)
            rows[name].append({"wall_s": round(dt, 2), "load1": round(load, 2), "cpu_s": round(cpu, 2)})
            print("run %d %-7s %6.2f s wall  %6.2f s CPU  load %.2f" % (i + 1, name, dt, cpu, load), flush=True)
    med = {k: statistics.median(r["wall_s"] for r in v) for k, v in rows.items()}
    med_cpu = {k: statistics.median(r["cpu_s"] for r in v) for k, v in rows.items()}
    ratio, ratio_cpu = med["inspect"] / med["ping"], med_cpu["inspect"] / med_cpu["ping"]
    pairs = [b["wall_s"] / a["wall_s"] for a, b in zip(rows["ping"], rows["inspect"])]
    print(
        "median ping %.2f s, inspect %.2f s: ratio %.2f (pairwise %s); CPU ping %.2f s, inspect %.2f s: ratio %.2f;"
        " hosts %d, forks %d, load %s"
        % (med["ping"], med["inspect"], ratio, ", ".join("%.2f" % p for p in pairs), med_cpu["ping"],
           med_cpu["inspect"], ratio_cpu, args.hosts, args.forks, " ".join("%.2f" % x for x in os.getloadavg()))
    )  # fmt: skip
    result = {
        "repo": str(TARGET[0]),
        "connection": "ssh (%s)" % inv if args.inventory else "local",
        "hosts": args.hosts,
        "forks": args.forks,
        "runs": rows,
        "median_s": med,
        "ratio": round(ratio, 3),
        "median_cpu_s": med_cpu,
        "ratio_cpu": round(ratio_cpu, 3),
    }
    extra = (
        ("floor", "floor_ratio", "floor (tools only, one shell module a host)"),
        ("rawfloor", "raw_floor_ratio", "floor without Python on the node (tools only, one raw command a host)"),
        ("pycap", "python_capture_ratio", "inspection with the Python capture module on the node"),
        ("node", "node_parse_ratio", "inspection with the parsers on the node"),
    )
    for name, key, label in extra:
        if name in med:
            result[key] = round(med[name] / med["ping"], 3)
            result[key + "_cpu"] = round(med_cpu[name] / med_cpu["ping"], 3)
            print(
                "%s %.2f s, %.2f s CPU: ratio to ping %.2f wall, %.2f CPU"
                % (label, med[name], med_cpu[name], result[key], result[key + "_cpu"])
            )
    if args.phases:
        prof = {"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks", "PROFILE_TASKS_SORT_ORDER": "none"}
        result["phases"] = {}
        for name, argv in runs:
            dt, load, cpu, out = run(argv, prof)
            result["phases"][name] = {"wall_s": round(dt, 2), "load1": round(load, 2), "tasks": phases(out)}
            print("%s with profile_tasks: %.2f s, %.2f s CPU (load %.2f)" % (name, dt, cpu, load))
            for task, secs in phases(out):
                print("  %6.2f s  %s" % (secs, task))
    (work / ("bench_live_ratio-%s.json" % TARGET[0].name)).write_text(json.dumps(result, indent=1))
    print("written", work / ("bench_live_ratio-%s.json" % TARGET[0].name))


if __name__ == "__main__":
    main()
