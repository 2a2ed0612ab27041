# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""collect_info's result_format=json (issue 17, the live path): the same facts, the same report, less controller time."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cluster.plugins.action import inspect_cluster
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import report_files
from ansible_collections.gpuops.cluster.plugins.modules import collect_info

CAPTURES = Path(__file__).resolve().parents[4] / "inventories" / "sim" / ".sim" / "captures"


def _clockless(value):
    """The report without what the wall clock sets (generated_at, SLA deadlines such as respond_by, the evidence's
    age in seconds at the run: the two runs may fall in different seconds)."""
    text = re.sub(r'"(generated_at|\w+_by)": "[^"]*"', r'"\1": "-"', json.dumps(value, sort_keys=True))
    return re.sub(r'"evidence_age_s": \d+', '"evidence_age_s": "-"', text)


def _module_result(capsys, host, result_format):
    """collect_info's result on one of the example cluster's nodes (gpu-node-02 has Xid 79)."""
    args = {"capture_dir": str(CAPTURES / host), "result_format": result_format, "_ansible_check_mode": True}
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        collect_info.main()
    assert exc.value.code == 0
    return json.loads(capsys.readouterr().out)


def test_json_result_is_one_string_of_the_same_facts(capsys):
    as_dict = _module_result(capsys, "gpu-node-01", "dict")
    as_json = _module_result(capsys, "gpu-node-01", "json")
    assert "facts" not in as_json and isinstance(as_json["facts_json"], str)
    assert "facts_json" not in as_dict
    facts = json.loads(as_json["facts_json"])
    assert facts["gpu"]["count"] == 8 and facts["mode"] == "capture"
    for d in (as_dict["facts"], facts):
        d.pop("collected_at", None), d.pop("timings", None)
    assert facts == as_dict["facts"]


def test_report_is_identical_for_dict_and_json_results(run_action, capsys, tmp_path):
    reports = {}
    for fmt in ("dict", "json"):
        hv = {}
        for host in ("gpu-node-01", "gpu-node-02"):
            out = _module_result(capsys, host, fmt)
            out.pop("invocation", None)
            hv[host] = {"inventory_hostname": host, "__inspect_collect": out}
        if fmt == "dict":
            # the same facts both ways (the timings differ between two module runs)
            same = {h: json.loads(json.dumps(v["__inspect_collect"]["facts"])) for h, v in hv.items()}
        else:
            for h, v in hv.items():
                v["__inspect_collect"]["facts_json"] = json.dumps(same[h])
        args = {"targets": sorted(hv), "report_dir": str(tmp_path / fmt), "include_facts": True}
        res = run_action(inspect_cluster, args, task_vars={"hostvars": hv})
        assert res["collected"] == {"live": 2, "ok": 2, "unreachable": 0, "failed": 0}
        # the facts read back from the side file (checked against its SHA-256, which covers the generation time)
        report = report_files.load_report(str(tmp_path / fmt))
        report.pop("facts_file", None)
        reports[fmt] = (report, res["nodes"], res["summary"])
    assert _clockless(reports["dict"]) == _clockless(reports["json"])
    assert reports["json"][1]["gpu-node-02"]["severity"] in ("P0", "P1")  # Xid 79: the example's finding is there


def test_unreadable_facts_json_is_a_failed_collection_not_a_traceback(run_action, tmp_path):
    hv = {"n1": {"__inspect_collect": {"changed": False, "facts_json": '{"schema": "gpuops.facts/v1", '}}}
    args = {"targets": ["n1"], "report_dir": str(tmp_path / "r"), "include_facts": False}
    res = run_action(inspect_cluster, args, task_vars={"hostvars": hv})
    assert res["collected"] == {"live": 1, "ok": 0, "unreachable": 0, "failed": 1}
    assert res["nodes"]["n1"]["status"] != "ok"
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert "unreadable facts_json" in json.dumps(report)
