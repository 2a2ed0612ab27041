# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The default health policy (data): every threshold, response time, escalation and clear rule.

Read it through ``_policy`` (``_policy.DEFAULT_POLICY``, ``_policy.merge_policy``), which validates site overrides
against it. Where a number comes from is in docs/checks.md (sources: health-policy-facts.md).
"""

from __future__ import annotations

import copy
from typing import Any, Dict

from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import sla as _sla

#: Bump when a default changes meaning (report.json carries it next to the hash).
POLICY_VERSION = "2026.12.1"


def _sev(severity: str, action: str) -> Dict[str, str]:
    return {"severity": severity, "action": action}


DEFAULT_POLICY: Dict[str, Any] = {
    "version": POLICY_VERSION,
    # Response table: how soon someone must act on a finding (respond_by = generated_at + this).
    # Units: m, h, d, bd (business days: Saturday and Sunday skipped).
    "response_times": {"P0": "15m", "P1": "30m", "P2": "2h", "P3": "1bd"},
    "kernel_events": {
        # Only events after max(current boot, last recorded clear of the GPU, now - lookback) count
        # (NVSentinel syslog monitor bootLookbackWindow: 2h; AzNHC Xid check: last 2 h).
        "lookback_hours": 2,
    },
    "xid": {
        # Per-code overrides of the Xid catalogue row (_xid_catalog.py): {"94": {"severity": "P2", "action": ...}}.
        "overrides": {},
        # Codes confirmed as application faults: never a node alarm when a user process caused them.
        "user_caused_severity": "P3",
        # The same user-caused Xid on one GPU from this many distinct processes -> P2 diagnose (WORKFLOW_XID_13/31:
        # repeats on the same GPU across applications point at the hardware: run DCGM diag).
        "user_caused_repeat_processes": 3,
        # Xid 13 on the same GPC/TPC from this many distinct processes -> P2 diagnose (NVIDIA WORKFLOW_XID_13).
        "same_unit_repeat_processes": 2,
        # Xid 154 carries the NEW recovery action: act on it.
        "recovery_action_xid": 154,
    },
    "sxid": {
        # Per-code or per-class overrides of the NVSwitch SXid catalogue (_sxid_catalog.py, the Fabric Manager guide's
        # classes non_fatal, non_fatal_reset, potentially_fatal, fatal, notable; "unlisted" = a code outside the
        # guide): {"20034": {"severity": "P1", "action": "reboot"}}. A code's row wins over its class's;
        # "when_fatal" (true) applies the row only when the line says Fatal. Repeats: escalation["nvswitch.sxid"].
        "overrides": {},
    },
    "thresholds": {
        "temperature": {
            # Relative to the GPU's own slowdown/shutdown temperatures (facts temperature.slowdown_c/shutdown_c).
            "gpu_slowdown_margin_c": 3,  # gpu_c >= slowdown_c - margin -> P2 (clocks about to drop)
            "gpu_shutdown_margin_c": 2,  # gpu_c >= shutdown_c - margin -> P1 emergency_shutdown
            # Drivers that report only T.Limit margins (tlimit_c: degrees below the GPU's own limit; thresholds as
            # margins, negative = past it): the same margins apply to the margin. These fallbacks only when the
            # driver prints no T.Limit thresholds (nvidia-smi shows -2 C slowdown, -7/-8 C shutdown).
            "tlimit_fallback_slowdown_c": -2,
            "tlimit_fallback_shutdown_c": -8,
            # Neither Celsius thresholds nor a T.Limit margin: fixed limits (H100 max operating 85 C).
            "gpu_fallback_p2_c": 85,
            "gpu_fallback_p1_c": 92,
            "memory_p2_c": 95,  # HBM max operating temperature
            "memory_p1_c": 105,
        },
        "ecc": {
            "volatile_uncorrected": 1,  # since driver load: P1 reset_gpu
            # Correctable since driver load, P2 monitor. SRAM and DRAM apart where the driver reports them apart
            # (AzNHC check_gpu_ecc: SRAM 10,000, DRAM 20,000,000; DRAM tolerates far more, row remapping handles
            # it); the total against the SRAM threshold where it does not (pre-R510 layouts).
            "volatile_corrected": 10000,
            "volatile_sram_corrected": 10000,
            "volatile_dram_corrected": 20000000,
            # sram_threshold_exceeded / unrepairable_memory: P1 replace (NVIDIA RMA criteria), not a number here.
            "aggregate_uncorrected": 1,  # lifetime: P3 monitor only
            "aggregate_corrected": 20000000,  # lifetime: P3 monitor only (AzNHC DRAM 20,000,000)
            # A volatile uncorrectable count explained only by these Xids (contained errors) is P2, not P1.
            "contained_xids": [94],
        },
        "remap": {
            "rma_uncorrectable_rows": 512,  # DCGM limit / #1190 RMA criterion: 512 total remaps
            # Xids that make a pending remap P1 (an uncorrectable error actually hit running work)
            "uncorrectable_xids": [48, 95, 140, 171, 172],
        },
        "retired_pages": {
            "max_total": 63,  # DCGM max retired pages -> P1 replace
            "dbe_soft_limit": 15,  # DCGM DBE retired-page soft limit -> P2 monitor
        },
        "pcie": {
            # A GPU counts as "under load" (so a lower link generation is a fault, not power saving) when
            # gpu_idle is not active and utilization is at least this.
            "load_utilization_pct": 20,
            # DCGM replay-rate limit: BER 1e-12 x line rate, per lane per minute (DcgmHealthWatch.cpp).
            "replay_per_lane_per_minute": {"1": 0.15, "2": 0.3, "3": 0.48, "4": 0.96, "5": 1.92, "6": 3.84},
            "min_interval_s": 60,
        },
        "nvlink": {
            # DCGM NVLink health watch (DcgmGPUHardwareLimits.h): CRC >= 100/s within a minute; replay and
            # recovery errors >= 1. Two readings cannot show the minute: one minute's worth of CRC errors at the
            # limit (crc_per_second x crc_window_s) since the last reading is the burst.
            "crc_per_second": 100,
            "crc_window_s": 60,
            "recovery_delta": 1,  # link retrained: P1 reset_gpu (DCGM fails the GPU)
            "replay_delta": 1,  # flit retransmitted: P2 monitor (DCGM fails on >= 1; no data was lost)
            "min_interval_s": 60,  # for the CRC rule only; replay/recovery deltas count from any interval
        },
        "power": {
            # enforced power limit this far below the default limit -> P3 tune (a cap someone left behind)
            "cap_below_default_pct": 10,
        },
        "throttle": {
            # Normalized clock-event reasons (docs/facts.md) that are a fault; others (gpu_idle,
            # sw_power_cap, applications_clocks_setting, sync_boost, display_clock_setting) are normal.
            "reasons": {
                "hw_slowdown": _sev("P2", "monitor"),
                "hw_thermal_slowdown": _sev("P2", "tune"),
                "hw_power_brake_slowdown": _sev("P2", "monitor"),
                "sw_thermal_slowdown": _sev("P2", "tune"),
            },
        },
        "ib": {
            # Counter rates from two timestamped readings. per_hour: the rate threshold; min_delta: the
            # increase that must also be seen. NVSentinel NIC monitor defaults, converted to per hour.
            "counters": {
                "symbol_error": {"per_hour": 120, "min_delta": 1, "severity": "P2", "action": "reseat"},
                "link_error_recovery": {"per_hour": 300, "min_delta": 1, "severity": "P2", "action": "monitor"},
                "port_rcv_errors": {"per_hour": 36000, "min_delta": 1, "severity": "P2", "action": "monitor"},
                "local_link_integrity_errors": {"per_hour": 0, "min_delta": 1, "severity": "P2", "action": "reseat"},
                "excessive_buffer_overrun_errors": {
                    "per_hour": 0,
                    "min_delta": 1,
                    "severity": "P2",
                    "action": "monitor",
                },
                "port_xmit_discards": {"per_hour": 360000, "min_delta": 1, "severity": "P2", "action": "monitor"},
                "local_ack_timeout_err": {"per_hour": 3600, "min_delta": 1, "severity": "P2", "action": "monitor"},
                "rnr_nak_retry_err": {"per_hour": 0, "min_delta": 1, "severity": "P2", "action": "monitor"},
            },
            # A shorter interval keeps the older reading as the baseline (a rate over seconds is noise).
            "min_interval_s": 300,
            "link_flap": {"p2_downs": 1, "p1_downs": 5},  # AzNHC: >= 5 flaps -> NHC2005
        },
        "bmc": {
            # status -> severity/action; per sensor type overrides below.
            "sensor_status": {
                "non_critical": _sev("P3", "monitor"),
                "critical": _sev("P2", "monitor"),
                "non_recoverable": _sev("P1", "isolate"),
            },
            "sensor_type_status": {
                "power_supply": {"critical": _sev("P2", "replace"), "non_recoverable": _sev("P2", "replace")},
                "temperature": {"critical": _sev("P2", "tune"), "non_recoverable": _sev("P1", "emergency_shutdown")},
            },
            # Discrete states that mean a failure even when the status column says ok (a failed PSU can).
            "failure_states": [
                "Failure detected",
                "Power Supply AC lost",
                "Predictive failure",
                "Config Error",
                "Uncorrectable ECC",
                "Redundancy Lost",
            ],
            "sel_lookback_hours": 24,
            "health": {"Warning": _sev("P3", "monitor"), "Critical": _sev("P2", "monitor")},
            # Leak detectors only (Redfish LeakDetectors, IPMI leak sensors): the one emergency_shutdown.
            "leak": {"Warning": _sev("P1", "isolate"), "Critical": _sev("P1", "emergency_shutdown")},
            # Coolant flow, pressure, level and temperature sensors: a cooling fault, never a power-off
            # (emergency_shutdown is refused here).
            "coolant": {"Warning": _sev("P2", "monitor"), "Critical": _sev("P1", "isolate")},
        },
        "mounts": {"min_free_pct": 5},
        "fabric": {"ok_states": ["Completed"], "ok_status": ["Success"], "pending_states": ["In Progress"]},
    },
    "recovery_actions": {
        # NVML GPU recovery action state (gpu.recovery_action) -> what to do.
        "gpu_reset": _sev("P1", "reset_gpu"),
        "node_reboot": _sev("P1", "reboot"),
        # DRAIN_P2P: stop P2P work and UVM persistence, then query again (it turns into another action) [MEM]
        "drain_p2p": _sev("P2", "drain_p2p"),
        "drain_and_reset": _sev("P1", "reset_gpu"),
        "recover_imex_domain": _sev("P1", "recover_imex_domain"),
        # BUS_RESET (pynvml 13.615.71 only, undocumented): not an nvidia-smi GPU reset; a node reboot resets the bus
        "bus_reset": _sev("P1", "reboot"),
        "system_reboot": _sev("P1", "reboot"),
    },
    "collector_errors": {
        # A domain whose data is required: its collector.error makes the node status "error".
        "required_domains": ["gpu"],
        "default": _sev("P2", "monitor"),
        # "<domain>:<kind>" -> severity/action. A hung nvidia-smi is the classic symptom of a GPU in a bad
        # state (AzNHC NHC2015 "nvidia-smi hang" fails the node), so a GPU timeout is P1 reboot.
        "overrides": {"gpu:timeout": _sev("P1", "reboot")},
    },
    # Escalation keyed by check then code ("*" = any code): the n-th incident within window_days for the
    # same (host, GPU serial, check, code) uses steps[n-1] (the last step repeats).
    "escalation": {
        "gpu.xid": {
            # A second Xid 79 may be the riser, slot, power or driver: inspect and reseat before replacing the GPU.
            # (No count rule for Xid 48: NVIDIA's RMA criteria are the SRAM threshold flag, unrepairable memory and
            # a remap failure, checked by gpu.ecc and gpu.row_remap.)
            # NVIDIA: RESTART_BM, investigatory CONTACT_SUPPORT (not a replacement on a count).
            "79": {
                "window_days": 30,
                "steps": [_sev("P1", "reboot"), _sev("P1", "reseat"), _sev("P1", "contact_vendor")],
            },
            # NVIDIA: RESET_GPU, investigatory CONTACT_SUPPORT ("recording the remap failed").
            "64": {"window_days": 30, "steps": [_sev("P1", "reset_gpu"), _sev("P1", "contact_vendor")]},
            # NVIDIA 119/120: "A GPU reset or node power cycle may be needed if the error persists. If this problem
            # reoccurs after a power cycle, follow the NVIDIA GPU Debug Guidelines".
            "119": {
                "window_days": 30,
                "steps": [_sev("P1", "reset_gpu"), _sev("P1", "power_cycle"), _sev("P1", "contact_vendor")],
            },
            "120": {
                "window_days": 30,
                "steps": [_sev("P1", "reset_gpu"), _sev("P1", "power_cycle"), _sev("P1", "contact_vendor")],
            },
        },
    },
    "clear_rules": {
        # Faults whose action needs a reset/reboot/new part are remembered in the state dir until this holds.
        "by_action": {
            "reset_gpu": "needs_reset_record",
            "reboot": "needs_new_boot",
            "replace": "needs_serial_change",
        },
        # Findings raised by a kernel-log line (gpu.xid): the line ages out of the lookback window, the fault must
        # not. Their actions that no reading of the facts can confirm as done persist until this rule holds
        # (wins over by_action for these checks; "checks" below still wins over both).
        "event_checks": ["gpu.xid"],
        "events_by_action": {
            "power_cycle": "needs_new_boot",
            "isolate": "needs_serial_change",
            "reseat": "needs_new_boot",
            "contact_vendor": "needs_reset_record",
            "diagnose": "needs_reset_record",
        },
        # "<check>" or "<check>:<code>" -> rule; wins over by_action.
        "checks": {
            "gpu.recovery_action": "facts",  # an NVML state: it clears itself once the action was taken
            "gpu.row_remap:pending": "needs_reset_record",
            "gpu.row_remap:failure": "needs_serial_change",
            "collector.error": "facts",
            "node.unreachable": "facts",
            "gpu.diag": "facts",  # a new diag run replaces the verdict
        },
    },
    "correlation": {
        # Node findings of these checks (severity P1/P2) on >= min_share of a domain's members and on
        # >= min_nodes nodes become ONE P0 for the domain; members' actions become "monitor".
        "checks": [
            "node.unreachable",
            "ib.port_state",
            "ib.port_rate",
            "ib.errors",
            "ib.link_flap",
            "ib.optics",  # a dead leaf: every member's port dark (no light) is the leaf, not N cables
            "ib.link_speed",
            "node.mounts",
            "bmc.sensor",
            "bmc.leak",
            "bmc.coolant",
            "bmc.health",
            "gpu.temperature",
            "gpu.throttle",
            "gpu.fabric",
        ],
        "min_share": 0.5,
        "min_nodes": 3,
        # Which domain explains a check first (the others are skipped when they name the same nodes).
        "domain_order": {
            "default": ["leaf", "power", "rack"],
            "bmc.leak": ["rack", "power", "leaf"],
            "bmc.coolant": ["rack", "power", "leaf"],
            "bmc.sensor": ["power", "rack", "leaf"],
            "gpu.temperature": ["rack", "power", "leaf"],
            "gpu.throttle": ["power", "rack", "leaf"],
        },
        # IB ports stuck in INIT/ARMED on this many nodes: one P0 about the subnet manager.
        "subnet_manager_min_nodes": 3,
    },
    "cluster": {
        # Share of nodes faulty or unreachable at or above which the cluster itself is P0. NVSentinel's
        # circuit breaker stops quarantining at 50% cordoned; we alarm well before that.
        "faulty_share": 0.25,
        "min_nodes": 4,  # below this many nodes the share is not meaningful
        "domain_down_min_nodes": 2,  # a rack/leaf/power domain with all members down (at least this many)
    },
    # Job-aware Xid attribution (issue 38, inspect/job_storm.py): application-class Xids (13, 31, 43, 45, 69 and NVIDIA's
    # RESTART_APP codes outside the hardware categories) on >= min_nodes nodes of ONE job (the scheduler's job view)
    # within window_s seconds: one job.xid_storm finding (this severity, action restart_app); the node findings take
    # it as their cause (action monitor) and auto-isolation never drains a node for them.
    "job_storm": {"enabled": True, "window_s": 600, "min_nodes": 2, "severity": "P2"},
    # Zero-config baseline (docs/policy.md): expectations inferred from peers where no profile sets them.
    "fleet_baseline": {
        "enabled": True,
        "min_peers": 4,  # nodes of a class that must have voted before the fleet majority is used
        "min_share": 0.75,  # share of voters (nodes, ports, GPUs) that must agree: 3 of 4, 11 of 12
        "min_node_ports": 4,  # ports of one adapter model in a node before they judge each other
        "min_node_gpus": 4,  # GPUs of a node before their NVLinks judge each other
    },
    # Hardware profiles: node class -> expectations (see PROFILE_KEYS). Sites add theirs here.
    "profiles": {},
}

# Configuration backups (issue 18, docs/backup.md): retention by count and age per node (the newest verified snapshot
# is always kept), the age after which a node has no fresh snapshot (finding backup.stale), and the drill targets.
DEFAULT_POLICY["backup"] = {
    "keep_count": 10,
    "keep_days": 30,
    "stale_hours": 168,  # a week: the upgrade/onboarding cadence; every disruptive run snapshots first anyway
    "rto_minutes": 30,  # restore time objective of one node's configuration (restore_drill measures it)
    "rpo_hours": 24,  # recovery point objective: the newest snapshot a drill restores may be this old
}

# Issue 19: the scheduling platform, read once per inspection (gpuops.cluster.platform_info; docs/checks.md
# "Platform: scheduler" gives each number's source). Severity/action tables are validated like the others.
DEFAULT_POLICY["scheduler"] = {
    # slurmctld down or not answering scontrol ping: the operations contract's "scheduler platform down".
    "controller_down": _sev("P0", "contact_vendor"),
    "backup_down": _sev("P2", "monitor"),
    # sdiag: average time of an RPC type (microseconds) with at least rpc_min_count calls; server threads
    # (slurmctld defers work from max_rpc_cnt; the SchedMD high-throughput guide suggests 150); agent queue.
    "rpc": _sev("P2", "monitor"),
    "rpc_ave_time_us": 500000,
    "rpc_min_count": 20,
    "server_threads": 150,
    "agent_queue": 1000,
    "rpc_top": 5,
    # slurmdbd unreachable (sacct fails, or slurmctld's DBD agent queue grows past this)
    "accounting": _sev("P2", "monitor"),
    "dbd_agent_queue": 5000,
    # pending jobs: P3 advice with the percentiles; P2 when the 90th percentile of a partition's wait for
    # Resources exceeds this many hours
    "queue": _sev("P2", "monitor"),
    "queue_p90_hours": 24,
    "queue_min_jobs": 5,
    # nodes down / drained / failing across the cluster: P2 when at least this share of the nodes is out
    "nodes": _sev("P2", "monitor"),
    "nodes_out_share": 0.1,
    # job failures over the sacct window: cluster P2 at this failure rate (FAILED, NODE_FAIL, TIMEOUT excluded:
    # limits are the user's); a node P2 when >= node_min_failures of its jobs failed and >= node_failure_share
    "job_failures": _sev("P2", "monitor"),
    "failure_rate": 0.3,
    "failure_min_jobs": 10,
    "node_min_failures": 3,
    "node_failure_share": 0.5,
    "node_failure_ratio": 2.0,  # ... and at least this multiple of the other nodes' rate (not a cluster-wide problem)
    "failure_states": ["FAILED", "NODE_FAIL", "BOOT_FAIL", "OUT_OF_MEMORY"],
    # fragmentation: free GPUs at least this many while no node has room for a pending job's per-node shape
    "fragmentation": _sev("P2", "monitor"),
    "fragmentation_min_free_gpus": 8,
    # capacity: allocated GPU share per partition against the expansion trigger
    "capacity": _sev("P3", "none"),
    "capacity_trigger": 0.7,
}

# Parallel storage (issue 19; docs/checks.md "Storage checks"): storage.capacity, storage.health, storage.throughput.
DEFAULT_POLICY["thresholds"]["storage"] = {
    # Space and inode watermarks per filesystem and per target (OST/MDT/NSD): used % at or above.
    "capacity": {"p2_pct": 80, "p1_pct": 90},
    "inodes": {"p2_pct": 80, "p1_pct": 90},
    # An unhealthy target, server, NSD or connection (the storage team fixes it, not the GPU node).
    "health": _sev("P1", "contact_vendor"),
    # The opt-in probe below this share of its stored baseline (write MiB/s or metadata ops/s).
    "throughput": {"min_share": 0.5, "severity": "P2", "action": "monitor"},
    # The same storage.health finding on every inspected node (and at least this many): one cluster finding.
    "correlation_min_nodes": 2,
    # An NFS mount with the soft option (nfs(5): soft timeouts can cause silent data corruption): advice.
    "nfs_soft_mount": _sev("P3", "tune"),
    # NFS client RPC retransmissions (nfsstat -c) at or above pct of the calls, once min_calls were made (rule of
    # thumb of the AIX NFS tuning guide: more than 5 % retransmissions means a lossy network or overloaded server).
    "nfs_retrans": {"pct": 5, "min_calls": 1000, "severity": "P2", "action": "monitor"},
}


def _st(severity: str, action: str, source: str) -> Dict[str, str]:
    return {"severity": severity, "action": action, "source": source}


_LU_DF = "lfs-df.1 and lfs.c showdf (cluster-formats.md 5.1)"
_IBM = "IBM Storage Scale mmhealth docs (cluster-formats.md 6.1)"
_GX = "mmlsdisk words, gpfs_exporter mmlsdisk.go (cluster-formats.md 6.3)"
# Issue 37: how bad each state the storage prints is, by the storage's own meaning (docs/checks.md "storage.health").
# severity "none": the word is known and is not a fault; a word missing from a table is unknown, never a finding.
DEFAULT_POLICY["thresholds"]["storage"]["states"] = {
    # lfs df target lines (state) and -v flags (flag:<letter word>)
    "lustre_target": {
        "inactive": _st(
            "P2", "contact_vendor", "%s: 'inactive device', deactivated: the clients do not use it" % _LU_DF
        ),
        "unavailable": _st("P1", "contact_vendor", "%s: EAGAIN, the target did not answer (Lustre <= 2.9)" % _LU_DF),
        "error": _st("P1", "contact_vendor", "%s: '<uuid>: <strerror>', statfs of the target failed" % _LU_DF),
        "missing": _st(
            "P3",
            "monitor",
            "%s: not listed; since 2.10 deactivated targets are hidden unless -v and EAGAIN ones skipped: a gap is a "
            "hint, not proof (indices may be sparse by design)" % _LU_DF,
        ),
        "flag:degraded": _st(
            "P2", "contact_vendor", "%s: D, the OST is degraded (RAID rebuild): slow, still serving" % _LU_DF
        ),
        "flag:read_only": _st("P1", "contact_vendor", "%s: R, read-only after corruption: writes to it fail" % _LU_DF),
        "flag:out_of_space": _st("P1", "monitor", "%s: S, out of space: new writes to it fail with ENOSPC" % _LU_DF),
        "flag:out_of_inodes": _st("P1", "monitor", "%s: I, out of inodes: file creation fails" % _LU_DF),
        "flag:no_create": _st(
            "P3", "monitor", "%s: N, no new objects (an administrator's max_create_count=0)" % _LU_DF
        ),
        "flag:flash": _st("none", "none", "%s: f, a flash target: a property, not a state" % _LU_DF),
        "flag:unknown": _st("P3", "monitor", "%s: a flag this lfs prints in octal (0NN): unknown to us" % _LU_DF),
    },
    # lfs check servers, lctl get_param health_check, lctl dl
    "lustre_server": {
        "inactive": _st("P2", "contact_vendor", "lfs.c lfs_check: 'inactive.' (ENOTCONN, cluster-formats.md 5.2)"),
        "down": _st(
            "P1", "contact_vendor", "lfs.c lfs_check: 'error: check <obd>: <strerror>' (cluster-formats.md 5.2)"
        ),
        "unhealthy": _st("P1", "contact_vendor", "obd_sysfs.c health_check: NOT HEALTHY (cluster-formats.md 5.3)"),
        "lbug": _st("P1", "contact_vendor", "obd_sysfs.c health_check: LBUG, a Lustre kernel assertion (5.3)"),
        "not_up": _st("P2", "contact_vendor", "lctl dl: a device not UP is suspect (cluster-formats.md 5.4)"),
    },
    # mmhealth node/cluster show: the status of a component (IBM: FAILED dominates DEGRADED; a TIP moves HEALTHY to
    # TIPS; UNKNOWN is a monitoring problem)
    "gpfs_component": {
        "HEALTHY": _st("none", "none", _IBM),
        "TIPS": _st("none", "none", "%s: configuration advice, not a fault" % _IBM),
        "DISABLED": _st("none", "none", "%s: the component is not configured to run" % _IBM),
        "CHECKING": _st("none", "none", "%s: being checked (after a start)" % _IBM),
        "STARTING": _st("none", "none", "%s: starting" % _IBM),
        "UNKNOWN": _st("none", "none", "%s: a monitoring problem: the state is unknown, not broken" % _IBM),
        "DEGRADED": _st("P2", "contact_vendor", "%s: a WARNING event: working with less redundancy or speed" % _IBM),
        "FAILED": _st("P1", "contact_vendor", "%s: an ERROR event: the component does not work" % _IBM),
        "DEPEND": _st("P3", "monitor", "%s: stopped because a component it needs failed (that one is graded)" % _IBM),
        "STOPPED": _st("P3", "monitor", "%s: stopped on purpose (mmshutdown, a service stop)" % _IBM),
        "SUSPENDED": _st("P3", "monitor", "%s: suspended on purpose" % _IBM),
    },
    # mmhealth events whose component mmhealth still calls HEALTHY or TIPS (a graded component carries its events)
    "gpfs_event": {
        "ERROR": _st("P2", "contact_vendor", "%s: event severity ERROR" % _IBM),
        "WARNING": _st(
            "P3",
            "monitor",
            "%s: event severity WARNING while mmhealth keeps the component HEALTHY/TIPS (e.g. "
            "cluster_connections_down on a TIPS node): a warning, not a failed filesystem" % _IBM,
        ),
        "TIP": _st("none", "none", "%s: event severity TIP (advice)" % _IBM),
        "INFO": _st("none", "none", "%s: information events never change a state" % _IBM),
        "UNKNOWN": _st(
            "none",
            "none",
            "%s: no severity printed (older releases): the component's state grades it (info events never change "
            "a state)" % _IBM,
        ),
    },
    # mmlsdisk <fs> -Y: availability and status of an NSD (the worse of the two is the disk's grade)
    "gpfs_disk": {
        "up": _st("none", "none", _GX),
        "down": _st("P1", "contact_vendor", "%s: down, no I/O to the disk: data on it unavailable" % _GX),
        "unrecovered": _st("P1", "contact_vendor", "%s: unrecovered, recovery failed" % _GX),
        "recovering": _st("P2", "monitor", "%s: recovering, coming back" % _GX),
        "ready": _st("none", "none", _GX),
        "suspended": _st("P3", "monitor", "%s: suspended by an administrator (no new blocks)" % _GX),
        "to be emptied": _st("P3", "monitor", "%s: being drained by an administrator" % _GX),
        "being emptied": _st("P3", "monitor", "%s: being drained by an administrator" % _GX),
        "emptied": _st("P3", "monitor", "%s: drained by an administrator" % _GX),
        "replacing": _st("P3", "monitor", "%s: being replaced" % _GX),
        "replacement": _st("P3", "monitor", "%s: the replacement of a disk" % _GX),
    },
}


# --- Optics and link quality (issue 20): ib.optics, ib.ber, ib.congestion, gpu.nvlink link speed ---------------
# Sources in docs/checks.md ("Optics and link quality"). Appended as its own block: other slices edit the dict above.
DEFAULT_POLICY["thresholds"]["optics"] = {
    # mlxlink prints one [low..high] pair per DDM quantity (the module's alarm thresholds); where the module's
    # warning thresholds are not printed, the warning band is this far inside the alarm one.
    "rx_warning_margin_db": 3.0,
    "temperature_warning_margin_c": 5.0,
    # Rx power at or below this is "no light / lane not used" (0 mW prints as -40 dBm or -inf): not a reading.
    "no_light_dbm": -40.0,
    "warning": {"severity": "P2", "action": "reseat"},
    "alarm": {"severity": "P1", "action": "reseat"},
    "ber": {
        # post-FEC: ibdiagnet's BER threshold 10^-12; above it the link loses data -> P1 reseat
        "effective_ber_max": 1e-12,
        "symbol_ber_max": 1e-12,
        # mlxlink "Symbol Errors" since the last clear, per hour (NVSentinel NIC monitor symbol_error: 120/h)
        "symbol_errors_per_hour": 120,
        "min_minutes_since_clear": 1,
        # pre-FEC: FEC still corrects it (effective BER clean): P3 advice to clean/reseat at the next window
        "raw_ber_advice": 1e-7,
        "fail": {"severity": "P1", "action": "reseat"},
        "advice": {"severity": "P3", "action": "monitor"},
    },
    "attenuation": {
        # Rx power falling by at least drop_db over period_days (least-squares slope over the readings kept
        # in the state) -> P3 with the slope; needs readings spanning at least min_span_hours.
        "drop_db": 2.0,
        "period_days": 30,
        "min_span_hours": 24,
        "max_readings": 64,
        "finding": {"severity": "P3", "action": "monitor"},
    },
    "congestion": {
        # RoCE: rates between two readings at least min_interval_s apart (per second).
        "min_interval_s": 60,
        "pfc_pause_per_s": 1000,  # rx_prio*_pause + tx_prio*_pause (ethtool -S, mlx5)
        "cnp_per_s": 5000,  # np_cnp_sent + rp_cnp_handled (RDMA hw_counters)
        "ecn_marked_per_s": 50000,  # np_ecn_marked_roce_packets (RDMA hw_counters)
        "finding": {"severity": "P2", "action": "tune"},
    },
    # Issue 37: mlxlink's own verdict (Status Opcode / Recommendation, MLNX-OS "link diagnostic per port" opcode
    # list in gpu-knowledge-2026.md section 8): a port closed on purpose, a cable the port refuses (protocol
    # mismatch, cable stamping: the fix is a qualified cable), anything else a physical-layer fault.
    "status": {
        "admin_opcodes": [1, 18, 21, 22],
        "cable_opcodes": [16, 20, 24, 25, 26, 27, 28],
        "admin": {"severity": "P3", "action": "monitor"},
        "cable": {"severity": "P2", "action": "replace"},
        "other": {"severity": "P2", "action": "reseat"},
    },
    # ib.link_speed: active speed below the best speed both the port enables and the cable supports, or a width
    # below 2x on InfiniBand / below the width of the node's other ports at that speed (a lane that did not train)
    "link_speed": {"severity": "P2", "action": "reseat"},
    # a lane dark (Rx at the no-light floor) while its transmitter is lit or the module raised its Rx LOS / low
    # alarm: loss of light (fibre, far-end transceiver or peer port)
    "loss_of_light": {"severity": "P1", "action": "reseat"},
    # a module EEPROM that reads as garbage (identifier 0xff, no ordered threshold band): one finding, no alarms
    "unreadable": {"severity": "P3", "action": "monitor"},
}
DEFAULT_POLICY["thresholds"]["nvlink_speed"] = {
    # Per-link speed nvidia-smi nvlink -s prints for a healthy link, by GPU model (substring of the name, longest
    # match wins). Without a match the fastest link seen on the node is the expectation (peer inference).
    "expected_gbps": {
        "V100": 25.781,
        "A100": 25.0,
        "A800": 25.0,
        "H100": 26.562,
        "H800": 26.562,
        "H200": 26.562,
        "H20": 26.562,
        "B200": 53.125,
        "B300": 53.125,
        "GB200": 53.125,
        "GB300": 53.125,
    },
    "tolerance_pct": 2.0,
    "finding": {"severity": "P2", "action": "reset_gpu"},
}

# PCIe AER from the kernel log (issue 38; docs/checks.md "node.pcie_aer"), per device (a GPU or the port above it).
DEFAULT_POLICY["thresholds"]["pcie_aer"] = {
    "fatal": {"severity": "P1", "action": "diagnose"},
    "nonfatal": {"severity": "P2", "action": "diagnose"},
    # corrected errors: DCGM's PCIe diag limits (gpu-knowledge-2026.md section 7, DCGM Pcie.cpp): more than 16/min
    # (32/min on a Gen5 x16 link) or a total of 480 (pcie.aer_threshold = 32/min x 15 min). Logged lines are rate
    # limited by the kernel, so a log count is a lower bound.
    "corrected": {"severity": "P2", "action": "diagnose"},
    "corrected_per_minute": 16,
    "corrected_per_minute_gen5_x16": 32,
    "corrected_total": 480,
    # with Xid 79 (fallen off the bus) on the node: AER on the port above the GPU points at the slot/riser, AER on
    # the GPU alone at the GPU (NVIDIA's Xid 79 resolution: contact support; the remedy is a GPU replacement)
    "xid79_slot": {"severity": "P1", "action": "reseat"},
    "xid79_gpu": {"severity": "P1", "action": "contact_vendor"},
}


# Issue 15: the service contract's SLA targets per severity, overridable per site or customer
# (sla.profiles.<name>), and the ledger's retention (docs/service.md). A copy of _sla.DEFAULT_SLA.
DEFAULT_POLICY["sla"] = copy.deepcopy(_sla.DEFAULT_SLA)
