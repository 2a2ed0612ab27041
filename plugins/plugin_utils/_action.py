# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way a controller step runs: an action plugin built on ``ControllerAction``.

A step declares ``ARGUMENT_SPEC`` (and optionally ``REQUIRED_IF``/``MUTUALLY_EXCLUSIVE``), and implements
``step(args, check_mode, task_vars)`` returning the result dict. The base validates the arguments with
Ansible's own validator (the same messages a module gives), folds the task's ``check_mode`` in, never needs a
connection, and turns the controller's expected failures (``ValueError``, ``OSError``) into a clear failed
result instead of a traceback. ``plain()`` is the one HostVars unwrapper.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Dict

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase


def plain(value: Any) -> Any:
    """HostVars values are lazy/templated wrappers: turn them into plain containers (recursively)."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return {to_text(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


class StepError(Exception):
    """A controller step refuses: the message is shown as the task's msg (no traceback)."""

    def __init__(self, msg: str, **extra: Any) -> None:
        super().__init__(msg)
        self.extra = extra


class ControllerAction(ActionBase):
    """Base for every controller step: validation, check mode, clear errors; no connection to the host."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    NAME = "gpuops.cluster.step"
    ARGUMENT_SPEC: Dict[str, Dict[str, Any]] = {}
    REQUIRED_IF: list = []
    MUTUALLY_EXCLUSIVE: list = []

    @abstractmethod
    def step(self, args: Dict[str, Any], check_mode: bool, task_vars: Dict[str, Any]) -> Dict[str, Any]:
        """The step itself: validated ``args`` in, the task result out (``changed`` defaults to False)."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        try:
            _validation, args = self.validate_argument_spec(
                argument_spec=self.ARGUMENT_SPEC,
                required_if=self.REQUIRED_IF,
                mutually_exclusive=self.MUTUALLY_EXCLUSIVE,
            )
        except AnsibleActionFail as exc:
            result.update(failed=True, msg="%s: %s" % (self.NAME, exc))
            return result
        check_mode = bool(self._play_context.check_mode)
        try:
            out = self.step(args, check_mode, task_vars)
        except StepError as exc:
            result.update(exc.extra)
            result.update(failed=True, msg="%s: %s" % (self.NAME, exc))
            return result
        except (ValueError, OSError) as exc:
            result.update(failed=True, msg="%s: %s" % (self.NAME, exc))
            return result
        result.update(out)
        result.setdefault("changed", False)
        return result
