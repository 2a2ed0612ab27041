# Tests for the dcgmi diag parser (plugins/module_utils/collectors/dcgm.py).
from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import dcgm as _dcgm
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "dcgmi-diag")
FAKE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "bin", "dcgmi"))


def fixture(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return fh.read()


# A DCGM 3.x failure in the layout formats.md section 9 describes (Targeted Power, GPU 1 fails, wrapped warning).
DCGM3_FAIL = """Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 3.3.9                                          |
| Driver Version Detected   | 570.195.03                                     |
| GPU Device IDs Detected   | 2237,2237,2237,2237                            |
|-----  Deployment  --------+------------------------------------------------|
| Denylist                  | Pass                                           |
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - All                                     |
+-----  Stress  ------------+------------------------------------------------+
| Targeted Power            | Pass - GPUs: 0, 2, 3                           |
|                           | Fail - GPU: 1                                  |
| Warning                   | GPU 1 Max power of 224.1 did not reach desire  |
|                           | d power minimum targeted_power.target_power_m  |
|                           | in_ratio of 225.0 for GPU 1.                   |
| Memory Bandwidth          | Skip - All                                     |
+---------------------------+------------------------------------------------+
"""

DCGM4_FAIL = """+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 4.2.3                                          |
| GPU Device IDs Detected   | 2330, 2330                                     |
+-----  Stress  ------------+------------------------------------------------+
| targeted_stress           | Fail                                           |
|                           | GPU0: Pass                                     |
|                           | GPU1: Fail                                     |
| Warning: GPU1             | Detected clock throttling                      |
| memory_bandwidth          | Warn                                           |
|                           | GPU0: Warn                                     |
|                           | GPU1: Pass                                     |
+---------------------------+------------------------------------------------+
"""


def test_dcgm3_pass_all_expands_to_device_count():
    r = _dcgm.parse_diag(fixture("aws-p4de-8xa100-dcgm333-r2-nvlinks-expected.txt"))
    assert (r["layout"], r["overall"], r["level"], r["version"]) == ("dcgm3", "pass", 2, "3.3.3")
    assert [t["name"] for t in r["tests"]][:3] == ["Denylist", "NVML Library", "CUDA Main Library"]
    assert len(r["tests"]) == 11
    assert {t["category"] for t in r["tests"]} == {"Deployment", "Integration", "Hardware"}
    assert r["gpus"] == {str(i): "pass" for i in range(8)}
    assert r["errors"] == [] and r["driver_version"] == "535.104.12"


def test_dcgm4_per_gpu_rows():
    r = _dcgm.parse_diag(fixture("dcgm-userguide-4.0-r3-per-gpu-pass.txt"))
    assert (r["layout"], r["overall"], r["level"]) == ("dcgm4", "pass", 3)
    assert [t["name"] for t in r["tests"]] == [
        "software",
        "memory",
        "diagnostic",
        "pcie",
        "memory_bandwidth",
        "targeted_stress",
        "targeted_power",
    ]
    assert all(t["gpus"] == {"0": "pass", "1": "pass", "2": "pass", "3": "pass"} for t in r["tests"])
    assert r["gpu_device_ids"] == ["25b6"] * 4


def test_dcgm4_fail_with_wrapped_warning():
    r = _dcgm.parse_diag(fixture("dcgm-issue254-v100-dcgm441-pcie-fail.txt"))
    assert (r["layout"], r["overall"]) == ("dcgm4", "fail")
    (test,) = r["tests"]
    assert (test["name"], test["category"], test["result"]) == ("pcie", "Integration", "fail")
    assert test["messages"] == [
        "There was an internal error during the test: 'A child process (2378806) exited with non-zero status 1' "
        "Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics."
    ]
    assert r["errors"] == []


def test_deployment_error_marks_the_gpu_failed():
    r = _dcgm.parse_diag(fixture("ml-engineering-deployment-error-row-remap-pending.txt"))
    assert r["overall"] == "fail"
    assert r["gpus"] == {"3": "fail"}
    assert r["tests"][0]["messages"] == ["GPU 3 has uncorrectable memory errors and row remappings are pending"]
    assert r["errors"] == []


def test_could_not_run_is_a_tool_error_not_a_gpu_failure():
    r = _dcgm.parse_diag(fixture("dcgm-issue254-plugin-dir-error.txt"), "f")
    assert r["overall"] is None and r["tests"] == [] and r["gpus"] == {}
    assert [e["kind"] for e in r["errors"]] == ["tool_error", "tool_error"]
    assert "Return: (-30)" in r["errors"][0]["message"] and r["errors"][1]["line"] == 2


def test_dcgm3_partial_gpu_lists_and_wrapped_warning():
    r = _dcgm.parse_diag(DCGM3_FAIL)
    assert r["layout"] == "dcgm3" and r["level"] == 3 and r["overall"] == "fail"
    tp = [t for t in r["tests"] if t["name"] == "Targeted Power"][0]
    assert tp["gpus"] == {"0": "pass", "1": "fail", "2": "pass", "3": "pass"} and tp["result"] == "fail"
    assert tp["messages"] == [
        "GPU 1 Max power of 224.1 did not reach desired power minimum targeted_power.target_power_min_ratio of "
        "225.0 for GPU 1."
    ]
    assert r["gpus"] == {"0": "pass", "1": "fail", "2": "pass", "3": "pass"}
    mb = [t for t in r["tests"] if t["name"] == "Memory Bandwidth"][0]
    assert mb["result"] == "skip"


def test_dcgm4_warn_and_named_warning_row():
    r = _dcgm.parse_diag(DCGM4_FAIL)
    assert r["layout"] == "dcgm4" and r["overall"] == "fail"
    assert r["gpus"] == {"0": "warn", "1": "fail"}
    assert r["tests"][0]["messages"] == ["GPU 1: Detected clock throttling"]
    assert r["tests"][1]["result"] == "warn"


def test_empty_garbage_truncated():
    for bad in ("", "   \n", "garbage\nmore garbage", "\x00\xff"):
        with pytest.raises(ParseError):
            _dcgm.parse_diag(bad)
    # Truncated in the middle of a test: what was read is kept.
    text = DCGM3_FAIL[: DCGM3_FAIL.index("| Warning")]
    r = _dcgm.parse_diag(text)
    assert r["overall"] == "fail" and r["gpus"]["1"] == "fail"
    with pytest.raises(ParseError):
        _dcgm.parse_diag(None)
    r = _dcgm.from_text("nothing", "capture:dcgmi-diag.txt", None)
    assert r["errors"][0]["kind"] == "parse" and r["source"] == "capture:dcgmi-diag.txt"


def test_collect_capture(tmp_path):
    assert _dcgm.collect(capture_dir=str(tmp_path))["source"] is None
    (tmp_path / "dcgmi-diag.txt").write_bytes(fixture("dcgm-userguide-4.0-r3-per-gpu-pass.txt").encode() + b"\xff")
    r = _dcgm.collect(capture_dir=str(tmp_path))
    assert r["source"] == "capture:dcgmi-diag.txt" and r["overall"] == "pass" and r["errors"] == []


def test_collect_live_with_fake_dcgmi(tmp_path, monkeypatch):
    args = tmp_path / "args"
    monkeypatch.setenv("FAKE_DCGMI_ARGS", str(args))
    monkeypatch.setenv("FAKE_DCGMI_FIXTURE", os.path.join(FIX, "dcgm-issue254-v100-dcgm441-pcie-fail.txt"))
    monkeypatch.setenv("FAKE_DCGMI_RC", "226")
    r = _dcgm.collect(run_level=2, timeout=10, dcgmi_path=FAKE)
    assert args.read_text().split() == ["diag", "-r", "2"]
    assert (r["source"], r["level"], r["overall"]) == ("dcgmi", 2, "fail")
    monkeypatch.setenv("FAKE_DCGMI_FIXTURE", "/dev/null")
    r = _dcgm.collect(run_level=1, timeout=10, dcgmi_path=FAKE)
    assert [e["kind"] for e in r["errors"]] == ["tool_error"] and "exit 226" in r["errors"][0]["message"]
    monkeypatch.setenv("FAKE_DCGMI_SLEEP", "20")
    r = _dcgm.collect(run_level=1, timeout=0.5, dcgmi_path=FAKE)
    assert [e["kind"] for e in r["errors"]] == ["timeout"] and r["overall"] is None
    r = _dcgm.collect(dcgmi_path=str(tmp_path / "nope"))
    assert [e["kind"] for e in r["errors"]] == ["missing"]


@seed(20261202)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.text(max_size=60),
            st.sampled_from(DCGM3_FAIL.splitlines(True) + DCGM4_FAIL.splitlines(True) + ["Error: x\n", "|", "| |"]),
        ),
        max_size=25,
    )
)
def test_fuzz_never_raises_anything_but_parse_error(parts):
    try:
        r = _dcgm.parse_diag("".join(parts))
    except ParseError:
        return
    json.dumps(r)
    assert r["overall"] in (None, "pass", "fail", "warn")


def test_json_best_effort():
    obj = {
        "version": "3.3.9",
        "DCGM GPU Diagnostic": {
            "test_categories": [
                {"category": "Deployment", "tests": [{"name": "Denylist", "results": [{"status": "Pass"}]}]},
                {
                    "category": "Stress",
                    "tests": [
                        {
                            "name": "Targeted Power",
                            "results": [
                                {"gpu_ids": "0", "status": "Pass"},
                                {"gpu_ids": "1", "status": "Fail", "warnings": [{"warning": "GPU 1 max power low"}]},
                            ],
                        }
                    ],
                },
            ]
        },
    }
    r = _dcgm.parse_diag(json.dumps(obj))
    assert (r["overall"], r["layout"], r["level"], r["version"]) == ("fail", "dcgm3", 3, "3.3.9")
    assert r["gpus"] == {"0": "pass", "1": "fail"}
    assert r["tests"][1]["messages"] == ["GPU 1 max power low"]
    for bad in ("{", "{}", '{"DCGM Diagnostic": {"test_categories": "x"}}', "[]"):
        with pytest.raises(ParseError):
            _dcgm.parse_diag(bad)
    r = _dcgm.parse_diag('{"DCGM Diagnostic": {"test_categories": [1, {"tests": [null, {"name": "pcie"}]}]}}')
    assert r["tests"][0]["name"] == "pcie" and r["overall"] is None


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from(["Pass", "Fail", "0,1", "x", "Warn"]),
    lambda kids: st.lists(kids, max_size=3)
    | st.dictionaries(
        st.sampled_from(["DCGM Diagnostic", "test_categories", "tests", "name", "results", "status", "gpu_ids",
                         "warnings", "category", "test_summary", "version"]),
        kids,
        max_size=4,
    ),
    max_leaves=15,
)  # fmt: skip


@seed(20261203)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_JSON)
def test_fuzz_json(obj):
    try:
        r = _dcgm.parse_diag_json(obj)
    except ParseError:
        return
    json.dumps(r)
