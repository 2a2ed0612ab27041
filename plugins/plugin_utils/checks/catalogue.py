# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The check registry: every check id, what it reads and the fact domain its evidence comes from.

docs/checks.md is written from ``CHECKS``; a unit test keeps the two in sync.
"""

from __future__ import annotations

from typing import Dict, Optional

#: Every check id -> what it reads (the catalogue docs/checks.md is written from; a test keeps them in sync).
CHECKS: Dict[str, str] = {
    "gpu.missing": "gpu.count/gpus[].readable vs profile gpu_count",
    "gpu.xid": "kernel.events (kind xid, fallen_off_bus) + Xid catalogue + policy xid/escalation",
    "gpu.ecc": "gpus[].ecc volatile/aggregate counters",
    "gpu.row_remap": "gpus[].remapped_rows (pending, failure, uncorrectable, histogram)",
    "gpu.retired_pages": "gpus[].retired_pages (pre-Ampere only)",
    "gpu.recovery_action": "gpus[].recovery_action (NVML GPU recovery action state)",
    "gpu.throttle": "gpus[].throttle.active, gpus[].power limits",
    "gpu.temperature": "gpus[].temperature vs the GPU's own slowdown/shutdown temperatures",
    "gpu.pcie": "gpus[].pcie (gen/width under load, replay counter rate)",
    "gpu.nvlink": "gpus[].nvlink.links (state vs profile, error counter deltas)",
    "gpu.driver": "gpu.driver_version vs profile driver_version",
    "gpu.diag": "dcgm (dcgmi diag results per GPU)",
    "gpu.fabric": "gpus[].fabric (NVLink fabric state/status)",
    "gpu.drift": "gpu facts vs the golden baseline",
    "ib.port_state": "ib.hcas[].ports[].state/phys_state vs profile ib_ports",
    "ib.port_rate": "ib.hcas[].ports[].rate_gbps vs profile ib_rate_gbps",
    "ib.errors": "ib port counters: rates between two timestamped readings",
    "ib.link_flap": "ib link_downed growth within one boot",
    "ib.drift": "ib HCA firmware/board vs the golden baseline",
    "ib.optics": "ib.optics[].module (mlxlink -m / ethtool -m DOM vs the module's thresholds; Rx power trend)",
    "ib.ber": "ib.optics[].phy (mlxlink -c effective/raw/symbol BER, symbol errors)",
    "ib.link_speed": "ib.optics[] mlxlink active speed/width vs enabled and cable-supported speeds (no profile needed)",
    "ib.congestion": "RoCE PFC pause (ethtool -S) and ECN/CNP (RDMA hw_counters) rates between two readings",
    "bmc.sensor": "bmc.sensors status and asserted failure states",
    "bmc.sel": "bmc.sel asserted critical entries within the SEL lookback",
    "bmc.health": "bmc.redfish systems/chassis/managers/psus/memory health",
    "bmc.leak": "bmc.redfish.leak_detectors, bmc.sensors of type leak (leak detectors only)",
    "bmc.coolant": "bmc.sensors of type coolant (coolant flow, pressure, level, temperature): never a power-off",
    "bmc.drift": "BMC firmware / BIOS vs the golden baseline",
    "scheduler.node_state": "slurm.nodes[] state/flags/reason of this node",
    "node.mounts": "node.mounts present/responsive/free_pct",
    "node.services": "node.services running vs profile services",
    "node.fabric_manager": "node.services nvidia-fabricmanager + fabric_manager_version vs gpu.driver_version",
    "node.unreachable": "facts absent or marked unreachable",
    "node.drift": "kernel / OS vs the golden baseline",
    "node.pcie_aer": "kernel.events (kind aer) on GPUs and the ports above them; Xid 79 correlation (slot vs GPU)",
    "collector.error": "facts errors (every collector error record)",
    "nvswitch.sxid": "kernel.events (kind sxid) + SXid catalogue + policy sxid/escalation",
    "backup.failed": "backup (the last configuration backup of the node failed: backup status/<node>.json)",
    "backup.stale": "backup (no verified configuration snapshot newer than policy backup.stale_hours)",
}

#: The fact domains (docs/facts.md) the checks read.
FACT_DOMAINS = ("gpu", "kernel", "ib", "bmc", "dcgm", "slurm", "node")

#: Check id -> the fact domain its evidence comes from. A check whose domain is ``unknown`` (see
#: ``domain_states``) does not fire. ``collector.error`` belongs to the domain in its component
#: (``collector:<domain>``); ``node.unreachable`` to none.
CHECK_DOMAINS: Dict[str, Optional[str]] = {
    "gpu.missing": "gpu",
    "gpu.xid": "kernel",
    "gpu.ecc": "gpu",
    "gpu.row_remap": "gpu",
    "gpu.retired_pages": "gpu",
    "gpu.recovery_action": "gpu",
    "gpu.throttle": "gpu",
    "gpu.temperature": "gpu",
    "gpu.pcie": "gpu",
    "gpu.nvlink": "gpu",
    "gpu.driver": "gpu",
    "gpu.diag": "dcgm",
    "gpu.fabric": "gpu",
    "gpu.drift": "gpu",
    "ib.port_state": "ib",
    "ib.port_rate": "ib",
    "ib.errors": "ib",
    "ib.link_flap": "ib",
    "ib.drift": "ib",
    "ib.optics": "ib",
    "ib.ber": "ib",
    "ib.link_speed": "ib",
    "ib.congestion": "ib",
    "bmc.sensor": "bmc",
    "bmc.sel": "bmc",
    "bmc.health": "bmc",
    "bmc.leak": "bmc",
    "bmc.coolant": "bmc",
    "bmc.drift": "bmc",
    "scheduler.node_state": "slurm",
    "node.mounts": "node",
    "node.services": "node",
    "node.fabric_manager": "node",
    "node.unreachable": None,
    "node.drift": "node",
    "node.pcie_aer": "kernel",
    "collector.error": None,
    "nvswitch.sxid": "kernel",
    "backup.failed": None,
    "backup.stale": None,
}

#: Profile key -> the fact domain that must be read to compare with it. A profile that sets the key makes the
#: domain "needed": when it is unknown the node's status is ``error`` (its expectations could not be checked).
PROFILE_DOMAINS = {
    "gpu_model": "gpu",
    "gpu_count": "gpu",
    "nvlinks_per_gpu": "gpu",
    "pcie_gen": "gpu",
    "pcie_width": "gpu",
    "driver_version": "gpu",
    "ib_ports": "ib",
    "ib_rate_gbps": "ib",
    "ib_link_layer": "ib",
    "mounts": "node",
    "services": "node",
    "nvswitch": "node",
    "fabric_manager_version": "node",
}


# ------------------------------------------------------------------ the Xid / SXid table of docs/checks.md

#: docs/checks.md holds the generated table between these two lines (tools/gen_xid_table.py writes it).
TABLE_START = "<!-- xid-sxid-table: generated by tools/gen_xid_table.py from the catalogues; do not edit -->"
TABLE_END = "<!-- xid-sxid-table: end -->"

#: Codes whose kernel line refines the catalogue row (the table says so).
_PER_LINE = {
    45: "solo: P2 `restart_fabric_manager`",
    74: "Hopper lines: register decode",
    154: "the line's recovery action",
    **{c: "decode sheet per sub-case" for c in range(144, 151)},
}


def _cell(text) -> str:
    return str(text if text not in (None, "") else "-").replace("|", "/")


def xid_sxid_table() -> str:
    """The Markdown table of every Xid and SXid code: NVIDIA's bucket (Xid) or the Fabric Manager guide's class
    (SXid), this collection's default severity and action, and where a line refines them."""
    from ansible_collections.gpuops.cluster.plugins.module_utils import _sxid_catalog, _xid_catalog

    ver = _xid_catalog.CATALOG_VERSION
    out = [
        TABLE_START,
        "",
        "Xid: NVIDIA's Xid catalog workbook of %s (%s). Applies to: A = A100, H = H100, B = B100, G = GB200. "
        "`(override)`: the action differs from the bucket's for the reason recorded in `_xid_catalog.OVERRIDES` / "
        "`BUCKET_REASONS`." % (ver["modified"][:10], ver["page"]),
        "",
        "| Xid | Name | NVIDIA immediate / investigatory | Applies to | Severity | Action | Refined by the line |",
        "|---|---|---|---|---|---|---|",
    ]
    for code in sorted(_xid_catalog.CATALOG):
        e = _xid_catalog.CATALOG[code]
        applies = e.get("applies_to") or {}
        arch = "".join(a[0] for a in ("A100", "H100", "B100", "GB200") if applies.get(a)) or "-"
        action = "`%s`%s" % (e["action"], " (override)" if e.get("override") else "")
        out.append(
            "| %d | %s | %s / %s | %s | %s | %s | %s |"
            % (
                code,
                _cell(e["name"]),
                _cell(e["nvidia_action"]),
                _cell(e["nvidia_investigatory"]),
                arch,
                e["severity"],
                action,
                _cell(_PER_LINE.get(code)),
            )
        )
    out += [
        "",
        "SXid: %s. Potentially fatal codes take the line's Fatal/Non-fatal word (Fatal: P1 `reboot`); a code "
        "outside the guide falls back to that word (fatal: P1 `reboot`, non-fatal: P2 `monitor`)."
        % _sxid_catalog.GUIDE,
        "",
        "| SXid | Class | Severity | Action | When the line says Fatal |",
        "|---|---|---|---|---|",
    ]
    for code, cls, sev, action in _sxid_catalog.rows():
        fatal = _sxid_catalog.lookup(code, True)
        out.append("| %d | %s | %s | `%s` | %s `%s` |" % (code, cls, sev, action, fatal["severity"], fatal["action"]))
    out += ["", TABLE_END]
    return "\n".join(out)
