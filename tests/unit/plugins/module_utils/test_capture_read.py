# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capture reader refuses what is not a plain file of the capture (issue 12, item 3).

Links (to a secret, to /dev/zero, dangling), FIFOs, device nodes, directories and files over the cap each give
an error naming the file, and the rest of the capture is still read. The cases that hung or exhausted memory
before the fix (a FIFO, /dev/zero) run in a child with a memory limit and a timeout, so that they fail -- not
hang the suite -- on a reader that follows them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import threading

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    capture as _capture,
    collect as _collect,
)
from ansible_collections.gpuops.cluster.plugins.module_utils import _common as C
from ansible_collections.gpuops.cluster.plugins.module_utils import _files as F

SECRET = "s3cr3t-h3-do-not-leak"


@pytest.fixture()
def secret(tmp_path):
    p = tmp_path / "secret.txt"
    p.write_text(SECRET + "\n")
    return str(p)


def _refused(path, reason, **kw):
    with pytest.raises(C.ParseError) as ei:
        F.read_text(str(path), **kw)
    exc = ei.value
    assert isinstance(exc, F.UnsafeFileError)
    assert exc.reason == reason
    assert exc.source == str(path)
    assert str(path) in str(exc)
    err = exc.to_error("slurm")
    assert err["kind"] == "unreadable" and err["source"] == str(path) and str(path) in err["message"]
    # a caller that asks for its usual kind still gets "unreadable": the file was refused, not misparsed
    assert exc.to_error("slurm", "parse")["kind"] == "unreadable"
    return exc


def _in_child(code, *args, timeout=20):
    """Run ``code`` in a child limited to 1 GiB of address space: a reader that follows /dev/zero or blocks on
    a FIFO makes the test fail (MEMORY / TIMEOUT), never hangs the suite or exhausts the machine."""
    prelude = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from ansible_collections.gpuops.cluster.plugins.module_utils import _common as C\n"
        "from ansible_collections.gpuops.cluster.plugins.module_utils import _files as F\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        proc = subprocess.run(
            [sys.executable, "-c", prelude + textwrap.dedent(code), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "TIMEOUT", ""
    out = proc.stdout.strip()
    if "MemoryError" in proc.stderr:
        return "MEMORY", proc.stderr[-500:]
    return (out.split(" ", 1)[0] if out else "CRASH rc=%s" % proc.returncode), out + proc.stderr[-500:]


def _read_in_child(path, max_bytes=C.MAX_INPUT_BYTES, timeout=20):
    """read_text(path) in a bounded child; returns (outcome, detail): REFUSED, READ, MEMORY, TIMEOUT."""
    code = """
        try:
            text = F.read_text(sys.argv[1], int(sys.argv[2]))
        except C.ParseError as exc:
            print("REFUSED", getattr(exc, "reason", None), exc)
        except MemoryError:
            print("MEMORY")
        else:
            print("READ", len(text or ""))
        """
    return _in_child(code, path, max_bytes, timeout=timeout)


def test_plain_file_is_read_and_missing_is_none(tmp_path):
    p = tmp_path / "ibstat.txt"
    p.write_bytes(b"CA 'mlx5_0'\n\xff\n")
    assert F.read_text(str(p)) == "CA 'mlx5_0'\n\ufffd\n"
    assert F.read_text(str(tmp_path / "absent.txt")) is None


def test_symlink_to_a_secret_is_refused_and_never_read(tmp_path, secret):
    link = tmp_path / "scontrol-show-node.txt"
    os.symlink(secret, link)
    exc = _refused(link, "symlink")
    assert SECRET not in str(exc) and SECRET not in json.dumps(exc.to_error("slurm"))


def test_dangling_symlink_is_refused_not_missing(tmp_path):
    link = tmp_path / "kernel.log"
    os.symlink(str(tmp_path / "nowhere"), link)
    _refused(link, "symlink")


def test_symlink_to_dev_zero_is_refused_without_reading(tmp_path):
    link = tmp_path / "kernel.log"
    os.symlink("/dev/zero", link)
    outcome, detail = _read_in_child(link)
    assert outcome == "REFUSED", detail
    assert "symlink" in detail and str(link) in detail


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "ipmitool-sel.txt"
    os.mkfifo(fifo)
    outcome, detail = _read_in_child(fifo, timeout=15)
    assert outcome == "REFUSED", detail
    assert "fifo" in detail and str(fifo) in detail
    _refused(fifo, "fifo")


def test_fifo_with_a_writer_attached_is_still_refused(tmp_path):
    """Even when a writer holds the FIFO open (open() would not block), its content is never read."""
    fifo = tmp_path / "kernel.log"
    os.mkfifo(fifo)
    holder = {}

    def writer():
        fd = os.open(str(fifo), os.O_RDWR)  # O_RDWR on a FIFO never blocks on Linux
        holder["fd"] = fd
        os.write(fd, SECRET.encode())

    t = threading.Thread(target=writer)
    t.start()
    t.join(5)

    def too_slow(signum, frame):
        raise AssertionError("the reader blocked on a FIFO")

    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(10)  # a reader that reads the FIFO blocks until EOF, which never comes while we hold it
    try:
        exc = _refused(fifo, "fifo")
        assert SECRET not in str(exc)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        if "fd" in holder:
            os.close(holder["fd"])


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node (os.mknod) needs root")
def test_device_node_is_refused(tmp_path):
    dev = tmp_path / "nvidia-smi-q.xml"
    os.mknod(str(dev), 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers
    outcome, detail = _read_in_child(dev)
    assert outcome == "REFUSED", detail
    _refused(dev, "device")


def test_real_dev_zero_by_path_is_refused():
    outcome, detail = _read_in_child("/dev/zero")
    assert outcome == "REFUSED", detail
    _refused("/dev/zero", "device")


def test_directory_in_place_of_a_file_is_refused(tmp_path):
    d = tmp_path / "dcgmi-diag.txt"
    d.mkdir()
    _refused(d, "directory")


def test_file_over_the_cap_is_refused(tmp_path):
    p = tmp_path / "kernel.log"
    p.write_bytes(b"x" * 1001)
    exc = _refused(p, "too_large", max_bytes=1000)
    assert "1000" in str(exc)
    p.write_bytes(b"x" * 1000)
    assert len(F.read_text(str(p), 1000)) == 1000


def test_cap_is_enforced_while_reading_a_file_that_grows(tmp_path, monkeypatch):
    """fstat says small, the file grows after it: at most cap+1 bytes are read, then it is refused."""
    p = tmp_path / "kernel.log"
    p.write_bytes(b"x" * 10)
    real_fstat = os.fstat
    grown = {}

    def fstat_then_grow(fd):
        st = real_fstat(fd)
        if not grown:
            grown["yes"] = True
            with open(p, "ab") as fh:
                fh.write(b"y" * 5000)
        return st

    monkeypatch.setattr(F.os, "fstat", fstat_then_grow)
    reads = []
    real_read = os.read

    def counting_read(fd, n):
        data = real_read(fd, n)
        reads.append(len(data))
        return data

    monkeypatch.setattr(F.os, "read", counting_read)
    exc = _refused(p, "too_large", max_bytes=100)
    assert "while being read" in str(exc)
    assert sum(reads) <= 101


def test_unreadable_permissions_are_an_error_naming_the_file(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads mode-000 files")
    p = tmp_path / "ibstat.txt"
    p.write_text("x")
    p.chmod(0)
    _refused(p, "os_error")


def test_capture_subdir_link_is_refused(tmp_path):
    cap = tmp_path / "cap"
    cap.mkdir()
    outside = tmp_path / "outside"
    (outside / "class" / "infiniband").mkdir(parents=True)
    os.symlink(str(outside), cap / "sys")
    with pytest.raises(F.UnsafeFileError) as ei:
        _capture.subdir(str(cap), _capture.SYSFS_IB)
    assert ei.value.reason == "symlink" and str(cap / "sys") in str(ei.value)
    assert _capture.subdir(str(cap), "redfish") is None
    (cap / "redfish").mkdir()
    assert _capture.list_dir(str(cap), "redfish") == []
    assert not _capture.has_file(str(cap), "redfish")


# --- the whole capture: one refused file, the rest still read ------------------------------------------------


@pytest.fixture()
def capture(tmp_path):
    """A complete capture written by the simulator (tools/simcluster)."""
    out = tmp_path / "sim"
    gen = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "tools", "simcluster", "generate.py")
    subprocess.run(
        [sys.executable, gen, "--nodes", "1", "--out", str(out), "--faults", "none", "--jobs", "1"],
        check=True,
        capture_output=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)),
    )
    caps = out / "captures"
    return caps / sorted(os.listdir(caps))[0]


def _errors_for(facts, path):
    return [e for e in facts["errors"] if e.get("source") == str(path) or str(path) in (e.get("message") or "")]


def test_collect_hostile_capture_refuses_each_file_and_reads_the_rest(capture, tmp_path, secret):
    clean = _collect.collect_all(capture_dir=str(capture))
    assert clean["gpu"]["gpus"] and clean["slurm"]["nodes"]

    slurm = capture / "scontrol-show-node.txt"
    slurm.unlink()
    os.symlink(secret, slurm)
    klog = capture / "kernel.log"
    klog.unlink()
    os.symlink("/dev/zero", klog)
    sel = capture / "ipmitool-sel.txt"
    sel.unlink()
    os.mkfifo(sel)
    dcgm = capture / "dcgmi-diag.txt"
    if dcgm.exists():
        dcgm.unlink()
    dcgm.mkdir()

    outcome, detail = _in_child(
        """
        import json
        from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import collect as _collect
        print("FACTS", json.dumps(_collect.collect_all(capture_dir=sys.argv[1]), default=str))
        """,
        capture,
        timeout=60,
    )
    assert outcome == "FACTS", detail
    blob = detail.split(" ", 1)[1].splitlines()[0]
    facts = json.loads(blob)
    assert SECRET not in blob
    for path, domain in ((slurm, "slurm"), (klog, "kernel"), (sel, "bmc"), (dcgm, "dcgm")):
        errs = _errors_for(facts, path)
        assert errs, (path, facts["errors"])
        assert all(e["kind"] == "unreadable" and e["domain"] == domain for e in errs), errs
    # the rest of the capture is still evidence
    assert len(facts["gpu"]["gpus"]) == len(clean["gpu"]["gpus"])
    assert facts["ib"]["hcas"] == clean["ib"]["hcas"]
    assert facts["bmc"].get("sensors") == clean["bmc"].get("sensors")
    assert facts["node"] == clean["node"] or facts["node"]["source"] == clean["node"]["source"]


def test_collect_sysfs_tree_behind_a_link_is_refused(capture, tmp_path):
    sys_dir = capture / "sys"
    if not sys_dir.is_dir():
        pytest.skip("the simulated capture has no sysfs tree")
    moved = tmp_path / "elsewhere-sys"
    shutil.move(str(sys_dir), str(moved))
    os.symlink(str(moved), sys_dir)
    if (capture / "ibstat.txt").exists():
        (capture / "ibstat.txt").unlink()
    facts = _collect.collect_all(capture_dir=str(capture), domains=["ib"])
    errs = _errors_for(facts, sys_dir)
    assert errs and errs[0]["kind"] == "unreadable", facts["errors"]
    assert facts["ib"]["hcas"] == []


def test_collect_redfish_dir_link_is_refused(capture, tmp_path):
    outside = tmp_path / "outside-redfish"
    outside.mkdir()
    (outside / "Chassis.json").write_text(json.dumps({"@odata.id": "/redfish/v1/Chassis/1", "Name": SECRET}))
    os.symlink(str(outside), capture / "redfish")
    facts = _collect.collect_all(capture_dir=str(capture), domains=["bmc"])
    assert SECRET not in json.dumps(facts, default=str)
    errs = _errors_for(facts, capture / "redfish")
    assert errs and errs[0]["kind"] == "unreadable", facts["errors"]


def test_collect_redfish_file_link_is_refused(capture, secret):
    rdir = capture / "redfish"
    rdir.mkdir(exist_ok=True)
    os.symlink(secret, rdir / "Sensors.json")
    facts = _collect.collect_all(capture_dir=str(capture), domains=["bmc"])
    assert SECRET not in json.dumps(facts, default=str)
    errs = _errors_for(facts, rdir / "Sensors.json")
    assert errs and errs[0]["kind"] == "unreadable", facts["errors"]


def test_collect_ibstat_link_next_to_an_empty_sysfs_tree_is_reported(capture, secret):
    """An empty sys/class/infiniband must not hide a refused ibstat.txt: the link is named in an error."""
    sys_ib = capture / "sys" / "class" / "infiniband"
    if sys_ib.is_dir():
        shutil.rmtree(str(sys_ib))
    sys_ib.mkdir(parents=True)
    ibstat = capture / "ibstat.txt"
    if ibstat.exists():
        ibstat.unlink()
    os.symlink(secret, ibstat)
    facts = _collect.collect_all(capture_dir=str(capture), domains=["ib"])
    assert SECRET not in json.dumps(facts, default=str)
    errs = _errors_for(facts, ibstat)
    assert errs and errs[0]["kind"] == "unreadable", facts["errors"]
