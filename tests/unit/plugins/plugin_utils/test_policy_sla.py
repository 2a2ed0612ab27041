# -*- coding: utf-8 -*-
"""SLA targets as policy data (policy key ``sla``, docs/service.md): defaults, per-customer profiles, clear errors."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import sla as _sla


def test_the_default_policy_carries_the_service_terms():
    """The service terms (issue 39), one row per severity, written here from the terms, not from the code."""
    sla = _policy.merge_policy(None, {})["sla"]
    assert sla["targets"] == {
        "P0": {"respond": "15m", "onsite": "4h", "locate": "2h"},
        "P1": {"respond": "30m", "onsite": "next_business_day", "restore": "24h"},
        "P2": {"respond": "2h", "plan": "3bd"},
        "P3": {"respond": "1bd"},
    }
    assert sla["availability_target"] == 99.5
    assert sla["retention_days"] == 400 and sla["capacity_trigger"] == 0.7
    assert sla is not _sla.DEFAULT_SLA and sla == _sla.DEFAULT_SLA


def _epoch(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# Dates read from a calendar: 2026-12-11 is a Friday, 2026-12-24 a Thursday, 2026-12-25 a Friday, 2026-12-28 a
# Monday; Europe/Berlin leaves summer time on Sunday 2026-10-25 (CEST UTC+2 -> CET UTC+1).
@pytest.mark.parametrize(
    "start,target,calendar,expected",
    [
        # on site "the next working day": a Friday-afternoon P1 is due at the end of Monday, not of Saturday
        ("2026-12-11T16:00:00Z", "next_business_day", {}, "2026-12-15T00:00:00Z"),
        ("2026-12-11T16:00:00Z", "next_day", {}, "2026-12-13T00:00:00Z"),
        # a holiday is not a working day (Christmas Day on a Friday): Thursday + 1 working day = Monday
        ("2026-12-24T09:00:00Z", "1bd", {"holidays": ["2026-12-25"]}, "2026-12-28T09:00:00Z"),
        ("2026-12-24T09:00:00Z", "1bd", {}, "2026-12-25T09:00:00Z"),
        ("2026-12-24T09:00:00Z", "next_business_day", {"holidays": ["2026-12-25"]}, "2026-12-29T00:00:00Z"),
        # P2's plan in 3 working days from a Wednesday: Thursday, Friday, Monday
        ("2026-12-09T14:30:00Z", "3bd", {}, "2026-12-14T14:30:00Z"),
        # a weekend start counts from Monday 00:00 local
        ("2026-12-12T10:00:00Z", "1bd", {}, "2026-12-15T00:00:00Z"),
        # the contract's time zone: 10:00 Berlin summer time on Friday -> 10:00 Berlin winter time on Monday
        ("2026-10-23T08:00:00Z", "1bd", {"timezone": "Europe/Berlin"}, "2026-10-26T09:00:00Z"),
        # end of the next working day in Berlin: Tuesday 00:00 CET = Monday 23:00 UTC
        ("2026-12-11T16:00:00Z", "next_business_day", {"timezone": "Europe/Berlin"}, "2026-12-14T23:00:00Z"),
        # a working week of Sunday to Thursday: Thursday + 1 working day = Sunday
        ("2026-12-10T08:00:00Z", "1bd", {"workdays": ["SU", "MO", "TU", "WE", "TH"]}, "2026-12-13T08:00:00Z"),
        ("2026-12-11T16:00:00Z", "4h", {"timezone": "Europe/Berlin"}, "2026-12-11T20:00:00Z"),
    ],
)
def test_clock_due_times_follow_the_contract_calendar(start, target, calendar, expected):
    assert _sla.due(_epoch(start), target, _sla.Calendar(calendar)) == _epoch(expected)


def test_a_p1_detected_on_friday_afternoon_is_not_breached_on_saturday():
    incident = {"severity": "P1", "detected_at": _epoch("2026-12-11T16:00:00Z"), "acknowledged_at": None}
    rows = {c["clock"]: c for c in _sla.clocks(incident, now=_epoch("2026-12-13T12:00:00Z"))}
    assert rows["onsite"]["state"] != "breached"
    assert rows["respond"]["state"] == "breached"
    assert rows["plan"]["state"] == "none" and rows["locate"]["state"] == "none"


@pytest.mark.parametrize(
    "calendar,words",
    [
        ({"timezone": "Mars/Olympus"}, "not a known IANA time zone"),
        ({"workdays": ["MON"]}, "workdays"),
        ({"workdays": []}, "workdays"),
        ({"holidays": ["25.12.2026"]}, "not a date"),
        ({"holidays": ["2026-02-30"]}, "not a date"),
        ({"holidays": "2026-12-25"}, "list"),
    ],
)
def test_a_bad_calendar_is_refused_with_its_key(calendar, words):
    with pytest.raises(_policy.PolicyError) as err:
        _policy.merge_policy(None, {"sla": {"calendar": calendar}})
    assert "sla.calendar" in str(err.value) and words in str(err.value)


def test_a_customer_profile_and_a_site_target_override_merge_over_the_defaults():
    sla = _policy.merge_policy(
        None, {"sla": {"targets": {"P1": {"restore": "12h"}}, "profiles": {"acme": {"P0": {"restore": "1h"}}}}}
    )["sla"]
    assert _sla.targets_for("P1", sla)["restore"] == "12h"
    assert _sla.targets_for("P1", sla)["respond"] == "30m"  # the other clocks keep the contract's values
    assert _sla.targets_for("P0", sla, "acme")["restore"] == "1h"


@pytest.mark.parametrize(
    "override,key",
    [
        ({"targets": {"P1": {"restore": "soon"}}}, "sla.targets.P1.restore"),
        ({"targets": {"P2": {"restore": 5}}}, "sla.targets.P2.restore"),
        ({"targets": {"P0": {"fix": "1h"}}}, "sla.targets.P0.fix"),
        ({"targets": {"P7": {"respond": "1h"}}}, "sla.targets.P7"),
        ({"profiles": {"acme": {"P9": {"respond": "1h"}}}}, "sla.profiles.acme.P9"),
        ({"profiles": {"acme": {"P1": {"respond": "1 hour"}}}}, "sla.profiles.acme.P1.respond"),
        ({"profiles": {"acme": ["P1"]}}, "sla.profiles.acme"),
        ({"bogus": 1}, "sla.bogus"),
        ({"at_risk_share": 1.5}, "sla.at_risk_share"),
        ({"open_severities": ["P0", "P5"]}, "sla.open_severities"),
        ({"retention_days": 90}, "sla.retention_days"),
        ({"retention_days": "400"}, "sla.retention_days"),
        ({"availability_target": 101}, "sla.availability_target"),
        ({"availability_target": "99.5%"}, "sla.availability_target"),
        ({"targets": {"P2": {"onsite": "tomorrow"}}}, "sla.targets.P2.onsite"),
    ],
)
def test_bad_sla_policy_is_an_error_naming_the_key(override, key):
    with pytest.raises(_policy.PolicyError) as err:
        _policy.merge_policy(None, {"sla": override})
    assert key in str(err.value)


def test_working_days_without_dateutil_are_the_same_days(monkeypatch):
    """The node-side health check has no dateutil (stdlib only): respond-by in working days still works there and
    gives the same dates as the controller's rrule."""
    cal = _sla.Calendar({"holidays": ["2026-12-25"]})
    with_rrule = [_sla.due(_epoch(t), "1bd", cal) for t in ("2026-12-24T09:00:00Z", "2026-12-12T10:00:00Z")]
    monkeypatch.setattr(_sla, "_rrule", None)
    without = [_sla.due(_epoch(t), "1bd", cal) for t in ("2026-12-24T09:00:00Z", "2026-12-12T10:00:00Z")]
    assert without == with_rrule == [_epoch("2026-12-28T09:00:00Z"), _epoch("2026-12-15T00:00:00Z")]
    assert _sla.due(_epoch("2026-12-11T16:00:00Z"), "next_business_day", cal) == _epoch("2026-12-15T00:00:00Z")
