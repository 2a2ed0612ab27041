# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real-time chain on the test bed (tests/testbed/realtime.sh), driven from Python: inject a fault the way
it happens (the node's simulator state that the fake tools and the IB sysfs read), then watch each stage with
its own clock: the health check's verdict (its state file), Prometheus's alert, the audit log's run_start of the
playbook ansible-rulebook ran, and the action in Slurm. Shared by tests/integration/test_realtime_chain.py and
bench/bench_realtime.py. Every wait polls a condition against a deadline."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

LIB = Path(__file__).resolve().parent
REPO = LIB.parents[2]
HC_STATE = "/var/lib/gpuops/health_check/state.json"
#: the Redfish emulator realtime.sh starts in the hub netns (its test-only account) and the first node's system
BMC = "https://127.0.0.1:8443"
BMC_AUTH = "admin:gpuops-Emul4ted-pw"
BMC_SYSTEM = "/redfish/v1/Systems/00000000-0000-0000-0000-000000000001"


def _forget_claims(state_dir: Path) -> None:
    """Drop the isolation guard's claims from the state dir's store (``gpuops.db``, table ``guard_claims``: where the
    guard keeps them since issue 36), so that each trial starts without the earlier trials' claims."""
    import sqlite3  # pylint: disable=import-outside-toplevel

    db = state_dir / "gpuops.db"
    if db.exists():
        conn = sqlite3.connect(str(db), timeout=30)
        try:
            with conn:
                conn.execute("DELETE FROM guard_claims")
        except sqlite3.OperationalError:  # no such table yet: no claim either
            pass
        finally:
            conn.close()


def _epoch(iso: str) -> float:
    iso = iso.rstrip("Z")
    if "." in iso:  # Prometheus writes nanoseconds; datetime takes microseconds
        head, frac = iso.split(".", 1)
        iso = "%s.%s" % (head, frac[:6])
    return datetime.datetime.fromisoformat(iso).replace(tzinfo=datetime.timezone.utc).timestamp()


class Chain:
    def __init__(self, root: str):
        self.root = Path(root)
        self.rt = self.root / "realtime"
        if os.environ.get("GPUOPS_TB_PREFIX"):
            prefix = os.environ["GPUOPS_TB_PREFIX"]
        elif str(self.root) == "/tmp/gpuops-tb":
            prefix = "gpuops"
        else:
            prefix = "g" + hashlib.md5(str(self.root).encode()).hexdigest()[:6]
        self.hub = prefix + "-hub"
        self.nodes = sorted(p.name for p in (self.root / "nodes").iterdir())
        self.last_leak = 0.0  # when the last timed leak was injected (leak_heal waits for its run to end)

    # --- plumbing -------------------------------------------------------------------------------------------
    def run(self, cmd: List[str], timeout: float = 30, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check)

    def on_node(self, host: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        env_tb = "GPUOPS_TB=%s" % self.root
        return self.run(["env", env_tb, "bash", str(LIB.parent / "testbed.sh"), "node", host] + list(cmd), check=check)

    def http(self, url: str) -> Any:
        out = self.run(["ip", "netns", "exec", self.hub, "curl", "-fsS", "--max-time", "3", url]).stdout
        return json.loads(out)

    def prom(self, path: str, **params: str) -> Any:
        q = ("?" + urllib.parse.urlencode(params)) if params else ""
        return self.http("http://127.0.0.1:9090" + path + q)["data"]

    @staticmethod
    def wait(pred: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = pred()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
            time.sleep(interval)

    # --- node state -----------------------------------------------------------------------------------------
    def state_path(self, host: str) -> Path:
        return self.root / "nodes" / host / "state.json"

    def edit(self, host: str, fn: Callable[[Dict[str, Any]], None]) -> None:
        path = self.state_path(host)
        state = json.loads(path.read_text(encoding="utf-8"))
        fn(state)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)

    def sysfs(self, host: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO / "tools"))
        cmd = [sys.executable, str(LIB / "simstate.py"), "sysfs", str(self.state_path(host))]
        subprocess.run(cmd + [str(self.root / "nodes" / host / "sysfs")], env=env, check=True, timeout=30)

    def slurm_state(self, host: str) -> str:
        out = self.run([str(self.root / "bin" / "sinfo"), "-h", "-N", "-n", host, "-o", "%T"], check=False).stdout
        return out.strip()

    def drained(self, host: str) -> bool:
        return "drain" in self.slurm_state(host)

    def hc_after(self, host: str, after: float, verdict: int) -> Optional[Dict[str, Any]]:
        """The health check's last run when it ended after `after` with `verdict`."""
        run = self.hc_run(host)
        return run if run and run["timestamp"] > after and run["verdict"] == verdict else None

    def reason(self, host: str) -> Optional[str]:
        out = self.run([str(self.root / "bin" / "scontrol"), "show", "node", host], check=False).stdout
        m = re.search(r"Reason=(.*?)(?: \[[^\]]*\])?$", out, re.M)
        return m.group(1).strip() if m else None

    def hc_run(self, host: str) -> Optional[Dict[str, Any]]:
        proc = self.on_node(host, "cat", HC_STATE, check=False)
        return json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None

    # --- faults ---------------------------------------------------------------------------------------------
    def inject(self, kind: str, host: str, count: int = 1) -> float:
        """Apply the simulator fault `kind` (tools/simnode catalogue) `count` times; the wall time after the
        write (the fault is visible to the node's tools from then on)."""
        sys.path.insert(0, str(REPO / "tools"))
        from simnode import faults  # noqa: PLC0415 - the bed's simulator, on the path only here

        def apply(s: Dict[str, Any]) -> None:
            s["now"] = time.time()
            rng = random.Random(7)
            faults.apply(s, kind, rng)
            if count > 1:  # a storm: the same kernel line repeated (one GPU, one code)
                line = [ln for ln in s["kernel_log"] if "Xid" in ln["msg"]][-1]
                s["kernel_log"].extend([dict(line) for i in range(count - 1)])

        self.edit(host, apply)
        if kind.startswith("ib"):
            self.sysfs(host)
        return time.time()

    def heal(self, host: str, timeout: float = 60) -> None:
        """The node's default state, the health check's memory of it forgotten, back in service, and a healthy
        verdict seen after that. Repeated until it holds: a health check run already under way with the old
        state (a 1,000-line kernel log makes it longer) can write its memory back and drain the node again."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._heal_once(host, min(30.0, max(1.0, deadline - time.monotonic())))
                return
            except AssertionError:
                if time.monotonic() > deadline:
                    raise

    def _heal_once(self, host: str, timeout: float) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO / "tools"))
        subprocess.run(
            [sys.executable, str(LIB / "simstate.py"), "init-many", str(self.root / "nodes"), host],
            env=env, check=True, timeout=60,
        )  # fmt: skip
        self.on_node(host, "rm", "-rf", os.path.dirname(HC_STATE))
        # each run is its own trial: the guard's flap window (a node isolated within the hour counts as out of
        # service even when resumed, docs/isolation.md) would refuse the next isolation on a 4-node bed
        marker = self.rt / "state" / "isolation" / (host + ".json")
        if marker.exists():
            marker.unlink()
        _forget_claims(self.rt / "state")
        if self.drained(host):
            self.run([str(self.root / "bin" / "scontrol"), "update", "NodeName=" + host, "State=RESUME"], check=False)
        healed = time.time()
        self.wait(lambda: self.slurm_state(host) == "idle", timeout, "%s idle" % host, interval=0.3)
        # a healthy verdict after the heal: the health check forgot the fault and has nothing to drain for
        self.wait(lambda: self.hc_after(host, healed, 0), timeout, "a healthy health check run on %s" % host, 0.5)
        if self.slurm_state(host) != "idle":  # a run between the resume and the verdict drained it again
            self.run([str(self.root / "bin" / "scontrol"), "update", "NodeName=" + host, "State=RESUME"], check=False)
            self.wait(lambda: self.slurm_state(host) == "idle", timeout, "%s idle" % host, interval=0.3)

    # --- observing the chain --------------------------------------------------------------------------------
    def alerts(self, node: Optional[str] = None, name: Optional[str] = None, state: Optional[str] = None) -> list:
        out = []
        for a in self.prom("/api/v1/alerts")["alerts"]:
            labels = a["labels"]
            if node and labels.get("node") != node or name and labels.get("alertname") != name:
                continue
            if state and a["state"] != state:
                continue
            out.append(a)
        return out

    def audit_runs(self, playbook: str, after: float) -> List[Dict[str, Any]]:
        """run_start records of `playbook` (a file name) in the EDA state dir's audit log, started after `after`."""
        path = self.rt / "state" / "audit" / "audit.log"
        if not path.exists():
            return []
        out = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("event") == "run_start" and str(rec.get("playbook", "")).endswith("/" + playbook):
                if _epoch(rec["time"]) > after:
                    out.append(rec)
        return out

    def outcomes(self, workflow: str, after: float) -> List[Dict[str, Any]]:
        out = []
        for f in sorted((self.rt / "state" / "runs" / workflow).glob("*.json")):
            rec = json.loads(f.read_text(encoding="utf-8"))
            if _epoch(rec["started"]) >= int(after):
                out.append(rec)
        return out

    def am_notified(self, alertname: str, node: str) -> bool:
        for a in self.http("http://127.0.0.1:9093/api/v2/alerts"):
            if a["labels"].get("alertname") == alertname and a["labels"].get("node") == node:
                return True
        return False

    # --- one fault, timed -----------------------------------------------------------------------------------
    def time_xid79(self, host: str, timeout: float = 60, count: int = 1) -> Dict[str, float]:
        """Xid 79 in the node's kernel log; slurmd's health check sees it and drains the node itself."""
        t0 = self.inject("xid79", host, count)
        self.wait(lambda: self.drained(host), timeout, "%s drained" % host, interval=0.05)
        verified = time.time()
        reason = self.reason(host) or ""
        if not reason.startswith(("gpuops: gpu.xid", "gpuops: gpu.missing")):
            raise AssertionError("%s drained for another reason: %r" % (host, reason))
        run = self.wait(lambda: self.hc_after(host, t0, 3), timeout, "the health check's verdict on %s" % host, 0.2)
        # the run drained the node before it wrote its verdict: its start + run time bounds detection and action
        seen = min(run["timestamp"], verified)
        return {"detect": seen - t0, "started": seen - t0, "verified": verified - t0, "hc_run_s": run["run_seconds"]}

    def time_ib_down(self, host: str, timeout: float = 180) -> Dict[str, float]:
        """IB port 1 of an HCA Disabled (sysfs + ibstat): slurmd's health check sees the expected port DOWN (an
        ib.port_state finding, verdict 3) and drains the node itself on the health_check_ib_down_runs-th
        consecutive run (default 3). Detection = the first such run; action started = the draining run's
        start; verified = DRAIN in Slurm. (IbPortDown, `for: 1m`, fires only if the port stays down.)"""
        self.wait(lambda: not self.alerts(node=host, name="IbPortDown"), timeout, "no IbPortDown of %s" % host, 0.5)
        t0 = self.inject("ib_port_down", host)
        seen: Dict[str, float] = {}

        def watch() -> bool:
            run = self.hc_run(host)
            if run and run["timestamp"] > t0 and any(f["check"] == "ib.port_state" for f in run["findings"]):
                seen.setdefault("detect", run["timestamp"])
                if (run.get("decision") or {}).get("action") == "drain":
                    seen.setdefault("started", run["timestamp"] - run["run_seconds"])
            return self.drained(host)

        self.wait(watch, timeout, "%s drained" % host, interval=0.1)
        verified = time.time()
        reason = self.reason(host) or ""
        if not reason.startswith("gpuops: ib.port_state"):
            raise AssertionError("%s drained for another reason: %r" % (host, reason))

        def drained_run() -> Optional[Dict[str, Any]]:
            r = self.hc_run(host)
            return r if r and r["timestamp"] > t0 and r["drained"] else None

        run = self.wait(drained_run, timeout, "the draining run's state on %s" % host, 0.2)
        if (run.get("decision") or {}).get("action") == "drain":
            seen.setdefault("started", run["timestamp"] - run["run_seconds"])
            seen.setdefault("detect", run["timestamp"])
        seen.setdefault("started", verified)
        seen.setdefault("detect", seen["started"])
        return {k: seen[k] - t0 for k in ("detect", "started")} | {"verified": verified - t0}

    # --- the leak path: the Redfish emulator in the hub netns ---------------------------------------------------
    def redfish(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        cmd = ["ip", "netns", "exec", self.hub, "curl", "-fsSk", "--max-time", "5", "-u", BMC_AUTH, "-X", method]
        if body is not None:
            cmd += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
        out = self.run(cmd + [BMC + path]).stdout
        return json.loads(out) if out.strip() else None

    def power_state(self) -> str:
        return str(self.redfish("GET", BMC_SYSTEM).get("PowerState"))

    def leak_source(self) -> str:
        """The node whose BMC the leak watch polls (realtime.sh: the first node)."""
        doc = json.loads((self.rt / "leak-targets.json").read_text(encoding="utf-8"))
        return doc["targets"][0]["node"]

    def runs_ended(self, playbook: str, after: float) -> bool:
        """Every run of `playbook` started after `after` has its run_end in the audit log (none in flight)."""
        path = self.rt / "state" / "audit" / "audit.log"
        ids = {r["run_id"] for r in self.audit_runs(playbook, after)}
        if not ids:
            return True
        ended = set()
        for line in path.read_text(encoding="utf-8").splitlines():
            if '"run_end"' in line:
                try:
                    ended.add(json.loads(line).get("run_id"))
                except ValueError:
                    continue
        return ids <= ended

    def leak_heal(self, timeout: float = 120, after: float = 0) -> None:
        """No leak, the system On, and the node back in service (leak_response set it DOWN and drained it).
        First the leak_response runs started after `after` end: powering the system On under a run that is still
        reading the power state back fails that run and holds the next leak event in the ruleset's queue."""
        after = after or self.last_leak
        self.wait(lambda: self.runs_ended("leak_response.yml", after), timeout, "leak_response.yml to end", 0.5)
        self.redfish("DELETE", "/emulator/faults")
        if self.power_state() != "On":
            self.redfish("POST", BMC_SYSTEM + "/Actions/ComputerSystem.Reset", {"ResetType": "On"})
        self.wait(lambda: self.power_state() == "On", 30, "the system On", 0.3)
        self.heal(self.leak_source(), timeout=timeout)

    def leak_detected(self, after: float) -> Optional[float]:
        """When the leak watch logged the detector going Critical (rulebook log, local time), after `after`."""
        path = self.rt / "rulebook.log"
        if not path.exists():
            return None
        pat = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}).*gpuops\.cluster\.redfish_leak: .* -> Critical")
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            m = pat.match(line)
            if m:
                t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                if t >= after - 0.5:
                    return t
        return None

    def time_leak(self, timeout: float = 120) -> Dict[str, float]:
        """The emulator's ColdPlate0 LeakDetector Critical: the rulebook's leak watch (gpuops.cluster.redfish_leak)
        -> playbooks/leak_response.yml (the guard, the audit) -> the system's power Off on the emulator."""
        self.wait(lambda: self.power_state() == "On", 30, "the system On", 0.3)
        t0 = time.time()
        self.redfish("POST", "/emulator/faults", {"leak": "Critical"})
        run = self.wait(lambda: self.audit_runs("leak_response.yml", t0), timeout, "leak_response.yml started", 0.1)
        started = _epoch(run[0]["time"])
        self.wait(lambda: self.power_state() == "Off", timeout, "the system powered Off", 0.1)
        verified = time.time()
        detect = self.leak_detected(t0) or started
        self.last_leak = t0
        return {"detect": detect - t0, "started": started - t0, "verified": verified - t0}
