# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.change_window as Ansible runs it: argument validation, failure outside the window, check mode
(reports instead of failing, records nothing), the clock override and the audit opt-out written to the chain."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gpuops.cluster.plugins.action import change_window
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as A

WEEKEND = [{"name": "weekend", "weekly": {"days": ["sat", "sun"], "start": "02:00", "duration": "4h"}}]
SATURDAY = "2026-12-05T02:30:00Z"
FRIDAY = "2026-12-04T12:00:00Z"


@pytest.fixture(autouse=True)
def _no_audit_callback(monkeypatch, tmp_path):
    monkeypatch.delenv("GPUOPS_AUDIT_ACTIVE", raising=False)
    monkeypatch.setenv("GPUOPS_STATE_DIR", str(tmp_path / "state"))


def _args(**kw):
    base = {"hosts": ["n1", "n2"], "windows": WEEKEND, "change_id": "CHG-1", "now": SATURDAY, "allow_unaudited": True}
    base.update(kw)
    return base


def test_inside_the_window_is_allowed_and_published_as_a_fact(run_action, tmp_path):
    out = run_action(change_window, _args(state_dir=str(tmp_path / "st")))
    assert not out.get("failed") and out["allowed"] and out["decision"] == "window" and out["changed"] is False
    fact = out["ansible_facts"]["gpuops_change_window"]
    assert fact["window"] == "weekend" and fact["remaining_s"] == 12600 and "msg" not in fact
    assert out["clock_override"] is True and out["unaudited_opt_out"] is True
    recs = [json.loads(line) for line in open(tmp_path / "st" / "audit" / "audit.log")]
    assert [r["event"] for r in recs] == ["unaudited_opt_out"] and recs[0]["clock_override"] is True
    assert A.verify(str(tmp_path / "st" / "audit" / "audit.log"), str(tmp_path / "st" / "audit" / "head.json"))["ok"]


def test_outside_the_window_fails_naming_the_next_one(run_action):
    out = run_action(change_window, _args(now=FRIDAY))
    assert out["failed"] and not out["allowed"] and "next window 'weekend' opens" in out["msg"]


def test_check_mode_reports_a_refusal_and_records_nothing(run_action, tmp_path):
    out = run_action(change_window, _args(now=FRIDAY, state_dir=str(tmp_path / "st")), check_mode=True)
    assert not out.get("failed") and out["allowed"] is False
    assert out["msg"].startswith("check mode: would refuse: refused: outside the maintenance window")
    assert out["check_mode"] is True and out["clock_override"] is False
    out = run_action(change_window, _args(state_dir=str(tmp_path / "st")), check_mode=True)
    assert out["allowed"] and not os.path.exists(tmp_path / "st" / "audit")


def test_without_the_audit_callback_disruptive_work_is_refused(run_action):
    out = run_action(change_window, _args(allow_unaudited=False))
    assert out["failed"] and "gpuops.cluster.audit is not enabled" in out["msg"] and out["audited"] is False


def test_windows_come_from_host_variables_and_unknown_hosts_fail(run_action):
    task_vars = {"hostvars": {"n1": {"gpuops_maintenance_windows": None}}, "ansible_play_hosts_all": ["n1"]}
    out = run_action(change_window, _args(hosts=None, windows=None), task_vars=task_vars)
    assert out["failed"] and "no maintenance windows defined for: n1" in out["msg"]
    out = run_action(change_window, _args(hosts=["ghost"], windows=None), task_vars=task_vars)
    assert out["failed"] and out["msg"] == "change_window: host 'ghost' is not in the inventory"


def test_bad_arguments_and_clock_fail_cleanly(run_action):
    out = run_action(change_window, _args(now="tomorrow-ish"))
    assert out["failed"] and out["msg"].startswith("change_window: now: clock must be ISO 8601")
    out = run_action(change_window, _args(change_class="whenever"))
    assert out["failed"] and "change_class" in out["msg"] and "planned" in out["msg"]
