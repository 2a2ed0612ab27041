# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.replace_record and gpuops.cluster.replace_parts as Ansible runs them: the record flow, check
mode (nothing written), diff, the evidence bundle and the verification."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.gpuops.cluster.plugins.action import replace_parts, replace_record
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import nvsmi_xml as _nvsmi_xml
from ansible_collections.gpuops.cluster.plugins.plugin_utils.replace import parts as _replace

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
BUS = "00000000:00:0E.0"


@pytest.fixture(scope="module")
def facts():
    with open(os.path.join(FIX, "nvidia-smi-xml", "datakit-8xv100s-pcie-460.73.01.xml"), encoding="utf-8") as fh:
        gpu = _nvsmi_xml.parse(fh.read())
    ib = {"hcas": [{"name": "mlx5_0", "serial": None, "node_guid": "0xa088c20300e1b1c2", "board_id": "MT_0000000838"}]}
    return {"gpu": gpu, "ib": ib, "bmc": {}}


@pytest.fixture
def rec(run_action, tmp_path):
    base = {"state_dir": str(tmp_path), "ticket": "T-3", "host": "n1"}

    def _run(action, check_mode=False, diff=False, **kw):
        return run_action(replace_record, dict(base, action=action, **kw), check_mode=check_mode, diff=diff)

    return _run


def test_record_flow(rec, tmp_path):
    out = rec("step", step="isolated")
    assert out["failed"] is True and "prepare first" in out["msg"]
    out = rec("open", part="gpu", component=BUS, phase="prepare")
    assert out["changed"] is True and out["done"] == ["opened"] and out["path"].endswith("replace/T-3-n1.json")
    out = rec("open", part="psu", component="PSU1", phase="prepare")
    assert out["failed"] is True and "is for gpu" in out["msg"]
    out = rec("step", step="isolated", data={"via": "x"})
    assert out["changed"] is True and out["next"] == "drained" and out["record"]["steps"]["isolated"]["via"] == "x"
    assert rec("step", step="isolated", data={"via": "y"})["changed"] is False  # reached before: recorded once
    out = rec("show")
    assert out["changed"] is False and out["step"] == "isolated"
    on_disk = json.loads((tmp_path / "replace" / "T-3-n1.json").read_text())
    assert on_disk["steps"]["isolated"]["via"] == "x" and os.stat(out["path"]).st_mode & 0o777 == 0o600


def test_open_again_is_unchanged_and_steps_out_of_order_fail(rec):
    rec("open", part="gpu", component=BUS, phase="prepare")
    assert rec("open", part="gpu", component=BUS, phase="prepare")["changed"] is False
    out = rec("step", step="evidence")
    assert out["failed"] is True and "step evidence before isolated, drained" in out["msg"]


def test_check_mode_reports_the_record_and_writes_nothing(rec, tmp_path):
    out = rec("open", check_mode=True, diff=True, part="gpu", component=BUS, phase="prepare")
    assert out["changed"] is True and out["record"]["status"] == "open" and out["next"] == "isolated"
    assert out["diff"]["before"] == {} and out["diff"]["after"]["part"] == "gpu"
    assert not (tmp_path / "replace").exists() and not (tmp_path / "locks").exists()
    rec("open", part="gpu", component=BUS, phase="prepare")
    out = rec("step", check_mode=True, step="isolated")
    assert out["changed"] is True and out["step"] == "isolated"
    assert rec("show")["step"] == "opened"


def test_diff_shows_the_step(rec):
    rec("open", part="gpu", component=BUS, phase="prepare")
    out = rec("stop", diff=True, step="isolated", reason="guard refused")
    assert out["status"] == "stopped" and out["stopped"]["reason"] == "guard refused"
    assert out["diff"]["before"]["status"] == "open" and out["diff"]["after"]["status"] == "stopped"


@pytest.mark.parametrize(
    "action,kw,msg",
    [
        ("open", {}, "part"),
        ("open", {"part": "cpu"}, "part must be one of"),
        ("step", {"step": "teleported"}, "step must be one of"),
        ("stop", {"step": "verified"}, "reason"),
    ],
)
def test_bad_record_requests_fail_cleanly(rec, action, kw, msg):
    out = rec(action, **kw)
    assert out["failed"] is True and msg in out["msg"] and out["msg"].startswith("replace_record:")


def test_unsafe_ticket_fails_cleanly(run_action, tmp_path):
    out = run_action(replace_record, {"action": "open", "state_dir": str(tmp_path), "ticket": "../x", "host": "n1",
                                      "part": "gpu"})  # fmt: skip
    assert out["failed"] is True and "unsafe ticket" in out["msg"] and not (tmp_path / "replace").exists()


# ---------------------------------------------------------------------------------------------- replace_parts
def test_manifest_writes_the_bundle_files(run_action, tmp_path):
    (tmp_path / "capture").mkdir()
    (tmp_path / "capture" / "x.txt").write_text("x")
    args = {"action": "manifest", "root": str(tmp_path), "ticket": "T", "host": "n1", "part": "gpu", "component": BUS,
            "serials": {"gpu": {}}, "write_serials": True, "write": {"bmc-remote.json": None}}  # fmt: skip
    out = run_action(replace_parts, args)
    assert out["changed"] is True and out["files"] == 2 and (tmp_path / "serials.json").exists()
    assert out["written"] == ["serials.json", "manifest.json"] and not (tmp_path / "bmc-remote.json").exists()
    assert _replace.verify_manifest(str(tmp_path))["ok"] is True
    out = run_action(replace_parts, dict(args, write={"../escape.json": {}}))
    assert out["failed"] is True and "outside" in out["msg"] and not (tmp_path.parent / "escape.json").exists()


def test_manifest_in_check_mode_writes_nothing(run_action, tmp_path, facts):
    root = tmp_path / "bundle"
    args = {"action": "manifest", "root": str(root), "ticket": "T", "host": "n1", "part": "gpu", "component": BUS,
            "facts": facts, "write_serials": True}  # fmt: skip
    out = run_action(replace_parts, args, check_mode=True, diff=True)
    assert out["changed"] is True and out["serials"]["gpu"][BUS] == "1562920005886"
    assert out["diff"]["before"] == {} and out["diff"]["after"]["ticket"] == "T"
    assert not root.exists()


def test_one_call_inventory_with_manifest_and_verify(run_action, tmp_path, facts):
    args = {"action": "manifest", "root": str(tmp_path), "ticket": "T", "host": "n1", "part": "gpu", "component": BUS,
            "facts": facts, "write_serials": True}  # fmt: skip
    out = run_action(replace_parts, args)
    assert out["serials"]["gpu"][BUS] == "1562920005886"
    assert json.loads((tmp_path / "serials.json").read_text())["gpu"][BUS] == "1562920005886"
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert m["gpu_uuids"][BUS].startswith("GPU-") and m["hca_psids"] == {"mlx5_0": "MT_0000000838"}
    after = copy.deepcopy(facts)
    next(g for g in after["gpu"]["gpus"] if g["bus_id"] == BUS)["serial"] = "NEW"
    v = run_action(replace_parts, {"action": "verify", "part": "gpu", "component": BUS, "before": out["serials"],
                                   "facts": after})  # fmt: skip
    assert v["changed"] is False and v["verdict"] == "replaced" and v["after"]["gpu"][BUS] == "NEW"
    assert v["verification"]["changed"] == [BUS]
    same = run_action(replace_parts, {"action": "verify", "part": "gpu", "component": BUS, "before": out["serials"],
                                      "facts": facts})  # fmt: skip
    assert same["verdict"] == "not_replaced" and same["changed"] is False


def test_inventory_and_verify_manifest(run_action, tmp_path, facts):
    inv = run_action(replace_parts, {"action": "inventory", "facts": facts})
    assert inv["changed"] is False and inv["serials"]["hca"] == {"mlx5_0": "0xa088c20300e1b1c2"}
    run_action(replace_parts, {"action": "manifest", "root": str(tmp_path), "ticket": "T", "host": "n1", "part": "gpu",
                               "serials": inv["serials"], "write_serials": True})  # fmt: skip
    (tmp_path / "serials.json").write_text("{}")
    out = run_action(replace_parts, {"action": "verify_manifest", "root": str(tmp_path)})
    assert out["ok"] is False and out["mismatched"] == ["serials.json"]


@pytest.mark.parametrize(
    "args,msg",
    [
        ({"action": "verify"}, "part"),
        ({"action": "verify", "part": "cpu", "before": {}}, "part must be one of"),
        ({"action": "verify", "part": "gpu", "before": {}}, "after or facts"),
        (
            {"action": "manifest", "root": "/nonexistent", "ticket": "T", "host": "n1", "part": "gpu"},
            "facts or serials",
        ),
    ],
)
def test_bad_parts_requests_fail_cleanly(run_action, args, msg):
    out = run_action(replace_parts, args)
    assert out["failed"] is True and msg in out["msg"]
