# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.collect_info's action: parse_on=node runs the module as before; parse_on=controller runs the
capture module on the node and parses its answer here (or hands it on unparsed, result_format=capture). The node's
answer is replaced by a simulated node's capture."""

from __future__ import annotations

import json
import os
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.gpuops.cluster.plugins.action import collect_info as collect_action
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import livecapture as _livecapture

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
CAPTURE = os.path.join(REPO, "inventories", "sim", ".sim", "captures", "gpu-node-01")


def run_action(args, answer):
    task = mock.MagicMock()
    task.args = dict(args)
    task.args.setdefault("capture_via", "python")  # the shell capture: test_collect_info_shell.py
    task.async_val = 0
    task.check_mode = False
    action = collect_action.ActionModule(
        task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None
    )
    with mock.patch.object(action, "_execute_module", return_value=dict(answer)) as execute:
        result = action.run(task_vars={})
    return result, execute


def node_answer():
    tree = _livecapture.read_tree(CAPTURE)
    return {"changed": False, "packed": _livecapture.pack(tree), "meta": json.loads(tree["capture.json"])}


def test_parse_on_node_runs_the_module_as_it_is():
    result, execute = run_action({"parse_on": "node", "result_format": "json"}, {"facts_json": "{}"})
    execute.assert_called_once()
    assert execute.call_args.kwargs["module_name"] == "gpuops.cluster.collect_info"
    assert execute.call_args.kwargs["module_args"] == {"result_format": "json"}  # parse_on is the action's
    assert result["facts_json"] == "{}"


def test_a_capture_dir_is_always_read_by_the_module():
    _result, execute = run_action({"parse_on": "controller", "capture_dir": "/srv/cap"}, {"facts": {}})
    assert execute.call_args.kwargs["module_name"] == "gpuops.cluster.collect_info"


def test_parse_on_controller_runs_the_capture_and_parses_here():
    args = {
        "parse_on": "controller",
        "result_format": "json",
        "domains": ["gpu", "ib"],
        "timeout": 12,
        "mounts": ["/x"],
    }
    result, execute = run_action(args, node_answer())
    kwargs = execute.call_args.kwargs
    assert kwargs["module_name"] == "gpuops.cluster.capture"
    assert kwargs["module_args"] == {"timeout": 12, "mounts": ["/x"], "domains": ["gpu", "ib"], "pack": True}
    facts = json.loads(result["facts_json"])
    assert facts["mode"] == "live" and facts["parsed_on"] == "controller" and result["parsed_on"] == "controller"
    assert facts["gpu"]["count"] == 8 and facts["ib"]["hcas"]
    assert not {"kernel", "bmc", "slurm", "node", "dcgm"} & set(facts)  # only what was asked for


def test_result_format_capture_hands_the_answer_on_unparsed():
    answer = node_answer()
    result, _execute = run_action({"parse_on": "controller", "result_format": "capture"}, answer)
    assert result["capture_packed"] == answer["packed"] and "facts" not in result and "facts_json" not in result


def test_dcgm_asks_the_node_for_the_level_the_module_runs():
    _result, execute = run_action({"parse_on": "controller", "domains": ["dcgm"]}, node_answer())
    assert execute.call_args.kwargs["module_args"]["dcgm_level"] == 1


@pytest.mark.parametrize("answer", [{"failed": True, "msg": "boom"}, {"unreachable": True, "msg": "ssh: timeout"}])
def test_a_failed_or_unreachable_node_is_passed_on(answer):
    result, _execute = run_action({"parse_on": "controller", "result_format": "capture"}, answer)
    assert result.get("failed") or result.get("unreachable")
    assert "capture_packed" not in result


def test_a_garbled_answer_is_a_collect_error_not_a_traceback():
    result, _execute = run_action({"parse_on": "controller"}, {"packed": "%%%not packed"})
    [err] = result["facts"]["errors"]
    assert err["domain"] == "collect" and "cannot be read" in err["message"]


@pytest.mark.parametrize(
    "args, msg",
    [
        ({"parse_on": "everywhere"}, "parse_on must be one of node, controller"),
        ({"parse_on": "controller", "result_format": "yaml"}, "result_format must be dict, json or capture"),
        ({"parse_on": "controller", "timeout": "soon"}, "timeout must be a number"),
    ],
)
def test_bad_arguments_are_refused_clearly(args, msg):
    with pytest.raises(AnsibleActionFail, match=msg):
        run_action(args, node_answer())
