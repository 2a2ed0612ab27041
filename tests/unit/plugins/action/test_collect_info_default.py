# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One default live mode for gpuops.cluster.collect_info (issue 36): the module's documented default, the action's,
the module's argument spec and the inspection role's (defaults/main.yml and meta/argument_specs.yml) are one value,
the shell capture parsed on the controller (docs/performance.md "Live modes, one default": the fastest of the three
on the 60-host bench). Oracle: that page's table, written out here."""

from __future__ import annotations

import ast
import os
import re
from unittest import mock

import yaml

from ansible_collections.gpuops.cluster.plugins.action import collect_info as collect_action

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
#: docs/performance.md, "Live modes, one default"
DEFAULT = {"parse_on": "controller", "capture_via": "shell"}
#: role variable -> (module option, inventory variable)
ROLE_VARS = {
    "inspect_parse_on": ("parse_on", "gpuops_parse_on"),
    "inspect_capture_via": ("capture_via", "gpuops_capture_via"),
}


def _module_doc():
    with open(os.path.join(ROOT, "plugins", "modules", "collect_info.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "DOCUMENTATION":
            return yaml.safe_load(node.value.value)
    raise AssertionError("collect_info has no DOCUMENTATION")


def _role_default(text, inventory_var):
    """'controller' from "{{ gpuops_parse_on | default('controller') }}" (the role's own default)."""
    m = re.fullmatch(r"\{\{ *%s *\| *default\('([a-z]+)'\) *\}\}" % inventory_var, text.strip())
    assert m, "%r is not '{{ %s | default(...) }}'" % (text, inventory_var)
    return m.group(1)


def test_the_module_documents_the_one_default():
    options = _module_doc()["options"]
    assert {k: options[k]["default"] for k in DEFAULT} == DEFAULT
    assert options["parse_on"]["choices"] == ["node", "controller"]
    assert options["capture_via"]["choices"] == ["shell", "python"]
    assert options["result_format"]["default"] == "dict"  # an output format, not a mode


def test_the_action_and_the_module_spec_use_it():
    assert {"parse_on": collect_action.DEFAULT_PARSE_ON, "capture_via": collect_action.DEFAULT_CAPTURE_VIA} == DEFAULT
    with open(os.path.join(ROOT, "plugins", "modules", "collect_info.py"), encoding="utf-8") as fh:
        src = fh.read()
    assert '"parse_on": {"type": "str", "choices": ["node", "controller"], "default": "controller"}' in src
    assert '"capture_via": {"type": "str", "choices": ["shell", "python"], "default": "shell"}' in src


def test_the_inspection_role_defaults_to_the_module_default():
    with open(os.path.join(ROOT, "roles", "inspect", "defaults", "main.yml"), encoding="utf-8") as fh:
        defaults = yaml.safe_load(fh)
    with open(os.path.join(ROOT, "roles", "inspect", "meta", "argument_specs.yml"), encoding="utf-8") as fh:
        specs = yaml.safe_load(fh)["argument_specs"]
    doc = _module_doc()["options"]
    for role_var, (option, inv_var) in ROLE_VARS.items():
        assert _role_default(defaults[role_var], inv_var) == doc[option]["default"] == DEFAULT[option], role_var
        for entry, spec in specs.items():
            if role_var in spec.get("options", {}):
                opt = spec["options"][role_var]
                assert _role_default(opt["default"], inv_var) == DEFAULT[option], (entry, role_var)
                assert opt["choices"] == doc[option]["choices"], (entry, role_var)


def _run(args):
    task = mock.MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = False
    action = collect_action.ActionModule(
        task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None
    )
    with mock.patch.object(action, "_execute_module", return_value={"facts": {}}) as execute, mock.patch.object(
        action, "_shell_capture", return_value={"packed": "x"}
    ) as shell:
        result = action.run(task_vars={})
    return result, execute, shell


def test_without_options_the_action_runs_the_shell_capture():
    result, execute, shell = _run({"result_format": "capture"})
    shell.assert_called_once()
    execute.assert_not_called()
    assert result["capture_packed"] == "x" and result["parsed_on"] == "controller"


def test_the_other_modes_stay_options():
    _result, execute, shell = _run({"parse_on": "node", "result_format": "json"})
    assert execute.call_args.kwargs["module_name"] == "gpuops.cluster.collect_info" and not shell.called
    _result, execute, shell = _run({"capture_via": "python", "result_format": "capture"})
    assert execute.call_args.kwargs["module_name"] == "gpuops.cluster.capture" and not shell.called
    # explicit empty values (an unset inventory variable) fall back to the default too
    _result, execute, shell = _run({"parse_on": "", "capture_via": None, "result_format": "capture"})
    shell.assert_called_once()
