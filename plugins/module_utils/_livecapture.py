# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Live evidence capture: run the real tools on a node (each with a timeout) and return a capture directory.

The files are the tools' own output as printed (docs/capture.md), so the collectors read them exactly as
they read the live node. Every file is written with ``_common.write_private_atomic`` (0600, temporary file +
rename: never through a link), into a directory created 0700. Runs on managed nodes (Python 3.8+). No Ansible
imports.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils import _capture
from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    UnsafeFileError,
    ensure_private_dir,
    read_capture_bytes,
    write_private_atomic,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, which
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow_iso

#: capture file -> argv. The first element is looked up on PATH; a missing tool is recorded, not fatal.
COMMANDS: List[Tuple[str, List[str]]] = [
    ("nvidia-smi-q.xml", ["nvidia-smi", "-q", "-x"]),
    ("nvidia-smi-q.txt", ["nvidia-smi", "-q"]),
    ("nvidia-smi-nvlink-s.txt", ["nvidia-smi", "nvlink", "-s"]),
    ("nvidia-smi-nvlink-e.txt", ["nvidia-smi", "nvlink", "-e"]),
    ("ibstat.txt", ["ibstat"]),
    ("ipmitool-sdr.txt", ["ipmitool", "sdr", "elist"]),
    ("ipmitool-sel.txt", ["ipmitool", "sel", "elist"]),
    ("ipmitool-fru.txt", ["ipmitool", "fru", "print"]),
    ("ipmitool-mc-info.txt", ["ipmitool", "mc", "info"]),
    ("ipmitool-sel-info.txt", ["ipmitool", "sel", "info"]),
]


def _kernel_log_argv(since: Optional[str]) -> List[List[str]]:
    cands = []
    if which("journalctl"):
        argv = ["journalctl", "-k", "-o", "short-iso", "--no-pager"]
        if since:
            argv += ["--since", since]
        else:
            argv += ["-b"]
        cands.append(argv)
    if which("dmesg"):
        cands.append(["dmesg", "--time-format=iso"])
    return cands


def capture(
    dest_dir: Optional[str] = None,
    timeout: float = 30.0,
    kernel_since: Optional[str] = None,
    sysfs_root: str = "/",
    dcgm_level: Optional[int] = None,
    slurm_node: Optional[str] = None,
    node_options: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """Run the tools and write a capture directory into ``dest_dir`` (a new temp dir when None).

    Returns {"dir": path, "meta": capture.json's content, "files": [names written]}.
    """
    dest = dest_dir or tempfile.mkdtemp(prefix="gpuops-capture-")  # mkdtemp: 0700, ours alone
    ensure_private_dir(dest)
    meta: Dict[str, Any] = {
        "schema": "gpuops.capture/v1",
        "hostname": socket.gethostname(),
        "captured_at": utcnow_iso(),
        "files": {},
    }
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            meta["boot_id"] = fh.read().strip()
    except OSError:
        meta["boot_id"] = None
    commands = list(COMMANDS)
    if dcgm_level:
        commands.append(("dcgmi-diag.txt", ["dcgmi", "diag", "-r", str(int(dcgm_level))]))
    if slurm_node or which("scontrol"):
        commands.append(("scontrol-show-node.txt", ["scontrol", "show", "node", slurm_node or meta["hostname"]]))
    written: List[str] = []

    def record(name: str, res: Any) -> None:
        meta["files"][name] = res.to_dict()
        # the tool's own output; when it printed only to stderr (an error), that is the evidence
        write_private_atomic(
            os.path.join(dest, name), res.stdout if res.stdout.strip() or not res.stderr else res.stderr
        )
        written.append(name)

    for name, argv in commands:
        if not which(argv[0]):
            meta["files"][name] = {"argv": argv, "rc": None, "error": "%s not found on PATH" % argv[0]}
            continue
        record(name, run_command(argv, timeout=timeout))
    cands = _kernel_log_argv(kernel_since)
    for i, argv in enumerate(cands):
        res = run_command(argv, timeout=timeout)
        if res.ok or i == len(cands) - 1:
            record("kernel.log", res)
            break
    # InfiniBand sysfs: the allowlisted attributes as one listing, never the whole tree (links loop in real sysfs)
    try:
        from ansible_collections.gpuops.cluster.plugins.module_utils import _ib

        ib_res = _ib.capture_sysfs(sysfs_root, dest, timeout=timeout)
        meta["files"][_capture.SYSFS_IB_FLAT] = {"rc": 0, "detail": ib_res}
    except Exception as exc:  # noqa: BLE001 - recorded, never raised
        meta["files"][_capture.SYSFS_IB_FLAT] = {"rc": None, "error": "%s: %s" % (type(exc).__name__, exc)}
    # transceiver / link quality (docs/capture.md): mlxlink-<hca>.txt, ethtool-m-<if>.txt, ethtool-S-<if>.txt
    try:
        from ansible_collections.gpuops.cluster.plugins.module_utils import _ib_optics

        for name, argv in _ib_optics.capture_commands(sysfs_root):
            record(name, run_command(argv, timeout=min(timeout, _ib_optics.PER_CALL_TIMEOUT_S)))
    except Exception as exc:  # noqa: BLE001 - recorded, never raised
        meta["files"]["optics"] = {"rc": None, "error": "%s: %s" % (type(exc).__name__, exc)}
    # node basics as node_info returns them
    try:
        from ansible_collections.gpuops.cluster.plugins.module_utils import _node

        node = _node.collect(timeout=timeout, **(node_options or {}))
        write_private_atomic(os.path.join(dest, "node.json"), json.dumps(node, indent=1, sort_keys=True, default=str))
        written.append("node.json")
        meta["files"]["node.json"] = {"rc": 0}
    except Exception as exc:  # noqa: BLE001
        meta["files"]["node.json"] = {"rc": None, "error": "%s: %s" % (type(exc).__name__, exc)}
    write_private_atomic(os.path.join(dest, "capture.json"), json.dumps(meta, indent=1, sort_keys=True, default=str))
    written.append("capture.json")
    return {"dir": dest, "meta": meta, "files": written}


def read_tree(root: str, max_bytes: int = 64 * 1024 * 1024) -> Dict[str, str]:
    """Every regular file under ``root`` as {relative path: text}, for shipping back: read with the capture
    reader (no link followed, no special file opened); links and special files are left out; over
    ``max_bytes`` in all raises ValueError."""
    out: Dict[str, str] = {}
    total = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for fn in sorted(filenames):
            p = os.path.join(dirpath, fn)
            try:
                data = read_capture_bytes(p, max_bytes - total)
            except UnsafeFileError as exc:
                if exc.reason == "too_large":
                    raise ValueError("capture is over %d bytes" % max_bytes) from None
                if exc.reason == "os_error":
                    raise OSError(str(exc)) from None
                continue  # a link or a special file: not evidence we wrote
            if data is None:
                continue
            total += len(data)
            out[os.path.relpath(p, root)] = data.decode("utf-8", errors="replace")
    return out


def remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
