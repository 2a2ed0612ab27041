# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 37: generated variants of the storage outputs (the fuzz campaign of tests/unit/fuzz covers no storage
parser): lfs df with any column widths, units (-h powers of 1024, -H lower-case k), 1K-blocks, either summary
spelling, a prompt line, cut at any line; mmhealth -Y with its HEADER fields in any order plus extra fields. The
layout rules come from ../shared/reference/cluster-formats.md 5.1 and 6 (columns are whitespace-separated, the
HEADER names the fields); the expected percentages are the ones written into each generated line, never computed
by the parser under test."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import storage as sp
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import storage_gpfs as sg

SETTINGS = settings(max_examples=150, derandomize=True, deadline=None, database=None)
UNITS = ("K", "M", "G", "T", "P")


@st.composite
def lfs_df(draw):
    """(text, {target name: printed Use%}, summary Use%, mode, index of a cut line or None)."""
    mode = draw(st.sampled_from(["kib", "bytes", "bytes_si", "inodes"]))
    n_ost = draw(st.integers(1, 12))
    pcts = draw(st.lists(st.integers(0, 100), min_size=n_ost + 1, max_size=n_ost + 1))
    pad = draw(st.integers(1, 12))
    fs = draw(st.sampled_from(["scratch", "myth", "snx11168", "fs_1"]))
    head = {"kib": "1K-blocks", "bytes": "bytes", "bytes_si": "bytes", "inodes": "Inodes"}[mode]
    lines = []
    if draw(st.booleans()):
        lines.append(
            "[root@login1 ~]# lfs df%s" % {"kib": "", "bytes": " -h", "bytes_si": " -H", "inodes": " -i"}[mode]
        )
    lines.append("UUID%sAAA%sUsed%sAvailable Use%% Mounted on".replace("AAA", head) % (" " * pad, " " * pad, " " * pad))

    def val(x):
        if mode == "bytes":
            return "%.1f%s" % (x / 10.0, draw(st.sampled_from(UNITS)))
        if mode == "bytes_si":
            return "%.1fk" % (x / 10.0)
        return "%d" % x

    want = {}
    for i, pct in enumerate(pcts):
        kind, idx = ("MDT", 0) if i == 0 else ("OST", i - 1)
        name = "%s-%s%04x" % (fs, kind, idx)
        total = draw(st.integers(100, 10**9))
        gap = " " * draw(st.integers(1, 14))
        cols = [val(total), val(total * pct // 100), val(total - total * pct // 100), "%d%%" % pct]
        lines.append(
            "%s_UUID%s%s /%s[%s:%d]"
            % (name, gap, gap.join(c.rjust(draw(st.integers(0, 12))) for c in cols), fs, kind, idx)
        )
        want[name] = pct
    summary = draw(st.integers(0, 100))
    spelling = draw(st.sampled_from(["filesystem_summary:", "filesystem summary:"]))
    lines += ["", "%s %s %s %s %d%% /%s" % (spelling, val(10**9), val(10**8), val(9 * 10**8), summary, fs), ""]
    cut = draw(st.one_of(st.none(), st.integers(1, len(lines) - 1)))
    return "\n".join(lines) + "\n", want, summary, ("bytes" if mode == "bytes_si" else mode), cut


@SETTINGS
@given(case=lfs_df())
def test_lfs_df_variants_read_every_printed_percentage(case):
    text, want, summary, mode, cut = case
    (fs,) = sp.parse_lfs_df(text)
    assert fs["mode"] == mode and fs["summary"]["used_pct"] == summary
    assert {t["name"]: t["used_pct"] for t in fs["targets"]} == want


@SETTINGS
@given(case=lfs_df(), junk=st.sampled_from(["", "x" * 300, "\0\x01", "OST", "99999999999999999999999T", "%"]))
def test_lfs_df_cut_or_garbled_loses_at_most_that_line(case, junk):
    text, want, _summary, _mode, cut = case
    lines = text.splitlines()
    if cut is None:
        return
    lines = lines[:cut] + [lines[cut][: len(lines[cut]) // 2] + junk]
    errors = []
    try:
        got = sp.parse_lfs_df("\n".join(lines) + "\n", "lfs-df.txt", errors)
    except ParseError:
        return  # nothing readable left (only the prompt or the header): a whole-input error
    assert all(e["kind"] in ("parse", "tool_error") for e in errors)
    seen = {t["name"]: t["used_pct"] for fs in got for t in fs["targets"] if t["state"] == "active"}
    assert all(want[name] == pct for name, pct in seen.items())  # what was read was read right
    kept = [ln for ln in lines[:-1] if "_UUID" in ln]
    assert len(seen) >= len(kept)  # every whole row before the cut survives


HEALTH_FIELDS = ["node", "component", "entityname", "entitytype", "status", "laststatuschange"]


@SETTINGS
@given(
    order=st.permutations(HEALTH_FIELDS),
    extra=st.lists(st.sampled_from(["x", "new%3Afield", ""]), max_size=4),
    statuses=st.lists(st.sampled_from(["HEALTHY", "TIPS", "DEGRADED", "FAILED", "DEPEND"]), min_size=1, max_size=6),
)
def test_mmhealth_header_keyed_in_any_order_with_extra_fields(order, extra, statuses):
    rows = ["mmhealth:State:HEADER:version:reserved:reserved:%s:" % ":".join(order)]
    for i, status in enumerate(statuses):
        rec = {
            "node": "n%d.example.com" % i,
            "component": "GPFS",
            "entityname": "n%d.example.com" % i,
            "entitytype": "NODE",
            "status": status,
            "laststatuschange": "2026-01-01 10%3A00%3A00 UTC",
        }
        rows.append("mmhealth:State:0:1:::%s:%s" % (":".join(rec[f] for f in order), ":".join(extra + [""])))
    h = sg.parse_mmhealth("\n".join(rows) + "\n")
    assert [s["status"] for s in h["states"]] == statuses
    assert [s["node"] for s in h["states"]] == ["n%d.example.com" % i for i in range(len(statuses))]
    assert {s["since"] for s in h["states"]} == {"2026-01-01 10:00:00 UTC"}


@pytest.mark.parametrize("width", [0, 1, 40])
def test_lfs_check_any_spacing(width):
    text = "MGC10.0.0.1@o2ib%sactive.\nfs-OST0001-osc-ffff8c%sinactive.\n" % (" " * max(width, 1), " " * max(width, 1))
    assert [s["state"] for s in sp.parse_lfs_check(text)] == ["active", "inactive"]
