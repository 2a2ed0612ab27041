"""The ledger rows of a simulated history's incidents (history.py): incidents, incident_events, reviews, changes,
tickets and finding_history, shaped like the collection's ledger tables (times as UTC epoch seconds). Stdlib only."""

from __future__ import annotations

import hashlib
import json

OPERATORS = ("ops-anna", "ops-bruno", "ops-chen", "ops-dara")


def _events(inc: dict) -> list:
    who = OPERATORS[int(inc["detected_at"]) % len(OPERATORS)]
    hook = inc["source"] == "ticket"
    steps = [
        ("detected", inc["detected_at"], "ticket-hook" if hook else "inspection", "hook" if hook else "inspection"),
        ("acknowledged", inc["acknowledged_at"], who, "operator"),
        ("on site", inc.get("onsite_at"), who, "operator"),
        ("located", inc["located_at"], who, "operator"),
        ("planned", inc.get("planned_at"), who, "operator"),
        ("mitigated", inc["mitigated_at"], "gpuops.cluster.isolate", "role"),
        ("restored", inc["restored_at"], "inspection", "inspection"),
        ("closed", inc["closed_at"], who, "operator"),
    ]
    return [
        {"incident_id": inc["incident_id"], "step": s, "at": at, "actor": a, "source": src, "detail": None}
        for s, at, a, src in steps
        if at is not None
    ]


def _change(at: float, action: str, host: str, inc: dict) -> dict:
    rec = {
        "at": at,
        "action": action,
        "host": host,
        "ticket": inc.get("ticket_id"),
        "actor": "gpuops.cluster.%s" % action,
        "outcome": "done",
        "detail": {"incident": inc["incident_id"], "simulated": True},
    }
    rec["digest"] = hashlib.sha256(json.dumps(rec, sort_keys=True).encode()).hexdigest()
    return rec


def incident_rows(incidents: list) -> dict:
    """incidents, incident_events, reviews, changes, tickets, finding_history rows of the drawn incidents."""
    rows: dict = {k: [] for k in ("incidents", "incident_events", "reviews", "changes", "tickets", "finding_history")}
    for n, inc in enumerate(incidents):
        if inc["source"] == "ticket" or n % 7 == 3:
            inc["ticket_id"] = "TCK-%06d" % (n + 1)
            rows["tickets"].append(
                {
                    "ticket_id": inc["ticket_id"],
                    "received_at": inc["detected_at"] if inc["source"] == "ticket" else inc["acknowledged_at"],
                    "source": "servicedesk",
                    "severity": inc["severity"],
                    "host": inc["host"],
                    "summary": inc["title"],
                    "incident_id": inc["incident_id"],
                }
            )
        else:
            inc["ticket_id"] = None
        cause = "%s: %s" % (inc["fault"], inc["check_id"]) if inc["fault"] else "job placement (user ticket)"
        rows["incidents"].append(
            {
                "incident_id": inc["incident_id"],
                "fingerprint": inc["fingerprint"],
                "host": inc["host"],
                "severity": inc["severity"],
                "domain": inc["domain"],
                "component": inc["component"],
                "title": inc["title"],
                "source": inc["source"],
                "ticket_id": inc["ticket_id"],
                "sla_profile": None,
                "state": "closed",
                "detected_at": inc["detected_at"],
                "acknowledged_at": inc["acknowledged_at"],
                "onsite_at": inc.get("onsite_at"),
                "located_at": inc["located_at"],
                "planned_at": inc.get("planned_at"),
                "cause": cause,
                "mitigated_at": inc["mitigated_at"],
                "restored_at": inc["restored_at"],
                "closed_at": inc["closed_at"],
            }
        )
        rows["incident_events"] += _events(inc)
        if inc["severity"] in ("P0", "P1"):
            rows["reviews"].append(
                {
                    "incident_id": inc["incident_id"],
                    "cause": cause,
                    "fix": "part replaced, node returned to service" if inc["part_serial"] else "repaired and resumed",
                    "change_ref": "policy-sim-%s" % inc["incident_id"][4:12] if n % 3 == 0 else "no-change",
                    "checks": [inc["check_id"]] if n % 3 == 0 else [],
                    "actor": OPERATORS[n % len(OPERATORS)],
                    "at": inc["closed_at"],
                }
            )
            for host in inc["affected"]:
                rows["changes"].append(_change(inc["mitigated_at"], "isolate", host, inc))
                if inc["component"] in ("gpu", "hbm", "nvlink"):
                    rows["changes"].append(_change(inc["located_at"] + 300.0, "gpu_reset", host, inc))
                if inc["part_serial"]:
                    rows["changes"].append(_change(inc["restored_at"] - 1800.0, "replace", host, inc))
                rows["changes"].append(_change(inc["restored_at"], "resume", host, inc))
        if inc["fingerprint"]:
            rows["finding_history"].append(
                {
                    "fingerprint": inc["fingerprint"],
                    "host": inc["host"],
                    "check_id": inc["check_id"],
                    "code": None,
                    "severity": inc["severity"],
                    "domain": inc["domain"],
                    "component": inc["component"],
                    "part_serial": inc["part_serial"],
                    "action": "isolate" if inc["severity"] in ("P0", "P1") else "ticket",
                    "summary": inc["title"],
                    "first_seen": inc["detected_at"],
                    "last_seen": inc["restored_at"],
                    "cleared_at": inc["restored_at"],
                    "last_run_id": None,
                }
            )
    return rows
