# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``nvidia-smi -q -x`` parser: every real sample, the three ECC layouts, truncation, errors, fuzz."""

from __future__ import annotations

import glob
import os

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.nvsmi_xml import parse, recovery_action

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
XML_DIR = os.path.join(FIX, "nvidia-smi-xml")
ERR_DIR = os.path.join(FIX, "nvidia-smi-errors")


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _sample(name):
    return _read(os.path.join(XML_DIR, name))


# name -> (count, gpus, {dotted path of gpus[0]: value})
EXPECTED = {
    "datakit-8xv100s-pcie-460.73.01.xml": (
        8,
        8,
        {
            "bus_id": "00000000:00:0D.0",
            "serial": "1562920006088",
            "ecc.layout": "legacy",
            "ecc.volatile.corrected": 0,
            "ecc.aggregate.uncorrected": 0,
            "retired_pages.supported": True,
            "retired_pages.sbe": 0,
            "retired_pages.pending": False,
            "remapped_rows.supported": False,
            "power.draw_w": 232.8,
            "power.limit_w": 250.0,
            "temperature.gpu_c": 66,
            "temperature.shutdown_c": 90,
            "temperature.slowdown_c": 87,
            "utilization.gpu_pct": 97,
            "memory.used_mib": 31689,
            "pcie.gen_current": 3,
            "pcie.width_current": 16,
            "persistence_mode": False,
        },
    ),
    "datakit-v100-pcie-460.39.xml": (1, 1, {"name": "Tesla V100-PCIE-32GB", "power.draw_w": 170.16}),
    "netdata-a100-sxm4-40gb-510.47.03-mig.xml": (
        1,
        1,
        {"mig_mode.current": True, "remapped_rows.supported": False, "ecc.layout": "sram_dram", "throttle.active": []},
    ),
    "netdata-rtx4090-535.86.05.xml": (
        1,
        1,
        {
            "pcie.gen_current": 1,
            "pcie.gen_max": 3,
            "temperature.tlimit_c": 43,
            "temperature.shutdown_tlimit_c": -7,
            "temperature.shutdown_c": None,
            "power.draw_w": 26.84,
            "power.limit_w": 450.0,
            "remapped_rows.histogram.max": 192,
        },
    ),
    "telegraf-2xrtxa5000-590.44.01-v13.xml": (
        2,
        2,
        {
            "ecc.layout": "sram_split",
            "ecc.mode_current": False,
            "power.draw_w": 6.41,
            "power.instant_w": 6.52,
            "recovery_action": "none",
            "remapped_rows.histogram.max": 192,
            "throttle.active": ["gpu_idle"],
            "processes.0.pid": 100477,
        },
    ),
    "telegraf-4xa100-sxm4-535.54.03-mig.xml": (
        4,
        1,
        {
            "serial": "1650522003820",
            "ecc.volatile.corrected": 0,
            "ecc.volatile.uncorrected": 0,
            "temperature.memory_c": 44,
            "power.draw_w": 67.03,
            "remapped_rows.supported": False,
            "reset_status.reset_required": False,
            "fabric": None,
        },
    ),
    "telegraf-a10g-515.105.01.xml": (
        1,
        1,
        {
            "pcie.width_current": 8,
            "pcie.width_max": 16,
            "throttle.active": ["gpu_idle"],
            "remapped_rows.supported": True,
        },
    ),
    "telegraf-gt1030-470.74.xml": (1, 1, {"pcie.width_max": 4, "power.draw_w": None, "power.limit_w": 30.0}),
    "telegraf-quadro-p400-418.43.xml": (
        1,
        1,
        {"name": "Quadro P400", "ecc.layout": "legacy", "ecc.volatile.corrected": None, "mig_mode.current": None},
    ),
    "telegraf-rtx3090-525.147.05-v12-old-power.xml": (
        1,
        1,
        {"power.limit_w": 200.0, "power.default_limit_w": 350.0, "power.max_limit_w": 375.0, "power.draw_w": 27.23},
    ),
    "telegraf-rtx4000sff-ada-595.84-v13.xml": (
        1,
        1,
        {"power.draw_w": 8.81, "remapped_rows.histogram.max": 96, "ecc.mode_current": False, "serial": "REDACTED"},
    ),
}


def _get(obj, dotted):
    for part in dotted.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


def test_every_sample_is_covered():
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(XML_DIR, "*.xml")))
    assert names == sorted(EXPECTED)
    for name in names:
        assert os.path.exists(os.path.join(XML_DIR, name[:-4] + ".source.txt"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_samples(name):
    count, n, values = EXPECTED[name]
    res = parse(_sample(name), name)
    assert res["errors"] == []
    assert res["count"] == count
    assert len(res["gpus"]) == n
    for g in res["gpus"]:
        assert g["readable"] is True
        assert g["bus_id"] and g["uuid"].startswith("GPU-")
        assert g["driver_version"] == res["driver_version"]
    assert [g["index"] for g in res["gpus"]] == list(range(n))
    for path, want in values.items():
        got = _get(res["gpus"][0], path)
        if isinstance(want, float):
            assert got == pytest.approx(want), path
        else:
            assert got == want, path


def test_sw_power_cap_active_on_two_of_eight_v100s():
    res = parse(_sample("datakit-8xv100s-pcie-460.73.01.xml"))
    capped = [g["bus_id"] for g in res["gpus"] if "sw_power_cap" in g["throttle"]["active"]]
    assert capped == ["00000000:00:10.0", "00000000:00:13.0"]
    # Old container name, same normalized names; raw keeps the printed element names.
    assert "clocks_throttle_reason_sw_power_cap" in res["gpus"][3]["throttle"]["raw"]


def test_throttle_names_are_the_same_before_and_after_r535():
    old = _sample("telegraf-a10g-515.105.01.xml").replace(
        "<clocks_throttle_reason_hw_slowdown>Not Active", "<clocks_throttle_reason_hw_slowdown>Active"
    )
    new = _sample("telegraf-2xrtxa5000-590.44.01-v13.xml").replace(
        "<clocks_event_reason_hw_slowdown>Not Active", "<clocks_event_reason_hw_slowdown>Active"
    )
    assert parse(old)["gpus"][0]["throttle"]["active"] == ["gpu_idle", "hw_slowdown"]
    assert parse(new)["gpus"][0]["throttle"]["active"] == ["gpu_idle", "hw_slowdown"]


def _ecc_doc(volatile, aggregate, extra=""):
    return (
        '<?xml version="1.0" ?><nvidia_smi_log><driver_version>1</driver_version><attached_gpus>1</attached_gpus>'
        '<gpu id="00000000:01:00.0"><uuid>GPU-1</uuid><ecc_mode><current_ecc>Enabled</current_ecc></ecc_mode>'
        "<ecc_errors><volatile>%s</volatile><aggregate>%s</aggregate>%s</ecc_errors></gpu></nvidia_smi_log>"
        % (volatile, aggregate, extra)
    )


def test_ecc_legacy_layout_uses_the_totals():
    bits = "<single_bit><device_memory>%d</device_memory><total>%d</total></single_bit>"
    bits += "<double_bit><device_memory>%d</device_memory><total>%d</total></double_bit>"
    g = parse(_ecc_doc(bits % (0, 0, 0, 0), bits % (3, 3, 1, 1)))["gpus"][0]
    assert g["ecc"]["layout"] == "legacy"
    assert g["ecc"]["volatile"] == {"corrected": 0, "uncorrected": 0}
    assert g["ecc"]["aggregate"] == {"corrected": 3, "uncorrected": 1}


def test_ecc_flat_sram_dram_layout_sums_sram_and_dram():
    leaf = (
        "<sram_correctable>%d</sram_correctable><sram_uncorrectable>%d</sram_uncorrectable>"
        "<dram_correctable>%d</dram_correctable><dram_uncorrectable>%d</dram_uncorrectable>"
    )
    g = parse(_ecc_doc(leaf % (1, 2, 10, 20), leaf % (100, 0, 5, 7)))["gpus"][0]
    assert g["ecc"]["layout"] == "sram_dram"
    assert g["ecc"]["volatile"] == {"corrected": 11, "uncorrected": 22}
    assert g["ecc"]["aggregate"] == {"corrected": 105, "uncorrected": 7}


def test_ecc_split_sram_layout_adds_parity_and_secded():
    leaf = (
        "<sram_correctable>%d</sram_correctable><sram_uncorrectable_parity>%d</sram_uncorrectable_parity>"
        "<sram_uncorrectable_secded>%d</sram_uncorrectable_secded><dram_correctable>%d</dram_correctable>"
        "<dram_uncorrectable>%d</dram_uncorrectable>"
    )
    extra = (
        "<channel_repair_pending>Yes</channel_repair_pending><tpc_repair_pending>No</tpc_repair_pending>"
        "<unrepairable_memory>N/A</unrepairable_memory>"
    )
    agg = leaf % (0, 1, 2, 3, 4) + "<sram_threshold_exceeded>Yes</sram_threshold_exceeded>"
    g = parse(_ecc_doc(leaf % (5, 0, 0, 6, 0), agg, extra))["gpus"][0]
    assert g["ecc"]["layout"] == "sram_split"
    assert g["ecc"]["volatile"] == {"corrected": 11, "uncorrected": 0}
    assert g["ecc"]["aggregate"] == {"corrected": 3, "uncorrected": 7}
    assert g["ecc"]["sram_threshold_exceeded"] is True
    assert g["ecc"]["channel_repair_pending"] is True
    assert g["ecc"]["tpc_repair_pending"] is False
    assert g["ecc"]["unrepairable_memory"] is None


def test_remap_pending_and_failure_and_histogram():
    text = (
        _sample("telegraf-a10g-515.105.01.xml")
        .replace("<remapped_row_unc>0<", "<remapped_row_unc>4<")
        .replace("<remapped_row_pending>No<", "<remapped_row_pending>Yes<")
        .replace("<remapped_row_failure>No<", "<remapped_row_failure>Yes<")
    )
    rr = parse(text)["gpus"][0]["remapped_rows"]
    assert rr["uncorrectable"] == 4 and rr["pending"] is True and rr["failure"] is True
    assert rr["histogram"]["max"] is not None


def test_truncated_inside_sixth_gpu_keeps_five_and_reports():
    text = _sample("datakit-8xv100s-pcie-460.73.01.xml")
    starts = [i for i in range(len(text)) if text.startswith("<gpu id=", i)]
    cut = text[: starts[5] + 4000]
    with pytest.raises(ParseError) as info:
        parse(cut, "cut.xml")
    err = info.value
    assert "truncated" in err.message
    assert err.parser == "nvsmi_xml"
    assert err.line is not None
    partial = err.partial
    assert partial["count"] == 8
    assert [g["bus_id"] for g in partial["gpus"]] == ["00000000:00:%02X.0" % n for n in range(0x0D, 0x12)]
    assert all(g["readable"] for g in partial["gpus"])


@pytest.mark.parametrize("cut_at", [10, 200, 700, 5000])
def test_cut_anywhere_never_crashes(cut_at):
    text = _sample("telegraf-2xrtxa5000-590.44.01-v13.xml")[:cut_at]
    with pytest.raises(ParseError) as info:
        parse(text)
    assert info.value.partial is None or isinstance(info.value.partial["gpus"], list)


def test_malformed_value_without_tag_is_a_parse_error_with_partial():
    text = _sample("telegraf-2xrtxa5000-590.44.01-v13.xml")
    second = text.index('<gpu id="00000000:C1:00.0">')
    broken = text[:second] + text[second:].replace("<fan_speed>", "<fan_speed", 1)
    with pytest.raises(ParseError) as info:
        parse(broken)
    assert "malformed" in info.value.message
    assert len(info.value.partial["gpus"]) == 1


@pytest.mark.parametrize(
    "name,bus_id,needle",
    [
        ("marian251-gpu-is-lost.txt", "00000000:03:00.0", "GPU is lost"),
        ("nvidia-docker1553-unknown-error.txt", "00000000:09:00.0", "Unknown Error"),
    ],
)
def test_error_only_output_is_an_unreadable_gpu(name, bus_id, needle):
    res = parse(_read(os.path.join(ERR_DIR, name)), name)
    assert res["count"] == 1
    g = res["gpus"][0]
    assert (g["readable"], g["bus_id"]) == (False, bus_id)
    assert needle in g["error"]
    assert res["errors"][0]["kind"] == "unreadable"


def test_error_without_space_before_bus_id():
    res = parse("Unable to determine the device handle for GPU0000:07:00.0: Unknown Error\n")
    assert res["gpus"][0]["bus_id"] == "00000000:07:00.0"
    assert res["gpus"][0]["readable"] is False


def test_error_line_before_xml_of_the_other_gpus():
    text = "Unable to determine the device handle for GPU 0000:00:0C.0: GPU is lost.  Reboot the system\n"
    text += _sample("datakit-8xv100s-pcie-460.73.01.xml")
    res = parse(text)
    assert len(res["gpus"]) == 9
    assert res["gpus"][0]["bus_id"] == "00000000:00:0C.0" and res["gpus"][0]["readable"] is False
    assert [g["index"] for g in res["gpus"]] == list(range(9))
    assert res["gpus"][1]["serial"] == "1562920006088"


def test_whole_tool_failure_is_a_tool_error():
    res = parse(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    assert res["gpus"] == [] and res["errors"][0]["kind"] == "tool_error"
    res = parse("No devices were found\n")
    assert res["count"] == 0


@pytest.mark.parametrize("text", ["", "   \n", "garbage\x00\x01", "<html>nope</html>", '{"json": 1}'])
def test_garbage_and_empty_raise_parse_error(text):
    with pytest.raises(ParseError):
        parse(text)


def test_non_utf8_bytes_decoded_with_replacement():
    raw = _sample("telegraf-a10g-515.105.01.xml").encode("utf-8").replace(b"NVIDIA A10G", b"NVIDIA \xff\xfeA10G")
    res = parse(raw.decode("utf-8", errors="replace"))
    assert res["gpus"][0]["name"] == "NVIDIA \ufffd\ufffdA10G"


def test_huge_output_many_gpus():
    text = _sample("telegraf-2xrtxa5000-590.44.01-v13.xml")
    head, rest = text.split("<gpu ", 1)
    body, tail = ("<gpu " + rest).rsplit("</nvidia_smi_log>", 1)
    res = parse(head + body * 64 + "</nvidia_smi_log>")
    assert len(res["gpus"]) == 128
    assert res["gpus"][127]["index"] == 127


def test_doctype_with_external_entity_is_not_resolved(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("TOPSECRET")
    text = (
        '<?xml version="1.0"?><!DOCTYPE nvidia_smi_log [<!ENTITY x SYSTEM "file://%s">]>'
        '<nvidia_smi_log><gpu id="00000000:01:00.0"><product_name>&x;</product_name></gpu></nvidia_smi_log>' % secret
    )
    try:
        res = parse(text)
    except ParseError:
        return
    assert "TOPSECRET" not in str(res)


def test_recovery_action_strings_and_enums():
    assert recovery_action("None") == "none"
    assert recovery_action("Reset") == "gpu_reset"
    assert recovery_action("Reboot") == "node_reboot"
    assert recovery_action("Drain P2P") == "drain_p2p"
    assert recovery_action("Drain and Reset") == "drain_and_reset"
    assert recovery_action("N/A") is None
    assert recovery_action(2) == "node_reboot"


@seed(20261202)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=4000), st.text(max_size=40), st.integers(min_value=0, max_value=4000))
def test_fuzz_splice_only_result_or_parse_error(pos, junk, length):
    base = _sample("telegraf-4xa100-sxm4-535.54.03-mig.xml")[:6000]
    text = base[:pos] + junk + base[pos + length % 50 :]
    try:
        res = parse(text)
    except ParseError:
        return
    assert isinstance(res["gpus"], list)


def test_error_line_inside_the_document_is_found():
    text = _sample("telegraf-2xrtxa5000-590.44.01-v13.xml")
    second = text.index('\t<gpu id="00000000:C1:00.0">')
    line = "Unable to determine the device handle for GPU 0000:A1:00.0: Unknown Error\n"
    res = parse(text[:second] + line + text[second:])
    assert [(g["bus_id"], g["readable"]) for g in res["gpus"]] == [
        ("00000000:81:00.0", True),
        ("00000000:A1:00.0", False),
        ("00000000:C1:00.0", True),
    ]


def test_absurd_nesting_is_cut_not_a_recursion_error():
    deep = "<a>" * 5000 + "x" + "</a>" * 5000
    res = parse('<?xml version="1.0"?><nvidia_smi_log><gpu id="0000:01:00.0">%s</gpu></nvidia_smi_log>' % deep)
    assert res["gpus"][0]["bus_id"] == "00000000:01:00.0"
