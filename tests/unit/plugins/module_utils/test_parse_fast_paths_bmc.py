# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SEL and SDR fast paths (issue 41: a real node's SEL of ~400 rows took ~9 ms of the node's ~19 ms parse) give
exactly what the general path gives: ``sel_time`` on a plain ``HH:MM:SS`` vs the general date/time parse, a SEL
row's sensor/event/direction read from the per-process table vs worked out, ``state_severity``, an SDR sensor's
type (``classify``) and reading from their tables vs worked out. Real samples (tests/fixtures, each with its SOURCE
file) first, then broken, odd and hostile variants."""

from __future__ import annotations

import glob
import os

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import ipmi_sdr as _ipmi_sdr, ipmi_sel as _ipmi_sel
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")


class _NoTable(dict):
    """A table that never remembers: every lookup is worked out (the general path)."""

    def __setitem__(self, key, value):
        pass


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _outcome(fn, *args, **kwargs):
    try:
        return ("ok", fn(*args, **kwargs))
    except ParseError as exc:
        return ("error", exc.message, exc.line, getattr(exc, "partial", None))


def _general(monkeypatch):
    """The SEL and SDR parsers without their tables and the plain-time fast path."""
    monkeypatch.setattr(_ipmi_sel, "_SEMANTICS", _NoTable())
    monkeypatch.setattr(_ipmi_sdr, "_SEVERITIES", _NoTable())
    monkeypatch.setattr(_ipmi_sdr, "_CLASSES", _NoTable())
    monkeypatch.setattr(_ipmi_sdr, "_READINGS", _NoTable())
    monkeypatch.setattr(_ipmi_sel, "sel_time", lambda d, t: _ipmi_sel._sel_time((d or "").strip(), (t or "").strip()))


SEL_SAMPLES = sorted(p for p in glob.glob(os.path.join(FIX, "ipmitool-sel", "*.txt")) if not p.endswith(".source.txt"))
SDR_SAMPLES = sorted(p for p in glob.glob(os.path.join(FIX, "ipmitool-sdr", "*.txt")) if not p.endswith(".source.txt"))


def _sel_variants():
    out = []
    for path in SEL_SAMPLES:
        text = _read(path)
        name = os.path.basename(path)
        out.append((name, text))
        out.append((name + "/cut", text[: len(text) * 2 // 3]))
        out.append((name + "/twice", text + text))  # the second copy read from warm tables
        out.append((name + "/crlf", text.replace("\n", "\r\n")))
        out.append((name + "/tabs", text.replace(" | ", "\t|\t")))
    odd_rows = [
        "   1 | 02/30/2026 | 10:00:00 | Fan #0x0c | Redundancy Lost | Asserted",  # no such day
        "   2 | 13/01/2026 | 10:00:00 | Fan #0x0c | Redundancy Lost | Asserted",  # no such month
        "   3 | 03/01/0999 | 10:00:00 | Fan #0x0c | Redundancy Lost | Asserted",  # a 3-digit year
        "   4 | 03/01/2026 | 24:00:00 | Fan #0x0c | Redundancy Lost | Asserted",
        "   5 | 03/01/2026 | 23:59:60 | Fan #0x0c | Redundancy Lost | Asserted",
        "   6 | 03/01/2026 | 23:60:00 | Fan #0x0c | Redundancy Lost | Asserted",
        "   7 | 03/01/2026 | 7:05:00 | Fan #0x0c | Redundancy Lost | Asserted",
        "   8 | 03/01/2026 | 07:05:00 PM | Fan #0x0c | Redundancy Lost | Asserted",
        "   9 | 03/01/2026 | 07:05:00 CEST | Fan #0x0c | Redundancy Lost | Asserted",
        "   a | 03/01/2026 | 07:05:00 UTC+05:30 | Fan #0x0c | Redundancy Lost | Asserted",
        "   b | 2026-03-01 | 07:05:00 | Fan #0x0c | Redundancy Lost | Deasserted",
        "   c | 01.03.2026 | 07:05 | Fan #0x0c | Redundancy Lost | Asserted",
        "   d | 03/01/26 | 07:05:00 | Fan #0x0c | Redundancy Lost | Asserted",
        "   e | Pre-Init | 0000000123 | Fan #0x0c | Redundancy Lost | Asserted",
        "   f | 03/01/2026 | ab:cd:ef | Fan #0x0c | Redundancy Lost | Asserted",
        "  10 | 03/01/2026 | 07:05:00 | Voltage P3V_BAT | Lower Critical going low | Asserted | Reading 2.7.1 < Threshold 2.70",
        "  11 | 03/01/2026 | 07:05:00 | Voltage P3V_BAT | Lower Critical going low | Asserted | Reading 2.7.1 < Threshold 2.70",
        "  12 | 03/01/2026 | 07:05:00 | Leak Detect #0x70 | State Asserted | Asserted",
        "  13 | 03/01/2026 | 07:05:00 | Leak Detect #0x70 | State Asserted | Deasserted",
        "  14 | 03/01/2026 | 07:05:00 | OEM record e0 | 000000 | 112233",
        "  15 | 03/01/2026 | 07:05:00 | Fan #0xZZ | () | Asserted",
        "  16 | 03/01/2026 | 07:05:00 |  |  | ",
        "  17 | 03/01/2026 | 07:05:00 | Fan #0x0c",
        "  18 | \u0663/01/2026 | 07:05:00 | Fan #0x0c | Redundancy Lost | Asserted",  # a non-ASCII digit
    ]
    out.append(("odd-rows", "\n".join(odd_rows) + "\n"))
    out.append(("odd-rows/twice", "\n".join(odd_rows + odd_rows) + "\n"))
    return out


@pytest.mark.parametrize("name,text", _sel_variants(), ids=[v[0] for v in _sel_variants()])
def test_a_sel_reads_the_same_with_the_tables_cold_warm_and_off(monkeypatch, name, text):
    _ipmi_sel._SEMANTICS.clear()
    _ipmi_sel._DATES.clear()
    _ipmi_sdr._SEVERITIES.clear()
    errs_cold, errs_warm, errs_off = [], [], []
    cold = _outcome(_ipmi_sel.parse_sel, text, name, errs_cold)
    warm = _outcome(_ipmi_sel.parse_sel, text, name, errs_warm)
    strict = _outcome(_ipmi_sel.parse_sel, text, name)  # no errors list: raises with the partial result
    with monkeypatch.context() as m:
        _general(m)
        off = _outcome(_ipmi_sel.parse_sel, text, name, errs_off)
        strict_off = _outcome(_ipmi_sel.parse_sel, text, name)
    assert cold == warm == off
    assert errs_cold == errs_warm == errs_off
    assert strict == strict_off


def test_the_fast_paths_are_taken_on_a_real_sel():
    """The equality above would hold trivially if no row went through the tables and the plain-time path."""
    _ipmi_sel._SEMANTICS.clear()
    _ipmi_sel._DATES.clear()
    path = os.path.join(FIX, "ipmitool-sel", "intel-s2600-sel-elist-fan-psu-redundancy.txt")
    events = _ipmi_sel.parse_sel(_read(path), "s", [])
    assert _ipmi_sel._SEMANTICS and _ipmi_sel._DATES
    # the sample's own text: row 0x31's date and time column
    row = [line for line in _read(path).splitlines() if line.split("|")[0].strip() == "31"][0]
    date_s, time_s = [c.strip() for c in row.split("|")[1:3]]
    mm, dd, yyyy = date_s.split("/")
    assert [e["time"] for e in events if e["id"] == 0x31] == ["%s-%s-%sT%s" % (yyyy, mm, dd, time_s)]


@pytest.mark.parametrize(
    "date_s,time_s,expected",
    [
        ("06/29/2021", "08:18:06", "2021-06-29T08:18:06"),  # hp-dl360-ilo-sel-list-memory-ecc.txt, row 0
        ("02/29/2024", "23:59:59", "2024-02-29T23:59:59"),
        ("02/29/2023", "23:59:59", None),  # not a leap year
        ("03/01/2026", "24:00:00", None),
        ("03/01/2026", "00:00:60", None),
        ("Pre-Init", "0000000123", None),
        ("Unspecified", "", None),
        ("03/01/2026", "", None),
    ],
)
def test_sel_time_plain_values(date_s, time_s, expected):
    _ipmi_sel._DATES.clear()
    assert _ipmi_sel.sel_time(date_s, time_s) == expected
    assert _ipmi_sel.sel_time(date_s, time_s) == expected  # the date from the table


def test_the_date_table_is_bounded(monkeypatch):
    monkeypatch.setattr(_ipmi_sel, "_TABLE_MAX", 16)
    _ipmi_sel._DATES.clear()
    for day in range(1, 29):
        for month in range(1, 13):
            assert _ipmi_sel.sel_time("%02d/%02d/2025" % (month, day), "01:02:03") == "2025-%02d-%02dT01:02:03" % (
                month,
                day,
            )
    assert len(_ipmi_sel._DATES) <= 16


@pytest.mark.parametrize("path", SDR_SAMPLES, ids=[os.path.basename(p) for p in SDR_SAMPLES])
def test_an_sdr_reads_the_same_with_the_severity_table_cold_warm_and_off(monkeypatch, path):
    text = _read(path)
    for table in (_ipmi_sdr._SEVERITIES, _ipmi_sdr._CLASSES, _ipmi_sdr._READINGS):
        table.clear()
    cold = _outcome(_ipmi_sdr.parse_sdr, text, path, [])
    warm = _outcome(_ipmi_sdr.parse_sdr, text, path, [])
    with monkeypatch.context() as m:
        _general(m)
        off = _outcome(_ipmi_sdr.parse_sdr, text, path, [])
    assert cold == warm == off


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Lower Non-critical going low", "non_critical"),
        ("Lower Critical going low", "critical"),
        ("Lower Non-recoverable going low", "non_recoverable"),
        ("Power Supply AC lost", "critical"),
        ("Fully Redundant", "ok"),
        ("", "ok"),
        (None, "ok"),
    ],
)
def test_state_severity_from_the_table_is_the_severity_worked_out(text, expected):
    _ipmi_sdr._SEVERITIES.clear()
    assert _ipmi_sdr.state_severity(text) == expected
    assert _ipmi_sdr.state_severity(text) == expected
    assert _ipmi_sdr._state_severity(text) == expected


def test_the_sdr_tables_are_taken_and_bounded(monkeypatch):
    path = os.path.join(FIX, "ipmitool-sdr", "datakit-dell-r740-sdr.txt")
    for table in (_ipmi_sdr._CLASSES, _ipmi_sdr._READINGS):
        table.clear()
    _ipmi_sdr.parse_sdr(_read(path), path, [])
    assert _ipmi_sdr._CLASSES and _ipmi_sdr._READINGS
    monkeypatch.setattr(_ipmi_sdr, "_MEMO_MAX", 4)
    for i in range(50):
        assert _ipmi_sdr.classify("FAN%d" % i, "RPM") == "fan"
        assert _ipmi_sdr._reading("%d RPM" % (1000 + i)) == (1000 + i, "RPM")
    assert len(_ipmi_sdr._CLASSES) <= 4 and len(_ipmi_sdr._READINGS) <= 4
    # not plain text: worked out, not kept
    assert _ipmi_sdr.classify("FAN1", "RPM", None, 1) == "fan"
