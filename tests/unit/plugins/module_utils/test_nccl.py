# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""all_reduce_perf parser (_nccl.py): every fixture in tests/fixtures/nccl, broken inputs, a fuzz test, collect()."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import nccl as _nccl
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "nccl"


def _read(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


def test_every_fixture_has_a_sidecar_and_is_tested():
    data = sorted(p.name for p in FIX.glob("*.txt") if not p.name.endswith(".source.txt"))
    assert len(data) == 7
    for name in data:
        side = FIX / name.replace(".txt", ".source.txt")
        assert side.exists(), name
        assert "NCCL tests documentation" in side.read_text()
    assert set(data) == set(CASES) | {"allreduce-truncated.txt", "allreduce-cuda-failure.txt"}


CASES = {
    # name: (ngpus, ranks, hosts, rows, avg, max_busbw approx, wrong, oob)
    "allreduce-1node-8xh100.txt": (8, 8, ["gpu-node-01"], 25, 94.0412, 469.0, 0, 0),
    "allreduce-2node-16rank-large.txt": (1, 16, ["gpu-node-01", "gpu-node-02"], 4, 389.1529, 390.0, 0, 0),
    "allreduce-old-error-column.txt": (8, 8, ["dgx-a100-01"], 21, 24.6042, 167.15, 0, 0),
    "allreduce-wrong-results.txt": (8, 8, ["gpu-node-03"], 4, 258.6549, 437.12, 24, 24),
    "allreduce-low-busbw.txt": (8, 8, ["gpu-node-04"], 4, 119.9139, 120.0, 0, 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_valid_fixtures(name):
    ngpus, nranks, hosts, nrows, avg, peak, wrong, oob = CASES[name]
    r = _nccl.parse(_read(name), name)
    assert r["errors"] == []
    assert r["complete"] is True
    assert r["ngpus"] == ngpus
    assert len(r["ranks"]) == nranks
    assert r["hosts"] == hosts
    assert len(r["rows"]) == nrows
    assert r["avg_busbw_gbps"] == pytest.approx(avg, abs=1e-3)
    assert r["max_busbw_gbps"] == pytest.approx(peak, rel=0.03)
    assert r["wrong"] == wrong
    assert r["out_of_bounds"] == oob
    assert r["peak_size_b"] == r["rows"][-1]["size_b"]
    assert r["rows"][0]["type"] == "float" and r["rows"][0]["redop"] == "sum"


def test_row_details_and_ranks():
    r = _nccl.parse(_read("allreduce-1node-8xh100.txt"))
    assert r["min_bytes"] == 8 and r["max_bytes"] == 128 << 20
    assert r["ranks"][3] == {
        "rank": 3,
        "pid": 51003,
        "host": "gpu-node-01",
        "device": 3,
        "bus": "0x4e",
        "name": "NVIDIA H100 80GB HBM3",
    }
    last = r["rows"][-1]
    assert last["size_b"] == 134217728 and last["count"] == 33554432 and last["root"] == -1
    assert last["out"]["busbw_gbps"] > last["in"]["busbw_gbps"] > 400


def test_old_layout_error_column_is_not_counted_as_wrong():
    r = _nccl.parse(_read("allreduce-old-error-column.txt"))
    assert r["rows"][0]["root"] is None
    assert r["rows"][0]["out"]["wrong"] == 0.0
    assert r["wrong"] == 0


def test_wrong_rows_named():
    r = _nccl.parse(_read("allreduce-wrong-results.txt"))
    bad = [row["size_b"] for row in r["rows"] if row["out"]["wrong"]]
    assert bad == [16 << 20]


def test_truncated_keeps_rows_and_reports():
    r = _nccl.parse(_read("allreduce-truncated.txt"), "t")
    assert len(r["rows"]) == 5
    assert r["complete"] is False and r["avg_busbw_gbps"] is None
    kinds = sorted(e["message"] for e in r["errors"])
    assert len(kinds) == 2
    assert any("truncated result row" in m for m in kinds)
    assert any("Avg bus bandwidth" in m for m in kinds)


def test_cuda_failure_lines_collected():
    r = _nccl.parse(_read("allreduce-cuda-failure.txt"))
    assert r["rows"] == [] and len(r["ranks"]) == 2
    assert len(r["failures"]) == 2
    assert "unspecified launch failure" in r["failures"][0]


@pytest.mark.parametrize(
    "text",
    ["", "garbage\nmore garbage\n", "\x00\x01\x02", "NCCL INFO Bootstrap : Using eth0\n"],
)
def test_garbage_raises(text):
    with pytest.raises(ParseError) as exc:
        _nccl.parse(text, "x")
    assert exc.value.parser == "nccl_all_reduce"


def test_broken_middle_row_is_an_error_entry_with_line():
    """Issue 12 item 6: a broken row costs that row (an error entry with its line), not the whole result."""
    lines = _read("allreduce-low-busbw.txt").splitlines()
    whole = _nccl.parse("\n".join(lines), "f")
    idx = next(i for i, ln in enumerate(lines) if ln.strip().startswith("1073741824"))
    lines[idx] = "  1073741824   268435456  float  sum  -1  12.0"
    res = _nccl.parse("\n".join(lines), "f")
    assert [e["line"] for e in res["errors"] if e["kind"] == "parse"] == [idx + 1]
    assert len(res["rows"]) == len(whole["rows"]) - 1
    assert 1073741824 not in [r["size_b"] for r in res["rows"]]


def test_non_number_busbw_is_an_error_entry():
    lines = _read("allreduce-low-busbw.txt").splitlines()
    row = next(ln for ln in lines if ln.strip().startswith("1073741824"))
    bad = row.split()
    bad[7] = "abc"
    text = "\n".join(ln if ln != row else "  ".join(bad) for ln in lines)
    res = _nccl.parse(text)
    assert any("busbw" in e["message"] and e["kind"] == "parse" for e in res["errors"])
    assert res["rows"] and 1073741824 not in [r["size_b"] for r in res["rows"]]


def test_not_text_and_huge():
    with pytest.raises(ParseError):
        _nccl.parse(b"bytes")  # type: ignore[arg-type]
    huge = _read("allreduce-1node-8xh100.txt") * 200
    r = _nccl.parse(huge)
    assert len(r["rows"]) == 25 * 200


def test_non_utf8_capture(tmp_path):
    (tmp_path / _nccl.CAPTURE_FILE).write_bytes(b"\xff\xfe# nThread 1 nGpus 8 \xc3(")
    r = _nccl.collect(capture_dir=str(tmp_path))
    assert r["rows"] == [] and len(r["errors"]) == 1 and r["errors"][0]["kind"] == "parse"


@seed(20261202)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_read("allreduce-wrong-results.txt").splitlines()),
            st.text(alphabet="0123456789 .-#eE+abcNA/", max_size=80),
        ),
        max_size=25,
    )
)
def test_fuzz_result_or_parse_error(lines):
    try:
        r = _nccl.parse("\n".join(lines))
    except ParseError:
        return
    assert isinstance(r["rows"], list) and isinstance(r["errors"], list)


# -- collect ------------------------------------------------------------------------------------------------


def test_collect_capture(tmp_path):
    (tmp_path / _nccl.CAPTURE_FILE).write_text(_read("allreduce-low-busbw.txt"))
    r = _nccl.collect(capture_dir=str(tmp_path))
    assert r["source"] == "capture:nccl-all-reduce.txt" and len(r["rows"]) == 4 and r["errors"] == []
    missing = _nccl.collect(capture_dir=str(tmp_path / "nope"))
    assert missing["errors"][0]["kind"] == "missing"


def _fake(tmp_path, body: str) -> str:
    exe = tmp_path / "all_reduce_perf"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_collect_runs_tool_with_args_and_env(tmp_path):
    src = FIX / "allreduce-2node-16rank-large.txt"
    exe = _fake(tmp_path, 'echo "$NCCL_IB_HCA $*" > %s/args; cat %s\n' % (tmp_path, src))
    r = _nccl.collect(path=exe, timeout=10, env={"NCCL_IB_HCA": "mlx5_3"}, min_bytes="1G", max_bytes="8G", gpus=8)
    assert r["errors"] == [] and len(r["rows"]) == 4
    assert (tmp_path / "args").read_text().split() == ["mlx5_3", "-b", "1G", "-e", "8G", "-f", "2", "-g", "8"]


def test_collect_timeout_keeps_partial_rows(tmp_path):
    head = "\n".join(_read("allreduce-1node-8xh100.txt").splitlines()[:20])
    exe = _fake(tmp_path, "cat <<'X'\n%s\nX\nsleep 30\n" % head)
    r = _nccl.collect(path=exe, timeout=1.0)
    assert [e["kind"] for e in r["errors"]] == ["parse", "timeout"]
    assert len(r["rows"]) == 5
    assert r["duration_s"] < 10


def test_collect_tool_error_and_missing(tmp_path):
    exe = _fake(tmp_path, "cat %s; exit 3\n" % (FIX / "allreduce-cuda-failure.txt"))
    r = _nccl.collect(path=exe, timeout=10)
    assert r["errors"][-1]["kind"] == "tool_error"
    assert "unspecified launch failure" in r["errors"][-1]["message"]
    r2 = _nccl.collect(path=os.path.join(str(tmp_path), "absent"), timeout=1)
    assert r2["errors"][0]["kind"] == "missing"
