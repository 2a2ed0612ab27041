# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks for what partial evidence still says (docs/capture.md "Partial captures").

``nvidia-smi nvlink -s`` answering "Unable to retrieve NVLink information as all links are inactive" for a GPU
of an NVLink board (SXM/HGX: the links go to NVSwitches or peers, they are never meant to be down) is a
``gpu.nvlink`` finding even without a profile; on a PCIe board without a bridge the same text is normal.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_list,
    gpu_label,
    gpu_list,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.fleet import settings as fleet_settings

_ALL_INACTIVE = re.compile(r"all links are inactive", re.I)
#: GPU names of boards whose GPUs are SXM/OAM modules (NVLink always wired): nvidia-smi does not say "SXM" for
#: every one of them (``NVIDIA H100 80GB HBM3`` is the SXM5 part; the PCIe one is ``NVIDIA H100 PCIe``)
_NVLINK_BOARD = re.compile(
    r"SXM|HGX|DGX|\bH100 80GB HBM3\b|\bH200\b|\bH800\b|\bH20\b|\bB200\b|\bB100\b|\bGB200\b|\bB300\b", re.I
)
_NOT_NVLINK = re.compile(r"PCIe|\bNVL\b", re.I)


def nvlink_board(g: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> bool:
    """True when the GPU sits on a board whose NVLinks are always wired (profile, fabric state or model name)."""
    prof = profile or {}
    if prof.get("nvlinks_per_gpu") or prof.get("nvswitch"):
        return True
    fab = as_dict(g.get("fabric"))
    if fab.get("state") not in (None, "", "N/A", "Not Supported"):
        return True
    name = str(g.get("name") or "")
    return bool(_NVLINK_BOARD.search(name)) and not _NOT_NVLINK.search(name)


def _links_up(g: Dict[str, Any]) -> bool:
    nv = g.get("nvlink")
    return isinstance(nv, dict) and any(
        isinstance(lk, dict) and lk.get("state") == "up" for lk in as_list(nv.get("links"))
    )


def check_nvlink_inactive(ctx: Ctx, facts: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> None:
    """``gpu.nvlink`` ``all_inactive`` for each GPU of an NVLink board that NVML says has no active link.

    Not when the profile sets ``nvlinks_per_gpu`` (its ``missing`` finding says it), nor for one GPU whose
    siblings have links up while the zero-config peer check is on (``fleet.check_gpu_peers`` says ``all_down``,
    with the peers as its baseline): this check covers every GPU of the node down, or a node too small for peers.
    """
    if (profile or {}).get("nvlinks_per_gpu"):
        return
    gpus = [g for g in gpu_list(facts) if g.get("readable") is not False]
    peers_on = fleet_settings(ctx.policy)["enabled"] and any(_links_up(g) for g in gpus)
    for g in gpus:
        nv = g.get("nvlink")
        if not isinstance(nv, dict) or not _ALL_INACTIVE.search(str(nv.get("error") or "")) or _links_up(g):
            continue
        if peers_on or not nvlink_board(g, profile):
            continue
        ctx.for_gpu(g)(
            "gpu.nvlink",
            "P1",
            "all_inactive",
            "%s (%s): all NVLinks inactive on an NVLink board" % (gpu_label(g), g.get("name") or "model unknown"),
            "reset_gpu",
            "gpu.nvlink: nvidia-smi nvlink -s 'all links are inactive' on an SXM/HGX GPU (NVIDIA: link training "
            "failure, RESET_GPU; every GPU of the node: check nvidia-fabricmanager/NVSwitch first)",
            evidence={"error": str(nv.get("error"))[:300], "name": g.get("name")},
        )
