#!/usr/bin/env python3
"""A simulated quarter of a cluster's life (issue 15): the service ledger's rows and the truth about them.

    python3 tools/simcluster/generate.py --nodes 64 --out build/sim-history --history-days 90 [--history-start 2026-10-01]
    python3 tools/simcluster/history.py generate --nodes 10000 --days 90 --out DIR      # the history alone
    python3 tools/simcluster/history.py load --state-dir DIR | --store-url URL  OUT/history

Writes OUT/history/<table>.jsonl (one JSON object per line, shaped like the ledger's tables, times as UTC epoch
seconds; autoincrement ids left to the database) and OUT/history/manifest.json (schema gpuops.sim_history/v1).
The history starts one day before the period (a lead-in the report must clip away) and every node period is closed
at the period's end. It is recorded after the fact: each incident carries all of its steps, some after the end.

The answer key (history_key.py) is computed from these drawn rows with the contract's definitions, never with the
collection's code. Generation and key are stdlib only; only `load` imports the collection's store.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
if __name__ == "__main__" and sys.path and os.path.abspath(sys.path[0] or ".") == HERE:
    del sys.path[0]  # run as a script: simcluster/platform.py must not shadow the standard library's platform
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

from simnode import faults as F  # noqa: E402

from simcluster import history_key  # noqa: E402
from simcluster.history_rows import incident_rows  # noqa: E402

SCHEMA = "gpuops.sim_history/v1"
DAY = 86400.0
HOUR = 3600.0
LEAD_IN = DAY  # the history starts a day before the period
RUN_EVERY = 4 * HOUR  # one inspection run every 4 hours
GPUS = 8
TABLES = (
    "runs",
    "maintenance_windows",
    "node_periods",
    "finding_history",
    "incidents",
    "incident_events",
    "reviews",
    "changes",
    "tickets",
    "allocation_samples",
)

#: Fault classes of the simulator's catalogue (tools/simnode): the fault, the check and severity its answer key
#: expects, the component class, domain, relative frequency and the median hours to restore.
FAULT_CLASSES = (
    ("dead_leaf", "cluster.leaf", "P0", "ib_link", "network", 1, 1.5),
    ("xid79", "gpu.xid", "P1", "gpu", "gpu", 4, 10.0),
    ("xid48", "gpu.ecc", "P1", "hbm", "gpu", 3, 12.0),
    ("row_remap_failure", "gpu.row_remap", "P1", "hbm", "gpu", 2, 16.0),
    ("nvlink_down", "gpu.nvlink", "P1", "nvlink", "gpu", 2, 12.0),
    ("ib_port_down", "ib.port_state", "P1", "ib_link", "network", 3, 8.0),
    ("hung_mount", "node.mounts", "P1", "storage", "node", 2, 4.0),
    ("leak", "bmc.leak", "P1", "node", "bmc", 1, 20.0),
    ("psu_failure", "bmc.sensor", "P2", "psu", "bmc", 3, 48.0),
    ("fan_failure", "bmc.sensor", "P2", "fan", "bmc", 2, 36.0),
    ("thermal_throttle", "gpu.throttle", "P2", "gpu", "gpu", 3, 30.0),
    ("ib_flap", "ib.link_flap", "P2", "ib_link", "network", 3, 24.0),
    ("nvlink_downshift", "gpu.nvlink", "P2", "nvlink", "gpu", 2, 40.0),
)
for _f in FAULT_CLASSES:  # a renamed catalogue fault must fail here, not drift silently
    assert _f[0] in F.FAULTS, "fault %r is not in the simulator's catalogue" % _f[0]
#: median hours to each step, per severity (acknowledge, locate); the SLA targets are history_key.TARGETS
STEP_MEDIAN_H = {"P0": (0.12, 1.8), "P1": (0.2, 12.0), "P2": (0.7, 30.0), "P3": (5.0, 20.0)}
INCIDENTS_PER_NODE_DAY = 0.008
TICKETS_PER_NODE_DAY = 0.0015  # P3 user tickets (job slow, odd behaviour): incidents opened by the ticket hook
UNKNOWN_PER_NODE_DAY = 1 / 45.0


def parse_start(text: str) -> float:
    try:
        d = datetime.datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        raise SystemExit("history: --history-start must be a date like 2026-10-01 (got %r)" % (text,)) from None
    return d.timestamp()


def _date(t: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(t, tz=datetime.timezone.utc)


def period_label(start: float, end: float) -> str:
    """The report's period syntax for [start, end): 2026Q4 for a whole quarter, else 2026-10-01/2026-12-29."""
    s, e = _date(start), _date(end)
    if s.day == 1 and s.month in (1, 4, 7, 10) and not (s.hour or s.minute or s.second):
        q_end = datetime.datetime(s.year + (s.month == 10), (s.month + 2) % 12 + 1, 1, tzinfo=datetime.timezone.utc)
        if q_end == e:
            return "%dQ%d" % (s.year, (s.month - 1) // 3 + 1)
    return "%s/%s" % (s.strftime("%Y-%m-%d"), _date(end - DAY).strftime("%Y-%m-%d"))


def partitions_of(hosts: list) -> dict:
    n = max(1, min(8, math.ceil(len(hosts) / 16)))
    names = ["gpu-%s" % chr(ord("a") + i) for i in range(n)]
    return {h: names[i * n // len(hosts)] for i, h in enumerate(hosts)}


def _lognorm(rng: random.Random, median_h: float, sigma: float = 0.7) -> float:
    return round(rng.lognormvariate(math.log(median_h * HOUR), sigma))


# ------------------------------------------------------------------------------------------- windows


def _windows(rng: random.Random, hosts: list, part: dict, h0: float, end: float) -> list:
    """Cluster-wide windows on the first Saturday of each month, two partition windows, host windows."""
    out = []
    t = h0
    while t < end:
        d = _date(t)
        if d.weekday() == 5 and d.day <= 7:
            out.append(("all", {"all": True}, t + 6 * HOUR, t + 10 * HOUR))
        t += DAY
    parts = sorted(set(part.values()))
    span = end - h0
    for i in range(2):
        p = parts[rng.randrange(len(parts))]
        s = h0 + round(rng.uniform(0.1, 0.9) * span / 3600) * 3600.0
        out.append(("part%d" % i, {"partitions": [p]}, s, s + 6 * HOUR))
    for i in range(max(3, len(hosts) // 16)):
        chosen = sorted(rng.sample(hosts, min(len(hosts), rng.randint(1, 4))))
        s = h0 + round(rng.uniform(0.02, 0.98) * span / 3600) * 3600.0
        out.append(("host%d" % i, {"hosts": chosen}, s, s + rng.choice((2, 4, 6, 8)) * HOUR))
    rows = []
    for n, (tag, scope, s, e) in enumerate(sorted(out, key=lambda w: (w[2], w[0]))):
        rows.append(
            {
                "window_id": "mw-%s-%02d" % (_date(s).strftime("%Y%m%d"), n),
                "name": "maintenance %s (%s)" % (tag, ", ".join(sorted(scope))),
                "starts_at": s,
                "ends_at": e,
                "scope": scope,
            }
        )
    return rows


def windows_by_host(windows: list, part: dict) -> dict:
    """host -> the windows covering it (scope all, its partition, or the host itself), in window order."""
    idx: dict = {h: [] for h in part}
    for w in windows:
        scope = w["scope"]
        if scope.get("all"):
            hit = set(part)
        else:
            wanted = set(scope.get("partitions", ()))
            hit = {h for h in part if part[h] in wanted} if wanted else set()
            hit.update(h for h in scope.get("hosts", ()) if h in idx)
        for h in hit:
            idx[h].append(w)
    return idx


# ------------------------------------------------------------------------------------------- incidents


def _steps(rng: random.Random, sev: str, detected: float, restore_median_h: float) -> dict:
    ack_h, loc_h = STEP_MEDIAN_H[sev]
    ack = detected + max(30.0, _lognorm(rng, ack_h, 0.8))
    located = ack + _lognorm(rng, loc_h, 0.8)
    restored = max(located, detected + _lognorm(rng, restore_median_h, 0.6)) + 60.0
    mitigated = ack + round(rng.uniform(120, 1800)) if sev in ("P0", "P1") else None
    closed = restored + round(rng.uniform(4 * HOUR, 3 * DAY))
    # no extra draw (the stream stays as it was): an engineer is on site for P0/P1 before the cause is found, and a
    # P2's remote plan is written when its cause is
    onsite = ack + round(0.6 * (located - ack)) if sev in ("P0", "P1") else None
    planned = located if sev == "P2" else None
    return {
        "acknowledged_at": ack,
        "onsite_at": onsite,
        "located_at": located,
        "planned_at": planned,
        "mitigated_at": mitigated,
        "restored_at": restored,
        "closed_at": closed,
    }


def _fault_incident(rng: random.Random, cls: tuple, hosts: list, leaves: dict, lo: float, hi: float) -> dict:
    fault, check, sev, comp, domain, _w, restore_h = cls
    host = rng.choice(hosts)
    detected = float(round(rng.uniform(lo, hi)))
    affected = list(leaves[host][1]) if fault == "dead_leaf" else [host]
    target = affected[0] if fault != "dead_leaf" else None
    comp_id = "leaf:%s" % leaves[host][0] if fault == "dead_leaf" else "%s%d" % (comp, rng.randrange(8))
    inc = {
        "fault": fault,
        "affected": affected,
        "host": target,
        "severity": sev,
        "domain": domain,
        "component": comp,
        "check_id": check,
        "fingerprint": "%s|%s:%s" % (target or "", check, comp_id),
        "title": "%s on %s (%s)" % (check, target or comp_id, fault),
        "source": "finding",
        "detected_at": detected,
        "part_serial": "SN-%s-%06d" % (comp.upper(), rng.randrange(10**6)) if comp in ("gpu", "hbm", "psu") else None,
    }
    inc.update(_steps(rng, sev, detected, restore_h))
    return inc


def _ticket_incident(rng: random.Random, hosts: list, lo: float, hi: float) -> dict:
    """A P3 user ticket (jobs slow, odd behaviour): an incident opened by the ticket hook."""
    host = rng.choice(hosts)
    detected = float(round(rng.uniform(lo, hi)))
    inc = {
        "fault": None,
        "affected": [],
        "host": host,
        "severity": "P3",
        "domain": "scheduler",
        "component": rng.choice(("scheduler", "other")),
        "check_id": None,
        "fingerprint": None,
        "title": "user ticket: jobs slow on %s" % host,
        "source": "ticket",
        "detected_at": detected,
        "part_serial": None,
    }
    inc.update(_steps(rng, "P3", detected, 24.0))
    return inc


def _draw_incidents(rng: random.Random, hosts: list, leaves: dict, h0: float, period: tuple) -> list:
    """Incidents from faults (Poisson over node-days) and P3 tickets; each severity at least once in the period."""
    start, end = period
    days = (end - h0) / DAY
    weights = [c[5] for c in FAULT_CLASSES]
    n_fault = max(1, int(rng.gauss(1, 0.1) * INCIDENTS_PER_NODE_DAY * len(hosts) * days))
    drawn = [rng.choices(FAULT_CLASSES, weights)[0] for _unused in range(n_fault)]
    for sev in ("P0", "P1", "P2"):
        if not any(c[2] == sev for c in drawn):
            drawn.append(next(c for c in FAULT_CLASSES if c[2] == sev))
    out = [_fault_incident(rng, cls, hosts, leaves, h0, end - HOUR) for cls in drawn]
    n_tickets = max(1, int(TICKETS_PER_NODE_DAY * len(hosts) * days))
    out += [_ticket_incident(rng, hosts, h0, end - HOUR) for _unused in range(n_tickets)]
    for sev in ("P0", "P1", "P2", "P3"):  # the lead-in may have taken the only one: one more inside the period
        if not any(i["severity"] == sev and start <= i["detected_at"] < end for i in out):
            cls = next((c for c in FAULT_CLASSES if c[2] == sev), None)
            lo, hi = start, max(start, end - HOUR)
            out.append(
                _fault_incident(rng, cls, hosts, leaves, lo, hi) if cls else _ticket_incident(rng, hosts, lo, hi)
            )
    out.sort(key=lambda i: (i["detected_at"], i["host"] or ""))
    return out


def _force_breaches(incidents: list, start: float, end: float) -> None:
    """Each clock type breached at least once in the period (the draw makes them likely; this makes it sure)."""
    inside = [i for i in incidents if start <= i["detected_at"] < end]
    for clock, column in history_key.CLOCKS:
        if any(clock in history_key.breached_clocks(i) for i in inside):
            continue
        for inc in inside:
            due = history_key.due_at(inc["detected_at"], history_key.TARGETS[inc["severity"]].get(clock))
            if due is None:
                continue
            inc[column] = due + 1800.0
            for later in ("onsite_at", "located_at", "planned_at", "mitigated_at", "restored_at", "closed_at"):
                if inc.get(later) is not None and later != column and inc[later] < inc[column]:
                    inc[later] = inc[column] + 600.0
            break


def _number(incidents: list) -> None:
    seq: dict = {}
    for inc in incidents:
        day = _date(inc["detected_at"]).strftime("%Y%m%d")
        seq[day] = seq.get(day, 0) + 1
        inc["incident_id"] = "INC-%s-%04d" % (day, seq[day])


# ------------------------------------------------------------------------------------------- node timelines


def _maintenance_downs(rng: random.Random, windows: list) -> list:
    """The node's planned work in each window covering it: down a little after the start, back before the end,
    now and then over the end (that part is unplanned); some nodes need no work in a window."""
    out = []
    for w in windows:
        if rng.random() < 0.1:
            continue
        s = w["starts_at"] + round(rng.uniform(0, 600))
        if rng.random() < 0.08:
            e = w["ends_at"] + round(rng.uniform(600, 5400))  # overran the window
        else:
            e = w["ends_at"] - round(rng.uniform(0, 1800))
        out.append((s, e, "maint", "maintenance %s" % w["window_id"]))
    return out


def _unknowns(rng: random.Random, h0: float, end: float) -> list:
    out = []
    t = h0 + rng.expovariate(UNKNOWN_PER_NODE_DAY / DAY)
    while t < end:
        out.append((float(round(t)), float(round(t + rng.uniform(1, 10) * HOUR)), "error", "unreachable"))
        t += rng.expovariate(UNKNOWN_PER_NODE_DAY / DAY)
    return out


def timeline(h0: float, end: float, downs: list, unknowns: list) -> list:
    """Run-length periods [(start, end, state, status, reason)] covering [h0, end): down wins over unknown,
    unknown over up."""
    points = {h0, end}
    for s, e, _st, _r in downs + unknowns:
        points.update(min(max(x, h0), end) for x in (s, e))
    edges = sorted(points)
    out: list = []
    for a, b in zip(edges, edges[1:]):
        mid = (a + b) / 2
        hit = next((d for d in downs if d[0] <= mid < d[1]), None)
        if hit is None:
            hit = next((u for u in unknowns if u[0] <= mid < u[1]), None)
            state, status, reason = ("unknown", hit[2], hit[3]) if hit else ("up", "ok", None)
        else:
            state, status, reason = "down", hit[2], hit[3]
        if out and out[-1][2] == state and out[-1][3] == status and out[-1][4] == reason:
            out[-1] = (out[-1][0], b, state, status, reason)
        else:
            out.append((a, b, state, status, reason))
    return out


# ------------------------------------------------------------------------------------------- capacity


def _runs(rng: random.Random, hosts: list, part: dict, h0: float, end: float) -> tuple:
    """An inspection run every 4 h and the scheduler's allocation per partition: a daily peak in the afternoon,
    quiet weekends, a growing trend over the quarter, so the share crosses the 70 % trigger now and then."""
    totals: dict = {}
    for h in hosts:
        totals[part[h]] = totals.get(part[h], 0) + GPUS
    offset = {p: rng.uniform(-0.05, 0.05) for p in sorted(totals)}
    runs, samples = [], []
    t = h0
    while t < end:
        d = _date(t)
        run_id = "hist-%s" % d.strftime("%Y%m%dT%H%MZ")
        runs.append(
            {
                "run_id": run_id,
                "kind": "history",
                "started_at": t,
                "finished_at": t + 90.0,
                "controller": "simcluster",
                "policy_version": "sim",
                "policy_hash": None,
                "nodes_total": len(hosts),
                "summary": {"simulated": True},
            }
        )
        hour = d.hour + d.minute / 60.0
        base = 0.55 + 0.12 * math.sin(2 * math.pi * (hour - 9) / 24) + 0.10 * (t - h0) / (end - h0)
        base -= 0.12 if d.weekday() >= 5 else 0.0
        for p in sorted(totals):
            share = min(0.98, max(0.0, base + offset[p] + rng.gauss(0, 0.03)))
            samples.append(
                {
                    "run_id": run_id,
                    "at": t + 30.0,
                    "partition": p,
                    "gpus_total": totals[p],
                    "gpus_alloc": int(round(share * totals[p])),
                }
            )
        t += RUN_EVERY
    return runs, samples


def draw(hosts: list, start: float, days: int, seed: int = 7) -> dict:
    """The whole history as {table: [rows]} plus `meta` (partitions, gpus, the period)."""
    end = start + days * DAY
    h0 = start - LEAD_IN
    rng = random.Random("%s/history" % seed)
    part = partitions_of(hosts)
    racks: dict = {}
    for i, h in enumerate(hosts):
        racks.setdefault(i // 8, []).append(h)
    width = max(2, len(str(len(racks))))
    leaves = {h: ("leaf-%0*d" % (width, i // 8 + 1), racks[i // 8]) for i, h in enumerate(hosts)}
    windows = _windows(rng, hosts, part, h0, end)
    cover = windows_by_host(windows, part)
    incidents = _draw_incidents(rng, hosts, leaves, h0, (start, end))
    _force_breaches(incidents, start, end)
    _number(incidents)
    runs, samples = _runs(rng, hosts, part, h0, end)
    faults_on: dict = {}
    for inc in incidents:
        if inc["severity"] in ("P0", "P1"):
            for h in inc["affected"]:
                faults_on.setdefault(h, []).append(
                    (inc["detected_at"], inc["restored_at"], "critical", "%s %s" % (inc["incident_id"], inc["title"]))
                )
    periods = []
    for h in hosts:
        hr = random.Random("%s/history/%s" % (seed, h))
        downs = faults_on.get(h, []) + _maintenance_downs(hr, cover[h])
        for s, e, state, status, reason in timeline(h0, end, downs, _unknowns(hr, h0, end)):
            periods.append(
                {
                    "host": h,
                    "state": state,
                    "status": status,
                    "reason": reason,
                    "partition": part[h],
                    "gpus": GPUS,
                    "started_at": s,
                    "ended_at": e,
                    "last_seen": e,
                    "last_run_id": None,
                }
            )
    rows = incident_rows(incidents)
    rows.update(runs=runs, allocation_samples=samples, maintenance_windows=windows, node_periods=periods)
    rows["meta"] = {"start": start, "end": end, "history_start": h0, "partitions": part, "days": days}
    return rows


def write_history(hosts: list, out: str, days: int, start: float, seed: int = 7) -> dict:
    """Write OUT/history/ and return the answer key's `history` section."""
    rows = draw(hosts, start, days, seed)
    meta = rows.pop("meta")
    hdir = os.path.join(out, "history")
    os.makedirs(hdir, exist_ok=True)
    for table in TABLES:
        with open(os.path.join(hdir, table + ".jsonl"), "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in rows[table])
    key = history_key.compute(rows, meta["start"], meta["end"])
    key.update(days=days, period=period_label(meta["start"], meta["end"]))
    manifest = {
        "schema": SCHEMA,
        "seed": seed,
        "start": meta["start"],
        "end": meta["end"],
        "history_start": meta["history_start"],
        "period": key["period"],
        "days": days,
        "nodes": len(hosts),
        "gpus_per_node": GPUS,
        "partitions": sorted(set(meta["partitions"].values())),
        "counts": {t: len(rows[t]) for t in TABLES},
        "tables": list(TABLES),
    }
    with open(os.path.join(hdir, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
        fh.write("\n")
    return key


def add_to_answer_key(data_dir: str, hosts: list, days: int, start: str, seed: int) -> dict:
    """generate.py --history-days: write DATA/history/ and add `history` to DATA/answer_key.json."""
    hist = write_history(hosts, data_dir, days, parse_start(start), seed)
    path = os.path.join(data_dir, "answer_key.json")
    with open(path, encoding="utf-8") as fh:
        key = json.load(fh)
    key["history"] = hist
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(key, fh, indent=1, sort_keys=True)
        fh.write("\n")
    return hist


def summary(key: dict, hdir: str) -> str:
    return "history: %s, %d nodes, %d incidents (%d breached), availability %s %%, capacity peak %s -> %s" % (
        key["period"],
        len(key["availability"]["nodes"]),
        key["sla"]["incidents"],
        len(key["sla"]["breaches"]),
        key["availability"]["cluster"],
        key["capacity"]["peak_allocated_share"],
        hdir,
    )


def load_history(store, history_dir: str) -> dict:
    """Bulk-insert OUT/history/*.jsonl into the ledger tables of ``store`` (see history_load.py)."""
    from simcluster import history_load  # pylint: disable=import-outside-toplevel

    return history_load.load_history(store, history_dir)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="write OUT/history/ and OUT/history_key.json (no capture directories)")
    g.add_argument("--nodes", type=int, default=64)
    g.add_argument("--days", type=int, default=90)
    g.add_argument("--start", default="2026-10-01")
    g.add_argument("--seed", type=int, default=7)
    g.add_argument("--out", required=True)
    ld = sub.add_parser("load", help="load OUT/history into the store (refuses a history already loaded)")
    where = ld.add_mutually_exclusive_group(required=True)
    where.add_argument("--store-url", help="a database URL (postgresql://... or sqlite:///...)")
    where.add_argument("--state-dir", help="the embedded SQLite store under this directory")
    ld.add_argument("history_dir")
    a = ap.parse_args(argv)
    t0 = time.time()
    if a.cmd == "generate":
        if a.nodes < 1 or a.days < 1:
            ap.error("--nodes and --days must be >= 1")
        from simcluster.names import hostnames  # pylint: disable=import-outside-toplevel

        key = write_history(hostnames(a.nodes), a.out, a.days, parse_start(a.start), a.seed)
        with open(os.path.join(a.out, "history_key.json"), "w", encoding="utf-8") as fh:
            json.dump({"history": key}, fh, indent=1, sort_keys=True)
            fh.write("\n")
        print("%s (%.1f s)" % (summary(key, os.path.join(a.out, "history")), time.time() - t0))
        return 0
    from simcluster import history_load  # pylint: disable=import-outside-toplevel

    return history_load.cli(a.history_dir, a.store_url, a.state_dir)


if __name__ == "__main__":
    sys.exit(main())
