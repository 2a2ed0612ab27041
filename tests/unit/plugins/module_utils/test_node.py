# Unit tests for plugins/module_utils/collectors/node.py (node basics, mounts with timeouts, NVIDIA services).
from __future__ import annotations

import json
import os
import shutil
import time

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import node as _node
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import node as _node_parse
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

REAL_STAT = shutil.which("stat")

MOUNTS = """\
/dev/vda / ext4 rw,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
10.0.0.5@o2ib:/fs1 /lustre lustre rw,flock,lazystatfs 0 0
nas:/export/scratch /scratch nfs4 rw,vers=4.2,hard 0 0
nas:/export/old /scratch nfs4 rw,vers=4.2,hard 0 0
tmpfs /with\\040space tmpfs rw 0 0
"""

OS_RELEASE = """\
PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
# comment
garbage line
ID=debian
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def proc(r, pid, comm, uid=0, exe=None, argv0=None, state="S (sleeping)"):
    """A process in a fake root: comm, the status lines the collector reads, the exe link, the command line."""
    base = os.path.join(r, "proc", str(pid))
    write(os.path.join(base, "comm"), comm + "\n")
    write(os.path.join(base, "status"), "Name:\t%s\nState:\t%s\nUid:\t%d\t%d\t%d\t%d\n" % ((comm, state) + (uid,) * 4))
    if exe:
        os.symlink(exe, os.path.join(base, "exe"))
    write(os.path.join(base, "cmdline"), (argv0 or exe or comm) + "\0--flag\0")


@pytest.fixture
def root(tmp_path):
    """A fake root: /proc and /etc files, mount points as plain directories, a few processes."""
    r = str(tmp_path / "root")
    # mount targets are absolute paths; the probe looks for them below the fake root
    write(os.path.join(r, "proc/self/mounts"), MOUNTS)
    write(os.path.join(r, "proc/sys/kernel/hostname"), "gpu-node-01\n")
    write(os.path.join(r, "proc/sys/kernel/osrelease"), "6.1.0-18-amd64\n")
    write(os.path.join(r, "proc/sys/kernel/random/boot_id"), "0b6c0d1e-aaaa-bbbb-cccc-000000000001\n")
    write(os.path.join(r, "proc/meminfo"), "MemTotal:       2113384448 kB\nMemFree: 1 kB\n")
    write(os.path.join(r, "etc/os-release"), OS_RELEASE)
    proc(r, 1, "init", exe="/sbin/init")
    proc(r, 4242, "nv-hostengine", exe="/usr/bin/nv-hostengine")
    proc(r, 4243, "nvidia-persiste", exe="/usr/bin/nvidia-persistenced")  # comm is cut at 15 characters
    for d in ("lustre", "scratch", "with space", "data/sub"):
        os.makedirs(os.path.join(r, d), exist_ok=True)
    return r


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """Fake tools found by _node.which (stat stays real; nothing else from the host is used)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    found = {"stat": REAL_STAT}

    def add(name, body):
        path = bindir / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)
        found[name] = str(path)

    monkeypatch.setattr(_node, "which", lambda name, path=None: found.get(name))
    return add


def test_live_basics(root, tools):
    out = _node.collect(root=root, services=[])
    assert out["source"] == "live" and out["errors"] == []
    assert out["hostname"] == "gpu-node-01"
    assert out["kernel"] == "6.1.0-18-amd64"
    assert out["boot_id"] == "0b6c0d1e-aaaa-bbbb-cccc-000000000001"
    assert out["os"] == "Debian GNU/Linux 12 (bookworm)"
    assert out["memory_mib"] == 2063852
    assert out["services"] == {} and out["mounts"] == [] and out["fabric_manager_version"] is None


def test_mounts_and_filesystems(root, tools):
    out = _node.collect(
        root=root,
        mounts=["/lustre", {"path": "/scratch", "fstype": "lustre"}, "/missing", "/with space", {"bad": 1}],
        filesystems=["/data/sub", "/"],
        services=[],
    )
    m = {x["path"]: x for x in out["mounts"]}
    assert list(m) == ["/lustre", "/scratch", "/missing", "/with space"]
    assert m["/lustre"]["present"] is True and m["/lustre"]["responsive"] is True
    assert m["/lustre"]["fstype"] == "lustre" and m["/lustre"]["device"] == "10.0.0.5@o2ib:/fs1"
    assert 0 <= m["/lustre"]["free_pct"] <= 100 and m["/lustre"]["size_mib"] > 0
    assert m["/lustre"]["error"] is None
    # the later of two mounts on one target is the visible one
    assert m["/scratch"]["device"] == "nas:/export/old"
    assert m["/scratch"]["error"] == "mounted as nfs4, expected lustre"
    assert m["/missing"]["present"] is False and m["/missing"]["responsive"] is None
    assert m["/missing"]["error"] == "not mounted"
    assert m["/with space"]["fstype"] == "tmpfs" and m["/with space"]["responsive"] is True
    fs = {x["path"]: x for x in out["filesystems"]}
    assert fs["/data/sub"]["mount"] == "/" and fs["/data/sub"]["fstype"] == "ext4"
    assert fs["/data/sub"]["responsive"] is True and fs["/data/sub"]["free_mib"] >= 0


def test_hung_mount_fifo_probe(root, tools, tmp_path, monkeypatch):
    """A probe that blocks (cat on a FIFO nobody writes) is killed after the timeout: a finding, not a hang."""
    fifo = str(tmp_path / "hang.fifo")
    os.mkfifo(fifo)
    real_argv = _node._probe_argv
    monkeypatch.setattr(
        _node, "_probe_argv", lambda path: ["cat", fifo] if path.endswith("lustre") else real_argv(path)
    )
    t0 = time.monotonic()
    out = _node.collect(root=root, mounts=["/lustre", "/scratch"], services=[], timeout=1)
    elapsed = time.monotonic() - t0
    assert elapsed < 2.5
    m = {x["path"]: x for x in out["mounts"]}
    assert m["/lustre"]["present"] is True and m["/lustre"]["responsive"] is False
    assert "not responding" in m["/lustre"]["error"]
    assert m["/scratch"]["responsive"] is True
    assert out["errors"] == []  # a hung mount is a finding for the policy, not a collector error


def test_hung_mounts_probe_in_parallel(root, tools, monkeypatch):
    monkeypatch.setattr(_node, "_probe_argv", lambda path: ["sleep", "30"])
    t0 = time.monotonic()
    out = _node.collect(root=root, mounts=["/lustre", "/scratch", "/with space"], filesystems=["/"], timeout=1)
    assert time.monotonic() - t0 < 3  # 4 hung probes cost one timeout
    assert [x["responsive"] for x in out["mounts"] + out["filesystems"]] == [False] * 4


def test_statvfs_child_fallback_blocks(root, tools, monkeypatch):
    """Without stat(1) the probe is os.statvfs in a forked child (run_in_child), abandoned after the timeout."""

    def sleepy(path):
        time.sleep(30)

    monkeypatch.setattr(_node, "_probe_argv", lambda path: None)
    monkeypatch.setattr(_node, "_statvfs", sleepy)
    t0 = time.monotonic()
    res = _node.probe_path(os.path.join(root, "lustre"), 1)
    assert time.monotonic() - t0 < 2.5
    assert res["responsive"] is False and "not responding" in res["error"]
    monkeypatch.undo()
    monkeypatch.setattr(_node, "_probe_argv", lambda path: None)
    res = _node.probe_path(root, 5)
    assert res["responsive"] is True and res["size_mib"] > 0


def test_probe_error_and_garbage(root, tools, monkeypatch):
    res = _node.probe_path(os.path.join(root, "does-not-exist"), 5)
    assert res["responsive"] is False and "exit 1" in res["error"]
    monkeypatch.setattr(_node, "_probe_argv", lambda path: ["echo", "not numbers"])
    res = _node.probe_path(root, 5)
    assert res["responsive"] is True and "expected 4 numbers" in res["error"]


def test_services_from_proc(root, tools):
    out = _node.collect(root=root)
    s = out["services"]
    assert set(s) == {"nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm"}
    assert s["nvidia-dcgm"] == {"running": True, "unit_state": None, "pid": 4242, "method": "proc", "detail": None}
    assert s["nvidia-persistenced"]["running"] is True and s["nvidia-persistenced"]["pid"] == 4243
    assert s["nvidia-fabricmanager"]["running"] is False and s["nvidia-fabricmanager"]["method"] == "proc"
    assert s["nvidia-fabricmanager"]["version"] is None and out["fabric_manager_version"] is None


def test_services_from_pidfile(tmp_path, tools):
    r = str(tmp_path / "r")
    write(os.path.join(r, "run/nvhostengine.pid"), "77\n")
    proc(r, 77, "hostengine-cut", exe="/usr/bin/nv-hostengine")  # the pid file names it, whatever its comm
    write(os.path.join(r, "run/nvidia-persistenced/nvidia-persistenced.pid"), "78\n")  # stale
    out = _node.collect(root=r, services=["nv-hostengine", "nvidia-persistenced", "my-agent"])
    s = out["services"]
    assert s["nvidia-dcgm"] == {"running": True, "unit_state": None, "pid": 77, "method": "pidfile", "detail": None}
    assert s["nvidia-persistenced"]["running"] is False
    assert s["nvidia-persistenced"]["detail"] == (
        "not the daemon: pid file /run/nvidia-persistenced/nvidia-persistenced.pid: pid 78 is not running"
    )
    assert s["my-agent"] == {"running": False, "unit_state": None, "pid": None, "method": "proc", "detail": None}


def test_services_without_proc_or_pidfiles_are_unknown(tmp_path, tools):
    r = str(tmp_path / "r")
    os.makedirs(r)
    s = _node.collect(root=r, services=["nvidia-dcgm", "my-agent"])["services"]
    assert s["nvidia-dcgm"] == {"running": False, "unit_state": None, "pid": None, "method": "pidfile", "detail": None}
    assert s["my-agent"] == {"running": None, "unit_state": None, "pid": None, "method": None, "detail": None}


#: ``systemctl show -p Id,LoadState,ActiveState,SubState,MainPID -- UNITS`` of a fake node: a block per unit
SHOW = """shift 4
for u in "$@"; do
  case $u in
    nvidia-persistenced) printf 'MainPID=4243\nId=%s.service\nLoadState=loaded\nActiveState=active\nSubState=running\n' $u;;
    nvidia-dcgm) printf 'MainPID=0\nId=%s.service\nLoadState=loaded\nActiveState=failed\nSubState=failed\n' $u;;
    slurmd) printf 'MainPID=0\nId=%s.service\nLoadState=loaded\nActiveState=inactive\nSubState=dead\n' $u;;
    *) printf 'MainPID=0\nId=%s.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\n' $u;;
  esac
  echo
done
"""


def test_services_systemd(root, tools):
    os.makedirs(os.path.join(root, "run/systemd/system"))
    tools("systemctl", SHOW)
    out = _node.collect(
        root=root, services=["nvidia-persistenced", "nvidia-dcgm", {"name": "slurmd", "unit": "slurmd"}]
    )
    s = out["services"]
    assert s["nvidia-persistenced"] == {
        "running": True,
        "unit_state": "active",
        "pid": 4243,
        "method": "systemctl",
        "detail": None,
    }
    # the unit failed, and nv-hostengine runs, root's, from /usr/bin: systemd's word decides, not running
    assert s["nvidia-dcgm"]["unit_state"] == "failed" and s["nvidia-dcgm"]["running"] is False
    assert s["nvidia-dcgm"]["method"] == "systemctl" and s["nvidia-dcgm"]["pid"] is None
    assert "unit nvidia-dcgm is failed" in s["nvidia-dcgm"]["detail"]
    assert s["slurmd"]["running"] is False and s["slurmd"]["unit_state"] == "inactive"
    assert out["errors"] == []


def test_services_systemd_without_the_unit_falls_back_to_the_daemon(root, tools):
    """No unit of that name installed (LoadState not-found): the daemon's own evidence, as on a node without
    systemd."""
    os.makedirs(os.path.join(root, "run/systemd/system"))
    tools("systemctl", SHOW)
    s = _node.collect(root=root, services=[{"name": "dcgm-by-hand", "unit": "nope", "process": "nv-hostengine"}])
    assert s["services"]["dcgm-by-hand"] == {
        "running": True,
        "unit_state": "not-found",
        "pid": 4242,
        "method": "proc",
        "detail": None,
    }


def test_systemctl_hangs(root, tools):
    os.makedirs(os.path.join(root, "run/systemd/system"))
    tools("systemctl", "sleep 30\n")
    t0 = time.monotonic()
    out = _node.collect(root=root, services=["nvidia-dcgm"], timeout=1)
    assert time.monotonic() - t0 < 3
    assert [e["kind"] for e in out["errors"]] == ["timeout"]
    assert out["services"]["nvidia-dcgm"]["running"] is True  # still known from the daemon's process


def test_systemctl_show_garbage_is_an_error(root, tools):
    os.makedirs(os.path.join(root, "run/systemd/system"))
    tools("systemctl", "echo LoadState=loaded\necho\necho ActiveState=active\necho\necho Id=x\n")  # 3 for 2 units
    out = _node.collect(root=root, services=["nvidia-dcgm"])
    assert [(e["kind"], e["source"]) for e in out["errors"]] == [("parse", "systemctl show")]
    assert out["services"]["nvidia-dcgm"]["method"] == "proc"


@pytest.mark.parametrize(
    "name,body,expected",
    [
        ("nv-fabricmanager", 'echo "Fabric Manager version is : 535.161.08"\n', "535.161.08"),
        (
            "dpkg-query",
            'printf "un nvidia-fabricmanager-550 \\nii nvidia-fabricmanager-535 535.161.08-1\\n"\n',
            "535.161.08",
        ),
        ("rpm", 'echo "nvidia-fabric-manager 550.54.15"\n', "550.54.15"),
        ("dpkg-query", 'echo "dpkg-query: no packages found matching nvidia-fabricmanager*" >&2; exit 1\n', None),
    ],
)
def test_fabric_manager_version(root, tools, name, body, expected):
    tools(name, body)
    out = _node.collect(root=root, services=["nvidia-fabricmanager"])
    assert out["fabric_manager_version"] == expected
    assert out["services"]["nvidia-fabricmanager"]["version"] == expected
    assert out["errors"] == []


def test_fabric_manager_binary_broken_falls_back(root, tools):
    tools("nv-fabricmanager", "echo boom >&2; exit 2\n")
    tools("dpkg-query", 'echo "ii nvidia-fabricmanager-535 535.161.08-1"\n')
    out = _node.collect(root=root, services=["nvidia-fabricmanager"])
    assert out["fabric_manager_version"] == "535.161.08"
    assert [e["kind"] for e in out["errors"]] == ["tool_error"]


# ----------------------------------------------------------------------------------------------- capture


def test_capture_roundtrip(root, tools, tmp_path):
    live = _node.collect(root=root, mounts=["/lustre", "/missing"], filesystems=["/"])
    cap = tmp_path / "cap"
    cap.mkdir()
    (cap / "node.json").write_text(json.dumps(live))
    out = _node.collect(capture_dir=str(cap), mounts=["/lustre", "/home"])
    assert out["source"] == "capture:node.json"
    for key in ("hostname", "boot_id", "kernel", "os", "memory_mib", "filesystems", "services"):
        assert out[key] == live[key]
    assert out["mounts"][:2] == live["mounts"]
    assert out["mounts"][2]["path"] == "/home" and out["mounts"][2]["present"] is None
    assert out["errors"] == []


def test_capture_missing_bad_and_meta(tmp_path):
    cap = tmp_path / "cap"
    cap.mkdir()
    out = _node.collect(capture_dir=str(cap))
    assert out["source"] is None and out["errors"] == [] and out["hostname"] is None
    (cap / "capture.json").write_text(json.dumps({"hostname": "gpu-node-07", "boot_id": "b-7"}))
    (cap / "node.json").write_bytes(b"\xff[not json")
    out = _node.collect(capture_dir=str(cap))
    assert out["source"] == "capture:node.json"
    assert [e["kind"] for e in out["errors"]] == ["parse"]
    assert out["hostname"] == "gpu-node-07" and out["boot_id"] == "b-7"
    (cap / "node.json").write_text(json.dumps({"hostname": ["x"], "memory_mib": True, "kernel": "6.1", "errors": [1]}))
    out = _node.collect(capture_dir=str(cap))
    assert out["hostname"] == "gpu-node-07" and out["memory_mib"] is None and out["kernel"] == "6.1"
    assert out["errors"] == []


def test_collect_never_raises(monkeypatch):
    monkeypatch.setattr(_node, "_collect_live", lambda *a: 1 / 0)
    out = _node.collect()
    assert [e["kind"] for e in out["errors"]] == ["internal"]


# ----------------------------------------------------------------------------------------------- parsers


def test_parsers():
    assert _node.parse_os_release(OS_RELEASE)["VERSION_ID"] == "12"
    assert _node.os_name({"NAME": "Rocky Linux", "VERSION": "9.3 (Blue Onyx)"}) == "Rocky Linux 9.3 (Blue Onyx)"
    assert _node.os_name({}) is None
    assert _node.parse_meminfo("MemFree: 3 kB\n") is None
    table = _node.parse_mounts(MOUNTS)
    assert table[-1]["path"] == "/with space"
    assert _node.mount_containing(table, "/lustre/a/b")["fstype"] == "lustre"
    assert _node.mount_containing(table, "/lustrex")["path"] == "/"
    assert _node.parse_stat_f("100 50 40 4096\n") == {"size_mib": 0, "free_mib": 0, "free_pct": 40.0}
    assert _node.parse_stat_f("0 0 0 4096") == {"size_mib": 0, "free_mib": 0, "free_pct": None}
    with pytest.raises(ParseError):
        _node.parse_stat_f("")
    assert _node.parse_fm_version("Fabric Manager version is : 570.86.15\n") == "570.86.15"
    assert _node.parse_fm_version("usage: nv-fabricmanager [options]\n") is None
    assert _node.parse_dpkg_versions("ii  cuda-drivers-fabricmanager-535 1:535.104.05-1\n") == "535.104.05"
    assert _node.parse_is_active("active\ninactive\n", ["a", "b", "c"]) == {"a": "active", "b": "inactive"}
    show = "Id=a.service\nLoadState=loaded\n\nId=b.service\nLoadState=not-found\n"
    assert _node.parse_show(show, ["a", "b"]) == {
        "a": {"Id": "a.service", "LoadState": "loaded"},
        "b": {"Id": "b.service", "LoadState": "not-found"},
    }
    assert _node.parse_show(show, ["a"]) is None
    status = "Name:\tx\nState:\tZ (zombie)\nUid:\t0\t1000\t0\t0\nGid:\t0\t0\t0\t0\n"
    assert _node_parse.parse_proc_status(status) == {"uids": [0, 1000, 0, 0], "state": "Z"}
    assert _node_parse.parse_proc_status("Uid:\t0\t0\n") == {"uids": None, "state": None}


@seed(20261202)
@settings(max_examples=120, deadline=None)
@given(st.text(max_size=300))
def test_fuzz_parsers(text):
    _node.parse_os_release(text)
    _node.parse_meminfo(text)
    table = _node.parse_mounts(text)
    _node.mount_containing(table, "/x")
    _node.parse_fm_version(text)
    _node.parse_dpkg_versions(text)
    _node.parse_rpm_versions(text)
    _node.parse_is_active(text, ["a"])
    _node.parse_show(text, ["a", "b"])
    assert set(_node_parse.parse_proc_status(text)) == {"uids", "state"}
    try:
        res = _node.parse_stat_f(text)
    except ParseError:
        return
    assert set(res) == {"size_mib", "free_mib", "free_pct"}


def test_capture_huge_node_json_refused(tmp_path):
    with open(tmp_path / "node.json", "wb") as fh:
        fh.truncate(65 * 1024 * 1024)  # sparse
    out = _node.collect(capture_dir=str(tmp_path))
    assert out["source"] == "capture:node.json" and [e["kind"] for e in out["errors"]] == ["unreadable"]
