# -*- coding: utf-8 -*-
"""Issue 12 item 6: one bad line loses at most that line, never the domain.

Each test here failed on the parsers as they were: a Unicode digit, ``2.7.1`` in a SEL reading, ``inf`` or a
``1e999`` in NCCL columns, a 5,000-digit number raised ValueError/OverflowError out of the parser, and the
collector dropped the whole domain (a real PSU failure on the same node disappeared with it).
"""

from __future__ import annotations

import os
import shutil

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    bmc as _bmc,
    collect as _collect,
    dcgm as _dcgm,
    ib as _ib,
    kernel_events as _kernel_events,
    nccl as _nccl,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import (
    ipmi as _ipmi,
    nvlink as _nvlink,
    redfish as _redfish,
    slurm as _slurm_parse,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    num_unit,
    parse_int,
    to_float,
    to_int,
)

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
HUGE = "9" * 5000


def fx(*parts):
    with open(os.path.join(FIX, *parts), encoding="utf-8") as fh:
        return fh.read()


def parse_errors(errors):
    return [e for e in errors if e["kind"] == "parse"]


# ------------------------------------------------------------------------------------------ number helpers


@pytest.mark.parametrize("text", ["²", "٣", "１２", "𝟗", "³ W", "٣.5 V"])
def test_unicode_digits_are_not_numbers(text):
    assert to_int(text) is None
    assert to_float(text) is None


@pytest.mark.parametrize("text", ["inf", "-inf", "nan", "NaN", "1e999", "-1e999", HUGE, HUGE + ".5 W"])
def test_non_finite_and_huge_are_not_numbers(text):
    assert to_int(text) is None
    assert to_float(text) is None


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 10**400, True])
def test_non_finite_python_numbers_are_not_readings(value):
    assert num_unit(value) == (None, None)


def test_ascii_numbers_still_parse():
    assert to_int("42") == 42 and to_int("0x1f") == 31 and to_int("67.9 W") == 67
    assert to_int("18446744073709551615") == 2**64 - 1
    assert to_int("0x" + "f" * 80) is None
    assert num_unit("67.03 W") == (67.03, "W") and to_float("-1.5e3 RPM") == -1500.0


@pytest.mark.parametrize("text", ["²", "٣", HUGE, "", "12a", "-"])
def test_parse_int_raises_parse_error_only(text):
    with pytest.raises(ParseError):
        parse_int(text)


def test_records_boundary_lists_and_counts():
    errors = []
    rec = Records("p", "src", "gpu", errors)
    for n in range(30):
        with rec.at(n + 1):
            raise ValueError("bad %d" % n)
    assert rec.count == 30
    assert len(errors) == 21 and errors[0]["line"] == 1 and errors[0]["kind"] == "parse"
    assert errors[-1]["message"].startswith("10 more malformed records")
    r = Records("p", "src", "gpu")
    with r.at(3):
        raise ValueError("x")
    with pytest.raises(ParseError) as exc:
        r.finish(["kept"])
    assert exc.value.partial == ["kept"] and exc.value.line == 3


# ------------------------------------------------------------------------------------------ the observed crashes


def test_sel_reading_2_7_1_keeps_the_entry_and_the_next_one():
    text = (
        " 842 | 10/20/2021 | 10:00:00 | Voltage P3V_BAT | Lower Critical going low | Asserted"
        " | Reading 2.7.1 < Threshold 2.70 Volts\n"
        " 843 | 10/20/2021 | 10:00:01 | Power Supply PS1 Status | Failure detected | Asserted\n"
    )
    errors = []
    events = _ipmi.parse_sel(text, "sel", errors)
    assert [e["id"] for e in events] == [0x842, 0x843]
    assert events[0]["reading"] is None and events[0]["severity"] == "critical"
    assert events[1]["severity"] == "critical"
    assert [e["line"] for e in parse_errors(errors)] == [1]


def test_sel_without_errors_list_raises_parse_error_with_partial():
    text = (
        " 1 | 10/20/2021 | 10:00:00 | Voltage V | Lower Critical going low | Asserted | Reading 2.7.1 < Threshold 2.7\n"
    )
    with pytest.raises(ParseError) as exc:
        _ipmi.parse_sel(text, "sel")
    assert [e["id"] for e in exc.value.partial] == [1]


def test_nvlink_unicode_digit_counter_costs_one_line():
    text = "GPU 0: NVIDIA H100 (UUID: GPU-a)\n\t Link 0: Replay Errors: ²\n\t Link 1: Replay Errors: 7\n"
    errors = []
    out = _nvlink.parse(text, "nv", errors)
    assert out[0]["links"][1]["errors"]["replay"] == 7
    assert 0 not in out[0]["links"] or out[0]["links"][0]["errors"]["replay"] is None
    assert [e["line"] for e in parse_errors(errors)] == [2]


def test_nvlink_broken_gpu_header_does_not_lend_its_links_to_the_gpu_above():
    text = "GPU 0: A (UUID: GPU-a)\n Link 0: 25 GB/s\nGPU %s: B (UUID: GPU-b)\n Link 0: <inactive>\n" % HUGE
    errors = []
    out = _nvlink.parse(text, "nv", errors)
    assert out[0]["links"][0]["state"] == "up"
    assert [e["line"] for e in parse_errors(errors)] == [3]


def test_nccl_inf_nan_and_overflow_cost_one_row_each():
    lines = fx("nccl", "allreduce-1node-8xh100.txt").splitlines()
    rows = [i for i, ln in enumerate(lines) if ln.strip()[:1].isdigit()]
    whole = _nccl.parse("\n".join(lines), "f")
    for i, bad in zip(rows[:3], ("inf", "nan", "1e999")):
        toks = lines[i].split()
        toks[-1] = bad  # the in-place #wrong column
        toks[7] = bad  # the out-of-place busbw column
        lines[i] = "  ".join(toks)
    res = _nccl.parse("\n".join(lines), "f")
    assert [e["line"] for e in parse_errors(res["errors"])] == [i + 1 for i in rows[:3]]
    assert len(res["rows"]) == len(whole["rows"]) - 3
    assert res["max_busbw_gbps"] == whole["max_busbw_gbps"]


def test_kernel_log_huge_pid_costs_one_line():
    text = (
        "[ 1.0] NVRM: Xid (PCI:0000:07:00): 79, pid=%s, name=x, GPU has fallen off the bus.\n"
        "[ 2.0] NVRM: Xid (PCI:0000:08:00): 48, pid=12, name=y, An uncorrectable double bit error\n"
    ) % HUGE
    errors = []
    events = _kernel_events.parse_kernel_log(text, "k", None, errors)
    assert [(e["code"], e["line"]) for e in events] == [(48, 2)]
    assert [e["line"] for e in parse_errors(errors)] == [1]


def test_ibstat_huge_port_number_costs_that_port():
    text = fx("ibstat", "gpud-h100-cx7-ib-some-down.txt")
    first_port = text.index("Port 1:")
    bad = text[:first_port] + "Port %s:" % HUGE + text[first_port + len("Port 1:") :]
    errors = []
    hcas = _ib.parse_ibstat(bad, "ibstat", errors)
    good = _ib.parse_ibstat(text, "ibstat")
    assert len(hcas) == len(good)
    assert sum(len(h["ports"]) for h in hcas) == sum(len(h["ports"]) for h in good) - 1
    assert len(parse_errors(errors)) == 1


def test_ibstatus_huge_port_number_costs_that_port():
    text = fx("ibstatus", "gpud-a100-ibstatus-hdr.txt")
    bad = text.replace(" port 1 status:", " port %s status:" % HUGE, 1)
    errors = []
    hcas = _ib.parse_ibstatus(bad, "ibstatus", errors)
    assert sum(len(h["ports"]) for h in hcas) == sum(len(h["ports"]) for h in _ib.parse_ibstatus(text)) - 1
    assert len(parse_errors(errors)) == 1


def test_sysfs_unicode_digit_counter_is_not_a_count():
    snap = {"mlx5_0/ports/1/state": "4: ACTIVE", "mlx5_0/ports/1/counters/symbol_error": "²"}
    hcas = _ib.hcas_from_snapshot(snap)
    assert hcas[0]["ports"][0]["counters"] == {}


def test_mc_info_unicode_digit_id():
    info = _ipmi.parse_mc_info(
        fx("ipmitool-mc-info", "hp-ilo-mc-info.txt").replace(
            "Manufacturer ID           : 11", "Manufacturer ID           : ²"
        )
    )
    assert info["manufacturer_id"] is None and info["firmware_revision"]


def test_dcgmi_unicode_digit_version_and_gpu_id():
    text = fx("dcgmi-diag", "dcgm-issue254-v100-dcgm441-pcie-fail.txt")
    good = _dcgm.parse_diag(text, "d")
    res = _dcgm.parse_diag(text.replace("| 4.4.1 ", "| ².4.1 ", 1), "d")
    assert res["tests"] and res["overall"] == good["overall"] == "fail" and res["layout"] == good["layout"]
    obj = {
        "DCGM GPU Diagnostic": {
            "test_categories": [
                {"category": "x", "tests": [{"name": "pcie", "results": [{"gpu_ids": "0,²", "status": "Fail"}]}]}
            ]
        }
    }
    assert _dcgm.parse_diag_json(obj)["gpus"] == {"0": "fail"}


def test_slurm_huge_gres_costs_one_node():
    names = sorted(n for n in os.listdir(os.path.join(FIX, "scontrol-show-node")) if not n.endswith(".source.txt"))
    text = fx("scontrol-show-node", names[0])
    nodes = _slurm_parse.parse_show_node(text)
    if len(nodes) < 2:
        text = text + "\n" + text.replace("NodeName=", "NodeName=x", 1)
        nodes = _slurm_parse.parse_show_node(text)
    bad = text.replace("NodeName=", "NodeName=", 1)
    bad = (
        bad.replace("Gres=", "Gres=gpu:%s," % HUGE, 1)
        if "Gres=" in bad
        else bad.replace("NodeName=", "Gres=gpu:%s NodeName=" % HUGE, 1)
    )
    errors = []
    got = _slurm_parse.parse_show_node(bad, "s", errors)
    assert len(got) == len(nodes) - 1 and len(parse_errors(errors)) == 1


def test_redfish_nan_and_huge_readings_are_not_numbers():
    doc = {
        "@odata.type": "#Thermal.v1_4_0.Thermal",
        "Temperatures": [
            {"Name": "a", "ReadingCelsius": float("nan"), "Status": {"Health": "OK"}},
            {"Name": "b", "ReadingCelsius": 10**400, "Status": {"Health": "OK"}},
            {"Name": "c", "ReadingCelsius": 41, "Status": {"Health": "Critical"}},
        ],
    }
    frag = _redfish.parse_document(doc, "t", [])
    assert [s["reading"] for s in frag["sensors"]] == [None, None, 41.0]


# ------------------------------------------------------------------------------------------ collectors keep the rest


def test_bmc_capture_keeps_psu_failure_next_to_a_broken_sel_line(tmp_path):
    """The observed loss: a SEL reading of 2.7.1 took the whole bmc domain, PSU failure included."""
    cap = tmp_path / "cap"
    cap.mkdir()
    shutil.copy(os.path.join(FIX, "ipmitool-sdr", "openipmi-sim-sdr-elist-faults.txt"), cap / "ipmitool-sdr.txt")
    (cap / "ipmitool-sel.txt").write_text(
        "   1 | 10/20/2021 | 10:00:00 | Voltage P3V_BAT | Lower Critical going low | Asserted"
        " | Reading 2.7.1 < Threshold 2.70 Volts\n"
        "   2 | 10/20/2021 | 10:00:01 | Power Supply PS1 Status | Failure detected | Asserted\n"
    )
    res = _bmc.collect(capture_dir=str(cap))
    assert not [e for e in res["errors"] if e["kind"] == "internal"]
    psu = [s for s in res["sensors"] if s["name"] == "PSU1 Status"]
    assert psu and psu[0]["status"] == "critical"
    assert [e["id"] for e in res["sel"]] == [1, 2]
    assert [(e["kind"], e["line"]) for e in res["errors"]] == [("parse", 1)]


def test_collect_all_keeps_other_domains_and_the_rest_of_nccl_free_kernel(tmp_path):
    cap = tmp_path / "cap"
    cap.mkdir()
    (cap / "kernel.log").write_text(
        "[ 1.0] NVRM: Xid (PCI:0000:07:00): %s, pid=1, name=x, bad\n"
        "[ 2.0] NVRM: Xid (PCI:0000:08:00): 79, pid=12, name=y, GPU has fallen off the bus.\n" % HUGE
    )
    facts = _collect.collect_all(capture_dir=str(cap), domains=["kernel"])
    assert [e["code"] for e in facts["kernel"]["events"]] == [79]
    assert [(e["domain"], e["kind"], e["line"]) for e in facts["errors"]] == [("kernel", "parse", 1)]


# ------------------------------------------------------------------------------------------ time per input


@pytest.mark.parametrize(
    "parse",
    [
        lambda t, e: _nvlink.parse("GPU 0: A (UUID: GPU-a)\n Link 0: 25 GB/s\n" + t, "nv", e),
        lambda t, e: _kernel_events.parse_kernel_log("[ 1.0] NVRM: Xid (PCI:0000:07:00): 79, x\n" + t, "k", None, e),
        lambda t, e: _ipmi.parse_sdr("FAN1 | 3000 RPM | ok\n" + t, "sdr", e),
        lambda t, e: _nccl.parse(fx("nccl", "allreduce-1node-8xh100.txt") + t, "n")["errors"].extend(e) or None,
    ],
)
def test_a_100k_character_line_is_an_error_entry_not_seconds_of_regex(parse):
    """Found by `make fuzz`: an 82,000-character 'GPU ...' line cost the NVLink pattern 2.7 s (quadratic)."""
    import time

    line = "GPU 0: NVRM: Xid (PCI:0000:07:00) " + " " * 50000 + "| 1 " * 10000 + "\n"
    errors = []
    t0 = time.process_time()
    parse(line, errors)
    assert time.process_time() - t0 < 0.5


def test_fabric_manager_version_of_a_long_digit_line_is_fast():
    import time

    from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import node as _node

    t0 = time.process_time()
    assert _node.parse_fm_version("version : " + "1." * 60000 + "\n") is None
    assert _node.parse_fm_version("Fabric Manager version is : 535.161.08\n") == "535.161.08"
    assert time.process_time() - t0 < 0.5
