# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: oneline
type: stdout
short_description: The default output, with the collection's intended refusals and failures on one line
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - "Behaves exactly like C(ansible.builtin.default), except for a failed task that is one of this collection's
    intended failures. ansible-core 2.19 prints every failed task as C([ERROR]: Task failed) with a source excerpt
    and the result as JSON, as if it crashed; an intended one is printed as one line instead,
    C(REFUSED [HOST]: MESSAGE) when the task or its message refuses, C(FAILED [HOST]: MESSAGE) otherwise."
  - "An intended failure is a failed result of a task defined in this collection's own playbooks or roles (its file
    lies under the collection's directory) whose action is C(ansible.builtin.fail) or C(ansible.builtin.assert), or
    a C(gpuops.cluster) action plugin that returned its failure (a refusal or a clear error, never a raised Python
    exception)."
  - Everything else keeps the default output in full, the excerpt and any traceback included (a real crash, a
    module failure, a task of your own playbook, a failure inside a loop).
  - The exit status is unchanged (a refusal still exits non-zero).
requirements:
  - Set it as the stdout callback, for example C(ANSIBLE_STDOUT_CALLBACK=gpuops.cluster.oneline), or
    C(stdout_callback = gpuops.cluster.oneline) in the C([defaults]) section of ansible.cfg.
extends_documentation_fragment:
  - default_callback
  - result_format_callback
"""

import os
import re
from typing import Any, Optional

from ansible import constants as C
from ansible.plugins.callback.default import CallbackModule as DefaultCallback

#: This collection's root directory (plugins/callback/oneline.py is two levels below it), resolved.
_ROOT = os.path.realpath(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_FAIL_ACTIONS = frozenset(
    "%s%s" % (prefix, name) for prefix in ("", "ansible.builtin.", "ansible.legacy.") for name in ("fail", "assert")
)
_COLLECTION = "gpuops.cluster."
_REFUSE = re.compile(r"\brefus", re.IGNORECASE)


def _task_file(task: Any) -> Optional[str]:
    """The file the task is defined in (``PATH:LINE`` without the line), resolved; None when unknown."""
    try:
        path = task.get_path()
    except Exception:  # pylint: disable=broad-except  # a task without a source (ad hoc) is simply not ours
        return None
    if not path:
        return None
    path = re.sub(r":\d+$", "", str(path))
    return os.path.realpath(path)


def _in_collection(task: Any) -> bool:
    path = _task_file(task)
    return bool(path) and (path == _ROOT or path.startswith(_ROOT + os.sep))


def _raised(exception: Any, result: dict) -> bool:
    """Whether the failure came from a raised exception (a crash) rather than a failed result the action returned.

    ansible-core 2.19 wraps a returned failure as "Task failed." caused by "Action failed." caused by the message; a
    raised one is "Task failed." caused by the exception itself. Older versions put a traceback string in the
    result's ``exception`` for a crash and nothing for a returned failure."""
    if "module_stderr" in result or "module_stdout" in result:
        return True
    event = getattr(exception, "event", None)
    if event is None:
        return bool(result.get("exception"))
    chain = getattr(event, "chain", None)
    cause = getattr(chain, "event", None) if chain is not None else None
    return getattr(cause, "msg", None) != "Action failed."


def intended_failure(task: Any, result: dict, exception: Any = None) -> bool:
    """Whether a failed task result is one of the collection's intended failures (see DOCUMENTATION)."""
    if "results" in result or not isinstance(result.get("msg"), str) or not result["msg"].strip():
        return False
    action = str(getattr(task, "resolved_action", None) or getattr(task, "action", "") or "")
    if action not in _FAIL_ACTIONS and not action.startswith(_COLLECTION):
        return False
    return _in_collection(task) and not _raised(exception, result)


def one_line(host: str, task_name: str, msg: str) -> str:
    """``REFUSED [host]: msg`` when the task or its message refuses, else ``FAILED [host]: msg``; whitespace folded."""
    text = " ".join(str(msg).split())
    word = "REFUSED" if _REFUSE.search(text) or _REFUSE.search(task_name or "") else "FAILED"
    return "%s [%s]: %s" % (word, host, text)


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "gpuops.cluster.oneline"

    def v2_runner_on_failed(self, result, ignore_errors=False):
        res = result._result  # pylint: disable=protected-access  # the result dict (the `result` property is 2.19+)
        task = result._task  # pylint: disable=protected-access
        exception = getattr(result, "exception", None)
        if not intended_failure(task, res, exception):
            super().v2_runner_on_failed(result, ignore_errors=ignore_errors)
            return
        if self._last_task_banner != task._uuid:  # pylint: disable=protected-access
            self._print_task_banner(task)
        self._handle_warnings(res)
        res.pop("exception", None)  # the excerpt is for crashes; this failure was meant
        line = one_line(self.host_label(result), task.get_name(), res["msg"])
        self._display.display(line, color=C.COLOR_ERROR, stderr=self.get_option("display_failed_stderr"))
        if ignore_errors:
            self._display.display("...ignoring", color=C.COLOR_SKIP)
