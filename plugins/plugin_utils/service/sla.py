# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SLA clocks of an incident (docs/service.md): the contract's targets per severity and whether each was met.

Targets are policy data (``sla.targets``, overridable per site or customer through ``sla.profiles.<name>``). Each
severity has up to three clocks, all counted from ``detected_at``:

- ``respond``: until ``acknowledged_at`` (someone owns it);
- ``locate``: until ``located_at`` (the cause is recorded: the on-site diagnosis for P0/P1, the remote tuning plan
  for P2);
- ``restore``: until ``restored_at`` (back in service and healthy).

A target is a duration: ``15m``, ``4h``, ``2d`` (calendar), ``3bd`` (business days: Saturday and Sunday skipped,
a start on a weekend counts from Monday 00:00 UTC), or ``next_day`` (the end of the next calendar day, UTC). A clock
is *breached* when its step came after the due time, or has not come and the due time has passed; it is *at risk*
when it is still running and ``at_risk_share`` of its allowance is spent.

Pure Python, no Ansible imports. Times are UTC epoch seconds (as the store keeps them).
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, List, Optional

SEVERITIES = ("P0", "P1", "P2", "P3")
CLOCKS = (("respond", "acknowledged_at"), ("locate", "located_at"), ("restore", "restored_at"))

DEFAULT_SLA: Dict[str, Any] = {
    # the operations contract: P0 respond 15 min, on site 4 h, restored 2 h; P1 30 min, next day, 24 h;
    # P2 2 h, remote, a tuning plan in 3 working days; P3 within 1 working day
    "targets": {
        "P0": {"respond": "15m", "locate": "4h", "restore": "2h"},
        "P1": {"respond": "30m", "locate": "next_day", "restore": "24h"},
        "P2": {"respond": "2h", "locate": "3bd", "restore": None},
        "P3": {"respond": "1bd", "locate": None, "restore": None},
    },
    "profiles": {},  # name -> {"P1": {"restore": "8h"}, ...} merged over targets (site or customer contracts)
    "at_risk_share": 0.8,  # a running clock with this share of its allowance spent is "about to breach"
    "open_severities": ["P0", "P1", "P2"],  # findings that open an incident
    "review_required": ["P0", "P1"],  # closing these needs a review record
    "retention_days": 400,  # the ledger keeps a year of quarterly reports (audit: at least 183)
    "capacity_trigger": 0.7,  # allocated GPU share that triggers an expansion plan
}

_TARGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(m|h|d|bd)\s*$")
_UNIT_S = {"m": 60.0, "h": 3600.0, "d": 86400.0}


class SlaError(Exception):
    """A malformed SLA target or profile."""


def check_target(value: Any, where: str) -> None:
    """Raise SlaError unless ``value`` is None, ``next_day`` or a duration like 15m, 4h, 2d, 3bd."""
    if value is None or value == "next_day":
        return
    if not isinstance(value, str) or not _TARGET.match(value):
        raise SlaError("SLA target %s must look like 15m, 4h, 2d, 3bd or next_day (got %r)" % (where, value))


def targets_for(severity: str, sla: Optional[Dict[str, Any]] = None, profile: Optional[str] = None) -> Dict[str, Any]:
    """The clocks and targets of ``severity``: the defaults, the policy's ``targets``, then ``profiles[profile]``."""
    sla = sla or DEFAULT_SLA
    if severity not in SEVERITIES:
        raise SlaError("unknown severity %r" % (severity,))
    out = dict(DEFAULT_SLA["targets"][severity])
    out.update((sla.get("targets") or {}).get(severity) or {})
    if profile:
        profiles = sla.get("profiles") or {}
        if profile not in profiles:
            raise SlaError("unknown SLA profile %r (known: %s)" % (profile, ", ".join(sorted(profiles)) or "none"))
        out.update((profiles[profile] or {}).get(severity) or {})
    for clock, value in out.items():
        check_target(value, "%s.%s" % (severity, clock))
    return out


def due(start: float, target: Optional[str]) -> Optional[float]:
    """The due time (epoch s) of a clock started at ``start`` with ``target``; None when the clock has no target."""
    if target is None:
        return None
    t = datetime.datetime.fromtimestamp(float(start), tz=datetime.timezone.utc)
    if target == "next_day":
        end = (t + datetime.timedelta(days=2)).replace(hour=0, minute=0, second=0, microsecond=0)
        return end.timestamp()
    m = _TARGET.match(target)
    if not m:
        raise SlaError("bad SLA target %r" % (target,))
    amount, unit = float(m.group(1)), m.group(2)
    if unit != "bd":
        return float(start) + amount * _UNIT_S[unit]
    while t.weekday() >= 5:  # a start on a weekend counts from Monday 00:00
        t = (t + datetime.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    whole = int(amount)
    for _day in range(whole):
        t += datetime.timedelta(days=1)
        while t.weekday() >= 5:
            t += datetime.timedelta(days=1)
    return (t + datetime.timedelta(days=amount - whole)).timestamp()


def clocks(
    incident: Dict[str, Any], now: float, sla: Optional[Dict[str, Any]] = None, at_risk_share: Optional[float] = None
) -> List[Dict[str, Any]]:
    """Each clock of ``incident`` (a mapping with ``severity``, ``detected_at`` and the step times, as the
    ``incidents`` table holds them; ``sla_profile`` optional) at ``now``: ``{clock, target, due, at, state,
    late_s, spent_share}``; ``state`` is ``met``, ``breached``, ``running``, ``at_risk`` or ``none`` (no target)."""
    sla = sla or DEFAULT_SLA
    share = float(at_risk_share if at_risk_share is not None else sla.get("at_risk_share", 0.8))
    start = float(incident["detected_at"])
    targets = targets_for(incident["severity"], sla, incident.get("sla_profile"))
    out = []
    for clock, column in CLOCKS:
        target = targets.get(clock)
        when = incident.get(column)
        deadline = due(start, target)
        row: Dict[str, Any] = {"clock": clock, "target": target, "due": deadline, "at": when}
        if deadline is None:
            row.update(state="none", late_s=0.0, spent_share=None)
        elif when is not None:
            late = float(when) - deadline
            row.update(state="breached" if late > 0 else "met", late_s=max(late, 0.0), spent_share=None)
        else:
            allowance = max(deadline - start, 1.0)
            spent = (float(now) - start) / allowance
            late = float(now) - deadline
            state = "breached" if late > 0 else ("at_risk" if spent >= share else "running")
            row.update(state=state, late_s=max(late, 0.0), spent_share=round(spent, 4))
        out.append(row)
    return out


def breached(incident: Dict[str, Any], now: float, sla: Optional[Dict[str, Any]] = None) -> List[str]:
    """The clocks of ``incident`` that missed their target by ``now`` (empty: every target met or still running)."""
    return [c["clock"] for c in clocks(incident, now, sla) if c["state"] == "breached"]
