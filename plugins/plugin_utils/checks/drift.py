# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The golden baseline of a node and the drift checks against it."""

from __future__ import annotations

from typing import Any, Dict

from ansible_collections.gpuops.cluster.plugins.module_utils._common import normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_list,
    gpu_by_bus,
    gpu_comp,
    gpu_list,
)


def make_baseline(facts: Dict[str, Any], now: Any = None) -> Dict[str, Any]:
    """The golden baseline of a node (what onboarding saves into the host state's ``baseline``)."""
    gpu = as_dict(facts.get("gpu"))
    node = as_dict(facts.get("node"))
    bmc = as_dict(facts.get("bmc"))
    systems = as_list(as_dict(bmc.get("redfish")).get("systems"))
    return {
        "taken_at": iso_z(parse_time(now)) if now is not None else facts.get("collected_at"),
        "gpu": {
            "count": gpu.get("count"),
            "driver_version": gpu.get("driver_version"),
            "gpus": {
                normalize_bus_id(g.get("bus_id")): {
                    "serial": g.get("serial"),
                    "vbios_version": g.get("vbios_version"),
                    "name": g.get("name"),
                }
                for g in gpu_list(facts)
                if normalize_bus_id(g.get("bus_id"))
            },
        },
        "ib": {
            "hcas": {
                h.get("name"): {"fw_version": h.get("fw_version"), "board_id": h.get("board_id")}
                for h in as_list(as_dict(facts.get("ib")).get("hcas"))
                if isinstance(h, dict)
            }
        },
        "bmc": {
            "firmware_revision": as_dict(bmc.get("mc")).get("firmware_revision"),
            "bios_version": as_dict(systems[0]).get("bios_version") if systems else None,
        },
        "node": {"kernel": node.get("kernel"), "os": node.get("os")},
    }


def check_drift(ctx: Ctx, facts: Dict[str, Any], baseline: Any) -> None:
    if not isinstance(baseline, dict):
        return
    if baseline.get("schema") == "gpuops.facts/v1" or isinstance(as_dict(baseline.get("gpu")).get("gpus"), list):
        baseline = make_baseline(baseline)  # a whole facts document was given as the golden baseline
    cur = make_baseline(facts)
    rule = "drift from the golden baseline taken %s" % baseline.get("taken_at")

    def cmp(check: str, comp: str, code: str, want: Any, have: Any, what: str) -> None:
        if want is not None and have is not None and want != have:
            ctx.add(
                check,
                "P3",
                comp,
                code,
                "%s: %s, baseline %s" % (what, have, want),
                "monitor",
                rule,
                evidence={"baseline": want, "current": have},
            )

    bg, cg = as_dict(baseline.get("gpu")), cur["gpu"]
    cmp("gpu.drift", "node", "driver_version", bg.get("driver_version"), cg["driver_version"], "driver")
    cmp("gpu.drift", "node", "count", bg.get("count"), cg["count"], "GPU count")
    by_bus = gpu_by_bus(facts)
    for bus, want in sorted(as_dict(bg.get("gpus")).items()):
        have = cg["gpus"].get(bus)
        if not have or not isinstance(want, dict):
            continue
        comp = gpu_comp(by_bus.get(bus, {"bus_id": bus}))
        cmp("gpu.drift", comp, "serial", want.get("serial"), have.get("serial"), "GPU %s serial (replaced?)" % bus)
        cmp(
            "gpu.drift",
            comp,
            "vbios_version",
            want.get("vbios_version"),
            have.get("vbios_version"),
            "GPU %s VBIOS" % bus,
        )
    for name, want in sorted(as_dict(as_dict(baseline.get("ib")).get("hcas")).items()):
        have = cur["ib"]["hcas"].get(name)
        if have and isinstance(want, dict):
            cmp(
                "ib.drift",
                str(name),
                "fw_version",
                want.get("fw_version"),
                have.get("fw_version"),
                "%s firmware" % name,
            )
    bb = as_dict(baseline.get("bmc"))
    cmp(
        "bmc.drift",
        "bmc",
        "firmware_revision",
        bb.get("firmware_revision"),
        cur["bmc"]["firmware_revision"],
        "BMC firmware",
    )
    cmp("bmc.drift", "bmc", "bios_version", bb.get("bios_version"), cur["bmc"]["bios_version"], "BIOS")
    bn = as_dict(baseline.get("node"))
    cmp("node.drift", "node", "kernel", bn.get("kernel"), cur["node"]["kernel"], "kernel")
    cmp("node.drift", "node", "os", bn.get("os"), cur["node"]["os"], "OS")
