#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service report vs fault truth (issue 39, docs/simulation.md): draw a fault timeline (truth.py), render the
captures every scheduled inspection would have seen, run the collection's real inspection over them in time order
into a fresh store (the same functions ``gpuops.cluster.inspect_cluster`` calls: the pipeline, the ledger with the
inventory's maintenance windows, the operator's incident steps as ``gpuops.cluster.incident`` takes them; between
runs, the alerts through the real-time ledger entry ``record_realtime`` and the change guard's MAINT reservations
through ``ledger_windows.reservation_to_ledger``; the jobs as each node's ``AllocTRES``), write the service report,
and score it against the key computed from the timeline alone.

    python3 tools/simcluster/truth_run.py --out build/truth --days 91 --interval-h 2 --nodes 8

Prints ``service report vs fault truth`` and one line per figure (expected, got, tolerance, ok or FAIL); exit 1 when
any figure fails. The collection is imported from the checkout (PYTHONPATH=build, as make does).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# the script's own folder shadows the standard library (simcluster/platform.py): import from tools/ instead
sys.path[0] = os.path.dirname(HERE)

from simcluster import truth as T  # noqa: E402
from simnode import faults as F  # noqa: E402
from simnode import render_misc as RM  # noqa: E402
from simnode.capture import capture  # noqa: E402
from simnode.state import default_state  # noqa: E402

# a fault's evidence is placed this long before the state's clock by the simulator's fault functions
EVIDENCE_AGO = {"xid79": 700.0, "ib_port_down": 0.0, "thermal_throttle": 0.0}


def _iso_local(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M")


def _events(t: dict) -> list:
    """(time, order, kind, payload) of every change to the nodes, in time order."""
    ev = []
    for f in t["faults"]:
        if f["kind"] == "rack_power_loss":
            ev.append((f["start"], 1, "power_off", f))
            ev.append((f["repair"], 0, "power_on", f))
        else:
            ev.append((f["start"], 1, "fault", f))
            ev.append((f["repair"], 0, "repair", f))
        if f.get("alert"):
            ev.append((f["alert"]["arrives_at"], 2, "alert", f))
    for w in t["windows"]:
        for d in w["drains"]:
            ev.append((d["start"], 1, "drain", dict(d, window=w["name"])))
            ev.append((d["end"], 0, "undrain", d))
        if w.get("reserved"):  # the guard creates its reservation the evening before and deletes it when done
            ev.append((w["start"] - 6 * T.HOUR, 1, "resv_create", w))
            ev.append((max(d["end"] for d in w["drains"]) + 1800.0, 1, "resv_delete", w))
    for j in t.get("jobs", []):
        ev.append((j["start"], 2, "job_start", j))
        ev.append((j["end"], -1, "job_end", j))
    return sorted(ev, key=lambda e: (e[0], e[1]))


def _hostlist(hosts: list) -> str:
    """Slurm's compressed form of consecutive names (gpu-node-[05-08]); others comma-separated."""
    stems = {h.rsplit("-", 1)[0] for h in hosts}
    nums = sorted(int(h.rsplit("-", 1)[1]) for h in hosts)
    if len(stems) == 1 and len(nums) > 1 and nums == list(range(nums[0], nums[0] + len(nums))):
        width = len(hosts[0].rsplit("-", 1)[1])
        return "%s-[%0*d-%0*d]" % (stems.pop(), width, nums[0], width, nums[-1])
    return ",".join(hosts)


def scontrol_reservation(w: dict) -> str:
    """``scontrol show reservation <name>`` as Slurm 23.11 prints the change guard's MAINT reservation (TZ=UTC)."""
    fmt = "%Y-%m-%dT%H:%M:%S"
    s = datetime.datetime.fromtimestamp(w["start"], tz=datetime.timezone.utc)
    e = datetime.datetime.fromtimestamp(w["end"], tz=datetime.timezone.utc)
    mins = int((w["end"] - w["start"]) // 60)
    hosts = w["reserved"]
    return (
        "ReservationName=%s StartTime=%s EndTime=%s Duration=%02d:%02d:00\n"
        "   Nodes=%s NodeCnt=%d CoreCnt=%d Features=(null) PartitionName=(null) Flags=MAINT,IGNORE_JOBS,SPEC_NODES\n"
        "   TRES=cpu=%d\n"
        "   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a\n"
        "   MaxStartDelay=(null)\n"
        % (w["name"], s.strftime(fmt), e.strftime(fmt), mins // 60, mins % 60, _hostlist(hosts),
           len(hosts), 224 * len(hosts), 224 * len(hosts))
    )  # fmt: skip


def alert_event(f: dict, state: dict) -> dict:
    """The ledger event of fault ``f``'s alert, as Alertmanager's labels name it (check, component, code, severity,
    node) and gpuops.cluster.incident_event passes it on: the component read off the simulated node."""
    if f["kind"] == "xid79":
        gpu = next(g for g in state["gpus"] if g.get("lost"))
        check, component, code = "gpu.xid", "gpu:%s" % gpu["bus_id"], "79"
    else:
        hca, port = next((h, p) for h in state["hcas"] for p in h["ports"] if p["state"] != "ACTIVE")
        check, component, code = "ib.port_state", "%s/%d" % (hca["name"], port["port"]), "DOWN"
    return {"host": f["host"], "check_id": check, "component": component, "code": code, "severity": f["severity"],
            "detected_at": f["alert"]["starts_at"], "source": "alertmanager",
            "summary": "%s on %s (%s)" % (f["alert"]["name"], f["host"], component)}  # fmt: skip


class World:
    """The simulated nodes as the tools would print them, moved along the timeline."""

    def __init__(self, t: dict, out: str) -> None:
        self.t, self.out, self.seed = t, out, t["seed"]
        self.states = {h: self._fresh(h, t["start"] - 4 * T.HOUR, 0) for h in t["hosts"]}
        self.powered_off: set = set()
        self.dirty = set(t["hosts"])
        self.repairs = 0
        self.alloc = {h: 0 for h in t["hosts"]}  # GPUs the running jobs hold
        self.jobs_moved: set = set()

    def _fresh(self, host: str, boot: float, generation: int) -> dict:
        st = default_state(host, seed=self.seed * 1000 + generation, now=boot, boot_time=boot)
        st["slurm"]["partitions"] = ["batch"]
        return st

    def apply(self, kind: str, f: dict, at: float) -> None:
        if kind == "fault":
            st = self.states[f["host"]]
            st["now"] = at + EVIDENCE_AGO[f["kind"]]
            F.apply(st, f["kind"], random.Random("%s/%s" % (self.seed, f["id"])))
            self.dirty.add(f["host"])
        elif kind == "repair":  # the part replaced and the node rebooted: new serials, a new boot
            self.repairs += 1
            self.states[f["host"]] = self._fresh(f["host"], at, self.repairs)
            self.dirty.add(f["host"])
        elif kind == "power_off":
            self.powered_off |= set(f["hosts"])
        elif kind == "power_on":
            for h in f["hosts"]:
                self.powered_off.discard(h)
                self.repairs += 1
                self.states[h] = self._fresh(h, at, self.repairs)
                self.dirty.add(h)
        elif kind == "drain":
            s = self.states[f["host"]]["slurm"]
            s.update(state="IDLE+DRAIN", reason="upgrade %s" % f["window"], reason_user="gpuops", reason_time=at)
            self.dirty.add(f["host"])
        elif kind in ("job_start", "job_end"):
            self.alloc[f["host"]] += f["gpus"] if kind == "job_start" else -f["gpus"]
            self.jobs_moved.add(f["host"])  # only its scontrol record changes
        elif kind == "undrain":
            s = self.states[f["host"]]["slurm"]
            s.update(state="IDLE", reason=None, reason_user=None, reason_time=None)
            self.dirty.add(f["host"])

    def hosts_at(self, at: float) -> dict:
        """inspect_nodes' hosts: a capture taken at ``at`` per node, or unreachable (no power)."""
        out = {}
        for i, h in enumerate(self.t["hosts"]):
            rack = "r%d" % (i // T.RACK_SIZE + 1)
            if h in self.powered_off:
                out[h] = {
                    "unreachable": True,
                    "message": "ssh: connect to host %s port 22: No route to host" % h,
                    "rack": rack,
                }
                continue
            cdir = os.path.join(self.out, "captures", h)
            st = self.states[h]
            st["now"] = at
            alloc = self.alloc[h]
            if st["slurm"]["state"] in ("IDLE", "MIXED", "ALLOCATED"):
                st["slurm"]["state"] = "IDLE" if not alloc else "MIXED" if alloc < T.GPUS else "ALLOCATED"
            if h in self.dirty or not os.path.isdir(cdir):
                shutil.rmtree(cdir, ignore_errors=True)
                capture(st, cdir)
                self._alloc_tres(cdir, alloc)
                self.dirty.discard(h)
                self.jobs_moved.discard(h)
            else:  # nothing changed on the node but its jobs: the same outputs, taken now
                if h in self.jobs_moved:
                    with open(os.path.join(cdir, "scontrol-show-node.txt"), "w", encoding="utf-8") as fh:
                        fh.write(RM.scontrol_show_node(st))
                    self._alloc_tres(cdir, alloc)
                    self.jobs_moved.discard(h)
                path = os.path.join(cdir, "capture.json")
                with open(path, encoding="utf-8") as fh:
                    meta = json.load(fh)
                meta["captured_at"] = datetime.datetime.fromtimestamp(at, tz=datetime.timezone.utc).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"
                )
                with open(path, "w", encoding="utf-8") as fh:
                    json.dump(meta, fh)
            out[h] = {"capture_dir": cdir, "rack": rack}
        return out

    @staticmethod
    def _alloc_tres(cdir: str, gpus: int) -> None:
        """The node's AllocTRES as scontrol prints it with jobs on it (cpu, mem, gres/gpu); empty when idle."""
        if not gpus:
            return
        path = os.path.join(cdir, "scontrol-show-node.txt")
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        tres = "   AllocTRES=cpu=%d,mem=%dM,gres/gpu=%d\n" % (28 * gpus, 250000 * gpus, gpus)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text.replace("   AllocTRES=\n", tres, 1))


def _incident_for(conn, tables, f: dict):
    """The ledger's incident of fault ``f``: the node's (or, for the rack, the cluster's) incident detected within
    the fault's life."""
    import sqlalchemy as sa  # pylint: disable=import-outside-toplevel

    inc = tables["incidents"]
    q = sa.select(inc).where(inc.c.detected_at <= f["repair"] + 1.0).order_by(inc.c.detected_at)
    q = q.where(inc.c.host == f["host"]) if f["host"] else q.where(inc.c.host.is_(None), inc.c.severity == "P0")
    for row in conn.execute(q).mappings():
        if row["detected_at"] >= f["start"] - 3600.0:
            return dict(row)
    return None


def simulate(t: dict, out: str, quiet: bool = False) -> dict:
    """Run the inspections of timeline ``t`` into a fresh store under ``out``; returns the service report."""
    from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import report as _report
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_incidents, ledger_run, open_store

    shutil.rmtree(out, ignore_errors=True)
    state_dir = os.path.join(out, "state")
    os.makedirs(state_dir, mode=0o700)
    sla = _policy.merge_policy(_policy.DEFAULT_POLICY, {})["sla"]
    world = World(t, out)
    events = _events(t)
    windows = {h: [] for h in t["hosts"]}
    for w in t["windows"]:
        for h in w["hosts"]:
            if h in w.get("reserved", ()):  # not inventory data: the guard's reservation writes it (_realtime)
                continue
            windows[h].append(
                {"name": w["name"], "start": _iso_local(w["start"]), "end": _iso_local(w["end"]), "timezone": "UTC"}
            )
    pending = {f["id"]: dict(f["steps"]) for f in t["faults"]}
    runs, at, t0 = 0, t["start"], time.time()
    while at < t["end"]:
        while events and events[0][0] <= at:
            when, _o, kind, payload = events.pop(0)
            if kind in ("alert", "resv_create", "resv_delete"):
                _realtime(kind, payload, when, world, state_dir, sla)
            else:
                world.apply(kind, payload, when)
        hosts = world.hosts_at(at)
        now = datetime.datetime.fromtimestamp(at, tz=datetime.timezone.utc)
        report = _inspect.inspect_nodes(hosts, state_dir=state_dir, now=now, workers=1, include_facts=True)
        prepared = ledger_run.prepare(report, state_dir, None, sla)
        prepared["windows_by_host"] = windows
        ledger_run.record(prepared, report, sla)
        _operator(t, pending, at, state_dir, sla, open_store, ledger_incidents)
        runs += 1
        if not quiet and runs % 100 == 0:
            print("  %d inspections, simulated %s, %.0f s" % (runs, now.strftime("%Y-%m-%d %H:%M"), time.time() - t0))
        at += t["interval_s"]
    store = open_store(state_dir=state_dir)
    try:
        period = {"start": t["start"], "end": t["end"], "label": "truth"}
        rep = _report.compute(store, period, policy_sla=sla, now=t["end"])
        from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_schema

        with store.read() as conn:
            rep["_incidents"] = {f["id"]: _incident_for(conn, ledger_schema.tables().tables, f) for f in t["faults"]}
    finally:
        store.close()
    rep["_runs"] = runs
    return rep


def _realtime(kind: str, payload: dict, when: float, world: World, state_dir: str, sla: dict) -> None:
    """What reaches the ledger between inspections: an alert through the real-time entry
    (``ledger_incidents.record_realtime``), the change guard's reservation through ``ledger_windows``."""
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import (
        ledger_incidents,
        ledger_windows,
        open_store,
    )

    store = open_store(state_dir=state_dir)
    try:
        if kind == "alert":
            event = alert_event(payload, world.states[payload["host"]])
            out = ledger_incidents.record_realtime(store, [event], now=when, sla=sla)
            if out["refused"]:
                raise RuntimeError("the ledger refused the alert of %s: %s" % (payload["id"], out["refused"]))
        else:
            state = "present" if kind == "resv_create" else "absent"
            text = scontrol_reservation(payload) if state == "present" else None
            ledger_windows.reservation_to_ledger(store, payload["name"], state, when, text=text)
    finally:
        store.close()


def _operator(t, pending, at, state_dir, sla, open_store, ledger_incidents) -> None:
    """The on-call engineer's steps, taken through the incident command's own function once the incident is in the
    ledger and the step's time has come (before the next inspection)."""
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_schema

    horizon = at + t["interval_s"]
    todo = [f for f in t["faults"] if pending[f["id"]] and f["start"] <= horizon]
    if not todo:
        return
    store = open_store(state_dir=state_dir)
    try:
        for f in todo:
            with store.read() as conn:
                row = _incident_for(conn, ledger_schema.tables().tables, f)
            if row is None:
                continue
            for step, name in (("ack", "acknowledge"), ("onsite", "onsite"), ("locate", "locate"), ("plan", "plan")):
                when = pending[f["id"]].get(step)
                if when is None or when > horizon:
                    continue
                ledger_incidents.apply_step(
                    store,
                    {"incident": row["incident_id"], "step": name, "by": "oncall", "cause": "simulated %s" % f["kind"],
                     "now": max(when, row["detected_at"])},
                    sla,
                )  # fmt: skip
                del pending[f["id"]][step]
    finally:
        store.close()


# ---------------------------------------------------------------------------------------------- scoring
def score(t: dict, k: dict, rep: dict) -> list:
    """(figure, expected, got, tolerance, ok) lines."""
    lines = []
    tol_a, tol_t = k["tolerance"]["availability_points"], k["tolerance"]["time_s"]
    av = rep["availability"]

    def num(name, exp, got, tol):
        ok = got is not None and abs(float(got) - float(exp)) <= tol
        lines.append((name, exp, got, tol, ok))

    num("availability.cluster", k["availability"]["cluster"], av["cluster"], tol_a)
    for h, exp in sorted(k["availability"]["nodes"].items()):
        num(
            "availability.nodes.%s" % h,
            exp,
            av["nodes"].get(h),
            max(tol_a, 100.0 * tol_t * 2 / (t["end"] - t["start"])),
        )
    gh = tol_t / T.HOUR * t["gpus"]
    n_drains = sum(len(w["drains"]) for w in t["windows"])
    num(
        "availability.planned_gpu_hours",
        k["availability"]["planned_gpu_hours"],
        av["planned_gpu_hours"],
        2 * gh * n_drains,
    )
    n_down = sum(len(f["hosts"]) for f in t["faults"] if f["down"])
    num(
        "availability.unplanned_gpu_hours",
        k["availability"]["unplanned_gpu_hours"],
        av["unplanned_gpu_hours"],
        2 * gh * n_down,
    )
    num("availability.unknown_gpu_hours", k["availability"]["unknown_gpu_hours"], av["unknown_gpu_hours"], gh)
    lines.append(("incidents.by_severity", k["incidents_by_severity"], rep["incidents"]["by_severity"], 0,
                  k["incidents_by_severity"] == rep["incidents"]["by_severity"]))  # fmt: skip
    for inc in k["incidents"]:
        row = rep["_incidents"].get(inc["id"])
        if row is None:
            lines.append(("incident %s" % inc["id"], "opened", None, 0, False))
            continue
        if inc.get("by_alert"):
            num(
                "incident %s detected (alert)" % inc["id"], inc["detect"], row["detected_at"], k["tolerance"]["alert_s"]
            )
        else:
            num("incident %s detected" % inc["id"], inc["detect"], row["detected_at"], tol_t)
        num("incident %s acknowledged" % inc["id"], inc["ack"], row["acknowledged_at"], tol_t)
        num("incident %s restored" % inc["id"], inc["repair"], row["restored_at"], tol_t)
        lines.append(
            (
                "incident %s severity" % inc["id"],
                inc["severity"],
                row["severity"],
                0,
                inc["severity"] == row["severity"],
            )
        )
    ids = {i: (r or {}).get("incident_id") for i, r in rep["_incidents"].items()}
    got = set()
    for b in rep["sla"]["breach_details"]:
        fid = next((f for f, iid in ids.items() if iid == b["incident_id"]), b["incident_id"])
        got.update("%s:%s" % (fid, c) for c in b["clocks"])
    ambiguous = set(k["ambiguous"])
    lines.append(
        ("sla.breaches", sorted(k["breaches"]), sorted(got - ambiguous), 0, set(k["breaches"]) == got - ambiguous)
    )
    for cls, exp in k["mttr_h"].items():
        num("mttr_h.%s" % cls, exp, rep["mttr_h"].get(cls), tol_t / T.HOUR)
    for cls, exp in k["mtbf_h"].items():
        num("mtbf_h.%s" % cls, exp, rep["mtbf_h"].get(cls), 0.01 * exp + tol_t / T.HOUR)
    num("capacity.peak_allocated_share", k["capacity_peak"], rep["capacity"]["peak_allocated_share"],
        k["tolerance"]["capacity_share"])  # fmt: skip
    offenders = sorted(r["host"] for r in rep["repeat_offenders"]["nodes"])
    lines.append(("repeat_offenders", k["repeat_offenders"], offenders, 0, offenders == k["repeat_offenders"]))
    lines.append(
        ("sla.targets", T.TERMS["targets"], rep["sla"]["targets"], 0, rep["sla"]["targets"] == T.TERMS["targets"])
    )
    return lines


def print_score(lines: list, runs: int, seconds: float) -> bool:
    print("service report vs fault truth")
    for name, exp, got, tol, ok in lines:
        print(
            "%-44s expected %-14s got %-14s tolerance %-8s %s"
            % (name, _short(exp), _short(got), _short(tol), "ok" if ok else "FAIL")
        )
    bad = [line for line in lines if not line[4]]
    print("%d figures, %d FAIL; %d inspections in %.0f s" % (len(lines), len(bad), runs, seconds))
    return not bad


def _short(v) -> str:
    if isinstance(v, float):
        return "%.3f" % v
    text = json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else str(v)
    return text if len(text) <= 60 else text[:57] + "..."


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/truth")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--start", default="2026-07-01", help="UTC date the period starts (default: 2026Q3)")
    ap.add_argument("--days", type=float, default=92.0)
    ap.add_argument("--interval-h", type=float, default=2.0, help="the inspection schedule, hours")
    args = ap.parse_args(argv)
    start = datetime.datetime.fromisoformat(args.start).replace(tzinfo=datetime.timezone.utc).timestamp()
    t = T.draw(args.seed, args.nodes, start, args.days, args.interval_h * T.HOUR)
    k = T.key(t)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    rep = simulate(t, os.path.join(args.out, "run"))
    with open(os.path.join(args.out, "timeline.json"), "w", encoding="utf-8") as fh:
        json.dump(t, fh, indent=1)
    with open(os.path.join(args.out, "key.json"), "w", encoding="utf-8") as fh:
        json.dump(k, fh, indent=1)
    with open(os.path.join(args.out, "service-report.json"), "w", encoding="utf-8") as fh:
        json.dump({x: y for x, y in rep.items() if not x.startswith("_")}, fh, indent=1, default=str)
    return 0 if print_score(score(t, k, rep), rep["_runs"], time.time() - t0) else 1


if __name__ == "__main__":
    sys.exit(main())
