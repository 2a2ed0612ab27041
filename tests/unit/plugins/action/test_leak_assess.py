# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.leak_assess as Ansible runs it: assess, finish (the result file, check mode, diff), detect."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpuops.cluster.plugins.action import leak_assess
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import bmc as _bmc
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import redfish as _redfish

DOMAINS = {"n1": "cdu-a", "n2": "cdu-a", "n4": "cdu-b"}
RACKS = {"n1": "r1", "n2": "r1", "n4": "r2"}


def detector(state):
    doc = {"@odata.type": "#LeakDetector.v1_1_0.LeakDetector", "Id": "ColdPlate0", "Name": "Cold Plate 0 Leak Detector",
           "DetectorState": state, "Status": {"Health": state, "State": "Enabled"}}  # fmt: skip
    frag = _redfish.parse_leak_detector(doc)
    out = _bmc.empty_result("test")
    out.update(sensors=frag["sensors"], redfish=dict(_redfish.empty(), leak_detectors=frag["leak_detectors"]))
    return out


@pytest.fixture
def assessed(run_action):
    args = {"action": "assess", "alert_id": "A-3", "source": "n1", "bmc": detector("Critical"), "domains": DOMAINS,
            "racks": RACKS}  # fmt: skip
    out = run_action(leak_assess, args)
    assert not out.get("failed"), out
    return out


def finish_args(assessed, tmp_path, **kw):
    args = {"action": "finish", "alert_id": "A-3", "source": "n1", "reading": assessed["reading"],
            "scope": assessed["scope"], "power": {"n1": {"state": "off"}, "n2": {"state": "off"}},
            "slurm_down": ["n1", "n2"], "state_dir": str(tmp_path)}  # fmt: skip
    args.update(kw)
    return args


def test_assess_scopes_the_leak_domain_with_one_p0_per_target(assessed):
    assert assessed["changed"] is False and assessed["reading"]["state"] == "asserted"
    assert assessed["scope"]["domain"] == "cdu-a" and assessed["scope"]["targets"] == ["n1", "n2"]
    assert [(f["host"], f["severity"]) for f in assessed["guard_findings"]] == [("n1", "P0"), ("n2", "P0")]


def test_assess_refuses_requested_targets_outside_the_domain(run_action):
    out = run_action(leak_assess, {"action": "assess", "alert_id": "A", "source": "n1", "bmc": detector("Critical"),
                                   "domains": DOMAINS, "requested": ["n2", "n4"]})  # fmt: skip
    assert out["scope"]["targets"] == ["n2"] and [o["node"] for o in out["scope"]["out_of_scope"]] == ["n4"]


def test_finish_writes_the_result_once_then_is_unchanged(assessed, run_action, tmp_path):
    out = run_action(leak_assess, finish_args(assessed, tmp_path), diff=True)
    assert out["changed"] is True and out["powered_off"] == ["n1", "n2"] and out["unconfirmed"] == []
    path = tmp_path / "leak" / "A-3.json"
    assert out["path"] == str(path) and json.loads(path.read_text())["alert_id"] == "A-3"
    assert path.stat().st_mode & 0o777 == 0o600
    assert out["diff"]["before"] == {} and out["diff"]["after"]["fired"] is True
    again = run_action(leak_assess, finish_args(assessed, tmp_path), diff=True)
    assert again["changed"] is False and "diff" not in again


def test_finish_in_check_mode_reports_and_writes_nothing(assessed, run_action, tmp_path):
    out = run_action(leak_assess, finish_args(assessed, tmp_path), check_mode=True)
    assert out["changed"] is True and out["path"].endswith("leak/A-3.json")
    assert not (tmp_path / "leak").exists()


def test_finish_unconfirmed_power_off_is_p0(assessed, run_action, tmp_path):
    out = run_action(leak_assess, finish_args(assessed, tmp_path, power={"n1": {"state": "off"}, "n2": {"bmc": False}}))
    assert [u["node"] for u in out["unconfirmed"]] == ["n2"] and out["severity"] == "P0"
    assert ("n2", "power_off_unconfirmed") in {(f["host"], f["code"]) for f in out["findings"]}


def test_finish_without_a_state_dir_writes_nothing(assessed, run_action, tmp_path):
    out = run_action(leak_assess, finish_args(assessed, tmp_path, state_dir=None))
    assert out["changed"] is False and "path" not in out and out["fired"] is True
    assert list(tmp_path.iterdir()) == []


def test_detect_only_reads(run_action):
    out = run_action(leak_assess, {"action": "detect", "bmc": detector("Warning")})
    assert out["changed"] is False and out["reading"]["state"] == "warning"


@pytest.mark.parametrize(
    "args,msg",
    [
        ({"action": "nope"}, "value of action must be one of"),
        ({"action": "assess", "source": "n1"}, "alert_id"),
        ({"action": "detect", "bmc": "not a dict"}, "bmc"),
        ({"action": "finish", "alert_id": "A", "source": "n1"}, "reading"),
    ],
)
def test_bad_requests_fail_cleanly(run_action, args, msg):
    out = run_action(leak_assess, args)
    assert out["failed"] is True and msg in out["msg"] and out["msg"].startswith("leak_assess:")
