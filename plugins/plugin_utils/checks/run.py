# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The entry point: ``evaluate_node`` runs every check of the registry over one node's facts."""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time, utcnow
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import (
    backup,
    bmc,
    drift,
    faults,
    fleet,
    gpu,
    gpu_ecc,
    gpu_links,
    ib,
    node,
    optics,
    partial,
    scheduler,
    xid,
    xid_chains,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.catalogue import CHECK_DOMAINS, FACT_DOMAINS
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    RateWindow,
    as_dict,
    as_list,
    boot_id_of,
    boot_time_of,
    collected_epoch,
    gpu_list,
    rate_base,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.domains import (
    check_collector_errors,
    domain_states,
    finding_domain,
    gate_unknown,
    unknown_domains,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import (
    DEFAULT_POLICY,
    profile_for,
    respond_by,
    severity_rank,
    validate_profile,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.state import copy_state, normalize_host_state


def evaluate_node(  # noqa: PLR0913 - the evaluation's inputs, each documented below
    facts: Optional[Dict[str, Any]],
    profile: Any,
    policy: Optional[Dict[str, Any]],
    state: Optional[Dict[str, Any]],
    now: Any,
    host: str,
    fleet_baseline: Optional[Dict[str, Any]] = None,
    own_state: bool = False,
) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """Evaluate one node's facts against the policy.

    Args:
      facts: the aggregate facts of docs/facts.md. ``None``, or a dict with ``unreachable: true``
        (optionally ``unreachable_reason``), means the node could not be reached: one ``node.unreachable``
        finding, and the remembered faults stay active.
      profile: the node's hardware profile (dict, see _policy.PROFILE_KEYS), a profile name from
        ``policy["profiles"]``, or None (checks that need expectations are skipped: no "missing" alarms
        on unknown hardware).
      policy: the merged policy (``_policy.merge_policy``); None means the defaults.
      state: the host's state (the store's document: ``state_store.DbStateStore.load_host``; on the node the
        health check's own state file) or ``{"hosts": {host: ...}}``; None = empty.
        Not modified.
      now: the evaluation time (ISO string, epoch or datetime): kernel-event windows, rates, respond_by.
      host: the inventory hostname (the finding ids start with it).
      fleet_baseline: for a node without a profile, the baseline of its class inferred from its peers
        (``_fleet.infer_baselines``): the node is compared with the majority of the class.
      own_state: the caller hands ``state`` over (decoded for this call only, e.g. the state an earlier
        capture left): it is changed in place instead of copied first (~10 % of a node's evaluation).

    Returns:
      ``(findings, new_host_state)``: findings per docs/findings.md sorted by severity then id, and the
      host state to save (``state_store.DbStateStore.save_hosts``): counter readings, boot id, escalation
      history, active faults.
    """
    policy = policy if policy is not None else DEFAULT_POLICY
    if isinstance(profile, str):
        profile = profile_for(policy, profile)
    validate_profile(profile)
    now_dt = parse_time(now) or utcnow()
    raw_state = state or {}
    if isinstance(raw_state.get("hosts"), dict):
        raw_state = raw_state["hosts"].get(host) or {}
    hs = normalize_host_state(raw_state if own_state else copy_state(raw_state), host)
    ctx = Ctx(host, policy, now_dt)
    reachable = isinstance(facts, dict) and not facts.get("unreachable")
    states = domain_states(facts, profile, policy)
    # nothing read at all (a capture directory that does not exist, a collection that failed): no fault clears
    nothing_read = len(unknown_domains(states)) == len(FACT_DOMAINS)
    if not reachable:
        reason = None
        if isinstance(facts, dict):
            reason = facts.get("unreachable_reason") or facts.get("unreachable_message")
        ctx.add(
            "node.unreachable",
            "P1",
            "node",
            None,
            "node unreachable%s" % (": %s" % reason if reason else ""),
            "isolate",
            "node.unreachable: no facts from the node (node down)",
            evidence={"reason": reason},
        )
        facts = {}
    else:
        run_checks(ctx, facts, profile, hs, states, fleet_baseline)
    boot_id = boot_id_of(facts) if reachable else None
    faults.escalate(ctx, hs)
    faults.apply_active_faults(ctx, hs, boot_id, facts, reachable and not nothing_read)
    if reachable:
        gate_unknown(ctx, states)
    if reachable and boot_id and boot_id != hs.get("boot_id"):
        hs["boot_id"] = boot_id
        hs["boot_seen_at"] = iso_z(now_dt)
    active = as_dict(hs.get("active_faults"))
    findings = []
    for fid, f in ctx.findings.items():
        first = as_dict(active.get(fid)).get("first_seen") or as_dict(f.get("evidence")).get("active_since")
        f["respond_by"] = respond_by(f["severity"], first or now_dt, policy)
        findings.append(f)
    findings.sort(key=lambda f: (severity_rank(f["severity"]), f["id"]))
    return findings, hs


def _link_quality_checks(guarded, ctx: Ctx, facts: Dict[str, Any], gpus: List[Dict[str, Any]], hs: Dict[str, Any]):
    """Optics and link quality (issue 20): NVLink speed (gpu domain); ib.optics, ib.ber, ib.congestion (ib)."""
    guarded("gpu.nvlink", gpu_links.check_nvlink_speed, ctx, gpus)
    guarded("ib.optics", optics.check_optics, ctx, facts, hs)


def run_checks(
    ctx: Ctx,
    facts: Dict[str, Any],
    profile: Optional[Dict[str, Any]],
    hs: Dict[str, Any],
    states: Optional[Dict[str, Dict[str, Any]]] = None,
    fleet_baseline: Optional[Dict[str, Any]] = None,
) -> None:
    # a check whose domain could not be read does not fire: "I could not see" is not "it is broken"
    skip = set(unknown_domains(states if states is not None else domain_states(facts, profile, ctx.policy)))
    # the evidence time (docs/capture.md): lookback windows count back from it, respond_by from ``now``
    ctx.ref = parse_time(facts.get("evidence_time") or facts.get("collected_at")) or ctx.now
    boot_id = boot_id_of(facts)
    boot_time = boot_time_of(facts, ctx.host)
    counts, _floor = xid.event_filter(ctx, facts, hs, boot_time)
    gpus = gpu_list(facts)
    prev_gpus = as_dict(as_dict(hs.get("gpu")).get("gpus"))
    new_gpus: Dict[str, Any] = dict(prev_gpus)
    new_ports: Dict[str, Any] = dict(as_dict(as_dict(hs.get("ib")).get("ports")))
    t_gpu = collected_epoch(facts, as_dict(facts.get("gpu")))

    def guarded(name: str, fn, *args) -> None:
        if CHECK_DOMAINS.get(name, name if name in FACT_DOMAINS else None) in skip:
            return
        try:
            fn(*args)
        except Exception as exc:  # a policy bug must not hide the other checks: report it
            ctx.add(
                "collector.error",
                "P2",
                "collector:policy",
                "internal",
                "check %s failed: %s: %s" % (name, type(exc).__name__, exc),
                "monitor",
                "internal error in the health policy",
                evidence={"check": name},
            )

    guarded("gpu.missing", gpu.check_gpu_inventory, ctx, facts, profile)
    xids = xid.xids_by_bus(
        ctx,
        [
            e
            for e in as_list(as_dict(facts.get("kernel")).get("events"))
            if isinstance(e, dict) and counts(e, normalize_bus_id(e.get("bus_id")))
        ],
    )
    for g in gpus:
        if g.get("readable") is False:
            continue
        bus = normalize_bus_id(g.get("bus_id"))
        prev = as_dict(prev_gpus.get(bus)) if bus else {}
        interval = rate_base(prev, boot_id, t_gpu)
        if prev and interval is not None and interval < ctx.policy["thresholds"]["pcie"]["min_interval_s"]:
            cur = copy.deepcopy(prev)  # too soon for a rate: keep the older reading
            scratch: Dict[str, Any] = {}
        else:
            cur = {"serial": g.get("serial"), "collected_at": t_gpu, "boot_id": boot_id}
            scratch = cur
        guarded("gpu.ecc", gpu_ecc.check_ecc, ctx, g, xids.get(bus, set()), hs)
        guarded("gpu.row_remap", gpu.check_row_remap, ctx, g, xids.get(bus, set()))
        guarded("gpu.retired_pages", gpu.check_retired_pages, ctx, g)
        guarded("gpu.recovery_action", gpu.check_recovery_action, ctx, g)
        guarded("gpu.temperature", gpu.check_temperature, ctx, g)
        window = RateWindow(prev, scratch, interval)
        guarded("gpu.pcie", gpu_links.check_pcie, ctx, g, profile, window)
        guarded("gpu.nvlink", gpu_links.check_nvlink, ctx, g, profile, window)
        guarded("gpu.fabric", gpu_links.check_fabric, ctx, g)
        guarded("gpu.nvlink", gpu_links.check_c2c, ctx, g, window)
        guarded("gpu.throttle", gpu.check_throttle_counters, ctx, g, window)
        if bus:
            new_gpus[bus] = cur
    guarded("gpu.throttle", gpu.check_throttle, ctx, gpus)
    guarded("gpu.fabric", gpu_links.check_imex, ctx, facts)
    guarded("gpu.driver", gpu.check_driver, ctx, facts, profile)
    guarded("gpu.diag", gpu.check_diag, ctx, facts)
    _kernel_event_checks(guarded, ctx, facts, hs, counts)
    guarded("ib.port_state", ib.check_ib_ports, ctx, facts, profile)
    _peer_checks(guarded, ctx, facts, profile, fleet_baseline)
    guarded("ib.errors", ib.check_ib_counters, ctx, facts, hs, new_ports, boot_id)
    _link_quality_checks(guarded, ctx, facts, gpus, hs)
    guarded("bmc", bmc.check_bmc, ctx, facts)
    guarded("scheduler.node_state", scheduler.check_scheduler, ctx, facts)
    guarded("node", node.check_node, ctx, facts, profile)
    guarded("backup", backup.check_backup, ctx, facts)
    guarded("collector.error", check_collector_errors, ctx, facts)
    guarded("drift", drift.check_drift, ctx, facts, hs.get("baseline") or facts.get("baseline"))
    _drop_unread(ctx, skip)
    hs["gpu"] = {"gpus": new_gpus}
    hs["ib"] = {"ports": new_ports}


def _peer_checks(guarded, ctx: Ctx, facts: Dict[str, Any], profile, fleet_baseline) -> None:
    """Zero-config baselines: peers within the node (ports of one adapter model, sibling GPUs), an NVLink board
    whose links are all inactive, and (no profile) the majority of the node's class."""
    guarded("ib.port_state", fleet.check_port_peers, ctx, facts, profile)
    guarded("gpu.nvlink", fleet.check_gpu_peers, ctx, facts, profile)
    guarded("gpu.nvlink", partial.check_nvlink_inactive, ctx, facts, profile)
    if not profile:
        guarded("drift", fleet.check_fleet, ctx, facts, fleet_baseline)


def _kernel_event_checks(guarded, ctx: Ctx, facts: Dict[str, Any], hs: Dict[str, Any], counts) -> None:
    """The Xid checks (with the root causes only dependent lines name) and the NVSwitch SXid check."""
    guarded("gpu.xid", xid.check_xid, ctx, facts, hs, counts)
    guarded("gpu.xid", xid_chains.check_root_causes, ctx, facts, counts)
    guarded("nvswitch.sxid", xid.check_sxid, ctx, facts, counts)
    guarded("node.pcie_aer", node.check_pcie_aer, ctx, facts, counts)


def _drop_unread(ctx: Ctx, skip: set) -> None:
    """Drop the findings of a domain that could not be read (a multi-domain check, drift, that read an unknown
    domain as empty); collector errors stay."""
    for fid in [k for k, f in ctx.findings.items() if f["check"] != "collector.error" and finding_domain(f) in skip]:
        del ctx.findings[fid]
        ctx.meta.pop(fid, None)
