# Tests for the platform collector (plugins/module_utils/collectors/platform.py): capture directories and live runs.
from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import platform as _platform
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import CommandResult

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "slurm-platform")


def fx(name):
    with open(os.path.join(FIX, "tb-22.05-" + name), encoding="utf-8") as fh:
        return fh.read()


def capture(tmp_path, **files):
    d = tmp_path / "cluster"
    d.mkdir()
    names = {"ping": "ping-up.txt", "sdiag": "sdiag.txt", "sinfo": "sinfo.txt", "squeue_json": "squeue.json",
             "sacct_json": "sacct.json"}  # fmt: skip
    names.update(files)
    for key, src in names.items():
        if src is None:
            continue
        target = d / _platform.CAPTURE_FILES[key]
        if src.startswith("text:"):
            target.write_text(src[5:])
        else:
            shutil.copy(os.path.join(FIX, "tb-22.05-" + src), target)
    return str(d)


def test_capture_dir_reads_everything(tmp_path):
    p = _platform.collect_platform(capture_dir=capture(tmp_path))
    s = p["scheduler"]
    assert p["schema"] == "gpuops.platform/v1" and p["mode"] == "capture" and p["errors"] == []
    assert s["controllers"][0]["state"] == "UP" and s["sdiag"]["server_thread_count"] == 3
    assert len(s["nodes"]) == 4 and {j["state"] for j in s["jobs"]} == {"PENDING", "RUNNING"}
    assert s["history_format"] == "json" and s["accounting"]["state"] == "up" and len(s["history"]) == 11
    assert p["storage"] is None or isinstance(p["storage"], dict)


def test_capture_text_forms_and_accounting_down(tmp_path):
    d = capture(tmp_path, squeue_json=None, sacct_json=None, squeue="squeue.txt", sacct="sacct-dbd-down.txt")
    s = _platform.collect_platform(capture_dir=d)["scheduler"]
    assert s["jobs"] and s["history"] is None
    assert s["accounting"] == {"state": "down", "message": "Problem talking to the database: Connection refused"}
    assert s["errors"] == []


def test_missing_and_broken_files_are_errors_not_readings(tmp_path):
    d = capture(
        tmp_path, sdiag=None, sinfo="text:" + fx("sinfo.txt")[:25], squeue_json="text:" + fx("squeue.json")[:999]
    )
    p = _platform.collect_platform(capture_dir=d)
    kinds = sorted((e["kind"], e.get("source") or "") for e in p["errors"])
    assert ("parse", "sinfo.txt") in kinds and ("parse", "squeue.json") in kinds
    assert "missing" not in [k for k, dummy in kinds]  # a file the capture lacks is unknown, not an error
    s = p["scheduler"]
    assert s["sdiag"] is None and s["nodes"] is None and s["jobs"] is None  # unknown, not empty
    assert [u["file"] for u in s["unseen"]] == ["sdiag.txt"] and s["state"] == "partial"


def test_no_scheduler_files_and_a_missing_directory(tmp_path):
    (tmp_path / "empty").mkdir()
    assert _platform.collect_platform(capture_dir=str(tmp_path / "empty"))["scheduler"] is None
    p = _platform.collect_platform(capture_dir=str(tmp_path / "nope"))
    assert p["scheduler"] is None and p["errors"][0]["kind"] == "missing"


def test_a_link_in_the_capture_is_refused(tmp_path):
    d = capture(tmp_path, ping=None)
    os.symlink("/etc/passwd", os.path.join(d, "scontrol-ping.txt"))
    p = _platform.collect_platform(capture_dir=d)
    assert p["scheduler"]["controllers"] is None
    assert [e["kind"] for e in p["errors"]] == ["unreadable"]


class FakeSlurm:
    """The Slurm client commands answering from the fixtures (argv recorded)."""

    def __init__(self, ping="ping-up.txt", json_ok=True, dbd_down=False, hang=()):
        self.calls, self.ping, self.json_ok, self.dbd_down, self.hang = [], ping, json_ok, dbd_down, hang

    def __call__(self, argv, timeout=30.0):
        tool = os.path.basename(argv[0])
        self.calls.append([tool] + list(argv[1:]))
        res = CommandResult(argv)
        if tool in self.hang:
            res.timed_out, res.duration = True, timeout
            return res
        res.rc, res.stdout = 0, ""
        if tool == "scontrol":
            res.stdout = fx(self.ping)
            res.rc = 0 if "UP" in res.stdout else 1
        elif tool == "sdiag":
            res.stdout = fx("sdiag.txt")
        elif tool == "sinfo":
            res.stdout = fx("sinfo.txt")
        elif tool in ("squeue", "sacct") and "--json" in argv and not self.json_ok:
            res.rc, res.stderr = 1, "%s: unrecognized option '--json'" % tool
        elif tool == "sacct" and self.dbd_down:
            res.rc, res.stderr = 1, fx("sacct-dbd-down.txt")
        elif tool in ("squeue", "sacct"):
            res.stdout = fx("%s.%s" % (tool, "json" if "--json" in argv else "txt"))
        return res


@pytest.fixture
def bindir(tmp_path):
    b = tmp_path / "bin"
    b.mkdir()
    for t in ("scontrol", "sdiag", "sinfo", "squeue", "sacct"):
        (b / t).write_text("#!/bin/sh\nexit 99\n")
        (b / t).chmod(0o755)
    return str(b)


def test_live_json(bindir):
    run = FakeSlurm()
    p = _platform.collect_platform(run=run, options={"bin_dir": bindir, "history_hours": 6})
    s = p["scheduler"]
    assert p["errors"] == [] and s["history_format"] == "json" and s["accounting"]["state"] == "up"
    assert ["sacct", "--json", "-a", "-X", "-S", "now-6hours"] in run.calls
    assert [c[0] for c in run.calls] == ["scontrol", "sdiag", "sinfo", "squeue", "sacct"]


def test_live_text_fallback_without_json(bindir):
    run = FakeSlurm(json_ok=False)
    s = _platform.collect_platform(run=run, options={"bin_dir": bindir})["scheduler"]
    assert s["history_format"] == "text" and s["jobs"] and s["errors"] == []
    assert sum(1 for c in run.calls if c[0] == "squeue") == 2


def test_live_controller_down_asks_nothing_else(bindir):
    run = FakeSlurm(ping="ping-down.txt")
    p = _platform.collect_platform(run=run, options={"bin_dir": bindir})
    assert [c[0] for c in run.calls] == ["scontrol"] and p["errors"] == []
    assert p["scheduler"]["controllers"][0]["state"] == "DOWN"


def test_live_hung_controller_is_unresponsive(bindir):
    p = _platform.collect_platform(run=FakeSlurm(hang=("scontrol",)), options={"bin_dir": bindir, "timeout": 2})
    assert p["scheduler"]["controllers"] == [{"role": "primary", "host": None, "state": "UNRESPONSIVE"}]
    assert p["errors"][0]["kind"] == "timeout"


def test_live_hung_sdiag_and_dbd_down(bindir):
    p = _platform.collect_platform(run=FakeSlurm(hang=("sdiag",), dbd_down=True), options={"bin_dir": bindir})
    assert [e["kind"] for e in p["errors"]] == ["timeout"]
    assert p["scheduler"]["sdiag"] is None and p["scheduler"]["accounting"]["state"] == "down"


def test_no_scontrol_is_no_scheduler(tmp_path):
    assert _platform.collect_platform(options={"bin_dir": str(tmp_path)})["scheduler"] is None


def test_meta_captured_at(tmp_path):
    d = capture(tmp_path)
    with open(os.path.join(d, "platform-meta.json"), "w") as fh:
        json.dump({"captured_at": 1796205600}, fh)
    assert _platform.collect_platform(capture_dir=d)["collected_at"] == 1796205600.0
