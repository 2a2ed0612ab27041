# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The optics commands of a live capture (``mlxlink`` per InfiniBand HCA, ``ethtool -m``/``-S`` per RoCE netdev),
apart from their parsers (``_ib_optics``): ``gpuops.cluster.capture`` runs on the node and imports no parser.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import os
import re
from typing import List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._runner import which

_NAME = r"([A-Za-z0-9_][A-Za-z0-9_.:-]{0,63})"
SAFE_NAME = re.compile(r"^" + _NAME + r"$")
#: One tool call never gets more than this many seconds, whatever is left of the collection timeout.
PER_CALL_TIMEOUT_S = 20.0
MAX_PORTS = 64


def _netdevs(sysfs_root: str, hca: str) -> List[str]:
    d = os.path.join(sysfs_root, "sys", "class", "infiniband", hca, "device", "net")
    try:
        return sorted(n for n in os.listdir(d) if SAFE_NAME.match(n))[:4]
    except OSError:
        return []


def _link_layer(sysfs_root: str, hca: str) -> Optional[str]:
    path = os.path.join(sysfs_root, "sys", "class", "infiniband", hca, "ports", "1", "link_layer")
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read(64).strip() or None
    except OSError:
        return None


def capture_commands(sysfs_root: str = "/") -> List[Tuple[str, List[str]]]:
    """(capture file name, argv) of the optics evidence of a live node, for ``_livecapture``: ``mlxlink`` per
    InfiniBand HCA, ``ethtool -m``/``-S`` per RoCE netdev; only the tools that are on PATH."""
    mlxlink, ethtool = which("mlxlink"), which("ethtool")
    out: List[Tuple[str, List[str]]] = []
    if not (mlxlink or ethtool):
        return out
    try:
        hcas = sorted(os.listdir(os.path.join(sysfs_root, "sys", "class", "infiniband")))
    except OSError:
        return out
    for hca in [h for h in hcas if SAFE_NAME.match(h)][:MAX_PORTS]:
        if _link_layer(sysfs_root, hca) == "Ethernet":
            if ethtool:
                for ifname in _netdevs(sysfs_root, hca):
                    out.append(("ethtool-m-%s.txt" % ifname, [ethtool, "-m", ifname]))
                    out.append(("ethtool-S-%s.txt" % ifname, [ethtool, "-S", ifname]))
        elif mlxlink:
            out.append(("mlxlink-%s.txt" % hca, [mlxlink, "-d", hca, "-m", "-c"]))
    return out
