# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""collect_storage + check_storage: capture directories of real outputs, a real tmpfs driven to a watermark,
a hung client command, the real probe, correlation and the simulator's answer key."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.storage import collect_storage
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform.storage import check_storage, correlate_storage
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import PolicyError, merge_policy

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures", "storage")
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from simcluster.storage_sim import ALL_FAULTS, DEFAULT_FAULTS, FAULTS, STORAGE_FAULTS, write_storage  # noqa: E402

NOW = "2026-12-03T09:00:00Z"


def capture(tmp_path, **files):
    for name, fixture in files.items():
        shutil.copy(os.path.join(FIX, fixture), tmp_path / name.replace("_", "-").replace("-check", "_check"))
    return str(tmp_path)


def keys(findings, sev=("P0", "P1", "P2")):
    return {(f["check"], f["component"], f["code"]) for f in findings if f["severity"] in sev}


def test_capture_real_lustre_outputs(tmp_path):
    d = capture(tmp_path, lfs_df_txt="lustre-manual-myth-lfs-df-h-ost-full.txt")
    os.rename(tmp_path / "lfs-df-txt", tmp_path / "lfs-df.txt")
    shutil.copy(os.path.join(FIX, "lustre-manual-myth-lfs-df-i-mdt-inodes-full.txt"), tmp_path / "lfs-df-i.txt")
    shutil.copy(os.path.join(FIX, "lustre-lfs-check-servers-ost-down.txt"), tmp_path / "lfs-check-servers.txt")
    shutil.copy(os.path.join(FIX, "lustre-lctl-health_check-not-healthy.txt"), tmp_path / "lctl-health_check.txt")
    facts = collect_storage(capture_dir=d)
    assert facts["errors"] == [] and "capture:lfs-df.txt" in facts["sources"]
    (fs,) = facts["filesystems"]
    assert (fs["name"], fs["used_pct"], fs["inode_used_pct"]) == ("myth", 85, 100)
    got = {f["id"]: f for f in check_storage(facts, None, NOW)}
    ost1 = got["cluster:storage.capacity:storage:myth/myth-OST0001:space"]
    assert ost1["severity"] == "P1" and ost1["action"] == "monitor" and ost1["respond_by"] == "2026-12-03T09:30:00Z"
    assert got["cluster:storage.capacity:storage:myth:space"]["severity"] == "P2"  # 85 %: P2 at 80, P1 at 90
    assert got["cluster:storage.capacity:storage:myth/myth-MDT0000:inodes"]["severity"] == "P1"
    assert got["cluster:storage.health:storage:server:nas_test-OST0007:down"]["action"] == "contact_vendor"
    assert got["cluster:storage.health:storage:server:lustre:health_check:unhealthy"]["severity"] == "P1"
    assert not [f for f in got.values() if f["action"] not in ("monitor", "contact_vendor")]


def test_capture_gpfs_and_nfs(tmp_path):
    shutil.copy(os.path.join(FIX, "treydock-mmhealth-node-show-Y.txt"), tmp_path / "mmhealth.txt")
    shutil.copy(os.path.join(FIX, "treydock-mmlsdisk-Y.txt"), tmp_path / "mmlsdisk-ess.txt")
    shutil.copy(os.path.join(FIX, "treydock-mmdf-Y.txt"), tmp_path / "mmdf-ess.txt")
    shutil.copy(os.path.join(FIX, "linux-nfs-list-nfsstat-m-two-mounts.txt"), tmp_path / "nfsstat.txt")
    facts = collect_storage(capture_dir=str(tmp_path))
    got = keys(check_storage(facts, None, NOW))
    assert not any("RG008VS010" in c[1] for c in got)  # status foo, availability bar: unknown, not broken
    # issue 37: a cluster_connections_down WARNING event on a node mmhealth calls TIPS is P3 monitor, not P1
    conn = [f for f in check_storage(facts, None, NOW) if f["code"] == "cluster_connections_down"]
    assert {(f["component"], f["severity"], f["action"]) for f in conn} == {
        ("storage:server:gpfs:ib-haswell1.example.com:GPFS/10.22.51.57", "P3", "monitor"),
        ("storage:server:gpfs:ib-haswell1.example.com:GPFS/10.22.95.17", "P3", "monitor"),
    }
    assert "mmhealth keeps GPFS TIPS" in conn[0]["message"]
    assert not any("mlx5_0/1" in c[1] for c in got)  # status FOO: unknown, not broken
    assert [e["message"] for e in facts["errors"]] == [
        "mmhealth: NETWORK mlx5_0/1 has status FOO (not a known health state)",
        "mmlsdisk ess: NSD RG008VS010 has status 'foo', availability 'bar' (not known states)",
    ]
    assert {f["code"] for f in check_storage(facts, None, NOW) if f["check"] == "collector.error"} == {"parse"}
    assert ("storage.capacity", "storage:ess", "space") in got
    assert not any(c[1].startswith("storage:kvm") for c in got)  # healthy NFS mounts raise nothing


def test_capture_garbled_unreadable_and_absent(tmp_path):
    shutil.copy(os.path.join(FIX, "pytokio-edison-lfs-df-truncated.txt"), tmp_path / "lfs-df.txt")
    shutil.copy(os.path.join(FIX, "treydock-mmdf-Y-errors.txt"), tmp_path / "mmdf.txt")
    os.symlink("/etc/passwd", tmp_path / "mmhealth.txt")
    facts = collect_storage(capture_dir=str(tmp_path))
    kinds = {e["kind"] for e in facts["errors"]}
    assert kinds == {"parse", "unreadable"}
    findings = check_storage(facts, None, NOW)
    ce = [f for f in findings if f["check"] == "collector.error"]
    assert {f["code"] for f in ce} == {"parse", "unreadable"} and all(f["action"] == "monitor" for f in ce)
    assert collect_storage(capture_dir=str(tmp_path / "nope"))["errors"][0]["kind"] == "missing"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert collect_storage(capture_dir=str(empty)) == {
        "filesystems": [],
        "servers": [],
        "events": [],
        "throughput": None,
        "nfs_rpc": None,
        "unknown": [],
        "errors": [],
        "sources": [],
    }
    assert [f["code"] for f in check_storage(None, None, NOW)] == ["missing"]


@pytest.fixture
def tmpfs(tmp_path):
    """A real 4 MiB tmpfs in a private directory (root), always unmounted."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,nr_inodes=200", "tmpfs", str(mnt)], check=True)
    try:
        yield str(mnt)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_live_tmpfs_driven_to_watermarks(tmpfs):
    opts = {"mounts": [tmpfs], "timeout_s": 3}
    assert keys(check_storage(collect_storage(options=opts), None, NOW)) == set()
    with open(os.path.join(tmpfs, "fill"), "wb") as fh:
        fh.write(b"\0" * (3400 * 1024))  # 83 % of 4 MiB
    got = {f["component"] + ":" + f["code"]: f for f in check_storage(collect_storage(options=opts), None, NOW)}
    assert got["storage:%s:space" % tmpfs]["severity"] == "P2"
    with open(os.path.join(tmpfs, "fill2"), "wb") as fh:
        fh.write(b"\0" * (400 * 1024))  # 93 %
    for i in range(185):  # inodes: 200 in all
        open(os.path.join(tmpfs, "f%d" % i), "wb").close()
    facts = collect_storage(options=opts)
    got = {f["component"] + ":" + f["code"]: f for f in check_storage(facts, None, NOW)}
    assert got["storage:%s:space" % tmpfs]["severity"] == "P1"
    assert got["storage:%s:inodes" % tmpfs]["severity"] == "P1"
    assert [fs["responsive"] for fs in facts["filesystems"] if fs["mount"] == tmpfs] == [True]


def test_live_hung_client_command_is_bounded(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("lfs", "lctl"):
        (bin_dir / tool).write_text("#!/bin/sh\nexec sleep 30\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bin_dir, os.environ["PATH"]))
    start = time.monotonic()
    facts = collect_storage(options={"lustre": True, "timeout_s": 1})
    assert time.monotonic() - start < 8  # 5 commands, each killed after 1 s
    assert [e["kind"] for e in facts["errors"]] == ["timeout"] * 5
    assert {f["code"] for f in check_storage(facts, None, NOW)} == {"timeout"}


def test_probe_real_and_baseline(tmp_path):
    spec = {"path": str(tmp_path), "bytes": 4 << 20, "timeout_s": 3, "meta_files": 100, "tool": "builtin"}
    start = time.monotonic()
    facts = collect_storage(options={"probe": spec})
    assert time.monotonic() - start < 4
    tp = facts["throughput"]
    assert tp["tool"] == "builtin" and tp["write_bytes"] == 4 << 20 and tp["meta_ops"] == 300
    assert os.listdir(tmp_path) == []  # the private temp dir is gone
    assert keys(check_storage(facts, None, NOW)) == set()  # no baseline: nothing to compare
    spec["baseline"] = {"write_mib_s": 1e9, "meta_ops_s": 1.0}  # far above / below any real reading
    facts = collect_storage(options={"probe": spec})
    got = keys(check_storage(facts, None, NOW))
    assert ("storage.throughput", "storage:probe:%s" % tmp_path, "write") in got
    assert not any(c[2] == "metadata" for c in got)
    bad = collect_storage(options={"probe": {"path": "relative", "timeout_s": 2}})
    assert bad["throughput"] is None and "probe not run" in bad["errors"][-1]["message"]


def test_policy_overrides_watermarks(tmp_path):
    shutil.copy(os.path.join(FIX, "lustre-manual-myth-lfs-df-h-ost-full.txt"), tmp_path / "lfs-df.txt")
    facts = collect_storage(capture_dir=str(tmp_path))
    policy = merge_policy(overrides={"thresholds": {"storage": {"capacity": {"p2_pct": 95, "p1_pct": 99}}}})
    got = {(f["component"], f["severity"]) for f in check_storage(facts, policy, NOW)}
    assert got == {("storage:myth/myth-OST0001", "P1"), ("storage:myth/myth-OST0003", "P2")}


def test_correlate_every_node_one_cluster_finding(tmp_path):
    shutil.copy(os.path.join(FIX, "lustre-lfs-check-servers-ost-down.txt"), tmp_path / "lfs-check-servers.txt")
    facts = collect_storage(capture_dir=str(tmp_path))
    per = {h: check_storage(facts, None, NOW, host=h) for h in ("n1", "n2", "n3")}
    (p,) = correlate_storage(per, None, NOW)
    assert p["id"] == "cluster:storage.health:storage:server:nas_test-OST0007:down" and p["host"] is None
    assert all(f["cause"] == p["id"] and f["action"] == "monitor" for fs in per.values() for f in fs)
    per2 = {"n1": check_storage(facts, None, NOW, host="n1"), "n2": []}  # not every node sees it
    assert correlate_storage(per2, None, NOW) == []


@pytest.mark.parametrize("faults", [(), STORAGE_FAULTS] + [(f,) for f in STORAGE_FAULTS])
def test_simulator_answer_key_found_and_nothing_else(tmp_path, faults):
    expected = write_storage(str(tmp_path), faults, random.Random(7))
    assert {e["fault"] for e in expected} == set(faults)
    facts = collect_storage(capture_dir=str(tmp_path))
    assert facts["errors"] == []
    assert keys(check_storage(facts, None, NOW)) == {(e["check"], e["component"], e["code"]) for e in expected}
    assert write_storage(str(tmp_path / "other"), ["fragmentation", "ctld_down"]) == []  # not storage faults
    assert set(FAULTS) == set(ALL_FAULTS) == set(STORAGE_FAULTS) and set(DEFAULT_FAULTS) <= set(FAULTS)


def test_gpfs_nsd_down_is_health_p1(tmp_path):
    with open(os.path.join(FIX, "treydock-mmlsdisk-Y.txt"), encoding="utf-8") as fh:
        text = fh.read().replace("RG003VS004:nsd:512:1:no:yes:ready:up", "RG003VS004:nsd:512:1:no:yes:ready:down")
    (tmp_path / "mmlsdisk-ess.txt").write_text(text)
    got = {f["id"]: f for f in check_storage(collect_storage(capture_dir=str(tmp_path)), None, NOW)}
    f = got["cluster:storage.health:storage:ess/RG003VS004:ready/down"]
    assert (f["severity"], f["action"]) == ("P1", "contact_vendor")


@pytest.fixture
def hung_fuse(tmp_path):
    """A real FUSE mount (bindfs) whose daemon is stopped: statfs on it blocks in the kernel until SIGCONT."""
    if os.geteuid() != 0 or not shutil.which("bindfs"):
        pytest.skip("needs root and bindfs (tests/testbed/deps.sh)")
    src, mnt = tmp_path / "src", tmp_path / "mnt"
    src.mkdir()
    mnt.mkdir()
    daemon = subprocess.Popen(["bindfs", "-f", str(src), str(mnt)])  # noqa: S603
    try:
        for _attempt in range(100):
            with open("/proc/self/mounts", encoding="utf-8") as fh:
                if " %s " % mnt in fh.read():
                    break
            time.sleep(0.05)
        else:
            pytest.fail("bindfs did not mount")
        os.kill(daemon.pid, signal.SIGSTOP)
        yield str(mnt)
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
        subprocess.run(["fusermount", "-u", str(mnt)], check=False)
        subprocess.run(["umount", "-l", str(mnt)], check=False, stderr=subprocess.DEVNULL)
        daemon.terminate()
        daemon.wait(5)


def test_live_hung_mount_is_not_responding_within_the_timeout(hung_fuse):
    start = time.monotonic()
    facts = collect_storage(options={"mounts": [hung_fuse], "timeout_s": 1})
    assert time.monotonic() - start < 4
    (fs,) = [fs for fs in facts["filesystems"] if fs["mount"] == hung_fuse]
    assert fs["responsive"] is False and "not responding" in fs["error"]
    (f,) = [f for f in check_storage(facts, None, NOW) if f["check"] == "storage.health"]
    assert (f["code"], f["severity"], f["action"]) == ("not_responding", "P1", "contact_vendor")


def test_probe_on_a_hung_mount_is_bounded(hung_fuse):
    start = time.monotonic()
    facts = collect_storage(options={"probe": {"path": hung_fuse, "timeout_s": 2, "tool": "builtin"}})
    assert time.monotonic() - start < 4
    assert facts["throughput"] is None and facts["errors"][-1]["kind"] == "timeout"


@pytest.mark.skipif(not shutil.which("fio"), reason="fio not installed (tests/testbed/deps.sh)")
def test_probe_with_fio(tmp_path):
    facts = collect_storage(options={"probe": {"path": str(tmp_path), "bytes": 4 << 20, "timeout_s": 5}})
    tp = facts["throughput"]
    assert facts["errors"] == [] and tp["tool"] == "fio" and tp["write_bytes"] == 4 << 20 and tp["meta_ops"] > 0
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "over,key",
    [
        ({"capacity": {"p2_pct": 95, "p1_pct": 90}}, "thresholds.storage.capacity.p2_pct"),
        ({"inodes": {"p1_pct": 150}}, "thresholds.storage.inodes.p2_pct"),
        ({"throughput": {"min_share": 2}}, "thresholds.storage.throughput.min_share"),
        ({"health": {"action": "isolate"}}, "thresholds.storage.health.action"),
        ({"health": {"severity": "P9"}}, "thresholds.storage.health.severity"),
        ({"correlation_min_nodes": 0}, "thresholds.storage.correlation_min_nodes"),
    ],
)
def test_bad_storage_policy_is_a_clear_error(over, key):
    policy = merge_policy(overrides={"thresholds": {"storage": over}})
    with pytest.raises(PolicyError, match=key.replace(".", r"\.")):
        check_storage({"filesystems": []}, policy, NOW)
    with pytest.raises(PolicyError, match="unknown policy key 'thresholds.storage.capacity.p3_pct'"):
        merge_policy(overrides={"thresholds": {"storage": {"capacity": {"p3_pct": 1}}}})


def test_live_clients_through_the_real_runner(tmp_path, monkeypatch):
    """lfs/lctl/mm* answering with real captured outputs, found on PATH and run by the real runner; a mount
    table (``root``) with a Lustre and a GPFS filesystem on directories that exist."""
    bin_dir, root = tmp_path / "bin", tmp_path / "root"
    (root / "proc" / "self").mkdir(parents=True)
    bin_dir.mkdir()
    lus, ess = tmp_path / "myth", tmp_path / "ess"
    lus.mkdir()
    ess.mkdir()
    (root / "proc" / "self" / "mounts").write_text(
        "10.0.0.1@tcp:/myth %s lustre rw,flock 0 0\n/dev/ess %s gpfs rw,relatime 0 0\n" % (lus, ess)
    )
    fx = {n: os.path.join(FIX, n) for n in os.listdir(FIX)}
    scripts = {
        "lfs": 'case "$*" in\n "df") cat %s;;\n "df -i") cat %s;;\n "check servers") grep -v error: %s; grep error: %s >&2; exit 11;;\nesac\n'
        % (
            fx["lustre-manual-myth-lfs-df-h-ost-full.txt"],
            fx["lustre-manual-myth-lfs-df-i-mdt-inodes-full.txt"],
            fx["lustre-lfs-check-servers-ost-down.txt"],
            fx["lustre-lfs-check-servers-ost-down.txt"],
        ),
        "lctl": 'case "$1" in\n get_param) cat %s;;\n dl) cat %s;;\nesac\n'
        % (fx["lustre-lctl-health_check-healthy.txt"], fx["pytokio-edison-lctl-dl-t.txt"]),
        "mmhealth": "cat %s\n" % fx["treydock-mmhealth-node-show-Y.txt"],
        "mmlsdisk": '[ "$1" = ess ] && cat %s\n' % fx["treydock-mmlsdisk-Y.txt"],
        "mmdf": '[ "$1" = ess ] && cat %s\n' % fx["treydock-mmdf-Y.txt"],
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bin_dir, os.environ["PATH"]))
    facts = collect_storage(options={"root": str(root), "timeout_s": 5})
    assert "live:lfs check servers" in facts["sources"] and "live:mmdf ess -Y" in facts["sources"]
    by = {f["name"]: f for f in facts["filesystems"]}
    assert (by["myth"]["mount"], by["myth"]["used_pct"], by["myth"]["inode_used_pct"]) == (str(lus), 85, 100)
    assert by["ess"]["mount"] == str(ess) and by["ess"]["used_pct"] == 86.9
    assert all(f["responsive"] for f in facts["filesystems"])
    got = keys(check_storage(facts, None, NOW))
    assert ("storage.health", "storage:server:nas_test-OST0007", "down") in got  # lfs check exit 11: still read
    assert ("storage.capacity", "storage:myth/myth-OST0001", "space") in got
    assert ("storage.capacity", "storage:ess", "space") in got


def test_correlate_hung_mount_on_every_node_before_the_leaf_correlation():
    """node.mounts hung on every node: one storage finding; the leaf correlation then blames no switch."""
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.cluster import evaluate_cluster

    def hung(h):
        return {"check": "node.mounts", "severity": "P1", "component": "mount:/home", "code": "hung",
                "message": "/home does not respond", "action": "isolate", "rule": "node.mounts", "evidence": {},
                "host": h, "cause": None, "id": "%s:node.mounts:mount:/home:hung" % h}  # fmt: skip

    def nodes(per):
        return {h: {"findings": fs, "leaf": "leaf-1", "rack": "r1", "power": "p1"} for h, fs in per.items()}

    alone = {"n%d" % i: [hung("n%d" % i)] for i in range(4)}
    assert "cluster.leaf" in [f["check"] for f in evaluate_cluster(nodes(alone), None, NOW)]  # without: the leaf
    per = {"n%d" % i: [hung("n%d" % i)] for i in range(4)}
    (p,) = correlate_storage(per, None, NOW)
    assert (p["component"], p["code"], p["action"]) == ("storage:mount:/home", "not_responding", "contact_vendor")
    assert all(f["cause"] == p["id"] and f["action"] == "monitor" for fs in per.values() for f in fs)
    assert [f for f in evaluate_cluster(nodes(per), None, NOW) if f["check"].startswith("cluster.leaf")] == []
    fresh = {h: [hung(h)] for h in ("a", "b")}
    fresh["c"] = []  # one node does not see it: a node problem, not the storage
    assert correlate_storage(fresh, None, NOW) == []


def test_collector_errors_can_be_left_to_the_caller(tmp_path):
    (tmp_path / "lfs-df.txt").write_text("garbage\n")
    facts = collect_storage(capture_dir=str(tmp_path))
    assert [f["check"] for f in check_storage(facts, None, NOW)] == ["collector.error"]
    assert check_storage(facts, None, NOW, collector_errors=False) == []
    assert [f["code"] for f in check_storage(None, None, NOW, collector_errors=False)] == ["missing"]


def test_probe_baseline_stored_and_compared(tmp_path):
    work, bfile = tmp_path / "work", tmp_path / "state" / "storage-baseline.json"
    work.mkdir()
    spec = {"path": str(work), "bytes": 1 << 20, "timeout_s": 3, "tool": "builtin", "baseline_file": str(bfile)}
    first = collect_storage(options={"probe": dict(spec, record_baseline=True)})
    assert first["throughput"]["baseline"] is None and first["errors"] == []  # nothing stored yet: no comparison
    assert oct(bfile.stat().st_mode & 0o777) == "0o600" and oct(bfile.parent.stat().st_mode & 0o777) == "0o700"
    stored = json.loads(bfile.read_text())
    assert stored["write_mib_s"] == first["throughput"]["write_mib_s"] and stored["recorded_at"]
    bfile.write_text(json.dumps(dict(stored, write_mib_s=1e9, meta_ops_s=1.0)))  # a baseline nothing here reaches
    second = collect_storage(options={"probe": spec})
    assert second["throughput"]["baseline"]["write_mib_s"] == 1e9
    assert {f["code"] for f in check_storage(second, None, NOW) if f["check"] == "storage.throughput"} == {"write"}
    bfile.write_text("{not json")
    third = collect_storage(options={"probe": spec})
    assert third["throughput"]["baseline"] is None and third["errors"][0]["kind"] == "parse"


def test_live_failing_tool_partial_output_is_read_and_reported(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    df = os.path.join(FIX, "lustre-manual-myth-lfs-df-h-ost-full.txt")
    (bin_dir / "lfs").write_text(
        '#!/bin/sh\n[ "$*" = df ] && { cat %s; echo "lfs df: cannot stat OST0005: Input/output error" >&2; exit 5; }\n'
        "exit 1\n" % df
    )
    (bin_dir / "lfs").chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bin_dir, os.environ["PATH"]))
    facts = collect_storage(options={"lustre": True, "timeout_s": 3})
    assert [fs["name"] for fs in facts["filesystems"]] == ["myth"]  # stdout of the failed run is still evidence
    msgs = [e["message"] for e in facts["errors"] if e["kind"] == "tool_error"]
    assert any("exit 5" in m and "Input/output error" in m for m in msgs)  # and its failure is reported
    assert len(msgs) == 2  # and lfs df -i printed nothing and failed
    # lfs check servers exits 1 when a server is down (an allowed exit): printing nothing is unreadable evidence
    assert [e for e in facts["errors"] if e["kind"] == "parse"][0]["message"] == "empty output"


def test_nfs_soft_mount_is_advice(tmp_path):
    text = open(os.path.join(FIX, "linux-nfs-list-nfsstat-m-two-mounts.txt"), encoding="utf-8").read()
    (tmp_path / "nfsstat.txt").write_text(text.replace("262144,namlen=255,hard,", "262144,namlen=255,soft,", 1))
    got = check_storage(collect_storage(capture_dir=str(tmp_path)), None, NOW)
    assert [(f["component"], f["code"], f["severity"], f["action"]) for f in got] == [
        ("storage:kvm-demo-support.dev.cpanel.net:/volumes/kvm-demo", "soft_mount", "P3", "tune")
    ]


def test_nfs_client_retransmissions(tmp_path):
    shutil.copy(os.path.join(FIX, "lkml-2006-nfsstat-client-v3.txt"), tmp_path / "nfsstat-c.txt")
    facts = collect_storage(capture_dir=str(tmp_path))
    assert facts["nfs_rpc"] == {"calls": 13240, "retrans": 0, "authrefrsh": 0}
    assert check_storage(facts, None, NOW) == []
    shutil.copy(os.path.join(FIX, "lkml-2006-nfsstat-client-v3-retrans.txt"), tmp_path / "nfsstat-c.txt")
    (f,) = check_storage(collect_storage(capture_dir=str(tmp_path)), None, NOW)
    assert (f["check"], f["component"], f["code"], f["severity"]) == (
        "storage.health",
        "storage:nfs:client_rpc",
        "retrans",
        "P2",
    )
    assert f["evidence"]["retrans_pct"] == 8.97
    few = merge_policy(overrides={"thresholds": {"storage": {"nfs_retrans": {"min_calls": 20000}}}})
    assert check_storage(collect_storage(capture_dir=str(tmp_path)), few, NOW) == []  # too few calls to judge
