# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way a controller step runs: an action plugin built on ``ControllerAction``.

A step declares ``ARGUMENT_SPEC`` (and optionally ``REQUIRED_IF``/``MUTUALLY_EXCLUSIVE``), and implements
``step(args, check_mode, task_vars)`` returning the result dict. The base validates the arguments with
Ansible's own validator (the same messages a module gives), folds the task's ``check_mode`` in, never needs a
connection, and turns the controller's expected failures (``ValueError``, ``OSError``) into a clear failed
result instead of a traceback. ``plain()`` is the one HostVars unwrapper; ``HostVarsOnce`` reads each host's
variables once per step.
"""

from __future__ import annotations

import copy
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


_JINJA_MARKS = ("{{", "{%", "{#")


def _template_free(value: Any, depth: int = 0) -> bool:
    """True when no string in ``value`` (keys included) could be a Jinja template: templating it is the identity."""
    if depth > 32:
        return False
    if isinstance(value, str):
        return not any(mark in value for mark in _JINJA_MARKS)
    if isinstance(value, dict):
        return all(_template_free(k, depth + 1) and _template_free(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_template_free(v, depth + 1) for v in value)
    return value is None or isinstance(value, (bool, int, float))


class HostVarsOnce:
    """``hostvars`` with each host's variables merged once, and shared tables made plain once.

    ``hostvars[host]`` makes ansible-core merge that host's variables from every source again
    (``VariableManager.get_vars``, ~0.6 ms a host): a step that reads a host in several passes (node classes, the
    live/captured split, platform hosts) paid it in each. And a table every host inherits from one group
    (``gpuops_profiles``) was templated and copied once per host: ~0.35 ms a host and table. At 10,000 hosts the
    two cost ~16 s of the plan step (docs/performance.md). Values are still templated, as ``hostvars`` does; a
    table is shared only when it is the same object for both hosts and holds no template at all."""

    def __init__(self, hostvars: Any) -> None:
        self._hostvars = hostvars
        self._seen: Dict[str, Any] = {}
        self._tables: Dict[int, tuple] = {}  # id(raw value) -> (raw value, its plain form)

    def __getitem__(self, host: str) -> Any:
        try:
            return self._seen[host]
        except KeyError:
            value = self._seen[host] = self._hostvars[host]
            return value

    def __contains__(self, host: object) -> bool:
        return host in self._seen or host in self._hostvars

    def get(self, host: str, default: Any = None) -> Any:
        return self[host] if host in self else default

    def __iter__(self) -> Any:
        return iter(self._hostvars)

    def __len__(self) -> int:
        return len(self._hostvars)

    def plain_var(self, host: str, key: str, default: Any = None) -> Any:
        """``plain(hostvars[host][key])`` (``default`` when unset or empty); a fresh copy on every call."""
        hv = self[host]
        raw = getattr(hv, "_vars", None)  # HostVarsVars keeps the untemplated variables (ansible-core 2.15-2.19)
        raw = raw.get(key) if isinstance(raw, dict) else None
        held = self._tables.get(id(raw)) if isinstance(raw, (dict, list)) else None
        if held is not None and held[0] is raw:
            value = held[1]
        elif isinstance(raw, (dict, list)) and _template_free(raw):
            value = plain(hv.get(key))
            self._tables[id(raw)] = (raw, value)  # the raw value is held: its id cannot be reused
        else:
            value = hv.get(key)
        return plain(value) if value else default


def host_var(hostvars: Any, host: str, key: str, default: Any = None) -> Any:
    """``plain(hostvars[host][key])`` or ``default`` when unset or empty, through :class:`HostVarsOnce` when given
    one (plain dicts work too: unit tests)."""
    if isinstance(hostvars, HostVarsOnce):
        return hostvars.plain_var(host, key, default)
    value = (hostvars[host] or {}).get(key)
    return plain(value) if value else default


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
                # a copy: the validator hands the spec's default objects to the step, which may change them;
                # the class (and its defaults) lives as long as the controller process, across tasks
                argument_spec=copy.deepcopy(self.ARGUMENT_SPEC),
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
