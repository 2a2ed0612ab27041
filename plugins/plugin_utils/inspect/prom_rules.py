# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus alert rules generated from the health policy (docs/alerting.md).

The thresholds (GPU/memory temperature, ECC, row remap, Xid severities, throttle reasons, NVLink CRC/recovery,
InfiniBand counters and link flaps) are read from the merged policy (``_policy.merge_policy``), never typed a
second time; the runbook of each alert comes from the runbook catalogue (``runbooks/catalog.yml``, its
``alerts`` lists) and its link from ``_runbooks.section_link``. The rules are written against the metric names of
dcgm-exporter (``DCGM_FI_DEV_*``), node_exporter's infiniband collector (``node_infiniband_*``), the inspection's
textfile (``gpuops_*``, docs/metrics.md) and the node-side health check (``gpuops_node_health*``).

Every alert carries ``severity`` (P0..P3), ``scope`` (node | cluster), ``domain`` and ``runbook`` (the catalogue
id, "none" when no entry handles it) labels and ``summary``/``runbook_url`` annotations. Scrape configs must give
every target the ``node`` label (the inventory hostname), and the cluster domain labels ``cluster``, ``rack``,
``leaf``, ``power_domain`` that Alertmanager groups by.

Regenerate the committed file (tests/unit/test_prometheus_rules.py fails when it is stale)::

    PYTHONPATH=build python -m ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.prom_rules \\
        --out extensions/prometheus/gpuops-rules.yml [--overrides site-policy.yml]

Controller side; PyYAML; no Ansible imports.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, List, Optional

import yaml

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _runbooks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.xid import xid_row
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import PolicyError, merge_policy, severity_rank

#: Where runbook_url points (galaxy.yml `repository`); a site passes its own with --runbook-base.
RUNBOOK_BASE = "https://github.com/gpuops/cluster/blob/main/"
DEFAULT_OUT = os.path.join(_runbooks.COLLECTION_ROOT, "extensions", "prometheus", "gpuops-rules.yml")
RUNBOOKS_DIR = os.path.join(_runbooks.COLLECTION_ROOT, "runbooks")

#: The operations contract's sampling: temperature, power and throttling every 1 s, ECC and Xid every 5 s.
#: Rule groups evaluate at the sampling interval; a level (temperature, throttle) must hold for 3 samples so one
#: noisy reading does not page; an event (Xid, ECC count) fires on the first evaluation that sees it.
FAST_INTERVAL = "1s"
FAST_FOR = "3s"
EVENT_INTERVAL = "5s"
#: The inspection's textfile is rewritten every 15 minutes (cron/AWX schedule); node-side checks every interval.
TEXTFILE_INTERVAL = "30s"
INSPECTION_STALE_S = 3 * 900
NODE_HEALTH_STALE_S = 900
#: node_exporter job whose `up` says whether the node answers (scrape config in docs/alerting.md).
NODE_JOB = "node"

#: NVML clocks-event reason bits (nvmlClocksEventReason*) of DCGM_FI_DEV_CLOCKS_EVENT_REASONS (formerly
#: DCGM_FI_DEV_CLOCK_THROTTLE_REASONS), by the policy's normalized reason names (docs/facts.md).
THROTTLE_BITS = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}
#: Which alert a fault reason raises (the policy decides whether the reason is a fault and its severity).
THROTTLE_ALERTS = {
    "GpuThermalThrottle": ("hw_thermal_slowdown", "sw_thermal_slowdown"),
    "GpuPowerBrake": ("hw_power_brake_slowdown", "hw_slowdown"),
}
#: dcgm-exporter 3.3+ exports the new field name, older ones the old: either (never both for one GPU).
THROTTLE_METRIC = "(DCGM_FI_DEV_CLOCKS_EVENT_REASONS or DCGM_FI_DEV_CLOCK_THROTTLE_REASONS)"

#: Policy IB counters (thresholds.ib.counters) -> node_exporter infiniband collector counters. The two
#: hw_counters (local_ack_timeout_err, rnr_nak_retry_err) are not exported by node_exporter: no rule.
IB_COUNTERS = {
    "symbol_error": "node_infiniband_symbol_error_total",
    "link_error_recovery": "node_infiniband_link_error_recovery_total",
    "port_rcv_errors": "node_infiniband_port_errors_received_total",
    "local_link_integrity_errors": "node_infiniband_local_link_integrity_errors_total",
    "excessive_buffer_overrun_errors": "node_infiniband_excessive_buffer_overrun_errors_total",
    "port_xmit_discards": "node_infiniband_port_discards_transmitted_total",
}
IB_ACTIVE = 4  # node_infiniband_state_id: 1 down, 2 init, 3 armed, 4 active, 5 act defer


#: The node-side health check's textfile contract (roles/health_check; issue 16): metric -> labels.
NODE_HEALTH_METRICS = {
    "gpuops_node_health": ("node",),  # 0 healthy, 1 advice, 2 degraded (P2), 3 failed (P1/P0), -1 unknown
    "gpuops_node_health_finding": ("node", "check", "severity", "action", "component"),
    "gpuops_node_health_drained": ("node",),
    "gpuops_node_health_run_seconds": ("node",),
    "gpuops_node_health_last_run_timestamp_seconds": ("node",),
    "gpuops_node_health_policy_info": ("node", "policy_version"),
}


class RuleError(ValueError):
    """The rules cannot be generated (bad policy override, an alert the catalogue does not know)."""


def _num(value: Any) -> str:
    """A threshold as PromQL text (ints without a trailing .0)."""
    f = float(value)
    return str(int(f)) if f.is_integer() else repr(f)


def _bit(metric: str, bit: int) -> str:
    """PromQL has no bitwise AND: bit b of x is floor(x / b) % 2."""
    return "floor(%s / %d) %% 2 == 1" % (metric, bit)


def _worst(severities: List[str]) -> str:
    return sorted(severities, key=severity_rank)[0]


def _gpu_rules(p: Dict[str, Any]) -> List[Dict[str, Any]]:
    """dcgm-exporter levels sampled every second: temperature and throttling."""
    t = p["thresholds"]["temperature"]
    rules = [
        _rule(
            "GpuTemperatureHigh",
            "DCGM_FI_DEV_GPU_TEMP >= %s or DCGM_FI_DEV_MEMORY_TEMP >= %s"
            % (_num(t["gpu_fallback_p2_c"]), _num(t["memory_p2_c"])),
            "P2",
            "gpu",
            "gpu_throttling",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} at {{ $value }} C (P2: GPU >= %s C or HBM >= %s C)"
            % (_num(t["gpu_fallback_p2_c"]), _num(t["memory_p2_c"])),
            FAST_FOR,
        ),
        _rule(
            "GpuTemperatureCritical",
            "DCGM_FI_DEV_GPU_TEMP >= %s or DCGM_FI_DEV_MEMORY_TEMP >= %s"
            % (_num(t["gpu_fallback_p1_c"]), _num(t["memory_p1_c"])),
            "P1",
            "gpu",
            "gpu_throttling",
            "GPU {{ $labels.gpu }} on {{ $labels.node }} at {{ $value }} C (P1: GPU >= %s C or HBM >= %s C)"
            % (_num(t["gpu_fallback_p1_c"]), _num(t["memory_p1_c"])),
            FAST_FOR,
        ),
    ]
    reasons = p["thresholds"]["throttle"]["reasons"]
    for name, wanted in THROTTLE_ALERTS.items():
        faults = [r for r in wanted if r in reasons]
        if not faults:  # the site's policy says none of these reasons is a fault
            continue
        expr = " or ".join("(%s)" % _bit(THROTTLE_METRIC, THROTTLE_BITS[r]) for r in faults)
        rules.append(
            _rule(
                name,
                expr,
                _worst([reasons[r]["severity"] for r in faults]),
                "gpu",
                "gpu_throttling",
                "GPU {{ $labels.gpu }} on {{ $labels.node }} clocks held down (%s)" % ", ".join(faults),
                FAST_FOR,
            )
        )
    return rules


def _xid_rule(p: Dict[str, Any], name: str, code: int, runbook: str) -> Dict[str, Any]:
    row, unused_notes = xid_row(p, code)
    return _rule(
        name,
        "DCGM_FI_DEV_XID_ERRORS == %d" % code,
        row["severity"],
        "gpu",
        runbook,
        "Xid %d (%s) on GPU {{ $labels.gpu }} of {{ $labels.node }}: %s" % (code, row["name"], row["action"]),
    )


def _event_rules(p: Dict[str, Any]) -> List[Dict[str, Any]]:
    """dcgm-exporter events sampled every 5 s: Xid, ECC, row remap, NVLink errors."""
    ecc = p["thresholds"]["ecc"]
    nvl = p["thresholds"]["nvlink"]
    win = "%ds" % int(nvl["min_interval_s"])
    return [
        _xid_rule(p, "GpuXid79", 79, "gpu_fell_off_bus"),
        _xid_rule(p, "GpuXid48", 48, "gpu_uncorrectable_ecc"),
        _rule(
            "GpuUncorrectableEcc",
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL >= %s" % _num(ecc["volatile_uncorrected"]),
            "P1",
            "gpu",
            "gpu_uncorrectable_ecc",
            "{{ $value }} uncorrectable (DBE) ECC errors since driver load on GPU {{ $labels.gpu }} of {{ $labels.node }}",
        ),
        _rule(
            "GpuCorrectableEccHigh",
            "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL >= %s" % _num(ecc["volatile_corrected"]),
            "P2",
            "gpu",
            "gpu_uncorrectable_ecc",
            "{{ $value }} correctable (SBE) ECC errors since driver load on GPU {{ $labels.gpu }} of {{ $labels.node }}",
        ),
        _rule(
            "GpuRowRemapFailure",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE >= 1 or DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS >= %s"
            % _num(p["thresholds"]["remap"]["rma_uncorrectable_rows"]),
            "P1",
            "gpu",
            "gpu_row_remap_failure",
            "Row remapping failed or RMA limit reached on GPU {{ $labels.gpu }} of {{ $labels.node }}: replace",
        ),
        _rule(
            "GpuRowRemapPending",
            "DCGM_FI_DEV_ROW_REMAP_PENDING >= 1",
            "P2",
            "gpu",
            "gpu_row_remap_pending",
            "Row remap pending on GPU {{ $labels.gpu }} of {{ $labels.node }}: reset the GPU when idle",
        ),
        _rule(
            "GpuNvlinkDown",
            "rate(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL[%s]) >= %s"
            " or increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL[%s]) >= %s"
            % (win, _num(nvl["crc_per_second"]), win, _num(nvl["recovery_delta"])),
            "P2",
            "gpu",
            "nvlink_down",
            "NVLink CRC errors >= %s/s or link recoveries on GPU {{ $labels.gpu }} of {{ $labels.node }}"
            % _num(nvl["crc_per_second"]),
        ),
    ]


def _ib_rules(p: Dict[str, Any]) -> List[Dict[str, Any]]:
    """node_exporter's infiniband collector: port state, link flaps, error counters (rates per hour)."""
    ib = p["thresholds"]["ib"]
    parts = []
    for key, metric in IB_COUNTERS.items():
        c = ib["counters"].get(key)
        if c is None:
            continue
        per_hour, delta = float(c["per_hour"]), float(c["min_delta"])
        cond = "> %s" % _num(per_hour) if per_hour >= delta else ">= %s" % _num(delta)
        parts.append('label_replace(increase(%s[1h]) %s, "counter", "%s", "", "")' % (metric, cond, key))
    return [
        _rule(
            "IbPortDown",
            "node_infiniband_state_id != %d" % IB_ACTIVE,
            "P1",
            "ib",
            "ib_port",
            "InfiniBand port {{ $labels.device }}/{{ $labels.port }} of {{ $labels.node }} not ACTIVE (state {{ $value }})",
            "1m",
        ),
        _rule(
            "IbLinkFlapping",
            "increase(node_infiniband_link_downed_total[1h]) >= %s" % _num(ib["link_flap"]["p1_downs"]),
            "P1",
            "ib",
            "ib_port",
            "InfiniBand port {{ $labels.device }}/{{ $labels.port }} of {{ $labels.node }} went down {{ $value }} times in 1 h",
        ),
        _rule(
            "IbPortErrors",
            " or ".join(parts),
            "P2",
            "ib",
            "ib_port",
            "InfiniBand {{ $labels.counter }} on {{ $labels.device }}/{{ $labels.port }} of {{ $labels.node }}: {{ $value }} in 1 h",
        ),
    ]


def _collection_rules() -> List[Dict[str, Any]]:
    """The inspection's textfile (gpuops_finding, ...): severities are the findings' own (policy) labels."""
    live = 'severity=~"P0|P1|P2"'
    return [
        _rule(
            "GpuopsXid79",
            'gpuops_finding{check="gpu.xid",code="79",%s} == 1' % live,
            None,
            "gpu",
            "gpu_fell_off_bus",
            "Inspection: Xid 79 on {{ $labels.component }} of {{ $labels.node }}",
        ),
        _rule(
            "GpuopsCoolantLeak",
            'gpuops_finding{check="bmc.leak",%s} == 1' % live,
            None,
            "bmc",
            "coolant_leak",
            "Inspection: coolant leak detector {{ $labels.component }} of {{ $labels.node }}",
        ),
        _rule(
            "GpuNodeDown",
            'gpuops_node_status{status="unreachable"} == 1'
            ' or gpuops_finding{check="scheduler.node_state",code="DOWN"} == 1'
            ' or up{job="%s"} == 0' % NODE_JOB,
            "P1",
            "node",
            "node_unreachable",
            "{{ $labels.node }} unreachable or DOWN in Slurm",
            "2m",
        ),
        _rule(
            "BmcPsuFailure",
            'gpuops_finding{check=~"bmc.sensor|bmc.sel|bmc.health",%s,component=~"(?i).*(psu|ps[0-9]|power.?supply).*"} == 1'
            % live,
            None,
            "bmc",
            "psu_fan_failure",
            "Inspection: PSU {{ $labels.component }} of {{ $labels.node }} failed",
        ),
        _rule(
            "BmcFanFailure",
            'gpuops_finding{check=~"bmc.sensor|bmc.sel|bmc.health",%s,component=~"(?i).*fan.*"} == 1' % live,
            None,
            "bmc",
            "psu_fan_failure",
            "Inspection: fan {{ $labels.component }} of {{ $labels.node }} failed",
        ),
        _rule(
            "FabricManagerDown",
            'gpuops_finding{check=~"node.fabric_manager|gpu.fabric",%s} == 1' % live,
            None,
            "gpu",
            "fabric_manager",
            "Inspection: fabric manager / NVLink fabric on {{ $labels.node }}",
        ),
        _rule(
            "GpuopsStorageMount",
            'gpuops_finding{check="node.mounts",%s} == 1' % live,
            None,
            "storage",
            None,
            "Inspection: mount {{ $labels.component }} on {{ $labels.node }} is {{ $labels.code }}",
        ),
        _rule(
            "GpuopsSchedulerNodeState",
            'gpuops_finding{check="scheduler.node_state",code!="DOWN",%s} == 1' % live,
            None,
            "scheduler",
            None,
            "Inspection: {{ $labels.node }} is {{ $labels.code }} in Slurm",
        ),
        _rule(
            "GpuopsClusterP0",
            'gpuops_findings{severity="P0"} > 0',
            "P0",
            "cluster",
            None,
            "{{ $value }} cluster-level P0 finding(s): a rack, leaf, power domain or the fabric is down",
        ),
        _rule(
            "GpuopsInspectionStale",
            "time() - gpuops_inspection_timestamp_seconds > %d" % INSPECTION_STALE_S,
            "P3",
            "cluster",
            None,
            "The last inspection is {{ $value | humanizeDuration }} old",
        ),
        _rule(  # the service ledger's open incidents (docs/service.md); severity: the incident's own
            "GpuopsIncidentSlaBreached",
            'gpuops_incident_sla_breached{severity=~"P0|P1|P2|P3"} == 1',
            None,
            "cluster",
            None,
            "Incident {{ $labels.incident }} ({{ $labels.severity }}): the {{ $labels.clock }} SLA clock is breached",
        ),
    ]


def _node_health_rules() -> List[Dict[str, Any]]:
    """The node-side health check's textfile (gpuops_node_health*, written by roles/health_check)."""
    return [
        _rule(
            "GpuopsNodeHealthFailed",
            'gpuops_node_health_finding{severity=~"P0|P1"} == 1 and on(node) gpuops_node_health == 3',
            None,
            "health",
            None,
            "Node-side check: {{ $labels.check }} {{ $labels.component }} on {{ $labels.node }} ({{ $labels.action }})",
        ),
        _rule(
            "GpuopsNodeHealthDegraded",
            "gpuops_node_health == 2",
            "P2",
            "health",
            None,
            "Node-side check: {{ $labels.node }} degraded (P2 findings)",
        ),
        _rule(
            "GpuopsNodeHealthUnknown",
            "gpuops_node_health == -1 or time() - gpuops_node_health_last_run_timestamp_seconds > %d"
            % NODE_HEALTH_STALE_S,
            "P3",
            "health",
            None,
            "Node-side check on {{ $labels.node }} has no verdict (unknown or not run for 15 min)",
            "5m",
        ),
    ]


def _rule(
    name: str,
    expr: str,
    severity: Optional[str],
    domain: str,
    runbook: Optional[str],
    summary: str,
    for_: str = "0s",
) -> Dict[str, Any]:
    """One alert; `runbook` is the catalogue entry whose runbook page the link opens (None: README)."""
    labels = {"scope": "cluster" if domain == "cluster" else "node", "domain": domain}
    if severity is not None:  # None: the series' own severity label (a finding's, from the policy) is kept
        labels["severity"] = severity
    rule = {"alert": name, "expr": expr}
    if for_ != "0s":
        rule["for"] = for_
    rule["labels"] = labels
    rule["annotations"] = {"summary": summary, "__runbook": runbook}
    return rule


def _finish(rule: Dict[str, Any], catalog: Dict[str, Any], base: str) -> Dict[str, Any]:
    """runbook label (the catalogue entry that handles the alert) and runbook_url (the page to read)."""
    page = rule["annotations"].pop("__runbook")
    handler = _runbooks.by_alert(catalog, rule["alert"])
    if rule["labels"]["scope"] == "node" and handler is None:
        raise RuleError("alert %s is in no entry's `alerts` of the runbook catalogue" % rule["alert"])
    rule["labels"]["runbook"] = handler["id"] if handler else "none"
    entry = _runbooks.by_id(catalog, page) if page else None
    if page and entry is None:
        raise RuleError("alert %s names runbook %s, which the catalogue does not have" % (rule["alert"], page))
    link = (
        _runbooks.section_link(RUNBOOKS_DIR, entry["runbook"], _runbooks.RUN_SECTION)
        if entry
        else _runbooks.section_link(RUNBOOKS_DIR, *_runbooks.FALLBACK_SECTION)
    )
    rule["annotations"]["runbook_url"] = base + link
    return rule


def build(policy: Dict[str, Any], catalog: Dict[str, Any], base: str = RUNBOOK_BASE) -> Dict[str, Any]:
    """The rule file as data: four groups at the contract's sampling intervals."""
    groups = [
        ("gpuops-gpu-fast", FAST_INTERVAL, _gpu_rules(policy)),
        ("gpuops-gpu-events", EVENT_INTERVAL, _event_rules(policy)),
        ("gpuops-infiniband", "30s", _ib_rules(policy)),
        ("gpuops-collection", TEXTFILE_INTERVAL, _collection_rules() + _node_health_rules()),
    ]
    return {
        "groups": [
            {"name": n, "interval": i, "rules": [_finish(r, catalog, base) for r in rules]} for n, i, rules in groups
        ]
    }


HEADER = """\
# GENERATED by plugins/plugin_utils/inspect/prom_rules.py from the health policy (version %s) and
# runbooks/catalog.yml. Do not edit: change the policy (gpuops_policy_overrides) and regenerate:
#   PYTHONPATH=build python -m ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.prom_rules --out %s
# Alerts, runbooks and tests: docs/alerting.md.
"""


def render(policy: Dict[str, Any], catalog: Dict[str, Any], base: str = RUNBOOK_BASE) -> str:
    body = yaml.safe_dump(build(policy, catalog, base), sort_keys=False, width=200, default_flow_style=False)
    return HEADER % (policy.get("version"), "extensions/prometheus/gpuops-rules.yml") + body


def alert_names(rules: Dict[str, Any]) -> List[str]:
    return [r["alert"] for g in rules["groups"] for r in g["rules"]]


def _load_overrides(path: Optional[str]) -> Dict[str, Any]:
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except (OSError, yaml.YAMLError) as exc:
        raise RuleError("cannot read the policy overrides %s: %s" % (path, exc))
    if isinstance(data, dict) and "gpuops_policy_overrides" in data:
        data = data["gpuops_policy_overrides"]
    if not isinstance(data, dict):
        raise RuleError("%s: the policy overrides must be a mapping" % path)
    return data


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Write the Prometheus alert rules from the health policy.")
    ap.add_argument("--out", default=DEFAULT_OUT, help="rule file to write ('-': stdout)")
    ap.add_argument("--overrides", help="YAML file with the site's gpuops_policy_overrides")
    ap.add_argument("--catalog", default=_runbooks.DEFAULT_CATALOG)
    ap.add_argument("--runbook-base", default=RUNBOOK_BASE, help="URL prefix of runbook_url")
    ap.add_argument("--check", action="store_true", help="exit 1 when --out differs from what would be written")
    args = ap.parse_args(argv)
    try:
        text = render(
            merge_policy(None, _load_overrides(args.overrides)), _runbooks.load(args.catalog), args.runbook_base
        )
    except (RuleError, PolicyError, _runbooks.CatalogError) as exc:
        sys.stderr.write("gpuops rules: %s\n" % exc)
        return 2
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    if args.check:
        try:
            with open(args.out, encoding="utf-8") as fh:
                same = fh.read() == text
        except OSError:
            same = False
        if not same:
            sys.stderr.write("gpuops rules: %s is stale: regenerate it (docs/alerting.md)\n" % args.out)
        return 0 if same else 1
    with open(args.out, "w", encoding="utf-8") as fh:  # a repository file, world-readable like the rest of it
        fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
