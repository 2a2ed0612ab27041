# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet checkup of an inspection report (report.json ``fleet_summary``; docs/service-report.md "Fleet checkup").

What an operator hands a customer about a running cluster: the versions its nodes run and how far they spread
(driver, CUDA, GPU VBIOS, HCA firmware, OFED, BMC firmware, BIOS, kernel), hardware counts per class (nodes and
GPUs per GPU model, HCAs per adapter type), the open incidents (from the store, when one is configured) and the
top recurring faults of the period (from the store's finding history; without a store, the current findings).

Pure controller code: a report (with node facts) in, a dict out. Store errors propagate as ``StoreError``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Optional

try:
    import sqlalchemy as sa
except ImportError:  # the sanity import test
    sa = None

#: How many hosts off the majority version are named per version key (the count is always complete).
MAX_OUTLIERS = 20
TOP_FAULTS = 10
MAX_OPEN = 25
#: The period of "recurring faults" when none is given: the 30 days before the report.
DEFAULT_DAYS = 30


def _d(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


def _versions_of(facts: Dict[str, Any]) -> Dict[str, List[Any]]:
    """Each version key -> the values this node reports (several for per-GPU and per-HCA versions)."""
    gpu, ib, node, bmc = _d(facts.get("gpu")), _d(facts.get("ib")), _d(facts.get("node")), _d(facts.get("bmc"))
    gpus = [g for g in _l(gpu.get("gpus")) if isinstance(g, dict) and g.get("readable") is not False]
    hcas = [h for h in _l(ib.get("hcas")) if isinstance(h, dict)]
    systems = [s for s in _l(_d(bmc.get("redfish")).get("systems")) if isinstance(s, dict)]
    return {
        "driver": [gpu.get("driver_version")],
        "cuda": [gpu.get("cuda_version")],
        "gpu_vbios": [g.get("vbios_version") for g in gpus],
        "hca_firmware": [h.get("fw_version") for h in hcas],
        "ofed": [ib.get("ofed_version") or node.get("ofed_version")],
        "bmc_firmware": [_d(bmc.get("mc")).get("firmware_revision")],
        "bios": [systems[0].get("bios_version")] if systems else [],
        "kernel": [node.get("kernel")],
    }


def _spread(per_host: Dict[str, List[Any]]) -> Dict[str, Any]:
    """``{values: {version: nodes}, distinct, majority, majority_nodes, nodes_reporting, outliers}``."""
    counts: Counter = Counter()
    for values in per_host.values():
        for v in {str(v) for v in values}:
            counts[v] += 1
    if not counts:
        return {"values": {}, "distinct": 0, "majority": None, "nodes_reporting": 0, "outliers": []}
    majority, top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    off = sorted(h for h, values in per_host.items() if {str(v) for v in values} != {majority})
    return {
        "values": dict(sorted(counts.items())),
        "distinct": len(counts),
        "majority": majority,
        "majority_nodes": top,
        "nodes_reporting": len(per_host),
        "outliers": off[:MAX_OUTLIERS],
        "outliers_total": len(off),
    }


def versions(report: Dict[str, Any]) -> Dict[str, Any]:
    keys: Dict[str, Dict[str, List[Any]]] = {}
    for host, n in sorted(_d(report.get("nodes")).items()):
        facts = _d(_d(n).get("facts"))
        if not facts or facts.get("unreachable"):
            continue
        for key, values in _versions_of(facts).items():
            present = [v for v in values if v not in (None, "")]
            if present:
                keys.setdefault(key, {})[host] = present
    names = ("driver", "cuda", "gpu_vbios", "hca_firmware", "ofed", "bmc_firmware", "bios", "kernel")
    return {k: _spread(keys.get(k, {})) for k in names}


def hardware(report: Dict[str, Any]) -> Dict[str, Any]:
    """Nodes and GPUs per GPU model, HCAs per adapter type, nodes by status."""
    models: Dict[str, Dict[str, int]] = {}
    hcas: Counter = Counter()
    status: Counter = Counter()
    for n in _d(report.get("nodes")).values():
        status[str(_d(n).get("status") or "unknown")] += 1
        facts = _d(_d(n).get("facts"))
        gpus = [g for g in _l(_d(facts.get("gpu")).get("gpus")) if isinstance(g, dict)]
        names = Counter(str(g.get("name")) for g in gpus if g.get("name"))
        model = names.most_common(1)[0][0] if names else "unknown"
        row = models.setdefault(model, {"nodes": 0, "gpus": 0})
        row["nodes"] += 1
        row["gpus"] += len(gpus)
        for h in _l(_d(facts.get("ib")).get("hcas")):
            if isinstance(h, dict):
                hcas[str(h.get("ca_type") or h.get("board_id") or "adapter")] += 1
    return {
        "gpu_models": dict(sorted(models.items())),
        "gpus": sum(m["gpus"] for m in models.values()),
        "hcas": dict(sorted(hcas.items())),
        "nodes": sum(status.values()),
        "nodes_by_status": dict(sorted(status.items())),
    }


def _current_faults(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Without a store: the checks with the most findings in this report (hosts affected)."""
    seen: Dict[str, Dict[str, Any]] = {}
    for host, n in _d(report.get("nodes")).items():
        for f in _l(_d(n).get("findings")):
            if not isinstance(f, dict):
                continue
            row = seen.setdefault(str(f.get("check")), {"check": str(f.get("check")), "occurrences": 0, "hosts": set()})
            row["occurrences"] += 1
            row["hosts"].add(host)
            row["severity"] = min(row.get("severity") or "P9", str(f.get("severity") or "P9"))
    return _top(seen)


def _top(seen: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    rows = [dict(r, hosts=len(r["hosts"])) for r in seen.values()]
    rows.sort(key=lambda r: (-r["occurrences"], -r["hosts"], r["check"]))
    return rows[:TOP_FAULTS]


def _store_faults(conn: Any, t: Any, start: float, end: float) -> List[Dict[str, Any]]:
    fh = t.tables["finding_history"]
    query = (
        sa.select(fh.c.check_id, fh.c.host, fh.c.severity)
        .where(fh.c.first_seen < end, sa.or_(fh.c.cleared_at.is_(None), fh.c.cleared_at >= start))
        .where(fh.c.last_seen >= start)
    )
    seen: Dict[str, Dict[str, Any]] = {}
    for check, host, sev in conn.execute(query):
        row = seen.setdefault(str(check), {"check": str(check), "occurrences": 0, "hosts": set()})
        row["occurrences"] += 1
        row["hosts"].add(host or "")
        row["severity"] = min(row.get("severity") or "P9", str(sev or "P9"))
    return _top(seen)


def _open_incidents(conn: Any, t: Any) -> Dict[str, Any]:
    inc = t.tables["incidents"]
    rows = conn.execute(
        sa.select(inc.c.incident_id, inc.c.severity, inc.c.host, inc.c.title, inc.c.detected_at)
        .where(inc.c.state != "closed")
        .order_by(inc.c.severity, inc.c.detected_at, inc.c.incident_id)
    ).fetchall()
    by_sev = Counter(str(r.severity) for r in rows)
    return {
        "total": len(rows),
        "by_severity": dict(sorted(by_sev.items())),
        "oldest": [
            {
                "incident_id": r.incident_id,
                "severity": r.severity,
                "host": r.host,
                "title": r.title,
                "detected_at": r.detected_at,
            }  # fmt: skip
            for r in rows[:MAX_OPEN]
        ],
    }


def _report_time(report: Dict[str, Any]) -> Optional[float]:
    from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import (  # pylint: disable=import-outside-toplevel
        parse_time,
    )

    when = parse_time(report.get("generated_at"))
    return when.timestamp() if when else None


def store_section(report: Dict[str, Any], store: Any, period: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The part of the fleet summary read from ``store``: ``open_incidents``, ``top_faults`` of ``period`` (default
    the 30 days before the report) from the finding history, ``faults_source`` and ``faults_period``. Merge it into
    ``report["fleet_summary"]`` when the store is known only after the report was built."""
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import (  # pylint: disable=import-outside-toplevel
        ledger_schema,
    )

    if period is None:
        end = (_report_time(report) or 0.0) + 1.0
        period = {"start": end - DEFAULT_DAYS * 86400.0, "end": end, "label": "last %d days" % DEFAULT_DAYS}
    t = ledger_schema.tables()
    with store.read() as conn:
        out = {"open_incidents": _open_incidents(conn, t)}
        out["top_faults"] = _store_faults(conn, t, float(period["start"]), float(period["end"]))
    out["faults_source"] = "store"
    out["faults_period"] = {"start": period["start"], "end": period["end"], "label": period.get("label")}
    return out


def fleet_summary(report: Dict[str, Any], store: Any = None, period: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The ``fleet_summary`` section of ``report`` (whose nodes carry ``facts``). With ``store`` (``_db.Store``):
    ``open_incidents`` and the recurring faults of ``period`` (``_service_report.parse_period``; default the
    30 days before the report) from the finding history (``store_section``); without one, ``open_incidents`` is
    left out and the recurring faults are the current findings (``faults_source`` says which)."""
    out: Dict[str, Any] = {"versions": versions(report), "hardware": hardware(report)}
    if store is None:
        out.update(faults_source="report", top_faults=_current_faults(report))
    else:
        out.update(store_section(report, store, period))
    return out
