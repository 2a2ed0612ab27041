#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fault timeline and its answer key (issue 39, docs/simulation.md "Service report vs fault truth").

:func:`draw` draws what happens to a small cluster over a period: which node fails how and when, when it is
repaired, when the on-call engineer acknowledges, arrives, locates and plans; maintenance windows with the nodes
they drain (some held by the change guard's Slurm reservation); a rack that loses power; the alerts Prometheus
fires before an inspection sees a fault; the jobs that hold the GPUs (the capacity peak). :func:`key` computes
every scored figure of the service report from that timeline alone, with the service terms stated once below
(TERMS) and this module's own arithmetic: it never imports the collection and never reads the ledger, the
captures or the inspections, so a wrong rule in the collection cannot hide in a shared helper. ``truth_run.py``
renders the captures each scheduled inspection would have seen, runs the real inspections over them in time
order, and compares the report with this key.

Stdlib only (Python 3.8+).
"""

from __future__ import annotations

import datetime
import random

from simcluster import history_key

HOUR = 3600.0
DAY = 86400.0
GPUS = 8
RACK_SIZE = 4

#: The service terms (issue 39), as the contract states them, once: severity of a fault by what it is (P0 a whole
#: rack or more, P1 a node down or a hardware fault, P2 performance), the clocks per severity, the availability
#: target. Working days Monday to Friday, UTC.
TERMS = {
    "targets": {
        "P0": {"respond": "15m", "onsite": "4h", "locate": "2h"},
        "P1": {"respond": "30m", "onsite": "next_business_day", "restore": "24h"},
        "P2": {"respond": "2h", "plan": "3bd"},
        "P3": {"respond": "1bd"},
    },
    "availability_target": 99.5,
}
CLOCK_STEP = {"respond": "ack", "onsite": "onsite", "locate": "locate", "restore": "repair", "plan": "plan"}

#: The faults the timeline draws: the simulated node fault (tools/simnode), its severity under the terms, the
#: component class the service report's MTTR/MTBF puts it in (docs/service.md "Component classes"), whether the
#: node is out of service while it lasts (P0/P1: the terms' "node down or hardware fault"), and whether the evidence
#: the tools print dates the fault (a kernel log line does; a port state read by ibstat does not: then a schedule
#: learns of it up to one interval late).
FAULTS = {
    "xid79": {"severity": "P1", "cls": "gpu", "down": True, "dated": True, "repair_h": (6.0, 30.0)},
    "ib_port_down": {"severity": "P1", "cls": "ib_link", "down": True, "dated": False, "repair_h": (8.0, 40.0)},
    "thermal_throttle": {"severity": "P2", "cls": "gpu", "down": False, "dated": False, "repair_h": (20.0, 70.0)},
}
#: a rack that loses power: every node unreachable (nothing dates it), one P0 (the rack), class "other" (a cluster
#: finding)
RACK_LOSS = {"severity": "P0", "cls": "other", "down": True, "dated": False, "repair_h": (3.0, 8.0)}


#: the faults a Prometheus rule alerts on before any inspection sees them (docs/alerting.md): an InfiniBand port that
#: went down (node_exporter's port state; the inspection's ibstat cannot date it) and a GPU that fell off the bus (the
#: DCGM exporter's Xid counter). The alert fires ``for`` plus a scrape after the fault (``ALERT_DELAY_S``) and reaches
#: the ledger after Alertmanager's group_wait (``ALERT_GROUP_WAIT_S``), always before the next scheduled inspection.
ALERTED = {"ib_port_down": "InfinibandPortDown", "xid79": "GpuXidError"}
ALERT_DELAY_S = (30.0, 300.0)
ALERT_GROUP_WAIT_S = 30.0
#: the scheduler's workload: jobs of 2, 4 or 8 GPUs on the nodes in service, between idle gaps (hours), ended when
#: their node goes down or is drained or rebooted (the capacity figure: the allocated share of the reported GPUs)
JOB_GPUS = (2, 4, 8, 8)
JOB_GAP_H = (1.0, 30.0)
JOB_LEN_H = (2.0, 48.0)


def hostnames(n: int) -> list:
    return ["gpu-node-%02d" % (i + 1) for i in range(n)]


def _utc(ts: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ts, tz=datetime.timezone.utc)


def _steps(rng: random.Random, severity: str, start: float) -> dict:
    """The on-call engineer's steps (absolute times): acknowledged, on site (P0/P1), located (P0), plan (P2)."""
    ack = start + rng.uniform(4, 45) * 60.0
    out = {"ack": ack}
    if severity in ("P0", "P1"):
        out["onsite"] = ack + rng.uniform(0.5, 40.0) * HOUR
    if severity == "P0":
        out["locate"] = ack + rng.uniform(0.3, 3.0) * HOUR
    if severity == "P2":
        out["plan"] = ack + rng.uniform(0.5, 5.0) * DAY
    return out


def draw(seed: int, nodes: int, start: float, days: float, interval_s: float) -> dict:
    """The fault timeline of ``nodes`` nodes over ``days`` days from ``start`` (epoch s, UTC), inspected every
    ``interval_s``: faults (with repair and the engineer's steps), two maintenance windows that drain one rack each,
    one rack power loss. Deterministic for a seed."""
    if nodes < 2 * RACK_SIZE:
        raise ValueError("the timeline needs at least two racks (%d nodes)" % (2 * RACK_SIZE))
    rng = random.Random(seed)
    hosts = hostnames(nodes)
    racks = {"r%d" % (i // RACK_SIZE + 1): [] for i in range(nodes)}
    for i, h in enumerate(hosts):
        racks["r%d" % (i // RACK_SIZE + 1)].append(h)
    end = start + days * DAY
    busy = {h: [] for h in hosts}  # intervals a node already has something in (faults never overlap on one node)

    # node faults that take a node down never overlap so much that a quarter of the cluster is out at once (that is a
    # capacity P0 of its own, not one of the faults drawn here)
    down_spans: list = []
    max_down = max(1, -(-nodes // 4) - 1)

    def free(h, a, b, down=False):
        if down and sum(1 for x, y in down_spans if a < y and b > x) >= max_down:
            return False
        return all(b <= x or a >= y for x, y in busy[h])

    def when(lo, hi):
        # on the minute, away from the run times so that no fault starts exactly on an inspection
        return float(int(rng.uniform(lo, hi) / 60.0) * 60 + 7)

    # two maintenance windows: Saturday 00:00-12:00 UTC in the first and second half, each draining one rack
    windows = []
    for k, (frac, rack) in enumerate(((0.25, "r1"), (0.6, "r2"))):
        day0 = _utc(start + frac * (end - start)).date()
        while day0.weekday() != 5:
            day0 += datetime.timedelta(days=1)
        w_start = datetime.datetime(day0.year, day0.month, day0.day, tzinfo=datetime.timezone.utc).timestamp()
        w_end = w_start + 12 * HOUR
        drain_a, drain_b = w_start + 1 * HOUR, w_start + 11 * HOUR  # drained inside the window, with margins
        windows.append(
            {"name": "upgrade-%s-%d" % (rack, k + 1), "start": w_start, "end": w_end, "hosts": list(racks[rack]),
             "drains": [{"host": h, "start": drain_a, "end": drain_b} for h in racks[rack]]}
        )  # fmt: skip
        for h in racks[rack]:
            busy[h].append((w_start - 6 * HOUR, w_end + 6 * HOUR))

    faults = []
    # the P0: the last rack loses power once, in the middle of the period
    rack = sorted(racks)[-1]
    a = when(start + 0.45 * (end - start), start + 0.5 * (end - start))
    b = a + rng.uniform(*RACK_LOSS["repair_h"]) * HOUR
    faults.append(dict(RACK_LOSS, id="F-rack-%s" % rack, kind="rack_power_loss", hosts=list(racks[rack]), rack=rack,
                       host=None, start=a, repair=b, steps=_steps(rng, "P0", a)))  # fmt: skip
    for h in racks[rack]:
        busy[h].append((a - 6 * HOUR, b + 6 * HOUR))
    # node faults: each kind twice, on different nodes, plus a repeat offender (one node failing twice)
    plan = ["xid79", "xid79", "ib_port_down", "thermal_throttle", "thermal_throttle"]
    for n, kind in enumerate(plan):
        spec = FAULTS[kind]
        for _try in range(200):
            h = rng.choice(hosts)
            a = when(start + DAY, end - 2.5 * DAY)
            b = a + rng.uniform(*spec["repair_h"]) * HOUR
            if free(h, a - 6 * HOUR, b + 6 * HOUR, spec["down"]):
                break
        else:
            raise RuntimeError("no room for fault %s" % kind)
        busy[h].append((a - 6 * HOUR, b + 6 * HOUR))
        if spec["down"]:
            down_spans.append((a - HOUR, b + HOUR))
        faults.append(dict(spec, id="F-%d-%s" % (n + 1, kind), kind=kind, hosts=[h], host=h, start=a, repair=b,
                           steps=_steps(rng, spec["severity"], a)))  # fmt: skip
    # the repeat offender: the first xid79 node loses an InfiniBand port later
    first = next(f for f in faults if f["kind"] == "xid79")
    h = first["host"]
    for _try in range(200):
        a = when(first["repair"] + 0.5 * DAY, end - 2 * DAY)
        b = a + rng.uniform(*FAULTS["ib_port_down"]["repair_h"]) * HOUR
        if free(h, a - 6 * HOUR, b + 6 * HOUR, True):
            break
    else:
        raise RuntimeError("no room for the repeat fault")
    faults.append(dict(FAULTS["ib_port_down"], id="F-repeat-ib_port_down", kind="ib_port_down", hosts=[h], host=h,
                       start=a, repair=b, steps=_steps(rng, "P1", a)))  # fmt: skip
    faults.sort(key=lambda f: f["start"])
    # alerts, the windows' kind, jobs: from a second stream, so that the faults above stay what they were
    rng2 = random.Random("%d/workload" % seed)
    _alerts(rng2, faults, start, interval_s)
    # the change guard's Slurm MAINT reservation covers the hosts in ``reserved`` (half the first rack, the whole
    # second); the others' windows are inventory data (gpuops_maintenance_windows)
    windows[0]["reserved"] = list(windows[0]["hosts"][RACK_SIZE // 2 :])
    windows[1]["reserved"] = list(windows[1]["hosts"])
    return {
        "schema": "gpuops.sim.truth/v1",
        "seed": seed,
        "start": start,
        "end": end,
        "interval_s": interval_s,
        "gpus": GPUS,
        "hosts": hosts,
        "racks": racks,
        "faults": faults,
        "windows": windows,
        "jobs": _jobs(rng2, hosts, faults, windows, start, end),
        "terms": TERMS,
    }


def _alerts(rng: random.Random, faults: list, start: float, interval_s: float) -> None:
    """``fault["alert"] = {name, starts_at, arrives_at}`` for every InfiniBand port fault and every second GPU fault:
    it fires after the fault and reaches the ledger before the next inspection."""
    n_xid = 0
    for f in faults:
        if f["kind"] not in ALERTED:
            continue
        if f["kind"] == "xid79":
            n_xid += 1
            if n_xid % 2:
                continue
        next_run = start + (int((f["start"] - start) // interval_s) + 1) * interval_s
        room = next_run - f["start"]
        starts = f["start"] + min(rng.uniform(*ALERT_DELAY_S), room / 3.0)
        f["alert"] = {"name": ALERTED[f["kind"]], "starts_at": float(int(starts)),
                      "arrives_at": min(float(int(starts)) + ALERT_GROUP_WAIT_S, next_run - 1.0)}  # fmt: skip


def _jobs(rng: random.Random, hosts: list, faults: list, windows: list, start: float, end: float) -> list:
    """The jobs per node: {host, start, end, gpus}, never while the node is down or drained, cut short when it goes
    down, is drained or is rebooted after a repair."""
    blocked: dict = {h: [] for h in hosts}
    for f in faults:
        for h in f["hosts"]:
            blocked[h].append((f["start"], f["repair"]) if f["down"] else (f["repair"], f["repair"]))
    for w in windows:
        for d in w["drains"]:
            blocked[d["host"]].append((d["start"], d["end"]))
    jobs = []
    for h in hosts:
        spans = sorted(blocked[h])
        cur = start - rng.uniform(0.0, 24.0) * HOUR
        while True:
            a = float(int((cur + rng.uniform(*JOB_GAP_H) * HOUR) / 60.0) * 60 + 13)
            length = float(int(rng.uniform(*JOB_LEN_H) * 60.0) * 60)
            b = a + length
            for x, y in spans:
                if x <= a < y:  # starts while the node is out: after it is back
                    a, b = y, y + length
                elif a < x < b or (x == y == a):  # goes down, is drained or rebooted meanwhile: the job ends then
                    b = x
                    break
            if a >= end:
                break
            if b - a >= 600.0:
                jobs.append({"host": h, "start": a, "end": b, "gpus": rng.choice(JOB_GPUS)})
            cur = b
    return jobs


def run_times(t: dict) -> list:
    """The scheduled inspections: every interval from the start, before the end."""
    out, at = [], t["start"]
    while at < t["end"]:
        out.append(at)
        at += t["interval_s"]
    return out


def capacity_peak(t: dict) -> float:
    """The service report's capacity peak from the timeline: at each scheduled inspection, the GPUs the running jobs
    hold over the GPUs of the nodes the scheduler reports (a rack without power reports none), the highest share."""
    peak = 0.0
    dark = [f for f in t["faults"] if f["kind"] == "rack_power_loss"]
    for at in run_times(t):
        seen = [h for h in t["hosts"] if not any(h in f["hosts"] and f["start"] <= at < f["repair"] for f in dark)]
        held = sum(j["gpus"] for j in t.get("jobs", []) if j["host"] in seen and j["start"] <= at < j["end"])
        if seen:
            peak = max(peak, round(held / float(t["gpus"] * len(seen)), 4))
    return peak


# ---------------------------------------------------------------------------------------------- the key
def due(start: float, target: str) -> float:
    """The due time of a clock under the terms: the simulator's own clock arithmetic (history_key.due_at: minutes or
    hours, working days Monday to Friday UTC, the end of the next working day), never the collection's."""
    return history_key.due_at(start, target)


def _merge(spans: list) -> list:
    out: list = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _clip(a: float, b: float, lo: float, hi: float) -> float:
    return max(0.0, min(b, hi) - max(a, lo))


def key(t: dict) -> dict:
    """Every scored figure, from the timeline alone. Tolerances: availability 0.05 points; times one schedule
    interval (a detection by an alert: its startsAt, to the second); the capacity peak to its 4 decimals; a breach
    whose step lies within one interval of its due time is ``ambiguous`` (not scored)."""
    start, end, interval, gpus = t["start"], t["end"], t["interval_s"], t["gpus"]
    down: dict = {h: [] for h in t["hosts"]}
    planned: dict = {h: [] for h in t["hosts"]}
    for f in t["faults"]:
        if f["down"]:
            for h in f["hosts"]:
                down[h].append((f["start"], f["repair"]))
    for w in t["windows"]:
        for d in w["drains"]:
            planned[d["host"]].append((d["start"], d["end"]))
    total = (end - start) * gpus * len(t["hosts"])
    per_node, up_s, unplanned_s, planned_s = {}, {}, 0.0, 0.0
    for h in t["hosts"]:
        dn = sum(_clip(a, b, start, end) for a, b in _merge(down[h]))
        pl = sum(_clip(a, b, start, end) for a, b in _merge(planned[h]))
        up = (end - start) - dn - pl
        up_s[h] = up
        per_node[h] = round(100.0 * up / (up + dn), 3)
        unplanned_s += dn * gpus
        planned_s += pl * gpus
    up_total = sum(up_s.values()) * gpus
    incidents, breaches, ambiguous = [], [], []
    for f in t["faults"]:
        times = dict(f["steps"], detect=f["start"], repair=f["repair"])
        clocks = {}
        for clock, target in TERMS["targets"][f["severity"]].items():
            step = times.get(CLOCK_STEP[clock])
            if step is None:
                continue
            deadline = due(f["start"], target)
            clocks[clock] = "breached" if step > deadline else "met"
            # the collection learns the start up to one interval late (undated evidence) and a step to one interval:
            # a verdict that a shift within that would flip (a step near its due time, a start near midnight before
            # a "next working day") is not scored
            late = due(f["start"] + interval, target)
            if abs(step - deadline) <= interval or (step > deadline) != (step > late):
                ambiguous.append("%s:%s" % (f["id"], clock))
            elif step > deadline:
                breaches.append("%s:%s" % (f["id"], clock))
        # detected at the fault's first evidence: its own dated line, or the alert's startsAt when one fired first
        evidence = [f["start"]] if f.get("dated", True) else []
        evidence += [f["alert"]["starts_at"]] if f.get("alert") else []
        detect = min(evidence) if evidence else f["start"]
        incidents.append({"id": f["id"], "host": f["host"], "severity": f["severity"], "cls": f["cls"],
                          "detect": detect, "by_alert": bool(f.get("alert")) and not f.get("dated", True),
                          "ack": f["steps"]["ack"], "repair": f["repair"], "clocks": clocks})  # fmt: skip
    repairs: dict = {}
    failures: dict = {}
    for f in t["faults"]:
        repairs.setdefault(f["cls"], []).append((f["repair"] - f["start"]) / HOUR)
        failures[f["cls"]] = failures.get(f["cls"], 0) + 1
    up_nodes_h = sum(up_s.values()) / HOUR
    per_host: dict = {}
    for f in t["faults"]:
        if f["host"]:
            per_host[f["host"]] = per_host.get(f["host"], 0) + 1
    # availability: 0.05 points, or more where undated faults leave the start of a downtime known only to the
    # schedule (each such node down up to one interval later than it happened)
    late = sum(len(f["hosts"]) * gpus * interval for f in t["faults"] if f["down"] and not f.get("dated", True))
    tol_points = max(0.05, round(100.0 * late / total, 3))
    return {
        "availability": {
            "cluster": round(100.0 * up_total / (up_total + unplanned_s), 3),
            "nodes": per_node,
            "planned_gpu_hours": round(planned_s / HOUR, 3),
            "unplanned_gpu_hours": round(unplanned_s / HOUR, 3),
            "unknown_gpu_hours": 0.0,
            "target_met": round(100.0 * up_total / (up_total + unplanned_s), 3) >= TERMS["availability_target"],
            "total_gpu_hours": round(total / HOUR, 3),
        },
        "incidents": incidents,
        "incidents_by_severity": {s: sum(1 for i in incidents if i["severity"] == s) for s in ("P0", "P1", "P2", "P3")},
        "breaches": sorted(breaches),
        "ambiguous": sorted(ambiguous),
        "mttr_h": {c: round(sum(v) / len(v), 3) for c, v in sorted(repairs.items())},
        # MTBF as docs/service.md defines it: up node-time over failures (every node counts: all have GPUs)
        "mtbf_h": {c: round(up_nodes_h / n, 3) for c, n in sorted(failures.items())},
        "failures": dict(sorted(failures.items())),
        "repeat_offenders": sorted(h for h, n in per_host.items() if n >= 2),
        "capacity_peak": capacity_peak(t),
        # the capacity share is the scheduler's own count at each inspection: equal to its 4 decimals; a detection
        # from an alert is its startsAt (whole seconds)
        "tolerance": {"availability_points": tol_points, "time_s": interval, "capacity_share": 0.0001, "alert_s": 1.0},
    }
