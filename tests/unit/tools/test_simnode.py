"""tools/simnode: renderers give the real formats, faults show consistently across tools, CLI exit codes, captures."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TOOLS = os.path.join(ROOT, "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

from simnode import cli, faults, render_gpu, render_misc  # noqa: E402
from simnode.capture import capture  # noqa: E402
from simnode.state import default_state, load, save  # noqa: E402

CHECKS = {
    "gpu.missing",
    "gpu.xid",
    "gpu.ecc",
    "gpu.row_remap",
    "gpu.retired_pages",
    "gpu.recovery_action",
    "gpu.throttle",
    "gpu.temperature",
    "gpu.pcie",
    "gpu.nvlink",
    "gpu.driver",
    "gpu.diag",
    "gpu.fabric",
    "ib.port_state",
    "ib.port_rate",
    "ib.errors",
    "ib.link_flap",
    "ib.optics",
    "ib.ber",
    "ib.congestion",
    "bmc.sensor",
    "bmc.sel",
    "bmc.leak",
    "scheduler.node_state",
    "node.mounts",
    "node.services",
    "node.fabric_manager",
    "nvswitch.sxid",
    "collector.error",
}
COMPONENT = re.compile(
    r"^(gpu:[0-9A-F:.]+|gpu\d+|gpu\d+/nvlink\d+|mlx5_\d+/\d+|mlx5_\d+|net:[\w.-]+|bmc/.+|bmc|mount:/.*|service:[\w.-]+|slurm|node|nvswitch\d+|collector:\w+)$"
)


@pytest.fixture
def fastdir():
    """Scratch dir on tmpfs when there is one (the shared disk is slow for many small files)."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    d = tempfile.mkdtemp(prefix="simnode-test-", dir=base)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _state(**kw):
    return default_state("gpu-node-07", seed=3, **kw)


def _gpu_el(root, bus_id):
    return next(g for g in root.findall("gpu") if g.get("id") == bus_id)


# ----------------------------------------------------------------------------------------------- renderers


@pytest.mark.parametrize(("driver", "dtd", "ind"), [("535.161.08", "v12", "    "), ("590.48.01", "v13", "\t")])
def test_xml_layouts_parse(driver, dtd, ind):
    st = _state(driver=driver)
    out = render_gpu.nvidia_smi_xml(st)
    assert "nvsmi_device_%s.dtd" % dtd in out.splitlines()[1]
    assert "\n%s<driver_version>%s</driver_version>" % (ind, driver) in out
    root = ET.fromstring(out)
    assert root.findtext("attached_gpus") == "8"
    gpus = root.findall("gpu")
    assert [g.get("id") for g in gpus] == [g["bus_id"] for g in st["gpus"]]
    g0 = gpus[0]
    assert g0.findtext("product_name") == "NVIDIA H100 80GB HBM3"
    assert g0.findtext("uuid") == st["gpus"][0]["uuid"]
    assert g0.findtext("pci/pci_gpu_link_info/link_widths/current_link_width") == "16x"
    assert g0.findtext("remapped_rows/row_remapper_histogram/row_remapper_histogram_max") == "2560 bank(s)"
    assert g0.findtext("fabric/state") == "Completed"
    assert g0.findtext("clocks_event_reasons/clocks_event_reason_gpu_idle") == "Active"
    if dtd == "v13":
        assert g0.findtext("gpu_recovery_action") == "None"
        assert g0.find("gpu_power_readings/average_power_draw") is not None
        assert g0.find("ecc_errors/volatile/sram_uncorrectable_parity") is not None
    else:
        assert g0.find("gpu_recovery_action") is None
        assert g0.findtext("gpu_reset_status/reset_required") == "No"
        assert g0.find("gpu_power_readings/power_draw") is not None
        assert g0.find("ecc_errors/volatile/sram_uncorrectable") is not None


@pytest.mark.parametrize(("driver", "col"), [("535.161.08", 41), ("590.48.01", 54)])
def test_text_q_layout(driver, col):
    st = _state(driver=driver)
    st["gpus"][2]["processes"] = [{"pid": 4242, "name": "python3", "type": "C", "used_mib": 1234}]
    out = render_gpu.nvidia_smi_text(st)
    lines = out.splitlines()
    assert lines[1] == "==============NVSMI LOG=============="
    assert [ln for ln in lines if ln.startswith("GPU 0000")] == ["GPU " + g["bus_id"] for g in st["gpus"]]
    drv = next(ln for ln in lines if ln.startswith("Driver Version"))
    assert drv.index(" : ") == col and drv.endswith(driver)
    assert "        Process ID                        : 4242" in lines
    assert sum(1 for ln in lines if ln.strip().startswith("Processes") and ln.endswith(": None")) == 7
    assert out.count("Remapping Failure Occurred") == 8


def test_query_gpu_csv_and_errors():
    st = _state()
    out, rc = render_gpu.nvidia_smi_query(st, ["index", "power.draw", "memory.used", "pcie.link.width.current"], "csv")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == "index, power.draw [W], memory.used [MiB], pcie.link.width.current"
    assert len(lines) == 9 and lines[1].startswith("0, ") and lines[1].endswith(" MiB, 16")
    out, rc = render_gpu.nvidia_smi_query(st, ["index", "power.draw"], "csv,noheader,nounits")
    assert rc == 0 and re.match(r"^0, \d+\.\d\d$", out.splitlines()[0])
    out, rc = render_gpu.nvidia_smi_query(st, ["compute_cap_bogus"], "csv")
    assert rc == 2 and 'Field "compute_cap_bogus" is not a valid field to query.' in out


def test_nvlink_status_and_errors():
    st = _state()
    faults.apply(st, "nvlink_down", random.Random(1), gpu=2, link=5)
    s = render_gpu.nvlink_status(st)
    assert "\t Link 5: <inactive>" in s.split("GPU 2:")[1].split("GPU 3:")[0]
    assert s.count("26.562 GB/s") == 8 * 18 - 1
    e = render_gpu.nvlink_errors(st)
    assert e.count("Replay Errors: 0") == 8 * 18 - 1


def test_ibstat_and_sysfs_real_layout(fastdir):
    st = _state()
    out = render_misc.ibstat(st)
    assert out.count("CA 'mlx5_") == 8 and "\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 400\n" in out
    render_misc.write_sysfs(st, fastdir, links=True)
    cls = os.path.join(fastdir, "sys", "class", "infiniband")
    link = os.path.join(cls, "mlx5_0")
    assert os.path.islink(link)
    real = os.path.realpath(link)
    assert real.startswith(os.path.join(os.path.realpath(fastdir), "sys", "devices", "pci0000:"))
    assert real.endswith(os.path.join("infiniband", "mlx5_0"))
    assert os.path.realpath(os.path.join(link, "subsystem")) == os.path.realpath(cls)  # the loop
    assert os.path.realpath(os.path.join(link, "device")).endswith("0000:1a:00.0")
    with open(os.path.join(link, "ports", "1", "state")) as fh:
        assert fh.read() == "4: ACTIVE\n"
    with open(os.path.join(link, "ports", "1", "rate")) as fh:
        assert fh.read() == "400 Gb/sec (4X NDR)\n"
    assert len(os.listdir(os.path.join(link, "ports", "1", "counters"))) == 21
    render_misc.write_sysfs(st, fastdir, links=True)  # refresh in place
    assert os.path.islink(link)


def test_ipmitool_layouts():
    st = _state()
    sdr = render_misc.sdr_elist(st).splitlines()
    assert sdr[0].startswith("Inlet Temp       | 04h | ok  |  7.1 | ") and sdr[0].endswith(" degrees C")
    assert all(len(ln.split(" | ")) == 5 for ln in sdr)
    sel = render_misc.sel_list(st).splitlines()
    assert re.match(r"^   1 \| \d\d/\d\d/\d{4} \| \d\d:\d\d:\d\d \| .+ \| Asserted$", sel[0])
    fru = render_misc.fru_print(st)
    assert "FRU Device Description : PSU2 (ID 2)" in fru and " Product Serial        : P3K04GR" in fru
    assert render_misc.mc_info(st).startswith("Device ID                 : 32\n")


@pytest.mark.parametrize("version", ["3.3.3", "4.0.0"])
def test_dcgmi_layouts(version):
    st = _state()
    st["dcgm"]["version"] = version
    st["dcgm"]["fail_gpus"] = {"3": "GPU 3 Thermal violations totaling 13.3 seconds"}
    out, rc = render_misc.dcgmi_diag(st, 3)
    assert rc == 0
    rows = out.splitlines()
    assert all(len(r) == 78 for r in rows if r.startswith(("|", "+")))
    if version.startswith("3"):
        assert rows[0] == "Successfully ran diagnostic for group."
        assert "| PCIe                      | %-46s |" % "Pass - GPUs: 0, 1, 2, 4, 5, 6, 7" in rows
        assert "|                           | Fail - GPU: 3                                  |" in rows
        assert "| Targeted Power            | Pass - All                                     |" in rows
    else:
        assert "|                           | GPU3: Fail                                     |" in rows
        assert rows.index(
            "| memory                    | Fail                                           |"
        ) < rows.index("| pcie                      | Pass                                           |")
        assert "| targeted_power            | Pass                                           |" in rows
    assert any(r.startswith("| Warning                   | GPU 3 Thermal") for r in rows)


def test_all_reduce_perf_format():
    out = render_misc.all_reduce_perf(_state(), 8, 1 << 30, 2)
    assert out.startswith("# nThread 1 nGpus 8 minBytes 8 maxBytes 1073741824")
    rows = [ln for ln in out.splitlines() if ln and not ln.startswith("#")]
    assert len(rows) == 28 and rows[-1].split()[0] == "1073741824"
    busbw = float(rows[-1].split()[7])
    assert 300 < busbw < 490
    assert re.search(r"^# Avg bus bandwidth    : [\d.]+ $", out, re.M)


def test_journal_and_dmesg_forms():
    st = _state()
    j = render_misc.journalctl_k(st).splitlines()
    assert re.match(r"^2026-12-02T06:00:02\+00:00 gpu-node-07 kernel: nvidia: loading", j[0])
    d = render_misc.dmesg(st, "raw").splitlines()
    assert d[0] == "[    2.329368] nvidia: loading out-of-tree module taints kernel."
    assert render_misc.dmesg(st, "iso").splitlines()[0].startswith("2026-12-02T06:00:02,329368+00:00 ")
    assert render_misc.dmesg(st, "ctime").splitlines()[0].startswith("[Wed Dec  2 06:00:02 2026] ")


# ----------------------------------------------------------------------------------------------- faults


@pytest.mark.parametrize("name", sorted(faults.FAULTS))
def test_every_fault_renders_everywhere(name, fastdir):
    st = _state()
    res = faults.apply(st, name, random.Random(5))
    f = faults.FAULTS[name]
    if f.benign:
        assert res["expect"] == []
    else:
        assert res["expect"], name
    for e in res["expect"]:
        assert e["check"] in CHECKS and COMPONENT.match(e["component"]), e
        assert e["severity_hint"] in ("P0", "P1", "P2", "P3") and e["fault"] == name
    assert (res["previous"] is not None) == f.needs_previous
    meta = capture(st, fastdir)
    for fname, entry in meta["files"].items():
        assert os.path.exists(os.path.join(fastdir, fname)), fname
        if fname != "nvidia-smi-q.xml" or entry["rc"] != 0:
            continue
        ET.parse(os.path.join(fastdir, fname))
    assert st["faults"] == [name]


def test_xid79_consistent_across_tools():
    st = _state()
    e, missing, dcgm = faults.apply(st, "xid79", random.Random(0), gpu=3)["expect"]
    assert (dcgm["check"], dcgm["component"]) == ("collector.error", "collector:dcgm")
    g = st["gpus"][3]
    assert e["component"] == "gpu:00000000:5D:00.0" and e["code"] == "79" and e["gpu_index"] == 3
    assert e["bus_id"] == g["bus_id"] == "00000000:5D:00.0"
    assert (missing["check"], missing["component"], missing["code"]) == (
        "gpu.missing",
        "gpu:00000000:5D:00.0",
        "unreadable",
    )
    r = cli.run_tool(st, "nvidia-smi", ["-q", "-x"])
    assert r.rc == 15
    assert (
        r.stdout
        == "Unable to determine the device handle for GPU 0000:5D:00.0: GPU is lost.  Reboot the system to recover this GPU\n"
    )
    assert "<nvidia_smi_log>" not in r.stdout
    assert cli.run_tool(st, "nvidia-smi", ["-q"]).rc == 15
    ok = cli.run_tool(st, "nvidia-smi", ["-q", "-x", "-i", "0"])
    assert ok.rc == 0 and ET.fromstring(ok.stdout).findtext("attached_gpus") == "1"
    log = render_misc.journalctl_k(st)
    assert "NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus." in log
    assert "NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus." in log
    assert g["bus_id"][4:-2].lower() == "0000:5d:00"
    assert cli.run_tool(st, "dcgmi", ["diag", "-r", "1"]).rc == 226


def test_xid48_ecc_and_remap_consistent():
    st = _state()
    faults.apply(st, "xid48", random.Random(0), gpu=1)
    g = _gpu_el(ET.fromstring(render_gpu.nvidia_smi_xml(st)), st["gpus"][1]["bus_id"])
    assert g.findtext("ecc_errors/volatile/dram_uncorrectable") == "1"
    assert g.findtext("remapped_rows/remapped_row_pending") == "Yes"
    assert g.findtext("gpu_reset_status/reset_required") == "Yes"
    assert "NVRM: Xid (PCI:0000:3b:00): 48," in render_misc.journalctl_k(st)
    txt = render_gpu.nvidia_smi_text(st).split("GPU 00000000:3B:00.0")[1].split("GPU 00000000:4C:00.0")[0]
    assert re.search(r"Volatile\n(.*\n){4}\s+DRAM Uncorrectable\s+: 1\n", txt)
    out, rc = render_misc.dcgmi_diag(st, 2)
    assert rc == 226 and "GPU 1 has uncorrectable memory errors and row" in out


def test_throttle_faults_in_xml_and_csv():
    st = _state()
    faults.apply(st, "thermal_throttle", random.Random(0), gpu=4)
    g = _gpu_el(ET.fromstring(render_gpu.nvidia_smi_xml(st)), st["gpus"][4]["bus_id"])
    assert g.findtext("clocks_event_reasons/clocks_event_reason_hw_thermal_slowdown") == "Active"
    assert g.findtext("clocks_event_reasons/clocks_event_reason_hw_slowdown") == "Active"
    assert g.findtext("clocks_event_reasons/clocks_event_reason_gpu_idle") == "Not Active"
    assert g.findtext("temperature/gpu_temp") == "89 C"
    out, _unused = render_gpu.nvidia_smi_query(st, ["index", "clocks_event_reasons.active"], "csv,noheader")
    assert out.splitlines()[4] == "4, 0x0000000000000048"
    st2 = _state()
    faults.apply(st2, "power_brake", random.Random(0))
    txt = render_gpu.nvidia_smi_text(st2)
    assert txt.count("HW Power Brake Slowdown       : Active") == 8


def test_ib_faults_show_in_ibstat_and_sysfs(fastdir):
    st = _state()
    faults.apply(st, "ib_port_polling", random.Random(0), hca="mlx5_2")
    faults.apply(st, "ib_rate_drop", random.Random(0), hca="mlx5_5")
    out = cli.run_tool(st, "ibstat", ["mlx5_2"]).stdout
    assert "\t\tState: Down\n\t\tPhysical state: Polling\n\t\tRate: 40\n" in out
    render_misc.write_sysfs(st, fastdir, links=False)
    base = os.path.join(fastdir, "sys", "class", "infiniband")
    assert not os.path.islink(os.path.join(base, "mlx5_2"))
    with open(os.path.join(base, "mlx5_2", "ports", "1", "phys_state")) as fh:
        assert fh.read() == "2: Polling\n"
    with open(os.path.join(base, "mlx5_5", "ports", "1", "rate")) as fh:
        assert fh.read() == "200 Gb/sec (4X HDR)\n"
    assert "Cable unplugged" in render_misc.journalctl_k(st)


def test_counter_growth_needs_previous():
    st = _state()
    res = faults.apply(st, "ib_flap", random.Random(0), hca="mlx5_3")
    prev = res["previous"]
    cur_c = st["hcas"][3]["ports"][0]["counters"]
    prev_c = prev["hcas"][3]["ports"][0]["counters"]
    assert cur_c["link_downed"] - prev_c["link_downed"] == 4
    assert prev["now"] == st["now"] - faults.PREVIOUS_AGE_S
    assert prev_c["port_rcv_data"] < cur_c["port_rcv_data"]
    st = _state()
    res = faults.apply(st, "ib_counter_reset", random.Random(0), hca="mlx5_0")
    assert res["expect"] == []
    assert (
        res["previous"]["hcas"][0]["ports"][0]["counters"]["symbol_error"]
        > st["hcas"][0]["ports"][0]["counters"]["symbol_error"]
    )


def test_bmc_faults():
    st = _state()
    faults.apply(st, "psu_failure", random.Random(0), psu=2)
    faults.apply(st, "leak", random.Random(0))
    sdr = render_misc.sdr_elist(st)
    assert "PSU2 Status      | 61h | ok  | 10.2 | Presence detected, Failure detected" in sdr
    assert "Leak Detect      | A0h | ok  |  7.1 | State Asserted" in sdr
    sel = render_misc.sel_list(st)
    assert "| Power Supply PSU2 Status | Failure detected | Asserted" in sel
    assert "| Cooling Device Leak Detect | State Asserted | Asserted" in sel
    short = render_misc.sel_list(st, extended=False)
    assert "| Power Supply #0x61 | Failure detected | Asserted" in short and "Leak Detect" not in short


def test_node_faults_in_node_json_and_scontrol():
    st = _state()
    faults.apply(st, "hung_mount", random.Random(0))
    faults.apply(st, "drained", random.Random(0))
    faults.apply(st, "fabric_manager_down", random.Random(0))
    doc = json.loads(render_misc.node_json(st))
    lustre = next(m for m in doc["mounts"] if m["path"] == "/lustre")
    assert lustre["present"] is True and lustre["responsive"] is False and lustre["error"]
    assert doc["services"]["nvidia-fabricmanager"] == {"running": False, "version": "535.161.08"}
    sc = render_misc.scontrol_show_node(st)
    assert "   State=IDLE+DRAIN ThreadsPerCore=2" in sc
    assert "   Reason=flaky NCCL, checking cables T-4711 [jdoe@2026-12-01T16:20:11]" in sc


def test_gpu_missing_lists_seven():
    st = _state()
    assert faults.apply(st, "gpu_missing", random.Random(0), gpu=6)["expect"][0]["check"] == "gpu.missing"
    root = ET.fromstring(render_gpu.nvidia_smi_xml(st))
    assert root.findtext("attached_gpus") == "7" and len(root.findall("gpu")) == 7
    assert cli.run_tool(st, "nvidia-smi", ["-L"]).stdout.count("\n") == 7


# ----------------------------------------------------------------------------------------------- CLI


def _cli(state_path, *args, python=sys.executable, timeout=30):
    env = dict(os.environ, PYTHONPATH=TOOLS, LC_ALL="C")
    return subprocess.run(
        [python, "-m", "simnode", "--state", state_path, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def test_cli_exit_codes_and_reset(fastdir):
    sp = os.path.join(fastdir, "state.json")
    assert _cli(sp, "init", "gpu-node-09").returncode == 0
    r = _cli(sp, "nvidia-smi", "-q", "-x")
    assert r.returncode == 0 and ET.fromstring(r.stdout).findtext("attached_gpus") == "8"
    assert _cli(sp, "nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader").stdout.count("GPU-") == 8
    assert _cli(sp, "nvidia-smi", "-i", "12", "-q").returncode == 6
    assert _cli(sp, "fault", "row_remap_pending", "gpu=2").returncode == 0
    st = load(sp)
    st["gpus"][5]["processes"] = [{"pid": 777, "name": "python3", "type": "C", "used_mib": 100}]
    st["gpus"][2]["recovery_action"] = "gpu_reset"
    save(st, sp)
    busy = _cli(sp, "nvidia-smi", "-r", "-i", "5")
    assert busy.returncode == 255 and "is currently in use by another process" in busy.stdout
    ok = _cli(sp, "nvidia-smi", "-r", "-i", "2")
    assert ok.returncode == 0 and ok.stdout.startswith("GPU 00000000:4C:00.0 was successfully reset.")
    st = load(sp)
    assert st["gpus"][2]["remap"]["pending"] is False and st["gpus"][2]["recovery_action"] == "none"
    assert st["gpus"][2]["remap"]["unc"] == 1  # the remap itself stays
    assert _cli(sp, "fault", "xid79", "gpu=4").returncode == 0
    lost = _cli(sp, "nvidia-smi")
    assert lost.returncode == 15 and "GPU is lost.  Reboot the system" in lost.stdout
    assert _cli(sp, "nvidia-smi", "-r", "-i", "4").returncode == 15
    assert _cli(sp, "ibstat", "mlx5_42").returncode == 255
    assert _cli(sp, "ipmitool", "-I", "open", "sdr", "elist").stdout.startswith("Inlet Temp")
    assert _cli(sp, "ipmitool", "chassis", "bogus").returncode == 1
    j = _cli(sp, "journalctl", "-k", "-o", "short-iso", "--since", "2026-12-02 09:00:00").stdout
    assert "Xid (PCI:0000:9b:00): 79" in j and "loading out-of-tree" not in j
    nccl = _cli(sp, "all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2")
    assert nccl.returncode == 3 and "unspecified launch failure" in nccl.stdout  # a GPU is lost
    assert _cli(sp, "nosuchtool").returncode == 2


def test_cli_dcgmi_hang_sleeps(fastdir):
    sp = os.path.join(fastdir, "state.json")
    st = _state()
    st["dcgm"].update({"hang": True, "hang_seconds": 0.6})
    save(st, sp)
    t0 = time.time()
    r = _cli(sp, "dcgmi", "diag", "-r", "1")
    assert r.returncode == 0 and time.time() - t0 >= 0.6
    assert "| Denylist                  | Pass" in r.stdout


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="no system python")
def test_cli_runs_under_system_python(fastdir):
    sp = os.path.join(fastdir, "state.json")
    assert _cli(sp, "init", "gpu-node-01", python="/usr/bin/python3").returncode == 0
    r = _cli(sp, "nvidia-smi", "nvlink", "-s", python="/usr/bin/python3")
    assert r.returncode == 0 and r.stdout.count("26.562 GB/s") == 144
    assert _cli(sp, "capture", os.path.join(fastdir, "cap"), python="/usr/bin/python3").returncode == 0
    assert _cli(sp, "sysfs", os.path.join(fastdir, "root"), python="/usr/bin/python3").returncode == 0
    assert os.path.islink(os.path.join(fastdir, "root", "sys", "class", "infiniband", "mlx5_7"))


# ----------------------------------------------------------------------------------------------- capture


def test_capture_directory_contents(fastdir):
    from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import capture as _capture

    st = _state()
    faults.apply(st, "dcgm_hang", random.Random(0))
    meta = capture(st, fastdir)
    # NCCL output: burn-in only; IMEX (nvidia-imex-ctl): GB200 / NVL72 only, the simulated node is an H100
    expected = set(_capture.FILES) - {
        "capture.json",
        "nccl-all-reduce.txt",
        "nvidia-imex-ctl-q.txt",
        "nvidia-imex-ctl-N-j.txt",
    }
    assert expected <= set(os.listdir(fastdir))
    optics = {n for n in meta["files"] if n.startswith(("mlxlink-", "ethtool-"))}  # per-HCA / per-netdev files
    assert set(meta["files"]) - optics == expected and optics == {"mlxlink-mlx5_%d.txt" % i for i in range(8)}
    with open(os.path.join(fastdir, "capture.json")) as fh:
        on_disk = json.load(fh)
    assert on_disk["hostname"] == "gpu-node-07" and on_disk["boot_id"] == st["boot_id"]
    assert on_disk["captured_at"] == "2026-12-02T10:00:00Z" and on_disk["schema"] == "gpuops.capture/v1"
    assert on_disk["files"]["dcgmi-diag.txt"]["timed_out"] is True and on_disk["files"]["dcgmi-diag.txt"]["rc"] == 124
    assert on_disk["files"]["nvidia-smi-q.xml"]["rc"] == 0
    with open(os.path.join(fastdir, _capture.SYSFS_IB_FLAT), encoding="utf-8") as fh:
        listing = fh.read().splitlines()
    assert sorted({ln[2:].split("/", 1)[0] for ln in listing}) == ["mlx5_%d" % i for i in range(8)]
    assert listing == sorted(listing) and all(ln.startswith("./mlx5_") and ":" in ln for ln in listing)
    for dirpath, dirnames, filenames in os.walk(fastdir):
        for n in dirnames + filenames:
            assert not os.path.islink(os.path.join(dirpath, n)), "capture dirs hold plain files only"
    node = json.loads(open(os.path.join(fastdir, "node.json")).read())
    assert node["boot_id"] == st["boot_id"] and [m["path"] for m in node["mounts"]] == ["/home", "/lustre"]


def test_reboot_clears_transient_state(fastdir):
    from simnode.state import new_boot

    sp = os.path.join(fastdir, "state.json")
    st = _state()
    for name, kw in (
        ("xid79", {"gpu": 1}),
        ("xid48", {"gpu": 2}),
        ("ib_flap", {"hca": "mlx5_0"}),
        ("xid64", {"gpu": 3}),
    ):
        faults.apply(st, name, random.Random(0), **kw)
    save(st, sp)
    new = new_boot(sp, "b00t-1d", "550.54.15")
    assert new["boot_id"] == "b00t-1d" and new["driver_version"] == "550.54.15"
    assert new["fabric_manager"]["version"] == "550.54.15"
    assert not any(g["lost"] for g in new["gpus"])
    assert new["gpus"][2]["remap"]["pending"] is False and new["gpus"][2]["remap"]["unc"] == 1
    assert new["gpus"][2]["ecc"]["volatile"]["dram_unc"] == 0 and new["gpus"][2]["ecc"]["aggregate"]["dram_unc"] == 1
    assert new["gpus"][3]["remap"]["failure"] is True
    assert new["hcas"][0]["ports"][0]["counters"]["link_downed"] == 0
    assert "Xid" not in render_misc.journalctl_k(new)
    assert load(sp)["boot_id"] == "b00t-1d"
    assert cli.run_tool(load(sp), "nvidia-smi", ["-q", "-x"]).rc == 0


@pytest.mark.parametrize(
    ("since", "want"),
    [
        ("2026-12-02 09:00:00", 1796202000.0),
        ("2026-12-02T09:00:00Z", 1796202000.0),
        ("2026-12-02T10:00:00+01:00", 1796202000.0),
        ("2026-12-02T09:00:00.5+00:00", 1796202000.5),
        ("-1h", 1796202000.0),
        ("2 hours ago", 1796198400.0),
        ("yesterday", 1796083200.0),
        ("garbage", None),
    ],
)
def test_journalctl_since_forms(since, want):
    assert cli._parse_since(since, 1796205600.0) == want
    st = _state()
    r = cli.run_tool(st, "journalctl", ["-k", "-o", "short-iso", "--no-pager", "-q", "--since", since])
    if want is None:
        assert r.rc == 1 and r.stderr.startswith("Failed to parse timestamp")
    else:
        assert r.rc == 0


# ------------------------------------------------------------------------------------- argv dispatch (cli.py)
@pytest.mark.parametrize(
    "args, rc, stdout_starts",
    [
        (["--version"], 0, "NVIDIA-SMI version  : 535.161.08\nNVML version        : 535.161.08\n"),
        (["nvlink", "-s"], 0, "GPU 0: NVIDIA H100 80GB HBM3"),
        (["-L"], 0, "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-"),
        (["--query-gpu=index,power.draw", "--format=csv,noheader"], 0, "0, "),
        (["--query-gpu=bogus", "--format=csv"], 2, 'Field "bogus" is not a valid field to query.'),
        (["-q"], 0, "\n==============NVSMI LOG=============="),
        (["-qx"], 0, "<?xml version"),
        ([], 0, ""),
        (["bogus"], 2, ""),
        (["-i", "9", "-L"], 6, "No devices were found"),
    ],
)
def test_nvidia_smi_argv_picks_the_mode(args, rc, stdout_starts):
    r = cli.run_tool(_state(), "nvidia-smi", args)
    assert r.rc == rc and r.stdout.startswith(stdout_starts), (r.rc, r.stdout[:120], r.stderr)
    if args == ["bogus"]:
        assert r.stderr.startswith("Invalid combination of input arguments.")


def test_nvidia_smi_lost_gpu_per_mode():
    st = _state()
    faults.apply(st, "xid79", random.Random(0), gpu=3)
    lost = render_gpu.lost_message(st["gpus"][3]) + "\n"
    for args in (["nvlink"], ["nvlink", "-e"], ["--query-gpu=index", "--format=csv"], ["-q"], ["-q", "-x"], []):
        r = cli.run_tool(st, "nvidia-smi", args)
        assert (r.stdout, r.rc) == (lost, render_gpu.RC_GPU_LOST), args
    listing = cli.run_tool(st, "nvidia-smi", ["-L"])  # -L lists the others and names the lost one
    assert listing.rc == render_gpu.RC_GPU_LOST and listing.stdout.count("\n") == 8 and lost in listing.stdout
    assert cli.run_tool(st, "nvidia-smi", ["--version"]).rc == 0
    st["driver_loaded"] = False
    assert cli.run_tool(st, "nvidia-smi", ["-L"]).rc == 9


@pytest.mark.parametrize(
    "args, rc, renders",
    [
        (["sdr"], 0, render_misc.sdr_list),
        (["sdr", "list"], 0, render_misc.sdr_list),
        (["-I", "lanplus", "-H", "10.0.0.1", "-U", "admin", "sdr", "elist"], 0, render_misc.sdr_elist),
        (["sel", "elist"], 0, lambda st: render_misc.sel_list(st, extended=True)),
        (["sel", "list"], 0, lambda st: render_misc.sel_list(st, extended=False)),
        (["sel", "info"], 0, render_misc.sel_info),
        (["fru", "print"], 0, render_misc.fru_print),
        (["mc", "info"], 0, render_misc.mc_info),
        (["sdr", "type"], 1, lambda st: ""),
        (["sel"], 1, lambda st: ""),
    ],
)
def test_ipmitool_argv_picks_the_command(args, rc, renders):
    st = _state()
    r = cli.run_tool(st, "ipmitool", args)
    assert (r.rc, r.stdout) == (rc, renders(st))
    if rc:
        assert r.stderr.startswith("Invalid command: ")


def test_ipmitool_sdr_type_filters_sensors():
    out = cli.run_tool(_state(), "ipmitool", ["sdr", "type", "Fan"]).stdout
    assert out and all(ln.startswith("FAN") for ln in out.splitlines())
    psu = cli.run_tool(_state(), "ipmitool", ["sdr", "type", "Power", "Supply"]).stdout
    assert psu and all("psu" in ln.split("|")[0].lower() for ln in psu.splitlines())
