# Unit tests for plugins/module_utils/collectors/ib.py on a real sysfs layout (links, odd entries, live reads, timeouts).
from __future__ import annotations

import errno
import os
import stat
import time

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import ib as _ib
from ib_cases import build_real_tree, by_name


# ----------------------------------------------------------------------------------------------- real layout


@pytest.fixture
def real_root(tmp_path):
    return build_real_tree(str(tmp_path / "root"))


def test_real_layout_is_real(real_root):
    cls = os.path.join(real_root, "sys", "class", "infiniband")
    assert os.path.islink(os.path.join(cls, "mlx5_0"))
    loop = os.path.join(cls, "mlx5_0", "subsystem", "mlx5_0", "subsystem", "mlx5_1")
    assert os.path.isdir(loop)  # the subsystem link loops back to the class directory


def test_real_layout_live(real_root):
    t0 = time.time()
    out = _ib.collect(sysfs_root=real_root, ibstat_path="/nonexistent/ibstat", timeout=10)
    assert out["source"] == "sysfs"
    assert t0 <= out["collected_at"] <= time.time()
    assert out["boot_id"] == "3b0fca2e-5c0e-4c1f-9a52-0d9d6e0f1a11"
    hcas = by_name(out["hcas"])
    assert list(hcas) == ["mlx5_0", "mlx5_1"]
    # the dangling link and the self-loop are reported, nothing else
    assert sorted(e["message"].split("/")[-1] for e in out["errors"]) == [
        "loop0 is not a readable HCA directory",
        "mlx5_gone is not a readable HCA directory",
    ]
    assert {e["kind"] for e in out["errors"]} == {"unreadable"}
    h0 = hcas["mlx5_0"]
    assert h0["node_guid"] == "0x946dae0300cde72c"
    p = h0["ports"][0]
    assert (p["lid"], p["sm_lid"], p["port_guid"]) == (75, 334, "0x946dae0300cde72c")
    assert p["saturated"] == ["excessive_buffer_overrun_errors", "link_downed"]
    h1 = hcas["mlx5_1"]
    assert [q["port"] for q in h1["ports"]] == [1, 2]
    for q in h1["ports"]:
        assert (q["state"], q["phys_state"], q["link_layer"]) == ("DOWN", "Disabled", "Ethernet")
        assert q["port_guid"] == "0x966daefffec2b69%d" % q["port"]
        assert q["saturated"] == ["local_link_integrity_errors", "symbol_error"]
        assert q["counters"]["link_downed"] == 3 and q["counters"]["np_cnp_sent"] == 7


def test_unreadable_hw_counter_is_skipped(real_root, monkeypatch):
    real_read = os.read

    def fake_read(fd, n):
        if os.readlink("/proc/self/fd/%d" % fd).endswith("hw_counters/np_cnp_sent"):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_read(fd, n)

    monkeypatch.setattr(_ib.os, "read", fake_read)
    hcas, errors = _ib.read_sysfs_class(os.path.join(real_root, "sys", "class", "infiniband"))
    monkeypatch.undo()
    assert len(errors) == 2
    for p in by_name(hcas)["mlx5_1"]["ports"]:
        assert "np_cnp_sent" not in p["counters"]
        assert p["counters"]["rp_cnp_handled"] == 7


def test_fifo_and_odd_entries_do_not_block(real_root):
    hw = os.path.join(real_root, "sys", "class", "infiniband", "mlx5_0", "ports", "1", "hw_counters")
    os.mkfifo(os.path.join(hw, "stuck_fifo"))
    os.mkdir(os.path.join(hw, "a_directory"))
    os.symlink("/dev/zero", os.path.join(hw, "zero_link"))
    t0 = time.monotonic()
    hcas, _unused = _ib.read_sysfs_class(os.path.join(real_root, "sys", "class", "infiniband"))
    assert time.monotonic() - t0 < 2
    c = by_name(hcas)["mlx5_0"]["ports"][0]["counters"]
    assert "stuck_fifo" not in c and "a_directory" not in c and "zero_link" not in c
    assert c["link_downed"] == 255


def test_capture_sysfs_roundtrip(real_root, tmp_path):
    hdir = os.path.join(real_root, "sys", "class", "infiniband", "mlx5_0")
    with open(os.path.join(hdir, "uevent"), "w") as fh:
        fh.write("NAME=mlx5_0\n")
    os.makedirs(os.path.join(hdir, "ports", "1", "gid_attrs", "ndevs"))
    with open(os.path.join(hdir, "ports", "1", "gid_attrs", "ndevs", "0"), "w") as fh:
        fh.write("ib0\n")
    dest = str(tmp_path / "cap")
    res = _ib.capture_sysfs(real_root, dest)
    assert res["hcas"] == ["mlx5_0", "mlx5_1"]
    assert len(res["errors"]) == 2  # mlx5_gone, loop0
    assert abs(res["collected_at"] - time.time()) < 60
    # one file, not a tree: the listing capture writes, private and plain
    assert sorted(os.listdir(dest)) == ["infiniband-sysfs.txt"] and res["file"] == "infiniband-sysfs.txt"
    listing = os.path.join(dest, "infiniband-sysfs.txt")
    assert stat.S_ISREG(os.lstat(listing).st_mode) and stat.S_IMODE(os.lstat(listing).st_mode) == 0o600
    with open(listing, encoding="utf-8") as fh:
        text = fh.read()
    lines = text.splitlines()
    assert text.endswith("\n") and lines == sorted(lines) and all(ln.startswith("./") for ln in lines)
    copied = [ln[2:].partition(":")[0] for ln in lines]
    assert res["files"] == len(copied)
    names = {c.split("/")[-1] for c in copied}
    assert "uevent" not in names and "device" not in names and "subsystem" not in names
    assert not any("gid_attrs" in c for c in copied)
    assert "mlx5_0/ports/1/gids/0" in copied and "mlx5_0/fw_ver" in copied
    live = _ib.collect(sysfs_root=real_root, ibstat_path="/nonexistent")
    offline = _ib.collect(capture_dir=dest)
    assert offline["source"] == "capture:sysfs" and offline["errors"] == []
    assert offline["hcas"] == live["hcas"]


def test_capture_sysfs_in_process_and_missing_root(tmp_path):
    res = _ib.capture_sysfs(str(tmp_path / "nothing"), str(tmp_path / "dest"), timeout=None)
    assert res["hcas"] == [] and res["files"] == 0 and res["errors"] == [] and res["file"] is None
    assert not os.path.exists(str(tmp_path / "dest" / "infiniband-sysfs.txt"))  # nothing read, nothing written


def test_live_sysfs_read_timeout(real_root, monkeypatch):
    def hang(class_dir):
        time.sleep(30)

    monkeypatch.setattr(_ib, "read_sysfs_class", hang)
    t0 = time.monotonic()
    out = _ib.collect(sysfs_root=real_root, ibstat_path="/nonexistent", timeout=1)
    assert time.monotonic() - t0 < 5
    assert [e["kind"] for e in out["errors"]] == ["timeout"]
    assert out["hcas"] == []
