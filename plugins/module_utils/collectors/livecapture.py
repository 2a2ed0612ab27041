# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Live evidence capture: run the real tools on a node (each with a timeout) and return a capture directory.

The files are the tools' own output as printed (docs/capture.md), so the collectors read them exactly as
they read the live node. Every file is written with ``_files.write_private_atomic`` (0600, temporary file +
rename: never through a link), into a directory created 0700. Runs on managed nodes (Python 3.8+). No Ansible
imports.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import tempfile
import threading
import zlib
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import capture as _capture
from ansible_collections.gpuops.cluster.plugins.module_utils._files import (
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
    ("nvidia-imex-ctl-q.txt", ["nvidia-imex-ctl", "-q"]),  # GB200 / NVL72 only: elsewhere "not found", no file
    ("nvidia-imex-ctl-N-j.txt", ["nvidia-imex-ctl", "-N", "-j"]),
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


#: fact domain -> the capture files its collector reads (docs/capture.md), for a capture of some domains only
DOMAIN_FILES: Dict[str, Tuple[str, ...]] = {
    "gpu": (
        "nvidia-smi-q.xml",
        "nvidia-smi-q.txt",
        "nvidia-smi-nvlink-s.txt",
        "nvidia-smi-nvlink-e.txt",
        "nvidia-imex-ctl-q.txt",
        "nvidia-imex-ctl-N-j.txt",
    ),
    "kernel": ("kernel.log",),
    "ib": ("ibstat.txt", _capture.SYSFS_IB_FLAT, "optics"),
    "bmc": (
        "ipmitool-sdr.txt",
        "ipmitool-sel.txt",
        "ipmitool-fru.txt",
        "ipmitool-mc-info.txt",
        "ipmitool-sel-info.txt",
    ),
    "dcgm": ("dcgmi-diag.txt",),
    "slurm": ("scontrol-show-node.txt",),
    "node": ("node.json",),
}
#: evidence a capture of some domains takes only when the preferred source gave nothing (the collectors read
#: the XML before the text, and the sysfs listing before ibstat): file -> the file it stands in for
FALLBACKS = {"nvidia-smi-q.txt": "nvidia-smi-q.xml", "ibstat.txt": _capture.SYSFS_IB_FLAT}


def _command_call(
    name: str,
    argv: List[str],
    want: Callable[[str], bool],
    record: Callable[[str, Any], None],
    meta: Dict[str, Any],
    timeout: float,
) -> Callable[[], None]:
    """One tool call of the capture, to run later (in its tool's thread)."""

    def call() -> None:
        if not want(name):  # a fallback whose preferred file came out well (asked when its turn comes)
            return
        if not which(argv[0]):
            meta["files"][name] = {"argv": argv, "rc": None, "error": "%s not found on PATH" % argv[0]}
            return
        record(name, run_command(argv, timeout=timeout))

    return call


def _kernel_log(record: Callable[[str, Any], None], since: Optional[str], timeout: float) -> None:
    """journalctl -k, else dmesg: the first that works, or the last one's error."""
    cands = _kernel_log_argv(since)
    for i, argv in enumerate(cands):
        res = run_command(argv, timeout=timeout)
        if res.ok or i == len(cands) - 1:
            record("kernel.log", res)
            break


def _side_by_side(groups: List[List[Callable[[], None]]], meta: Dict[str, Any]) -> None:
    """Run each group's calls in order, the groups in parallel threads; every tool has its own timeout, so every
    thread ends. A call that raises is recorded in capture.json, never raised."""

    def run(calls: List[Callable[[], None]]) -> None:
        for call in calls:
            try:
                call()
            except Exception as exc:  # noqa: BLE001 - recorded, never raised
                meta.setdefault("errors", []).append("%s: %s" % (type(exc).__name__, exc))

    threads = [threading.Thread(target=run, args=(calls,), daemon=True) for calls in groups[1:]]
    for thread in threads:
        thread.start()
    if groups:
        run(groups[0])  # the first group in this thread
    for thread in threads:
        thread.join()


def _ib_listing(put: Callable[[str, str], None], meta: Dict[str, Any], sysfs_root: str, timeout: float) -> bool:
    """InfiniBand sysfs: the allowlisted attributes as one listing, never the whole tree (links loop in sysfs).
    True when a listing was put."""
    text = ""
    try:
        from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import ib_sysfs as _ib_sysfs

        text, ib_res = _ib_sysfs.sysfs_listing(sysfs_root, timeout=timeout)
        if text:
            put(_capture.SYSFS_IB_FLAT, text)
            ib_res["file"] = _capture.SYSFS_IB_FLAT
        meta["files"][_capture.SYSFS_IB_FLAT] = {"rc": 0, "detail": ib_res}
    except Exception as exc:  # noqa: BLE001 - recorded, never raised
        meta["files"][_capture.SYSFS_IB_FLAT] = {"rc": None, "error": "%s: %s" % (type(exc).__name__, exc)}
    return bool(text)


def _optics(record: Callable[[str, Any], None], meta: Dict[str, Any], sysfs_root: str, timeout: float) -> None:
    """Transceiver / link quality (docs/capture.md): mlxlink-<hca>.txt, ethtool-m-<if>.txt, ethtool-S-<if>.txt."""
    try:
        from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
            ib_optics_cmds as _ib_optics_cmds,
        )

        for name, argv in _ib_optics_cmds.capture_commands(sysfs_root):
            record(name, run_command(argv, timeout=min(timeout, _ib_optics_cmds.PER_CALL_TIMEOUT_S)))
    except Exception as exc:  # noqa: BLE001 - recorded, never raised
        meta["files"]["optics"] = {"rc": None, "error": "%s: %s" % (type(exc).__name__, exc)}


def _node_json(put: Callable[[str, str], None], meta: Dict[str, Any], timeout: float, node_options: Any) -> None:
    """Node basics as node_info returns them (node.json)."""
    try:
        from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import node as _node

        node = _node.collect(timeout=timeout, **(node_options or {}))
        put("node.json", json.dumps(node, indent=1, sort_keys=True, default=str))
        meta["files"]["node.json"] = {"rc": 0}
    except Exception as exc:  # noqa: BLE001
        meta["files"]["node.json"] = {"rc": None, "error": "%s: %s" % (type(exc).__name__, exc)}


#: capture options and their defaults (``capture``, ``capture_tree``)
OPTIONS: Dict[str, Any] = {
    "timeout": 30.0,
    "kernel_since": None,
    "sysfs_root": "/",
    "dcgm_level": None,
    "slurm_node": None,
    "node_options": None,
    "domains": None,
}


def _run(put: Callable[[str, str], None], options: Dict[str, Any]) -> Dict[str, Any]:
    """Run the tools, hand every file to ``put(name, text)`` and return capture.json's content (not put).

    ``options``: :data:`OPTIONS`' keys. ``domains`` None: every piece of evidence (``capture``). Otherwise only
    the files those domains' collectors read, and a fallback (``FALLBACKS``) only when the file it stands in for
    is empty or failed.
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError("unknown capture option(s): %s" % ", ".join(unknown))
    opts = dict(OPTIONS, **options)
    timeout, sysfs_root, domains = float(opts["timeout"]), opts["sysfs_root"] or "/", opts["domains"]
    dcgm_level, slurm_node = opts["dcgm_level"], opts["slurm_node"]
    meta: Dict[str, Any] = {
        "schema": "gpuops.capture/v1",
        "hostname": socket.gethostname(),
        "captured_at": utcnow_iso(),
        "files": {},
    }
    if domains is not None:
        meta["domains"] = [d for d in DOMAIN_FILES if d in domains]
    wanted = None if domains is None else {f for d in domains for f in DOMAIN_FILES.get(d, ())}
    got: Dict[str, bool] = {}

    def want(name: str) -> bool:
        if wanted is None:
            return True
        if name not in wanted:
            return False
        return not got.get(FALLBACKS.get(name, ""), False)

    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            meta["boot_id"] = fh.read().strip()
    except OSError:
        meta["boot_id"] = None
    commands = list(COMMANDS)
    if want("scontrol-show-node.txt") and (slurm_node or which("scontrol")):
        commands.append(("scontrol-show-node.txt", ["scontrol", "show", "node", slurm_node or meta["hostname"]]))

    def record(name: str, res: Any) -> None:
        meta["files"][name] = res.to_dict()
        got[name] = bool(res.ok and res.stdout.strip())
        # the tool's own output; when it printed only to stderr (an error), that is the evidence
        put(name, res.stdout if res.stdout.strip() or not res.stderr else res.stderr)

    if want(_capture.SYSFS_IB_FLAT):  # first: ibstat stands in for the listing only when it is empty
        got[_capture.SYSFS_IB_FLAT] = _ib_listing(put, meta, sysfs_root, timeout)
    # one thread a tool (its calls in order: the XML before its text fallback, ipmitool's calls one at a time), the
    # tools side by side: a node's collection takes its slowest tool's time, not the sum (BMC calls take seconds)
    groups: Dict[str, List[Callable[[], None]]] = {}
    for name, argv in commands:
        if want(name) and name != "dcgmi-diag.txt":
            groups.setdefault(argv[0], []).append(_command_call(name, argv, want, record, meta, timeout))
    if want("kernel.log"):
        groups["kernel.log"] = [lambda: _kernel_log(record, opts["kernel_since"], timeout)]
    if want("optics"):
        groups["optics"] = [lambda: _optics(record, meta, sysfs_root, timeout)]
    _side_by_side(list(groups.values()), meta)
    # the GPU diagnostics run alone (they load the GPUs), after the queries
    if want("dcgmi-diag.txt") and dcgm_level:
        dcgm_argv = ["dcgmi", "diag", "-r", str(int(dcgm_level))]
        _command_call("dcgmi-diag.txt", dcgm_argv, want, record, meta, timeout)()
    if want("node.json"):
        _node_json(put, meta, timeout, opts["node_options"])
    return meta


def capture(dest_dir: Optional[str] = None, **options: Any) -> Dict[str, Any]:
    """Run the tools and write a capture directory into ``dest_dir`` (a new temp dir when None).

    ``options``: :data:`OPTIONS` (timeout, kernel_since, sysfs_root, dcgm_level, slurm_node, node_options, domains).
    Returns {"dir": path, "meta": capture.json's content, "files": [names written]}.
    """
    dest = dest_dir or tempfile.mkdtemp(prefix="gpuops-capture-")  # mkdtemp: 0700, ours alone
    ensure_private_dir(dest)
    written: List[str] = []

    def put(name: str, text: str) -> None:
        write_private_atomic(os.path.join(dest, name), text)
        written.append(name)

    meta = _run(put, options)
    write_private_atomic(os.path.join(dest, "capture.json"), json.dumps(meta, indent=1, sort_keys=True, default=str))
    written.append("capture.json")
    return {"dir": dest, "meta": meta, "files": written}


def capture_tree(**options: Any) -> Dict[str, Any]:
    """The same capture held in memory, nothing written on the node: {"tree": {file name: text}, "meta": ...};
    ``tree`` holds ``capture.json`` too, so that it is a capture directory's content as :func:`read_tree` reads it."""
    tree: Dict[str, str] = {}

    def put(name: str, text: str) -> None:
        tree[name] = text

    meta = _run(put, options)
    tree["capture.json"] = json.dumps(meta, indent=1, sort_keys=True, default=str)
    return {"tree": tree, "meta": meta}


def pack(tree: Dict[str, str]) -> str:
    """``tree`` as one ASCII string (base64 of zlib-compressed JSON; ``_livetree.unpack`` on the controller): a
    node's ~0.6 MB of tool output travels as ~40 KB and Ansible handles one string, not a mapping of large ones."""
    return base64.b64encode(zlib.compress(json.dumps(tree, separators=(",", ":")).encode("utf-8"), 1)).decode("ascii")


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
