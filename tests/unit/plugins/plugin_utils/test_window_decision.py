# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The change-window decision (plugin_utils/change/change_window.decide) as a plain function: allowed in a window,
refused outside it, emergency override, corrective work, check mode, the clock override and the audit opt-out.
(Moved from tests/integration/test_change_guard.py, which keeps the real playbook runs.)"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import windows as W
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change.change_window import (
    audit_marker,
    decide,
    opt_out_record,
)

BERLIN = [
    {"name": "weekend-night", "weekly": {"days": ["sat", "sun"], "start": "02:00", "duration": "4h"},
     "timezone": "Europe/Berlin"},
    {"name": "xmas-freeze", "freeze": True, "start": "2026-12-19T00:00", "end": "2027-01-04T00:00",
     "timezone": "Europe/Berlin"},
    {"name": "fw-freeze", "freeze": True, "start": "2026-12-12T03:00", "end": "2026-12-12T04:00",
     "timezone": "Europe/Berlin"},
]  # fmt: skip
NEWYORK = [
    {"name": "ny-night", "weekly": {"days": ["sat"], "start": "22:00", "duration": "6h"},
     "timezone": "America/New_York"},
]  # fmt: skip


def args(**kw):
    base = {
        "change_class": "planned",
        "change_id": "CHG-1",
        "ticket": "",
        "emergency": {},
        "findings": [],
        "now": "",
        "disruptive": True,
        "allow_unaudited": False,
    }
    base.update(kw)
    return base


def run_decide(a, by_host, now, audited=True, check_mode=False):
    return decide(a, by_host, W.parse_now(now), audited=audited, check_mode=check_mode)


# ---- the decision matrix (the action plugin's pure function) ---------------------------------------------
def test_planned_inside_window_for_all_hosts():
    r = run_decide(args(), {"b1": BERLIN, "b2": BERLIN}, "2026-12-05T02:30:00Z")
    assert (r["allowed"], r["decision"], r["window"], r["remaining_s"]) == (True, "window", "weekend-night", 9000)
    assert r["window_end"] == "2026-12-05T05:00:00+00:00"


def test_planned_refused_outside_names_next_window():
    r = run_decide(args(), {"b1": BERLIN}, "2026-12-04T12:00:00Z")  # Friday
    assert not r["allowed"] and r["decision"] == "refused"
    assert "outside the maintenance window for: b1" in r["msg"]
    assert "next window 'weekend-night' opens 2026-12-05T02:00:00+01:00" in r["msg"] and "in 13h00m" in r["msg"]
    assert r["next_window"]["start"] == "2026-12-05T01:00:00+00:00"


def test_planned_across_timezones_needs_all_hosts_in_window():
    # Sat 2026-12-05 03:00Z: Berlin 04:00 (open), New York Fri 22:00 (closed)
    r = run_decide(args(), {"b1": BERLIN, "ny1": NEWYORK}, "2026-12-05T03:00:00Z")
    assert not r["allowed"] and r["hosts_outside"] == ["ny1"] and "ny1" in r["msg"]
    assert r["next_window"]["start"] == "2026-12-06T03:00:00+00:00"  # Sat 22:00 New York = Sun 04:00 Berlin
    r = run_decide(args(), {"b1": BERLIN, "ny1": NEWYORK}, "2026-12-06T04:00:00Z")
    assert r["allowed"] and r["remaining_s"] == 3600 and r["window"] == "weekend-night+ny-night"


def test_planned_on_dst_days():
    # 2026-03-29 (spring forward): the Sunday slot is 03:00-06:00 CEST = 01:00Z-04:00Z
    assert not run_decide(args(), {"b": BERLIN}, "2026-03-29T00:30:00Z")["allowed"]
    r = run_decide(args(), {"b": BERLIN}, "2026-03-29T03:00:00Z")
    assert r["allowed"] and r["remaining_s"] == 3600
    # 2026-10-25 (fall back): 02:00 CEST (00:00Z) to 06:00 CET (05:00Z)
    r = run_decide(args(), {"b": BERLIN}, "2026-10-25T04:30:00Z")
    assert r["allowed"] and r["remaining_s"] == 1800


def test_freeze_inside_recurring_window_refuses_and_cuts_remaining():
    r = run_decide(args(), {"b": BERLIN}, "2026-12-12T02:30:00Z")  # 03:30 Berlin, inside fw-freeze
    assert not r["allowed"] and "change freeze 'fw-freeze' is in force until 2026-12-12T04:00:00+01:00" in r["msg"]
    r = run_decide(args(), {"b": BERLIN}, "2026-12-12T01:30:00Z")  # 02:30 Berlin: 30 min until the freeze
    assert r["allowed"] and r["remaining_s"] == 1800
    r = run_decide(args(), {"b": BERLIN}, "2026-12-20T02:00:00Z")  # the long xmas freeze
    assert not r["allowed"] and "xmas-freeze" in r["msg"]
    assert r["next_window"]["start"] == "2027-01-09T01:00:00+00:00"


def test_emergency_override():
    r = run_decide(args(emergency={"ticket": "INC-1", "reason": "CVE"}), {"b": BERLIN}, "2026-12-04T12:00:00Z")
    assert r["allowed"] and r["decision"] == "emergency_override"
    assert r["override"] == {"ticket": "INC-1", "reason": "CVE"} and r["remaining_s"] is None
    r = run_decide(args(emergency={"ticket": "INC-1"}), {"b": BERLIN}, "2026-12-04T12:00:00Z")
    assert not r["allowed"] and "needs both ticket and reason" in r["msg"]
    r = run_decide(args(change_id="", emergency={"ticket": "INC-1", "reason": "x"}), {"b": BERLIN}, 0)
    assert r["allowed"]  # the emergency ticket is the change reference


def test_planned_needs_a_change_reference():
    r = run_decide(args(change_id=""), {"b": BERLIN}, "2026-12-05T02:30:00Z")
    assert not r["allowed"] and "needs a change_id or ticket" in r["msg"]
    assert run_decide(args(change_id="", ticket="OPS-9"), {"b": BERLIN}, "2026-12-05T02:30:00Z")["allowed"]


def test_corrective_runs_outside_window_on_own_findings():
    findings = [
        {"id": "b1:gpu.xid:gpu3:79", "check": "gpu.xid", "severity": "P1", "host": "b1", "evidence": {"big": 1}},
        {"id": "b2:gpu.temp:gpu0:", "check": "gpu.temp", "severity": "P2", "host": "b2"},
    ]
    r = run_decide(args(change_class="corrective", change_id="", findings=findings), {"b1": BERLIN}, 0)
    assert r["allowed"] and r["decision"] == "corrective"
    assert r["findings"][0] == {"id": "b1:gpu.xid:gpu3:79", "check": "gpu.xid", "severity": "P1", "host": "b1",
                                "component": None, "code": None}  # fmt: skip
    r = run_decide(args(change_class="corrective", findings=findings), {"b1": BERLIN, "b2": BERLIN}, 0)
    assert not r["allowed"] and "none for: b2" in r["msg"]  # a P2 does not justify isolating b2
    leak = [{"id": "cluster:coolant.leak", "check": "coolant.leak", "severity": "P0", "host": None}]
    assert run_decide(args(change_class="corrective", findings=leak), {"b1": None, "b2": None}, 0)["allowed"]
    assert not run_decide(args(change_class="corrective"), {"b1": BERLIN}, 0)["allowed"]


def test_audit_required_and_opt_out():
    r = run_decide(args(), {"b": BERLIN}, "2026-12-05T02:30:00Z", audited=False)
    assert not r["allowed"] and "gpuops.cluster.audit is not enabled" in r["msg"]
    r = run_decide(args(allow_unaudited=True), {"b": BERLIN}, "2026-12-05T02:30:00Z", audited=False)
    assert r["allowed"] and r["unaudited_opt_out"]
    r = run_decide(args(disruptive=False, change_id=""), {"b": BERLIN}, 0, audited=False)
    assert r["allowed"] and r["decision"] == "not_disruptive"


def test_clock_override_only_outside_check_mode_and_bad_windows():
    a = args(now="2026-12-05T02:30:00Z")
    assert run_decide(a, {"b": BERLIN}, a["now"], check_mode=True)["clock_override"] is False
    assert run_decide(a, {"b": BERLIN}, a["now"], check_mode=False)["clock_override"] is True
    r = run_decide(args(), {"b": [{"name": "x", "weekly": {"days": ["sat"], "start": "2am", "duration": "1h"}}]}, 0)
    assert not r["allowed"] and "b.windows[0].weekly.start" in r["msg"]
    r = run_decide(args(), {"bare": None}, 0)
    assert not r["allowed"] and "no maintenance windows defined for: bare" in r["msg"]


def test_audit_marker_must_come_from_this_controller(monkeypatch):
    monkeypatch.delenv("GPUOPS_AUDIT_ACTIVE", raising=False)
    assert audit_marker() is None
    good = {"pid": os.getppid(), "run_id": "r", "log": "/x", "broken": None}
    monkeypatch.setenv("GPUOPS_AUDIT_ACTIVE", json.dumps(good))
    assert audit_marker() == good  # a worker forked from the controller that loaded the callback
    monkeypatch.setenv("GPUOPS_AUDIT_ACTIVE", json.dumps(dict(good, pid=1)))  # forged / inherited from elsewhere
    assert audit_marker() is None
    monkeypatch.setenv("GPUOPS_AUDIT_ACTIVE", json.dumps(dict(good, broken="disk full")))
    assert audit_marker() is None
    monkeypatch.setenv("GPUOPS_AUDIT_ACTIVE", "garbage")
    assert audit_marker() is None


def test_not_disruptive_needs_no_window_reference_or_audit():
    r = run_decide(args(disruptive=False, change_id=""), {"b": None}, "2026-12-04T12:00:00Z", audited=False)
    assert r["allowed"] and r["decision"] == "not_disruptive" and r["msg"] == "allowed: not disruptive"
    assert r["unaudited_opt_out"] is False


def test_no_hosts_is_refused_even_inside_a_window():
    r = run_decide(args(), {}, "2026-12-05T02:30:00Z")
    assert not r["allowed"] and "no target hosts" in r["msg"] and r["hosts"] == []


def test_a_cluster_wide_p0_covers_every_host():
    leak = [{"severity": "P0", "check": "cluster.leak", "host": None}]
    r = run_decide(args(change_class="corrective", findings=leak), {"a": BERLIN, "b": BERLIN}, 0)
    assert r["allowed"] and r["decision"] == "corrective" and r["findings"][0]["check"] == "cluster.leak"
    p1 = [{"severity": "P1", "check": "x", "host": None}]  # a cluster P1 does not
    r = run_decide(args(change_class="corrective", findings=p1), {"a": BERLIN}, 0)
    assert not r["allowed"] and "none for: a" in r["msg"]


def test_the_clock_is_parsed_by_the_one_time_parser():
    assert W.parse_now("2026-12-05T02:30:00Z") == W.parse_now("2026-12-05 02:30:00+0000") == W.parse_now(1796437800)
    for bad, text in (("yesterday", "or epoch seconds"), ("", "got ''"), (True, "got True"), (None, "got None")):
        with pytest.raises(W.WindowError) as exc:
            W.parse_now(bad)
        assert exc.value.key == "now" and text in str(exc.value) and str(exc.value).startswith("now: clock must be")


def test_opt_out_record_names_the_decision(monkeypatch):
    monkeypatch.setenv("USER", "oncall")
    r = run_decide(args(allow_unaudited=True), {"b": BERLIN}, "2026-12-05T02:30:00Z", audited=False)
    assert r["allowed"] and r["unaudited_opt_out"] is True
    rec = opt_out_record(r, {"playbook_dir": "/pb", "ansible_play_name": "p"})
    assert rec["event"] == "unaudited_opt_out" and rec["user"] == "oncall" and rec["decision"] == "window"
    assert rec["hosts"] == ["b"] and rec["change_id"] == "CHG-1" and rec["window"] == "weekend-night"
    assert json.loads(json.dumps(rec)) == rec and os.sep in rec["playbook"]
