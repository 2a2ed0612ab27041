# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parser filters (plugins/filter/) on real tool outputs: each returns what its module's collector returns for
the same text (a capture directory holding it), and broken or truncated input is a clear AnsibleFilterError
(parser, line, partial count), never a traceback; with strict=false it is an error entry, as in the modules."""

from __future__ import annotations

import copy
import datetime
import glob
import json
import os
import shutil

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.cluster.plugins.filter import (
    dcgm_diag,
    ibstat,
    ipmi_sdr,
    ipmi_sel,
    kernel_events,
    nvidia_smi,
    nvlink,
    scontrol_nodes,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    bmc as _bmc,
    dcgm as _dcgm,
    gpu as _gpu,
    ib as _ib,
    kernel_events as _kernel_events,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import slurm as _slurm_parse
from ansible_collections.gpuops.cluster.plugins.plugin_utils._filters import looks_like_xml

FIX = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))


def fixtures(folder, pattern="*.txt"):
    return sorted(p for p in glob.glob(os.path.join(FIX, folder, pattern)) if not p.endswith(".source.txt"))


def read(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def ids(paths):
    return [os.path.basename(p) for p in paths]


def capture(tmp_path, name, path):
    d = tmp_path / "cap"
    d.mkdir(exist_ok=True)
    shutil.copy(path, d / name)
    return str(d)


def without_sources(result):
    """The domain without the places the text was read from (a capture file name vs the filter's label)."""
    out = copy.deepcopy(result)
    out.pop("source", None)
    for e in out.get("errors") or []:
        e.pop("source", None)
    return out


def broken(fn, text, **kw):
    with pytest.raises(AnsibleFilterError) as exc:
        fn(text, **kw)
    return str(exc.value)


# ----------------------------------------------------------------------------------------------- nvidia_smi
SMI = fixtures("nvidia-smi-xml", "*.xml") + fixtures("nvidia-smi-q-text") + fixtures("nvidia-smi-errors")


@pytest.mark.parametrize("path", SMI, ids=ids(SMI))
def test_nvidia_smi_is_what_gpu_info_returns(tmp_path, path):
    text = read(path)
    name = _gpu.XML_FILE if looks_like_xml(text) else _gpu.TEXT_FILE
    module = _gpu.collect(capture_dir=capture(tmp_path, name, path))
    assert module["source"] == "capture:" + name
    got = nvidia_smi.nvidia_smi(text, strict=False)
    assert got["source"] == ("nvidia-smi-xml" if name == _gpu.XML_FILE else "nvidia-smi-text")
    assert without_sources(got) == without_sources(module)
    if not any(e["kind"] == "parse" for e in module["errors"]):
        assert nvidia_smi.nvidia_smi(text) == got  # strict: the same, nothing to complain about


def test_nvidia_smi_detects_xml_and_text():
    xml = nvidia_smi.nvidia_smi(read(os.path.join(FIX, "nvidia-smi-xml", "netdata-rtx4090-535.86.05.xml")))
    assert xml["source"] == "nvidia-smi-xml" and xml["count"] == 1 and xml["driver_version"] == "535.86.05"
    (gpu,) = xml["gpus"]
    assert (gpu["name"], gpu["bus_id"], gpu["temperature"]["gpu_c"]) == (
        "NVIDIA GeForce RTX 4090",
        "00000000:84:00.0",
        40,
    )
    text = nvidia_smi.nvidia_smi(
        read(os.path.join(FIX, "nvidia-smi-q-text", "gpud-8xh100-535.161.08-hw-power-brake.txt"))
    )
    assert text["source"] == "nvidia-smi-text" and len(text["gpus"]) == 8
    assert "hw_power_brake_slowdown" in text["gpus"][0]["throttle"]["active"]


def test_nvidia_smi_lost_gpu_is_evidence_not_an_error():
    res = nvidia_smi.nvidia_smi(read(os.path.join(FIX, "nvidia-smi-errors", "marian251-gpu-is-lost.txt")))
    assert [(g["bus_id"], g["readable"]) for g in res["gpus"]] == [("00000000:03:00.0", False)]
    assert [e["kind"] for e in res["errors"]] == ["unreadable"]


def test_nvidia_smi_merges_nvlink_as_gpu_info_does(tmp_path):
    smi = os.path.join(FIX, "nvidia-smi-q-text", "nvgpuexp-h100-590.48.01-load.txt")
    nvl = os.path.join(FIX, "nvlink", "nvgpuexp-h100-590.48.01-nvlink-s.txt")
    d = capture(tmp_path, _gpu.TEXT_FILE, smi)
    shutil.copy(nvl, os.path.join(d, _gpu.NVLINK_S_FILE))
    module = _gpu.collect(capture_dir=d)
    got = nvidia_smi.nvidia_smi(read(smi), nvlink=read(nvl))
    assert got["gpus"] == module["gpus"] and got["errors"] == module["errors"] == []
    assert got["gpus"][0]["nvlink"]["links"][0] == {
        "link": 0,
        "state": "up",
        "speed_gbps": 26.562,
        "errors": {"replay": None, "recovery": None, "crc_flit": None, "crc_data": None},
    }


def test_nvidia_smi_truncated_xml_names_parser_line_and_partial():
    text = read(os.path.join(FIX, "nvidia-smi-xml", "datakit-8xv100s-pcie-460.73.01.xml"))
    cut = text[: text.index('<gpu id="00000000:00:12.0">') + 900]
    msg = broken(nvidia_smi.nvidia_smi, cut, source="node7/nvidia-smi-q.xml")
    assert msg.startswith("gpuops.cluster.nvidia_smi: nvsmi_xml: node7/nvidia-smi-q.xml:")
    assert "truncated nvidia-smi XML after 5 complete GPU(s)" in msg and "partial result: 5 in 'gpus'" in msg
    assert "Traceback" not in msg
    kept = nvidia_smi.nvidia_smi(cut, strict=False)
    assert len(kept["gpus"]) == 5 and kept["count"] == 8
    assert kept["errors"][0]["kind"] == "parse" and kept["errors"][0]["source"] == "nvidia-smi-xml"


def test_nvidia_smi_truncated_text_real_capture():
    path = os.path.join(FIX, "nvidia-smi-q-text", "gpud-h100-535.183.01-truncated-invalid.txt")
    msg = broken(nvidia_smi.nvidia_smi, read(path))
    assert "nvsmi_text: nvidia-smi-text:8: truncated nvidia-smi -q output: GPU 00000000:53:00.0" in msg


@pytest.mark.parametrize(
    ("value", "expect"),
    [
        ("", "nvsmi_text: nvidia-smi-text:1: empty output"),
        ("hello world", "not nvidia-smi -q output: 'hello world'"),
        ("<?xml version='1.0'?><nvidia_smi_log><driver_version>5", "nvidia-smi-xml:1: truncated nvidia-smi XML"),
        ("<?xml version='1.0'?>\n<nvidia_smi_log>\n<a></b>\n</nvidia_smi_log>", "nvidia-smi-xml:3: malformed"),
        (None, "expects the text of nvidia-smi -q -x or nvidia-smi -q output, got NoneType"),
        ({"stdout": "x", "rc": 0}, "got dict (pass its .stdout)"),
        (["line"], "got list"),
    ],
)
def test_nvidia_smi_bad_input(value, expect):
    msg = broken(nvidia_smi.nvidia_smi, value)
    assert expect in msg, msg


def test_nvidia_smi_bad_options():
    text = read(os.path.join(FIX, "nvidia-smi-xml", "netdata-rtx4090-535.86.05.xml"))
    assert "strict must be a boolean" in broken(nvidia_smi.nvidia_smi, text, strict="maybe")
    assert "source must be a string" in broken(nvidia_smi.nvidia_smi, text, source=3)
    assert nvidia_smi.nvidia_smi(text, strict="no")["count"] == 1  # Ansible's booleans
    other = read(os.path.join(FIX, "nvlink", "gpud-a100-nvlink-status.txt"))  # another node's NVLink output
    assert "matched no GPU of this output" in broken(nvidia_smi.nvidia_smi, text, nvlink=other)


# ---------------------------------------------------------------------------------------------------- nvlink
NVL = fixtures("nvlink")


@pytest.mark.parametrize("path", NVL, ids=ids(NVL))
def test_nvlink_records_are_gpu_info_records(path):
    text = read(path)
    res = nvlink.nvlink(text)
    assert res["source"] == "nvidia-smi nvlink" and res["errors"] == [] and res["gpus"]
    for g in res["gpus"]:
        assert set(g) == {"index", "name", "uuid", "nvlink"} and set(g["nvlink"]) == {"links", "error"}
        assert [lk["link"] for lk in g["nvlink"]["links"]] == sorted(lk["link"] for lk in g["nvlink"]["links"])
    # the same records gpu_info's merge puts on a GPU of that index
    gpus = [{"index": g["index"], "uuid": g["uuid"]} for g in res["gpus"]]
    _gpu._nvlink.merge(gpus, _gpu._nvlink.parse(text))
    assert [g["nvlink"] for g in gpus] == [g["nvlink"] for g in res["gpus"]]


def test_nvlink_dcgmi_counts_and_a100_status():
    a100 = nvlink.nvlink(read(os.path.join(FIX, "nvlink", "gpud-a100-nvlink-status.txt")))
    assert a100["gpus"][0]["uuid"] == "GPU-5269b708-678a-b1a8-60f0-c90406537486"
    assert {lk["state"] for lk in a100["gpus"][0]["nvlink"]["links"]} == {"up"}
    dcgmi = nvlink.nvlink(read(os.path.join(FIX, "nvlink", "dcgm-userguide-dcgmi-nvlink-e-counts.txt")))
    assert dcgmi["gpus"][0]["nvlink"]["links"][0]["errors"] == {
        "replay": 0,
        "recovery": 0,
        "crc_flit": 0,
        "crc_data": 0,
    }


def test_nvlink_broken():
    good = read(os.path.join(FIX, "nvlink", "dcgm-userguide-dcgmi-nvlink-e-counts.txt"))
    bad = good.replace("| Replay Error        | 0 ", "| Replay Error        | lots", 1)
    assert bad != good
    msg = broken(nvlink.nvlink, bad)
    assert "gpuops.cluster.nvlink: nvlink: nvidia-smi nvlink:6: malformed record" in msg, msg
    assert "'lots' is not a number" in msg
    kept = nvlink.nvlink(bad, strict=False)
    assert len(kept["gpus"]) == len(nvlink.nvlink(good)["gpus"]) and kept["errors"][0]["kind"] == "parse"
    assert "no 'GPU N:' header" in broken(nvlink.nvlink, "Link 0: 25 GB/s")
    assert "empty input" in broken(nvlink.nvlink, "  \n")


# --------------------------------------------------------------------------------------------- kernel_events
KLOG = fixtures("xid-kmsg", "*.log")


@pytest.mark.parametrize("path", KLOG, ids=ids(KLOG))
def test_kernel_events_is_what_kernel_events_info_returns(tmp_path, path):
    module = _kernel_events.collect(capture_dir=capture(tmp_path, "kernel.log", path))
    # the capture's mtime is the collector's reference time (the year of syslog lines): give the filter the same
    ref = os.path.getmtime(os.path.join(str(tmp_path / "cap"), "kernel.log"))
    got = kernel_events.kernel_events(read(path), ref_time=datetime.datetime.fromtimestamp(ref).isoformat())
    assert got["source"] == "kernel-log" and module["source"] == "capture:kernel.log"
    assert without_sources(got) == without_sources(module)
    assert got["events"], "every fixture holds at least one event"


def test_kernel_events_xids_and_gpu_mapping():
    text = read(os.path.join(FIX, "xid-kmsg", "gpud-xid48-63-94-dbe-rowremap-contained.log"))
    res = kernel_events.kernel_events(text, gpus=[{"index": 3, "bus_id": "0000:19:00.0"}])
    xids = [(e["code"], e["gpu_index"]) for e in res["events"] if e["kind"] == "xid"]
    assert xids[:3] == [(48, 3), (63, 3), (94, 3)]
    assert res["events"][0]["timestamp"] == "2024-11-15T12:02:03.470068+00:00" and res["events"][0]["line"] == 11
    later = kernel_events.kernel_events(text, since="2024-11-15T12:02:03.5+00:00")
    assert [e["code"] for e in later["events"]][:1] == [94] and later["since"] == "2024-11-15T12:02:03.5+00:00"
    capped = kernel_events.kernel_events(text, max_events=2)
    assert len(capped["events"]) == 2 and capped["events_dropped"] == len(res["events"]) - 2


def test_kernel_events_fallen_off_bus_multiline():
    res = kernel_events.kernel_events(
        read(os.path.join(FIX, "xid-kmsg", "nvsentinel155-fallen-off-bus-multiline-no-xid.log"))
    )
    assert [e["kind"] for e in res["events"]].count("fallen_off_bus") >= 1


def test_kernel_events_broken_and_empty():
    assert kernel_events.kernel_events("")["events"] == []  # an empty log is a log without events
    bad = (
        "[ 12.5] NVRM: Xid (PCI:0000:19:00): %s, pid=1, name=x, boom\n[ 13.0] NVRM: Xid (PCI:0000:1a:00): 79, GPU has fallen off the bus.\n"
        % ("9" * 5000)
    )
    msg = broken(kernel_events.kernel_events, bad, source="dmesg.txt")
    assert "gpuops.cluster.kernel_events: kernel_log: dmesg.txt:1:" in msg and "partial result: 1 in 'events'" in msg
    kept = kernel_events.kernel_events(bad, strict=False)
    assert [e["code"] for e in kept["events"]] == [79] and kept["errors"][0]["line"] == 1
    assert "since is not an ISO time" in broken(kernel_events.kernel_events, "x", since="yesterday")
    assert "max_events must be 0 or more" in broken(kernel_events.kernel_events, "x", max_events=-1)
    assert "gpus must be a list" in broken(kernel_events.kernel_events, "x", gpus="gpu0")


# --------------------------------------------------------------------------------------------------- ibstat
IB = fixtures("ibstat") + fixtures("ibstatus")


@pytest.mark.parametrize("path", IB, ids=ids(IB))
def test_ibstat_is_what_infiniband_info_returns(tmp_path, path):
    name = "ibstatus.txt" if "ibstatus" in path else "ibstat.txt"
    module = _ib.collect(capture_dir=capture(tmp_path, name, path))
    got = ibstat.ibstat(read(path))
    assert got["source"] == name[:-4] and module["source"] == "capture:" + name
    assert without_sources(got) == without_sources(module) and got["hcas"]


def test_ibstat_ports():
    res = ibstat.ibstat(read(os.path.join(FIX, "ibstat", "gpud-h100-cx7-ib-some-down.txt")))
    down = [(h["name"], p["state"], p["phys_state"]) for h in res["hcas"] for p in h["ports"] if p["state"] != "ACTIVE"]
    assert ("mlx5_2", "DOWN", "Disabled") in down
    assert res["hcas"][0]["ports"][0]["rate_gbps"] == 400.0


def test_ibstat_truncated_and_ibpanic():
    text = read(os.path.join(FIX, "ibstat", "gpud-h100-cx7-ib-all-active-bf3.txt"))
    cut = text[: text.rindex("Link layer")]
    msg = broken(ibstat.ibstat, cut)
    assert "gpuops.cluster.ibstat: ibstat: ibstat:" in msg and "(truncated)" in msg and "partial result:" in msg
    assert len(ibstat.ibstat(cut, strict=False)["hcas"]) == text.count("CA '")
    panic = ibstat.ibstat(
        text + "ibpanic: [12345] main: stat of IB device 'mlx5_9' failed: No such file or directory\n"
    )
    assert [e["kind"] for e in panic["errors"]] == ["tool_error"]  # evidence: not raised
    assert "no CA block found" in broken(ibstat.ibstat, "some other text")
    assert "empty input" in broken(ibstat.ibstat, "")


# ------------------------------------------------------------------------------------------- ipmi_sdr / sel
SDR = fixtures("ipmitool-sdr")
SEL = [p for p in fixtures("ipmitool-sel") if "sel-info" not in p]


@pytest.mark.parametrize("path", SDR, ids=ids(SDR))
def test_ipmi_sdr_is_what_bmc_info_parses(tmp_path, path):
    module = _bmc.collect_capture(capture(tmp_path, "ipmitool-sdr.txt", path))
    got = ipmi_sdr.ipmi_sdr(read(path), strict=False)
    assert got["sensors"] == module["sensors"] and got["sensors"]
    assert without_sources(got)["errors"] == without_sources(module)["errors"]


@pytest.mark.parametrize("path", SEL, ids=ids(SEL))
def test_ipmi_sel_is_what_bmc_info_parses(tmp_path, path):
    module = _bmc.collect_capture(capture(tmp_path, "ipmitool-sel.txt", path))
    got = ipmi_sel.ipmi_sel(read(path), strict=False)
    assert got["sel"] == module["sel"]
    assert without_sources(got)["errors"] == without_sources(module)["errors"]


def test_ipmi_sdr_statuses():
    res = ipmi_sdr.ipmi_sdr(read(os.path.join(FIX, "ipmitool-sdr", "openipmi-sim-sdr-elist-faults.txt")))
    bad = {s["name"]: (s["type"], s["status"]) for s in res["sensors"] if s["status"] != "ok"}
    assert bad["GPU0 Temp"] == ("temperature", "critical") and bad["Leak Detect"] == ("leak", "critical")
    assert res["source"] == "ipmitool-sdr" and res["errors"] == []


def test_ipmi_sel_records_and_no_entries():
    res = ipmi_sel.ipmi_sel(read(os.path.join(FIX, "ipmitool-sel", "intel-s2600-sel-elist-fan-psu-redundancy.txt")))
    five = res["sel"][4]
    assert (five["id"], five["time"], five["sensor_type"], five["severity"]) == (
        5,
        "2014-06-03T17:38:06",
        "Fan",
        "critical",
    )
    assert ipmi_sel.ipmi_sel("SEL has no entries\n")["sel"] == []


def test_ipmi_broken():
    sdr = read(os.path.join(FIX, "ipmitool-sdr", "openipmi-sim-sdr-elist-faults.txt"))
    assert "no sensor rows found" in broken(ipmi_sdr.ipmi_sdr, "Unable to establish IPMI v2 / RMCP+ session\n")
    bad = sdr + "GPU7 Temp | 1Ah | ok | 3.8 | 4" + "0" * 5000 + " degrees C\n"  # a garbled row
    msg = broken(ipmi_sdr.ipmi_sdr, bad)
    assert "gpuops.cluster.ipmi_sdr: ipmitool_sdr: ipmitool-sdr:%d: line of" % (sdr.count("\n") + 1) in msg, msg
    assert len(ipmi_sdr.ipmi_sdr(bad, strict=False)["sensors"]) == len(ipmi_sdr.ipmi_sdr(sdr)["sensors"])
    assert "no SEL records found" in broken(ipmi_sel.ipmi_sel, "name | value | status | x\n")
    assert "empty input" in broken(ipmi_sel.ipmi_sel, "")
    assert "empty input" in broken(ipmi_sdr.ipmi_sdr, "\n")


# -------------------------------------------------------------------------------------------- scontrol_nodes
SCONTROL = fixtures("scontrol-show-node")


@pytest.mark.parametrize("path", SCONTROL, ids=ids(SCONTROL))
def test_scontrol_nodes_is_the_slurm_domain(tmp_path, path):
    module = _slurm_parse.collect(capture_dir=capture(tmp_path, _slurm_parse.CAPTURE_FILE, path))
    got = scontrol_nodes.scontrol_nodes(read(path))
    assert without_sources(got) == without_sources(module) and got["nodes"]


def test_scontrol_nodes_multiline_oneliner_and_json():
    text = read(os.path.join(FIX, "scontrol-show-node", "cshuji-slurm-4nodes-gpu-m60-rtx2080-drain.txt"))
    multi = scontrol_nodes.scontrol_nodes(text)["nodes"]
    assert [n["name"] for n in multi] == ["cortex-01", "dumfries-002", "oxygen-04", "cricket"]
    # scontrol -o prints each record on one line
    oneline = "\n".join(" ".join(ln.strip() for ln in rec.splitlines()) for rec in text.strip().split("\n\n")) + "\n"
    assert len(oneline.splitlines()) == 4
    flat = scontrol_nodes.scontrol_nodes(oneline)["nodes"]
    assert [(n["name"], n["state"], n["reason"], n["gres_gpus"]) for n in flat] == [
        (n["name"], n["state"], n["reason"], n["gres_gpus"]) for n in multi
    ]
    doc = {
        "nodes": [
            {"name": "gpu-node-01", "state": ["IDLE", "DRAIN"], "reason": "gpuops: gpu.xid", "gres": "gpu:h100:8"}
        ]
    }
    for value in (doc, json.dumps(doc)):
        (node,) = scontrol_nodes.scontrol_nodes(value)["nodes"]
        assert (node["base_state"], node["flags"], node["gres_gpus"]) == ("IDLE", ["DRAIN"], 8)


def test_scontrol_nodes_broken():
    msg = broken(scontrol_nodes.scontrol_nodes, "slurm_load_node error: Unable to contact slurm controller")
    assert msg.startswith("gpuops.cluster.scontrol_nodes: scontrol: scontrol:1: no NodeName= record: slurm_load_node")
    kept = scontrol_nodes.scontrol_nodes("Node gpu-node-09 not found", strict=False)
    assert kept["nodes"] == [] and kept["errors"][0]["kind"] == "parse"
    assert "invalid scontrol JSON" in broken(scontrol_nodes.scontrol_nodes, '{"nodes": [')
    assert "no 'nodes' list" in broken(scontrol_nodes.scontrol_nodes, {"meta": {}})
    assert "empty input" in broken(scontrol_nodes.scontrol_nodes, "")


# ------------------------------------------------------------------------------------------------ dcgm_diag
DCGM = fixtures("dcgmi-diag")


@pytest.mark.parametrize("path", DCGM, ids=ids(DCGM))
def test_dcgm_diag_is_what_dcgm_diag_info_returns(tmp_path, path):
    module = _dcgm.collect(capture_dir=capture(tmp_path, _dcgm.CAPTURE_FILE, path))
    got = dcgm_diag.dcgm_diag(read(path))
    assert without_sources(got) == without_sources(module)


def test_dcgm_diag_results_and_tool_error():
    res = dcgm_diag.dcgm_diag(read(os.path.join(FIX, "dcgmi-diag", "dcgm-issue254-v100-dcgm441-pcie-fail.txt")))
    assert (res["overall"], res["version"], res["layout"]) == ("fail", "4.4.1", "dcgm4")
    assert [(t["name"], t["result"]) for t in res["tests"] if t["result"] == "fail"] == [("pcie", "fail")]
    err = dcgm_diag.dcgm_diag(read(os.path.join(FIX, "dcgmi-diag", "dcgm-issue254-plugin-dir-error.txt")))
    assert err["tests"] == [] and {e["kind"] for e in err["errors"]} == {"tool_error"}  # evidence: not raised


def test_dcgm_diag_json_object_and_broken():
    doc = {
        "DCGM GPU Diagnostic": {
            "test_categories": [
                {"category": "Hardware", "tests": [{"name": "memory", "results": [{"gpu_id": "0", "status": "Fail"}]}]}
            ]
        }
    }
    res = dcgm_diag.dcgm_diag(doc)
    assert res == dcgm_diag.dcgm_diag(json.dumps(doc)) and res["overall"] == "fail" and res["gpus"] == {"0": "fail"}
    msg = broken(dcgm_diag.dcgm_diag, "Successfully ran diagnostic. Or did it?")
    assert msg.startswith("gpuops.cluster.dcgm_diag: dcgmi_diag: dcgmi: no dcgmi diag table")
    assert "invalid JSON" in broken(dcgm_diag.dcgm_diag, '{"DCGM GPU Diagnostic": ')
    assert "empty input" in broken(dcgm_diag.dcgm_diag, "")


# ---------------------------------------------------------------------------------------------- boundaries
@pytest.mark.parametrize(
    "fn",
    [
        nvidia_smi.nvidia_smi,
        nvlink.nvlink,
        kernel_events.kernel_events,
        ibstat.ibstat,
        ipmi_sdr.ipmi_sdr,
        ipmi_sel.ipmi_sel,
        scontrol_nodes.scontrol_nodes,
        dcgm_diag.dcgm_diag,
    ],
)
def test_non_text_input_is_a_clear_error(fn):
    for value in (None, 42, ["a", "b"]):
        msg = broken(fn, value)
        assert msg.startswith("gpuops.cluster.%s: expects " % fn.__name__), msg


def test_a_parser_bug_is_a_filter_error_not_a_traceback(monkeypatch):
    def boom(*_a, **_kw):
        raise KeyError("gpus")

    monkeypatch.setattr(_gpu, "_domain", boom)
    msg = broken(nvidia_smi.nvidia_smi, read(os.path.join(FIX, "nvidia-smi-xml", "netdata-rtx4090-535.86.05.xml")))
    assert "internal error while parsing: KeyError" in msg


def test_each_file_maps_its_one_filter():
    for mod in (nvidia_smi, nvlink, kernel_events, ibstat, ipmi_sdr, ipmi_sel, scontrol_nodes, dcgm_diag):
        assert mod.FilterModule().filters() == {mod.NAME: getattr(mod, mod.NAME)}
