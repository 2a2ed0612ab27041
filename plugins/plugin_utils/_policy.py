# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health policy as data: defaults, recursive site overrides, validation, version and hash.

``DEFAULT_POLICY`` holds every threshold, response time, escalation and clear rule the checks
(``_checks.py``) and the cluster aggregation (``_cluster.py``) use. A site never edits it: it passes
``gpuops_policy_overrides`` (a second variable), merged recursively by ``merge_policy``. An unknown key
(a typo) raises ``PolicyError`` naming the dotted key path. ``policy_hash`` identifies the merged policy
in report.json. Where a number comes from is in docs/checks.md (sources: health-policy-facts.md).

Pure Python, no Ansible imports; runs on the controller (and is importable on Python 3.8).
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
import re
from typing import Any, Dict, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils import _xid_catalog

#: Bump when a default changes meaning (report.json carries it next to the hash).
POLICY_VERSION = "2026.12.1"

SEVERITIES = ("P0", "P1", "P2", "P3")
_SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}


def severity_rank(severity: Any) -> int:
    """Position on the severity scale (P0 = 0 ... P3 = 3); anything else (None, "P4", junk) sorts last (9)."""
    return _SEVERITY_RANK.get(str(severity).strip().upper() if severity is not None else "", 9)

#: The action vocabulary (docs/findings.md) is defined once, with the Xid catalogue that uses it first.
ACTIONS = _xid_catalog.ACTIONS
#: How an active (remembered) fault clears; see docs/checks.md "Clearing".
CLEAR_RULES = ("facts", "needs_new_boot", "needs_reset_record", "needs_serial_change")
#: Actions that take a node or part of it out of service or power it off: never taken on evidence that could not
#: be read (a finding from an unknown fact domain is withheld to ``monitor``, see ``withhold_disruptive``).
DISRUPTIVE_ACTIONS = ("isolate", "reboot", "reset_gpu", "replace", "emergency_shutdown")
#: What a withheld disruptive action becomes.
WITHHELD_ACTION = "monitor"
DOMAIN_KINDS = ("rack", "leaf", "power")

#: Keys a hardware profile may carry (see docs/policy.md "Hardware profiles").
PROFILE_KEYS = {
    "gpu_model": str,
    "gpu_count": int,
    "nvlinks_per_gpu": int,
    "pcie_gen": int,
    "pcie_width": int,
    "ib_ports": (list, int),
    "ib_rate_gbps": (int, float),
    "driver_version": str,
    "fabric_manager_version": str,
    "ib_link_layer": str,
    "mounts": list,
    "services": list,
    "nvswitch": bool,
    "description": str,
}


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
        # The same user-caused Xid on one GPU from this many distinct processes -> P2 (WORKFLOW_XID_13/31:
        # repeats on the same GPU across applications point at the hardware: run DCGM diag).
        "user_caused_repeat_processes": 3,
        # Xid 154 carries the NEW recovery action: act on it.
        "recovery_action_xid": 154,
    },
    "thresholds": {
        "temperature": {
            # Relative to the GPU's own slowdown/shutdown temperatures (facts temperature.slowdown_c/shutdown_c).
            "gpu_slowdown_margin_c": 3,  # gpu_c >= slowdown_c - margin -> P2 (clocks about to drop)
            "gpu_shutdown_margin_c": 2,  # gpu_c >= shutdown_c - margin -> P1 emergency_shutdown
            "gpu_fallback_p2_c": 85,  # when the GPU reports no slowdown temperature (H100 max operating 85 C)
            "gpu_fallback_p1_c": 92,
            "memory_p2_c": 95,  # HBM max operating temperature
            "memory_p1_c": 105,
        },
        "ecc": {
            "volatile_uncorrected": 1,  # since driver load: P1 reset_gpu
            "volatile_corrected": 10000,  # since driver load: P2 monitor (AzNHC SRAM correctable 10000)
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
            "crc_per_second": 100,  # DCGM NVLink CRC >= 100/s
            "recovery_delta": 1,  # DCGM NVLink error >= 1 (link retrained)
            "min_interval_s": 60,
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
        "drain_p2p": _sev("P2", "reset_gpu"),
        "drain_and_reset": _sev("P1", "reset_gpu"),
        "recover_imex_domain": _sev("P2", "monitor"),
        "bus_reset": _sev("P1", "reset_gpu"),
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
            "79": {
                "window_days": 30,
                "steps": [_sev("P1", "reboot"), _sev("P1", "replace")],
            },
            "48": {
                "window_days": 30,
                "steps": [_sev("P1", "reset_gpu"), _sev("P1", "reset_gpu"), _sev("P1", "replace")],
            },
            "119": {
                "window_days": 30,
                "steps": [_sev("P1", "reset_gpu"), _sev("P1", "reboot"), _sev("P1", "contact_vendor")],
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
    # Hardware profiles: node class -> expectations (see PROFILE_KEYS). Sites add theirs here.
    "profiles": {},
}

#: Paths (dotted) under which a site may add keys of its own. "*" matches one level of any key.
_OPEN_PATHS = (
    "xid.overrides",
    "escalation",
    "escalation.*",
    "clear_rules.checks",
    "clear_rules.by_action",
    "thresholds.ib.counters",
    "thresholds.throttle.reasons",
    "thresholds.bmc.sensor_type_status",
    "thresholds.bmc.sensor_type_status.*",
    "thresholds.bmc.health",
    "thresholds.bmc.leak",
    "thresholds.bmc.coolant",
    "thresholds.pcie.replay_per_lane_per_minute",
    "collector_errors.overrides",
    "correlation.domain_order",
    "recovery_actions",
    "profiles",
)


class PolicyError(Exception):
    """An invalid policy or profile; the message names the offending key (dotted path)."""


def _is_open(parts: Tuple[str, ...]) -> bool:
    for pattern in _OPEN_PATHS:
        pp = pattern.split(".")
        if len(pp) == len(parts) and all(p == "*" or p == q for p, q in zip(pp, parts)):
            return True
    return False


def _join(path: str, key: Any) -> str:
    return "%s.%s" % (path, key) if path else str(key)


def _type_ok(default: Any, value: Any) -> bool:
    if default is None:
        return True
    if value is None:
        return False
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, list):
        return isinstance(value, list)
    if isinstance(default, dict):
        return isinstance(value, dict)
    return True


def _merge(base: Any, over: Any, parts: Tuple[str, ...]) -> Any:
    path = ".".join(parts)
    if not isinstance(over, dict):
        raise PolicyError("policy key '%s' must be a mapping, got %s" % (path or "<root>", type(over).__name__))
    out = copy.deepcopy(base)
    open_here = _is_open(parts)
    for key, value in over.items():
        sub = _join(path, key)
        if not isinstance(key, str):
            raise PolicyError("policy key '%s' must be a string" % sub)
        if key not in out:
            if not open_here:
                raise PolicyError("unknown policy key '%s'" % sub)
            out[key] = copy.deepcopy(value)
            continue
        if isinstance(out[key], dict) and isinstance(value, dict):
            out[key] = _merge(out[key], value, parts + (key,))
        else:
            if not _type_ok(out[key], value):
                raise PolicyError(
                    "policy key '%s' must be %s, got %s" % (sub, type(out[key]).__name__, type(value).__name__)
                )
            out[key] = copy.deepcopy(value)
    return out


def merge_policy(
    defaults: Optional[Dict[str, Any]] = None, overrides: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]:
    """Merge ``overrides`` into ``defaults`` recursively and validate the result.

    Mappings merge key by key (overriding one threshold keeps all others); lists and scalars replace.
    Unknown keys raise ``PolicyError`` naming the dotted key, except under the open maps (profiles,
    Xid overrides, escalation, ...). Returns a new dict; neither argument is modified.
    """
    base = DEFAULT_POLICY if defaults is None else defaults
    merged = _merge(base, overrides if overrides is not None else {}, ())
    validate_policy(merged)
    return merged


def _check_sev_action(obj: Any, path: str) -> None:
    if not isinstance(obj, dict):
        raise PolicyError("policy key '%s' must be a mapping with severity and action" % path)
    for key in obj:
        if key not in ("severity", "action", "per_hour", "min_delta", "window_days", "steps"):
            raise PolicyError("unknown policy key '%s'" % _join(path, key))
    if "severity" in obj and obj["severity"] not in SEVERITIES:
        raise PolicyError("policy key '%s.severity' must be one of %s" % (path, ", ".join(SEVERITIES)))
    if "action" in obj and obj["action"] not in ACTIONS:
        raise PolicyError("policy key '%s.action' must be one of %s" % (path, ", ".join(ACTIONS)))


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(m|h|d|bd)\s*$")


def parse_duration(text: Any) -> Optional[tuple]:
    """``"15m"`` -> ``(15.0, "m")``; None when malformed."""
    m = _DURATION.match(str(text)) if text is not None else None
    if not m:
        return None
    return float(m.group(1)), m.group(2)


def validate_profile(profile: Any, name: str = "profile") -> None:
    """Raise PolicyError for an unknown key or a wrongly typed value in a hardware profile."""
    if profile is None:
        return
    if not isinstance(profile, dict):
        raise PolicyError("%s must be a mapping" % name)
    for key, value in profile.items():
        if key not in PROFILE_KEYS:
            raise PolicyError("unknown profile key '%s.%s'" % (name, key))
        if value is None:
            continue
        want = PROFILE_KEYS[key]
        if isinstance(value, bool) and want is not bool:
            raise PolicyError("profile key '%s.%s' has the wrong type" % (name, key))
        if not isinstance(value, want):
            raise PolicyError("profile key '%s.%s' has the wrong type" % (name, key))


def validate_policy(policy: Dict[str, Any]) -> None:
    """Semantic checks of a merged policy. Raises PolicyError naming the key."""
    for sev in SEVERITIES:
        if parse_duration(policy["response_times"].get(sev)) is None:
            raise PolicyError("policy key 'response_times.%s' must look like 15m, 2h, 1d or 1bd" % sev)
    for path, value, top in (
        ("kernel_events.lookback_hours", policy["kernel_events"]["lookback_hours"], 87600),
        ("thresholds.bmc.sel_lookback_hours", policy["thresholds"]["bmc"]["sel_lookback_hours"], 87600),
    ):
        if not 0 < value <= top:
            raise PolicyError("policy key '%s' must be in (0, %d]" % (path, top))
    for name, rule in policy["thresholds"]["throttle"]["reasons"].items():
        _check_sev_action(rule, "thresholds.throttle.reasons.%s" % name)
    for name, rule in policy["thresholds"]["ib"]["counters"].items():
        _check_sev_action(rule, "thresholds.ib.counters.%s" % name)
    for name, rule in policy["thresholds"]["bmc"]["sensor_status"].items():
        _check_sev_action(rule, "thresholds.bmc.sensor_status.%s" % name)
    for typ, table in policy["thresholds"]["bmc"]["sensor_type_status"].items():
        if not isinstance(table, dict):
            raise PolicyError("policy key 'thresholds.bmc.sensor_type_status.%s' must be a mapping" % typ)
        for name, rule in table.items():
            _check_sev_action(rule, "thresholds.bmc.sensor_type_status.%s.%s" % (typ, name))
    for group in ("health", "leak", "coolant"):
        for name, rule in policy["thresholds"]["bmc"][group].items():
            _check_sev_action(rule, "thresholds.bmc.%s.%s" % (group, name))
    for name, rule in policy["thresholds"]["bmc"]["coolant"].items():
        if rule.get("action") == "emergency_shutdown":
            raise PolicyError(
                "policy key 'thresholds.bmc.coolant.%s.action' cannot be emergency_shutdown: a coolant flow, "
                "pressure or temperature reading is a cooling fault, not a leak (use isolate or monitor)" % name
            )
    for gen, rate in policy["thresholds"]["pcie"]["replay_per_lane_per_minute"].items():
        if not isinstance(rate, (int, float)) or isinstance(rate, bool):
            raise PolicyError("policy key 'thresholds.pcie.replay_per_lane_per_minute.%s' must be a number" % gen)
    for name, rule in policy["recovery_actions"].items():
        _check_sev_action(rule, "recovery_actions.%s" % name)
    _check_sev_action(policy["collector_errors"]["default"], "collector_errors.default")
    for name, rule in policy["collector_errors"]["overrides"].items():
        _check_sev_action(rule, "collector_errors.overrides.%s" % name)
    for code, row in policy["xid"]["overrides"].items():
        try:
            int(str(code))
        except ValueError:
            raise PolicyError("policy key 'xid.overrides.%s' must be an Xid number" % code) from None
        if not isinstance(row, dict):
            raise PolicyError("policy key 'xid.overrides.%s' must be a mapping" % code)
        for key in row:
            if key not in ("severity", "action", "user_caused", "note"):
                raise PolicyError("unknown policy key 'xid.overrides.%s.%s'" % (code, key))
        _check_sev_action({k: v for k, v in row.items() if k in ("severity", "action")}, "xid.overrides.%s" % code)
    if policy["xid"]["user_caused_severity"] not in SEVERITIES:
        raise PolicyError("policy key 'xid.user_caused_severity' must be one of %s" % ", ".join(SEVERITIES))
    for check, codes in policy["escalation"].items():
        if not isinstance(codes, dict):
            raise PolicyError("policy key 'escalation.%s' must be a mapping of code -> rule" % check)
        for code, rule in codes.items():
            path = "escalation.%s.%s" % (check, code)
            _check_sev_action(rule, path)
            steps = rule.get("steps")
            if not isinstance(steps, list) or not steps:
                raise PolicyError("policy key '%s.steps' must be a non-empty list" % path)
            for i, step in enumerate(steps):
                _check_sev_action(step, "%s.steps[%d]" % (path, i))
            wd = rule.get("window_days")
            if not isinstance(wd, (int, float)) or isinstance(wd, bool) or not 0 < wd <= 3650:
                raise PolicyError("policy key '%s.window_days' must be a number of days in (0, 3650]" % path)
    for group in ("by_action", "checks"):
        for key, rule in policy["clear_rules"][group].items():
            if rule not in CLEAR_RULES:
                raise PolicyError(
                    "policy key 'clear_rules.%s.%s' must be one of %s" % (group, key, ", ".join(CLEAR_RULES))
                )
    for key, order in policy["correlation"]["domain_order"].items():
        if not isinstance(order, list) or any(d not in DOMAIN_KINDS for d in order):
            raise PolicyError("policy key 'correlation.domain_order.%s' must list of %s" % (key, DOMAIN_KINDS))
    for key in ("min_share",):
        v = policy["correlation"][key]
        if not 0 < v <= 1:
            raise PolicyError("policy key 'correlation.%s' must be in (0, 1]" % key)
    if not 0 < policy["cluster"]["faulty_share"] <= 1:
        raise PolicyError("policy key 'cluster.faulty_share' must be in (0, 1]")
    for name, profile in policy["profiles"].items():
        validate_profile(profile, "profiles.%s" % name)


def policy_hash(policy: Dict[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys, no whitespace) of ``policy``: ``sha256:<hex>``."""
    text = json.dumps(policy, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def profile_for(policy: Dict[str, Any], name: Optional[str]) -> Optional[Dict[str, Any]]:
    """The hardware profile named ``name`` (node class), or None (checks that need expectations skip)."""
    if not name:
        return None
    profile = policy.get("profiles", {}).get(name)
    if profile is None:
        raise PolicyError("unknown hardware profile '%s' (policy key 'profiles.%s')" % (name, name))
    return profile


def known_classes(policy: Optional[Dict[str, Any]] = None, profiles: Optional[Dict[str, Any]] = None) -> list:
    """Sorted node-class names a host may use: ``policy["profiles"]`` and a ``gpuops_profiles`` mapping."""
    names = set((policy or {}).get("profiles") or {}) | set(profiles or {})
    return sorted(str(n) for n in names)


def unknown_class_message(host: str, node_class: Any, known: list) -> str:
    """The error for a node class that names no hardware profile (a typo would switch every profile check off)."""
    return "host %s: unknown node class %r (gpuops_node_class); known classes: %s" % (
        host,
        node_class,
        ", ".join(known) if known else "none (define gpuops_profiles or policy.profiles)",
    )


def withhold_disruptive(finding: Dict[str, Any], why: str) -> bool:
    """Downgrade ``finding`` in place when its action is disruptive; say why. True when it was changed.

    The severity stays (someone must still look at it); the action becomes ``WITHHELD_ACTION``; the original
    action is kept in ``evidence.withheld_action`` and ``why`` in ``evidence.withheld_because``, the rule and
    the message. Used for findings from a fact domain that could not be read ("I could not see" is not "it is
    broken": docs/findings.md "Unknown is not broken").
    """
    action = finding.get("action")
    if action not in DISRUPTIVE_ACTIONS:
        return False
    ev = finding.get("evidence")
    if not isinstance(ev, dict):
        ev = finding["evidence"] = {}
    ev["withheld_action"] = action
    ev["withheld_because"] = why
    finding["action"] = WITHHELD_ACTION
    finding["rule"] = "%s; %s withheld: %s" % (finding.get("rule") or "", action, why)
    finding["message"] = "%s (%s withheld: %s)" % (finding.get("message") or "", action, why)
    return True


def is_withheld(finding: Any) -> bool:
    """True for a finding whose disruptive action was withheld (its evidence could not be read)."""
    return isinstance(finding, dict) and bool((finding.get("evidence") or {}).get("withheld_action"))


# ---------------------------------------------------------------- time helpers (shared by checks/cluster)


def parse_time(value: Any) -> Optional[datetime.datetime]:
    """ISO 8601 string / epoch number / datetime -> aware UTC datetime; None when not placeable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, datetime.datetime):
        dt = value
    elif isinstance(value, (int, float)):
        try:
            return datetime.datetime.fromtimestamp(float(value), datetime.timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    else:
        s = str(value).strip()
        if not s:
            return None
        if s.endswith("Z") or s.endswith("z"):
            s = s[:-1] + "+00:00"
        s = s.replace(",", ".")
        # Python 3.8-3.10 fromisoformat wants exactly 3 or 6 fraction digits: normalize to 6
        m = re.match(r"^(.*[T ]\d\d:\d\d:\d\d)(\.\d+)?(.*)$", s)
        if m and m.group(2):
            s = m.group(1) + (m.group(2)[1:] + "000000")[:6].join((".", "")) + m.group(3)
        try:
            dt = datetime.datetime.fromisoformat(s)
        except ValueError:
            return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    return dt.astimezone(datetime.timezone.utc)


def iso(dt: Optional[datetime.datetime]) -> Optional[str]:
    if dt is None:
        return None
    return dt.astimezone(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def respond_by(severity: str, now: Any, policy: Dict[str, Any]) -> Optional[str]:
    """``now`` + the response time of ``severity`` (business days skip Saturday and Sunday), ISO UTC."""
    start = parse_time(now)
    spec = parse_duration(policy.get("response_times", {}).get(severity))
    if start is None or spec is None:
        return None
    amount, unit = spec
    if unit == "m":
        return iso(start + datetime.timedelta(minutes=amount))
    if unit == "h":
        return iso(start + datetime.timedelta(hours=amount))
    if unit == "d":
        return iso(start + datetime.timedelta(days=amount))
    # business days: move forward one weekday at a time; a start on a weekend counts from Monday 00:00
    t = start
    while t.weekday() >= 5:
        t = (t + datetime.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    whole = int(amount)
    for _day in range(whole):
        t += datetime.timedelta(days=1)
        while t.weekday() >= 5:
            t += datetime.timedelta(days=1)
    frac = amount - whole
    if frac:
        t += datetime.timedelta(days=frac)
    return iso(t)
