# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drive a real headless Chromium from tests: the DevTools protocol over ``--remote-debugging-pipe`` (JSON
messages, NUL-terminated, on file descriptors 3 and 4), stdlib only: no selenium, no websocket client.

    with Browser() as b:
        page = b.open("file:///.../report.html")
        page.eval("document.title")
        page.click("#filter-severity")        # or page.eval("...dispatchEvent(...)")
        page.screenshot("/tmp/x.png")
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any, Dict, Optional


class BrowserError(RuntimeError):
    """Chromium could not be started, a DevTools command failed, or a page did not load in time."""


class Page:
    """One tab: evaluate JavaScript, wait for a condition, take screenshots."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser, self.session = browser, session

    def send(self, method: str, **params: Any) -> Dict[str, Any]:
        return self.browser.send(method, session=self.session, **params)

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression (JSON-serialisable results only); a thrown error fails."""
        res = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise BrowserError("JavaScript error in %r: %s" % (expression[:80], res["exceptionDetails"]))
        return res["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError("timed out waiting for %s" % expression)
            time.sleep(0.05)

    def screenshot(self, path: str, width: int = 1280, height: Optional[int] = None) -> str:
        """A PNG at ``path``: the top ``height`` pixels of the page, or the whole page (up to 16,000 px)."""
        if height is None:
            height = min(int(self.eval("Math.ceil(document.documentElement.scrollHeight)") or 800), 16000)
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        data = self.send("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))
        return path


class Browser:
    """A headless Chromium started for one test (its own profile directory, removed on close)."""

    def __init__(self, executable: Optional[str] = None, javascript: bool = True, timeout: float = 20.0) -> None:
        self.executable = executable or shutil.which("chromium") or shutil.which("chromium-browser")
        if not self.executable:
            raise BrowserError("chromium is not installed")
        self.javascript, self.timeout = javascript, timeout
        self._next_id = 0
        self._buffer = b""
        self.proc: Optional[subprocess.Popen] = None

    def __enter__(self) -> Browser:
        self.profile = tempfile.mkdtemp(prefix="gpuops-chromium-")
        cmd_r, cmd_w = os.pipe()  # we write commands, Chromium reads fd 3
        ans_r, ans_w = os.pipe()  # Chromium writes answers on fd 4, we read
        # moved above fd 9, so that putting them on 3 and 4 cannot overwrite one with the other; bash puts them
        # there (the command pipe on fd 3, Chromium reads; the answer pipe on fd 4, Chromium writes) and execs
        cmd_r, ans_w = (self._high(fd) for fd in (cmd_r, ans_w))
        args = [
            "/bin/bash",
            "-c",
            'exec 3<&%d 4>&%d %d<&- %d>&- "$@"' % (cmd_r, ans_w, cmd_r, ans_w),
            "bash",
            self.executable,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--remote-debugging-pipe",
            "--user-data-dir=%s" % self.profile,
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(cmd_r, ans_w),
        )
        os.close(cmd_r)
        os.close(ans_w)
        self._out, self._in = cmd_w, ans_r
        return self

    @staticmethod
    def _high(fd: int) -> int:
        new = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        return new

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self.proc is not None:
            for fd in (self._out, self._in):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
            self.proc = None
        shutil.rmtree(getattr(self, "profile", ""), ignore_errors=True)

    def _read_message(self, deadline: float) -> Dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise BrowserError("no answer from chromium within %.0f s" % self.timeout)
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed the DevTools pipe (exit %s)" % self.proc.poll())
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, session: Optional[str] = None, **params: Any) -> Dict[str, Any]:
        """One DevTools command; its result (events that arrive meanwhile are dropped)."""
        self._next_id += 1
        msg: Dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError("%s: %s" % (method, answer["error"]))
                return answer.get("result", {})

    def open(self, url: str) -> Page:
        """A new tab at ``url``, loaded (document.readyState complete)."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        page = Page(self, session)
        if not self.javascript:
            page.send("Emulation.setScriptExecutionDisabled", value=True)
        page.send("Page.enable")
        page.send("Page.navigate", url=url)
        deadline = time.monotonic() + self.timeout
        while True:  # Runtime.evaluate works with scripts disabled too (DevTools is not the page's script)
            state = page.send("Runtime.evaluate", expression="document.readyState + ' ' + location.href")
            value = state.get("result", {}).get("value", "")
            if value.startswith("complete ") and not value.endswith("about:blank"):
                return page
            if time.monotonic() > deadline:
                raise BrowserError("%s did not load within %.0f s (%s)" % (url, self.timeout, value))
            time.sleep(0.05)
