# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capture directory: one format for live and offline evidence (docs/capture.md).

Every file of a capture is read through :func:`_files.read_capture_bytes` (``read``/``read_text``): plain
files only, no link followed, the size cap enforced while reading. The capture directory itself may be a
link (the operator named it in ``gpuops_capture_dir``); nothing inside it is followed out of it.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import os
import stat
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, error_record
from ansible_collections.gpuops.cluster.plugins.module_utils._files import _file_kind
from ansible_collections.gpuops.cluster.plugins.module_utils._files import (
    UnsafeFileError,
    is_capture_file,
    list_capture_dir,
    read_text,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._safejson import JsonBudgetError
from ansible_collections.gpuops.cluster.plugins.module_utils._safejson import loads as safe_loads

#: File name in a capture directory -> the command whose output it holds.
FILES = {
    "nvidia-smi-q.xml": "nvidia-smi -q -x",
    "nvidia-smi-q.txt": "nvidia-smi -q",
    "nvidia-smi-nvlink-s.txt": "nvidia-smi nvlink -s",
    "nvidia-smi-nvlink-e.txt": "nvidia-smi nvlink -e",
    "nvidia-imex-ctl-q.txt": "nvidia-imex-ctl -q (GB200 / NVL72: the IMEX daemon state)",
    "nvidia-imex-ctl-N-j.txt": "nvidia-imex-ctl -N -j (the IMEX domain status, JSON)",
    "kernel.log": "journalctl -k -o short-iso (or dmesg -T / dmesg --time-format=iso / syslog)",
    "infiniband-sysfs.txt": "the allowlisted /sys/class/infiniband attributes as one listing, a "
    "'<hca>/<path>:<value>' line each (what grep -r . prints in that directory)",
    "ibstat.txt": "ibstat",
    "ipmitool-sdr.txt": "ipmitool sdr elist",
    "ipmitool-sel.txt": "ipmitool sel elist",
    "ipmitool-fru.txt": "ipmitool fru print",
    "ipmitool-mc-info.txt": "ipmitool mc info",
    "ipmitool-sel-info.txt": "ipmitool sel info",
    "dcgmi-diag.txt": "dcgmi diag -r N",
    "nccl-all-reduce.txt": "all_reduce_perf (nccl-tests), burn-in only",
    "scontrol-show-node.txt": "scontrol show node <name>",
    "node.json": "node basics (boot id, kernel, mounts, services) as gpuops.cluster.node_info returns them",
    "capture.json": "capture metadata: hostname, capture time, per-file exit code and stderr",
}

#: Sub-directories.
SYSFS_IB = os.path.join("sys", "class", "infiniband")
#: The same attributes as one file (what ``gpuops.cluster.capture`` writes): one read instead of ~300.
SYSFS_IB_FLAT = "infiniband-sysfs.txt"
REDFISH_DIR = "redfish"


def path(capture_dir: str, name: str) -> str:
    return os.path.join(capture_dir, name)


def read(capture_dir: str, name: str) -> Optional[str]:
    """Text of one capture file, or None when it is absent. Raises ParseError (UnsafeFileError, kind
    ``unreadable``) for a link, a FIFO, a device, a directory, a file over the cap or an OS error."""
    return read_text(os.path.join(capture_dir, name))


def has_file(capture_dir: str, name: str) -> bool:
    """True when the capture holds ``name`` as a plain file (a link, even to a file, is not one)."""
    return is_capture_file(os.path.join(capture_dir, name))


def subdir(capture_dir: str, rel: str) -> Optional[str]:
    """``capture_dir/rel`` when every component of ``rel`` is a real directory of the capture; None when a
    component is absent. Raises UnsafeFileError when one is a link or not a directory: a walk never leaves
    the capture through a link (``sys -> /`` would read the controller's own sysfs)."""
    cur = capture_dir
    for part in rel.split(os.sep):
        if part in ("", "."):
            continue
        if part == "..":
            raise UnsafeFileError("refused: %r leaves the capture" % rel, os.path.join(capture_dir, rel), "outside")
        cur = os.path.join(cur, part)
        try:
            mode = os.lstat(cur).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise UnsafeFileError("cannot read %s: %s" % (cur, exc.strerror or exc), cur, "os_error") from None
        if not stat.S_ISDIR(mode):
            reason, what = _file_kind(mode)
            raise UnsafeFileError("refused: %s is %s, not a directory of the capture" % (cur, what), cur, reason)
    return cur


def list_dir(capture_dir: str, rel: str) -> Optional[List[str]]:
    """Sorted names in the capture sub-directory ``rel``; None when it is absent. Raises UnsafeFileError
    when it (or a directory above it inside the capture) is a link or not a directory. Entries may still be
    links or special files: :func:`read` refuses those when they are read."""
    d = subdir(capture_dir, rel)
    if d is None:
        return None
    names = list_capture_dir(d)
    if names is None:
        raise UnsafeFileError("cannot list %s" % d, d, "os_error")
    return names


def load_json(capture_dir: str, name: str, parser: str) -> Any:
    """The JSON capture file ``name`` decoded, or None when it is absent.

    Read as every capture file (:func:`read`) and decoded within the depth and size budget of
    ``_safejson``: a file nested too deep (``[`` x 100,000) or not JSON raises ParseError naming the file
    and ``parser``, never RecursionError (issue 35)."""
    text = read(capture_dir, name)
    if text is None:
        return None
    try:
        return safe_loads(text, what=name)
    except JsonBudgetError as exc:
        raise ParseError(str(exc), parser, path(capture_dir, name)) from None
    except ValueError as exc:
        raise ParseError("invalid JSON: %s" % exc, parser, path(capture_dir, name)) from None


def load_meta(capture_dir: str) -> Dict[str, Any]:
    """capture.json, or {} when absent. A broken capture.json (unreadable, not JSON, nested too deep, not an
    object) raises ParseError naming it."""
    data = load_json(capture_dir, "capture.json", "capture_meta")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ParseError("top level is not an object", "capture_meta", path(capture_dir, "capture.json"))
    return data


def meta_or_error(capture_dir: str, errors: List[Dict[str, Any]], domain: str) -> Dict[str, Any]:
    """capture.json as :func:`load_meta` reads it; a broken one is an error record of ``domain`` and ``{}``.

    Never raises for the capture's content: anything :func:`load_meta` raises besides ParseError (a bug) is an
    ``internal`` error record of ``domain`` naming capture.json, as the collector boundary makes it."""
    try:
        return load_meta(capture_dir)
    except ParseError as exc:
        errors.append(exc.to_error(domain))
    except Exception as exc:  # noqa: BLE001 - the collector boundary: report, never raise
        msg = "capture.json: %s: %s" % (type(exc).__name__, str(exc)[:200])
        errors.append(error_record(domain, "internal", msg, path(capture_dir, "capture.json"), "capture_meta"))
    return {}


def file_status(meta: Dict[str, Any], name: str) -> Dict[str, Any]:
    """Per-file entry of capture.json: {"rc": int|None, "stderr": str, "timed_out": bool} or {}."""
    files = meta.get("files") if isinstance(meta, dict) else None
    entry = files.get(name) if isinstance(files, dict) else None
    return entry if isinstance(entry, dict) else {}
