# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVLink -s / -e parser and the merge onto GPU records."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.nvlink import merge, parse
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.nvsmi_xml import new_record

NVL = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvlink")


def _read(name):
    with open(os.path.join(NVL, name), encoding="utf-8") as fh:
        return fh.read()


def test_every_sample_has_a_sidecar():
    for name in os.listdir(NVL):
        if not name.endswith(".source.txt"):
            assert os.path.exists(os.path.join(NVL, name[:-4] + ".source.txt"))


def test_a100_eight_gpus_twelve_links_spaces():
    res = parse(_read("gpud-a100-nvlink-status.txt"))
    assert sorted(res) == list(range(8))
    for g in res.values():
        assert len(g["links"]) == 12
        assert {lk["state"] for lk in g["links"].values()} == {"up"}
        assert {lk["speed_gbps"] for lk in g["links"].values()} == {25.0}
    assert res[0]["uuid"] == "GPU-5269b708-678a-b1a8-60f0-c90406537486"
    assert res[0]["name"] == "NVIDIA A100-SXM4-80GB"


def test_tab_indented_single_gpu_7():
    res = parse(_read("azurehpc-a100-nvlink-good-tabs.txt"))
    assert list(res) == [7]
    assert len(res[7]["links"]) == 12


def test_h100_eighteen_links():
    res = parse(_read("nvgpuexp-h100-590.48.01-nvlink-s.txt"))
    assert len(res[0]["links"]) == 18
    assert res[0]["links"][17]["speed_gbps"] == pytest.approx(26.562)


def test_dcgmi_error_table():
    res = parse(_read("dcgm-userguide-dcgmi-nvlink-e-counts.txt"))
    assert len(res[0]["links"]) == 4
    assert res[0]["links"][3]["errors"] == {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}


def test_error_counters_and_inactive_links():
    text = (
        "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-a)\n"
        "\t Link 0: Replay Errors: 0\n\t Link 0: Recovery Errors: 3\n\t Link 0: CRC Errors: 12\n\n"
        "\t Link 1: Replay Errors: 7\n"
        "-----------------------------------------\n"
        "GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-b)\n"
        "\t Link 0: <inactive>\n"
        "GPU 6: NVIDIA A100-SXM4-80GB (UUID: GPU-c)\n"
        "NVML: Unable to retrieve NVLink information as all links are inactive\n"
    )
    res = parse(text)
    assert res[0]["links"][0]["errors"] == {"replay": 0, "recovery": 3, "crc_flit": 12, "crc_data": None}
    assert res[0]["links"][1]["errors"]["replay"] == 7
    assert res[1]["links"][0]["state"] == "down"
    assert res[6]["error"].startswith("NVML: Unable to retrieve NVLink information")


def test_merge_by_uuid_then_index_and_state_plus_errors():
    gpus = [new_record(0), new_record(1)]
    gpus[0]["uuid"], gpus[1]["uuid"] = "GPU-x", "GPU-y"
    s = parse(
        "GPU 0: X (UUID: GPU-y)\n Link 0: 25 GB/s\nGPU 1: X (UUID: GPU-x)\n Link 0: 25 GB/s\n Link 1: <inactive>\n"
    )
    e = parse("GPU 1: X (UUID: GPU-x)\n Link 1: Replay Errors: 9\n")
    assert merge(gpus, s, e) == []
    assert [lk["state"] for lk in gpus[0]["nvlink"]["links"]] == ["up", "down"]
    assert gpus[0]["nvlink"]["links"][1]["errors"]["replay"] == 9
    assert len(gpus[1]["nvlink"]["links"]) == 1


def test_merge_refuses_another_nodes_output():
    gpus = [new_record(0)]
    gpus[0]["uuid"] = "GPU-real"
    notes = merge(gpus, parse("GPU 0: X (UUID: GPU-other)\n Link 0: 25 GB/s\n"))
    assert gpus[0]["nvlink"] is None
    assert "matches no GPU" in notes[0]


def test_masked_duplicate_uuids_fall_back_to_index():
    gpus = [new_record(0), new_record(1)]
    gpus[0]["uuid"] = gpus[1]["uuid"] = "GPU-00000000-0000-0000-0000-000000000000"
    merge(gpus, parse("GPU 1: X (UUID: GPU-00000000-0000-0000-0000-000000000000)\n Link 0: 25 GB/s\n"))
    assert gpus[0]["nvlink"] is None and len(gpus[1]["nvlink"]["links"]) == 1


@pytest.mark.parametrize("text", ["garbage\n", "Link 0: 25 GB/s\n", "\x00\xff"])
def test_garbage_raises(text):
    with pytest.raises(ParseError):
        parse(text)


def test_empty_is_no_data():
    assert parse("") == {}


@seed(20261202)
@settings(max_examples=80, deadline=None)
@given(st.text(max_size=300))
def test_fuzz_only_result_or_parse_error(text):
    try:
        res = parse("GPU 0: X (UUID: GPU-a)\n" + text)
    except ParseError:
        return
    assert 0 in res


# ---------------------------------------------------------------------------------- NVLink5 (issue 38)
_B300 = "GPU 0: NVIDIA B300 SXM6 AC (UUID: GPU-1)\n"


def test_nvlink5_counter_names_and_ber_values():
    """Driver 595.91.07 names (tests/fixtures/gpu-parity/SOURCE.txt); 15e-255 is NVIDIA's zero."""
    text = _B300 + "".join(
        "\t Link 0: %s\n" % line
        for line in (
            "Link recovery failed events: 1",
            "Symbol Errors: 40",
            "Effective BER: 3e-11",
            "Symbol BER: 15e-255",
            "FEC Errors - 0: 36140749276",
            "Local link integrity Errors: 0",
        )
    )
    e = parse(text)[0]["links"][0]["errors"]
    assert e["recovery_failed"] == 1 and e["symbol_errors"] == 40 and e["integrity"] == 0
    assert e["effective_ber"] == pytest.approx(3e-11)
    assert e["symbol_ber"] == 0.0
    assert e["fec_errors_0"] == 36140749276  # kept as read; bucket 0 (corrected codewords) is never judged


@pytest.mark.parametrize("value, want", [("N/A", None), ("1.5E-9", 1.5e-9), ("15E-255", 0.0)])
def test_nvlink5_ber_forms(value, want):
    e = parse(_B300 + "\t Link 2: Effective BER: %s\n" % value)[0]["links"][2]["errors"]
    assert e["effective_ber"] == (pytest.approx(want) if want else want)


@pytest.mark.parametrize("value", ["3e-", "e-11", "lots", "1e-11e-3"])
def test_nvlink5_broken_ber_is_a_parse_error_record(value):
    errors = []
    out = parse(_B300 + "\t Link 2: Effective BER: %s\n\t Link 2: Symbol Errors: 4\n" % value, "t", errors)
    assert [x["kind"] for x in errors] == ["parse"]
    assert out[0]["links"][2]["errors"]["symbol_errors"] == 4  # the lines after it still count
