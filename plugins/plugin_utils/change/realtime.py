# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the real-time path records and may act on (docs/alerting.md "Incidents, repeats and suppression").

- :func:`alert_events`: the EDA source's sanitized alerts (``ansible_eda.event.payload.alerts``) -> the ledger's
  real-time events (``ledger_incidents.record_realtime``). The fault is named by the alert's own labels (``check``,
  ``component``, ``code``, ``severity``: the collection's rules carry them); an alert without a ``check`` label
  (an exporter's own alert such as GpuXid79) is named by its runbook catalogue entry's first ``codes`` pair (else
  its first ``check``); one without a ``severity`` label is not recorded (the ledger does not guess a severity) and
  its node is still acted on.
  ``detected_at`` is the alert's ``startsAt`` (the time Prometheus saw the condition), else the call's time. The
  node health check's drain reaches the ledger this way: its textfile series fire GpuopsNodeHealthFailed (source
  ``health_check``; the series name check and component, no code: the ledger matches them by check and component).
- :func:`suppressions`: host -> why the real-time path leaves it alone: an inventory maintenance window in force
  (``gpuops_maintenance_windows``, docs/windows.md), an unreleased isolation-guard claim of another run (a
  rolling upgrade draining it), or an upgrade run in progress whose plan holds the host (``<state_dir>/upgrades/
  <run>/plan.json`` without its ``report.json``, younger than the guard's claim TTL).

Pure controller code, no Ansible imports.
"""

from __future__ import annotations

import datetime
import glob
import json
import os
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _runbooks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import guard as _guard
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import windows as _windows
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state_store as _state_store

#: the node health check's own alerts (its textfile series, docs/health_check.md): their source is the health check
HEALTH_CHECK_ALERTS = ("GpuopsNodeHealth",)
#: an upgrade run older than this without its report died: it owns nothing any more (the guard's claim TTL)
UPGRADE_TTL_S = float(_guard.DEFAULT_POLICY["claim_ttl_s"])


#: RFC 3339 as Alertmanager writes startsAt (Go's RFC3339Nano: up to 9 fraction digits, Z or an offset)
_RFC3339 = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{1,9}))?(Z|[+-][0-9]{2}:[0-9]{2})"
)


def _epoch(text: Any) -> Optional[float]:
    m = _RFC3339.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        return None
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    try:
        when = datetime.datetime.fromisoformat(m.group(1) + zone)
    except ValueError:
        return None
    return when.timestamp() + (int(m.group(2)) / 10 ** len(m.group(2)) if m.group(2) else 0.0)


def _named(catalog: Dict[str, Any], alertname: str) -> Tuple[Optional[str], Optional[str]]:
    """(check, code) an alert without labels stands for: its catalogue entry's first code pair, else first check."""
    entry = _runbooks.by_alert(catalog, alertname) or {}
    for pair in entry.get("codes") or []:
        check, _sep, code = str(pair).partition(":")
        return check, code or None
    checks = entry.get("checks") or []
    return (str(checks[0]), None) if checks else (None, None)


def alert_events(
    alerts: Any, now: float, runbook: Optional[str] = None, catalog: Optional[Dict[str, Any]] = None
) -> Tuple[List[Dict[str, Any]], List[Tuple[Any, str]]]:
    """(events, problems): one event per FIRING alert (resolved ones never act); ``problems``: (node, why) of each
    firing alert that cannot be one (no check, no severity): the ledger does not record it rather than guess (the
    caller still acts on its node: a missing label never holds a response back)."""
    if not isinstance(alerts, list):
        return [], [(None, "alerts must be the list the EDA source hands over (ansible_eda.event.payload.alerts)")]
    catalog = catalog if catalog is not None else _runbooks.load_cached(_runbooks.DEFAULT_CATALOG)
    events, problems = [], []
    for i, a in enumerate(alerts):
        labels = a.get("labels") if isinstance(a, dict) else None
        if not isinstance(labels, dict) or a.get("status") != "firing":
            continue
        name = labels.get("alertname")
        check, code = labels.get("check"), labels.get("code")
        if check is None and isinstance(name, str):
            check, code = _named(catalog, name)
        if check is None or labels.get("severity") is None:
            what = "check" if check is None else "severity"
            problems.append(
                (labels.get("node"), "alert %d (%s on %s) names no %s" % (i, name, labels.get("node"), what))
            )
            continue
        started = _epoch(a.get("startsAt"))
        ev = {
            "host": labels.get("node"),
            "check_id": check,
            "severity": labels.get("severity"),
            "detected_at": started if started is not None and started > 0 else float(now),
            "source": "health_check" if str(name).startswith(HEALTH_CHECK_ALERTS) else "alertmanager",
            "summary": "%s on %s" % (name, labels.get("node")),
        }
        for key, value in (("component", labels.get("component")), ("code", code), ("runbook", runbook)):
            if value is not None:
                ev[key] = value
        events.append(ev)
    return events, problems


def leak_events(
    leak_event: Any, now: float, thresholds: Dict[str, Any], runbook: Optional[str] = None
) -> Tuple[List[Dict[str, Any]], List[Tuple[Any, str]]]:
    """(events, problems) for one event of the Redfish leak watch (``ansible_eda.event.leak_event`` of the
    gpuops.cluster.redfish_leak source): the leak detector's fault as the inspection's ``bmc.leak`` finding names it
    (check ``bmc.leak``, component ``bmc/<detector>``, code the detector state), its severity from the policy's
    ``thresholds.bmc.leak`` (the same table the check uses), ``detected_at`` the time the source read the new
    state. A state the policy does not grade (OK) is no event; fields are matched in full by the ledger."""
    if not isinstance(leak_event, dict):
        return [], [(None, "leak_event must be the mapping the redfish_leak source hands over")]
    node, state, detector = leak_event.get("node"), leak_event.get("state"), leak_event.get("detector")
    graded = thresholds.get(state) if isinstance(state, str) else None
    if not isinstance(graded, dict):
        return [], []
    if not isinstance(detector, str) or not detector:
        return [], [(node, "leak event on %s names no detector" % node)]
    started = _epoch(leak_event.get("detected_at"))
    ev = {
        "host": node,
        "check_id": "bmc.leak",
        "component": "bmc/%s" % detector,
        "code": state,
        "severity": graded.get("severity"),
        "detected_at": started if started is not None and started > 0 else float(now),
        "source": "redfish_leak",
        "summary": "leak detector %s: %s on %s" % (detector, state, node),
    }
    if runbook is not None:
        ev["runbook"] = runbook
    return [ev], []


def _upgrades(state_dir: str, now: float) -> Dict[str, str]:
    """host -> "rolling upgrade <run>" for upgrade runs in progress under ``state_dir``."""
    out: Dict[str, str] = {}
    for plan in sorted(glob.glob(os.path.join(glob.escape(state_dir), "upgrades", "*", "plan.json"))):
        run = os.path.dirname(plan)
        try:
            if os.path.exists(os.path.join(run, "report.json")) or now - os.path.getmtime(plan) > UPGRADE_TTL_S:
                continue
            with open(plan, "rb") as fh:
                doc = json.loads(fh.read(4 * 1024 * 1024))
        except (OSError, ValueError):
            continue
        hosts = doc.get("ordered_hosts") or list((doc.get("nodes") or {}).keys()) if isinstance(doc, dict) else []
        for h in hosts if isinstance(hosts, list) else []:
            if isinstance(h, str):
                out.setdefault(h, "rolling upgrade %s" % os.path.basename(run))
    return out


def suppressions(
    hosts: List[str],
    windows_by_host: Dict[str, Any],
    state_dir: Optional[str],
    now: float,
    db_url: Optional[str] = None,
) -> Tuple[Dict[str, str], List[str]]:
    """(host -> reason, problems): the hosts the real-time path must not act on, and why. A host whose windows do
    not validate is a problem (and is not suppressed: the change guard refuses it on its own). The guard's claims
    are read from the controller state's store (store/state_store.py: ``db_url``, else the state dir's embedded
    store; an older state dir's claims are imported on that first open)."""
    out: Dict[str, str] = {}
    problems: List[str] = []
    at = datetime.datetime.fromtimestamp(float(now), tz=datetime.timezone.utc)
    for host in hosts:
        defined = windows_by_host.get(host)
        if not defined:
            continue
        try:
            win = _windows.active_window(defined, at)
        except _windows.WindowError as exc:
            problems.append("%s: gpuops_maintenance_windows: %s" % (host, exc))
            continue
        if win:
            out[host] = "maintenance window %s (until %s)" % (win["name"], win["end"])
    store = _state_store.open_state(state_dir if state_dir and os.path.isdir(state_dir) else None, db_url)
    if store is not None:
        claimed = set(_guard.claimed_nodes(store.load_history(), float(now), UPGRADE_TTL_S))
        upgrading = _upgrades(state_dir, float(now)) if state_dir and os.path.isdir(state_dir) else {}
        for host in hosts:
            if host in out:
                continue
            if host in upgrading:
                out[host] = upgrading[host]
            elif host in claimed:
                out[host] = "claimed by another run's isolation (the isolation guard)"
    return out, problems
