# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one time parser/formatter: every form real evidence uses, and refusals instead of exceptions."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time, utcnow_iso

UTC = datetime.timezone.utc
T = datetime.datetime(2026, 12, 2, 10, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-02T10:00:00Z",
        "2026-12-02T10:00:00z",
        "2026-12-02 10:00:00Z",
        "2026-12-02T10:00:00+00:00",
        "2026-12-02T11:00:00+01:00",
        "2026-12-02T11:00:00+0100",
        "2026-12-02T05:00:00-05:00",
        "2026-12-02T10:00:00",
        "1796205600",
        1796205600,
        1796205600.0,
    ],
)
def test_forms_of_the_same_instant(text):
    assert parse_time(text) == T


def test_fractions_of_any_length_and_a_comma():
    assert parse_time("2026-12-02T10:00:00.1Z") == T.replace(microsecond=100000)
    assert parse_time("2026-12-02T10:00:00,123456789Z") == T.replace(microsecond=123456)
    assert parse_time("2026-12-02T11:00:00.5+0100") == T.replace(microsecond=500000)


@pytest.mark.parametrize(
    "bad", [None, True, "", "  ", "yesterday", "2026-13-02T10:00:00Z", "2026-12-02T10:00:00Z" * 4, "２０２６", 1e300, [], {}]
)
def test_not_a_time_is_none(bad):
    assert parse_time(bad) is None


def test_wall_clock_mode_keeps_naive_and_offsets():
    assert parse_time("2026-12-02T10:00:00", assume_utc=False).tzinfo is None
    aware = parse_time("2026-12-02T11:00:00+01:00", assume_utc=False)
    assert aware.utcoffset() == datetime.timedelta(hours=1)


def test_iso_z():
    assert iso_z(T.replace(microsecond=5)) == "2026-12-02T10:00:00Z"
    assert iso_z(T.replace(microsecond=5), "microseconds") == "2026-12-02T10:00:00.000005Z"
    assert iso_z(datetime.datetime(2026, 12, 2, 10)) == "2026-12-02T10:00:00Z"
    assert iso_z(parse_time("2026-12-02T05:00:00-05:00")) == "2026-12-02T10:00:00Z"
    assert iso_z(None) is None
    assert parse_time(utcnow_iso()) is not None and utcnow_iso().endswith("Z")
