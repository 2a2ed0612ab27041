# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node onboarding: pure stage logic (docs/onboarding.md).

Every ``check_*`` function takes plain data (facts per docs/facts.md, findings per docs/findings.md, the
``dcgm`` domain, ``_nccl`` results) and returns a *verdict*::

    {stage, passed: bool, problems: [str, ...], evidence: {...}, remedy: str | None}

``problems`` name each failure precisely (the GPU, the port, the counter, the value and the limit): they become
the Slurm drain reason and the sign-off report. The onboarding record (``<state_dir>/onboarding/<host>.json``)
keeps each stage's verdict so a rerun resumes after the last passed stage.
"""

from __future__ import annotations

import copy
import datetime
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _upgrade

SCHEMA = "gpuops.onboarding/v1"
STAGES = ("inventory", "compliance", "health", "burnin", "baseline", "service")
STAGE_TITLES = {
    "inventory": "1. Inventory vs hardware profile",
    "compliance": "2. Baseline compliance (driver / firmware versions)",
    "health": "3. Health inspection (no P0-P2 findings)",
    "burnin": "4. Burn-in (DCGM diag, NCCL, counter deltas)",
    "baseline": "5. Golden baseline saved",
    "service": "6. Entered service (Slurm, monitoring, sign-off)",
}
SEVERITIES = ("P0", "P1", "P2", "P3", "P4")

#: Clock-event reasons that fail burn-in (the policy's throttle faults; sw_power_cap under load is normal).
DEFAULT_THROTTLE_FAIL = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
#: IB counters whose increase during burn-in fails it (the sysfs names, docs/facts.md ib.counters).
DEFAULT_IB_COUNTERS = (
    "symbol_error",
    "link_downed",
    "link_error_recovery",
    "port_rcv_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_rcv_remote_physical_errors",
)
#: Kernel event kinds that fail burn-in when new.
DEFAULT_EVENT_KINDS = ("xid", "sxid", "fallen_off_bus", "aer", "mlx5_link")


def _d(v: Any) -> Dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: Any) -> List[Any]:
    return v if isinstance(v, list) else []


def _n(v: Any) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v == int(v):
        return str(int(v))
    return str(v)


def verdict(stage: str, problems: List[str], evidence: Dict[str, Any], remedy: Optional[str] = None) -> Dict[str, Any]:
    return {"stage": stage, "passed": not problems, "problems": problems, "evidence": evidence, "remedy": remedy}


def _gpus(facts: Any) -> List[Dict[str, Any]]:
    gpus = [g for g in _l(_d(_d(facts).get("gpu")).get("gpus")) if isinstance(g, dict)]
    return sorted(gpus, key=lambda g: g.get("index") if isinstance(g.get("index"), int) else 1 << 30)


def _gpu_label(g: Dict[str, Any]) -> str:
    if g.get("index") is None:
        return "GPU %s (serial %s)" % (g.get("bus_id"), g.get("serial"))
    return "GPU %s (%s, serial %s)" % (g.get("index"), g.get("bus_id"), g.get("serial"))


def _ports(facts: Any) -> List[Tuple[str, Dict[str, Any]]]:
    out = []
    for h in _l(_d(_d(facts).get("ib")).get("hcas")):
        if not isinstance(h, dict):
            continue
        for p in _l(h.get("ports")):
            if isinstance(p, dict):
                out.append(("%s/%s" % (h.get("name"), p.get("port")), p))
    return out


def _errors(domain: Any) -> List[str]:
    return [
        "%s: %s" % (e.get("kind"), e.get("message"))
        for e in _l(_d(domain).get("errors"))
        if isinstance(e, dict) and e.get("kind") != "unreadable"
    ]


# ------------------------------------------------------------------------------------------ 1. inventory


def check_inventory(facts: Any, profile: Any, acceptance: Any = None) -> Dict[str, Any]:
    """Stage 1: the node's facts vs its class's hardware profile (``gpuops_profiles[class]``) and the onboarding
    acceptance data (``gpu_memory_mib``, ``memory_mib``, ``hca_count``, ``bmc_required``, ``memory_tolerance_pct``).
    """
    facts, profile, acc = _d(facts), _d(profile), _d(acceptance)
    problems: List[str] = []
    if not profile:
        problems.append("no hardware profile for this node class (gpuops_profiles[gpuops_node_class])")
    gpu = _d(facts.get("gpu"))
    gpus = _gpus(facts)
    for msg in _errors(gpu):
        problems.append("gpu facts incomplete: %s" % msg)
    count = gpu.get("count") if isinstance(gpu.get("count"), int) else len(gpus)
    want = profile.get("gpu_count")
    if isinstance(want, int) and count != want:
        problems.append("GPU count %d, profile expects %d" % (count, want))
    for g in gpus:
        if g.get("readable") is False:
            problems.append("%s unreadable: %s" % (_gpu_label(g), g.get("error")))
    model = profile.get("gpu_model")
    if model:
        for g in gpus:
            if g.get("name") and str(model).lower() not in str(g.get("name")).lower():
                problems.append("%s is a %s, profile expects %s" % (_gpu_label(g), g.get("name"), model))
    tol = float(_n(acc.get("memory_tolerance_pct")) or 2.0) / 100.0
    want_mem = _n(acc.get("gpu_memory_mib"))
    if want_mem:
        for g in gpus:
            have = _n(_d(g.get("memory")).get("total_mib"))
            if have is None or have < want_mem * (1 - tol):
                problems.append("%s memory %s MiB, expected %s MiB" % (_gpu_label(g), _fmt(have), _fmt(want_mem)))
    want_host = _n(acc.get("memory_mib"))
    if want_host:
        have = _n(_d(facts.get("node")).get("memory_mib"))
        if have is None or have < want_host * (1 - tol):
            problems.append("host memory %s MiB, expected %s MiB" % (_fmt(have), _fmt(want_host)))
    want_links = profile.get("nvlinks_per_gpu")
    if isinstance(want_links, int):
        for g in gpus:
            links = _l(_d(g.get("nvlink")).get("links"))
            up = sum(1 for lk in links if isinstance(lk, dict) and lk.get("state") == "up")
            if up != want_links:
                problems.append("%s has %d NVLinks up, profile expects %d" % (_gpu_label(g), up, want_links))
    gen, width = profile.get("pcie_gen"), profile.get("pcie_width")
    for g in gpus:
        pcie = _d(g.get("pcie"))
        if isinstance(gen, int) and (_n(pcie.get("gen_max")) or 0) < gen:
            problems.append("%s PCIe gen max %s, profile expects %d" % (_gpu_label(g), pcie.get("gen_max"), gen))
        if isinstance(width, int):
            w = _n(pcie.get("width_current"))
            if w is None:
                w = _n(pcie.get("width_max"))
            if (w or 0) < width:
                problems.append("%s PCIe width x%s, profile expects x%d" % (_gpu_label(g), _fmt(w), width))
    ib = _d(facts.get("ib"))
    for msg in _errors(ib):
        problems.append("ib facts incomplete: %s" % msg)
    hcas = [h for h in _l(ib.get("hcas")) if isinstance(h, dict)]
    want_hcas = acc.get("hca_count")
    if isinstance(want_hcas, int) and len(hcas) != want_hcas:
        problems.append("%d HCAs, expected %d" % (len(hcas), want_hcas))
    ports = _ports(facts)
    want_ports = profile.get("ib_ports")
    active = [name for name, p in ports if p.get("state") == "ACTIVE"]
    if isinstance(want_ports, int) and len(active) != want_ports:
        down = [name for name, p in ports if p.get("state") != "ACTIVE"]
        problems.append(
            "%d IB ports ACTIVE, profile expects %d%s"
            % (len(active), want_ports, (" (not active: %s)" % ", ".join(down)) if down else "")
        )
    elif isinstance(want_ports, list):
        names = {n for n, _p in ports}
        for want_name in want_ports:
            if str(want_name) not in names:
                problems.append("IB port %s missing" % want_name)
    rate = _n(profile.get("ib_rate_gbps"))
    if rate:
        for name, p in ports:
            if p.get("state") == "ACTIVE" and _n(p.get("rate_gbps")) != rate:
                problems.append("IB port %s rate %s Gb/s, profile expects %s" % (name, p.get("rate_gbps"), _fmt(rate)))
    layer = profile.get("ib_link_layer")
    if layer:
        for name, p in ports:
            if p.get("link_layer") and p.get("link_layer") != layer:
                problems.append("IB port %s link layer %s, profile expects %s" % (name, p.get("link_layer"), layer))
    bmc = _d(facts.get("bmc"))
    bmc_ok = bool(bmc.get("source")) and bool(bmc.get("sensors") or bmc.get("mc") or bmc.get("redfish"))
    bmc_errors = _errors(bmc)
    if acc.get("bmc_required", True) and not bmc_ok:
        problems.append("BMC not reachable%s" % ((": " + bmc_errors[0]) if bmc_errors else ""))
    no_serial = [str(g.get("index")) for g in gpus if not g.get("serial")]
    if no_serial:
        problems.append("GPU serial numbers missing for GPU %s" % ", ".join(no_serial))
    evidence = {
        "gpu_count": count,
        "gpu_model": sorted({str(g.get("name")) for g in gpus if g.get("name")}),
        "gpu_serials": {str(g.get("index")): g.get("serial") for g in gpus},
        "gpu_bus_ids": {str(g.get("index")): g.get("bus_id") for g in gpus},
        "vbios": sorted({str(g.get("vbios_version")) for g in gpus if g.get("vbios_version")}),
        "hcas": {
            str(h.get("name")): {
                "node_guid": h.get("node_guid"),
                "serial": h.get("serial"),
                "board_id": h.get("board_id"),
                "fw_version": h.get("fw_version"),
            }
            for h in hcas
        },
        "ib_ports_active": len(active),
        "bmc_reachable": bmc_ok,
        "bmc_source": bmc.get("source"),
        "fru_serials": {
            str(f.get("name")): f.get("serial") for f in _l(bmc.get("fru")) if isinstance(f, dict) and f.get("serial")
        },
        "host_memory_mib": _d(facts.get("node")).get("memory_mib"),
    }
    return verdict("inventory", problems, evidence)


# ------------------------------------------------------------------------------------------ 2. compliance


def upgrade_command(host: str, inventory: Optional[str] = None, ticket: Optional[str] = None) -> str:
    """The exact playbooks/upgrade.yml command that brings ``host`` to its baseline (docs/upgrades.md)."""
    parts = ["ansible-playbook"]
    if inventory:
        parts += ["-i", inventory]
    parts += ["playbooks/upgrade.yml", "-e", "gpuops_targets=%s" % host]
    parts += ["-e", "gpuops_ticket=%s" % (ticket or "<ticket>"), "-e", "gpuops_change_id=<change id>"]
    return " ".join(parts)


def check_compliance(
    facts: Any,
    baseline: Any,
    node_class: Optional[str],
    host: str,
    methods: Any = None,
    inventory: Optional[str] = None,
    ticket: Optional[str] = None,
) -> Dict[str, Any]:
    """Stage 2: installed versions (``_upgrade.current_versions``) vs the class's upgrade baseline. Any step the
    upgrade planner would take (upgrade, downgrade, or verify an unknown version) fails the stage; the remedy is
    the upgrade playbook command."""
    target = _upgrade.target_for(_d(baseline), node_class)
    current = _upgrade.current_versions(facts)
    if target is None:
        return verdict(
            "compliance",
            ["no gpuops_upgrade_baseline entry for node class %s" % node_class],
            {"current": current, "target": None},
        )
    steps = _upgrade.plan_node(current, target, node_class, methods)
    problems = []
    for s in steps:
        if s["action"] == "verify":
            problems.append("%s version unknown (facts do not report it), baseline %s" % (s["component"], s["to"]))
        else:
            targets = " on %s" % ", ".join(str(t) for t in s["targets"]) if s.get("targets") else ""
            problems.append(
                "%s %s%s, baseline %s%s"
                % (s["component"], s["from"], targets, s["to"], (" (downgrade)" if s["downgrade"] else ""))
            )
    remedy = upgrade_command(host, inventory, ticket) if steps else None
    return verdict(
        "compliance",
        problems,
        {"current": current, "target": target, "steps": [s["component"] for s in steps]},
        remedy,
    )


# ------------------------------------------------------------------------------------------ 3. health


def check_health(
    findings: Any, fail_severities: Sequence[str] = ("P0", "P1", "P2"), ignore: Sequence[str] = ()
) -> Dict[str, Any]:
    """Stage 3: the node's own inspection findings; any of ``fail_severities`` fails, except checks in ``ignore``
    (e.g. ``slurm.drain``: onboarding drained the node itself)."""
    problems = []
    counted: Dict[str, int] = {}
    for f in _l(findings):
        if not isinstance(f, dict):
            continue
        sev = f.get("severity")
        counted[str(sev)] = counted.get(str(sev), 0) + 1
        if sev in fail_severities and f.get("check") not in ignore:
            problems.append("%s %s %s: %s" % (sev, f.get("check"), f.get("component"), f.get("message")))
    return verdict("health", problems, {"findings_by_severity": counted, "ignored_checks": list(ignore)})


# ------------------------------------------------------------------------------------------ 4. burn-in


def _event_key(e: Dict[str, Any]) -> Tuple[Any, ...]:
    return (e.get("kind"), e.get("code"), e.get("bus_id"), e.get("timestamp"), e.get("raw") or e.get("message"))


def new_events(before: Any, after: Any, kinds: Sequence[str] = DEFAULT_EVENT_KINDS) -> List[Dict[str, Any]]:
    """Kernel events in ``after`` that ``before`` did not have (multiset difference by kind/code/bus/time/text)."""
    seen: Dict[Tuple[Any, ...], int] = {}
    for e in _l(_d(_d(before).get("kernel")).get("events")):
        if isinstance(e, dict):
            seen[_event_key(e)] = seen.get(_event_key(e), 0) + 1
    out = []
    for e in _l(_d(_d(after).get("kernel")).get("events")):
        if not isinstance(e, dict) or e.get("kind") not in kinds:
            continue
        k = _event_key(e)
        if seen.get(k):
            seen[k] -= 1
            continue
        out.append(e)
    return out


def _delta(a: Any, b: Any) -> Optional[float]:
    x, y = _n(a), _n(b)
    if x is None or y is None:
        return None
    return y - x


def counter_deltas(before: Any, after: Any, limits: Any = None) -> List[str]:
    """Problems from facts taken before and after burn-in: a new Xid/SXid/fall-off/AER/link event, an ECC or
    row-remap delta, a lost GPU, a fault throttle, an IB counter increase or port leaving ACTIVE, NVLink/PCIe
    replay growth. ``limits``: {ib_counters: [...], ib_allowed: {counter: n}, throttle_fail: [...],
    ecc_corrected_allowed: n, event_kinds: [...]}."""
    lim = _d(limits)
    problems: List[str] = []
    kinds = lim.get("event_kinds") or DEFAULT_EVENT_KINDS
    b_gpus = {g.get("bus_id"): g for g in _gpus(before) if g.get("bus_id")}
    for e in new_events(before, after, kinds):
        what = e.get("kind")
        if what in ("xid", "sxid") and e.get("code") is not None:
            what = "%s %s" % ("Xid" if what == "xid" else "SXid", e.get("code"))
        where = ""
        idx = e.get("gpu_index")
        if idx is None:
            idx = _d(b_gpus.get(e.get("bus_id"))).get("index")
        if idx is not None:
            where = " on GPU %s (%s)" % (idx, e.get("bus_id"))
        elif e.get("bus_id"):
            where = " on GPU %s" % e.get("bus_id")
        problems.append("new %s%s during burn-in: %s" % (what, where, str(e.get("message") or "")[:160]))
    a_gpus = _gpus(after)
    a_bus = {g.get("bus_id") for g in a_gpus}
    gone = [g for bus, g in sorted(b_gpus.items()) if bus not in a_bus]
    if gone and any(g.get("readable") is False for g in a_gpus):
        # nvidia-smi stops listing the other GPUs after a lost one: one problem, not one per GPU
        problems.append("only %d of %d GPUs listed after burn-in (a GPU was lost)" % (len(a_gpus), len(b_gpus)))
    else:
        for g in gone:
            problems.append("%s disappeared during burn-in" % _gpu_label(g))
    corrected_ok = _n(lim.get("ecc_corrected_allowed")) or 0
    fail_thr = lim.get("throttle_fail") or DEFAULT_THROTTLE_FAIL
    for g in a_gpus:
        label = _gpu_label(b_gpus.get(g.get("bus_id")) or g)
        if g.get("readable") is False:
            problems.append("%s unreadable after burn-in: %s" % (label, g.get("error")))
            continue
        b = b_gpus.get(g.get("bus_id"))
        if b is not None:
            for scope in ("volatile", "aggregate"):
                for kind in ("uncorrected", "corrected"):
                    dv = _delta(_d(_d(b.get("ecc")).get(scope)).get(kind), _d(_d(g.get("ecc")).get(scope)).get(kind))
                    allowed = 0 if kind == "uncorrected" else corrected_ok
                    if dv is not None and dv > allowed:
                        problems.append("%s ECC %s %s +%s during burn-in" % (label, scope, kind, _fmt(dv)))
                        break
            rb, ra = _d(b.get("remapped_rows")), _d(g.get("remapped_rows"))
            dv = _delta(rb.get("uncorrectable"), ra.get("uncorrectable"))
            if dv is not None and dv > 0:
                problems.append("%s remapped rows (uncorrectable) +%s during burn-in" % (label, _fmt(dv)))
            if ra.get("pending") and not rb.get("pending"):
                problems.append("%s row remap pending after burn-in" % label)
            dv = _delta(_d(b.get("pcie")).get("replay_counter"), _d(g.get("pcie")).get("replay_counter"))
            replay_ok = _n(lim.get("pcie_replay_allowed")) or 0
            if dv is not None and dv > replay_ok:
                problems.append("%s PCIe replay counter +%s during burn-in" % (label, _fmt(dv)))
            bl = {lk.get("link"): lk for lk in _l(_d(b.get("nvlink")).get("links")) if isinstance(lk, dict)}
            for lk in _l(_d(g.get("nvlink")).get("links")):
                if not isinstance(lk, dict) or lk.get("link") not in bl:
                    continue
                if bl[lk.get("link")].get("state") == "up" and lk.get("state") != "up":
                    problems.append("%s NVLink %s went %s during burn-in" % (label, lk.get("link"), lk.get("state")))
                for key, val in sorted(_d(lk.get("errors")).items()):
                    dv = _delta(_d(bl[lk.get("link")].get("errors")).get(key), val)
                    if dv is not None and dv > 0:
                        problems.append(
                            "%s NVLink %s %s errors +%s during burn-in" % (label, lk.get("link"), key, _fmt(dv))
                        )
        bad = [r for r in _l(_d(g.get("throttle")).get("active")) if r in fail_thr]
        if bad:
            problems.append("%s throttled (%s) after burn-in" % (label, ", ".join(bad)))
    watch = lim.get("ib_counters") or DEFAULT_IB_COUNTERS
    allowed = _d(lim.get("ib_allowed"))
    before_ports = dict(_ports(before))
    for name, p in _ports(after):
        bp = before_ports.get(name)
        if bp is None:
            continue
        if bp.get("state") == "ACTIVE" and p.get("state") != "ACTIVE":
            problems.append("IB port %s went %s during burn-in" % (name, p.get("state")))
        bc, ac = _d(bp.get("counters")), _d(p.get("counters"))
        for c in watch:
            dv = _delta(bc.get(c), ac.get(c))
            if dv is not None and dv > (_n(allowed.get(c)) or 0):
                problems.append("IB port %s %s +%s during burn-in" % (name, c, _fmt(dv)))
    return problems


def check_dcgm(dcgm: Any, facts: Any = None, fail_on_warn: bool = False) -> List[str]:
    """Problems from a ``dcgm`` domain result (gpuops.cluster.dcgm_diag_info): a run that could not finish
    (timeout: DCGM hangs on bad GPUs), and each failing GPU named with its tests and messages."""
    dcgm = _d(dcgm)
    problems = []
    by_index = {str(g.get("index")): g for g in _gpus(facts)}
    for e in _l(dcgm.get("errors")):
        if isinstance(e, dict):
            if e.get("kind") == "timeout":
                problems.append("dcgmi diag -r %s timed out: %s" % (dcgm.get("level"), e.get("message")))
            else:
                problems.append(
                    "dcgmi diag -r %s could not run (%s): %s" % (dcgm.get("level"), e.get("kind"), e.get("message"))
                )
    if not _l(dcgm.get("errors")) and dcgm.get("overall") is None and not _l(dcgm.get("tests")):
        problems.append("dcgmi diag produced no result")
    bad = ("fail", "warn") if fail_on_warn else ("fail",)
    for idx, res in sorted(_d(dcgm.get("gpus")).items(), key=lambda kv: str(kv[0])):
        if res not in bad:
            continue
        tests = []
        msgs: List[str] = []
        for t in _l(dcgm.get("tests")):
            if isinstance(t, dict) and _d(t.get("gpus")).get(idx) in bad:
                tests.append(str(t.get("name")))
                msgs += [m for m in _l(t.get("messages")) if isinstance(m, str) and ("GPU %s" % idx) in m]
        g = by_index.get(str(idx))
        label = _gpu_label(g) if g else "GPU %s" % idx
        problems.append(
            "dcgmi diag %s %s%s%s"
            % (label, res, (" in " + ", ".join(tests)) if tests else "", (": " + msgs[0][:200]) if msgs else "")
        )
    if dcgm.get("overall") in bad and not any(" %s" % r in p for p in problems for r in bad):
        problems.append("dcgmi diag overall result %s" % dcgm.get("overall"))
    return problems


def check_nccl(runs: Any, min_busbw_gbps: Any, metric: str = "avg") -> Tuple[List[str], List[Dict[str, Any]]]:
    """Problems from NCCL runs ``[{name, result, min_busbw_gbps}]`` (``result``: a ``_nccl`` result; a run's own
    threshold beats ``min_busbw_gbps``): errors (timeout, failure),
    wrong results, and bus bandwidth (``avg``: the tool's Avg line; ``peak``: the best row) below the threshold."""
    problems: List[str] = []
    table = []
    for run in _l(runs):
        if not isinstance(run, dict):
            continue
        name = run.get("name") or "all_reduce_perf"
        r = _d(run.get("result"))
        value = r.get("max_busbw_gbps") if metric == "peak" else r.get("avg_busbw_gbps")
        thr = _n(run.get("min_busbw_gbps")) if run.get("min_busbw_gbps") is not None else _n(min_busbw_gbps)
        table.append(
            {"name": name, "busbw_gbps": value, "threshold_gbps": thr, "wrong": r.get("wrong"), "hosts": r.get("hosts")}
        )
        errs = [e for e in _l(r.get("errors")) if isinstance(e, dict)]
        fatal = [e for e in errs if e.get("kind") in ("timeout", "tool_error", "missing", "internal")]
        for e in fatal:
            word = "timed out" if e.get("kind") == "timeout" else "failed (%s)" % e.get("kind")
            problems.append("NCCL %s %s: %s" % (name, word, e.get("message")))
        if fatal:
            continue
        if r.get("wrong"):
            problems.append("NCCL %s: %s wrong results (data corruption)" % (name, r.get("wrong")))
        if r.get("out_of_bounds"):
            problems.append("NCCL %s: %s out-of-bounds values" % (name, r.get("out_of_bounds")))
        if value is None:
            problems.append(
                "NCCL %s: no bus bandwidth in the output (%s)"
                % (name, "; ".join(str(e.get("message")) for e in errs) or "no result rows")
            )
        elif thr is not None and float(value) < thr:
            problems.append(
                "NCCL %s: %s bus bandwidth %.1f GB/s below the threshold %s GB/s"
                % (name, metric, float(value), _fmt(thr))
            )
    return problems, table


def check_burnin(
    before: Any,
    after: Any,
    dcgm: Any = None,
    nccl_runs: Any = None,
    thresholds: Any = None,
    stress: Any = None,
) -> Dict[str, Any]:
    """Stage 4 verdict. ``thresholds``: {nccl_min_busbw_gbps, nccl_metric, dcgm_fail_on_warn, plus the
    counter_deltas limits}. ``dcgm``/``stress`` None = not run (skipped by configuration)."""
    th = _d(thresholds)
    problems: List[str] = []
    if dcgm is not None:
        problems += check_dcgm(dcgm, after or before, bool(th.get("dcgm_fail_on_warn")))
    nccl_problems, table = check_nccl(nccl_runs, th.get("nccl_min_busbw_gbps"), str(th.get("nccl_metric") or "avg"))
    problems += nccl_problems
    st = _d(stress)
    if stress is not None and (st.get("timed_out") or st.get("rc") not in (0, None) or st.get("failed")):
        problems.append("GPU stress run failed: %s" % (st.get("msg") or "rc %s" % st.get("rc")))
    if not _d(after):
        problems.append("no facts after burn-in (node unreachable?)")
    else:
        problems += counter_deltas(before, after, th)
    evidence = {
        "dcgm": None
        if dcgm is None
        else {
            "level": _d(dcgm).get("level"),
            "overall": _d(dcgm).get("overall"),
            "gpus": _d(dcgm).get("gpus"),
            "errors": _l(_d(dcgm).get("errors")),
        },
        "nccl": table,
        "stress": stress,
        "new_events": len(new_events(before, after, th.get("event_kinds") or DEFAULT_EVENT_KINDS)),
    }
    return verdict("burnin", problems, evidence)


# ------------------------------------------------------------------------------------------ 6. service


def check_slurm_node(nodes: Any, host: str, profile: Any) -> Dict[str, Any]:
    """The node's definition as ``scontrol show node`` reports it (``_slurm_parse.parse_show_node``): it exists,
    is in a partition, its GRES has the profile's GPU count, and slurmd responds."""
    node = next((n for n in _l(nodes) if isinstance(n, dict) and n.get("name") == host), None)
    problems = []
    if node is None:
        return verdict("service", ["Slurm does not know node %s" % host], {})
    if not node.get("partitions"):
        problems.append("node %s is in no Slurm partition" % host)
    want = _d(profile).get("gpu_count")
    if isinstance(want, int) and node.get("gres_gpus") != want:
        problems.append(
            "Slurm Gres=%s gives %s GPUs, profile expects %d" % (node.get("gres"), node.get("gres_gpus"), want)
        )
    flags = _l(node.get("flags"))
    for bad in ("NOT_RESPONDING", "INVALID_REG", "FAIL"):
        if bad in flags or node.get("base_state") == bad:
            problems.append("node %s is %s in Slurm" % (host, node.get("state")))
    if node.get("base_state") == "DOWN":
        problems.append("node %s is DOWN in Slurm (reason: %s)" % (host, node.get("reason")))
    ev = {k: node.get(k) for k in ("state", "gres", "gres_gpus", "partitions", "reason")}
    return verdict("service", problems, ev)


def prometheus_text(record: Any, now_ts: Optional[float] = None) -> str:
    """node_exporter textfile metrics for one node's onboarding record."""
    rec = _d(record)
    host = str(rec.get("host"))
    lines = [
        "# HELP gpuops_onboard_stage_passed Onboarding stage passed (1), failed (0); absent when not run.",
        "# TYPE gpuops_onboard_stage_passed gauge",
    ]
    for name in STAGES:
        st = _d(_d(rec.get("stages")).get(name))
        if st.get("status") in ("passed", "failed"):
            lines.append(
                'gpuops_onboard_stage_passed{host="%s",stage="%s"} %d' % (host, name, st["status"] == "passed")
            )
    lines += [
        "# HELP gpuops_onboard_accepted Node accepted into service by onboarding.",
        "# TYPE gpuops_onboard_accepted gauge",
        'gpuops_onboard_accepted{host="%s"} %d' % (host, rec.get("status") == "accepted"),
    ]
    for t in _l(_d(_d(_d(rec.get("stages")).get("burnin")).get("evidence")).get("nccl")):
        if isinstance(t, dict) and _n(t.get("busbw_gbps")) is not None:
            lines += (
                [
                    "# HELP gpuops_onboard_nccl_busbw_gbps NCCL all_reduce_perf bus bandwidth at burn-in.",
                    "# TYPE gpuops_onboard_nccl_busbw_gbps gauge",
                ]
                if not any("gpuops_onboard_nccl_busbw_gbps gauge" in ln for ln in lines)
                else []
            )
            lines.append(
                'gpuops_onboard_nccl_busbw_gbps{host="%s",test="%s"} %s' % (host, t.get("name"), _fmt(t["busbw_gbps"]))
            )
    ts = now_ts if now_ts is not None else datetime.datetime.now(datetime.timezone.utc).timestamp()
    lines += [
        "# HELP gpuops_onboard_timestamp_seconds When the onboarding record was last written.",
        "# TYPE gpuops_onboard_timestamp_seconds gauge",
        'gpuops_onboard_timestamp_seconds{host="%s"} %d' % (host, int(ts)),
    ]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------ record


def _now_iso(now: Any = None) -> str:
    if isinstance(now, str) and now:
        return now
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def new_record(host: str, node_class: Optional[str] = None) -> Dict[str, Any]:
    return {
        "schema": SCHEMA,
        "host": host,
        "node_class": node_class,
        "status": "new",
        "stages": {},
        "history": [],
        "started_at": None,
        "accepted_at": None,
        "updated_at": None,
    }


def record_path(state_dir: str, host: str) -> str:
    return os.path.join(state_dir, "onboarding", "%s.json" % host)


def baseline_path(state_dir: str, host: str) -> str:
    return os.path.join(state_dir, "baselines", "%s.json" % host)


def load_record(state_dir: str, host: str) -> Dict[str, Any]:
    """The node's onboarding record, or a new one. A corrupt file raises ValueError (never silently restarts)."""
    path = record_path(state_dir, host)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return new_record(host)
    except (OSError, ValueError) as exc:
        raise ValueError("onboarding record %s is unreadable: %s" % (path, exc)) from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError("onboarding record %s is not a %s document" % (path, SCHEMA))
    rec = new_record(host)
    rec.update(data)
    return rec


def resume_from(record: Any) -> int:
    """Index in STAGES of the first stage not passed (len(STAGES): every stage passed)."""
    stages = _d(_d(record).get("stages"))
    for i, name in enumerate(STAGES):
        if _d(stages.get(name)).get("status") != "passed":
            return i
    return len(STAGES)


def record_stage(
    record: Any, result: Dict[str, Any], by: Optional[str] = None, now: Any = None, ticket: Optional[str] = None
) -> Dict[str, Any]:
    """A copy of ``record`` with the stage verdict recorded (status passed/failed, attempt, who, when).
    A failure invalidates the later stages' earlier passes (they must run again after it)."""
    rec = copy.deepcopy(_d(record))
    stages = rec.setdefault("stages", {})
    name = result["stage"]
    if name not in STAGES:
        raise ValueError("unknown onboarding stage %r (known: %s)" % (name, ", ".join(STAGES)))
    when = _now_iso(now)
    prev = _d(stages.get(name))
    entry = {
        "status": "passed" if result.get("passed") else "failed",
        "attempt": int(prev.get("attempt") or 0) + 1,
        "at": when,
        "by": by,
        "ticket": ticket,
        "problems": list(result.get("problems") or []),
        "evidence": result.get("evidence") or {},
        "remedy": result.get("remedy"),
    }
    stages[name] = entry
    if not result.get("passed"):
        for later in STAGES[STAGES.index(name) + 1 :]:
            if _d(stages.get(later)).get("status") == "passed":
                stages[later] = dict(stages[later], status="stale")
    rec.setdefault("history", []).append(
        {"stage": name, "status": entry["status"], "at": when, "by": by, "problems": entry["problems"][:10]}
    )
    rec["history"] = rec["history"][-100:]
    rec["started_at"] = rec.get("started_at") or when
    rec["updated_at"] = when
    if ticket:
        rec["ticket"] = ticket
    if not result.get("passed"):
        rec["status"] = "failed"
        rec["failed_stage"] = name
        rec["reason"] = "onboarding %s failed: %s" % (name, "; ".join(entry["problems"])[:400])
    elif resume_from(rec) == len(STAGES):
        rec["status"] = "accepted"
        rec["accepted_at"] = when
        rec["failed_stage"] = None
        rec["reason"] = None
    else:
        rec["status"] = "in_progress"
        rec["failed_stage"] = None
        rec["reason"] = None
    return rec


def drain_reason(record: Any, max_len: int = 200) -> str:
    """A one-line Slurm reason: the failed stage and its first problems (Slurm reasons are short)."""
    rec = _d(record)
    stage = rec.get("failed_stage") or "?"
    probs = _l(_d(_d(rec.get("stages")).get(stage)).get("problems"))
    text = "onboard %s failed: %s" % (stage, "; ".join(str(p) for p in probs) or "no detail")
    text = text.replace("\n", " ")
    return text if len(text) <= max_len else text[: max_len - 3] + "..."


def render_signoff(record: Any) -> str:
    """Markdown sign-off report of one node: each stage, its verdict, evidence, who and when."""
    rec = _d(record)
    out = [
        "# Onboarding sign-off: %s" % rec.get("host"),
        "",
        "| | |",
        "|---|---|",
        "| node class | %s |" % rec.get("node_class"),
        "| status | **%s** |" % rec.get("status"),
        "| ticket | %s |" % (rec.get("ticket") or ""),
        "| started | %s |" % rec.get("started_at"),
        "| accepted | %s |" % (rec.get("accepted_at") or ""),
        "",
        "| stage | result | attempt | when | by |",
        "|---|---|---|---|---|",
    ]
    stages = _d(rec.get("stages"))
    for name in STAGES:
        st = _d(stages.get(name))
        out.append(
            "| %s | %s | %s | %s | %s |"
            % (
                STAGE_TITLES[name],
                st.get("status") or "not run",
                st.get("attempt") or "",
                st.get("at") or "",
                st.get("by") or "",
            )
        )
    for name in STAGES:
        st = _d(stages.get(name))
        if not st:
            continue
        out += ["", "## %s: %s" % (STAGE_TITLES[name], st.get("status"))]
        for p in _l(st.get("problems")):
            out.append("- FAIL: %s" % p)
        if st.get("remedy"):
            out.append("- remedy: `%s`" % st.get("remedy"))
        ev = st.get("evidence")
        if ev:
            out += ["", "```json", json.dumps(ev, indent=1, sort_keys=True, default=str)[:6000], "```"]
    return "\n".join(out) + "\n"
