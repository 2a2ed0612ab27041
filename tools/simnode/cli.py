"""Tool emulation: argv -> (stdout, stderr, rc) exactly as the real tool would answer, from a node state.

`run_tool(state, tool, args)` is pure except for `nvidia-smi -r` (mutates the state and reports it) and
`dcgmi diag` with the hang setting (the CLI sleeps; capture() records a timeout instead).
"""

from __future__ import annotations

import calendar
import re
import time

from simnode import render_gpu as rg
from simnode import render_misc as rm
from simnode import switches as sw


class Result:
    def __init__(
        self, stdout: str = "", stderr: str = "", rc: int = 0, changed: bool = False, sleep: float = 0.0, release=None
    ):
        self.stdout = stdout
        self.stderr = stderr
        self.rc = rc
        self.changed = changed
        self.sleep = sleep
        #: while sleeping, the CLI re-reads the state and stops early when release(state) is true (a hang switch
        #: cleared)
        self.release = release


# ------------------------------------------------------------------------------------------------ nvidia-smi


def _opt(args: list, *names: str):
    """Value of -x V / --x=V / --x V; None when absent."""
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def _select(state: dict, args: list):
    """(state view restricted to -i/--id GPUs, error Result or None)."""
    sel = _opt(args, "-i", "--id")
    if sel is None:
        return state, None
    picked = []
    for tok in sel.split(","):
        tok = tok.strip()
        g = next(
            (
                x
                for x in state["gpus"]
                if str(x["index"]) == tok
                or x["uuid"] == tok
                or x["bus_id"].lower().endswith(tok.lower())
                or x["serial"] == tok
            ),
            None,
        )
        if g is None:
            return None, Result("No devices were found\n", "", 6)
        picked.append(g)
    view = dict(state)
    view["gpus"] = picked
    return view, None


_NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n\n"
)


def _lost(view: dict):
    """The GPU-lost answer (real nvidia-smi prints the one-line error on stdout, nothing else), or None."""
    lost = rg.lost_gpus(view)
    return Result(rg.lost_message(lost[0]) + "\n", "", rg.RC_GPU_LOST) if lost else None


def _smi_version(state: dict, view: dict, args: list) -> Result:
    drv = state["driver_version"]
    return Result(
        "NVIDIA-SMI version  : %s\nNVML version        : %s\nDRIVER version      : %s\nCUDA Version        : %s\n"
        % (drv, drv.split(".")[0] + "." + drv.split(".", 1)[1], drv, state["cuda_version"])
    )


def _smi_nvlink(state: dict, view: dict, args: list) -> Result:
    if "-e" in args or "--errorcounters" in args:
        return _lost(view) or Result(rg.nvlink_errors(view))
    return _lost(view) or Result(rg.nvlink_status(view))


def _smi_list(state: dict, view: dict, args: list) -> Result:
    out = "".join(
        (rg.lost_message(g) if g.get("lost") else "GPU %d: %s (UUID: %s)" % (g["index"], g["name"], g["uuid"])) + "\n"
        for g in view["gpus"]
    )
    return Result(out, "", rg.RC_GPU_LOST if rg.lost_gpus(view) else 0)


def _smi_query_gpu(state: dict, view: dict, args: list) -> Result:
    lost = _lost(view)
    if lost:
        return lost
    fmt = _opt(args, "--format") or "csv"
    fields = [f.strip() for f in _opt(args, "--query-gpu").split(",") if f.strip()]
    out, rc = rg.nvidia_smi_query(view, fields, fmt)
    return Result(out, "", rc)


def _smi_compute_apps(state: dict, view: dict, args: list) -> Result:
    lost = _lost(view)
    if lost:
        return lost
    fields = [f.strip() for f in _opt(args, "--query-compute-apps").split(",") if f.strip()]
    out, rc = sw.compute_apps(view, fields, _opt(args, "--format") or "csv")
    return Result(out, "", rc)


def _is_query(args: list) -> bool:
    return (
        "-q" in args
        or "--query" in args
        or any(a.startswith("-q") and len(a) > 2 and set(a[1:]) <= {"q", "x"} for a in args)
    )


def _smi_query(state: dict, view: dict, args: list) -> Result:
    lost = _lost(view)
    if lost:
        return lost
    xml = "-x" in args or "--xml-format" in args or any(a in ("-qx", "-xq") for a in args)
    return Result(rg.nvidia_smi_xml(view) if xml else rg.nvidia_smi_text(view))


def _smi_table(state: dict, view: dict, args: list) -> Result:
    return _lost(view) or Result(summary_table(view))


#: nvidia-smi's modes, first match wins: (does argv ask for it, answer).
_SMI_MODES = (
    (lambda args: "--version" in args, _smi_version),
    (lambda args: bool(args) and args[0] == "nvlink", _smi_nvlink),
    (lambda args: "-L" in args or "--list-gpus" in args, _smi_list),
    (lambda args: _opt(args, "--query-gpu") is not None, _smi_query_gpu),
    (lambda args: _opt(args, "--query-compute-apps") is not None, _smi_compute_apps),
    (_is_query, _smi_query),
    (lambda args: not args, _smi_table),
)


def nvidia_smi(state: dict, args: list) -> Result:
    if state.get("driver_loaded") is False:
        return Result(_NO_DRIVER, "", 9)
    if "-r" in args or "--gpu-reset" in args:
        return gpu_reset(state, args)
    view, err = _select(state, args)
    if err:
        return err
    for wants, answer in _SMI_MODES:
        if wants(args):
            return answer(state, view, args)
    return Result("", "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n", 2)


def summary_table(state: dict) -> str:
    """The default `nvidia-smi` table (>= 530 wide layout). Do not parse it; it exists for humans and scripts that grep it."""
    drv, cuda = state["driver_version"], state["cuda_version"]
    ts = time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime(state["now"]))
    out = [
        ts,
        "+---------------------------------------------------------------------------------------+",
        "| NVIDIA-SMI %-18s Driver Version: %-14s CUDA Version: %-9s|" % (drv, drv, cuda),
        "|-----------------------------------------+----------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                      |               MIG M. |",
        "|=========================================+======================+======================|",
    ]
    for g in state["gpus"]:
        unc = g["ecc"]["volatile"]["sram_unc"] + g["ecc"]["volatile"]["dram_unc"]
        pm = "On" if state["services"].get("nvidia-persistenced", {}).get("running") else "Off"
        out.append("| %3d  %-26s %4s | %-16s %3s | %20d |" % (g["index"], g["name"][:26], pm, g["bus_id"], "Off", unc))
        out.append(
            "| N/A   %2dC    %-4s %14s | %20s | %5s      Default |"
            % (
                g["temp_c"],
                g.get("pstate", "P0"),
                "%dW / %dW" % (g["power_draw_w"], g["power_limit_w"]),
                "%dMiB / 81559MiB" % g["mem_used_mib"],
                "%d%%" % g["util_pct"],
            )
        )
        out.append("|                                         |                      |             Disabled |")
        out.append("+-----------------------------------------+----------------------+----------------------+")
    out += [
        "",
        "+---------------------------------------------------------------------------------------+",
        "| Processes:                                                                            |",
        "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |",
        "|        ID   ID                                                             Usage      |",
        "|=======================================================================================|",
    ]
    procs = [(g, p) for g in state["gpus"] for p in g.get("processes") or []]
    if not procs:
        out.append("|  No running processes found                                                           |")
    for g, p in procs:
        out.append(
            "|  %3d   N/A  N/A  %9d  %5s   %-38s %6dMiB |"
            % (g["index"], p["pid"], p.get("type", "C"), p["name"][:38], p.get("used_mib", 0))
        )
    out.append("+---------------------------------------------------------------------------------------+")
    return "\n".join(out) + "\n"


def gpu_reset(state: dict, args: list) -> Result:
    """`nvidia-smi -r [-i N]`: clears remap pending / recovery action / volatile ECC of the GPU(s)."""
    view, err = _select(state, args)
    if err:
        return err
    targets = view["gpus"]
    for g in targets:
        if g.get("lost"):
            return Result(rg.lost_message(g) + "\n", "", rg.RC_GPU_LOST)
    busy = [g for g in targets if g.get("processes")]
    if busy:
        msg = "".join("GPU %s is currently in use by another process.\n" % g["bus_id"] for g in busy)
        msg += (
            "\n%d device%s currently being used by one or more other processes (e.g., Fabric Manager, CUDA application, "
            "graphics application such as an X server, or a monitoring application such as another instance of nvidia-smi). "
            "Please first kill all processes using %s device%s and all compute applications running in the system.\n"
            % (
                len(busy),
                " is" if len(busy) == 1 else "s are",
                "this" if len(busy) == 1 else "these",
                "" if len(busy) == 1 else "s",
            )
        )
        return Result(msg, "", 255)
    mode, switch = sw.reset_fault(state, targets)
    if mode == "fail":
        return Result(sw.reset_error_text(targets, switch), "", int(switch.get("rc", sw.RC_OTHER)))
    if mode == "hang":
        # never returns; when the hang ends (hang_seconds, or the switch cleared) it reports a timeout
        timeout_text = sw.reset_error_text(targets, dict(switch, message="Timeout"))
        return Result(
            timeout_text, "", sw.RC_OTHER, sleep=float(switch.get("hang_seconds", 3600)), release=sw.hang_released
        )
    out = []
    for g in targets:
        if g["remap"]["pending"]:
            g["remap"]["pending"] = False
            g["remap"]["histogram"]["high"] = max(0, g["remap"]["histogram"]["high"])
        g["recovery_action"] = "none"
        for k in g["ecc"]["volatile"]:
            g["ecc"]["volatile"][k] = 0
        for lk in g.get("nvlinks") or []:
            lk.update({"replay": 0, "recovery": 0, "crc": 0})
        state["kernel_log"].append(
            {"time": time.time(), "msg": "NVRM: GPU at PCI:%s: %s" % (g["bus_id"][4:-2].lower(), g["uuid"])}
        )
        out.append("GPU %s was successfully reset." % g["bus_id"])
    out.append("All done.")
    return Result("\n".join(out) + "\n", "", 0, changed=True)


# ------------------------------------------------------------------------------------------------ others


def ibstat(state: dict, args: list) -> Result:
    names = [h["name"] for h in state.get("hcas") or []]
    if "-l" in args or "--list_of_cas" in args:
        return Result("".join(n + "\n" for n in sorted(names)))
    pos = [a for a in args if not a.startswith("-")]
    if pos:
        if pos[0] not in names:
            return Result(
                "",
                "ibpanic: [%d] main: stat of IB device '%s' failed: No such file or directory\n" % (4242, pos[0]),
                255,
            )
        view = dict(state)
        view["hcas"] = [h for h in state["hcas"] if h["name"] == pos[0]]
        return Result(rm.ibstat(view))
    if not names:
        return Result("", "ibpanic: [4242] main: stat of IB device 'mlx5_0' failed: No such file or directory\n", 255)
    return Result(rm.ibstat(state))


_IPMI_OPTS = {"-I", "-H", "-U", "-P", "-C", "-L", "-p", "-y", "-f", "-R", "-N", "-T", "-t", "-b", "-B", "-m", "-o"}


def _ipmi_words(args: list) -> list:
    """The command words of an ipmitool argv: options and the values of value-taking options dropped."""
    rest = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in _IPMI_OPTS:
            skip = True
        elif not a.startswith("-"):
            rest.append(a)
    return rest


_SDR_TYPES = {"power supply": "psu", "fan": "fan", "temperature": "temp"}


def _ipmi_sdr(state: dict, rest: list):
    """`sdr [list|elist|type T]`, or None for an sdr command it does not know."""
    if len(rest) >= 2 and rest[1] == "elist":
        return Result(rm.sdr_elist(state))
    if len(rest) == 1 or rest[1] == "list":
        return Result(rm.sdr_list(state))
    if rest[1] == "type" and len(rest) > 2:
        want = " ".join(rest[2:]).lower()
        key = _SDR_TYPES.get(want, want)
        view = dict(state)
        view["bmc"] = dict(state["bmc"])
        view["bmc"]["sensors"] = [s for s in state["bmc"]["sensors"] if key in s["name"].lower()]
        return Result(rm.sdr_elist(view))
    return None


_IPMI_COMMANDS = {
    ("sel", "elist"): lambda state: rm.sel_list(state, extended=True),
    ("sel", "list"): lambda state: rm.sel_list(state, extended=False),
    ("sel", "info"): rm.sel_info,
    ("mc", "info"): rm.mc_info,
}


def ipmitool(state: dict, args: list) -> Result:
    rest = _ipmi_words(args)
    res = _ipmi_sdr(state, rest) if rest[:1] == ["sdr"] else None
    if res is None and rest[:1] == ["fru"]:
        res = Result(rm.fru_print(state))
    if res is None and tuple(rest[:2]) in _IPMI_COMMANDS:
        res = Result(_IPMI_COMMANDS[tuple(rest[:2])](state))
    return res or Result("", "Invalid command: %s\n" % " ".join(rest), 1)


def dcgmi(state: dict, args: list) -> Result:
    if not args or args[0] != "diag":
        return Result("", "Usage: dcgmi diag -r <level>\n", 255)
    if not state["services"].get("nvidia-dcgm", {}).get("running", True):
        return Result(
            "Error: unable to establish a connection to the specified host: localhost\nError: Unable to connect to host engine. Host engine connection invalid/disconnected.\n",
            "",
            255,
        )
    level = _opt(args, "-r", "--run")
    try:
        lvl = int(level) if level is not None else 1
    except ValueError:
        lvl = {"short": 1, "medium": 2, "long": 3, "xlong": 4}.get(level, 1)
    out, rc = rm.dcgmi_diag(state, lvl)
    sleep = float(state["dcgm"].get("hang_seconds", 3600)) if state["dcgm"].get("hang") else 0.0
    return Result(out, "", rc, sleep=sleep)


def _size(s: str) -> int:
    m = re.match(r"^(\d+)([KMG]?)$", s.strip().upper())
    if not m:
        raise ValueError(s)
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def all_reduce_perf(state: dict, args: list) -> Result:
    try:
        b = _size(_opt(args, "-b", "--minbytes") or "8")
        e = _size(_opt(args, "-e", "--maxbytes") or "8G")
        f = int(_opt(args, "-f", "--stepfactor") or "2")
    except ValueError as exc:
        return Result("", "invalid size %s\n" % exc, 1)
    lost = rg.lost_gpus(state)
    if lost:
        return Result(
            "%s: Test CUDA failure common.cu:892 'unspecified launch failure'\n .. %s pid 40000: Test failure common.cu:1005\n"
            % (state["hostname"], state["hostname"]),
            "",
            3,
        )
    return Result(rm.all_reduce_perf(state, b, e, max(2, f)))


def _parse_since(val: str, now: float):
    val = val.strip()
    m = re.match(r"^-?(\d+)\s*(s|sec|m|min|h|hour|hours|d|day|days)?( ago)?$", val)
    if m:
        n = int(m.group(1))
        unit = (m.group(2) or "s")[0]
        return now - n * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    if val in ("today", "yesterday"):
        day = now - now % 86400
        return day if val == "today" else day - 86400
    m = re.match(r"^(\d{4}-\d\d-\d\d)(?:[ T](\d\d:\d\d)(:\d\d)?(\.\d+)?)?\s*(Z|UTC|[+-]\d\d:?\d\d)?$", val)
    if not m:
        return None
    try:
        t = calendar.timegm(
            time.strptime("%s %s%s" % (m.group(1), m.group(2) or "00:00", m.group(3) or ":00"), "%Y-%m-%d %H:%M:%S")
        )
    except ValueError:
        return None
    tz = m.group(5)
    if tz and tz not in ("Z", "UTC"):
        sign = -1 if tz[0] == "-" else 1
        hh, mm = int(tz[1:3]), int(tz[-2:])
        t -= sign * (hh * 3600 + mm * 60)
    return float(t) + (float(m.group(4)) if m.group(4) else 0.0)


def journalctl(state: dict, args: list) -> Result:
    since = _opt(args, "--since", "-S")
    t = None
    if since is not None:
        t = _parse_since(since, state["now"])
        if t is None:
            return Result("", "Failed to parse timestamp: %s\n" % since, 1)
    fmt = _opt(args, "-o", "--output") or "short"
    if fmt == "short-iso":
        return Result(rm.journalctl_k(state, t))
    lines = rm.journal_lines(state, t)
    if not lines:
        return Result("-- No entries --\n")
    return Result(
        "".join(
            "%s %s kernel: %s\n"
            % (time.strftime("%b %d %H:%M:%S", time.gmtime(e["time"])), state["hostname"], e["msg"])
            for e in lines
        )
    )


def dmesg(state: dict, args: list) -> Result:
    fmt = "raw"
    tf = _opt(args, "--time-format")
    if "-T" in args or "--ctime" in args or tf == "ctime":
        fmt = "ctime"
    elif tf == "iso":
        fmt = "iso"
    return Result(rm.dmesg(state, fmt))


def scontrol(state: dict, args: list) -> Result:
    pos = [a for a in args if not a.startswith("-")]
    if pos[:2] != ["show", "node"]:
        return Result("", "Invalid command\n", 1)
    if len(pos) > 2 and pos[2] != state["hostname"]:
        return Result("", "Node %s not found\n" % pos[2], 1)
    return Result(rm.scontrol_show_node(state))


TOOLS = {
    "nvidia-smi": nvidia_smi,
    "ibstat": ibstat,
    "ipmitool": ipmitool,
    "dcgmi": dcgmi,
    "all_reduce_perf": all_reduce_perf,
    "journalctl": journalctl,
    "dmesg": dmesg,
    "scontrol": scontrol,
}


def run_tool(state: dict, tool: str, args: list) -> Result:
    fn = TOOLS.get(tool)
    if fn is None:
        return Result("", "simnode: unknown tool %r (known: %s)\n" % (tool, ", ".join(sorted(TOOLS))), 127)
    return fn(state, list(args))
