# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger's part of an inspection run (``gpuops.cluster.inspect_cluster``, docs/service.md).

Before the reports are written, :func:`prepare` opens the store, loads the audit trail's new records
(``_ledger_audit.ingest_audit``) and puts the open incidents' SLA clocks into the report: a ``service.sla`` cluster
finding per breached or at-risk clock and ``report["service"]`` (rendered as ``gpuops_incident_sla_*`` metrics in
gpuops.prom). After the reports are written, :func:`record` writes the run (``_ledger.record_run``). A store that
cannot be used raises ``StoreError``; :func:`prepare` keeps it for the caller so that the reports are still written
before the run stops.
"""

from __future__ import annotations

import os
import uuid
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import (
    audit as _audit,
    ledger as _ledger,
    ledger_audit as _ledger_audit,
    ledger_incidents as _ledger_incidents,
    ledger_windows as _ledger_windows,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import fleet_summary as _fleet_summary
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import StoreError, open_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.report import SEVERITIES


def audit_log(state_dir: Optional[str]) -> Optional[str]:
    """The audit log the roles write (``$GPUOPS_AUDIT_LOG`` or ``<state_dir>/audit/audit.log``); None without one."""
    if os.environ.get("GPUOPS_AUDIT_LOG"):
        return os.environ["GPUOPS_AUDIT_LOG"]
    return _audit.default_log_path(state_dir) if state_dir else None


def service_block(incidents: List[Dict[str, Any]], now: float) -> Dict[str, Any]:
    """report["service"]: the open incidents and each clock's seconds remaining (negative: late) and breach."""
    clocks = []
    for inc in incidents:
        for c in inc.get("clocks") or []:
            if c["due"] is None or c["at"] is not None:
                continue  # no target, or the step was taken: nothing is counting down
            clocks.append(
                {
                    "incident": inc["incident_id"],
                    "severity": inc["severity"],
                    "clock": c["clock"],
                    "remaining_s": round(c["due"] - now, 1),
                    "breached": c["state"] == "breached",
                    "at_risk": c["state"] == "at_risk",
                }
            )
    return {"open_incidents": len(incidents), "sla_clocks": clocks}


def add_findings(report: Dict[str, Any], findings: List[Dict[str, Any]]) -> None:
    """Append cluster findings to a built report (its severity counts included)."""
    summary = report["summary"]
    summary["cluster_findings"] = list(summary.get("cluster_findings") or []) + findings
    for f in findings:
        if f["severity"] in SEVERITIES:
            summary["severity"][f["severity"]] = summary["severity"].get(f["severity"], 0) + 1


def prepare(
    report: Dict[str, Any], state_dir: Optional[str], db_url: Optional[str], sla: Dict[str, Any]
) -> Dict[str, Any]:
    """Open the store, load the audit trail, add the SLA findings and ``service`` block to ``report``.
    Returns {store, audit} or {error} (a StoreError message) when the store cannot be used."""
    now = _ledger.report_time(report)
    try:
        store = open_store(state_dir=state_dir, db_url=db_url)
        log = audit_log(state_dir)
        audit = _ledger_audit.ingest_audit(store, log) if log else {"loaded": 0, "moved": []}
        incidents = _ledger_incidents.open_clocks(store, sla, now)
    except StoreError as exc:
        return {"error": str(exc)}
    add_findings(report, _ledger_incidents.sla_findings(incidents))
    report["service"] = service_block(incidents, now)
    if isinstance(report.get("fleet_summary"), dict):  # the checkup: open incidents, faults of the last 30 days
        try:
            report["fleet_summary"].update(_fleet_summary.store_section(report, store))
        except StoreError as exc:
            return {"error": str(exc)}
    return {"store": store, "audit": audit}


def record(prepared: Dict[str, Any], report: Dict[str, Any], sla: Dict[str, Any]) -> Dict[str, Any]:
    """Write the run (raises StoreError, also the one :func:`prepare` kept), and the maintenance windows of the
    hosts in ``prepared["windows_by_host"]`` (their occurrences around the run's time) before it."""
    if prepared.get("error"):
        raise StoreError(prepared["error"])
    store = prepared["store"]
    try:
        windows = _ledger_windows.occurrences(prepared.get("windows_by_host") or {}, _ledger.report_time(report))
        written = _ledger_windows.record_windows(store, windows["rows"])
        # a fresh id per run: two inspections within the same second are two runs (generated_at has 1 s resolution)
        out = _ledger.record_run(store, report, run_id="inspect-" + uuid.uuid4().hex[:24], sla=sla)
        out["maintenance_windows"] = dict(written, invalid=windows["invalid"])
        # retention is policy data (sla.retention_days, default 400): each recorded run trims what fell out of it
        out["pruned"] = _ledger.prune(store, {"sla": sla}, out.get("at"))
    finally:
        store.close()
    out["audit_loaded"] = prepared["audit"]["loaded"]
    out["clocks_moved_by_audit"] = prepared["audit"]["moved"]
    return out
