# Tests for the kernel log parser (plugins/module_utils/collectors/kernel_events.py).
from __future__ import annotations

import collections
import datetime
import json
import os
import stat

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import kernel_events as ke
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "xid-kmsg")
REF = datetime.datetime(2026, 12, 2, 10, 0, 0)


def fixture(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return fh.read()


def counts(events):
    return dict(collections.Counter((e["kind"], e["code"]) for e in events))


# Every real sample: (file, expected (kind, code) counts, first event's timestamp)
SAMPLES = [
    ("dxvk1027-driver418-xid31-13-32-old-format.log", {("xid", 31): 1, ("xid", 13): 4, ("xid", 32): 1}, None),
    (
        "gpud-boot-mlx5-insufficient-pcie-power.log",
        {("mlx5_power", None): 12, ("mlx5_link", None): 4},
        "2025-01-17T15:36:26.478631+00:00",
    ),
    ("gpud-pr1160-1174-nvlink5-xid144-145-149.log", {("xid", 144): 1, ("xid", 145): 1, ("xid", 149): 3}, None),
    ("gpud-pr46-ctime-xid13-109.log", {("xid", 13): 3, ("xid", 109): 1}, "2024-08-30T11:43:09"),
    ("gpud-xid13-43-sm-warp-exception.log", {("xid", 13): 629, ("xid", 43): 7}, "2025-01-21T02:21:33.498559+00:00"),
    (
        "gpud-xid48-63-94-dbe-rowremap-contained.log",
        {("xid", 48): 1, ("xid", 63): 1, ("xid", 94): 9},
        "2024-11-15T12:02:03.470068+00:00",
    ),
    ("nccl2241-b200-xid145-137-redacted.log", {("xid", 145): 1, ("xid", 137): 1}, None),
    ("nvsentinel155-fallen-off-bus-multiline-no-xid.log", {("fallen_off_bus", None): 1}, None),
    ("ogkm1030-595-xid31-mmu-fault-new-format.log", {("xid", 31): 1}, None),
    ("ogkm1045-polish-journal-xid38-109.log", {("xid", 38): 1, ("xid", 109): 2}, "2026-04-15T07:56:59"),
    ("ogkm1146-xid109-ctx-switch-timeout-aligned.log", {("xid", 109): 3}, "2026-09-18T20:07:01"),
    ("ogkm1150-h100-xid45-caused-by-previous-xid149-145.log", {("xid", 45): 7}, None),
    ("ogkm363-515-xid31-ce0-fault-pte.log", {("xid", 31): 2}, None),
    ("nvsentinel022-xid74-nvlink-registers.log", {("xid", 74): 1}, None),
    ("vllm40652-8xa100-xid119-gsp-timeout-45s.log", {("xid", 119): 2}, "2026-04-26T23:12:26"),
    # issue 38: GSP heartbeat / RPC timeout lines without an Xid line; Xid 154 with drifting labels
    ("ogkm1125-1230-gsp-heartbeat-rpc-timeout-no-xid.log", {("gsp_timeout", None): 4}, None),
    ("gpuknowledge-xid154-recovery-action-labels.log", {("xid", 154): 3}, None),
]


def test_every_sample_is_covered_and_has_a_sidecar():
    logs = sorted(f for f in os.listdir(FIX) if f.endswith(".log"))
    assert logs == sorted(s[0] for s in SAMPLES)
    for name in logs:
        assert os.path.exists(os.path.join(FIX, name[: -len(".log")] + ".source.txt"))


@pytest.mark.parametrize("name,expected,first_ts", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_real_samples(name, expected, first_ts, tmp_path):
    events = ke.parse_kernel_log(fixture(name), name, REF)
    assert counts(events) == expected
    assert events[0]["timestamp"] == first_ts
    for ev in events:
        assert set(ev) >= {
            "kind",
            "code",
            "bus_id",
            "gpu_index",
            "pid",
            "process",
            "message",
            "timestamp",
            "caused_by",
            "recovery_action",
            "line",
            "raw",
        }
        assert ev["line"] >= 1
    # Same result through collect() on a capture directory, with zero errors.
    (tmp_path / "kernel.log").write_text(fixture(name), encoding="utf-8")
    (tmp_path / "capture.json").write_text(json.dumps({"captured_at": "2026-12-02T10:00:00Z", "boot_id": "b-1"}))
    res = ke.collect(capture_dir=str(tmp_path))
    assert res["errors"] == []
    assert res["source"] == "capture:kernel.log"
    assert res["boot_id"] == "b-1"
    assert counts(res["events"]) == expected


def test_old_418_format_has_no_pid_and_keeps_message():
    ev = ke.parse_kernel_log(fixture("dxvk1027-driver418-xid31-13-32-old-format.log"))[0]
    assert ev["code"] == 31 and ev["pid"] is None and ev["process"] is None
    assert ev["bus_id"] == "00000000:01:00.0"
    assert ev["message"].startswith("Ch 0000003a, intr 10000000. MMU Fault")
    assert ev["line"] == 2


def test_pid_name_quoted_unknown_and_bare():
    evs = ke.parse_kernel_log(fixture("gpud-pr46-ctime-xid13-109.log"))
    assert evs[0]["pid"] is None and evs[0]["process"] is None
    assert evs[-1]["pid"] == 1797828 and evs[-1]["process"] == "pt_main_thread"
    assert evs[-1]["message"] == "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005"


def test_aligned_columns_and_syslog_without_host():
    evs = ke.parse_kernel_log(fixture("ogkm1146-xid109-ctx-switch-timeout-aligned.log"), ref_time=REF)
    assert [e["pid"] for e in evs] == [8494, 45252, 238459]
    assert all(e["process"] == "RenderThread" for e in evs)
    assert evs[0]["message"] == "channel 0x0000000d, CTX SWITCH TIMEOUT, Info 0x14c011"


def test_syslog_year_is_the_one_before_the_reference_time():
    line = "Dec 31 23:59:59 host kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus."
    assert ke.parse_kernel_log(line, ref_time=datetime.datetime(2027, 1, 1, 0, 5))[0]["timestamp"] == (
        "2026-12-31T23:59:59"
    )
    # No reference time: not placeable.
    assert ke.parse_kernel_log(line)[0]["timestamp"] is None


def test_polish_month_is_placed():
    evs = ke.parse_kernel_log(fixture("ogkm1045-polish-journal-xid38-109.log"), ref_time=REF)
    assert evs[0]["timestamp"] == "2026-04-15T07:56:59"
    assert evs[0]["pid"] == 326 and evs[0]["process"] == "modprobe"


def test_unknown_month_word_gives_null_timestamp_but_the_event():
    evs = ke.parse_kernel_log("xyz 15 07:56:59 h kernel: NVRM: Xid (PCI:0000:07:00): 38, x", ref_time=REF)
    assert evs[0]["code"] == 38 and evs[0]["timestamp"] is None


def test_current_79_format_journalctl_short_iso_and_gpu_mapping():
    text = (
        "-- Boot 0b6c0d1e --\n"
        "2026-12-02T09:58:01+0000 gpu-node-01 kernel: NVRM: GPU at PCI:0000:18:00: GPU-1234\n"
        "2026-12-02T09:58:01+0000 gpu-node-01 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, "
        "GPU has fallen off the bus.\n"
        "2026-12-02T09:58:02+0000 gpu-node-01 kernel: NVRM: Xid (PCI:0000:3b:00): 45, pid=1234, name=python, "
        "Ch 00000010, Preemptive Channel Removal caused by previous Xid 79\n"
    )
    evs = ke.parse_kernel_log(text)
    ke.map_gpus(evs, [{"index": 0, "bus_id": "00000000:18:00.0"}, {"index": 3, "bus_id": "0000:3B:00.0"}])
    assert [(e["code"], e["gpu_index"], e["bus_id"]) for e in evs] == [
        (79, 0, "00000000:18:00.0"),
        (45, 3, "00000000:3B:00.0"),
    ]
    assert evs[0]["timestamp"] == "2026-12-02T09:58:01+00:00"
    assert evs[0]["message"] == "GPU has fallen off the bus."
    assert evs[0]["pid"] == 1234 and evs[0]["process"] == "python"
    assert evs[1]["caused_by"] == 79
    assert evs[0]["line"] == 3


def test_name_with_brackets_and_spaces():
    ev = ke.parse_kernel_log("NVRM: Xid (PCI:0000:01:00): 109, pid=77, name=nvc:[driver], channel 0x1, x")[0]
    assert ev["process"] == "nvc:[driver]" and ev["message"] == "channel 0x1, x"


def test_redacted_pci_keeps_code():
    evs = ke.parse_kernel_log(fixture("nccl2241-b200-xid145-137-redacted.log"))
    assert [e["bus_id"] for e in evs] == [None, None]
    assert evs[0]["severity"] == "nonfatal"


def test_nvlink5_severity_word_and_nonzero_domain():
    evs = ke.parse_kernel_log(fixture("gpud-pr1160-1174-nvlink5-xid144-145-149.log"))
    assert [e["severity"] for e in evs] == ["nonfatal", "fatal", "fatal", "fatal", "nonfatal"]
    assert evs[3]["bus_id"] == "00000019:01:00.0"


def test_xid119_banners_are_not_events():
    evs = ke.parse_kernel_log(fixture("vllm40652-8xa100-xid119-gsp-timeout-45s.log"))
    assert [e["bus_id"] for e in evs] == ["00000001:6C:00.0", "00000001:96:00.0"]


def test_xid154_recovery_action():
    line = (
        "[Mon Dec  1 10:00:00 2026] NVRM: Xid (PCI:0000:9b:00): 154, pid='<unknown>', name=<unknown>, "
        "GPU recovery action changed from 0x4 (Drain and Reset) to 0x1 (GPU Reset Required)"
    )
    ev = ke.parse_kernel_log(line)[0]
    assert ev["code"] == 154
    assert ev["recovery_action"] == "gpu_reset"
    assert ev["detail"]["previous_action"] == "drain_and_reset"
    assert ev["timestamp"] == "2026-12-01T10:00:00"
    ev = ke.parse_kernel_log(
        "NVRM: Xid (PCI:0000:9b:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
    )[0]
    assert ev["recovery_action"] == "node_reboot"


def test_sxid():
    ev = ke.parse_kernel_log(
        "2026-12-02T10:00:00,000001+00:00 nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 62 LTSSM "
        "Fault Up"
    )[0]
    assert (ev["kind"], ev["code"], ev["bus_id"], ev["severity"]) == ("sxid", 20034, "00000000:05:00.0", "fatal")
    assert ev["timestamp"] == "2026-12-02T10:00:00.000001+00:00"


def test_fallen_off_bus_forms():
    evs = ke.parse_kernel_log(fixture("nvsentinel155-fallen-off-bus-multiline-no-xid.log"))
    assert len(evs) == 1
    assert evs[0]["bus_id"] == "00000000:B3:00.0"
    assert "fallen off the bus" in evs[0]["message"] and evs[0]["message"].startswith("The NVIDIA GPU")
    assert evs[0]["raw"].count("\n") == 2
    text = (
        "[  100.1] NVRM: GPU at 0000:01:00.0 has fallen off the bus.\n"
        "Feb 14 05:03:41 h kernel: NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.\n"
        "Feb 14 05:03:42 h kernel: NVRM: The NVIDIA GPU 0000:c1:00.0\n"
        "Feb 14 05:03:42 h kernel: NVRM: (PCI ID: 10de:2330) installed in this system has\n"
        "Feb 14 05:03:42 h kernel: NVRM: fallen off the bus and is not responding to commands.\n"
        "Feb 14 05:03:43 h kernel: NVRM: The NVIDIA GPU 0000:c2:00.0\n"
        "Feb 14 05:03:43 h kernel: NVRM: (PCI ID: 10de:2330) installed in this system is\n"
        "Feb 14 05:03:43 h kernel: NVRM: not supported by the NVIDIA 535 driver release.\n"
    )
    evs = ke.parse_kernel_log(text, ref_time=REF)
    assert [(e["kind"], e["bus_id"], e["line"]) for e in evs] == [
        ("fallen_off_bus", "00000000:01:00.0", 1),
        ("fallen_off_bus", "00000000:29:00.0", 2),
        ("fallen_off_bus", "00000000:C1:00.0", 3),
    ]
    assert evs[2]["timestamp"] == "2026-02-14T05:03:42"


def test_aer_corrected_uncorrected_and_merge():
    text = (
        "[ 5.0] pcieport 0000:00:01.1: AER: Corrected error received: 0000:01:00.0\n"
        "[ 5.0] nvidia 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n"
        "[ 5.0] nvidia 0000:01:00.0:   device [10de:2330] error status/mask=00000001/0000e000\n"
        "[ 6.0] pcieport 0000:00:02.0: AER: Uncorrected (Non-Fatal) error received: 0000:02:00.0\n"
        "[ 7.0] pcieport 0000:00:03.0: AER: Uncorrected (Fatal) error received: id=0018\n"
        "[ 8.0] mlx5_core 0000:5e:00.0: AER: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction "
        "Layer, (Requester ID)\n"
        "[ 9.0] pcieport 0000:00:04.0: AER: Multiple Correctable error message received from 0000:04:00.0\n"
        "[ 1.0] acpi PNP0A08:29: _OSC: platform does not support [SHPCHotplug AER DPC]\n"
    )
    evs = ke.parse_kernel_log(text)
    assert [(e["kind"], e["severity"], e["bus_id"]) for e in evs] == [
        ("aer", "corrected", "00000000:01:00.0"),
        ("aer", "uncorrected", "00000000:02:00.0"),
        ("aer", "fatal", "00000000:00:03.0"),
        ("aer", "uncorrected", "00000000:5E:00.0"),
        ("aer", "corrected", "00000000:04:00.0"),
    ]
    assert evs[0]["detail"]["type"] == "Physical Layer"


def test_mlx5_link_and_power():
    evs = ke.parse_kernel_log(fixture("gpud-boot-mlx5-insufficient-pcie-power.log"))
    links = [e for e in evs if e["kind"] == "mlx5_link"]
    assert [(e["detail"]["state"], e["detail"]["interface"]) for e in links] == [
        ("down", "enp157s0f1np1"),
        ("down", "enp157s0f0np0"),
        ("down", "enp27s0f1np1"),
        ("up", "bootnet"),
    ]
    power = [e for e in evs if e["kind"] == "mlx5_power"]
    assert all(e["detail"]["slot_power_w"] == 27 for e in power)
    assert power[0]["bus_id"] == "00000000:1A:00.0"
    assert power[0]["message"] == "Detected insufficient power on the PCIe slot (27W)."


def test_mce_and_edac():
    text = (
        "2026-12-02T10:00:00+0000 h kernel: mce: [Hardware Error]: Machine check events logged\n"
        "2026-12-02T10:00:01+0000 h kernel: mce: [Hardware Error]: CPU 12: Machine Check: 0 Bank 7: "
        "cc00008000010090\n"
        "2026-12-02T10:00:02+0000 h kernel: mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 1: "
        "bd80000000100134\n"
        "2026-12-02T10:00:03+0000 h kernel: EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 "
        "(channel:1 slot:0 page:0x12345)\n"
        "2026-12-02T10:00:04+0000 h kernel: EDAC MC1: 2 UE memory read error on DIMM_B1\n"
        "2026-12-02T10:00:05+0000 h kernel: EDAC MC: Ver: 3.0.0\n"
        "2026-12-02T10:00:06+0000 h kernel: mce: Uncorrected hardware memory error in user-access at 12345\n"
    )
    evs = ke.parse_kernel_log(text)
    assert [(e["kind"], e["severity"]) for e in evs] == [
        ("mce", None),
        ("mce", "corrected"),  # status bit 61 (UC) clear
        ("mce", "uncorrected"),  # UC set
        ("edac", "corrected"),
        ("edac", "uncorrected"),
        ("mce", "uncorrected"),
    ]
    assert evs[1]["detail"] == {"cpu": 12, "bank": 7, "status": "0xcc00008000010090"}
    assert evs[4]["detail"] == {"mc": 1, "count": 2}


def test_dmesg_x_facility_prefix():
    ev = ke.parse_kernel_log(fixture("gpud-xid13-43-sm-warp-exception.log"))[-1]
    assert ev["code"] == 43 and ev["pid"] == 2924364 and ev["line"] == 636


def test_filter_since():
    evs = ke.parse_kernel_log(fixture("gpud-xid13-43-sm-warp-exception.log"))
    kept = ke.filter_since(evs, "2025-01-21T04:00:00Z")
    assert counts(kept) == {("xid", 43): 2, ("xid", 13): 300}
    assert all(e["timestamp"] >= "2025-01-21T04" for e in kept)
    # Unplaceable events are kept; a non-ISO bound keeps everything.
    mono = ke.parse_kernel_log(fixture("dxvk1027-driver418-xid31-13-32-old-format.log"))
    assert len(ke.filter_since(mono, "2030-01-01T00:00:00")) == 6
    assert len(ke.filter_since(evs, "-2h")) == len(evs)


def test_max_events_keeps_the_most_recent(tmp_path):
    (tmp_path / "kernel.log").write_text(fixture("gpud-xid13-43-sm-warp-exception.log"))
    res = ke.collect(capture_dir=str(tmp_path), max_events=10)
    assert len(res["events"]) == 10 and res["events_dropped"] == 626
    assert res["events"][-1]["line"] == 636


def test_capture_boot_id_from_node_json_and_missing_file(tmp_path):
    (tmp_path / "node.json").write_text(json.dumps({"boot_id": "from-node"}))
    res = ke.collect(capture_dir=str(tmp_path))
    assert res == {
        "source": None,
        "boot_id": "from-node",
        "since": None,
        "events": [],
        "events_dropped": 0,
        "errors": [],
    }


def test_capture_json_records_tool_failure(tmp_path):
    (tmp_path / "kernel.log").write_text("")
    meta = {"files": {"kernel.log": {"rc": 1, "stderr": "dmesg: read kernel buffer failed: Operation not permitted"}}}
    (tmp_path / "capture.json").write_text(json.dumps(meta))
    res = ke.collect(capture_dir=str(tmp_path))
    assert [e["kind"] for e in res["errors"]] == ["tool_error"]
    assert "Operation not permitted" in res["errors"][0]["message"]
    (tmp_path / "capture.json").write_text("{broken")
    res = ke.collect(capture_dir=str(tmp_path))
    assert [e["kind"] for e in res["errors"]] == ["parse"]


def test_huge_and_non_utf8_capture(tmp_path, monkeypatch):
    (tmp_path / "kernel.log").write_bytes(b"\xff\xfe NVRM: Xid (PCI:0000:01:00): 79, \xc3\x28 GPU has fallen off\n")
    res = ke.collect(capture_dir=str(tmp_path))
    assert res["errors"] == [] and res["events"][0]["code"] == 79
    import ansible_collections.gpuops.cluster.plugins.module_utils._files as common

    monkeypatch.setattr(common, "MAX_INPUT_BYTES", 10)
    monkeypatch.setattr(ke, "read_text", lambda p: common.read_text(p, max_bytes=10))
    res = ke.collect(capture_dir=str(tmp_path))
    assert res["events"] == [] and res["errors"][0]["kind"] == "unreadable"  # over the cap: refused


def test_garbage_empty_and_truncated():
    assert ke.parse_kernel_log("") == []
    assert ke.parse_kernel_log("\x00\x01 random text\n[ 1.0\n2026-13-45T99:99:99 x\n") == []
    ev = ke.parse_kernel_log("[ 1.0] NVRM: Xid (PCI:0000:01:00): 79")[0]
    assert ev["code"] == 79 and ev["message"] == ""
    assert ke.parse_kernel_log("NVRM: Xid (PCI:0000:01")[:1] == []
    with pytest.raises(ParseError):
        ke.parse_kernel_log(None)


def _exe(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_live_journalctl_then_dmesg_fallback(tmp_path):
    sample = os.path.join(FIX, "gpud-xid48-63-94-dbe-rowremap-contained.log")
    good = _exe(
        tmp_path / "jc",
        'echo "$@" > %s/args; echo "2026-12-02T09:58:01+0000 h kernel: NVRM: Xid '
        '(PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus."\n' % tmp_path,
    )
    res = ke.collect(since="-2h", journalctl=good, dmesg="/nonexistent/dmesg", timeout=5)
    assert res["source"] == "journalctl" and res["errors"] == []
    assert (tmp_path / "args").read_text().split() == ["-k", "-o", "short-iso", "--no-pager", "-q", "--since", "-2h"]
    assert res["events"][0]["timestamp"] == "2026-12-02T09:58:01+00:00"
    bad = _exe(tmp_path / "jc-bad", "echo 'No journal files were found.' >&2; exit 1\n")
    dmesg = _exe(tmp_path / "dmesg", "cat %s\n" % sample)
    res = ke.collect(journalctl=bad, dmesg=dmesg, timeout=5)
    assert res["source"] == "dmesg" and res["errors"] == []
    assert counts(res["events"]) == {("xid", 48): 1, ("xid", 63): 1, ("xid", 94): 9}
    hang = _exe(tmp_path / "jc-hang", "sleep 30\n")
    res = ke.collect(journalctl=hang, dmesg="/nonexistent/dmesg", timeout=0.5)
    assert [e["kind"] for e in res["errors"]] == ["timeout", "missing"]
    assert res["events"] == []


@seed(20261202)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.text(max_size=80),
            st.sampled_from(
                [
                    "NVRM: Xid (PCI:",
                    "NVRM: Xid (PCI:0000:18:00): ",
                    "pid=",
                    ", name=",
                    "[Fri Aug 30 11:43:09 2024] ",
                    "2024-11-15T12:02:03,470068+00:00 ",
                    "kwi 15 07:56:59 h kernel: ",
                    "NVRM: The NVIDIA GPU ",
                    "fallen off the bus",
                    "AER: Uncorrected (Fatal) error received: ",
                    "PCIe Bus Error: severity=",
                    "mlx5_core 0000:1b:00.1 x: Link ",
                    "EDAC MC0: 1 CE ",
                    "mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 1: ",
                    "caused by previous Xid ",
                    "recovery action changed from ",
                    "\n",
                ]
            ),
        ),
        max_size=30,
    )
)
def test_fuzz_never_raises_anything_but_parse_error(parts):
    try:
        evs = ke.parse_kernel_log("".join(parts), "fuzz", REF)
    except ParseError:
        return
    json.dumps(evs)
    assert all(e["kind"] in ke.KINDS for e in evs)


def test_ib_link_flap_via_carrier_messages():
    text = "".join(
        "Mar  5 10:00:%02d hpc-vm systemd-networkd[812]: ib6: %s carrier\n" % (i, "Lost" if i % 2 == 0 else "Gained")
        for i in range(12)
    )
    evs = ke.parse_kernel_log(text, ref_time=REF)
    assert len(evs) == 12
    assert [e["detail"]["state"] for e in evs[:2]] == ["down", "up"]
    assert {e["detail"]["interface"] for e in evs} == {"ib6"} and {e["kind"] for e in evs} == {"mlx5_link"}
    assert evs[0]["timestamp"] == "2026-03-05T10:00:00"


def test_sxid_detail_lines_are_merged():
    text = (
        "[ 10.0] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 30 LTSSM Fault Up\n"
        "[ 10.0] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 30 Sub-engine 00\n"
        "[ 10.0] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Data {0x50610002, 0x10100030}\n"
        "[ 11.0] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 17 egress non-posted PRIV error\n"
    )
    evs = ke.parse_kernel_log(text)
    assert [(e["code"], e["severity"]) for e in evs] == [(20034, "fatal"), (12028, "nonfatal")]
    assert evs[0]["detail"] == {"severity_level": 1, "data": "Data {0x50610002, 0x10100030}"}


def test_journalctl_short_precise_and_short_full():
    evs = ke.parse_kernel_log(
        "Dec 02 09:58:01.123456 h kernel: NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus\n"
        "Tue 2026-12-02 09:58:02 UTC h kernel: NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from "
        "0x0 (None) to 0x1 (PF FLR)\n",
        ref_time=REF,
    )
    assert [e["timestamp"] for e in evs] == ["2026-12-02T09:58:01.123456", "2026-12-02T09:58:02+00:00"]
    assert evs[0]["message"] == "GPU has fallen off the bus" and evs[0]["pid"] is None
    assert evs[1]["recovery_action"] == "gpu_reset"


def test_quoted_lines_and_new_channel_token():
    text = (
        "\"NVRM: Xid (PCI:0000:10:1c): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x0000000012) "
        'marked for remapping, reset gpu to activate."\n'
        "`NVRM: Xid (PCI:0009:01:00): 43, pid=4242, name=python3, channel 0x0b00000a`\n"
        "> NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x4 (Drain and Reset) to 0x1 (GPU Reset "
        "Required)\n"
    )
    evs = ke.parse_kernel_log(text)
    assert [(e["code"], e["bus_id"]) for e in evs] == [
        (63, "00000000:10:1C.0"),
        (43, "00000009:01:00.0"),
        (154, "00000009:01:00.0"),
    ]
    assert evs[0]["message"].endswith("reset gpu to activate.")
    assert evs[1]["message"] == "channel 0x0b00000a" and evs[1]["process"] == "python3"
    assert evs[2]["recovery_action"] == "gpu_reset" and evs[2]["detail"]["previous_action"] == "drain_and_reset"


def test_recovery_action_number_wins_over_the_words():
    # gpu-knowledge-2026.md 3.6: labels drift ("PF FLR", "OS Reboot"), "key on the hex code"; the enum
    # nvmlDeviceGpuRecoveryAction_t: 1 GPU_RESET, 2 NODE_REBOOT, 3 DRAIN_P2P, 4 DRAIN_AND_RESET
    ev = ke.parse_kernel_log(
        "NVRM: Xid (PCI:0000:00:1e): 154, GPU recovery action changed from 0x0 (None) to 0x1 (Drain and Reset)"
    )[0]
    assert ev["recovery_action"] == "gpu_reset" and ev["detail"]["new_action_code"] == 1
    ev = ke.parse_kernel_log("NVRM: Xid (PCI:0000:00:1e): 154, GPU recovery action changed from 0x0 to 0x2")[0]
    assert ev["recovery_action"] == "node_reboot"


def test_gsp_timeout_block_counts_only_xid_lines():
    text = (
        "[Sun Feb 23 16:24:18 2025] NVRM: _kgspLogXid119: ********** GSP Timeout **********\n"
        "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=3000, name=nvidia-smi, Timeout after 6s of "
        "waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).\n"
        "[Sun Feb 23 16:24:18 2025] NVRM: GPU4 GSP RPC buffer contains function 76 (GSP_RM_CONTROL) and data 0x0.\n"
        "[Sun Feb 23 16:24:18 2025] NVRM:     entry                 function         data0              data1\n"
        "[Sun Feb 23 16:24:18 2025]  _kgspLogXid119+0x2c0/0x340 [nvidia]\n"
        "[Sun Feb 23 16:24:30 2025] NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:9b:00 (printing 1 of "
        "every 30).  The GPU likely needs to be reset.\n"
    )
    evs = ke.parse_kernel_log(text)
    assert [(e["code"], e["bus_id"], e["timestamp"]) for e in evs] == [(119, "00000000:9B:00.0", "2025-02-23T16:24:18")]


def test_fallen_off_bus_after_xid79_points_at_it():
    text = (
        "NVRM: Xid (PCI:0000:04:00): 79, GPU has fallen off the bus.\n"
        "NVRM: GPU 0000:04:00.0: GPU has fallen off the bus.\n"
        "NVRM: GPU 0000:05:00.0: GPU has fallen off the bus.\n"
    )
    evs = ke.parse_kernel_log(text)
    assert [(e["kind"], e["detail"]) for e in evs] == [
        ("xid", {}),
        ("fallen_off_bus", {"xid79_line": 1}),
        ("fallen_off_bus", {}),
    ]
