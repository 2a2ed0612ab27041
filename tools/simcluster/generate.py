#!/usr/bin/env python3
"""Generate a simulated GPU cluster: capture directories, an Ansible inventory and an answer key.

  python3 tools/simcluster/generate.py --nodes 64 --out build/sim --seed 7 [--faults default|none|all|name:count,...]

Writes
  DIR/captures/<host>/           one capture directory per node (docs/capture.md)
  DIR/previous/<host>/           an earlier capture (15 min before) for counter-growth faults
  DIR/inventory/hosts.yml        group gpu_nodes; ansible_host 192.0.2.1 (TEST-NET: never contacted)
  DIR/inventory/group_vars/gpu_nodes.yml   the node-class hardware profile
  DIR/answer_key.json            per host the findings the policy must produce (docs/simulation.md)
  DIR/states/<host>.json         (--write-states) the node states, usable with `python3 -m simnode`
  DIR/history/                   (--history-days N) N days of the cluster's life, answer_key.json gains `history`
Stdlib only; runs under /usr/bin/python3 and the venv.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import shlex
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

from simnode import faults as F  # noqa: E402
from simnode.capture import capture  # noqa: E402
from simnode.state import DEFAULT_DRIVER, DEFAULT_NOW, default_state, now_iso, save  # noqa: E402

from simcluster import zero_profile  # noqa: E402
from simcluster.names import hostnames  # noqa: E402,F401  (re-exported: generate.hostnames)
from simcluster import platform as _platform  # noqa: E402  (issue 19: the cluster capture directory)

RACK_SIZE = 8
POWER_DOMAIN_SIZE = 16
NODE_CLASS = "h100-sxm-8"
#: `--faults default` (make demo): one node per major kind of fault, plus benign conditions that must not alarm.
DEFAULT_FAULTS = [
    "xid79",
    "xid48",
    "row_remap_pending",
    "thermal_throttle",
    "ib_port_down",
    "ib_flap",
    "psu_failure",
    "hung_mount",
    "xid_user",
    "sw_power_cap_load",
    "pcie_idle_downshift",
]
# issue 20 (optics and link quality): transceiver Rx power, BER, FEC-corrected raw BER (P3 only), PFC storm, NVLink speed
DEFAULT_FAULTS += ["optics_rx_low_warning", "optics_high_ber", "roce_pfc_storm", "nvlink_downshift"]
DEFAULT_FAULTS += ["optics_rx_alarm", "optics_fec_corrected"]

PROFILE = {
    NODE_CLASS: {
        "gpu_model": "NVIDIA H100 80GB HBM3",
        "gpu_count": 8,
        "nvlinks_per_gpu": 18,
        "pcie_gen": 5,
        "pcie_width": 16,
        "ib_ports": 8,
        "ib_rate_gbps": 400,
        "ib_link_layer": "InfiniBand",
        "driver_version": DEFAULT_DRIVER,
        "fabric_manager_version": DEFAULT_DRIVER,
        "mounts": ["/home", "/lustre"],
        "services": ["nvidia-persistenced", "nvidia-dcgm", "nvidia-fabricmanager"],
        "nvswitch": True,
    }
}


def topology(hosts: list) -> dict:
    w = max(2, len(str((len(hosts) + RACK_SIZE - 1) // RACK_SIZE)))
    out = {}
    for i, h in enumerate(hosts):
        r = i // RACK_SIZE + 1
        out[h] = {
            "rack": "rack-%0*d" % (w, r),
            "leaf": "leaf-%0*d" % (w, r),
            "power": "pdu-%0*d" % (w, i // POWER_DOMAIN_SIZE + 1),
        }
    return out


def parse_faults(spec: str, nodes: int = len(DEFAULT_FAULTS) * 2) -> list:
    """-> list of fault names, one entry per faulty node (dead_leaf: one entry = one leaf). `default` on a small
    cluster keeps at least half of the nodes healthy (the first DEFAULT_FAULTS that fit)."""
    if spec == "none":
        return []
    if spec == "default":
        return list(DEFAULT_FAULTS[: nodes // 2])
    if spec == "all":
        return sorted(F.FAULTS)
    out = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        name, _, count = part.partition(":")
        if name not in F.FAULTS:
            raise SystemExit("generate.py: unknown fault %r (known: %s)" % (name, ", ".join(sorted(F.FAULTS))))
        out += [name] * int(count or 1)
    return out


def assign(hosts: list, topo: dict, wanted: list, rng: random.Random) -> tuple:
    """-> ({host: [fault names]}, [(leaf, [hosts])] for dead leaves). One fault per node, dead leaves take whole racks."""
    leaves: dict = {}
    for h in hosts:
        leaves.setdefault(topo[h]["leaf"], []).append(h)
    leaf_names = sorted(leaves)
    dead = []
    node_faults = [f for f in wanted if F.FAULTS[f].scope == "node"]
    n_dead = len(wanted) - len(node_faults)
    if n_dead:
        if n_dead >= len(leaf_names):
            raise SystemExit("generate.py: %d dead leaves need more than %d racks" % (n_dead, len(leaf_names)))
        # the last FULL racks (the very last rack may be partial)
        full = [x for x in leaf_names if len(leaves[x]) == RACK_SIZE]
        chosen = full[-n_dead:] if len(full) >= n_dead else leaf_names[-n_dead:]
        for leaf in chosen:
            dead.append((leaf, leaves[leaf]))
    dead_hosts = {h for _, hs in dead for h in hs}
    free = [h for h in hosts if h not in dead_hosts]
    if len(node_faults) > len(free):
        raise SystemExit(
            "generate.py: %d faulty nodes wanted but only %d nodes outside dead leaves" % (len(node_faults), len(free))
        )
    picked = rng.sample(free, len(node_faults))
    per_host = {h: [] for h in hosts}
    for h, f in zip(picked, node_faults):
        per_host[h].append(f)
    for _, hs in dead:
        for h in hs:
            per_host[h].append("dead_leaf")
    return per_host, dead


def _yaml_str(s: str) -> str:
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


def write_inventory(inv: str, data: str, hosts: list, topo: dict, previous: set, opt: Options) -> None:
    portable, driver = opt.portable, opt.driver
    os.makedirs(os.path.join(inv, "group_vars"), exist_ok=True)
    if portable:
        # relative to the inventory directory (how the gpuops actions resolve relative capture paths)
        base = os.path.relpath(data, inv).replace(os.sep, "/")
    else:
        base = os.path.abspath(data)
    entries = []  # (host, [(variable, value)]): written as YAML or as INI
    for h in hosts:
        hv = [("ansible_host", "192.0.2.1"), ("gpuops_capture_dir", "%s/captures/%s" % (base, h))]
        if h in previous:
            hv.append(("gpuops_previous_capture_dir", "%s/previous/%s" % (base, h)))
        hv += [
            ("gpuops_rack", topo[h]["rack"]),
            ("gpuops_leaf_switch", topo[h]["leaf"]),
            ("gpuops_power_domain", topo[h]["power"]),
        ]
        if opt.profiles:
            hv.append(("gpuops_node_class", NODE_CLASS))
        entries.append((h, hv))
    name, text = (
        ("hosts.ini", _ini_inventory(entries))
        if opt.inventory_format == "ini"
        else ("hosts.yml", _yaml_inventory(entries))
    )
    with open(os.path.join(inv, name), "w", encoding="utf-8") as fh:
        fh.write(text)
    with open(os.path.join(inv, "group_vars", "gpu_nodes.yml"), "w", encoding="utf-8") as fh:
        fh.write(profile_yaml(driver) if opt.profiles else zero_profile.GROUP_VARS)


_HEADER = [
    "# Generated by tools/simcluster/generate.py: a simulated cluster read from capture directories.",
    "# ansible_host is 192.0.2.1 (TEST-NET-1, unroutable): these hosts must never be contacted.",
]
_PATHS = ("gpuops_capture_dir", "gpuops_previous_capture_dir")  # quoted in the YAML


def _yaml_inventory(entries: list) -> str:
    lines = ["---"] + _HEADER + ["all:", "  children:", "    gpu_nodes:", "      hosts:"]
    for host, hv in entries:
        lines.append("        %s:" % host)
        lines += ["          %s: %s" % (k, _yaml_str(v) if k in _PATHS else v) for k, v in hv]
    return "\n".join(lines) + "\n"


def _ini_inventory(entries: list) -> str:
    """One INI line a host, values shell-quoted (the ini plugin splits a line with shlex)."""
    lines = _HEADER + ["[gpu_nodes]"]
    lines += [" ".join([host] + ["%s=%s" % (k, shlex.quote(v)) for k, v in hv]) for host, hv in entries]
    return "\n".join(lines) + "\n"


def profile_yaml(driver: str = DEFAULT_DRIVER) -> str:
    p = dict(PROFILE[NODE_CLASS], driver_version=driver, fabric_manager_version=driver)
    lines = [
        "---",
        "# Node-class hardware profiles: what a healthy node of each class looks like.",
        "gpuops_profiles:",
        "  %s:" % NODE_CLASS,
    ]
    for k, v in p.items():
        if isinstance(v, list):
            lines.append("    %s: [%s]" % (k, ", ".join(v)))
        elif isinstance(v, bool):
            lines.append("    %s: %s" % (k, "true" if v else "false"))
        elif isinstance(v, str):
            lines.append("    %s: %s" % (k, _yaml_str(v)))
        else:
            lines.append("    %s: %s" % (k, v))
    return "\n".join(lines) + "\n"


def _one_host(job) -> tuple:
    """Build, fault and capture one node. -> (host, expectations, benign fault names, has previous capture)."""
    h, now, names, seed, out, write_states, driver, profiles = job
    state = default_state(h, seed=seed, now=now, driver=driver or DEFAULT_DRIVER)
    if driver and driver.split(".")[0] >= "590":
        state["cuda_version"] = "13.1"
    prev = None
    expect: list = []
    benign: list = []
    for name in names:
        f = F.FAULTS[name]
        if f.needs_previous and prev is None:
            prev = F.previous_of(state)
        res = F.apply(state, name, random.Random("%s/%s/%s" % (seed, h, name)), prev=prev if f.needs_previous else None)
        expect += res["expect"] if profiles else zero_profile.expect(name, res["expect"])
        if f.benign:
            benign.append(name)
    capture(state, os.path.join(out, "captures", h))
    if prev is not None:
        capture(prev, os.path.join(out, "previous", h))
    if write_states:
        os.makedirs(os.path.join(out, "states"), exist_ok=True)
        save(state, os.path.join(out, "states", h + ".json"))
        if prev is not None:
            save(prev, os.path.join(out, "states", h + ".previous.json"))
    return h, expect, benign, prev is not None


@dataclasses.dataclass(frozen=True)
class Options:
    """How generate() writes the cluster: also the simnode states, capture paths relative to the inventory,
    worker processes, the directory layout (build | inventory) and every node's NVIDIA driver."""

    write_states: bool = False
    portable: bool = False
    workers: int = 1
    layout: str = "build"
    driver: str = DEFAULT_DRIVER
    profiles: bool = True
    platform_faults: str = ""  # issue 19: scheduler/storage faults (comma list, "none"); "" = from the node spec
    # "yaml" (hosts.yml) or "ini" (hosts.ini: ansible-core loads 10,000 hosts in ~3.6 s of INI against ~19 s of
    # YAML, which it parses twice, the auto plugin and then yaml, each a deep copy: docs/scale-out.md)
    inventory_format: str = "yaml"


def generate(nodes: int, out: str, seed: int = 7, faults: str = "default", **options) -> dict:
    """`options`: the fields of Options (write_states, portable, workers, layout, driver), by keyword.

    layout "build": DIR/{captures,previous,states}/, DIR/inventory/, DIR/answer_key.json.
    layout "inventory" (an inventory directory such as inventories/sim): DIR/hosts.yml, DIR/group_vars/, and the
    data under DIR/.sim/ (a hidden directory: `-i DIR` must not parse captures or the answer key as inventory)."""
    opt = Options(**options)
    write_states, portable, workers, layout, driver = (
        opt.write_states,
        opt.portable,
        opt.workers,
        opt.layout,
        opt.driver,
    )
    if layout not in ("build", "inventory"):
        raise SystemExit("generate.py: --layout is build or inventory")
    inv = os.path.join(out, "inventory") if layout == "build" else out
    data = out if layout == "build" else os.path.join(out, ".sim")
    rng = random.Random(seed)
    hosts = hostnames(nodes)
    topo = topology(hosts)
    per_host, dead = assign(hosts, topo, parse_faults(faults, nodes), rng)
    for sub in ("captures", "previous", "states"):
        shutil.rmtree(os.path.join(data, sub), ignore_errors=True)
    if layout == "build":
        shutil.rmtree(inv, ignore_errors=True)
    os.makedirs(os.path.join(data, "captures"), exist_ok=True)
    jobs = [
        (h, DEFAULT_NOW + (n % 60), per_host[h], seed, data, write_states, driver, opt.profiles)
        for n, h in enumerate(hosts)
    ]
    if workers > 1 and len(hosts) > 16:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.map(_one_host, jobs, chunksize=max(1, len(jobs) // (workers * 4)))
    else:
        results = [_one_host(j) for j in jobs]
    key_hosts: dict = {}
    benign: dict = {}
    previous = set()
    for h, expect, ben, has_prev in results:
        key_hosts[h] = expect
        if ben:
            benign[h] = ben
        if has_prev:
            previous.add(h)
    write_inventory(
        inv, data, hosts, topo, previous, dataclasses.replace(opt, portable=portable or layout == "inventory")
    )
    cluster = [
        {
            "check": "cluster.leaf",
            "component": "leaf:%s" % leaf,
            "severity_hint": "P0",
            "fault": "dead_leaf",
            "hosts": hs,
            "note": "every IB port of every node behind this leaf is down: one P0 cluster finding; the member "
            "ib.port_state findings carry cause = its id",
        }
        for leaf, hs in dead
    ]
    faulty = [h for h, e in key_hosts.items() if any(x["severity_hint"] in ("P0", "P1") for x in e)]
    if len(hosts) >= 4 and len(faulty) >= 0.25 * len(hosts):
        cluster.append(
            {
                "check": "cluster.capacity",
                "component": "cluster",
                "severity_hint": "P0",
                "fault": None,
                "hosts": faulty,
                "note": "%d of %d nodes have a P0/P1 fault (docs/checks.md cluster.faulty_share 25%%)"
                % (len(faulty), len(hosts)),
            }
        )
    # issue 19: the cluster capture directory (scheduler, storage) and its expected cluster findings
    pfaults = _platform.platform_faults(faults, opt.platform_faults)
    cluster += _platform.write_platform(data, inv, hosts, key_hosts, pfaults, seed, portable or layout == "inventory")
    key = {
        "schema": "gpuops.simcluster.answer_key/v1",
        "driver_version": driver,
        "seed": seed,
        "nodes": nodes,
        "faults": faults,
        "node_class": NODE_CLASS if opt.profiles else None,
        "profiles": opt.profiles,
        "captured_at": now_iso(DEFAULT_NOW),
        "hosts": key_hosts,
        "faults_by_host": {h: fs for h, fs in per_host.items() if fs},
        "benign": benign,
        "previous_captures": sorted(previous),
        "cluster": cluster,
        "rules": "hosts[h] lists the findings (check, component) that MUST be reported for h; a host with an empty "
        "list must have no P0/P1/P2 finding (P3 advice allowed). severity_hint is the expected severity, code the "
        "expected code where one is natural. benign[h] names conditions that must NOT alarm.",
    }
    with open(os.path.join(data, "answer_key.json"), "w", encoding="utf-8") as fh:
        json.dump(key, fh, indent=1, sort_keys=True)
        fh.write("\n")
    return key


def summary(key: dict, out: str, elapsed: float) -> str:
    faulty = [h for h, e in key["hosts"].items() if e]
    return "simcluster: %d nodes, %d faulty, %d benign, %d dead leaves, %d expected findings -> %s (%.1f s)" % (
        key["nodes"],
        len(faulty),
        len(key["benign"]),
        sum(1 for c in key["cluster"] if c["check"] == "cluster.leaf"),
        sum(len(e) for e in key["hosts"].values()),
        out,
        elapsed,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--faults",
        default="default",
        help="default (one node per major fault kind, at most half the nodes) | none | all | name:count,... "
        "(see `python3 -m simnode faults`)",
    )
    ap.add_argument("--write-states", action="store_true", help="also write states/<host>.json for python3 -m simnode")
    ap.add_argument(
        "--jobs", type=int, default=min(8, os.cpu_count() or 1), help="worker processes (default: CPUs, max 8)"
    )
    ap.add_argument("--portable", action="store_true", help="capture paths relative to the inventory directory")
    ap.add_argument(
        "--layout", choices=("build", "inventory"), default="build", help="inventory: DIR is an inventory dir"
    )
    ap.add_argument("--driver", default=DEFAULT_DRIVER, help="NVIDIA driver of every node (>= 590: the v13 XML layout)")
    ap.add_argument(
        "--no-profiles",
        action="store_true",
        help="zero-profile mode: no hardware profiles, no node classes (the answer key says what must still be found)",
    )
    ap.add_argument("--platform-faults", default="", help="scheduler/storage faults: comma list or none (issue 19)")
    ap.add_argument(
        "--inventory-format", choices=("yaml", "ini"), default="yaml", help="hosts.yml (default) or hosts.ini"
    )
    ap.add_argument("--history-days", type=int, default=0, help="also write DIR/history/: N days of the cluster's life")
    ap.add_argument("--history-start", default="2026-10-01", help="the history's first day (UTC date)")
    a = ap.parse_args(argv)
    if a.nodes < 1:
        ap.error("--nodes must be >= 1")
    if a.history_days < 0:
        ap.error("--history-days must be >= 0")
    t0 = time.time()
    key = generate(
        a.nodes,
        a.out,
        a.seed,
        a.faults,
        write_states=a.write_states,
        portable=a.portable,
        workers=max(1, a.jobs),
        layout=a.layout,
        driver=a.driver,
        profiles=not a.no_profiles,
        platform_faults=a.platform_faults,
        inventory_format=a.inventory_format,
    )
    print(summary(key, a.out, time.time() - t0))
    if a.history_days > 0:  # issue 15: a quarter of inspections, incidents, windows and allocation (history.py)
        from simcluster import history as _history  # pylint: disable=import-outside-toplevel

        data = a.out if a.layout == "build" else os.path.join(a.out, ".sim")
        hist = _history.add_to_answer_key(data, hostnames(a.nodes), a.history_days, a.history_start, a.seed)
        print(_history.summary(hist, os.path.join(data, "history")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
