# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``nvidia-smi -q`` text parser: every real sample, column widths, MIG, truncation, errors, fuzz."""

from __future__ import annotations

import glob
import os

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.nvsmi_text import parse

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
TXT_DIR = os.path.join(FIX, "nvidia-smi-q-text")
ERR_DIR = os.path.join(FIX, "nvidia-smi-errors")


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _sample(name):
    return _read(os.path.join(TXT_DIR, name))


def _get(obj, dotted):
    for part in dotted.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


EXPECTED = {
    "azurehpc-8gpu-page-retirement-orig.txt": (
        8,
        8,
        {
            "bus_id": "00000001:00:00.0",
            "retired_pages.supported": True,
            "retired_pages.sbe": 0,
            "retired_pages.dbe": 0,
            "retired_pages.pending": False,
            "temperature.gpu_c": None,
            "driver_version": "535.86.10",
        },
    ),
    "gpud-8xh100-535.161.08-hw-power-brake.txt": (
        8,
        8,
        {
            "bus_id": "00000000:19:00.0",
            "serial": "1650124031592",
            "name": "NVIDIA H100 80GB HBM3",
            "architecture": "Hopper",
            "throttle.active": ["hw_slowdown", "hw_power_brake_slowdown"],
            "ecc.layout": "sram_split",
            "ecc.aggregate.uncorrected": 0,
            "remapped_rows.histogram.max": 2560,
            "temperature.gpu_c": 29,
            "temperature.memory_c": 39,
            "temperature.tlimit_c": 56,
            "temperature.shutdown_tlimit_c": -8,
            "power.draw_w": 67.74,
            "power.limit_w": 700.0,
            "clocks.max_sm_mhz": 1980,
            "pcie.gen_current": 5,
            "pcie.gen_max_host": 5,
            "pcie.replay_counter": 67,
            "fabric.state": "Completed",
            "fabric.status": "Success",
            "reset_status.drain_and_reset_recommended": False,
            "mig_mode.current": False,
            "persistence_mode": True,
            "processes": [],
        },
    ),
    "gpud-8xrtx4090-535.154.05.txt": (
        8,
        8,
        {"serial": None, "ecc.mode_current": False, "ecc.volatile.corrected": None, "processes.0.pid": 58130},
    ),
    "gpud-titanv-560.35.03.txt": (
        1,
        1,
        {
            "ecc.layout": "legacy",
            "temperature.shutdown_c": 100,
            "temperature.slowdown_c": 97,
            "temperature.max_operating_c": 91,
            "temperature.memory_max_operating_c": 95,
            "remapped_rows.supported": False,
            "processes.2.name": "/opt/test",
            "processes.0.type": "G",
            "processes.0.used_mib": 142,
        },
    ),
    "nvgpuexp-h100-590.48.01-load.txt": (
        1,
        1,
        {
            "power.draw_w": 629.45,
            "power.instant_w": 588.39,
            "utilization.gpu_pct": 100,
            "recovery_action": "none",
            "fabric.clique_id": "0",
            "ecc.channel_repair_pending": False,
            "ecc.unrepairable_memory": False,
            "pcie.gen_max_host": None,
            "processes.2.name": "./gpu_burn",
            "processes.2.used_mib": 15690,
        },
    ),
    "nvgpuexp-h100-mig-590.48.01-idle.txt": (
        1,
        1,
        {"mig_mode.current": True, "ecc.volatile.corrected": 0, "memory.total_mib": 81559},
    ),
    "nvgpuexp-l40s-595.80-load.txt": (1, 1, {"power.draw_w": 110.24, "name": "NVIDIA L40S"}),
}
TRUNCATED = "gpud-h100-535.183.01-truncated-invalid.txt"


def test_every_sample_is_covered():
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(TXT_DIR, "*.txt")) if ".source." not in p)
    assert names == sorted([*EXPECTED, TRUNCATED])
    for name in names:
        assert os.path.exists(os.path.join(TXT_DIR, name[:-4] + ".source.txt"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_samples(name):
    count, n, values = EXPECTED[name]
    res = parse(_sample(name), name)
    assert res["errors"] == []
    assert (res["count"], len(res["gpus"])) == (count, n)
    assert all(g["readable"] for g in res["gpus"])
    for path, want in values.items():
        got = _get(res["gpus"][0], path)
        if isinstance(want, float):
            assert got == pytest.approx(want), path
        else:
            assert got == want, path


def test_all_eight_h100_show_the_power_brake():
    res = parse(_sample("gpud-8xh100-535.161.08-hw-power-brake.txt"))
    assert all("hw_power_brake_slowdown" in g["throttle"]["active"] for g in res["gpus"])
    assert len({g["serial"] for g in res["gpus"]}) == 8
    assert res["gpus"][7]["bus_id"] == "00000000:DB:00.0"


def test_mig_device_ecc_is_not_the_device_ecc():
    text = _sample("nvgpuexp-h100-mig-590.48.01-idle.txt")
    # Make the first MIG device report an uncorrectable SRAM error: the GPU's own counters must not change.
    mig_line = "                SRAM Uncorrectable                     : 0"
    assert mig_line in text
    res = parse(text.replace(mig_line, mig_line[:-1] + "9", 1))
    assert res["gpus"][0]["ecc"]["volatile"] == {"corrected": 0, "uncorrected": 0}


def test_colon_column_43_and_56_give_the_same_record():
    wide = _sample("nvgpuexp-h100-590.48.01-load.txt")
    narrow_lines = []
    for line in wide.splitlines():
        key, sep, value = line.partition(" : ")
        if sep and len(key) > 43:
            key = key.rstrip().ljust(42)
        narrow_lines.append(key + sep + value if sep else line)
    a = parse(wide)["gpus"][0]
    b = parse("\n".join(narrow_lines))["gpus"][0]
    assert a == b
    assert a["temperature"]["gpu_c"] == 59


def test_truncated_invalid_sample_keeps_data_and_reports():
    with pytest.raises(ParseError) as info:
        parse(_sample(TRUNCATED), TRUNCATED)
    err = info.value
    assert "truncated" in err.message and err.parser == "nvsmi_text"
    res = err.partial
    assert res["count"] == 8
    assert len(res["gpus"]) == 1
    g = res["gpus"][0]
    assert g["bus_id"] == "00000000:53:00.0"
    assert g["pcie"]["replay_counter"] == 120
    assert g["pcie"]["gen_max_host"] is None
    # 'Invalid HW Slowdown' keys are unknown: skipped, not mistaken for HW Slowdown.
    assert g["throttle"]["active"] == ["gpu_idle"]
    assert "clocks_event_reason_hw_slowdown" not in g["throttle"]["raw"]


def test_remap_pending_in_text():
    text = _sample("gpud-8xh100-535.161.08-hw-power-brake.txt")
    unc = "        Uncorrectable Error               : 0\n        Pending                           : No\n"
    assert unc in text
    text = text.replace(unc, unc.replace(": 0", ": 4").replace(": No", ": Yes"), 1)
    gpus = parse(text)["gpus"]
    rr = gpus[0]["remapped_rows"]
    assert (rr["uncorrectable"], rr["pending"], rr["failure"]) == (4, True, False)
    assert gpus[1]["remapped_rows"]["pending"] is False


@pytest.mark.parametrize("name", ["marian251-gpu-is-lost.txt", "nvidia-docker1553-unknown-error.txt"])
def test_error_only_text_is_an_unreadable_gpu(name):
    res = parse(_read(os.path.join(ERR_DIR, name)))
    assert res["gpus"][0]["readable"] is False
    assert res["gpus"][0]["bus_id"] in ("00000000:03:00.0", "00000000:09:00.0")
    assert res["errors"][0]["kind"] == "unreadable"


def test_error_line_between_gpu_blocks():
    text = _sample("gpud-8xh100-535.161.08-hw-power-brake.txt")
    block = text.index("GPU 00000000:3B:00.0")
    end = text.index("GPU 00000000:4C:00.0")
    text = text[:block] + "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n" + text[end:]
    res = parse(text)
    assert len(res["gpus"]) == 8
    lost = res["gpus"][1]
    assert (lost["bus_id"], lost["readable"], lost["index"]) == ("00000000:3B:00.0", False, 1)
    assert res["gpus"][2]["bus_id"] == "00000000:4C:00.0"
    assert [e["kind"] for e in res["errors"]] == ["unreadable"]


@pytest.mark.parametrize("text", ["", "\n\n", "hello world\nfoo bar\n", "\x00\x01\x02"])
def test_garbage_raises(text):
    with pytest.raises(ParseError):
        parse(text)


def test_non_utf8_replacement_chars_do_not_break_parsing():
    text = _sample("gpud-titanv-560.35.03.txt").replace("NVIDIA TITAN V", "NVIDIA TITAN \ufffd")
    assert parse(text)["gpus"][0]["name"] == "NVIDIA TITAN \ufffd"


def test_huge_text():
    text = _sample("gpud-8xh100-535.161.08-hw-power-brake.txt")
    head, body = text.split("GPU 00000000:19:00.0", 1)
    res = parse(head + ("GPU 00000000:19:00.0" + body) * 16)
    assert len(res["gpus"]) == 128


@seed(20261202)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=3000), st.text(max_size=60), st.integers(min_value=0, max_value=200))
def test_fuzz_splice_only_result_or_parse_error(pos, junk, length):
    base = _sample("nvgpuexp-h100-590.48.01-load.txt")[:3000]
    text = base[:pos] + junk + base[pos + length :]
    try:
        res = parse(text)
    except ParseError:
        return
    assert isinstance(res["gpus"], list)


def test_indented_error_inside_a_gpu_block_marks_that_gpu():
    text = (
        "==============NVSMI LOG==============\n\nDriver Version                            : 535.161.08\n\n"
        "Attached GPUs                             : 1\nGPU 00000000:03:00.0\n"
        "    Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost.  Reboot the system\n"
    )
    res = parse(text)
    assert [(g["bus_id"], g["readable"]) for g in res["gpus"]] == [("00000000:03:00.0", False)]
    assert res["gpus"][0]["driver_version"] == "535.161.08"
