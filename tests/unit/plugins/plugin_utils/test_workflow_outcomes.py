# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 21, the workflows: every record reaches a final state, and each workflow's per-node results map onto the
run-outcome vocabulary that gpuops.cluster.run_outcome accepts (upgrade, replace, leak_response, onboard)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import outcome as _outcome
from ansible_collections.gpuops.cluster.plugins.plugin_utils.leak import response as _leak
from ansible_collections.gpuops.cluster.plugins.plugin_utils.replace import parts as _replace
from ansible_collections.gpuops.cluster.plugins.plugin_utils.upgrade import report as _upgrade_report
from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard import stage as _onboard_stage

META = {"ticket": "T-1", "change_id": "CHG-1", "requested_state": "x", "check_mode": False, "started": "", "finished": ""}


def accepted_by_run_outcome(workflow, nodes, requested=None):
    """The nodes as gpuops.cluster.run_outcome takes them: every outcome in the vocabulary (it raises otherwise)."""
    return _outcome.build(workflow, "r-1", requested if requested is not None else sorted(nodes), nodes, META)


# -- upgrade ---------------------------------------------------------------------------------------------------
def _upgrade_report_of(records, planned, blocked=(), stopped=""):
    rep = _upgrade_report.build_report("CHG-1", records, list(planned), list(blocked), [], [], "now")
    return _upgrade_report.mark_stopped(rep, stopped)


def _rec(host, result, stage=None, message="", evidence=None, slurm=None):
    return {"host": host, "result": result, "stage": stage, "message": message, "evidence": evidence, "slurm": slurm}


def test_upgrade_window_stop_leaves_later_nodes_not_started_with_the_reason():
    rep = _upgrade_report_of(
        [_rec("n1", "upgraded", "resume", "upgraded: driver")], ["n1", "n2", "n3"],
        stopped="window: outside the maintenance window for: n2, n3",
    )  # fmt: skip
    out = _upgrade_report.outcomes(rep)
    assert {h: o["outcome"] for h, o in out.items()} == {"n1": "done", "n2": "not_started", "n3": "not_started"}
    assert out["n2"]["decision"] == "stopped: window: outside the maintenance window for: n2, n3"
    assert out["n2"]["detail"].startswith("not started: window: ")
    assert rep["stopped"].startswith("window:") and "Stopped: window:" in _upgrade_report.render_markdown(rep)
    doc = accepted_by_run_outcome("upgrade", out)
    assert doc["exit_code"] == 2 and doc["counts"] == {"done": 1, "not_started": 2}


@pytest.mark.parametrize(
    "rec, want",
    [
        (_rec("n", "failed", "health_gate", "health_gate: 1 P0/P1 finding(s)"), "refused"),
        (_rec("n", "failed", "drain", "isolation of n refused by the guard: []"), "refused"),
        (_rec("n", "failed", "drain", "isolation of n failed: Unable to contact slurm controller"), "failed"),
        (_rec("n", "failed", "apply:bmc", "Redfish task monitor: connection refused", "/run/evidence/n"), "failed"),
        (_rec("n", "failed", "activate", "timed out", "not captured: node unreachable"), "unconfirmed"),
        (_rec("n", "failed", "verify", "vbios still 96.00.74.00.0D"), "left_drained"),
        (_rec("n", "failed", "post_inspection", "post_inspection: 1 P0/P1 finding(s): Xid 79"), "left_drained"),
        (_rec("n", "at_target", "start", "at target, nothing to do"), "already"),
    ],
)
def test_upgrade_failed_stages_map_to_the_vocabulary(rec, want):
    rec["slurm"] = {"state": "IDLE+DRAIN", "reason": "gpuops: upgrade failed at x: y [CHG-1]"}
    out = _upgrade_report.outcomes(_upgrade_report_of([rec], ["n"]))["n"]
    assert out["outcome"] == want
    assert out["slurm_state"] == "IDLE+DRAIN" and out["slurm_reason"].endswith("[CHG-1]")
    if want not in ("already",):
        assert out["error"] == rec["message"] and out["decision"] == "failed at %s" % rec["stage"]
    accepted_by_run_outcome("upgrade", {"n": out})


def test_upgrade_blocked_is_refused_and_an_all_upgraded_run_succeeds():
    rep = _upgrade_report_of([_rec("a", "upgraded")], ["a"], blocked=[{"host": "b", "reason": "downgrade"}])
    out = _upgrade_report.outcomes(rep)
    assert out["b"]["outcome"] == "refused" and out["b"]["detail"] == "downgrade"
    assert accepted_by_run_outcome("upgrade", {"a": out["a"]}, ["a"])["exit_code"] == 0
    assert _upgrade_report.mark_stopped(rep, "")["stopped"] is None


# -- replace ---------------------------------------------------------------------------------------------------
def _prepared_until(step):
    rec = _replace.new_record("T-1", "n1", "gpu", "0000:18:00.0", now="2026-12-03T03:00:00Z")
    for s in _replace.PREPARE_STEPS[1 : _replace.PREPARE_STEPS.index(step) + 1]:
        _replace.advance(rec, s, now="2026-12-03T03:01:00Z")
    return rec


def test_refused_power_off_leaves_a_final_record_with_the_bmc_message_and_the_node_state():
    rec = _prepared_until("evidence")
    left = {"slurm_state": "IDLE+DRAIN", "slurm_reason": "gpuops: replace stopped at power-off: refused [T-1]",
            "power": "on"}  # fmt: skip
    _replace.stop(rec, "powered_off", "power-off failed: power off not confirmed: n1 on - BMC: Unspecified error",
                  {"message": "Unspecified error (0xff)", "left": left})  # fmt: skip
    assert rec["status"] == "stopped" and rec["step"] == "evidence"
    assert rec["stopped"]["step"] == "powered_off" and rec["stopped"]["message"] == "Unspecified error (0xff)"
    assert rec["left"] == left and "left" not in rec["stopped"]
    assert rec["history"][-1]["event"] == "stopped"
    out = _replace.outcome(rec, "prepare")
    assert out["outcome"] == "left_drained" and out["error"] == "Unspecified error (0xff)"
    assert out["detail"].startswith("stopped at powered_off: power-off failed")
    assert out["slurm_state"] == "IDLE+DRAIN" and out["slurm_reason"].startswith("gpuops: replace stopped at power-off")
    assert accepted_by_run_outcome("replace", {"n1": out})["exit_code"] == 2
    # a later prepare run reopens it; a step clears what it said about the node
    _replace.reopen_for_prepare(rec)
    _replace.advance(rec, "powered_off")
    assert rec["left"] is None and rec["status"] == "open"


def test_a_stop_needs_a_known_step_and_a_reason():
    rec = _prepared_until("isolated")
    with pytest.raises(_replace.ReplaceError):
        _replace.stop(rec, "power_off", "x")
    with pytest.raises(_replace.ReplaceError):
        _replace.stop(rec, "drained", "  ")


@pytest.mark.parametrize(
    "step, phase, done_before, want",
    [
        ("handed_over", "prepare", [], "done"),
        ("handed_over", "prepare", ["handed_over"], "already"),
        ("evidence", "prepare", [], "left_drained"),  # broke off after the isolation: drained, not finished
        ("opened", "prepare", [], "failed"),
    ],
)
def test_replace_outcome_of_an_unstopped_record(step, phase, done_before, want):
    rec = _prepared_until(step) if step != "opened" else _replace.new_record("T-1", "n1", "gpu", "0000:18:00.0")
    assert _replace.outcome(rec, phase, done_before)["outcome"] == want


def test_a_stop_before_the_isolation_is_refused():
    rec = _replace.new_record("T-1", "n1", "gpu", "0000:18:00.0")
    _replace.stop(rec, "isolated", "isolation failed: refused by the guard", {"message": "3 of 8 (limit 2)"})
    out = _replace.outcome(rec, "prepare")
    assert out["outcome"] == "refused" and out["error"] == "3 of 8 (limit 2)"


def test_closed_record_is_done_for_the_return_phase():
    rec = _prepared_until("handed_over")
    for s in _replace.RETURN_STEPS:
        _replace.advance(rec, s)
    assert _replace.outcome(rec, "return")["outcome"] == "done"
    assert _replace.outcome(rec, "return", _replace.done_steps(rec))["outcome"] == "already"


# -- leak ------------------------------------------------------------------------------------------------------
SCOPE = {"domain": "cdu-a", "targets": ["n1", "n2", "n3"], "out_of_scope": []}


def test_unreadable_sensor_is_refused_with_a_final_status_and_nothing_powered_off():
    reading = _leak.detect({"errors": [{"kind": "tool_error", "message": "BMC did not answer: timed out"}]})
    assert reading["state"] == _leak.UNREADABLE
    res = _leak.finish({"alert_id": "A-1", "source": "n1", "reading": reading, "scope": SCOPE, "ticket": "INC-9"})
    assert res["status"] == "refused" and res["ticket"] == "INC-9" and res["fired"] is False
    assert res["decision"].startswith("nothing powered off: ")
    assert list(res["outcomes"]) == ["n1"] and res["outcomes"]["n1"]["outcome"] == "refused"
    assert "unreadable" in res["outcomes"]["n1"]["detail"] and "nothing powered off" in res["outcomes"]["n1"]["detail"]
    assert accepted_by_run_outcome("leak_response", res["outcomes"])["exit_code"] == 2
    json.dumps(res)  # the record is plain JSON


def test_asserted_leak_outcomes_per_target():
    reading = {"state": _leak.ASSERTED, "reason": "leak asserted: ColdPlate0 (Critical)"}
    power = {"n1": {"state": "off", "bmc": True, "error": None},
             "n2": {"state": "on", "bmc": True, "error": "HTTP Error 400: PowerForceOff refused"},
             "n3": {"state": None, "bmc": True, "error": "BMC did not answer"}}  # fmt: skip
    res = _leak.finish({"alert_id": "A-2", "source": "n1", "reading": reading, "scope": SCOPE, "power": power,
                        "slurm_down": ["n1", "n2", "n3"]})  # fmt: skip
    got = {h: o["outcome"] for h, o in res["outcomes"].items()}
    assert got == {"n1": "done", "n2": "failed", "n3": "unconfirmed"}
    assert res["outcomes"]["n2"]["error"] == "HTTP Error 400: PowerForceOff refused"
    assert res["outcomes"]["n1"]["slurm_state"] == "DOWN"
    assert res["status"] == "incomplete" and res["ticket"] == "A-2"
    accepted_by_run_outcome("leak_response", res["outcomes"])


def test_clear_reading_is_skipped_and_out_of_scope_requests_refused():
    sc = dict(SCOPE, targets=["n1"], out_of_scope=[{"node": "n9", "reason": "not in leak domain cdu-a"}])
    res = _leak.finish({"alert_id": "A-3", "source": "n1", "reading": {"state": _leak.CLEAR, "reason": "ok"},
                        "scope": sc})  # fmt: skip
    assert res["status"] == "no_action"
    assert res["outcomes"]["n1"]["outcome"] == "skipped" and res["outcomes"]["n9"]["outcome"] == "refused"
    warn = _leak.finish({"alert_id": "A-4", "source": "n1", "reading": {"state": _leak.WARNING, "reason": "w"},
                         "scope": SCOPE})  # fmt: skip
    assert warn["status"] == "refused" and warn["outcomes"]["n1"]["outcome"] == "refused"


# -- onboard ---------------------------------------------------------------------------------------------------
def test_onboarding_record_keeps_how_a_failed_node_was_left(tmp_path):
    base = {"state_dir": str(tmp_path), "host": "n1", "node_class": "h100", "restart": False}
    _onboard_stage.run(dict(base, action="record", stage="inventory", problems=["GPU count 7, profile expects 8"],
                            ticket="OPS-1", by="op"), False)  # fmt: skip
    left = {"slurm_state": "IDLE+DRAIN", "slurm_reason": "gpuops: onboard inventory failed [OPS-1]", "drained": True}
    out = _onboard_stage.run(dict(base, action="left", left=left), False)
    assert out["changed"] and out["record"]["status"] == "failed"
    rec = json.loads((tmp_path / "onboarding" / "n1.json").read_text())
    assert rec["left"]["drained"] is True and rec["left"]["slurm_reason"].endswith("[OPS-1]") and rec["left"]["at"]
    assert rec["failed_stage"] == "inventory" and rec["reason"].startswith("onboard")
    # check mode writes nothing
    _onboard_stage.run(dict(base, action="left", left={"drained": False}), True)
    assert json.loads((tmp_path / "onboarding" / "n1.json").read_text())["left"]["drained"] is True
