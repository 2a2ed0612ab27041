# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node onboarding, stage 4: burn-in (DCGM diag, NCCL, counter deltas between facts before and after).

Takes the ``dcgm`` domain (gpuops.cluster.dcgm_diag_info), ``_nccl`` results and two sets of facts; returns a
verdict like the other stage checks (``_onboard_checks.verdict``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard.checks import (
    _d,
    _fmt,
    _l,
    _n,
    gpu_label,
    gpus_of,
    ports_of,
    verdict,
)

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


def _event_problems(before: Any, after: Any, kinds: Sequence[str], b_gpus: Dict[Any, Dict[str, Any]]) -> List[str]:
    problems = []
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
    return problems


def _memory_deltas(label: str, b: Dict[str, Any], g: Dict[str, Any], lim: Dict[str, Any]) -> List[str]:
    """ECC (first failing kind per scope), row remaps and PCIe replays of one GPU."""
    problems = []
    corrected_ok = _n(lim.get("ecc_corrected_allowed")) or 0
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
    if dv is not None and dv > (_n(lim.get("pcie_replay_allowed")) or 0):
        problems.append("%s PCIe replay counter +%s during burn-in" % (label, _fmt(dv)))
    return problems


def _nvlink_deltas(label: str, b: Dict[str, Any], g: Dict[str, Any]) -> List[str]:
    problems = []
    bl = {lk.get("link"): lk for lk in _l(_d(b.get("nvlink")).get("links")) if isinstance(lk, dict)}
    for lk in _l(_d(g.get("nvlink")).get("links")):
        if not isinstance(lk, dict) or lk.get("link") not in bl:
            continue
        if bl[lk.get("link")].get("state") == "up" and lk.get("state") != "up":
            problems.append("%s NVLink %s went %s during burn-in" % (label, lk.get("link"), lk.get("state")))
        for key, val in sorted(_d(lk.get("errors")).items()):
            dv = _delta(_d(bl[lk.get("link")].get("errors")).get(key), val)
            if dv is not None and dv > 0:
                problems.append("%s NVLink %s %s errors +%s during burn-in" % (label, lk.get("link"), key, _fmt(dv)))
    return problems


def _gpu_deltas(b_gpus: Dict[Any, Dict[str, Any]], a_gpus: List[Dict[str, Any]], lim: Dict[str, Any]) -> List[str]:
    problems: List[str] = []
    a_bus = {g.get("bus_id") for g in a_gpus}
    gone = [g for bus, g in sorted(b_gpus.items()) if bus not in a_bus]
    if gone and any(g.get("readable") is False for g in a_gpus):
        # nvidia-smi stops listing the other GPUs after a lost one: one problem, not one per GPU
        problems.append("only %d of %d GPUs listed after burn-in (a GPU was lost)" % (len(a_gpus), len(b_gpus)))
    else:
        problems += ["%s disappeared during burn-in" % gpu_label(g) for g in gone]
    fail_thr = lim.get("throttle_fail") or DEFAULT_THROTTLE_FAIL
    for g in a_gpus:
        label = gpu_label(b_gpus.get(g.get("bus_id")) or g)
        if g.get("readable") is False:
            problems.append("%s unreadable after burn-in: %s" % (label, g.get("error")))
            continue
        b = b_gpus.get(g.get("bus_id"))
        if b is not None:
            problems += _memory_deltas(label, b, g, lim) + _nvlink_deltas(label, b, g)
        bad = [r for r in _l(_d(g.get("throttle")).get("active")) if r in fail_thr]
        if bad:
            problems.append("%s throttled (%s) after burn-in" % (label, ", ".join(bad)))
    return problems


def _ib_deltas(before: Any, after: Any, lim: Dict[str, Any]) -> List[str]:
    problems = []
    watch = lim.get("ib_counters") or DEFAULT_IB_COUNTERS
    allowed = _d(lim.get("ib_allowed"))
    before_ports = dict(ports_of(before))
    for name, p in ports_of(after):
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


def counter_deltas(before: Any, after: Any, limits: Any = None) -> List[str]:
    """Problems from facts taken before and after burn-in: a new Xid/SXid/fall-off/AER/link event, an ECC or
    row-remap delta, a lost GPU, a fault throttle, an IB counter increase or port leaving ACTIVE, NVLink/PCIe
    replay growth. ``limits``: {ib_counters: [...], ib_allowed: {counter: n}, throttle_fail: [...],
    ecc_corrected_allowed: n, pcie_replay_allowed: n, event_kinds: [...]}."""
    lim = _d(limits)
    b_gpus = {g.get("bus_id"): g for g in gpus_of(before) if g.get("bus_id")}
    problems = _event_problems(before, after, lim.get("event_kinds") or DEFAULT_EVENT_KINDS, b_gpus)
    problems += _gpu_deltas(b_gpus, gpus_of(after), lim)
    return problems + _ib_deltas(before, after, lim)


def _dcgm_gpu_problem(dcgm: Dict[str, Any], idx: Any, res: str, bad: Tuple[str, ...], g: Any) -> str:
    tests = []
    msgs: List[str] = []
    for t in _l(dcgm.get("tests")):
        if isinstance(t, dict) and _d(t.get("gpus")).get(idx) in bad:
            tests.append(str(t.get("name")))
            msgs += [m for m in _l(t.get("messages")) if isinstance(m, str) and ("GPU %s" % idx) in m]
    label = gpu_label(g) if g else "GPU %s" % idx
    return "dcgmi diag %s %s%s%s" % (
        label,
        res,
        (" in " + ", ".join(tests)) if tests else "",
        (": " + msgs[0][:200]) if msgs else "",
    )


def check_dcgm(dcgm: Any, facts: Any = None, fail_on_warn: bool = False) -> List[str]:
    """Problems from a ``dcgm`` domain result (gpuops.cluster.dcgm_diag_info): a run that could not finish
    (timeout: DCGM hangs on bad GPUs), and each failing GPU named with its tests and messages."""
    dcgm = _d(dcgm)
    problems = []
    by_index = {str(g.get("index")): g for g in gpus_of(facts)}
    for e in _l(dcgm.get("errors")):
        if not isinstance(e, dict):
            continue
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
        if res in bad:
            problems.append(_dcgm_gpu_problem(dcgm, idx, res, bad, by_index.get(str(idx))))
    if dcgm.get("overall") in bad and not any(" %s" % r in p for p in problems for r in bad):
        problems.append("dcgmi diag overall result %s" % dcgm.get("overall"))
    return problems


def _nccl_run(run: Dict[str, Any], min_busbw_gbps: Any, metric: str) -> Tuple[List[str], Dict[str, Any]]:
    """Problems and the table row of one NCCL run."""
    name = run.get("name") or "all_reduce_perf"
    r = _d(run.get("result"))
    value = r.get("max_busbw_gbps") if metric == "peak" else r.get("avg_busbw_gbps")
    thr = _n(run.get("min_busbw_gbps")) if run.get("min_busbw_gbps") is not None else _n(min_busbw_gbps)
    row = {"name": name, "busbw_gbps": value, "threshold_gbps": thr, "wrong": r.get("wrong"), "hosts": r.get("hosts")}
    errs = [e for e in _l(r.get("errors")) if isinstance(e, dict)]
    fatal = [e for e in errs if e.get("kind") in ("timeout", "tool_error", "missing", "internal")]
    problems = []
    for e in fatal:
        word = "timed out" if e.get("kind") == "timeout" else "failed (%s)" % e.get("kind")
        problems.append("NCCL %s %s: %s" % (name, word, e.get("message")))
    if fatal:
        return problems, row
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
            "NCCL %s: %s bus bandwidth %.1f GB/s below the threshold %s GB/s" % (name, metric, float(value), _fmt(thr))
        )
    return problems, row


def check_nccl(runs: Any, min_busbw_gbps: Any, metric: str = "avg") -> Tuple[List[str], List[Dict[str, Any]]]:
    """Problems from NCCL runs ``[{name, result, min_busbw_gbps}]`` (``result``: a ``_nccl`` result; a run's own
    threshold beats ``min_busbw_gbps``): errors (timeout, failure),
    wrong results, and bus bandwidth (``avg``: the tool's Avg line; ``peak``: the best row) below the threshold."""
    problems: List[str] = []
    table = []
    for run in _l(runs):
        if isinstance(run, dict):
            probs, row = _nccl_run(run, min_busbw_gbps, metric)
            problems += probs
            table.append(row)
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
    d = _d(dcgm)
    evidence = {
        "dcgm": None
        if dcgm is None
        else {
            "level": d.get("level"),
            "overall": d.get("overall"),
            "gpus": d.get("gpus"),
            "errors": _l(d.get("errors")),
        },
        "nccl": table,
        "stress": stress,
        "new_events": len(new_events(before, after, th.get("event_kinds") or DEFAULT_EVENT_KINDS)),
    }
    return verdict("burnin", problems, evidence)
