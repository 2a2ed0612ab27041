"""The simulated cluster's platform: a cluster capture directory (Slurm; storage via storage_sim when present).

``write_platform(data, inv, hosts, key_hosts, spec, seed, portable)`` writes ``DATA/cluster/`` in the formats of
docs/capture.md "Cluster capture directory" (the text forms the bed's real Slurm 22.05 prints, see
tests/fixtures/slurm-platform), points the inventory at it (``group_vars/all.yml``: ``gpuops_cluster_capture_dir``)
and returns the answer key's cluster entries; a platform fault that names a node adds that node's expected
finding to ``key_hosts``. Healthy by default: no controller, queue, node, failure, fragmentation or capacity
finding. Faults (``PLATFORM_FAULTS``): ``ctld_down``, ``rpc_storm``, ``fragmentation``, ``job_killer``,
``accounting_down``. Stdlib only.
"""

from __future__ import annotations

import json
import os
import random
import time

try:  # parallel storage: the storage slice's simulator; the scheduler part works without it
    from simcluster import storage_sim  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on the branch
    storage_sim = None

PLATFORM_FAULTS = ("ctld_down", "rpc_storm", "fragmentation", "job_killer", "accounting_down")
#: `--faults default` (make demo): the fragmentation case, a cluster-level finding that touches no node's key
DEFAULT_PLATFORM_FAULTS = ("fragmentation",)
#: `--faults all`: every fault that can coexist (a controller that is down hides the rest, accounting that is down
#: hides the job history: those two only on request)
ALL_PLATFORM_FAULTS = ("rpc_storm", "fragmentation", "job_killer")
NOW = 1796205600  # simnode.state.DEFAULT_NOW: 2026-12-02T10:00:00Z
GPUS = 8
PARTITION = "gpu"
USERS = ("alice", "bob", "carol", "dave", "erin")
CTLD_DOWN = "slurm_get_statistics: Unable to contact slurm controller (connect failure)\n"
DBD_DOWN = (
    "sacct: error: slurm_persist_conn_open_without_init: failed to open persistent connection to host:head1:6819: "
    "Connection refused\nsacct: error: Sending PersistInit msg: Connection refused\n"
    "sacct: error: Problem talking to the database: Connection refused\n"
)


def _known() -> tuple:
    return PLATFORM_FAULTS + tuple(getattr(storage_sim, "FAULTS", ()) if storage_sim is not None else ())


def platform_faults(spec: str, explicit: str = "") -> list:
    """The platform (scheduler and storage) faults of a generate() run: ``explicit`` (comma list, or ``none``)
    wins; else from the node-fault spec (``default``, ``all``; anything else: none)."""
    if explicit:
        names = [n.strip() for n in explicit.split(",") if n.strip() and n.strip() != "none"]
        unknown = [n for n in names if n not in _known()]
        if unknown:
            raise SystemExit("generate.py: unknown platform fault(s) %s (known: %s)" % (unknown, ", ".join(_known())))
        return names
    sched = {"default": DEFAULT_PLATFORM_FAULTS, "all": ALL_PLATFORM_FAULTS}.get(spec, ())
    store = ()
    if storage_sim is not None:
        store = {"default": getattr(storage_sim, "DEFAULT_FAULTS", ()), "all": getattr(storage_sim, "ALL_FAULTS", ())}
        store = store.get(spec, ())
    return list(sched) + list(store)


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))


def _sdiag(storm: bool) -> str:
    threads, queue = (187, 2400) if storm else (3, 0)
    rpcs = [
        ("REQUEST_JOB_INFO", 2003, 412345 if storm else 5210, 1843211 if storm else 1480),
        ("REQUEST_PARTITION_INFO", 2009, 1203 if storm else 1190, 689),
        ("REQUEST_NODE_INFO", 2007, 2210, 2339 if not storm else 912345),
        ("REQUEST_SUBMIT_BATCH_JOB", 4003, 812, 5513),
        ("MESSAGE_NODE_REGISTRATION_STATUS", 1002, 64, 424),
        ("REQUEST_PING", 1008, 96, 232),
    ]
    users = [("alice", 1001, 401234 if storm else 3120, 1811211 if storm else 1350), ("root", 0, 5420, 900),
             ("bob", 1002, 2010, 1605)]  # fmt: skip
    lines = [
        "*******************************************************",
        "sdiag output at Wed Dec 02 10:00:00 2026 (%d)" % NOW,
        "Data since      Wed Dec 02 00:00:00 2026 (%d)" % (NOW - 36000),
        "*******************************************************",
        "Server thread count:  %d" % threads,
        "Agent queue size:     %d" % queue,
        "Agent count:          0",
        "Agent thread count:   0",
        "DBD Agent queue size: 0",
        "",
        "Jobs submitted: 812",
        "Jobs started:   790",
        "Jobs completed: 760",
        "Jobs canceled:  12",
        "Jobs failed:    8",
        "",
        "Main schedule statistics (microseconds):",
        "\tLast cycle:   1203",
        "\tMax cycle:    20031",
        "\tTotal cycles: 18000",
        "\tMean cycle:   980",
        "\tMean depth cycle:  12",
        "\tLast queue length: 14",
        "",
        "Backfilling stats",
        "\tTotal backfilled jobs (since last slurm start): 310",
        "\tTotal cycles: 1200",
        "\tLast cycle: 45000",
        "\tMax cycle:  210000",
        "\tLast depth cycle: 14",
        "",
        "Remote Procedure Call statistics by message type",
    ]
    for name, num, count, ave in sorted(rpcs, key=lambda r: -r[2] * r[3]):
        lines.append("\t%-40s(%5d) count:%-6d ave_time:%-6d total_time:%d" % (name, num, count, ave, count * ave))
    lines += ["", "Remote Procedure Call statistics by user"]
    for name, uid, count, ave in users:
        lines.append("\t%-16s(%8d) count:%-6d ave_time:%-6d total_time:%d" % (name, uid, count, ave, count * ave))
    lines += ["", "Pending RPC statistics", "\tNo pending RPCs"]
    return "\n".join(lines) + "\n"


def _allocation(hosts: list, fragmented: bool) -> dict:
    """GPUs allocated per node: healthy about half (whole nodes busy or free), fragmented 5 of 8 everywhere."""
    if fragmented:
        return {h: 5 for h in hosts}
    return {h: (GPUS if i % 2 == 0 else 0) for i, h in enumerate(hosts)}


def _jobs(alloc: dict, fragmented: bool, rng: random.Random) -> list:
    jobs, jid = [], 5000
    for h, n in alloc.items():
        if n:
            jid += 1
            jobs.append((jid, rng.choice(USERS), "RUNNING", "None", NOW - rng.randint(600, 20000), n, h))
    for i in range(8 if fragmented else 3):
        jid += 1
        reason = "Resources" if fragmented else "Priority"
        jobs.append((jid, USERS[i % len(USERS)], "PENDING", reason, NOW - rng.randint(60, 5400), GPUS, ""))
    return [
        "%d|%s|%s|%s|%s|%s|%s|1|gres:gpu:%d|%s"
        % (j, PARTITION, u, st, why, _iso(sub), _iso(sub + 30) if st == "RUNNING" else "Unknown", g, node)
        for j, u, st, why, sub, g, node in jobs
    ]


def _history(hosts: list, killer: str, rng: random.Random) -> list:
    """sacct rows: each node's jobs, about 1 in 25 failed in the background but never more than one per healthy
    node (every 25th row alone put all of a node's failures on the same nodes when the node count divides 25:
    false job_failures alarms); the killer fails five."""
    rows, jid, failed_once = [], 3000, set()
    for i in range(max(60, 3 * len(hosts))):
        h = hosts[i % len(hosts)]
        if h == killer:
            continue
        jid += 1
        fail = i % 25 == 7 and h not in failed_once
        failed_once.update([h] if fail else [])
        state, code = ("FAILED", "1:0") if fail else ("COMPLETED", "0:0")
        rows.append((jid, h, state, code))
    for _ in range(5 if killer else 0):
        jid += 1
        rows.append((jid, killer, "FAILED", "1:0"))
    out = []
    for j, h, state, code in rows:
        end = NOW - rng.randint(300, 80000)
        out.append(
            "%d|%s|%s|%s|%s|%s|%s|%s|%s"
            % (j, PARTITION, rng.choice(USERS), state, code, h, _iso(end - 4000), _iso(end - 3600), _iso(end))
        )
    return out


def _write(cdir: str, name: str, text: str) -> None:
    with open(os.path.join(cdir, name), "w", encoding="utf-8") as fh:
        fh.write(text)


def _expect(check: str, component: str, fault: str, sev: str, note: str, hosts=None) -> dict:
    return {"check": check, "component": component, "severity_hint": sev, "fault": fault, "hosts": hosts or [],
            "note": note}  # fmt: skip


def _expectations(faults: list, killer: str, key_hosts: dict) -> list:
    out = []
    if "ctld_down" in faults:
        return [_expect("scheduler.controller", "controller", "ctld_down", "P0", "slurmctld down: cluster P0")]
    if "rpc_storm" in faults:
        out.append(_expect("scheduler.rpc", "controller", "rpc_storm", "P2", "REQUEST_JOB_INFO storm by alice"))
    if "fragmentation" in faults:
        out.append(_expect("scheduler.fragmentation", "partition:%s" % PARTITION, "fragmentation", "P2",
                           "3 GPUs free on every node while 8-GPU jobs wait"))  # fmt: skip
    if "accounting_down" in faults:
        out.append(_expect("scheduler.accounting", "slurmdbd", "accounting_down", "P2", "sacct: database unreachable"))
    if killer:
        key_hosts.setdefault(killer, []).append(
            {
                "check": "scheduler.job_failures",
                "component": "slurm:jobs",
                "code": "failures",
                "severity_hint": "P2",
                "fault": "job_killer",
            }  # fmt: skip
        )
    return out


def write_platform(data: str, inv: str, hosts: list, key_hosts: dict, faults: list, seed: int, portable: bool) -> list:
    """Write DATA/cluster and inventory group_vars/all.yml; return the answer key's cluster entries."""
    rng = random.Random("%s/platform" % seed)
    cdir = os.path.join(data, "cluster")
    os.makedirs(cdir, exist_ok=True)
    for name in os.listdir(cdir):
        os.unlink(os.path.join(cdir, name))
    healthy = [h for h in hosts if not key_hosts.get(h)]
    history = "job_killer" in faults and not {"ctld_down", "accounting_down"} & set(faults)
    killer = (healthy or hosts)[-1] if history else ""
    fragmented = "fragmentation" in faults
    alloc = _allocation(hosts, fragmented)
    _write(cdir, "platform-meta.json", json.dumps({"captured_at": NOW, "faults": faults}) + "\n")
    if "ctld_down" in faults:
        _write(cdir, "scontrol-ping.txt", "Slurmctld(primary) at head1 is DOWN\n" + "*" * 41 + "\n")
        for name in ("sdiag.txt", "sinfo.txt", "squeue.txt"):
            _write(cdir, name, CTLD_DOWN)
    else:
        _write(cdir, "scontrol-ping.txt", "Slurmctld(primary) at head1 is UP\nSlurmctld(backup) at head2 is UP\n")
        _write(cdir, "sdiag.txt", _sdiag("rpc_storm" in faults))
        state = {GPUS: "allocated", 0: "idle"}
        _write(cdir, "sinfo.txt", "".join(
            "%s|%s*|%s|gpu:h100:8|gpu:h100:%d(IDX:%s)|none\n"
            % (h, PARTITION, state.get(alloc[h], "mixed"), alloc[h], "0-%d" % (alloc[h] - 1) if alloc[h] else "N/A")
            for h in hosts))  # fmt: skip
        _write(cdir, "squeue.txt", "\n".join(_jobs(alloc, fragmented, rng)) + "\n")
        sacct = DBD_DOWN if "accounting_down" in faults else "\n".join(_history(hosts, killer, rng)) + "\n"
        _write(cdir, "sacct.txt", sacct)
    cluster = _expectations(faults, killer, key_hosts)
    if storage_sim is not None:
        cluster += storage_sim.write_storage(cdir, faults, rng) or []
    os.makedirs(os.path.join(inv, "group_vars"), exist_ok=True)
    path = os.path.relpath(cdir, inv).replace(os.sep, "/") if portable else os.path.abspath(cdir)
    with open(os.path.join(inv, "group_vars", "all.yml"), "w", encoding="utf-8") as fh:
        fh.write("---\n# The cluster capture directory (docs/capture.md): the platform, read once per inspection.\n")
        fh.write('gpuops_cluster_capture_dir: "%s"\n' % path.replace("\\", "\\\\").replace('"', '\\"'))
    return cluster
