# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capture directory: one format for live and offline evidence (docs/capture.md).

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, read_text

#: File name in a capture directory -> the command whose output it holds.
FILES = {
    "nvidia-smi-q.xml": "nvidia-smi -q -x",
    "nvidia-smi-q.txt": "nvidia-smi -q",
    "nvidia-smi-nvlink-s.txt": "nvidia-smi nvlink -s",
    "nvidia-smi-nvlink-e.txt": "nvidia-smi nvlink -e",
    "kernel.log": "journalctl -k -o short-iso (or dmesg -T / dmesg --time-format=iso / syslog)",
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
REDFISH_DIR = "redfish"


def path(capture_dir: str, name: str) -> str:
    return os.path.join(capture_dir, name)


def read(capture_dir: str, name: str) -> Optional[str]:
    """Text of one capture file, or None when it is absent. Raises ParseError when unreadable/huge."""
    return read_text(os.path.join(capture_dir, name))


def load_meta(capture_dir: str) -> Dict[str, Any]:
    """capture.json, or {} when absent. A broken capture.json raises ParseError."""
    text = read(capture_dir, "capture.json")
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError("invalid JSON: %s" % exc, "capture_meta", path(capture_dir, "capture.json")) from exc
    if not isinstance(data, dict):
        raise ParseError("top level is not an object", "capture_meta", path(capture_dir, "capture.json"))
    return data


def file_status(meta: Dict[str, Any], name: str) -> Dict[str, Any]:
    """Per-file entry of capture.json: {"rc": int|None, "stderr": str, "timed_out": bool} or {}."""
    files = meta.get("files") if isinstance(meta, dict) else None
    entry = files.get(name) if isinstance(files, dict) else None
    return entry if isinstance(entry, dict) else {}
