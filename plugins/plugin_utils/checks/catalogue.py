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
    "nvswitch.sxid": "kernel.events (kind sxid)",
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
