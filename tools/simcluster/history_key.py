"""The answer key of a simulated history (issue 15), computed from the drawn rows with the contract's definitions.

Written independently of the collection (it never imports plugins/plugin_utils/service/sla.py or the report code), so that
a bug there cannot hide in a shared helper. Definitions (docs/simulation.md "History"):

- every node period is clipped to the period [start, end);
- planned downtime = the part of a ``down`` period inside a maintenance window covering the node (scope all, hosts
  or partitions); the rest of ``down`` is unplanned; ``unknown`` time is in neither term;
- availability = 100 * up / (up + unplanned down), GPU-seconds, 3 decimals; null for a node never observed;
- an incident is in the period when detected_at is in [start, end); a clock is breached when its step came after
  the due time, or has not come and the due time is before the period's end; targets are TARGETS below;
- capacity peak = the largest per-run sum(gpus_alloc) / sum(gpus_total), 4 decimals.
"""

from __future__ import annotations

DAY = 86400.0
UNIT_S = {"m": 60.0, "h": 3600.0, "d": DAY}
CLOCKS = (
    ("respond", "acknowledged_at"),
    ("onsite", "onsite_at"),
    ("locate", "located_at"),
    ("restore", "restored_at"),
    ("plan", "planned_at"),
)
#: the service terms (issue 39), stated once here: P0 respond 15 min, on site 4 h, fault located within 2 h;
#: P1 respond 30 min, on site the next working day, node restored within 24 h; P2 respond 2 h, a tuning plan within
#: 3 working days; P3 respond within 1 working day. Working days: Monday to Friday, UTC, no holidays.
TARGETS = {
    "P0": {"respond": "15m", "onsite": "4h", "locate": "2h"},
    "P1": {"respond": "30m", "onsite": "next_business_day", "restore": "24h"},
    "P2": {"respond": "2h", "plan": "3bd"},
    "P3": {"respond": "1bd"},
}


def _weekday(day: int) -> int:
    """Monday 0 .. Sunday 6 of the epoch day number (1970-01-01 was a Thursday)."""
    return (day + 3) % 7


def due_at(start: float, target):
    """The due time of a clock started at ``start``: None without a target; ``next_day`` = the end of the next UTC
    calendar day; ``Nbd`` = N business days (a weekend start counts from Monday 00:00)."""
    if target is None:
        return None
    day = int(start // DAY)
    if target == "next_day":
        return (day + 2) * DAY
    if target == "next_business_day":  # the end of the first working day after the start's day
        day += 1
        while _weekday(day) >= 5:
            day += 1
        return (day + 1) * DAY
    if target.endswith("bd"):
        amount = float(target[:-2])
        sec = start - day * DAY
        if _weekday(day) >= 5:
            day, sec = day + (7 - _weekday(day)), 0.0
        whole = int(amount)
        for _unused in range(whole):
            day += 1
            while _weekday(day) >= 5:
                day += 1
        return day * DAY + sec + (amount - whole) * DAY
    return start + float(target[:-1]) * UNIT_S[target[-1]]


def breached_clocks(inc: dict, now: float = float("inf")) -> list:
    out = []
    for clock, column in CLOCKS:
        due = due_at(inc["detected_at"], TARGETS[inc["severity"]].get(clock))
        if due is None:
            continue
        when = inc.get(column)
        if (when is not None and when > due) or (when is None and now > due):
            out.append(clock)
    return out


def _merge(intervals: list) -> list:
    out: list = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _overlap(s: float, e: float, merged: list) -> float:
    return sum(max(0.0, min(e, b) - max(s, a)) for a, b in merged if a < e and b > s)


def _pct(up: float, unplanned: float):
    return round(100.0 * up / (up + unplanned), 3) if up + unplanned > 0 else None


def _cover(windows: list, partitions: dict) -> dict:
    """host -> merged maintenance intervals covering it."""
    every, by_part, by_host = [], {}, {}
    for w in windows:
        iv = (w["starts_at"], w["ends_at"])
        scope = w["scope"]
        if scope.get("all"):
            every.append(iv)
        for p in scope.get("partitions", ()):
            by_part.setdefault(p, []).append(iv)
        for h in scope.get("hosts", ()):
            by_host.setdefault(h, []).append(iv)
    return {h: _merge(every + by_part.get(p, []) + by_host.get(h, [])) for h, p in partitions.items()}


def availability(periods: list, windows: list, start: float, end: float) -> dict:
    partitions = {r["host"]: r["partition"] for r in periods}
    cover = _cover(windows, partitions)
    acc: dict = {}  # host -> [up, unplanned, planned, unknown] GPU-seconds
    for r in periods:
        s, e = max(r["started_at"], start), min(r["ended_at"] if r["ended_at"] is not None else end, end)
        a = acc.setdefault(r["host"], [0.0, 0.0, 0.0, 0.0])
        if e <= s:
            continue
        g = r["gpus"]
        if r["state"] == "up":
            a[0] += (e - s) * g
        elif r["state"] == "unknown":
            a[3] += (e - s) * g
        else:
            planned = _overlap(s, e, cover[r["host"]])
            a[2] += planned * g
            a[1] += (e - s - planned) * g
    tot = [sum(v[i] for v in acc.values()) for i in range(4)]
    parts: dict = {}
    for h, v in acc.items():
        p = parts.setdefault(partitions[h], [0.0, 0.0])
        p[0] += v[0]
        p[1] += v[1]
    return {
        "cluster": _pct(tot[0], tot[1]),
        "nodes": {h: _pct(v[0], v[1]) for h, v in sorted(acc.items())},
        "partitions": {p: _pct(v[0], v[1]) for p, v in sorted(parts.items())},
        "planned_gpu_hours": round(tot[2] / 3600.0, 3),
        "unplanned_gpu_hours": round(tot[1] / 3600.0, 3),
        "unknown_gpu_hours": round(tot[3] / 3600.0, 3),
    }


def sla(incidents: list, start: float, end: float) -> dict:
    inside = [i for i in incidents if start <= i["detected_at"] < end]
    breaches = sorted(i["incident_id"] for i in inside if breached_clocks(i, end))
    by_sev: dict = {}
    for i in inside:
        s = by_sev.setdefault(i["severity"], {"incidents": 0, "breached": 0})
        s["incidents"] += 1
        s["breached"] += 1 if breached_clocks(i, end) else 0
    clocks: dict = {}
    for i in inside:
        for c in breached_clocks(i, end):
            clocks[c] = clocks.get(c, 0) + 1
    return {"incidents": len(inside), "breaches": breaches, "by_severity": by_sev, "breached_clocks": clocks}


def capacity(samples: list, start: float, end: float) -> dict:
    runs: dict = {}
    for r in samples:
        if start <= r["at"] < end:
            t = runs.setdefault(r["run_id"], [0, 0])
            t[0] += r["gpus_alloc"]
            t[1] += r["gpus_total"]
    shares = [a / t for a, t in runs.values() if t]
    return {"peak_allocated_share": round(max(shares), 4) if shares else None, "runs": len(shares)}


def compute(rows: dict, start: float, end: float) -> dict:
    """The answer key's `history` section from the history's rows ({table: [row, ...]})."""
    return {
        "start": start,
        "end": end,
        "availability": availability(rows["node_periods"], rows["maintenance_windows"], start, end),
        "sla": sla(rows["incidents"], start, end),
        "capacity": capacity(rows["allocation_samples"], start, end),
    }
