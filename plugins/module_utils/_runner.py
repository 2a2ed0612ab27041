# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hang-proof execution of external tools and of in-process calls that may block in the kernel.

A hung driver (nvidia-smi, NVML), a dead NFS mount (stat) or a stuck BMC (ipmitool) must never hang
a play. Every external call here runs in a child in its own session; after the timeout the whole
process group gets SIGKILL and is *abandoned*: we never wait on it again (a process in D state cannot
be reaped until the kernel lets go, and a blocking wait would hang us with it).

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._common import MAX_INPUT_BYTES
from ansible_collections.gpuops.cluster.plugins.module_utils._files import decode

#: Environment every tool runs with: machine-readable, untranslated output.
C_ENV = {"LC_ALL": "C", "LANG": "C", "LANGUAGE": "C"}


class CommandResult:
    """Outcome of one external command. ``rc`` is None when the command timed out or could not start."""

    __slots__ = ("argv", "duration", "error", "rc", "stderr", "stdout", "timed_out")

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
        self.rc: Optional[int] = None
        self.stdout = ""
        self.stderr = ""
        self.timed_out = False
        self.error: Optional[str] = None
        self.duration = 0.0

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out and self.error is None

    def describe(self) -> str:
        cmd = " ".join(self.argv)
        if self.timed_out:
            return "%s: timed out after %.1f s" % (cmd, self.duration)
        if self.error:
            return "%s: %s" % (cmd, self.error)
        msg = (self.stderr or self.stdout).strip().splitlines()
        return "%s: exit %s%s" % (cmd, self.rc, (": " + msg[-1][:300]) if msg else "")

    def to_dict(self) -> Dict[str, Any]:
        return {
            "argv": self.argv,
            "rc": self.rc,
            "timed_out": self.timed_out,
            "error": self.error,
            "duration": round(self.duration, 3),
            "stderr": self.stderr[-2000:],
        }


def which(name: str, path: Optional[str] = None) -> Optional[str]:
    return shutil.which(name, path=path)


def _quiet(call: Callable[..., Any], *args: Any) -> None:
    """``call(*args)``, ignoring OSError (closing a pipe or signalling a process that is already gone)."""
    try:
        call(*args)
    except OSError:
        pass


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        _quiet(proc.kill)


def _abandon(pid: int) -> None:
    """Reap ``pid`` only if it is already gone, never wait (a process in D state cannot be reaped)."""
    _quiet(os.waitpid, pid, os.WNOHANG)


def _feed(proc: subprocess.Popen[bytes], stdin_data: Optional[bytes]) -> None:
    if stdin_data is not None and proc.stdin is not None:
        _quiet(proc.stdin.write, stdin_data)
        _quiet(proc.stdin.close)


def _read_until(res: CommandResult, fds: Sequence[int], deadline: float, max_bytes: int) -> Dict[int, List[bytes]]:
    """Read ``fds`` until both close, the deadline passes (``res.timed_out``) or ``max_bytes`` (``res.error``)."""
    bufs: Dict[int, List[bytes]] = {fd: [] for fd in fds}
    open_fds = set(bufs)
    total = 0
    while open_fds:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            res.timed_out = True
            break
        try:
            ready = select.select(list(open_fds), [], [], min(remaining, 1.0))[0]
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            continue
        for fd in ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                open_fds.discard(fd)
                continue
            total += len(chunk)
            if total > max_bytes:
                res.error = "output over %d bytes" % max_bytes
                open_fds.clear()
                break
            bufs[fd].append(chunk)
    return bufs


def _reap(res: CommandResult, proc: subprocess.Popen[bytes], deadline: float) -> None:
    """Pipes closed: the process is exiting. Reap it, but still never block past the deadline.

    ``Popen.wait(timeout)`` polls from 0.5 ms up (a fixed 5 ms sleep cost ~5 ms of wall time per tool call)."""
    try:
        res.rc = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        res.timed_out = True


def run_command(
    argv: Sequence[str],
    timeout: float = 30.0,
    env: Optional[Dict[str, str]] = None,
    stdin_data: Optional[bytes] = None,
    max_bytes: int = MAX_INPUT_BYTES,
) -> CommandResult:
    """Run ``argv`` (never a shell) with LC_ALL=C and a hard timeout.

    On timeout the process group is killed and abandoned; the partial output read so far is kept.
    """
    res = CommandResult(argv)
    full_env = dict(os.environ)
    full_env.update(C_ENV)
    if env:
        full_env.update(env)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv list, no shell
            list(argv),
            stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        res.error = "cannot run: %s" % (exc.strerror or exc)
        res.duration = time.monotonic() - start
        return res
    _feed(proc, stdin_data)
    out_fd = proc.stdout.fileno()  # type: ignore[union-attr]
    err_fd = proc.stderr.fileno()  # type: ignore[union-attr]
    deadline = start + timeout
    bufs = _read_until(res, (out_fd, err_fd), deadline, max_bytes)
    if not res.timed_out and res.error is None:
        _reap(res, proc, deadline)
    if res.timed_out or res.error is not None:
        _kill_group(proc)
        _abandon(proc.pid)
        proc.returncode = -9  # keep Popen.__del__ from tracking it
    for f in (proc.stdout, proc.stderr):
        _quiet(f.close)  # type: ignore[union-attr]
    res.stdout = decode(b"".join(bufs[out_fd]))
    res.stderr = decode(b"".join(bufs[err_fd]))
    res.duration = time.monotonic() - start
    return res


def _child(func: Callable[..., Any], args: Sequence[Any], rfd: int, wfd: int) -> None:
    """In the forked child: run ``func``, write the JSON outcome to ``wfd`` and exit without cleanup."""
    code = 0
    try:
        os.close(rfd)
        try:
            payload = {"ok": True, "value": func(*args)}
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent as data
            payload = {
                "ok": False,
                "error": "%s: %s" % (type(exc).__name__, exc),
                "exc_type": type(exc).__name__,
                "trace": traceback.format_exc()[-2000:],
            }
        data = json.dumps(payload, default=str).encode("utf-8")
        view = memoryview(data)
        while view:
            n = os.write(wfd, view)
            view = view[n:]
    except BaseException:  # noqa: BLE001
        code = 1
    finally:
        os._exit(code)


def _read_pipe(rfd: int, deadline: float) -> Optional[List[bytes]]:
    """Everything written to ``rfd`` until it closes; None when the deadline passes first."""
    chunks: List[bytes] = []
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready = select.select([rfd], [], [], min(remaining, 1.0))[0]
            if not ready:
                continue
            chunk = os.read(rfd, 65536)
            if not chunk:
                return chunks
            chunks.append(chunk)
    finally:
        os.close(rfd)


def _wait_exiting(pid: int) -> None:
    """The child closed its end: it is exiting; reap without blocking for long (about a second at most), polling
    from 0.5 ms up."""
    delay, waited = 0.0005, 0.0
    while waited < 1.0:
        try:
            done = os.waitpid(pid, os.WNOHANG)[0]
        except OSError:
            return
        if done:
            return
        time.sleep(delay)
        waited += delay
        delay = min(delay * 2, 0.02)


def run_in_child(func: Callable[..., Any], args: Sequence[Any] = (), timeout: float = 30.0) -> Dict[str, Any]:
    """Call ``func(*args)`` in a forked child and return ``{"ok", "value", "error", "timed_out"}``.

    The value must be JSON-serialisable. Used for NVML, whose nvmlInit() can block forever in the
    driver. The child is killed and abandoned after ``timeout`` seconds.
    """
    rfd, wfd = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child
        _child(func, args, rfd, wfd)
    os.close(wfd)
    chunks = _read_pipe(rfd, start + timeout)
    if chunks is None:
        _quiet(os.kill, pid, signal.SIGKILL)
        _abandon(pid)
        return {"ok": False, "timed_out": True, "error": "timed out after %.1f s" % timeout}
    _wait_exiting(pid)
    try:
        out = _safejson.loads(decode(b"".join(chunks)), max_bytes=MAX_INPUT_BYTES, what="the child's result")
    except _safejson.JsonBudgetError as exc:
        return {"ok": False, "timed_out": False, "error": str(exc)}
    except ValueError:
        return {"ok": False, "timed_out": False, "error": "child died without a result"}
    out.setdefault("timed_out", False)
    return out
