"""Maintenance windows: validation, active/next window, DST, freezes, several hosts."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import windows as W

BERLIN_WEEKEND = {
    "name": "weekend-night",
    "weekly": {"days": ["sat", "sun"], "start": "02:00", "duration": "4h"},
    "timezone": "Europe/Berlin",
}
SUNDAY_NIGHT = {
    "name": "sunday-night",
    "weekly": {"days": ["sun"], "start": "02:00", "duration": "4h"},
    "timezone": "Europe/Berlin",
}


def utc(s):
    return W.parse_now(s)


# ---- validation -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "windows, key, words",
    [
        (
            [{"name": "a", "weekly": {"days": ["sat"], "start": "02:00", "duration": "4h"}, "tz": "UTC"}],
            "windows[0].tz",
            "unknown key",
        ),
        (
            [{"name": "a", "weekly": {"days": ["sat"], "start": "25:00", "duration": "4h"}}],
            "windows[0].weekly.start",
            "HH:MM",
        ),
        (
            [{"name": "a", "weekly": {"days": ["sat"], "start": "2:0", "duration": "4h"}}],
            "windows[0].weekly.start",
            "HH:MM",
        ),
        (
            [{"name": "a", "weekly": {"days": ["caturday"], "start": "02:00", "duration": "4h"}}],
            "windows[0].weekly.days[0]",
            "mon",
        ),
        (
            [{"name": "a", "weekly": {"days": [], "start": "02:00", "duration": "4h"}}],
            "windows[0].weekly.days",
            "non-empty",
        ),
        (
            [{"name": "a", "weekly": {"days": ["sat"], "start": "02:00", "duration": "4 hours"}}],
            "windows[0].weekly.duration",
            "4h",
        ),
        (
            [{"name": "a", "weekly": {"days": ["sat"], "start": "02:00", "duration": "0h"}}],
            "windows[0].weekly.duration",
            "positive",
        ),
        (
            [{"name": "a", "weekly": {"days": ["sat"], "start": "02:00", "duration": "40d"}}],
            "windows[0].weekly.duration",
            "31 days",
        ),
        ([{"name": "a", "weekly": {"days": ["sat"], "start": "02:00"}}], "windows[0].weekly.duration", "exactly one"),
        (
            [{"name": "a", "weekly": {"days": ["sat"], "start": "02:00", "duration": "1h", "every": 2}}],
            "windows[0].weekly.every",
            "unknown key",
        ),
        (
            [
                {
                    "name": "a",
                    "weekly": {"days": ["sat"], "start": "02:00", "duration": "1h"},
                    "timezone": "Mars/Olympus",
                }
            ],
            "windows[0].timezone",
            "unknown timezone",
        ),
        ([{"weekly": {"days": ["sat"], "start": "02:00", "duration": "1h"}}], "windows[0].name", "name"),
        ([{"name": "a", "start": "2026-12-05 late", "end": "2026-12-06T04:00"}], "windows[0].start", "YYYY-MM-DD"),
        ([{"name": "a", "start": "2026-12-05T22:00", "end": "2026-12-05T21:00"}], "windows[0].end", "not after"),
        ([{"name": "a", "start": "2026-12-05T22:00"}], "windows[0].end", "exactly one"),
        ([{"name": "a"}], "windows[0].start", "missing"),
        (
            [{"name": "a", "freeze": "yes", "start": "2026-12-05T22:00", "end": "2026-12-06T01:00"}],
            "windows[0].freeze",
            "true or false",
        ),
        (["weekend"], "windows[0]", "mapping"),
        ("weekend", "windows", "list"),
        (
            [BERLIN_WEEKEND, dict(BERLIN_WEEKEND)],
            "windows[1].name",
            "duplicate",
        ),
    ],
)
def test_validate_names_the_bad_key(windows, key, words):
    with pytest.raises(W.WindowError) as exc:
        W.validate(windows)
    assert exc.value.key == key
    assert words in str(exc.value)
    assert str(exc.value).startswith(key + ":")


def test_validate_accepts_documented_forms():
    ws = W.validate(
        [
            BERLIN_WEEKEND,
            {"name": "one-off", "start": "2026-12-05T22:00", "end": "2026-12-06T04:00", "timezone": "Europe/Berlin"},
            {"name": "dur", "start": "2026-12-07T22:00", "duration": "1h30m"},
            {"name": "nightly", "weekly": {"days": "Monday", "start": "23:00", "end": "01:00"}, "timezone": "UTC"},
            {"name": "freeze", "freeze": True, "start": "2026-12-19T00:00", "end": "2027-01-04T00:00"},
        ]
    )
    assert [w["kind"] for w in ws] == ["weekly", "dated", "dated", "weekly", "dated"]
    assert ws[0]["days"] == [5, 6]
    assert ws[1]["start"] == utc("2026-12-05T21:00:00Z")  # 22:00 CET
    assert ws[2]["end"] - ws[2]["start"] == datetime.timedelta(minutes=90)
    assert ws[3]["duration"] == datetime.timedelta(hours=2)  # 23:00 -> 01:00 crosses midnight
    assert ws[4]["freeze"] is True
    assert W.validate(None) == []


@pytest.mark.parametrize(
    "value, seconds",
    [("4h", 14400), ("90m", 5400), ("1h30m", 5400), ("2d", 172800), ("45s", 45), (3600, 3600), (" 2H ", 7200)],
)
def test_parse_duration(value, seconds):
    assert W.parse_duration(value).total_seconds() == seconds


@pytest.mark.parametrize("value", ["", "h", "4x", True, None, -5, "1.5h", [1]])
def test_parse_duration_rejects(value):
    with pytest.raises(W.WindowError):
        W.parse_duration(value)


def test_parse_now_forms():
    assert utc("2026-12-05T02:30:00Z") == datetime.datetime(2026, 12, 5, 2, 30, tzinfo=datetime.timezone.utc)
    assert utc("2026-12-05T03:30:00+01:00") == utc("2026-12-05T02:30:00Z")
    assert utc("2026-12-05T02:30:00") == utc("2026-12-05T02:30:00Z")  # naive means UTC
    assert utc(0) == datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    for bad in ("yesterday", "", None, True):
        with pytest.raises(W.WindowError):
            W.parse_now(bad)


# ---- weekly windows and timezones -----------------------------------------------------------------------
def test_weekly_active_and_remaining():
    # Saturday 2026-12-05 03:30 CET = 02:30Z: 2.5 h left of 02:00-06:00 local.
    a = W.active_window([BERLIN_WEEKEND], "2026-12-05T02:30:00Z")
    assert a["name"] == "weekend-night"
    assert a["remaining_s"] == 9000
    assert a["end"] == "2026-12-05T05:00:00+00:00"
    assert a["end_local"] == "2026-12-05T06:00:00+01:00"
    # just before the start and exactly at the end: closed
    assert W.active_window([BERLIN_WEEKEND], "2026-12-05T00:59:59Z") is None
    assert W.active_window([BERLIN_WEEKEND], "2026-12-05T05:00:00Z") is None
    # a Friday is not in the window
    assert W.active_window([BERLIN_WEEKEND], "2026-12-04T02:30:00Z") is None


def test_next_window_same_week_and_after_end():
    n = W.next_window([BERLIN_WEEKEND], "2026-12-04T12:00:00Z")  # Friday noon
    assert (n["name"], n["start"]) == ("weekend-night", "2026-12-05T01:00:00+00:00")
    assert n["starts_in_s"] == 13 * 3600
    n = W.next_window([BERLIN_WEEKEND], "2026-12-05T02:30:00Z")  # inside Saturday's: next is Sunday's
    assert n["start"] == "2026-12-06T01:00:00+00:00"
    n = W.next_window([BERLIN_WEEKEND], "2026-12-06T05:00:00Z")  # Sunday's just closed: next Saturday
    assert n["start"] == "2026-12-12T01:00:00+00:00"


def test_same_utc_instant_differs_by_timezone():
    ny = {"name": "ny", "weekly": {"days": ["sat"], "start": "22:00", "duration": "6h"}, "timezone": "America/New_York"}
    tokyo = {"name": "tk", "weekly": {"days": ["sun"], "start": "12:00", "duration": "2h"}, "timezone": "Asia/Tokyo"}
    now = "2026-12-06T04:00:00Z"  # Sat 23:00 in New York, Sun 13:00 in Tokyo, Sun 05:00 in Berlin
    assert W.active_window([ny], now)["remaining_s"] == 5 * 3600
    assert W.active_window([tokyo], now)["remaining_s"] == 3600
    assert W.active_window([BERLIN_WEEKEND], now)["remaining_s"] == 3600
    assert W.active_window([ny], "2026-12-06T02:59:00Z") is None  # 21:59 New York


def test_dst_spring_forward_slot_starts_after_the_gap():
    # 2026-03-29: Berlin jumps 02:00 CET -> 03:00 CEST. 02:00 does not exist: the slot opens at 03:00 CEST
    # (01:00Z) and still closes at 06:00 CEST (04:00Z): 3 h of real time.
    assert W.active_window([SUNDAY_NIGHT], "2026-03-29T00:59:00Z") is None
    a = W.active_window([SUNDAY_NIGHT], "2026-03-29T01:00:00Z")
    assert a["start"] == "2026-03-29T01:00:00+00:00"
    assert a["end"] == "2026-03-29T04:00:00+00:00"
    assert a["end_local"] == "2026-03-29T06:00:00+02:00"
    assert a["remaining_s"] == 3 * 3600
    # the week before (CET) it is 01:00Z-05:00Z, the week after (CEST) 00:00Z-04:00Z
    assert W.active_window([SUNDAY_NIGHT], "2026-03-22T04:30:00Z")["end"] == "2026-03-22T05:00:00+00:00"
    assert W.next_window([SUNDAY_NIGHT], "2026-03-29T05:00:00Z")["start"] == "2026-04-05T00:00:00+00:00"


def test_dst_fall_back_slot_uses_first_occurrence_and_wall_clock_end():
    # 2026-10-25: Berlin 03:00 CEST -> 02:00 CET. 02:00 happens twice: the slot opens at the first one (00:00Z)
    # and closes at 06:00 CET (05:00Z): 5 h of real time.
    assert W.next_window([SUNDAY_NIGHT], "2026-10-24T12:00:00Z")["start"] == "2026-10-25T00:00:00+00:00"
    a = W.active_window([SUNDAY_NIGHT], "2026-10-25T00:00:00Z")
    assert a["remaining_s"] == 5 * 3600
    assert a["end_local"] == "2026-10-25T06:00:00+01:00"
    assert W.active_window([SUNDAY_NIGHT], "2026-10-25T04:59:59Z")["remaining_s"] == 1
    assert W.active_window([SUNDAY_NIGHT], "2026-10-25T05:00:00Z") is None


def test_us_dst_day_one_off_window():
    # 2026-03-08 New York springs forward at 02:00; a one-off 01:00-04:00 local window is 2 h long.
    ws = [{"name": "x", "start": "2026-03-08T01:00", "end": "2026-03-08T04:00", "timezone": "America/New_York"}]
    a = W.active_window(ws, "2026-03-08T06:00:00Z")  # 01:00 EST
    assert a["remaining_s"] == 2 * 3600


# ---- freezes --------------------------------------------------------------------------------------------
FREEZE_IN_WINDOW = {
    "name": "fw-freeze",
    "freeze": True,
    "start": "2026-12-05T03:00",
    "end": "2026-12-05T04:00",
    "timezone": "Europe/Berlin",
}


def test_freeze_inside_recurring_window():
    ws = [BERLIN_WEEKEND, FREEZE_IN_WINDOW]
    # 02:30 local: window open, but the freeze at 03:00 cuts it: 30 min left, not 3.5 h
    a = W.active_window(ws, "2026-12-05T01:30:00Z")
    assert a["remaining_s"] == 1800
    assert a["end"] == "2026-12-05T02:00:00+00:00"
    # during the freeze: closed, and the freeze is reported
    assert W.active_window(ws, "2026-12-05T02:30:00Z") is None
    assert W.active_freeze(ws, "2026-12-05T02:30:00Z")["name"] == "fw-freeze"
    # the rest of the slot after the freeze (04:00-06:00 local) is the next window
    n = W.next_window(ws, "2026-12-05T02:30:00Z")
    assert (n["start"], n["end"]) == ("2026-12-05T03:00:00+00:00", "2026-12-05T05:00:00+00:00")
    assert W.active_window(ws, "2026-12-05T03:30:00Z")["remaining_s"] == 5400


def test_long_freeze_hides_weekly_windows():
    ws = [
        BERLIN_WEEKEND,
        {
            "name": "xmas",
            "freeze": True,
            "start": "2026-12-19T00:00",
            "end": "2027-01-04T00:00",
            "timezone": "Europe/Berlin",
        },
    ]
    assert W.active_window(ws, "2026-12-19T02:00:00Z") is None
    n = W.next_window(ws, "2026-12-18T12:00:00Z")
    assert n["start"] == "2027-01-09T01:00:00+00:00"  # first Saturday after the freeze


def test_weekly_freeze_overrides_one_off_window():
    ws = [
        {"name": "big", "start": "2026-12-07T00:00", "end": "2026-12-08T00:00"},
        {"name": "daily-peak", "freeze": True, "weekly": {"days": ["mon"], "start": "09:00", "duration": "8h"}},
    ]
    assert W.active_window(ws, "2026-12-07T08:00:00Z")["remaining_s"] == 3600
    assert W.active_window(ws, "2026-12-07T12:00:00Z") is None
    assert W.next_window(ws, "2026-12-07T12:00:00Z")["start"] == "2026-12-07T17:00:00+00:00"


def test_adjacent_windows_merge_and_no_window_ever():
    ws = [
        {"name": "a", "start": "2026-12-05T00:00", "end": "2026-12-05T02:00"},
        {"name": "b", "start": "2026-12-05T02:00", "end": "2026-12-05T05:00"},
    ]
    assert W.active_window(ws, "2026-12-05T01:00:00Z")["remaining_s"] == 4 * 3600
    assert W.next_window(ws, "2026-12-06T00:00:00Z") is None
    assert W.next_window([], "2026-12-06T00:00:00Z") is None


# ---- several hosts --------------------------------------------------------------------------------------
def test_common_windows_for_hosts_in_two_timezones():
    ny = {"name": "ny", "weekly": {"days": ["sat"], "start": "22:00", "duration": "6h"}, "timezone": "America/New_York"}
    by_host = {"b1": [BERLIN_WEEKEND], "b2": [BERLIN_WEEKEND], "n1": [ny]}
    # Sun 2026-12-06 04:00Z: Berlin 05:00 (1 h left), New York Sat 23:00 (5 h left): common, 1 h left
    c = W.common_windows(by_host, "2026-12-06T04:00:00Z")
    assert c["active"]["remaining_s"] == 3600
    assert c["active"]["name"] == "weekend-night+ny"
    assert c["hosts_outside"] == []
    # Sun 02:00Z: Berlin open, New York (21:00) not yet: refused, the next common slot starts at 03:00Z
    c = W.common_windows(by_host, "2026-12-06T02:00:00Z")
    assert c["active"] is None
    assert c["hosts_outside"] == ["n1"]
    assert c["next"]["start"] == "2026-12-06T03:00:00+00:00"
    assert c["next"]["end"] == "2026-12-06T05:00:00+00:00"


def test_common_windows_host_without_windows_and_bad_definition():
    c = W.common_windows({"a": [BERLIN_WEEKEND], "bare": None}, "2026-12-05T02:30:00Z")
    assert c["hosts_without_windows"] == ["bare"]
    assert c["active"] is None
    with pytest.raises(W.WindowError) as exc:
        W.common_windows({"a": [{"name": "x", "weekly": {"days": ["sat"], "start": "24:00", "duration": "1h"}}]}, 0)
    assert exc.value.key == "a.windows[0].weekly.start"


def test_many_hosts_is_fast():
    import time

    by_host = {"n%04d" % i: [BERLIN_WEEKEND, FREEZE_IN_WINDOW] for i in range(2000)}
    t = time.monotonic()
    c = W.common_windows(by_host, "2026-12-05T01:30:00Z")
    assert c["active"]["remaining_s"] == 1800
    assert time.monotonic() - t < 2  # one distinct definition is evaluated once, not 2,000 times


# ---- fuzz: any input gives a result or a WindowError ----------------------------------------------------
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.text(max_size=12))
_window = st.dictionaries(
    st.sampled_from(["name", "weekly", "start", "end", "duration", "timezone", "freeze", "zzz"]),
    st.one_of(
        _scalar,
        st.dictionaries(
            st.sampled_from(["days", "start", "duration", "end"]), st.one_of(_scalar, st.lists(_scalar, max_size=3))
        ),
        st.sampled_from(["2026-12-05T22:00", "02:00", "4h", "Europe/Berlin", "UTC"]),
    ),
    max_size=6,
)


@seed(20261202)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_scalar, st.lists(_window, max_size=3)), st.integers(0, 2**32))
def test_fuzz_validate_and_query(windows, epoch):
    try:
        ws = W.validate(windows)
    except W.WindowError:
        return
    W.active_window(ws, epoch)
    W.next_window(ws, epoch, horizon_days=20)


def test_window_error_is_a_parse_error():
    from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

    with pytest.raises(ParseError) as exc:
        W.validate([{"name": "a", "weekly": {"days": ["sat"], "start": "02:00", "duration": "4h"}, "zone": "UTC"}])
    err = exc.value.to_error("windows")
    assert err["parser"] == "windows" and err["source"] == "windows[0].zone" and "unknown key" in err["message"]
