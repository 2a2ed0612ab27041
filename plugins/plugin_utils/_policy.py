# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health policy: the severity scale, the finding vocabulary, site overrides, validation, version and hash.

``SEVERITIES`` (P0..P3) and ``severity_rank`` are the one severity scale; ``ACTIONS``, ``CLEAR_RULES`` and
``DISRUPTIVE_ACTIONS`` the vocabulary of findings (docs/findings.md). ``DEFAULT_POLICY`` (data, in
``_policy_defaults.py``) holds every threshold, response time, escalation and clear rule the checks (the
``_checks`` package) and the cluster aggregation (``_cluster.py``) use. A site never edits it: it passes
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

from ansible_collections.gpuops.cluster.plugins.module_utils import _sxid_catalog, _xid_catalog
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time
from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import sla as _sla
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy_defaults import DEFAULT_POLICY

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
DISRUPTIVE_ACTIONS = (
    "isolate",
    "reboot",
    "reset_gpu",
    "replace",
    "emergency_shutdown",
    "power_cycle",
    "restart_fabric_manager",
    "drain_p2p",
    "recover_imex_domain",
)
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


#: Paths (dotted) under which a site may add keys of its own. "*" matches one level of any key.
_OPEN_PATHS = (
    "xid.overrides",
    "sxid.overrides",
    "escalation",
    "escalation.*",
    "clear_rules.checks",
    "clear_rules.by_action",
    "clear_rules.events_by_action",
    "thresholds.ib.counters",
    "thresholds.throttle.reasons",
    "thresholds.bmc.sensor_type_status",
    "thresholds.bmc.sensor_type_status.*",
    "thresholds.bmc.health",
    "thresholds.bmc.leak",
    "thresholds.bmc.coolant",
    "thresholds.pcie.replay_per_lane_per_minute",
    "thresholds.nvlink_speed.expected_gbps",
    "collector_errors.overrides",
    "correlation.domain_order",
    "recovery_actions",
    "profiles",
    "sla.profiles",
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
    _validate_times(policy)
    _validate_tables(policy)
    _validate_xid(policy)
    _validate_sxid(policy)
    _validate_escalation(policy["escalation"])
    _validate_cluster(policy)
    for name, profile in policy["profiles"].items():
        validate_profile(profile, "profiles.%s" % name)
    if "sla" in policy:
        _validate_sla(policy["sla"])


def _validate_sla_targets(table: Any, path: str) -> None:
    """A severity -> {clock: target} table (sla.targets or one sla.profiles entry)."""
    if not isinstance(table, dict):
        raise PolicyError("policy key '%s' must be a mapping of severities" % path)
    clocks = [c for c, _column in _sla.CLOCKS]
    for sev, row in table.items():
        if sev not in SEVERITIES:
            raise PolicyError("unknown policy key '%s.%s' (severities: %s)" % (path, sev, ", ".join(SEVERITIES)))
        if not isinstance(row, dict):
            raise PolicyError("policy key '%s.%s' must be a mapping of clocks (%s)" % (path, sev, ", ".join(clocks)))
        for clock, target in row.items():
            if clock not in clocks:
                raise PolicyError("unknown policy key '%s.%s.%s' (clocks: %s)" % (path, sev, clock, ", ".join(clocks)))
            try:
                _sla.check_target(target, "%s.%s.%s" % (path, sev, clock))
            except _sla.SlaError as exc:
                raise PolicyError("policy key '%s.%s.%s': %s" % (path, sev, clock, exc)) from None


def _validate_sla(sla: Dict[str, Any]) -> None:
    """The SLA block (docs/service.md): targets and profiles, the calendar, the availability target, shares,
    severity lists, retention."""
    _validate_sla_targets(sla.get("targets"), "sla.targets")
    try:
        _sla.calendar_of(sla)
    except _sla.SlaError as exc:
        raise PolicyError("policy key 'sla.calendar': %s" % exc) from None
    target = sla.get("availability_target")
    if target is not None and (
        isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target <= 100
    ):
        raise PolicyError("policy key 'sla.availability_target' must be a percentage in (0, 100], e.g. 99.5")
    for name, profile in (sla.get("profiles") or {}).items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name):
            raise PolicyError(
                "policy key 'sla.profiles.%s': a profile name is letters, digits, _ . - (64 at most)" % name
            )
        _validate_sla_targets(profile, "sla.profiles.%s" % name)
    for key in ("at_risk_share", "capacity_trigger"):
        if not 0 < sla[key] <= 1:
            raise PolicyError("policy key 'sla.%s' must be a share in (0, 1], got %r" % (key, sla[key]))
    for key in ("open_severities", "review_required"):
        bad = [s for s in sla[key] if s not in SEVERITIES]
        if bad:
            raise PolicyError(
                "policy key 'sla.%s' must list severities (%s), got %r" % (key, ", ".join(SEVERITIES), bad)
            )
    if sla["retention_days"] < 183:
        raise PolicyError(
            "policy key 'sla.retention_days' must be at least 183 (audit records are kept six months), got %r"
            % sla["retention_days"]
        )


def _validate_times(policy: Dict[str, Any]) -> None:
    for sev in SEVERITIES:
        if parse_duration(policy["response_times"].get(sev)) is None:
            raise PolicyError("policy key 'response_times.%s' must look like 15m, 2h, 1d or 1bd" % sev)
    for path, value, top in (
        ("kernel_events.lookback_hours", policy["kernel_events"]["lookback_hours"], 87600),
        ("thresholds.bmc.sel_lookback_hours", policy["thresholds"]["bmc"]["sel_lookback_hours"], 87600),
    ):
        if not 0 < value <= top:
            raise PolicyError("policy key '%s' must be in (0, %d]" % (path, top))


_OPTICS_TABLES = (
    "optics.warning",
    "optics.alarm",
    "optics.ber.fail",
    "optics.ber.advice",
    "optics.attenuation.finding",
    "optics.congestion.finding",
    "optics.status.admin",
    "optics.status.cable",
    "optics.status.other",
    "optics.link_speed",
    "optics.loss_of_light",
    "optics.unreadable",
    "nvlink_speed.finding",
    "pcie_aer.fatal",
    "pcie_aer.nonfatal",
    "pcie_aer.corrected",
    "pcie_aer.xid79_slot",
    "pcie_aer.xid79_gpu",
)


def _validate_tables(policy: Dict[str, Any]) -> None:
    """Every (severity, action) table of the thresholds, recovery actions and collector errors."""
    th = policy["thresholds"]
    tables = [
        ("thresholds.throttle.reasons", th["throttle"]["reasons"]),
        ("thresholds.ib.counters", th["ib"]["counters"]),
        ("thresholds.bmc.sensor_status", th["bmc"]["sensor_status"]),
        ("thresholds.bmc.health", th["bmc"]["health"]),
        ("thresholds.bmc.leak", th["bmc"]["leak"]),
        ("thresholds.bmc.coolant", th["bmc"]["coolant"]),
    ]
    for typ, table in th["bmc"]["sensor_type_status"].items():
        if not isinstance(table, dict):
            raise PolicyError("policy key 'thresholds.bmc.sensor_type_status.%s' must be a mapping" % typ)
        tables.append(("thresholds.bmc.sensor_type_status.%s" % typ, table))
    tables.append(("recovery_actions", policy["recovery_actions"]))
    tables.append(("collector_errors.overrides", policy["collector_errors"]["overrides"]))
    for path, table in tables:
        for name, rule in table.items():
            _check_sev_action(rule, "%s.%s" % (path, name))
    _check_sev_action(policy["collector_errors"]["default"], "collector_errors.default")
    for path in _OPTICS_TABLES:  # issue 20: optics, BER, attenuation, congestion, NVLink speed
        node: Any = th
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            _check_sev_action(node, "thresholds." + path)
    for name, rule in th["bmc"]["coolant"].items():
        if rule.get("action") == "emergency_shutdown":
            raise PolicyError(
                "policy key 'thresholds.bmc.coolant.%s.action' cannot be emergency_shutdown: a coolant flow, "
                "pressure or temperature reading is a cooling fault, not a leak (use isolate or monitor)" % name
            )
    for gen, rate in th["pcie"]["replay_per_lane_per_minute"].items():
        if not isinstance(rate, (int, float)) or isinstance(rate, bool):
            raise PolicyError("policy key 'thresholds.pcie.replay_per_lane_per_minute.%s' must be a number" % gen)


def _validate_xid(policy: Dict[str, Any]) -> None:
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


def _validate_sxid(policy: Dict[str, Any]) -> None:
    classes = tuple(_sxid_catalog.CLASSES) + ("unlisted",)
    for key, row in policy["sxid"]["overrides"].items():
        path = "sxid.overrides.%s" % key
        if str(key) not in classes:
            try:
                int(str(key))
            except ValueError:
                raise PolicyError(
                    "policy key '%s' must be an SXid number or a class (%s)" % (path, ", ".join(classes))
                ) from None
        if not isinstance(row, dict):
            raise PolicyError("policy key '%s' must be a mapping" % path)
        for name in row:
            if name not in ("severity", "action", "when_fatal", "note"):
                raise PolicyError("unknown policy key '%s.%s'" % (path, name))
        if not isinstance(row.get("when_fatal", False), bool):
            raise PolicyError("policy key '%s.when_fatal' must be true or false" % path)
        _check_sev_action({k: v for k, v in row.items() if k in ("severity", "action")}, path)


def _validate_escalation(escalation: Dict[str, Any]) -> None:
    for check, codes in escalation.items():
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


def _validate_cluster(policy: Dict[str, Any]) -> None:
    """Clear rules, correlation and cluster shares."""
    for group in ("by_action", "checks", "events_by_action"):
        for key, rule in policy["clear_rules"][group].items():
            if rule not in CLEAR_RULES:
                raise PolicyError(
                    "policy key 'clear_rules.%s.%s' must be one of %s" % (group, key, ", ".join(CLEAR_RULES))
                )
    for key, order in policy["correlation"]["domain_order"].items():
        if not isinstance(order, list) or any(d not in DOMAIN_KINDS for d in order):
            raise PolicyError("policy key 'correlation.domain_order.%s' must list of %s" % (key, DOMAIN_KINDS))
    if not 0 < policy["correlation"]["min_share"] <= 1:
        raise PolicyError("policy key 'correlation.min_share' must be in (0, 1]")
    if not 0 < policy["cluster"]["faulty_share"] <= 1:
        raise PolicyError("policy key 'cluster.faulty_share' must be in (0, 1]")


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


def respond_by(severity: str, now: Any, policy: Dict[str, Any]) -> Optional[str]:
    """``now`` + the response time of ``severity`` (business days skip Saturday and Sunday), ISO UTC; the
    arithmetic is the SLA clocks' (``_sla.due``)."""
    start = parse_time(now)
    text = policy.get("response_times", {}).get(severity)
    if start is None or parse_duration(text) is None:
        return None
    if start.tzinfo is None:
        start = start.replace(tzinfo=datetime.timezone.utc)
    base = start.replace(microsecond=0)
    try:
        cal = _sla.calendar_of(policy.get("sla"))
    except _sla.SlaError:
        cal = None  # validate() refuses a bad calendar; here the UTC working week
    when = datetime.datetime.fromtimestamp(_sla.due(base.timestamp(), str(text).strip(), cal), tz=datetime.timezone.utc)
    return iso_z(when + datetime.timedelta(microseconds=start.microsecond))
