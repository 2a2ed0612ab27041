"""capture(state, out_dir): a full capture directory (docs/capture.md), made of exactly what the CLI prints."""

from __future__ import annotations

import json
import os

from simnode import render_misc as rm
from simnode import render_optics
from simnode.cli import run_tool
from simnode.state import now_iso

#: capture file -> (tool, args); the commands of plugins/module_utils/collectors/capture.py FILES.
COMMANDS = [
    ("nvidia-smi-q.xml", "nvidia-smi", ["-q", "-x"]),
    ("nvidia-smi-q.txt", "nvidia-smi", ["-q"]),
    ("nvidia-smi-nvlink-s.txt", "nvidia-smi", ["nvlink", "-s"]),
    ("nvidia-smi-nvlink-e.txt", "nvidia-smi", ["nvlink", "-e"]),
    ("kernel.log", "journalctl", ["-k", "-o", "short-iso", "--no-pager"]),
    ("ibstat.txt", "ibstat", []),
    ("ipmitool-sdr.txt", "ipmitool", ["sdr", "elist"]),
    ("ipmitool-sel.txt", "ipmitool", ["sel", "elist"]),
    ("ipmitool-fru.txt", "ipmitool", ["fru", "print"]),
    ("ipmitool-mc-info.txt", "ipmitool", ["mc", "info"]),
    ("ipmitool-sel-info.txt", "ipmitool", ["sel", "info"]),
    ("dcgmi-diag.txt", "dcgmi", ["diag", "-r", None]),
    ("scontrol-show-node.txt", "scontrol", ["show", "node", None]),
]
DCGM_TIMEOUT_S = 900
#: the InfiniBand sysfs attributes as one listing (plugins/module_utils/collectors/capture.py SYSFS_IB_FLAT)
SYSFS_LISTING = "infiniband-sysfs.txt"


def capture(state: dict, out_dir: str, text_only_files: bool = False) -> dict:
    """Write every capture file + infiniband-sysfs.txt + node.json + capture.json. Returns capture.json."""
    os.makedirs(out_dir, exist_ok=True)
    files = {}
    # a partial or undated capture (simnode.faults_evidence): only these files, and/or no capture.json
    only = state.get("capture_files")
    for name, tool, args in COMMANDS:
        if only is not None and name not in only:
            continue
        args = [
            (str(state["dcgm"].get("level", 2)) if tool == "dcgmi" else state["hostname"]) if a is None else a
            for a in args
        ]
        res = run_tool(state, tool, args)
        entry = {"rc": res.rc, "stderr": res.stderr, "timed_out": False, "duration": 0.1}
        out = res.stdout
        if res.sleep:
            # the tool hung: the capture runner killed it at its timeout and kept nothing
            entry.update(
                {
                    "rc": 124,
                    "stderr": "timed out after %d s" % DCGM_TIMEOUT_S,
                    "timed_out": True,
                    "duration": float(DCGM_TIMEOUT_S),
                }
            )
            out = ""
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as fh:
            fh.write(out)
        files[name] = entry
    if only is None or "node.json" in only:
        with open(os.path.join(out_dir, "node.json"), "w", encoding="utf-8") as fh:
            fh.write(rm.node_json(state))
        files["node.json"] = {"rc": 0, "stderr": "", "timed_out": False, "duration": 0.0}
    if only is None or SYSFS_LISTING in only:
        listing = rm.sysfs_listing(state)
        if listing:
            with open(os.path.join(out_dir, SYSFS_LISTING), "w", encoding="utf-8") as fh:
                fh.write(listing)
            files[SYSFS_LISTING] = {"rc": 0, "stderr": "", "timed_out": False, "duration": 0.0}
    if only is None:
        render_optics.write_capture(state, out_dir, files)  # mlxlink-<hca>.txt, ethtool-m/-S-<if>.txt
    meta = {
        "schema": "gpuops.capture/v1",
        "hostname": state["hostname"],
        "captured_at": now_iso(state["now"]),
        "boot_id": state["boot_id"],
        "generator": "simnode",
        "files": files,
    }
    if state.get("capture_meta") is False:
        return meta
    with open(os.path.join(out_dir, "capture.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return meta
