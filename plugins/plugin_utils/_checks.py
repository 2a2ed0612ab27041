# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-node health checks: normalized facts (docs/facts.md) -> findings (docs/findings.md).

Entry point: ``evaluate_node(facts, profile, policy, state, now, host) -> (findings, new_host_state)``.
Every threshold, severity, action, escalation and clear rule comes from the policy (``_policy.py``);
``CHECKS`` lists every check id with what it reads (docs/checks.md is written from it).

Pure Python, no Ansible imports; runs on the controller.
"""

from __future__ import annotations

import copy
import datetime
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import (
    ACTIONS as _ACTIONS,
    DEFAULT_POLICY,
    SEVERITIES,
    iso,
    parse_time,
    profile_for,
    respond_by,
    validate_profile,
    withhold_disruptive,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils._state import normalize_host_state
from ansible_collections.gpuops.cluster.plugins.module_utils import _xid_catalog

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
    "collector.error": "facts errors (every collector error record)",
    "nvswitch.sxid": "kernel.events (kind sxid)",
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
    "collector.error": None,
    "nvswitch.sxid": "kernel",
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

_NVSWITCH_DEV = re.compile(r"nvidia-nvswitch(\d+)")
_USER_PROC_UNKNOWN = ("<unknown>", "unknown", "", None)


def _s(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def _dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


class _Ctx:
    """Collects findings for one node, with side data (bus id, serial, time) for the state."""

    def __init__(self, host: str, policy: Dict[str, Any], now: datetime.datetime) -> None:
        self.host = host
        self.policy = policy
        self.now = now
        # the time the facts describe (collected_at; a capture analysed later): kernel-event/SEL windows and
        # escalation windows are relative to it. respond_by and first_seen use ``now``.
        self.ref = now
        self.findings: Dict[str, Dict[str, Any]] = {}
        self.meta: Dict[str, Dict[str, Any]] = {}

    def add(
        self,
        check: str,
        severity: str,
        component: str,
        code: Any,
        message: str,
        action: str,
        rule: str,
        evidence: Optional[Dict[str, Any]] = None,
        bus_id: Optional[str] = None,
        serial: Optional[str] = None,
        raised_at: Optional[datetime.datetime] = None,
    ) -> Dict[str, Any]:
        code_s = _s(code)
        fid = "%s:%s:%s:%s" % (self.host, check, component, code_s if code_s is not None else "")
        finding = {
            "check": check,
            "severity": severity,
            "component": component,
            "code": code_s,
            "message": message,
            "action": action,
            "rule": rule,
            "respond_by": None,
            "evidence": evidence or {},
            "host": self.host,
            "cause": None,
            "id": fid,
        }
        old = self.findings.get(fid)
        if old is not None and SEVERITIES.index(old["severity"]) <= SEVERITIES.index(severity):
            return old
        self.findings[fid] = finding
        self.meta[fid] = {"bus_id": bus_id, "serial": serial, "raised_at": raised_at}
        return finding


# ------------------------------------------------------------------------------------------- helpers


def _gpu_comp(gpu: Dict[str, Any]) -> str:
    idx = gpu.get("index")
    if isinstance(idx, int) and not isinstance(idx, bool):
        return "gpu%d" % idx
    bus = normalize_bus_id(gpu.get("bus_id"))
    return "gpu:%s" % bus if bus else "gpu"


def _gpu_label(gpu: Dict[str, Any]) -> str:
    idx = gpu.get("index")
    return "GPU %s (%s)" % ("?" if idx is None else idx, gpu.get("bus_id") or "bus id unknown")


def _gpus(facts: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [g for g in _list(_dict(facts.get("gpu")).get("gpus")) if isinstance(g, dict)]


def _gpu_by_bus(facts: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    out = {}
    for g in _gpus(facts):
        bus = normalize_bus_id(g.get("bus_id"))
        if bus:
            out[bus] = g
    return out


def _boot_id(facts: Dict[str, Any]) -> Optional[str]:
    for dom in ("node", "kernel", "ib"):
        b = _dict(facts.get(dom)).get("boot_id")
        if b:
            return str(b)
    return None


def _boot_time(facts: Dict[str, Any], host: str) -> Optional[datetime.datetime]:
    """Optional: node.boot_time / kernel.boot_time (not in facts v1), else Slurm's BootTime of this node."""
    for dom in ("node", "kernel"):
        t = parse_time(_dict(facts.get(dom)).get("boot_time"))
        if t:
            return t
    n = _slurm_node(facts, host)
    if n:
        return parse_time(n.get("boot_time"))
    return None


def _collected_epoch(facts: Dict[str, Any], domain: Optional[Dict[str, Any]] = None) -> Optional[float]:
    if domain is not None:
        v = domain.get("collected_at")
        t = parse_time(v)
        if t:
            return t.timestamp()
    t = parse_time(facts.get("collected_at"))
    return t.timestamp() if t else None


def _slurm_node(facts: Dict[str, Any], host: str) -> Optional[Dict[str, Any]]:
    names = {host, _s(facts.get("hostname")), _s(_dict(facts.get("node")).get("hostname"))}
    names |= {n.split(".")[0] for n in list(names) if n}
    for n in _list(_dict(facts.get("slurm")).get("nodes")):
        if isinstance(n, dict) and _s(n.get("name")) in names:
            return n
    return None


def _sev_action(table: Dict[str, Any], key: Any) -> Optional[Tuple[str, str]]:
    if not isinstance(key, (str, int)) or isinstance(key, bool):
        return None
    row = table.get(key) if isinstance(table, dict) else None
    if not isinstance(row, dict):
        return None
    return row.get("severity", "P2"), row.get("action", "monitor")


# ------------------------------------------------------------------------------------------ domain states


def _err_text(e: Dict[str, Any]) -> str:
    text = "%s: %s" % (e.get("kind") or "error", e.get("message") or "no detail")
    if e.get("source"):
        text += " (%s)" % e.get("source")
    return text[:300]


def needed_domains(profile: Any, policy: Optional[Dict[str, Any]] = None) -> List[str]:
    """Fact domains that must be read for this node: the policy's required ones and those the profile sets."""
    policy = policy if policy is not None else DEFAULT_POLICY
    needs = {str(d) for d in _list(_dict(policy.get("collector_errors")).get("required_domains"))}
    for key, dom in PROFILE_DOMAINS.items():
        value = _dict(profile).get(key)
        if value is not None and value is not False and value != "" and value != []:
            needs.add(dom)
    return sorted(needs)


def domain_states(
    facts: Any, profile: Any = None, policy: Optional[Dict[str, Any]] = None
) -> Dict[str, Dict[str, Any]]:
    """What was read of each fact domain: ``{domain: {"state", "needed", "reason"}}`` (docs/findings.md).

    ``state``: ``ok`` (read, no collector error), ``partial`` (read, with collector errors: what was read is
    evidence, checks that need the whole list -- GPU count, IB port presence -- skip) or ``unknown`` (nothing
    was read: the collector failed, the capture has none of the domain's files, the domain was not collected,
    or the whole collection failed, e.g. a capture directory that does not exist). A live collector that ran
    cleanly and found nothing (no IB stack on the node) read the domain completely: ``ok``, empty.
    ``needed``: the policy requires the domain (``collector_errors.required_domains``) or the profile sets
    expectations on it (``PROFILE_DOMAINS``); a needed domain that is unknown makes the node ``error``.
    ``reason``: why a domain is not ``ok`` (the first collector error, or "not captured"/"not collected").
    """
    needs = set(needed_domains(profile, policy))
    f = facts if isinstance(facts, dict) else {}
    top = [e for e in _list(f.get("errors")) if isinstance(e, dict)]
    whole = [e for e in top if e.get("domain") not in FACT_DOMAINS]
    unreachable = not isinstance(facts, dict) or bool(f.get("unreachable"))
    out: Dict[str, Dict[str, Any]] = {}
    for dom in FACT_DOMAINS:
        d = f.get(dom)
        own = [e for e in _list(_dict(d).get("errors")) if isinstance(e, dict)]
        if not own:  # collect_all copies every domain error to the top level; hand-made facts may have only those
            own = [e for e in top if e.get("domain") == dom]
        if unreachable:
            state, reason = "unknown", "node unreachable"
        elif not isinstance(d, dict):
            state = "unknown"
            reason = _err_text(whole[0]) if whole else "not collected"
        elif not d.get("source") and (own or f.get("mode") == "capture"):
            state = "unknown"
            if own:
                reason = _err_text(own[0])
            elif whole:
                reason = _err_text(whole[0])
            else:
                reason = "not captured (none of the domain's files in the capture)"
        elif own:
            state, reason = "partial", _err_text(own[0])
        else:
            state, reason = "ok", None
        out[dom] = {"state": state, "needed": dom in needs, "reason": reason}
    return out


def unknown_domains(states: Dict[str, Dict[str, Any]]) -> List[str]:
    return [d for d in FACT_DOMAINS if _dict(states.get(d)).get("state") == "unknown"]


def finding_domain(finding: Dict[str, Any]) -> Optional[str]:
    """The fact domain a finding's evidence comes from (None: the node as a whole)."""
    check = finding.get("check")
    if check == "collector.error":
        comp = str(finding.get("component") or "")
        dom = comp.split(":", 1)[1] if comp.startswith("collector:") else None
        return dom if dom in FACT_DOMAINS else None
    return CHECK_DOMAINS.get(str(check))


def _gate_unknown(ctx: _Ctx, states: Dict[str, Dict[str, Any]]) -> None:
    """No disruptive action from a domain that could not be read, nor from a node of which nothing was read."""
    unknown = set(unknown_domains(states))
    nothing_read = len(unknown) == len(FACT_DOMAINS)
    for f in ctx.findings.values():
        if f.get("check") == "node.unreachable":
            continue  # a node that does not answer is an observation (docs/isolation.md), not missing evidence
        dom = finding_domain(f)
        if dom in unknown:
            why = "%s data unknown: %s" % (dom, states[dom].get("reason"))
        elif nothing_read:
            why = "nothing could be read from this node: %s" % (states["gpu"].get("reason"))
        else:
            continue
        withhold_disruptive(f, why)


# ------------------------------------------------------------------------------------------ GPU checks


def _check_gpu_inventory(ctx: _Ctx, facts: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> None:
    gpu = _dict(facts.get("gpu"))
    gpus = _gpus(facts)
    for g in gpus:
        if g.get("readable") is False:
            ctx.add(
                "gpu.missing",
                "P1",
                _gpu_comp(g),
                "unreadable",
                "%s: the driver cannot read this GPU (%s)" % (_gpu_label(g), g.get("error") or "no detail"),
                "reboot",
                "gpu.missing: GPU unreadable ('GPU is lost. Reboot the system to recover this GPU')",
                {"bus_id": g.get("bus_id"), "error": g.get("error")},
                bus_id=normalize_bus_id(g.get("bus_id")),
                serial=_s(g.get("serial")),
            )
    if not profile:
        return
    expected = profile.get("gpu_count")
    # the count is only meaningful when the tool listed every GPU: skip it when the GPU collector failed
    # (a lost GPU can make nvidia-smi stop listing: the gpu.missing/collector.error findings say so)
    incomplete = any(isinstance(e, dict) and e.get("kind") != "unreadable" for e in _list(gpu.get("errors")))
    # nvidia-smi stops listing at a GPU it cannot read: the unreadable GPU's own finding covers the node
    incomplete = incomplete or any(g.get("readable") is False for g in gpus)
    if isinstance(expected, int) and not incomplete:
        count = gpu.get("count")
        if not isinstance(count, int) or isinstance(count, bool):
            count = len(gpus)
        if count < expected:
            ctx.add(
                "gpu.missing",
                "P1",
                "node",
                "count",
                "%d of %d expected GPUs visible" % (count, expected),
                "isolate",
                "gpu.missing: profile gpu_count=%d (AzNHC check_gpu_count, NHC2009)" % expected,
                {"count": count, "expected": expected},
            )
    model = profile.get("gpu_model")
    if model:
        for g in gpus:
            name = g.get("name")
            if g.get("readable") is not False and name and model.lower() not in str(name).lower():
                ctx.add(
                    "gpu.drift",
                    "P3",
                    _gpu_comp(g),
                    "model",
                    "%s is a %s, the profile expects %s" % (_gpu_label(g), name, model),
                    "monitor",
                    "profile gpu_model",
                    {"name": name, "expected": model},
                )


def _check_ecc(ctx: _Ctx, g: Dict[str, Any], xids_here: set) -> None:
    th = ctx.policy["thresholds"]["ecc"]
    ecc = _dict(g.get("ecc"))
    vol = _dict(ecc.get("volatile"))
    agg = _dict(ecc.get("aggregate"))
    comp, bus, serial = _gpu_comp(g), normalize_bus_id(g.get("bus_id")), _s(g.get("serial"))
    vu, vc = _num(vol.get("uncorrected")), _num(vol.get("corrected"))
    au, ac = _num(agg.get("uncorrected")), _num(agg.get("corrected"))
    if vu is not None and vu >= th["volatile_uncorrected"]:
        uncontained = sorted(xids_here & set(ctx.policy["thresholds"]["remap"]["uncorrectable_xids"]))
        contained = sorted(xids_here & set(th["contained_xids"]))
        if contained and not uncontained:
            # Xid 94: the error was contained, only the application was killed; the GPU stays usable
            sev, action = "P2", "monitor"
            why = "contained (Xid %s: NVIDIA RESTART_APP, the GPU stays usable)" % ",".join(map(str, contained))
        else:
            sev, action = "P1", "reset_gpu"
            why = "uncontained%s (NVIDIA WORKFLOW_XID_48: reset to remap/retire)" % (
                " (Xid %s)" % ",".join(map(str, uncontained)) if uncontained else ", no Xid explains it"
            )
        ctx.add(
            "gpu.ecc",
            sev,
            comp,
            "volatile_uncorrected",
            "%s: %d uncorrectable ECC errors since the driver loaded, %s"
            % (_gpu_label(g), vu, why.split(" (", maxsplit=1)[0]),
            action,
            "gpu.ecc: volatile uncorrected >= %s, %s" % (th["volatile_uncorrected"], why),
            {"volatile": vol, "aggregate": agg, "xids": sorted(xids_here)},
            bus_id=bus,
            serial=serial,
        )
    elif vc is not None and vc >= th["volatile_corrected"]:
        ctx.add(
            "gpu.ecc",
            "P2",
            comp,
            "volatile_corrected",
            "%s: %d correctable ECC errors since the driver loaded" % (_gpu_label(g), vc),
            "monitor",
            "gpu.ecc: volatile corrected >= %s (AzNHC check_gpu_ecc SRAM threshold)" % th["volatile_corrected"],
            {"volatile": vol},
            bus_id=bus,
            serial=serial,
        )
    if (au is not None and au >= th["aggregate_uncorrected"]) or (ac is not None and ac >= th["aggregate_corrected"]):
        # Lifetime counters survive reboots and GPU moves: advice only, never an alarm by themselves.
        ctx.add(
            "gpu.ecc",
            "P3",
            comp,
            "aggregate",
            "%s: lifetime ECC counts corrected=%s uncorrected=%s"
            % (_gpu_label(g), agg.get("corrected"), agg.get("uncorrected")),
            "monitor",
            "gpu.ecc: aggregate (lifetime) counts are advice only (P3)",
            {"aggregate": agg},
            bus_id=bus,
            serial=serial,
        )


def _xids_by_bus(ctx: _Ctx, events: List[Dict[str, Any]]) -> Dict[str, set]:
    out: Dict[str, set] = {}
    for ev in events:
        if ev.get("kind") in ("xid", "fallen_off_bus"):
            code = 79 if ev.get("kind") == "fallen_off_bus" else ev.get("code")
            bus = normalize_bus_id(ev.get("bus_id"))
            if bus and isinstance(code, int):
                out.setdefault(bus, set()).add(code)
    return out


def _check_row_remap(ctx: _Ctx, g: Dict[str, Any], xids_here: set) -> None:
    rr = _dict(g.get("remapped_rows"))
    if rr.get("supported") is False or not rr:
        return
    th = ctx.policy["thresholds"]["remap"]
    comp, bus, serial = _gpu_comp(g), normalize_bus_id(g.get("bus_id")), _s(g.get("serial"))
    ev = {k: rr.get(k) for k in ("correctable", "uncorrectable", "pending", "failure", "histogram")}
    unc = _num(rr.get("uncorrectable"))
    if rr.get("failure") is True:
        ctx.add(
            "gpu.row_remap",
            "P1",
            comp,
            "failure",
            "%s: row remapping FAILED (an RMA criterion)" % _gpu_label(g),
            "replace",
            "gpu.row_remap: remapped_rows.failure (NVIDIA: RMA; AzNHC NHC2007)",
            ev,
            bus_id=bus,
            serial=serial,
        )
    elif unc is not None and unc >= th["rma_uncorrectable_rows"]:
        ctx.add(
            "gpu.row_remap",
            "P1",
            comp,
            "rma_limit",
            "%s: %d rows remapped for uncorrectable errors (RMA limit %s)"
            % (_gpu_label(g), unc, th["rma_uncorrectable_rows"]),
            "replace",
            "gpu.row_remap: uncorrectable remaps >= %s (DCGM limit, #1190)" % th["rma_uncorrectable_rows"],
            ev,
            bus_id=bus,
            serial=serial,
        )
    if rr.get("pending") is True:
        hot = sorted(xids_here & set(th["uncorrectable_xids"]))
        sev = "P1" if hot else "P2"
        ctx.add(
            "gpu.row_remap",
            sev,
            comp,
            "pending",
            "%s: a row remap is pending; reset the GPU when idle to activate it%s"
            % (_gpu_label(g), " (uncorrectable Xid %s this boot)" % ",".join(map(str, hot)) if hot else ""),
            "reset_gpu",
            "gpu.row_remap: pending (NVIDIA row remapping: a reset activates the remap)%s"
            % ("; P1 with uncorrectable Xid" if hot else ""),
            dict(ev, xids=hot),
            bus_id=bus,
            serial=serial,
        )
    hist = _dict(rr.get("histogram"))
    if hist:
        mx, hi, none = _num(hist.get("max")), _num(hist.get("high")), _num(hist.get("none"))
        if mx is not None and hi is not None and mx + hi == 0:
            ctx.add(
                "gpu.row_remap",
                "P3",
                comp,
                "histogram_exhausted",
                "%s: no memory bank has max/high remap availability left; plan a replacement" % _gpu_label(g),
                "replace",
                "gpu.row_remap: row_remapper_histogram max+high == 0 (remap capacity running out)",
                {"histogram": hist},
                bus_id=bus,
                serial=serial,
            )
        elif none is not None and none > 0:
            ctx.add(
                "gpu.row_remap",
                "P3",
                comp,
                "histogram_none",
                "%s: %d memory banks have no remap capacity left" % (_gpu_label(g), none),
                "monitor",
                "gpu.row_remap: row_remapper_histogram none > 0",
                {"histogram": hist},
                bus_id=bus,
                serial=serial,
            )


def _check_retired_pages(ctx: _Ctx, g: Dict[str, Any]) -> None:
    rp = _dict(g.get("retired_pages"))
    if rp.get("supported") is not True:  # N/A on Ampere+ (row remapping instead) is not a fault
        return
    th = ctx.policy["thresholds"]["retired_pages"]
    comp, bus, serial = _gpu_comp(g), normalize_bus_id(g.get("bus_id")), _s(g.get("serial"))
    sbe, dbe = _num(rp.get("sbe")) or 0, _num(rp.get("dbe")) or 0
    if sbe + dbe >= th["max_total"]:
        ctx.add(
            "gpu.retired_pages",
            "P1",
            comp,
            "max",
            "%s: %d pages retired (limit %s)" % (_gpu_label(g), sbe + dbe, th["max_total"]),
            "replace",
            "gpu.retired_pages: total >= %s (DCGM max retired pages; AzNHC NHC2018)" % th["max_total"],
            rp,
            bus_id=bus,
            serial=serial,
        )
    elif dbe >= th["dbe_soft_limit"]:
        ctx.add(
            "gpu.retired_pages",
            "P2",
            comp,
            "dbe",
            "%s: %d pages retired for double-bit errors" % (_gpu_label(g), dbe),
            "monitor",
            "gpu.retired_pages: DBE >= %s (DCGM DBE soft limit)" % th["dbe_soft_limit"],
            rp,
            bus_id=bus,
            serial=serial,
        )
    if rp.get("pending") is True:
        ctx.add(
            "gpu.retired_pages",
            "P2",
            comp,
            "pending",
            "%s: a page retirement is pending; reset the GPU (or reload the driver) when idle" % _gpu_label(g),
            "reset_gpu",
            "gpu.retired_pages: pending retirement (NVIDIA dynamic page retirement)",
            rp,
            bus_id=bus,
            serial=serial,
        )


def _check_recovery_action(ctx: _Ctx, g: Dict[str, Any]) -> None:
    ra = g.get("recovery_action")
    rs = _dict(g.get("reset_status"))  # v12 XML (R535..R570): gpu_reset_status instead of gpu_recovery_action
    if ra is None and rs.get("drain_and_reset_recommended") is True:
        ra = "drain_and_reset"
    elif ra is None and rs.get("reset_required") is True:
        if _dict(g.get("remapped_rows")).get("pending") is True:
            return  # the reset a pending row remap needs: gpu.row_remap reports it (P2 "reset when idle")
        ra = "gpu_reset"
    if ra in (None, "none"):
        return
    sa = _sev_action(ctx.policy["recovery_actions"], ra) or ("P2", "monitor")
    ctx.add(
        "gpu.recovery_action",
        sa[0],
        _gpu_comp(g),
        ra,
        "%s: the driver asks for recovery action '%s'" % (_gpu_label(g), ra),
        sa[1],
        "recovery_actions[%s] (NVML nvmlDeviceGpuRecoveryAction_t)" % ra,
        {"recovery_action": g.get("recovery_action"), "reset_status": rs or None},
        bus_id=normalize_bus_id(g.get("bus_id")),
        serial=_s(g.get("serial")),
    )


def _check_temperature(ctx: _Ctx, g: Dict[str, Any]) -> None:
    th = ctx.policy["thresholds"]["temperature"]
    t = _dict(g.get("temperature"))
    gpu_c, mem_c = _num(t.get("gpu_c")), _num(t.get("memory_c"))
    slow, shut = _num(t.get("slowdown_c")), _num(t.get("shutdown_c"))
    comp = _gpu_comp(g)
    if gpu_c is not None:
        p1 = shut - th["gpu_shutdown_margin_c"] if shut and shut > 0 else th["gpu_fallback_p1_c"]
        p2 = slow - th["gpu_slowdown_margin_c"] if slow and slow > 0 else th["gpu_fallback_p2_c"]
        if gpu_c >= p1:
            ctx.add(
                "gpu.temperature",
                "P1",
                comp,
                "gpu",
                "%s: %g C, at its shutdown temperature (%g C)" % (_gpu_label(g), gpu_c, shut or p1),
                "emergency_shutdown",
                "gpu.temperature: gpu_c >= shutdown - %s C" % th["gpu_shutdown_margin_c"],
                t,
            )
        elif gpu_c >= p2:
            ctx.add(
                "gpu.temperature",
                "P2",
                comp,
                "gpu",
                "%s: %g C, near its slowdown temperature (%g C)" % (_gpu_label(g), gpu_c, slow or p2),
                "tune",
                "gpu.temperature: gpu_c >= slowdown - %s C" % th["gpu_slowdown_margin_c"],
                t,
            )
    if mem_c is not None:
        if mem_c >= th["memory_p1_c"]:
            ctx.add(
                "gpu.temperature",
                "P1",
                comp,
                "memory",
                "%s: memory at %g C" % (_gpu_label(g), mem_c),
                "emergency_shutdown",
                "gpu.temperature: memory_c >= %s C" % th["memory_p1_c"],
                t,
            )
        elif mem_c >= th["memory_p2_c"]:
            ctx.add(
                "gpu.temperature",
                "P2",
                comp,
                "memory",
                "%s: memory at %g C" % (_gpu_label(g), mem_c),
                "tune",
                "gpu.temperature: memory_c >= %s C (HBM max operating)" % th["memory_p2_c"],
                t,
            )


def _check_throttle(ctx: _Ctx, gpus: List[Dict[str, Any]]) -> None:
    reasons = ctx.policy["thresholds"]["throttle"]["reasons"]
    by_reason: Dict[str, List[Dict[str, Any]]] = {}
    readable = [g for g in gpus if g.get("readable") is not False]
    for g in readable:
        for r in _list(_dict(g.get("throttle")).get("active")):
            if isinstance(r, str) and r in reasons:
                by_reason.setdefault(r, []).append(g)
    for r, gs in sorted(by_reason.items()):
        sev, action = _sev_action(reasons, r) or ("P2", "monitor")
        rule = "thresholds.throttle.reasons[%s]" % r
        everywhere = len(gs) > 1 and len(gs) == len(readable)
        for g in gs:
            ctx.add(
                "gpu.throttle",
                sev,
                _gpu_comp(g),
                r,
                "%s: clocks reduced by %s%s"
                % (
                    _gpu_label(g),
                    r,
                    " (on every GPU: an external signal, check PSU/BMC/cooling)" if everywhere else "",
                ),
                action,
                rule,
                {"active": _dict(g.get("throttle")).get("active"), "on_every_gpu": everywhere},
            )
    pct = ctx.policy["thresholds"]["power"]["cap_below_default_pct"]
    for g in readable:
        p = _dict(g.get("power"))
        lim, dflt = _num(p.get("enforced_limit_w")), _num(p.get("default_limit_w"))
        if lim and dflt and lim < dflt * (1 - pct / 100.0):
            ctx.add(
                "gpu.throttle",
                "P3",
                _gpu_comp(g),
                "power_cap",
                "%s: power limit %g W is below the default %g W" % (_gpu_label(g), lim, dflt),
                "tune",
                "thresholds.power.cap_below_default_pct=%s" % pct,
                {"power": p},
            )


def _under_load(ctx: _Ctx, g: Dict[str, Any]) -> bool:
    if "gpu_idle" in _list(_dict(g.get("throttle")).get("active")):
        return False
    util = _num(_dict(g.get("utilization")).get("gpu_pct"))
    return util is not None and util >= ctx.policy["thresholds"]["pcie"]["load_utilization_pct"]


def _rate_base(prev: Dict[str, Any], boot_id: Optional[str], t: Optional[float]) -> Optional[float]:
    """Seconds since a usable previous reading (same boot), or None (start a new baseline)."""
    if not prev or t is None:
        return None
    pt = prev.get("collected_at")
    if not isinstance(pt, (int, float)) or t <= pt:
        return None
    if boot_id and prev.get("boot_id") and prev.get("boot_id") != boot_id:
        return None
    return t - pt


def _check_pcie(
    ctx: _Ctx,
    g: Dict[str, Any],
    profile: Optional[Dict[str, Any]],
    prev: Dict[str, Any],
    cur: Dict[str, Any],
    interval: Optional[float],
) -> None:
    p = _dict(g.get("pcie"))
    comp, bus = _gpu_comp(g), normalize_bus_id(g.get("bus_id"))
    gen, width = _num(p.get("gen_current")), _num(p.get("width_current"))
    want_gen = (profile or {}).get("pcie_gen") or _num(p.get("gen_max"))
    if gen is not None and want_gen and gen < want_gen and _under_load(ctx, g):
        ctx.add(
            "gpu.pcie",
            "P2",
            comp,
            "gen",
            "%s: PCIe Gen%d under load, expected Gen%d" % (_gpu_label(g), gen, want_gen),
            "reseat",
            "gpu.pcie: link generation below %s while under load (idle downshift is power saving)"
            % ("profile pcie_gen" if (profile or {}).get("pcie_gen") else "gen_max"),
            p,
            bus_id=bus,
        )
    want_w = (profile or {}).get("pcie_width")
    if want_w and width is not None and width < want_w:
        ctx.add(
            "gpu.pcie",
            "P2",
            comp,
            "width",
            "%s: PCIe x%d, expected x%d" % (_gpu_label(g), width, want_w),
            "reseat",
            "gpu.pcie: width below profile pcie_width",
            p,
            bus_id=bus,
        )
    replay = _num(p.get("replay_counter"))
    cur["pcie_replay"] = replay
    th = ctx.policy["thresholds"]["pcie"]
    prev_replay = _num(prev.get("pcie_replay"))
    if replay is None or prev_replay is None or interval is None or interval < th["min_interval_s"]:
        return
    delta = replay - prev_replay
    lanes = width or _num(p.get("width_max")) or 16
    per_lane = th["replay_per_lane_per_minute"].get(str(int(gen or _num(p.get("gen_max")) or 4)))
    if delta <= 0 or per_lane is None:
        return
    per_min = delta / (interval / 60.0)
    limit = per_lane * lanes
    if per_min > limit:
        ctx.add(
            "gpu.pcie",
            "P2",
            comp,
            "replay",
            "%s: PCIe replays at %.2f/min (limit %.2f)" % (_gpu_label(g), per_min, limit),
            "monitor",
            "gpu.pcie: replay rate > DCGM limit (BER 1e-12 x line rate, per lane per minute)",
            {"delta": delta, "interval_s": interval, "limit_per_min": limit},
            bus_id=bus,
        )


def _check_nvlink(
    ctx: _Ctx,
    g: Dict[str, Any],
    profile: Optional[Dict[str, Any]],
    prev: Dict[str, Any],
    cur: Dict[str, Any],
    interval: Optional[float],
) -> None:
    nv = g.get("nvlink")
    if not isinstance(nv, dict):
        return
    links = [lk for lk in _list(nv.get("links")) if isinstance(lk, dict)]
    comp, bus, serial = _gpu_comp(g), normalize_bus_id(g.get("bus_id")), _s(g.get("serial"))
    want = (profile or {}).get("nvlinks_per_gpu")
    up = [lk.get("link") for lk in links if lk.get("state") == "up"]
    down = [lk for lk in links if lk.get("state") != "up"]
    # A link the tool lists as not up is evidence when the profile expects NVLinks, or when other links of the
    # same GPU are up (a GPU without NVLink lists none). Unknown hardware gets no "missing" alarm.
    if want or up:
        for lk in down:
            ctx.add(
                "gpu.nvlink",
                "P1",
                "%s/nvlink%s" % (comp, lk.get("link")),
                "down",
                "%s NVLink %s is %s (%d of %s links up)"
                % (_gpu_label(g), lk.get("link"), lk.get("state") or "not reported", len(up), want or len(links)),
                "reset_gpu",
                "gpu.nvlink: link not up (NVIDIA Xid 136 link training: RESET_GPU; repeated: reseat/RMA)",
                {"state": lk.get("state"), "up": len(up), "expected": want},
                bus_id=bus,
                serial=serial,
            )
    if want and len(links) < want:
        ctx.add(
            "gpu.nvlink",
            "P1",
            comp,
            "missing",
            "%s: %d of %d NVLinks reported" % (_gpu_label(g), len(links), want),
            "reset_gpu",
            "gpu.nvlink: profile nvlinks_per_gpu=%d" % want,
            {"listed": len(links), "up": len(up), "expected": want},
            bus_id=bus,
            serial=serial,
        )
    th = ctx.policy["thresholds"]["nvlink"]
    cur_err: Dict[str, Any] = {}
    prev_err = _dict(prev.get("nvlink"))
    for lk in links:
        e = _dict(lk.get("errors"))
        key = str(lk.get("link"))
        cur_err[key] = e
        pe = _dict(prev_err.get(key))
        if not pe or interval is None or interval < th["min_interval_s"]:
            continue
        deltas = {}
        for name in ("replay", "recovery", "crc_flit", "crc_data"):
            a, b = _num(e.get(name)), _num(pe.get(name))
            if a is not None and b is not None:
                deltas[name] = a - b
        if any(v < 0 for v in deltas.values()):
            continue  # counters reset (driver reload): new baseline
        crc = deltas.get("crc_flit", 0) + deltas.get("crc_data", 0)
        lcomp = "%s/nvlink%s" % (comp, key)
        if crc / interval >= th["crc_per_second"]:
            ctx.add(
                "gpu.nvlink",
                "P2",
                lcomp,
                "crc",
                "%s NVLink %s: %.1f CRC errors/s" % (_gpu_label(g), key, crc / interval),
                "monitor",
                "gpu.nvlink: CRC >= %s/s (DCGM NVLink CRC limit)" % th["crc_per_second"],
                {"deltas": deltas, "interval_s": interval},
                bus_id=bus,
            )
        if deltas.get("recovery", 0) >= th["recovery_delta"]:
            ctx.add(
                "gpu.nvlink",
                "P2",
                lcomp,
                "recovery",
                "%s NVLink %s: %d link recoveries since last run" % (_gpu_label(g), key, deltas["recovery"]),
                "monitor",
                "gpu.nvlink: recovery delta >= %s (DCGM NVLink error >= 1)" % th["recovery_delta"],
                {"deltas": deltas, "interval_s": interval},
                bus_id=bus,
            )
    cur["nvlink"] = cur_err


def _check_fabric(ctx: _Ctx, g: Dict[str, Any]) -> None:
    fab = g.get("fabric")
    if not isinstance(fab, dict):
        return
    th = ctx.policy["thresholds"]["fabric"]
    state, status = fab.get("state"), fab.get("status")
    comp = _gpu_comp(g)
    if state is not None and state not in th["ok_states"]:
        pending = state in th["pending_states"]
        ctx.add(
            "gpu.fabric",
            "P2" if pending else "P1",
            comp,
            "state",
            "%s: NVLink fabric state '%s' (status %s)" % (_gpu_label(g), state, status),
            "monitor" if pending else "isolate",
            "gpu.fabric: state not in %s (check nvidia-fabricmanager / NVSwitch)" % th["ok_states"],
            fab,
        )
    elif status is not None and status not in th["ok_status"]:
        ctx.add(
            "gpu.fabric",
            "P1",
            comp,
            "status",
            "%s: NVLink fabric status '%s'" % (_gpu_label(g), status),
            "isolate",
            "gpu.fabric: status not in %s" % th["ok_status"],
            fab,
        )


def _check_driver(ctx: _Ctx, facts: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> None:
    want = (profile or {}).get("driver_version")
    have = _dict(facts.get("gpu")).get("driver_version")
    if want and have and str(want) != str(have):
        ctx.add(
            "gpu.driver",
            "P3",
            "node",
            "version",
            "driver %s, the profile expects %s" % (have, want),
            "tune",
            "gpu.driver: profile driver_version (bring it in line with the upgrade playbook)",
            {"driver_version": have, "expected": want},
        )


def _check_diag(ctx: _Ctx, facts: Dict[str, Any]) -> None:
    d = _dict(facts.get("dcgm"))
    if not d or d.get("overall") is None and not d.get("gpus"):
        return
    by_idx = {str(g.get("index")): g for g in _gpus(facts)}
    failed_tests: Dict[str, List[str]] = {}
    for t in _list(d.get("tests")):
        if not isinstance(t, dict):
            continue
        for idx, res in _dict(t.get("gpus")).items():
            if res in ("fail", "warn"):
                failed_tests.setdefault(str(idx), []).append("%s:%s" % (t.get("name"), res))
    level = d.get("level")
    seen = False
    for idx, res in sorted(_dict(d.get("gpus")).items()):
        if res not in ("fail", "warn"):
            continue
        seen = True
        g = by_idx.get(str(idx), {"index": _int_or(idx)})
        sev, action = ("P1", "isolate") if res == "fail" else ("P2", "monitor")
        ctx.add(
            "gpu.diag",
            sev,
            _gpu_comp(g),
            res,
            "%s: DCGM diag level %s: %s (%s)"
            % (_gpu_label(g), level, res, ", ".join(failed_tests.get(str(idx), [])) or "no test named"),
            action,
            "gpu.diag: dcgmi diag %s (AzNHC NHC2020 DCGM diag failure)" % res,
            {"level": level, "tests": failed_tests.get(str(idx), [])},
            bus_id=normalize_bus_id(g.get("bus_id")),
            serial=_s(g.get("serial")),
        )
    if not seen and d.get("overall") in ("fail", "warn"):
        res = d["overall"]
        sev, action = ("P1", "isolate") if res == "fail" else ("P2", "monitor")
        ctx.add(
            "gpu.diag",
            sev,
            "node",
            res,
            "DCGM diag level %s: %s" % (level, res),
            action,
            "gpu.diag: dcgmi diag overall %s" % res,
            {"level": level},
        )


def _int_or(v: Any) -> Any:
    try:
        return int(v)
    except (TypeError, ValueError):
        return v


# ------------------------------------------------------------------------------------------ kernel events


def _event_filter(ctx: _Ctx, facts: Dict[str, Any], hs: Dict[str, Any], boot_time: Optional[datetime.datetime]):
    lookback = datetime.timedelta(hours=ctx.policy["kernel_events"]["lookback_hours"])
    floor = ctx.ref - lookback
    if boot_time and boot_time > floor:
        floor = boot_time
    boot_ref = boot_time or parse_time(hs.get("boot_seen_at"))

    def counts(ev: Dict[str, Any], bus: Optional[str]) -> bool:
        clear = parse_time(_dict(hs.get("clears")).get(bus)) if bus else None
        ts = parse_time(ev.get("timestamp"))
        if ts is None:
            # no placeable time: counts as this boot, unless the GPU was cleared during this boot
            return not (clear and boot_ref and clear >= boot_ref)
        cutoff = max(floor, clear) if clear else floor
        return ts >= cutoff

    return counts, floor


def _xid_row(ctx: _Ctx, code: int) -> Tuple[Dict[str, Any], List[str]]:
    row = _xid_catalog.lookup(code)
    notes = ["xid_catalog[%s] (NVIDIA: %s)" % (code, row.get("nvidia_action") or "not listed")]
    over = _dict(ctx.policy["xid"]["overrides"]).get(str(code))
    if isinstance(over, dict) and over:
        row.update(over)
        notes.append("policy xid.overrides[%s]" % code)
    return row, notes


def _check_xid(ctx: _Ctx, facts: Dict[str, Any], hs: Dict[str, Any], counts) -> None:
    events = [e for e in _list(_dict(facts.get("kernel")).get("events")) if isinstance(e, dict)]
    by_bus = _gpu_by_bus(facts)
    by_index = {g.get("index"): g for g in _gpus(facts) if isinstance(g.get("index"), int)}
    groups: Dict[Tuple[int, Optional[str]], Dict[str, Any]] = {}
    for ev in events:
        kind = ev.get("kind")
        if kind == "fallen_off_bus":
            code: Any = 79
        elif kind == "xid":
            code = ev.get("code")
        else:
            continue
        if not isinstance(code, int) or isinstance(code, bool):
            continue
        if code == 45 and ev.get("caused_by"):
            continue  # report the root Xid, not the cleanup
        bus = normalize_bus_id(ev.get("bus_id"))
        if bus is None and isinstance(ev.get("gpu_index"), int) and ev["gpu_index"] in by_index:
            bus = normalize_bus_id(by_index[ev["gpu_index"]].get("bus_id"))
        if not counts(ev, bus):
            continue
        grp = groups.setdefault(
            (code, bus),
            {
                "count": 0,
                "first": None,
                "last": None,
                "pids": set(),
                "processes": set(),
                "raw": ev.get("raw") or ev.get("message"),
                "recovery_action": None,
                "fatal": False,
                "undated": 0,
                "gpu_index": ev.get("gpu_index"),
            },
        )
        grp["count"] += 1
        ts = parse_time(ev.get("timestamp"))
        if ts is None:
            grp["undated"] += 1
        else:
            grp["first"] = ts if grp["first"] is None or ts < grp["first"] else grp["first"]
            grp["last"] = ts if grp["last"] is None or ts > grp["last"] else grp["last"]
        if _s(ev.get("pid")) not in _USER_PROC_UNKNOWN:
            grp["pids"].add(_s(ev.get("pid")))
        if _s(ev.get("process")) not in _USER_PROC_UNKNOWN:
            grp["processes"].add(_s(ev.get("process")))
        if ev.get("recovery_action"):
            grp["recovery_action"] = ev.get("recovery_action")
        if ev.get("severity") == "fatal" or "fatal" in str(ev.get("message") or "").lower().split():
            grp["fatal"] = True
    xp = ctx.policy["xid"]
    for (code, bus), grp in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        row, notes = _xid_row(ctx, code)
        sev, action = row.get("severity", "P2"), row.get("action", "monitor")
        g = by_bus.get(bus) if bus else None
        if g is None and isinstance(grp["gpu_index"], int):
            g = by_index.get(grp["gpu_index"])
        comp = _gpu_comp(g) if g else ("gpu:%s" % bus if bus else "node")
        label = _gpu_label(g) if g else ("GPU %s" % bus if bus else "GPU (bus id not in the log)")
        if code == xp["recovery_action_xid"] and grp["recovery_action"]:
            ra = _xid_catalog.recovery_action_name(grp["recovery_action"]) or str(grp["recovery_action"])
            sa = _sev_action(ctx.policy["recovery_actions"], ra)
            if ra == "none":
                sev, action = "P3", "none"
            elif sa:
                sev, action = sa
            notes.append("recovery_actions[%s] (Xid 154 carries the new action)" % ra)
        elif row.get("user_caused"):
            distinct = len(grp["pids"] | grp["processes"])
            if distinct >= xp["user_caused_repeat_processes"]:
                sev, action = "P2", "monitor"
                notes.append("same GPU from %d processes: run DCGM diag (NVIDIA WORKFLOW_XID_%s)" % (distinct, code))
            else:
                sev = xp["user_caused_severity"]
                notes.append("user-caused: application fault, not a node alarm")
        elif grp["fatal"] and isinstance(row.get("fatal_escalation"), dict):
            sev = row["fatal_escalation"].get("severity", sev)
            action = row["fatal_escalation"].get("action", action)
            notes.append("'Fatal' on the line")
        when = " since %s" % iso(grp["first"]) if grp["first"] else ""
        ctx.add(
            "gpu.xid",
            sev,
            comp,
            code,
            "%s Xid %d: %s (%d event%s%s)"
            % (
                label,
                code,
                row.get("description") or row.get("name"),
                grp["count"],
                "" if grp["count"] == 1 else "s",
                when,
            ),
            action,
            "; ".join(notes),
            {
                "code": code,
                "bus_id": bus,
                "count": grp["count"],
                "first": iso(grp["first"]),
                "last": iso(grp["last"]),
                "undated": grp["undated"],
                "processes": sorted(grp["processes"])[:5],
                "sample": str(grp["raw"] or "")[:300],
            },
            bus_id=bus,
            serial=_s(g.get("serial")) if g else None,
            raised_at=grp["last"],
        )


def _check_sxid(ctx: _Ctx, facts: Dict[str, Any], counts) -> None:
    groups: Dict[Tuple[Any, Optional[str]], Dict[str, Any]] = {}
    for ev in _list(_dict(facts.get("kernel")).get("events")):
        if not isinstance(ev, dict) or ev.get("kind") != "sxid":
            continue
        bus = normalize_bus_id(ev.get("bus_id"))
        if not counts(ev, bus):
            continue
        m = _NVSWITCH_DEV.search(str(ev.get("raw") or ""))
        code = ev.get("code") if isinstance(ev.get("code"), int) else _s(ev.get("code"))
        grp = groups.setdefault(
            (code, bus), {"count": 0, "fatal": False, "raw": ev.get("raw"), "dev": m.group(1) if m else None}
        )
        if ev.get("severity") == "fatal":
            grp["fatal"] = True
        grp["count"] += 1
        text = str(ev.get("message") or ev.get("raw") or "")
        if "fatal" in text.lower().replace(",", " ").split():
            grp["fatal"] = True
    for (code, bus), grp in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1] or "")):
        sev, action = ("P1", "reboot") if grp["fatal"] else ("P2", "monitor")
        comp = "nvswitch%s" % grp["dev"] if grp["dev"] else ("nvswitch:%s" % bus if bus else "nvswitch")
        ctx.add(
            "nvswitch.sxid",
            sev,
            comp,
            code,
            "NVSwitch %s SXid %s (%s, %d events)"
            % (bus or "?", code, "fatal" if grp["fatal"] else "non-fatal", grp["count"]),
            action,
            "nvswitch.sxid: %s SXid (a fatal NVSwitch error needs a node reboot)"
            % ("fatal" if grp["fatal"] else "non-fatal"),
            {"count": grp["count"], "sample": str(grp["raw"] or "")[:300]},
            bus_id=bus,
        )


# ------------------------------------------------------------------------------------------ IB checks


def _ports(facts: Dict[str, Any]) -> List[Tuple[str, Dict[str, Any], Dict[str, Any]]]:
    out = []
    for hca in _list(_dict(facts.get("ib")).get("hcas")):
        if not isinstance(hca, dict):
            continue
        for p in _list(hca.get("ports")):
            if isinstance(p, dict):
                out.append(("%s/%s" % (hca.get("name"), p.get("port")), hca, p))
    return out


def _check_ib_ports(ctx: _Ctx, facts: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> None:
    ports = _ports(facts)
    ib = _dict(facts.get("ib"))
    if not ports and not (profile or {}).get("ib_ports"):
        return
    want = (profile or {}).get("ib_ports")
    names = {n for n, _hca, _port in ports}
    if isinstance(want, list):
        expected = [str(x) for x in want]
        for name in expected:
            if name not in names and not ib.get("errors"):
                ctx.add(
                    "ib.port_state",
                    "P1",
                    name,
                    "missing",
                    "IB port %s not found" % name,
                    "isolate",
                    "ib.port_state: profile ib_ports (AzNHC NHC2002 missing IB)",
                    {"expected": expected},
                )
        checked = [(n, h, p) for n, h, p in ports if n in expected]
    elif isinstance(want, int) and not isinstance(want, bool):
        layer = (profile or {}).get("ib_link_layer")
        checked = [
            (n, h, p)
            for n, h, p in ports
            if (p.get("link_layer") == layer if layer else p.get("link_layer") != "Ethernet")
        ]
        if len(checked) < want and not ib.get("errors"):
            ctx.add(
                "ib.port_state",
                "P1",
                "node",
                "missing",
                "%d of %d expected IB ports found" % (len(checked), want),
                "isolate",
                "ib.port_state: profile ib_ports=%d (AzNHC NHC2002)" % want,
                {"found": sorted(n for n, _hca, _port in checked), "expected": want},
            )
    else:
        checked = []
    rate_want = (profile or {}).get("ib_rate_gbps")
    for name, _hca, p in ports:
        state, phys = p.get("state"), p.get("phys_state")
        ev = {"state": state, "phys_state": phys, "rate_gbps": p.get("rate_gbps"), "sm_lid": p.get("sm_lid")}
        expected_here = any(name == n for n, _hca, _port in checked)
        if state in ("INIT", "ARMED"):
            # cabled and trained but the subnet manager did not bring it up (many nodes: one P0 about the SM)
            ctx.add(
                "ib.port_state",
                "P1",
                name,
                state,
                "IB port %s is %s (%s): no subnet manager configured it" % (name, state, phys),
                "isolate",
                "ib.port_state: INIT/ARMED = subnet manager did not finish",
                ev,
            )
        elif expected_here and state != "ACTIVE" and state != "ACTIVE_DEFER":
            ctx.add(
                "ib.port_state",
                "P1",
                name,
                state or "unknown",
                "IB port %s is %s (%s)" % (name, state, phys),
                "reseat",
                "ib.port_state: expected port not ACTIVE (AzNHC NHC2004 IB port down)",
                ev,
            )
        elif expected_here and rate_want and state == "ACTIVE":
            rate = _num(p.get("rate_gbps"))
            if rate is not None and rate < rate_want:
                ctx.add(
                    "ib.port_rate",
                    "P2",
                    name,
                    "rate",
                    "IB port %s at %g Gb/s, expected %g" % (name, rate, rate_want),
                    "reseat",
                    "ib.port_rate: below profile ib_rate_gbps (downtrained link)",
                    ev,
                )


def _check_ib_counters(
    ctx: _Ctx, facts: Dict[str, Any], hs: Dict[str, Any], new_ports: Dict[str, Any], boot_id: Optional[str]
) -> None:
    ib = _dict(facts.get("ib"))
    t = _num(ib.get("collected_at"))
    if t is None:
        t = _collected_epoch(facts)
    th = ctx.policy["thresholds"]["ib"]
    boot = ib.get("boot_id") or boot_id
    prev_ports = _dict(_dict(hs.get("ib")).get("ports"))
    for name, hca, p in _ports(facts):
        counters = {k: v for k, v in _dict(p.get("counters")).items() if _num(v) is not None}
        saturated = set(str(x) for x in _list(p.get("saturated")))
        cur = {"collected_at": t, "boot_id": boot, "fw_version": hca.get("fw_version"), "counters": counters}
        for cname in sorted(saturated):
            if cname == "link_downed":
                ctx.add(
                    "ib.link_flap",
                    "P2",
                    name,
                    "link_downed",
                    "IB port %s: link_downed is saturated (at least "
                    "%s link-downs), delta unknown; clear the port counters (perfquery -R)"
                    % (name, counters.get(cname)),
                    "monitor",
                    "ib.link_flap: link_downed at its 8-bit ceiling = a link that flapped at least that often",
                    {"value": counters.get(cname), "saturated": True},
                )
            elif cname in th["counters"]:
                ctx.add(
                    "ib.errors",
                    "P3",
                    name,
                    cname,
                    "IB port %s: %s is saturated (at least %s), delta unknown; "
                    "clear the port counters (perfquery -R)" % (name, cname, counters.get(cname)),
                    "monitor",
                    "ib.errors: saturated counter (8/4-bit ceiling): delta unknown",
                    {"value": counters.get(cname)},
                )
        prev = _dict(prev_ports.get(name))
        interval = _rate_base(prev, boot, t)
        if interval is None or (
            prev.get("fw_version") and hca.get("fw_version") and prev.get("fw_version") != hca.get("fw_version")
        ):
            new_ports[name] = cur  # first reading, new boot or new HCA firmware: new baseline, no finding
            continue
        pc = _dict(prev.get("counters"))
        deltas = {}
        for k, v in counters.items():
            if k in pc and _num(pc[k]) is not None and k not in saturated:
                deltas[k] = _num(v) - _num(pc[k])
        if any(d < 0 for d in deltas.values()):
            new_ports[name] = cur  # counters were cleared: new baseline, no finding
            continue
        flap = deltas.get("link_downed", 0)
        fl = th["link_flap"]
        if flap >= fl["p1_downs"] or flap >= fl["p2_downs"]:
            p1 = flap >= fl["p1_downs"]
            ctx.add(
                "ib.link_flap",
                "P1" if p1 else "P2",
                name,
                "link_downed",
                "IB port %s went down %d time%s since %s"
                % (name, flap, "" if flap == 1 else "s", iso(parse_time(prev.get("collected_at")))),
                "reseat" if p1 else "monitor",
                "ib.link_flap: link_downed +%d within one boot (>= %d: P1, AzNHC NHC2005 flapping)"
                % (flap, fl["p1_downs"]),
                {"delta": flap, "interval_s": interval},
            )
        if interval < th["min_interval_s"]:
            new_ports[name] = prev  # keep the older baseline until the interval is long enough for a rate
            continue
        hours = interval / 3600.0
        for cname, rule in sorted(th["counters"].items()):
            d = deltas.get(cname)
            if d is None or d < rule.get("min_delta", 1):
                continue
            rate = d / hours
            if rate >= rule.get("per_hour", 0):
                ctx.add(
                    "ib.errors",
                    rule.get("severity", "P2"),
                    name,
                    cname,
                    "IB port %s: %s +%d in %.0f s (%.1f/h)" % (name, cname, d, interval, rate),
                    rule.get("action", "monitor"),
                    "thresholds.ib.counters[%s]: >= %s/h and +%s (NVSentinel NIC monitor defaults)"
                    % (cname, rule.get("per_hour"), rule.get("min_delta", 1)),
                    {
                        "delta": d,
                        "interval_s": interval,
                        "per_hour": rate,
                        "previous": pc.get(cname),
                        "current": counters.get(cname),
                    },
                )
        new_ports[name] = cur


# ------------------------------------------------------------------------------------------ BMC checks


def _check_bmc(ctx: _Ctx, facts: Dict[str, Any]) -> None:
    bmc = _dict(facts.get("bmc"))
    if not bmc:
        return
    th = ctx.policy["thresholds"]["bmc"]
    fail_states = [s.lower() for s in th["failure_states"]]
    for s in _list(bmc.get("sensors")):
        if not isinstance(s, dict):
            continue
        name, status, typ = s.get("name"), s.get("status"), s.get("type")
        comp = "bmc/%s" % name
        ev = {k: s.get(k) for k in ("type", "reading", "unit", "status", "states")}
        if typ == "coolant":
            # coolant flow / pressure / level / temperature: a cooling fault (isolate or monitor), never the
            # leak power-off path; the policy refuses emergency_shutdown here
            level = {"critical": "Critical", "non_recoverable": "Critical", "non_critical": "Warning"}.get(_s(status))
            sa = _sev_action(th["coolant"], level)
            if sa:
                ctx.add(
                    "bmc.coolant",
                    sa[0],
                    comp,
                    level,
                    "coolant sensor %s: %s (reading %s %s)" % (name, status, s.get("reading"), s.get("unit") or ""),
                    sa[1],
                    "thresholds.bmc.coolant[%s]" % level,
                    ev,
                )
            continue
        if typ == "leak":
            level = {"critical": "Critical", "non_recoverable": "Critical", "non_critical": "Warning"}.get(_s(status))
            sa = _sev_action(th["leak"], level)
            if sa:
                ctx.add(
                    "bmc.leak",
                    sa[0],
                    comp,
                    level,
                    "leak sensor %s: %s (%s)"
                    % (name, status, ", ".join(map(str, _list(s.get("states")))) or s.get("reading")),
                    sa[1],
                    "thresholds.bmc.leak[%s]" % level,
                    ev,
                )
            continue
        typed = _sev_action(_dict(th["sensor_type_status"].get(_s(typ))), status)
        sa = typed or _sev_action(th["sensor_status"], status)
        bad = [str(st) for st in _list(s.get("states")) if str(st).lower() in fail_states]
        if bad:  # an asserted failure state counts even when the status column says ok (a failed PSU can)
            fs = ("P2", "replace") if typ == "power_supply" else ("P2", "monitor")
            if sa is None or SEVERITIES.index(sa[0]) > SEVERITIES.index(fs[0]):
                sa = fs
            ctx.add(
                "bmc.sensor",
                sa[0],
                comp,
                bad[0],
                "BMC sensor %s: %s" % (name, ", ".join(bad)),
                sa[1],
                "thresholds.bmc.failure_states (asserted failure state)",
                ev,
            )
        elif sa:
            ctx.add(
                "bmc.sensor",
                sa[0],
                comp,
                status,
                "BMC sensor %s: %s (reading %s %s)" % (name, status, s.get("reading"), s.get("unit") or ""),
                sa[1],
                "thresholds.bmc.%s[%s]" % ("sensor_type_status.%s" % typ if typed else "sensor_status", status),
                ev,
            )
    # SEL: asserted critical entries in the lookback that no later deassertion closed
    lookback = ctx.ref - datetime.timedelta(hours=th["sel_lookback_hours"])
    open_: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for e in _list(bmc.get("sel")):
        if not isinstance(e, dict):
            continue
        key = (str(e.get("sensor")), str(e.get("event")))
        if str(e.get("direction") or "").lower() == "deasserted":
            open_.pop(key, None)
            continue
        ts = parse_time(e.get("time"))
        if ts is None or ts < lookback:
            continue
        sev = {"critical": "P2", "non_recoverable": "P2", "warning": "P3", "non_critical": "P3"}.get(
            str(e.get("severity") or "").lower()
        )
        if sev:
            cur = open_.setdefault(key, {"entry": e, "count": 0, "severity": sev})
            cur["count"] += 1
    for (sensor, event), o in sorted(open_.items()):
        e = o["entry"]
        ctx.add(
            "bmc.sel",
            o["severity"],
            "bmc",
            "%s: %s" % (sensor, event),
            "SEL: %s %s (%s, %d entr%s)"
            % (sensor, event, e.get("time"), o["count"], "y" if o["count"] == 1 else "ies"),
            "monitor",
            "bmc.sel: asserted %s entry within %sh" % (e.get("severity"), th["sel_lookback_hours"]),
            {"id": e.get("id"), "sensor_type": e.get("sensor_type"), "time": e.get("time")},
        )
    rf = _dict(bmc.get("redfish"))
    for kind in ("systems", "chassis", "managers"):
        for r in _list(rf.get(kind)):
            if not isinstance(r, dict):
                continue
            h = r.get("health_rollup") or r.get("health")
            sa = _sev_action(th["health"], h)
            if sa:
                ctx.add(
                    "bmc.health",
                    sa[0],
                    "bmc",
                    "%s:%s" % (kind, r.get("id")),
                    "Redfish %s %s health %s" % (kind, r.get("id"), h),
                    sa[1],
                    "thresholds.bmc.health[%s]" % h,
                    {"health": h, "id": r.get("id")},
                )
    for kind, sev, action in (("psus", "P2", "replace"), ("memory", "P1", "replace")):
        for r in _list(rf.get(kind)):
            if isinstance(r, dict) and r.get("health") == "Critical":
                name = r.get("name") or r.get("id")
                ctx.add(
                    "bmc.health",
                    sev,
                    "bmc/%s" % name,
                    kind,
                    "Redfish %s %s health Critical" % (kind, name),
                    action,
                    "bmc.health: %s Critical" % kind,
                    {"serial": r.get("serial"), "health": "Critical"},
                )
    for d in _list(rf.get("leak_detectors")):
        if not isinstance(d, dict):
            continue
        st = d.get("state") if _s(d.get("state")) in th["leak"] else d.get("health")
        sa = _sev_action(th["leak"], st)
        if sa:
            ctx.add(
                "bmc.leak",
                sa[0],
                "bmc/%s" % d.get("name"),
                st,
                "leak detector %s: %s" % (d.get("name"), st),
                sa[1],
                "thresholds.bmc.leak[%s]" % st,
                {"state": d.get("state"), "health": d.get("health")},
            )


# ------------------------------------------------------------------------------------------ node checks


def _check_scheduler(ctx: _Ctx, facts: Dict[str, Any]) -> None:
    n = _slurm_node(facts, ctx.host)
    if not n:
        return
    flags = {str(f).upper() for f in _list(n.get("flags"))}
    base = str(n.get("base_state") or "").upper()
    words = flags | {base} | set(str(n.get("state") or "").upper().replace("*", "+NOT_RESPONDING").split("+"))
    reason = n.get("reason") or ""
    ev = {"state": n.get("state"), "reason": reason, "reason_time": n.get("reason_time")}
    if words & {"DOWN", "NOT_RESPONDING", "FAIL", "FAILING", "NO_RESPOND"}:
        ctx.add(
            "scheduler.node_state",
            "P1",
            "slurm",
            "DOWN",
            "Slurm: %s (%s)" % (n.get("state"), reason or "no reason"),
            "monitor",
            "scheduler.node_state: DOWN / not responding = node down",
            ev,
        )
    elif words & {"DRAIN", "DRAINED", "DRAINING"}:
        ours = str(reason).startswith("gpuops")
        # a drained node is already out of service and a human (or we) knows why: advice, not an alarm
        ctx.add(
            "scheduler.node_state",
            "P3",
            "slurm",
            "DRAIN",
            "Slurm: %s, reason: %s%s"
            % (n.get("state"), reason or "none given", " (drained by gpuops)" if ours else ""),
            "none" if ours else "monitor",
            "scheduler.node_state: drained by %s"
            % ("gpuops" if ours else "someone else (reason owner: %s)" % (n.get("reason_user") or "unknown")),
            ev,
        )


def _check_node(ctx: _Ctx, facts: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> None:
    node = _dict(facts.get("node"))
    wanted_mounts = set(str(m) for m in _list((profile or {}).get("mounts")))
    min_free = ctx.policy["thresholds"]["mounts"]["min_free_pct"]
    for m in _list(node.get("mounts")):
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
                    m,
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
                m,
            )
        elif _num(m.get("free_pct")) is not None and _num(m.get("free_pct")) < min_free:
            ctx.add(
                "node.mounts",
                "P2",
                comp,
                "full",
                "%s has %s%% free" % (path, m.get("free_pct")),
                "monitor",
                "thresholds.mounts.min_free_pct=%s" % min_free,
                m,
            )
    services = _dict(node.get("services"))
    for name in _list((profile or {}).get("services")):
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
                svc,
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
            {"service": fm},
        )
    if need or fm_running:
        fmv = node.get("fabric_manager_version") or (fm or {}).get("version")
        drv = _dict(facts.get("gpu")).get("driver_version") or (profile or {}).get("fabric_manager_version")
        if fmv and drv and str(fmv) != str(drv):
            ctx.add(
                "node.fabric_manager",
                "P1",
                "service:nvidia-fabricmanager",
                "version_mismatch",
                "fabric manager %s does not match driver %s" % (fmv, drv),
                "isolate",
                "node.fabric_manager: version must equal the driver's (FM refuses to start otherwise)",
                {"fabric_manager_version": fmv, "driver_version": drv},
            )


def _check_collector_errors(ctx: _Ctx, facts: Dict[str, Any]) -> None:
    ce = ctx.policy["collector_errors"]
    seen = set()
    errs = []
    pools = [facts.get("errors")] + [
        _dict(facts.get(d)).get("errors") for d in ("gpu", "kernel", "ib", "bmc", "dcgm", "slurm", "node")
    ]
    for pool in pools:
        for e in _list(pool):
            if not isinstance(e, dict):
                continue
            key = tuple(_s(e.get(k)) for k in ("domain", "kind", "message", "source", "line"))
            if key not in seen:
                seen.add(key)
                errs.append(e)
    groups: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for e in errs:
        groups.setdefault((str(e.get("domain") or "unknown"), str(e.get("kind") or "internal")), []).append(e)
    for (domain, kind), es in sorted(groups.items()):
        if (
            domain == "gpu"
            and kind == "unreadable"
            and any(f["check"] == "gpu.missing" and f["code"] == "unreadable" for f in ctx.findings.values())
        ):
            continue  # already a gpu.missing finding per GPU
        key = "%s:%s" % (domain, kind)
        sa = _sev_action(ce["overrides"], key)
        sev, action = sa or (ce["default"]["severity"], ce["default"]["action"])
        required = domain in ce["required_domains"]
        ctx.add(
            "collector.error",
            sev,
            "collector:%s" % domain,
            kind,
            "%s collector %s: %s%s"
            % (domain, kind, es[0].get("message"), " (+%d more)" % (len(es) - 1) if len(es) > 1 else ""),
            action,
            "collector_errors.%s" % ("overrides[%s]" % key if sa else "default")
            + ("; required domain" if required else ""),
            {
                "required": required,
                "count": len(es),
                "errors": [{k: e.get(k) for k in ("message", "source", "parser", "line")} for e in es[:3]],
            },
        )


# ------------------------------------------------------------------------------------------ drift


def make_baseline(facts: Dict[str, Any], now: Any = None) -> Dict[str, Any]:
    """The golden baseline of a node (what onboarding saves into the host state's ``baseline``)."""
    gpu = _dict(facts.get("gpu"))
    node = _dict(facts.get("node"))
    bmc = _dict(facts.get("bmc"))
    systems = _list(_dict(bmc.get("redfish")).get("systems"))
    return {
        "taken_at": iso(parse_time(now)) if now is not None else facts.get("collected_at"),
        "gpu": {
            "count": gpu.get("count"),
            "driver_version": gpu.get("driver_version"),
            "gpus": {
                normalize_bus_id(g.get("bus_id")): {
                    "serial": g.get("serial"),
                    "vbios_version": g.get("vbios_version"),
                    "name": g.get("name"),
                }
                for g in _gpus(facts)
                if normalize_bus_id(g.get("bus_id"))
            },
        },
        "ib": {
            "hcas": {
                h.get("name"): {"fw_version": h.get("fw_version"), "board_id": h.get("board_id")}
                for h in _list(_dict(facts.get("ib")).get("hcas"))
                if isinstance(h, dict)
            }
        },
        "bmc": {
            "firmware_revision": _dict(bmc.get("mc")).get("firmware_revision"),
            "bios_version": _dict(systems[0]).get("bios_version") if systems else None,
        },
        "node": {"kernel": node.get("kernel"), "os": node.get("os")},
    }


def _check_drift(ctx: _Ctx, facts: Dict[str, Any], baseline: Any) -> None:
    if not isinstance(baseline, dict):
        return
    if baseline.get("schema") == "gpuops.facts/v1" or isinstance(_dict(baseline.get("gpu")).get("gpus"), list):
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
                {"baseline": want, "current": have},
            )

    bg, cg = _dict(baseline.get("gpu")), cur["gpu"]
    cmp("gpu.drift", "node", "driver_version", bg.get("driver_version"), cg["driver_version"], "driver")
    cmp("gpu.drift", "node", "count", bg.get("count"), cg["count"], "GPU count")
    by_bus = _gpu_by_bus(facts)
    for bus, want in sorted(_dict(bg.get("gpus")).items()):
        have = cg["gpus"].get(bus)
        if not have or not isinstance(want, dict):
            continue
        comp = _gpu_comp(by_bus.get(bus, {"bus_id": bus}))
        cmp("gpu.drift", comp, "serial", want.get("serial"), have.get("serial"), "GPU %s serial (replaced?)" % bus)
        cmp(
            "gpu.drift",
            comp,
            "vbios_version",
            want.get("vbios_version"),
            have.get("vbios_version"),
            "GPU %s VBIOS" % bus,
        )
    for name, want in sorted(_dict(_dict(baseline.get("ib")).get("hcas")).items()):
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
    bb = _dict(baseline.get("bmc"))
    cmp(
        "bmc.drift",
        "bmc",
        "firmware_revision",
        bb.get("firmware_revision"),
        cur["bmc"]["firmware_revision"],
        "BMC firmware",
    )
    cmp("bmc.drift", "bmc", "bios_version", bb.get("bios_version"), cur["bmc"]["bios_version"], "BIOS")
    bn = _dict(baseline.get("node"))
    cmp("node.drift", "node", "kernel", bn.get("kernel"), cur["node"]["kernel"], "kernel")
    cmp("node.drift", "node", "os", bn.get("os"), cur["node"]["os"], "OS")


# ------------------------------------------------------------------------------------------ escalation/clears


def _escalate(ctx: _Ctx, hs: Dict[str, Any]) -> None:
    esc = ctx.policy["escalation"]
    active = _dict(hs.get("active_faults"))
    history = [h for h in _list(hs.get("escalation")) if isinstance(h, dict)]
    longest = max([r.get("window_days", 30) for codes in esc.values() for r in codes.values()] + [30])
    oldest = ctx.ref - datetime.timedelta(days=longest)
    history = [h for h in history if (parse_time(h.get("time")) or oldest - datetime.timedelta(days=1)) >= oldest]
    for fid, f in sorted(ctx.findings.items()):
        codes = _dict(esc.get(f["check"]))
        rule = codes.get(f["code"]) if f["code"] is not None else None
        rule = rule or codes.get("*")
        if not isinstance(rule, dict) or SEVERITIES.index(f["severity"]) > 2:
            continue
        steps = rule["steps"]
        meta = ctx.meta.get(fid, {})
        serial = meta.get("serial") or meta.get("bus_id") or f["component"]
        known = _dict(active.get(fid))
        known_step = known.get("escalation_step")
        if isinstance(known_step, int) and not isinstance(known_step, bool) and known_step > 0:
            step = known_step
        else:
            window = ctx.ref - datetime.timedelta(days=rule["window_days"])
            prior = [
                h
                for h in history
                if h.get("check") == f["check"]
                and h.get("code") == f["code"]
                and h.get("serial") == serial
                and (parse_time(h.get("time")) or window - datetime.timedelta(days=1)) >= window
            ]
            step = len(prior) + 1
            history.append(
                {"check": f["check"], "code": f["code"], "serial": serial, "time": iso(ctx.ref), "step": step}
            )
        meta["escalation_step"] = step
        s = steps[min(step, len(steps)) - 1]
        f["severity"], f["action"] = s.get("severity", f["severity"]), s.get("action", f["action"])
        f["rule"] += "; escalation[%s][%s] step %d/%d within %s days (%s)" % (
            f["check"],
            f["code"],
            min(step, len(steps)),
            len(steps),
            rule["window_days"],
            f["action"],
        )
        f["evidence"]["escalation_step"] = step
    hs["escalation"] = history


def _clear_rule(policy: Dict[str, Any], f: Dict[str, Any], meta: Dict[str, Any]) -> str:
    cr = policy["clear_rules"]
    rule = cr["checks"].get("%s:%s" % (f["check"], f["code"])) or cr["checks"].get(f["check"])
    rule = rule or cr["by_action"].get(f["action"]) or "facts"
    if not meta.get("bus_id"):  # not a GPU: resets and serial changes do not apply
        rule = {"needs_reset_record": "needs_new_boot", "needs_serial_change": "facts"}.get(rule, rule)
    return rule


def _is_cleared(fault: Dict[str, Any], hs: Dict[str, Any], boot_id: Optional[str], facts: Dict[str, Any]) -> bool:
    rule = fault.get("clear")
    new_boot = bool(boot_id and fault.get("boot_id") and boot_id != fault.get("boot_id"))
    if rule == "needs_new_boot":
        return new_boot
    if rule == "needs_reset_record":
        if new_boot:
            return True
        since = parse_time(fault.get("raised_at")) or parse_time(fault.get("first_seen"))
        for r in _list(hs.get("resets")):
            if not isinstance(r, dict) or normalize_bus_id(r.get("bus_id")) != fault.get("bus_id"):
                continue
            if r.get("serial") and fault.get("serial") and r.get("serial") != fault.get("serial"):
                continue
            t = parse_time(r.get("time"))
            if t and (since is None or t >= since):
                return True
        return False
    if rule == "needs_serial_change":
        g = _gpu_by_bus(facts).get(fault.get("bus_id"))
        serial = _s(g.get("serial")) if g and g.get("readable") is not False else None
        return bool(serial and fault.get("serial") and serial != fault.get("serial"))
    return True


def _stored_finding(f: Any, fid: str) -> Optional[Dict[str, Any]]:
    """A remembered finding from the state, checked and copied; None when it is not a usable finding."""
    if not isinstance(f, dict) or f.get("severity") not in SEVERITIES or f.get("action") not in _ACTIONS:
        return None
    if not isinstance(f.get("check"), str) or f.get("id") != fid:
        return None
    out = copy.deepcopy(f)
    if not isinstance(out.get("evidence"), dict):
        out["evidence"] = {}
    out["message"] = str(out.get("message") or "")
    for key in ("component", "code", "rule", "host", "cause"):
        out[key] = _s(out.get(key))
    return out


_CLEAR_TEXT = {
    "needs_new_boot": "clears after a reboot",
    "needs_reset_record": "clears after a recorded GPU reset or a reboot",
    "needs_serial_change": "clears when the GPU is replaced (serial changes)",
}


def _apply_active_faults(
    ctx: _Ctx, hs: Dict[str, Any], boot_id: Optional[str], facts: Dict[str, Any], reachable: bool
) -> None:
    old = _dict(hs.get("active_faults"))
    new: Dict[str, Any] = {}
    for fid, f in ctx.findings.items():
        meta = ctx.meta.get(fid, {})
        rule = _clear_rule(ctx.policy, f, meta)
        prev = _dict(old.get(fid))
        first = prev.get("first_seen") or iso(ctx.now)
        if prev:
            f["evidence"]["active_since"] = first
        if rule == "facts" and not meta.get("escalation_step"):
            continue  # facts-derived: it clears when the facts do (escalated ones are kept to count incidents)
        new[fid] = {
            "finding": copy.deepcopy(f),
            "first_seen": first,
            "last_seen": iso(ctx.now),
            "boot_id": prev.get("boot_id") or boot_id,
            "clear": rule,
            "bus_id": meta.get("bus_id") or prev.get("bus_id"),
            "serial": meta.get("serial") or prev.get("serial"),
            "raised_at": iso(meta.get("raised_at")) or prev.get("raised_at") or iso(ctx.now),
            "escalation_step": meta.get("escalation_step") or prev.get("escalation_step"),
        }
    for fid, fault in old.items():
        if fid in new or not isinstance(fault, dict):
            continue
        f = _stored_finding(fault.get("finding"), fid)
        if f is None:
            continue  # not a finding (a hand-edited or damaged state file): nothing to re-report
        fault = dict(fault, clear=_s(fault.get("clear")))
        if reachable and _is_cleared(fault, hs, boot_id, facts):
            continue
        f["message"] = "%s [still active since %s; %s]" % (
            f.get("message", "").split(" [still active")[0],
            fault.get("first_seen"),
            _CLEAR_TEXT.get(fault.get("clear"), fault.get("clear")),
        )
        f.setdefault("evidence", {})["still_active"] = True
        f["evidence"]["active_since"] = fault.get("first_seen")
        ctx.findings[fid] = f
        ctx.meta[fid] = {"bus_id": fault.get("bus_id"), "serial": fault.get("serial")}
        kept = dict(fault)
        kept["finding"] = copy.deepcopy(f)
        new[fid] = kept
    hs["active_faults"] = new


# ------------------------------------------------------------------------------------------ entry point


def evaluate_node(
    facts: Optional[Dict[str, Any]],
    profile: Any,
    policy: Optional[Dict[str, Any]],
    state: Optional[Dict[str, Any]],
    now: Any,
    host: str,
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
      state: the host's state (``_state.load_host_state``) or ``{"hosts": {host: ...}}``; None = empty.
        Not modified.
      now: the evaluation time (ISO string, epoch or datetime): kernel-event windows, rates, respond_by.
      host: the inventory hostname (the finding ids start with it).

    Returns:
      ``(findings, new_host_state)``: findings per docs/findings.md sorted by severity then id, and the
      host state to save (``_state.save_host_state``): counter readings, boot id, escalation history,
      active faults.
    """
    policy = policy if policy is not None else DEFAULT_POLICY
    if isinstance(profile, str):
        profile = profile_for(policy, profile)
    validate_profile(profile)
    now_dt = parse_time(now) or datetime.datetime.now(datetime.timezone.utc)
    raw_state = state or {}
    if isinstance(raw_state.get("hosts"), dict):
        raw_state = raw_state["hosts"].get(host) or {}
    hs = normalize_host_state(copy.deepcopy(raw_state), host)
    ctx = _Ctx(host, policy, now_dt)
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
            {"reason": reason},
        )
        facts = {}
    else:
        _run_checks(ctx, facts, profile, hs, states)
    boot_id = _boot_id(facts) if reachable else None
    _escalate(ctx, hs)
    _apply_active_faults(ctx, hs, boot_id, facts, reachable and not nothing_read)
    if reachable:
        _gate_unknown(ctx, states)
    if reachable and boot_id and boot_id != hs.get("boot_id"):
        hs["boot_id"] = boot_id
        hs["boot_seen_at"] = iso(now_dt)
    active = _dict(hs.get("active_faults"))
    findings = []
    for fid, f in ctx.findings.items():
        first = _dict(active.get(fid)).get("first_seen") or _dict(f.get("evidence")).get("active_since")
        f["respond_by"] = respond_by(f["severity"], first or now_dt, policy)
        findings.append(f)
    findings.sort(key=lambda f: (SEVERITIES.index(f["severity"]), f["id"]))
    return findings, hs


def _run_checks(
    ctx: _Ctx,
    facts: Dict[str, Any],
    profile: Optional[Dict[str, Any]],
    hs: Dict[str, Any],
    states: Optional[Dict[str, Dict[str, Any]]] = None,
) -> None:
    # a check whose domain could not be read does not fire: "I could not see" is not "it is broken"
    skip = set(unknown_domains(states if states is not None else domain_states(facts, profile, ctx.policy)))
    ctx.ref = parse_time(facts.get("collected_at")) or ctx.now
    boot_id = _boot_id(facts)
    boot_time = _boot_time(facts, ctx.host)
    counts, _floor = _event_filter(ctx, facts, hs, boot_time)
    gpus = _gpus(facts)
    prev_gpus = _dict(_dict(hs.get("gpu")).get("gpus"))
    new_gpus: Dict[str, Any] = dict(prev_gpus)
    new_ports: Dict[str, Any] = dict(_dict(_dict(hs.get("ib")).get("ports")))
    t_gpu = _collected_epoch(facts, _dict(facts.get("gpu")))

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
                {"check": name},
            )

    guarded("gpu.missing", _check_gpu_inventory, ctx, facts, profile)
    xids = _xids_by_bus(
        ctx,
        [
            e
            for e in _list(_dict(facts.get("kernel")).get("events"))
            if isinstance(e, dict) and counts(e, normalize_bus_id(e.get("bus_id")))
        ],
    )
    for g in gpus:
        if g.get("readable") is False:
            continue
        bus = normalize_bus_id(g.get("bus_id"))
        prev = _dict(prev_gpus.get(bus)) if bus else {}
        interval = _rate_base(prev, boot_id, t_gpu)
        if prev and interval is not None and interval < ctx.policy["thresholds"]["pcie"]["min_interval_s"]:
            cur = copy.deepcopy(prev)  # too soon for a rate: keep the older reading
            scratch: Dict[str, Any] = {}
        else:
            cur = {"serial": g.get("serial"), "collected_at": t_gpu, "boot_id": boot_id}
            scratch = cur
        guarded("gpu.ecc", _check_ecc, ctx, g, xids.get(bus, set()))
        guarded("gpu.row_remap", _check_row_remap, ctx, g, xids.get(bus, set()))
        guarded("gpu.retired_pages", _check_retired_pages, ctx, g)
        guarded("gpu.recovery_action", _check_recovery_action, ctx, g)
        guarded("gpu.temperature", _check_temperature, ctx, g)
        guarded("gpu.pcie", _check_pcie, ctx, g, profile, prev, scratch, interval)
        guarded("gpu.nvlink", _check_nvlink, ctx, g, profile, prev, scratch, interval)
        guarded("gpu.fabric", _check_fabric, ctx, g)
        if bus:
            new_gpus[bus] = cur
    guarded("gpu.throttle", _check_throttle, ctx, gpus)
    guarded("gpu.driver", _check_driver, ctx, facts, profile)
    guarded("gpu.diag", _check_diag, ctx, facts)
    guarded("gpu.xid", _check_xid, ctx, facts, hs, counts)
    guarded("nvswitch.sxid", _check_sxid, ctx, facts, counts)
    guarded("ib.port_state", _check_ib_ports, ctx, facts, profile)
    guarded("ib.errors", _check_ib_counters, ctx, facts, hs, new_ports, boot_id)
    guarded("bmc", _check_bmc, ctx, facts)
    guarded("scheduler.node_state", _check_scheduler, ctx, facts)
    guarded("node", _check_node, ctx, facts, profile)
    guarded("collector.error", _check_collector_errors, ctx, facts)
    guarded("drift", _check_drift, ctx, facts, hs.get("baseline") or facts.get("baseline"))
    for fid in [k for k, f in ctx.findings.items() if f["check"] != "collector.error" and finding_domain(f) in skip]:
        del ctx.findings[fid]  # a multi-domain check (drift) that read an unknown domain as empty
        ctx.meta.pop(fid, None)
    hs["gpu"] = {"gpus": new_gpus}
    hs["ib"] = {"ports": new_ports}
