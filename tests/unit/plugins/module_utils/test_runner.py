# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hang-proof runner (_runner.py): hard timeouts that kill the whole process group, output caps, missing tools,
non-zero exits, and in-process calls run in a child."""

from __future__ import annotations

import os
import sys
import time

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils import _runner
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import CommandResult, run_command, run_in_child


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's pid
        return True
    # a killed but not yet reaped child of ours is a zombie: dead for our purpose
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def _wait_dead(pid, seconds=5.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_success_keeps_stdout_stderr_and_rc():
    res = run_command(["sh", "-c", "echo out; echo err >&2"], timeout=10)
    assert res.ok and res.rc == 0 and res.stdout == "out\n" and res.stderr == "err\n"
    assert not res.timed_out and res.error is None and res.duration >= 0


def test_non_zero_exit_is_reported_not_raised():
    res = run_command(["sh", "-c", "echo first >&2; echo boom >&2; exit 3"], timeout=10)
    assert res.rc == 3 and not res.ok and not res.timed_out
    assert res.describe() == "sh -c echo first >&2; echo boom >&2; exit 3: exit 3: boom"
    assert res.to_dict()["rc"] == 3 and res.to_dict()["stderr"] == "first\nboom\n"


def test_missing_tool_is_an_error_not_an_exception():
    res = run_command(["/nonexistent/gpuops-no-such-tool", "-q"], timeout=5)
    assert res.rc is None and not res.ok and not res.timed_out
    assert res.error.startswith("cannot run: ") and "No such file" in res.error
    assert res.describe().startswith("/nonexistent/gpuops-no-such-tool -q: cannot run")


def test_timeout_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    # the shell starts a grandchild in the same process group, then blocks; both must die at the timeout
    script = "sleep 60 & echo $! > %s; echo partial; wait" % pidfile
    t0 = time.monotonic()
    res = run_command(["sh", "-c", script], timeout=1.0)
    took = time.monotonic() - t0
    assert res.timed_out and res.rc is None and not res.ok
    assert took < 5, took
    assert res.stdout == "partial\n"  # what was read before the timeout is kept
    assert "timed out after" in res.describe()
    grandchild = int(pidfile.read_text())
    assert _wait_dead(grandchild), "grandchild %d survived the timeout" % grandchild


def test_a_child_that_closes_its_pipes_but_keeps_running_still_times_out():
    res = run_command(["sh", "-c", "exec >/dev/null 2>&1; sleep 60"], timeout=0.5)
    assert res.timed_out and res.rc is None


def test_output_cap_stops_reading_and_kills():
    res = run_command([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"], max_bytes=100000)
    assert res.error == "output over 100000 bytes" and res.rc is None and not res.ok
    assert len(res.stdout) <= 100000


def test_stdin_and_c_locale_environment():
    res = run_command(["sh", "-c", 'cat; echo "$LC_ALL/$LANG/$EXTRA"'], stdin_data=b"in\n", env={"EXTRA": "x"})
    assert res.ok and res.stdout == "in\nC/C/x\n"


def test_non_utf8_output_is_decoded_not_raised():
    res = run_command(["printf", "\\377ok"], timeout=5)
    assert res.ok and res.stdout.endswith("ok")


def test_command_result_defaults():
    res = CommandResult(["x"])
    assert res.argv == ["x"] and res.rc is None and not res.ok and res.describe() == "x: exit None"


def test_which_finds_sh_and_not_a_missing_tool():
    assert _runner.which("sh") and _runner.which("gpuops-no-such-tool") is None


def _value(a, b):
    return {"sum": a + b}


def _raises():
    raise ValueError("bad value")


def _hangs():
    time.sleep(60)


def _exits():
    os._exit(0)


def test_run_in_child_returns_the_value():
    assert run_in_child(_value, (2, 3), timeout=10) == {"ok": True, "value": {"sum": 5}, "timed_out": False}


def test_run_in_child_reports_the_exception_as_data():
    out = run_in_child(_raises, timeout=10)
    assert out["ok"] is False and out["timed_out"] is False
    assert out["error"] == "ValueError: bad value" and out["exc_type"] == "ValueError"
    assert "bad value" in out["trace"]


def test_run_in_child_kills_a_hung_call():
    t0 = time.monotonic()
    out = run_in_child(_hangs, timeout=0.5)
    assert out == {"ok": False, "timed_out": True, "error": "timed out after 0.5 s"}
    assert time.monotonic() - t0 < 5


def test_run_in_child_without_a_result():
    out = run_in_child(_exits, timeout=10)
    assert out == {"ok": False, "timed_out": False, "error": "child died without a result"}


@pytest.mark.parametrize("timeout", [0, -1])
def test_zero_or_negative_timeout_times_out_at_once(timeout):
    res = run_command(["sleep", "5"], timeout=timeout)
    assert res.timed_out and res.duration < 3
