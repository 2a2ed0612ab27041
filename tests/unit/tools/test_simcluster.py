"""tools/simcluster/generate.py: capture dirs, inventory, answer key; fault placement; determinism."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TOOLS = os.path.join(ROOT, "tools")
GENERATE = os.path.join(TOOLS, "simcluster", "generate.py")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

# tools/simcluster is NOT put on sys.path: its platform.py would shadow the stdlib module for every process that
# inherits this sys.path (multiprocessing spawn children of other tests in the same xdist worker)
from simcluster import generate as G  # noqa: E402
from simnode import faults as F  # noqa: E402


@pytest.fixture
def fastdir():
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    d = tempfile.mkdtemp(prefix="simcluster-test-", dir=base)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _inventory(out, layout="build"):
    with open(
        os.path.join(out, "inventory", "hosts.yml") if layout == "build" else os.path.join(out, "hosts.yml")
    ) as fh:
        return yaml.safe_load(fh)["all"]["children"]["gpu_nodes"]["hosts"]


def test_default_cluster(fastdir):
    out = os.path.join(fastdir, "sim")
    key = G.generate(24, out, seed=7, faults="default")
    hosts = _inventory(out)
    assert list(hosts) == ["gpu-node-%02d" % i for i in range(1, 25)]
    h1, h9, h17 = hosts["gpu-node-01"], hosts["gpu-node-09"], hosts["gpu-node-17"]
    assert h1["ansible_host"] == "192.0.2.1" and "ansible_connection" not in h1
    assert h1["gpuops_node_class"] == "h100-sxm-8"
    assert (h1["gpuops_rack"], h1["gpuops_leaf_switch"], h1["gpuops_power_domain"]) == ("rack-01", "leaf-01", "pdu-01")
    assert (h9["gpuops_rack"], h9["gpuops_leaf_switch"], h9["gpuops_power_domain"]) == ("rack-02", "leaf-02", "pdu-01")
    assert h17["gpuops_power_domain"] == "pdu-02"
    for name, hv in hosts.items():
        cap = hv["gpuops_capture_dir"]
        assert os.path.isabs(cap) and os.path.isfile(os.path.join(cap, "capture.json")), name
    faulty = {h: e for h, e in key["hosts"].items() if e}
    placed = G.parse_faults("default", 24)  # the first DEFAULT_FAULTS that keep half of the 24 nodes healthy
    assert len(placed) == 12 and len(faulty) == len([f for f in placed if not F.FAULTS[f].benign]) == 9
    assert {e["fault"] for es in faulty.values() for e in es} == set(placed) - {f for f in placed if F.FAULTS[f].benign}
    assert sorted(f for fs in key["benign"].values() for f in fs) == sorted(f for f in placed if F.FAULTS[f].benign)
    # issue 19: the default platform faults are cluster-level only (the scheduler's fragmentation case; with the
    # storage simulator merged, its default full OST)
    assert {c["check"] for c in key["cluster"]} <= {"scheduler.fragmentation", "storage.capacity"}
    assert "scheduler.fragmentation" in [c["check"] for c in key["cluster"]]
    (flap_host,) = [h for h, e in key["hosts"].items() if any(x["fault"] == "ib_flap" for x in e)]
    assert key["previous_captures"] == [flap_host]
    assert hosts[flap_host]["gpuops_previous_capture_dir"].endswith("/previous/" + flap_host)
    with open(os.path.join(out, "previous", flap_host, "capture.json")) as fh:
        assert json.load(fh)["captured_at"] < "2026-12-02T10:00:00Z"
    with open(os.path.join(out, "answer_key.json")) as fh:
        assert json.load(fh) == key
    with open(os.path.join(out, "inventory", "group_vars", "gpu_nodes.yml")) as fh:
        prof = yaml.safe_load(fh)["gpuops_profiles"]["h100-sxm-8"]
    assert prof["gpu_count"] == 8 and prof["nvlinks_per_gpu"] == 18 and prof["ib_rate_gbps"] == 400
    assert (
        prof["mounts"] == ["/home", "/lustre"] and prof["nvswitch"] is True and prof["driver_version"] == "535.161.08"
    )


def test_xid79_host_capture_matches_answer_key(fastdir):
    out = os.path.join(fastdir, "sim")
    key = G.generate(12, out, seed=3, faults="xid79:1,hung_mount:1")
    (host,) = [h for h, e in key["hosts"].items() if any(x["fault"] == "xid79" for x in e)]
    exp = key["hosts"][host][0]
    assert [e["check"] for e in key["hosts"][host]] == ["gpu.xid", "gpu.missing", "collector.error"]
    cap = os.path.join(out, "captures", host)
    with open(os.path.join(cap, "nvidia-smi-q.xml")) as fh:
        assert "GPU is lost." in fh.read()
    with open(os.path.join(cap, "capture.json")) as fh:
        assert json.load(fh)["files"]["nvidia-smi-q.xml"]["rc"] == 15
    with open(os.path.join(cap, "kernel.log")) as fh:
        log = fh.read()
    assert ": 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus." in log
    idx = exp["gpu_index"]
    assert exp["component"] == "gpu:" + exp["bus_id"]
    # the GPU named in the key is the one whose bus id is in the Xid line (healthy node: same GPU order)
    healthy = next(h for h, e in key["hosts"].items() if not e)
    root = ET.parse(os.path.join(out, "captures", healthy, "nvidia-smi-q.xml")).getroot()
    bus = root.findall("gpu")[idx].get("id")
    assert "Xid (PCI:%s): 79" % bus[4:-2].lower() in log
    assert exp["bus_id"] == bus


def test_all_faults_each_on_its_own_node(fastdir):
    out = os.path.join(fastdir, "all")
    n_node_faults = sum(1 for f in F.FAULTS.values() if f.scope == "node")
    nodes = n_node_faults + 8 + 2
    key = G.generate(nodes, out, seed=11, faults="all")
    placed = key["faults_by_host"]
    singles = [fs[0] for h, fs in placed.items() if fs != ["dead_leaf"]]
    assert sorted(singles) == sorted(n for n, f in F.FAULTS.items() if f.scope == "node")
    assert all(len(fs) == 1 for fs in placed.values())
    (leaf,) = [c for c in key["cluster"] if c["check"] == "cluster.leaf"]
    (cap,) = [c for c in key["cluster"] if c["check"] == "cluster.capacity"]
    assert len(cap["hosts"]) >= nodes // 4
    assert leaf["severity_hint"] == "P0" and leaf["component"].startswith("leaf:") and len(leaf["hosts"]) == 8
    hosts = _inventory(out)
    assert {hosts[h]["gpuops_leaf_switch"] for h in leaf["hosts"]} == {leaf["component"][5:]}
    for h in leaf["hosts"]:
        assert sorted(e["component"] for e in key["hosts"][h]) == sorted("mlx5_%d/1" % i for i in range(8))
        with open(os.path.join(out, "captures", h, "ibstat.txt")) as fh:
            assert fh.read().count("State: Down") == 8
    assert set(key["previous_captures"]) == {h for h, fs in placed.items() if F.FAULTS[fs[0]].needs_previous}


def test_deterministic_and_none(fastdir):
    a = G.generate(10, os.path.join(fastdir, "a"), seed=5, faults="ib_port_down:2,leak")
    b = G.generate(10, os.path.join(fastdir, "b"), seed=5, faults="ib_port_down:2,leak")
    assert a == b
    with open(os.path.join(fastdir, "a", "captures", "gpu-node-03", "nvidia-smi-q.xml")) as fa, open(
        os.path.join(fastdir, "b", "captures", "gpu-node-03", "nvidia-smi-q.xml")
    ) as fb:
        assert fa.read() == fb.read()
    c = G.generate(10, os.path.join(fastdir, "c"), seed=6, faults="ib_port_down:2,leak")
    assert c["faults_by_host"] != a["faults_by_host"] or c["hosts"] != a["hosts"]
    none = G.generate(4, os.path.join(fastdir, "n"), seed=5, faults="none")
    assert none["hosts"] == {h: [] for h in ("gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-04")}
    with pytest.raises(SystemExit):
        G.parse_faults("no_such_fault:1")
    with pytest.raises(SystemExit):
        G.generate(3, os.path.join(fastdir, "x"), faults="leak:5")


def test_inventory_layout(fastdir):
    out = os.path.join(fastdir, "inv")
    key = G.generate(9, out, seed=7, faults="ib_flap,leak", layout="inventory")
    assert sorted(os.listdir(out)) == [".sim", "group_vars", "hosts.yml"]
    hosts = _inventory(out, "inventory")
    for h, hv in hosts.items():
        assert hv["gpuops_capture_dir"] == ".sim/captures/" + h
        assert os.path.isfile(os.path.join(out, hv["gpuops_capture_dir"], "node.json"))
    (prev,) = key["previous_captures"]
    assert hosts[prev]["gpuops_previous_capture_dir"] == ".sim/previous/" + prev
    assert os.path.isfile(os.path.join(out, ".sim", "answer_key.json"))


def _ansible_hosts(inventory_path):
    """What ansible-core itself reads from an inventory: host -> its inventory variables."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    inv = InventoryManager(loader=DataLoader(), sources=[inventory_path])
    return {h.name: dict(h.get_vars()) for h in inv.get_hosts("gpu_nodes")}


def test_ini_inventory_gives_ansible_the_same_hosts_and_variables_as_yaml(fastdir):
    """--inventory-format ini (the 10,000-node benchmark): the same hosts, groups and values, as ansible-core reads
    them, including a previous capture and a path with a space and a quote (shell-quoted on the INI line)."""
    seen = {}
    for fmt in ("yaml", "ini"):
        out = os.path.join(fastdir, "it's a " + fmt)
        G.generate(9, out, seed=7, faults="ib_flap,leak", inventory_format=fmt)
        names = sorted(os.listdir(os.path.join(out, "inventory")))
        assert names == ["group_vars", "hosts." + ("yml" if fmt == "yaml" else "ini")]
        hosts = _ansible_hosts(os.path.join(out, "inventory"))
        seen[fmt] = {
            h: {k: (v.replace(out, "OUT") if isinstance(v, str) else v) for k, v in hv.items() if k != "inventory_file"}
            for h, hv in hosts.items()
        }
        for hv in hosts.values():
            assert os.path.isfile(os.path.join(hv["gpuops_capture_dir"], "node.json"))
    assert len(seen["ini"]) == 9 and seen["ini"] == seen["yaml"]
    assert any("gpuops_previous_capture_dir" in hv for hv in seen["ini"].values())


def test_driver_590_gives_v13_layout(fastdir):
    out = os.path.join(fastdir, "v13")
    key = G.generate(2, out, seed=1, faults="none", driver="590.48.01")
    assert key["driver_version"] == "590.48.01"
    with open(os.path.join(out, "captures", "gpu-node-01", "nvidia-smi-q.xml")) as fh:
        root = ET.fromstring(fh.read())
    assert root.findtext("driver_version") == "590.48.01" and root.findtext("cuda_version") == "13.1"
    assert root.find("gpu/gpu_recovery_action") is not None
    with open(os.path.join(out, "inventory", "group_vars", "gpu_nodes.yml")) as fh:
        assert yaml.safe_load(fh)["gpuops_profiles"]["h100-sxm-8"]["driver_version"] == "590.48.01"


def test_hostnames_widen():
    assert G.hostnames(3) == ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
    assert G.hostnames(1000)[0] == "gpu-node-0001"


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="no system python")
def test_script_under_system_python(fastdir):
    out = os.path.join(fastdir, "sys")
    r = subprocess.run(
        [
            "/usr/bin/python3",
            GENERATE,
            "--nodes",
            "3",
            "--out",
            out,
            "--seed",
            "1",
            "--faults",
            "leak",
            "--portable",
            "--write-states",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("simcluster: 3 nodes, 1 faulty, 0 benign, 0 dead leaves, 2 expected findings -> ")
    hosts = _inventory(out)
    assert hosts["gpu-node-01"]["gpuops_capture_dir"] == "../captures/gpu-node-01"
    cap = os.path.join(out, "inventory", hosts["gpu-node-01"]["gpuops_capture_dir"])
    assert os.path.isfile(os.path.join(cap, "capture.json"))
    assert os.path.isfile(os.path.join(out, "states", "gpu-node-02.json"))


def test_generate_options_by_keyword(fastdir):
    out = os.path.join(fastdir, "inv")
    key = G.generate(2, out, seed=1, faults="none", layout="inventory", write_states=True, driver="590.48.01")
    assert key["driver_version"] == "590.48.01" and key["captured_at"].endswith("Z")
    assert os.path.isfile(os.path.join(out, "hosts.yml")) and os.path.isdir(os.path.join(out, ".sim", "states"))
    with pytest.raises(TypeError):
        G.generate(2, out, bogus=True)
    with pytest.raises(SystemExit):
        G.generate(2, out, layout="flat")
