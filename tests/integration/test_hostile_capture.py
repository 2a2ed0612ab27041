# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile capture files through the real inspection (issue 12, item 3; no test bed needed).

A simulated cluster's capture directories get a link to a secret file, a link to /dev/zero, a FIFO, a device
node and a sysfs tree behind a link; playbooks/inspect.yml runs with ansible-playbook under umask 022. The
inspection must finish in seconds, the secret must be in no report, the reports and the state must not be
world-readable, and each node must carry a collector.error naming its refused file.

ansible-playbook runs with an address-space limit (inherited by its workers), so that a regression that reads
/dev/zero fails this test instead of exhausting the machine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from playbook_env import playbook_env

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
GENERATE = REPO / "tools" / "simcluster" / "generate.py"
SECRET = "gpuops-h3-TOPSECRET-4b1d"
TIMEOUT_S = 60


#: Runs argv[1:] under umask 022 and a per-process address-space cap (ample for ansible-playbook and its
#: workers, far below the machine), both inherited by every worker.
_LIMITED = (
    "import os, resource, sys\n"
    "os.umask(0o022)\n"
    "resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)


def _descendants(pid: int) -> list:
    """pid and every process below it (ansible's workers start their own sessions: killpg misses them)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, encoding="ascii", errors="replace") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _replace_with_link(path: Path, target: str) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    os.symlink(target, str(path))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    sim = root / "sim"
    subprocess.run(
        [sys.executable, str(GENERATE), "--nodes", "5", "--out", str(sim), "--faults", "none", "--seed", "3"],
        check=True,
        capture_output=True,
        text=True,
        env=playbook_env(),
    )
    secret = root / "secret.txt"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    caps = sim / "captures"
    hosts = sorted(p.name for p in caps.iterdir())
    planted = {}  # host -> (refused file, domain)

    h = hosts[0]  # a Slurm capture that is a link to a secret
    _replace_with_link(caps / h / "scontrol-show-node.txt", str(secret))
    planted[h] = (caps / h / "scontrol-show-node.txt", "slurm")

    h = hosts[1]  # the kernel log is /dev/zero (a link to it)
    _replace_with_link(caps / h / "kernel.log", "/dev/zero")
    planted[h] = (caps / h / "kernel.log", "kernel")

    h = hosts[2]  # the SEL is a FIFO nobody writes to
    (caps / h / "ipmitool-sel.txt").unlink()
    os.mkfifo(str(caps / h / "ipmitool-sel.txt"))
    planted[h] = (caps / h / "ipmitool-sel.txt", "bmc")

    h = hosts[3]  # the sysfs tree is a link out of the capture, to a tree that holds the secret
    outside = root / "outside" / "sys"
    fw = outside / "class" / "infiniband" / "mlx5_0"
    fw.mkdir(parents=True)
    (fw / "fw_ver").write_text(SECRET + "\n")
    (fw / "node_guid").write_text(SECRET + "\n")
    sys_dir = caps / h / "sys"
    if sys_dir.exists():
        shutil.rmtree(str(sys_dir))
    _replace_with_link(sys_dir, str(outside))
    if (caps / h / "ibstat.txt").exists():
        (caps / h / "ibstat.txt").unlink()
    planted[h] = (sys_dir, "ib")
    also_refused = {h: caps / h / "infiniband-sysfs.txt"}  # and the one-file form: a link to the secret
    _replace_with_link(also_refused[h], str(secret))

    h = hosts[4]  # a device node in place of the DCGM output (needs root), else a directory
    dev = caps / h / "dcgmi-diag.txt"
    if dev.exists():
        dev.unlink()
    if os.geteuid() == 0:
        os.mknod(str(dev), 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers
    else:
        dev.mkdir()
    planted[h] = (dev, "dcgm")

    report_dir = root / "report"
    state_dir = root / "state"
    t0 = time.monotonic()
    popen = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _LIMITED,
            str(VENV_BIN / "ansible-playbook"),
            "-i",
            str(sim / "inventory"),
            str(REPO / "playbooks" / "inspect.yml"),
            "-e",
            "gpuops_report_dir=%s" % report_dir,
            "-e",
            "gpuops_state_dir=%s" % state_dir,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=playbook_env(),
        cwd=str(REPO),
    )
    try:
        out, err = popen.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        for pid in _descendants(popen.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        out, err = popen.communicate()
        pytest.fail("the inspection did not finish in %d s:\n%s" % (TIMEOUT_S, (out + err)[-3000:]))
    proc = subprocess.CompletedProcess(popen.args, popen.returncode, out, err)
    elapsed = time.monotonic() - t0
    return {
        "proc": proc,
        "elapsed": elapsed,
        "planted": planted,
        "also_refused": also_refused,
        "report_dir": report_dir,
        "state_dir": state_dir,
        "secret": secret,
    }


def test_inspection_finishes_in_seconds(hostile):
    proc = hostile["proc"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert hostile["elapsed"] < TIMEOUT_S
    assert "dead state" not in proc.stdout + proc.stderr
    assert (hostile["report_dir"] / "report.json").is_file()


def test_secret_is_in_no_report_and_no_state_file(hostile):
    files = [p for d in (hostile["report_dir"], hostile["state_dir"]) for p in d.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"report.json", "report.md", "report.html", "gpuops.prom"}
    for p in files:
        assert SECRET not in p.read_text(errors="replace"), p
    assert SECRET not in hostile["proc"].stdout + hostile["proc"].stderr


def test_reports_and_state_are_not_world_readable(hostile):
    seen = 0
    for d in (hostile["report_dir"], hostile["state_dir"]):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
        for p in d.rglob("*"):
            m = stat.S_IMODE(p.lstat().st_mode)
            if p.is_dir():
                assert m == 0o700, (p, oct(m))
            else:
                assert m & 0o077 == 0 or m == 0o640, (p, oct(m))
                seen += 1
    assert seen >= 4 + len(hostile["planted"])  # four reports and one state file per host


def test_each_node_has_a_collector_error_naming_its_refused_file(hostile):
    report = json.loads((hostile["report_dir"] / "report.json").read_text())
    for host, (path, domain) in hostile["planted"].items():
        node = report["nodes"][host]
        errors = [f for f in node["findings"] if f["check"] == "collector.error"]
        text = json.dumps(errors)
        assert str(path) in text, (host, node["findings"])
        if host in hostile["also_refused"]:
            assert str(hostile["also_refused"][host]) in text, (host, node["findings"])
        assert domain in text, (host, errors)
        assert node["status"] != "healthy", (host, node["status"])
        # what could not be read never becomes a disruptive action
        disruptive = {"isolate", "reboot", "reset_gpu", "replace", "emergency_shutdown"}
        assert not [f for f in node["findings"] if f["action"] in disruptive], (host, node["findings"])
