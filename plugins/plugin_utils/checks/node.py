# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node checks: mounts, services, the NVIDIA fabric manager."""

from __future__ import annotations

from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import Ctx, as_dict, as_list, as_num


def check_node(ctx: Ctx, facts: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> None:
    node = as_dict(facts.get("node"))
    wanted_mounts = set(str(m) for m in as_list((profile or {}).get("mounts")))
    min_free = ctx.policy["thresholds"]["mounts"]["min_free_pct"]
    for m in as_list(node.get("mounts")):
        if not isinstance(m, dict):
            continue
        path = m.get("path")
        comp = "mount:%s" % path
        if m.get("present") is False:
            if path in wanted_mounts:
                ctx.add(
                    "node.mounts",
                    "P1",
                    comp,
                    "missing",
                    "%s is not mounted" % path,
                    "isolate",
                    "node.mounts: profile mounts",
                    evidence=m,
                )
        elif m.get("responsive") is False:
            ctx.add(
                "node.mounts",
                "P1",
                comp,
                "hung",
                "%s does not respond (%s)" % (path, m.get("error")),
                "isolate",
                "node.mounts: a hung mount hangs every job that touches it",
                evidence=m,
            )
        elif as_num(m.get("free_pct")) is not None and as_num(m.get("free_pct")) < min_free:
            ctx.add(
                "node.mounts",
                "P2",
                comp,
                "full",
                "%s has %s%% free" % (path, m.get("free_pct")),
                "monitor",
                "thresholds.mounts.min_free_pct=%s" % min_free,
                evidence=m,
            )
    services = as_dict(node.get("services"))
    for name in as_list((profile or {}).get("services")):
        if name == "nvidia-fabricmanager":
            continue  # node.fabric_manager
        svc = services.get(name)
        if isinstance(svc, dict) and svc.get("running") is False:
            ctx.add(
                "node.services",
                "P2",
                "service:%s" % name,
                "not_running",
                "service %s is not running" % name,
                "tune",
                "node.services: profile services",
                evidence=svc,
            )
    fm = services.get("nvidia-fabricmanager")
    need = bool((profile or {}).get("nvswitch"))
    fm_running = isinstance(fm, dict) and fm.get("running") is True
    if need and not fm_running:
        ctx.add(
            "node.fabric_manager",
            "P1",
            "service:nvidia-fabricmanager",
            "not_running",
            "nvidia-fabricmanager is not running on an NVSwitch system: GPUs cannot use NVLink",
            "isolate",
            "node.fabric_manager: profile nvswitch=true",
            evidence={"service": fm},
        )
    if need or fm_running:
        fmv = node.get("fabric_manager_version") or (fm or {}).get("version")
        drv = as_dict(facts.get("gpu")).get("driver_version") or (profile or {}).get("fabric_manager_version")
        if fmv and drv and str(fmv) != str(drv):
            ctx.add(
                "node.fabric_manager",
                "P1",
                "service:nvidia-fabricmanager",
                "version_mismatch",
                "fabric manager %s does not match driver %s" % (fmv, drv),
                "isolate",
                "node.fabric_manager: version must equal the driver's (FM refuses to start otherwise)",
                evidence={"fabric_manager_version": fmv, "driver_version": drv},
            )
