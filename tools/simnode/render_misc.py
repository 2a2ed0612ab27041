"""Renderers for everything but nvidia-smi: kernel log, InfiniBand, ipmitool, dcgmi, nccl-tests, scontrol, node.json.

Each layout follows a real sample kept in templates/ (see the .source.txt sidecars) or the tool's source
as described in shared/reference/formats.md.
"""

from __future__ import annotations

import json
import os
import shutil
import time

# ------------------------------------------------------------------------------------------------
# kernel log


def _iso(epoch: float, colon: bool = True) -> str:
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch))
    return base + ("+00:00" if colon else "+0000")


def journal_lines(state: dict, since: float | None = None) -> list:
    entries = sorted(state.get("kernel_log") or [], key=lambda e: e["time"])
    return [e for e in entries if since is None or e["time"] >= since]


def journalctl_k(state: dict, since: float | None = None) -> str:
    """`journalctl -k -o short-iso [--since ...]`: one line per message, `<iso> <host> kernel: <msg>`."""
    host = state["hostname"]
    lines = journal_lines(state, since)
    if not lines:
        return "-- No entries --\n"
    return "".join("%s %s kernel: %s\n" % (_iso(e["time"]), host, e["msg"]) for e in lines)


def dmesg(state: dict, fmt: str = "raw") -> str:
    """`dmesg` (raw: [seconds.usec]), `dmesg -T` (ctime) or `dmesg --time-format=iso`."""
    boot = state["boot_time"]
    out = []
    for e in journal_lines(state):
        if fmt == "iso":
            t = e["time"]
            usec = int(round((t - int(t)) * 1e6)) % 1000000
            out.append("%s,%06d+00:00 %s" % (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)), usec, e["msg"]))
        elif fmt == "ctime":
            out.append("[%s] %s" % (time.strftime("%a %b %e %H:%M:%S %Y", time.gmtime(e["time"])), e["msg"]))
        else:
            out.append("[%12.6f] %s" % (max(0.0, e["time"] - boot), e["msg"]))
    return "\n".join(out) + ("\n" if out else "")


# ------------------------------------------------------------------------------------------------
# InfiniBand

STATE_NUM = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4, "ACTIVE_DEFER": 5}
STATE_IBSTAT = {"DOWN": "Down", "INIT": "Initializing", "ARMED": "Armed", "ACTIVE": "Active", "ACTIVE_DEFER": "Active"}
PHYS_NUM = {
    "Sleep": 1,
    "Polling": 2,
    "Disabled": 3,
    "PortConfigurationTraining": 4,
    "LinkUp": 5,
    "LinkErrorRecovery": 6,
    "Phy Test": 7,
}


def _rate_label(p: dict) -> str:
    r = p["rate_gbps"]
    r = int(r) if float(r).is_integer() else r
    return "%s Gb/sec (%s %s)" % (r, p.get("width", "4X"), p.get("speed", "NDR"))


def ibstat(state: dict) -> str:
    """`ibstat` (infiniband-diags): TAB-indented, one block per CA."""
    out = []
    for h in sorted(state.get("hcas") or [], key=lambda h: h["name"]):
        out += [
            "CA '%s'" % h["name"],
            "\tCA type: %s" % h["ca_type"],
            "\tNumber of ports: %d" % len(h["ports"]),
            "\tFirmware version: %s" % h["fw_ver"],
            "\tHardware version: 0",
            "\tNode GUID: %s" % h["node_guid"],
            "\tSystem image GUID: %s" % h["node_guid"],
        ]
        for p in h["ports"]:
            r = p["rate_gbps"]
            out += [
                "\tPort %d:" % p["port"],
                "\t\tState: %s" % STATE_IBSTAT.get(p["state"], "???"),
                "\t\tPhysical state: %s" % p["phys_state"],
                "\t\tRate: %s" % (int(r) if float(r).is_integer() else r),
                "\t\tBase lid: %d" % (p["lid"] if p["state"] == "ACTIVE" else 0),
                "\t\tLMC: 0",
                "\t\tSM lid: %d" % (p["sm_lid"] if p["state"] == "ACTIVE" else 0),
                "\t\tCapability mask: %s" % p.get("capability_mask", "0xa751e848"),
                "\t\tPort GUID: %s" % p["port_guid"],
                "\t\tLink layer: %s" % p["link_layer"],
            ]
    return "\n".join(out) + "\n"


#: hw_counters a capture keeps (docs/capture.md: an allowlisted copy); the live tree has all of them.
CAPTURE_HW_COUNTERS = (
    "duplicate_request",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "out_of_buffer",
    "out_of_sequence",
    "packet_seq_err",
    "req_cqe_error",
    "resp_cqe_error",
    "rnr_nak_retry_err",
    "roce_adp_retrans",
    "rx_icrc_encapsulated",
)
CAPTURE_SKIP = ("hw_rev", "node_type", "node_desc", "sys_image_guid", "lid_mask_count", "cap_mask")


def _hca_files(h: dict, allowlist: bool = False) -> dict:
    """relative path -> content for one HCA directory (as the kernel's sysfs shows it)."""
    files = {
        "board_id": h["board_id"],
        "fw_ver": h["fw_ver"],
        "hca_type": h["ca_type"],
        "hw_rev": "0x0",
        "node_guid": _guid_colon(h["node_guid"]),
        "sys_image_guid": _guid_colon(h["node_guid"]),
        "node_type": "1: CA",
        "node_desc": "%s %s" % (h.get("host", "node"), h["name"]),
    }
    for p in h["ports"]:
        base = "ports/%d/" % p["port"]
        files[base + "state"] = "%d: %s" % (STATE_NUM.get(p["state"], 1), p["state"])
        files[base + "phys_state"] = "%d: %s" % (PHYS_NUM.get(p["phys_state"], 0), p["phys_state"])
        files[base + "rate"] = _rate_label(p)
        files[base + "link_layer"] = p["link_layer"]
        files[base + "lid"] = "0x%x" % (p["lid"] if p["state"] == "ACTIVE" else 0)
        files[base + "sm_lid"] = "0x%x" % (p["sm_lid"] if p["state"] == "ACTIVE" else 0)
        files[base + "lid_mask_count"] = "0"
        files[base + "cap_mask"] = p.get("capability_mask", "0xa751e848")
        for name, val in p["counters"].items():
            files[base + "counters/" + name] = str(val)
        for name, val in p["hw_counters"].items():
            if not allowlist or name in CAPTURE_HW_COUNTERS:
                files[base + "hw_counters/" + name] = str(val)
    if allowlist:
        for k in list(files):
            if k.rsplit("/", 1)[-1] in CAPTURE_SKIP:
                del files[k]
    return files


def sysfs_listing(state: dict) -> str:
    """``infiniband-sysfs.txt`` as ``gpuops.cluster.capture`` writes it: the allowlisted attributes of every HCA,
    one sorted ``./<hca>/<path>:<value>`` line each (the form ``grep -r .`` prints in /sys/class/infiniband)."""
    lines = []
    for h in state.get("hcas") or []:
        h = dict(h, host=state.get("hostname", "node"))
        for rel, text in _hca_files(h, allowlist=True).items():
            lines.append("./%s/%s:%s" % (h["name"], rel, text))
    return "".join(line + "\n" for line in sorted(lines))


def _guid_colon(g: str) -> str:
    h = g[2:] if g.startswith("0x") else g
    h = h.rjust(16, "0")
    return ":".join(h[i : i + 4] for i in range(0, 16, 4))


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, (text + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def write_sysfs(state: dict, root: str, links: bool = True) -> list:
    """Write the IB sysfs tree under <root>/sys. Returns the HCA names written.

    links=True: the REAL layout: sys/class/infiniband/<hca> is a symlink to
    ../../devices/pci0000:<rp>/0000:<rp>:01.0/<pci>/infiniband/<hca>, which holds `device` (-> the PCI dir) and
    `subsystem` (-> sys/class/infiniband: a loop). links=False: plain directories under sys/class/infiniband
    (what a capture directory holds: docs/capture.md, "plain files, no links").
    """
    cls = os.path.join(root, "sys", "class", "infiniband")
    if os.path.isdir(cls) or os.path.islink(cls):
        shutil.rmtree(cls, ignore_errors=True)
    os.makedirs(cls, exist_ok=True)
    names = []
    for h in state.get("hcas") or []:
        h = dict(h, host=state.get("hostname", "node"))
        if links:
            rp = h.get("root", "17")
            pci_rel = os.path.join("devices", "pci0000:%s" % rp, "0000:%s:01.0" % rp, h["pci"])
            pci_dir = os.path.join(root, "sys", pci_rel)
            dev_dir = os.path.join(pci_dir, "infiniband", h["name"])
            if os.path.isdir(dev_dir):
                shutil.rmtree(dev_dir)
            os.makedirs(dev_dir)
            _write(os.path.join(pci_dir, "vendor"), "0x15b3")
            _write(os.path.join(pci_dir, "device"), "0x1021")
            os.symlink(os.path.join("..", ".."), os.path.join(dev_dir, "device"))
            os.symlink(os.path.join(*([".."] * 6), "class", "infiniband"), os.path.join(dev_dir, "subsystem"))
            os.symlink(os.path.join("..", "..", pci_rel, "infiniband", h["name"]), os.path.join(cls, h["name"]))
        else:
            dev_dir = os.path.join(cls, h["name"])
            os.makedirs(dev_dir)
        made = set()
        for rel, text in _hca_files(h, allowlist=not links).items():
            sub = os.path.dirname(rel)
            if sub and sub not in made:
                os.makedirs(os.path.join(dev_dir, sub), exist_ok=True)
                made.add(sub)
            _write(os.path.join(dev_dir, rel), text)
        names.append(h["name"])
    return names


# ------------------------------------------------------------------------------------------------
# ipmitool


def sdr_elist(state: dict) -> str:
    """`ipmitool sdr elist`: name | number | status | entity | reading (Dell R620 sample layout)."""
    out = []
    for s in state["bmc"]["sensors"]:
        out.append(
            "%-16s | %s | %-3s | %4s | %s" % (s["name"][:16], s["number"], s["status"], s["entity"], s["reading"])
        )
    return "\n".join(out) + "\n"


def sdr_list(state: dict) -> str:
    """`ipmitool sdr` / `sdr list`: three columns; discrete sensors show a raw state byte."""
    out = []
    for s in state["bmc"]["sensors"]:
        if s["kind"] == "discrete":
            val = "Not Readable" if s["status"] == "ns" else "0x01"
            st = "ns" if s["status"] == "ns" else "ok"
        else:
            val, st = (
                s["reading"],
                {"ok": "ok", "ucr": "cr", "lcr": "cr", "unc": "nc", "lnc": "nc"}.get(s["status"], s["status"]),
            )
        out.append("%-16s | %-17s | %s" % (s["name"][:16], val, st))
    return "\n".join(out) + "\n"


def _sel_short(state: dict, sensor: str) -> str:
    """`sel list` names the sensor by number (`Power Supply #0x61`) where `sel elist` uses the SDR name."""
    for s in state["bmc"]["sensors"]:
        if sensor.endswith(" " + s["name"]):
            return "%s #0x%s" % (sensor[: -len(s["name"]) - 1], s["number"][:-1].lower())
    return sensor


def sel_list(state: dict, extended: bool = True) -> str:
    """`ipmitool sel elist` (extended=True) / `sel list`: hex record ids, US locale date/time."""
    out = []
    for n, e in enumerate(state["bmc"]["sel"], start=1):
        if e.get("time") is None:
            when = " Pre-Init  |%010d" % int(e.get("uptime", 0))
        else:
            when = time.strftime("%m/%d/%Y | %H:%M:%S", time.gmtime(e["time"]))
        sensor = e["sensor"] if extended else _sel_short(state, e["sensor"])
        line = "%4x | %s | %s | %s | %s" % (n, when, sensor, e["event"], e["direction"])
        if e.get("extra"):
            line += " | " + e["extra"]
        out.append(line)
    return "\n".join(out) + ("\n" if out else "")


def sel_info(state: dict) -> str:
    """`ipmitool sel info` (Supermicro X10 sample layout; 512 units of 20 bytes)."""
    n = len(state["bmc"]["sel"])
    total = 512
    used = min(total, n) if not state["bmc"].get("sel_full") else total
    last = max((e["time"] for e in state["bmc"]["sel"] if e.get("time") is not None), default=None)
    rows = [
        ("Version", "1.5 (v1.5, v2 compliant)"),
        ("Entries", str(used)),
        ("Free Space", "%d bytes" % ((total - used) * 20)),
        ("Percent Used", "%d%%" % (used * 100 // total)),
        ("Last Add Time", time.strftime("%m/%d/%Y %H:%M:%S", time.gmtime(last)) if last else "Not Available"),
        ("Last Del Time", "Not Available"),
        ("Overflow", "true" if used >= total else "false"),
        ("Supported Cmds", "'Reserve' 'Get Alloc Info'"),
        ("# of Alloc Units", str(total)),
        ("Alloc Unit Size", "20"),
        ("# Free Units", str(total - used)),
        ("Largest Free Blk", str(total - used)),
        ("Max Record Size", "20"),
    ]
    return "SEL Information\n" + "".join("%-16s : %s\n" % r for r in rows)


def fru_print(state: dict) -> str:
    out = []
    for f in state["bmc"]["fru"]:
        out.append("FRU Device Description : %s (ID %d)" % (f["desc"], f["id"]))
        for k, v in f["fields"]:
            out.append(" %-22s: %s" % (k, v))
        out.append("")
    return "\n".join(out)


def mc_info(state: dict) -> str:
    mc = state["bmc"]["mc"]
    rows = [
        ("Device ID", mc["device_id"]),
        ("Device Revision", "1"),
        ("Firmware Revision", mc["firmware"]),
        ("IPMI Version", "2.0"),
        ("Manufacturer ID", mc["manufacturer_id"]),
        ("Manufacturer Name", mc["manufacturer"]),
        ("Product ID", mc["product_id"]),
        ("Product Name", mc["product"]),
        ("Device Available", "yes"),
        ("Provides Device SDRs", "no"),
        ("Additional Device Support", ""),
    ]
    out = ["%-26s: %s" % (k, v) if v else "%-26s:" % k for k, v in rows]
    out += [
        "    Sensor Device",
        "    SDR Repository Device",
        "    SEL Device",
        "    FRU Inventory Device",
        "    IPMB Event Receiver",
    ]
    out += ["Aux Firmware Rev Info     : ", "    0x00", "    0x00", "    0x00", "    0x00"]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------------
# dcgmi diag

_DCGM3_TESTS = {
    1: [("Deployment", None)],
    2: [("Integration", "PCIe"), ("Hardware", "GPU Memory")],
    3: [
        ("Hardware", "Diagnostic"),
        ("Stress", "Targeted Stress"),
        ("Stress", "Targeted Power"),
        ("Stress", "Memory Bandwidth"),
    ],
}
_DCGM4_TESTS = {
    2: [("Hardware", "memory"), ("Integration", "pcie")],
    3: [
        ("Hardware", "diagnostic"),
        ("Stress", "memory_bandwidth"),
        ("Stress", "targeted_stress"),
        ("Stress", "targeted_power"),
    ],
}
_DEPLOY3 = [
    "Denylist",
    "NVML Library",
    "CUDA Main Library",
    "Permissions and OS Blocks",
    "Persistence Mode",
    "Environment Variables",
    "Page Retirement/Row Remap",
    "Graphics Processes",
    "Inforom",
]
_BORDER = "+---------------------------+------------------------------------------------+"


def _row(name: str, result: str) -> str:
    return "| %-25s | %-46s |" % (name, result)


def _section(name: str, plus: bool) -> str:
    head = "-----  %s  " % name
    head = head + "-" * (27 - len(head))
    return ("+" if plus else "|") + head + "+" + "-" * 48 + ("+" if plus else "|")


def _wrap(text: str, width: int = 45) -> list:
    return [text[i : i + width] for i in range(0, len(text), width)] or [""]


def _v3_result_rows(test: str, failing: list, gpus: list) -> list:
    """DCGM 3.x: one 'Pass - All' / 'Fail - All' row, or a Pass row and a Fail row naming the GPUs."""
    if not failing:
        return [_row(test, "Pass - All")]
    passing = [g["index"] for g in gpus if g["index"] not in failing]
    if not passing:
        return [_row(test, "Fail - All")]
    return [
        _row(test, "Pass - GPUs: %s" % ", ".join(map(str, passing))),
        _row("", "Fail - GPU%s: %s" % ("s" if len(failing) > 1 else "", ", ".join(map(str, failing)))),
    ]


def _test_rows(test: str, failing: list, gpus: list, v4: bool, fail: dict) -> list:
    """The rows of one test: its result (4.x: one row per GPU) and a warning per failing GPU."""
    if v4:
        out = [_row(test, "Fail" if failing else "Pass")]
        out += [_row("", "GPU%d: %s" % (g["index"], "Fail" if g["index"] in failing else "Pass")) for g in gpus]
    else:
        out = _v3_result_rows(test, failing, gpus)
    for idx in failing:
        lines = _wrap(fail[idx] or ("GPU %d failed the test" % idx))
        out.append(_row("Warning", lines[0]))
        out += [_row("", m) for m in lines[1:]]
    return out


def _deployment_rows(state: dict, d: dict, gpus: list, v4: bool) -> list:
    """The Metadata and Deployment sections (everything passed)."""
    out = [
        _section("Metadata", False),
        _row("DCGM Version", d.get("version", "3.3.3")),
        _row("Driver Version Detected", state["driver_version"]),
        _row("GPU Device IDs Detected", (", " if v4 else ",").join(["2330"] * len(gpus))),
        _section("Deployment", False),
    ]
    if v4:
        return out + [_row("software", "Pass")] + [_row("", "GPU%d: Pass" % g["index"]) for g in gpus]
    return out + [_row(t, "Pass") for t in _DEPLOY3]


def _pending_rows(pending: list) -> list:
    """DCGM 3.x refuses to run with a pending row remap: one Deployment error."""
    msg = _wrap("GPU %d has uncorrectable memory errors and row remappings are pending" % pending[0]["index"])
    out = [_section("Deployment", False), _row("Error", msg[0])]
    out += [_row("", " " + m if i else m) for i, m in enumerate(msg[1:], 1)]
    return out + [_BORDER]


def dcgmi_diag(state: dict, level: int | None = None) -> tuple:
    """`dcgmi diag -r N` -> (stdout, rc). DCGM 3.x or 4.x layout by state["dcgm"]["version"]."""
    d = state["dcgm"]
    level = int(level or d.get("level", 2))
    gpus = [g for g in state["gpus"]]
    if any(g.get("lost") for g in gpus):
        ids = ",".join(str(g["index"]) for g in gpus)
        return (
            "Error: Unable to complete diagnostic for entities %s. Return: (-30) : DCGM GPU Diagnostic returned an error.\n"
            % ids,
            226,
        )
    v4 = str(d.get("version", "3.3.3")).split(".")[0] >= "4"
    fail = {int(k): v for k, v in (d.get("fail_gpus") or {}).items()}
    out = [] if v4 else ["Successfully ran diagnostic for group."]
    out += [_BORDER, _row("Diagnostic", "Result"), _BORDER.replace("-", "=")]
    pending = [g for g in gpus if g["remap"]["pending"]]
    if pending and not v4:
        return "\n".join(out + _pending_rows(pending)) + "\n", 226
    out += _deployment_rows(state, d, gpus, v4)
    sections: dict = {}
    table = _DCGM4_TESTS if v4 else _DCGM3_TESTS
    for lvl in range(2, min(level, 3) + 1):
        for sec, test in table.get(lvl, []):
            sections.setdefault(sec, []).append(test)
    first_fail_test = True  # the failing GPUs fail the first test that runs, the others pass
    for sec in ("Hardware", "Integration", "Stress") if v4 else ("Integration", "Hardware", "Stress"):
        out.append(_section(sec, True))
        for test in sections.get(sec, []):
            failing = sorted(fail) if first_fail_test else []
            out += _test_rows(test, failing, gpus, v4, fail)
            if failing:
                first_fail_test = False
    out.append(_BORDER)
    # real dcgmi prints failures in the table and still exits 0 once the diag ran
    return "\n".join(out) + "\n", 0


# ------------------------------------------------------------------------------------------------
# nccl-tests all_reduce_perf


def all_reduce_perf(state: dict, minbytes: int = 8, maxbytes: int = 8 << 30, factor: int = 2) -> str:
    gpus = [g for g in state["gpus"] if not g.get("lost")]
    n = len(gpus)
    peak = float(state["nccl"]["busbw_gbps"])
    out = [
        "# nThread 1 nGpus %d minBytes %d maxBytes %d step: %d(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"
        % (n, minbytes, maxbytes, factor),
        "#",
        "# Using devices",
    ]
    for r, g in enumerate(gpus):
        out.append(
            "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%s] %s"
            % (r, 40000 + r, state["hostname"], g["index"], g["bus_id"][9:11].lower(), g["name"])
        )
    out += [
        "#",
        "#                                                              out-of-place                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
    ]
    size = minbytes
    busbws = []
    factor_bw = 2.0 * (n - 1) / n if n > 1 else 1.0
    while size <= maxbytes:
        # latency-bound for small sizes, approaching the peak for large ones
        t_us = 20.0 + size / (peak * 1e3 / factor_bw) if n > 1 else 5.0
        algbw = size / t_us / 1e3
        busbw = algbw * factor_bw
        busbws.append(busbw)
        out.append(
            "%12d  %12d     float     sum      -1  %7.2f  %6.2f  %6.2f      0  %7.2f  %6.2f  %6.2f      0"
            % (size, size // 4, t_us, algbw, busbw, t_us * 0.99, algbw / 0.99, busbw / 0.99)
        )
        size *= factor
    avg = sum(busbws) / len(busbws) if busbws else 0.0
    out += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : %g " % round(avg, 4), "#", ""]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------
# scontrol show node, node.json


def scontrol_show_node(state: dict) -> str:
    s = state["slurm"]
    host = state["hostname"]
    boot = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(state["boot_time"]))
    lines = [
        "NodeName=%s Arch=x86_64 CoresPerSocket=56 " % (s.get("node_name") or host),
        "   CPUAlloc=%d CPUEfctv=%d CPUTot=%d CPULoad=%.2f"
        % (s["cpus"] if "ALLOC" in s["state"] else 0, s["cpus"], s["cpus"], 0.05),
        "   AvailableFeatures=h100,ib",
        "   ActiveFeatures=h100,ib",
        "   Gres=%s(S:0-1)" % s["gres"],
        "   NodeAddr=%s NodeHostName=%s Version=%s" % (host, host, s.get("version", "23.11.4")),
        "   OS=Linux %s #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) " % state["kernel"],
        "   RealMemory=%d AllocMem=0 FreeMem=1981234 Sockets=2 Boards=1" % s["real_memory"],
        "   State=%s ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A" % s["state"],
        "   Partitions=%s " % ",".join(s["partitions"]),
        "   BootTime=%s SlurmdStartTime=%s" % (boot, boot),
        "   LastBusyTime=%s ResumeAfterTime=None" % boot,
        "   CfgTRES=cpu=%d,mem=%dM,billing=%d,gres/gpu=%s"
        % (s["cpus"], s["real_memory"], s["cpus"], s["gres"].rsplit(":", 1)[-1]),
        "   AllocTRES=",
        "   CurrentWatts=0 AveWatts=0",
        "   ",
    ]
    if s.get("reason"):
        lines.insert(
            -1, "   Reason=%s [%s@%s]" % (s["reason"], s.get("reason_user") or "root", s.get("reason_time") or boot)
        )
    return "\n".join(lines) + "\n"


def node_json(state: dict) -> str:
    """node.json: the `node` domain of docs/facts.md, as gpuops.cluster.node_info returns it live."""
    mounts = []
    for m in state["mounts"]:
        st = m["state"]
        mounts.append(
            {
                "path": m["path"],
                "present": st != "missing",
                "responsive": st == "ok",
                "fstype": m["fstype"] if st != "missing" else None,
                "free_pct": m.get("free_pct") if st == "ok" else None,
                "error": None if st == "ok" else ("statvfs timed out after 5 s" if st == "hung" else "not mounted"),
            }
        )
    services = {}
    for name, sv in state["services"].items():
        entry = {"running": bool(sv.get("running"))}
        if name == "nvidia-fabricmanager":
            fm = state.get("fabric_manager") or {}
            if not fm.get("installed", True):
                continue
            entry["running"] = bool(fm.get("running")) and entry["running"]
            entry["version"] = fm.get("version")
        services[name] = entry
    fm = state.get("fabric_manager") or {}
    doc = {
        "source": "live",
        "hostname": state["hostname"],
        "boot_id": state["boot_id"],
        "kernel": state["kernel"],
        "os": state["os"],
        "memory_mib": state["memory_mib"],
        "mounts": mounts,
        "services": services,
        "fabric_manager_version": fm.get("version") if fm.get("installed", True) else None,
        "errors": [],
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"
