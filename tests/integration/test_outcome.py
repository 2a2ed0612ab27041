# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 21: the disruptive playbooks tell the truth - exit code, per-node outcome file, audit records,
guard claims and Slurm reasons - on the test bed with real Slurm (isolate, resume, gpu_reset).

Each test runs the real playbook (``ansible-playbook``, the audit callback enabled, GPUOPS_STATE_DIR set) and
reads what an operator, AWX or the ticket hook would read: the exit code, the newest
``<state_dir>/runs/<workflow>/*.json`` and the audit chain ``<state_dir>/audit/audit.log``.
"""

from __future__ import annotations

import json
import os
import pwd
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import _state_db
from _fault_matrix import SLURMCTLD_GONE

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
from simnode import faults  # noqa: E402

VENV_BIN = REPO / ".venv" / "bin"
TIGHT = {"max_count_cluster": 1, "max_share_partition": 1, "max_share_rack": 1, "max_share_cluster": 1}


@pytest.fixture(scope="module", autouse=True)
def _clean_bed_first(testbed):
    testbed.reset()


@pytest.fixture
def state_dir(tmp_path):
    d = tmp_path / "state"
    d.mkdir()
    return d


def _playbook(testbed, state_dir: Path, name: str, extra: Dict[str, Any], args: Optional[List[str]] = None):
    env = dict(testbed.env, ANSIBLE_CALLBACKS_ENABLED="gpuops.cluster.audit", GPUOPS_STATE_DIR=str(state_dir))
    env.pop("GPUOPS_AUDIT_LOG", None)
    env.pop("GPUOPS_AUDIT_HEAD", None)
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(testbed.inventory), str(REPO / "playbooks" / name)]
    cmd += ["-e", json.dumps(extra)] + list(args or [])
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(REPO), timeout=300, check=False)


def _outcome(state_dir: Path, workflow: str) -> Dict[str, Any]:
    files = sorted((state_dir / "runs" / workflow).glob("*.json"), key=lambda p: p.stat().st_mtime)
    assert files, "no outcome file under %s" % (state_dir / "runs" / workflow)
    return json.loads(files[-1].read_text())


def _audit(state_dir: Path) -> List[Dict[str, Any]]:
    log = state_dir / "audit" / "audit.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _reason(testbed, host: str) -> str:
    out = testbed.scontrol("show", "node", host)
    line = out.split("Reason=", 1)[1].strip().split("\n")[0] if "Reason=" in out else ""
    return re.sub(r" \[[^\]@\s]+@[^\]]+\]$", "", line)  # scontrol appends " [user@time]"


def _undrain(testbed, *hosts):
    testbed.scontrol("update", "NodeName=%s" % ",".join(hosts), "State=RESUME", check=False)


def _fault_scontrol(testbed, tmp_path: Path, trigger: str) -> Path:
    """An scontrol that SIGKILLs the bed's slurmctld the first time it is called with exactly ``trigger``
    (then runs the real one): slurmctld dies in the middle of the isolation, at a known step. The real scontrol
    runs once the daemon is gone (its /proc entry gone or a zombie; at most 10 s): the kill lands before the
    request, not during it."""
    wrapper = tmp_path / "scontrol-killing-slurmctld"
    flag = tmp_path / "slurmctld-killed"
    pidfile = testbed.root / "slurm-state" / "slurmctld.pid"
    wrapper.write_text(
        "#!/bin/sh\n"
        'if [ "$*" = "%s" ] && [ ! -e %s ]; then\n'
        '  touch %s; pid=$(cat %s); kill -9 "$pid"; n=0\n'
        '  while [ "$n" -lt 200 ] && [ -r "/proc/$pid/status" ] && ! grep -q "^State:.Z" "/proc/$pid/status"; do\n'
        "    n=$((n + 1)); sleep 0.05\n"
        "  done\n"
        "fi\n"
        'exec %s "$@"\n' % (trigger, flag, flag, pidfile, testbed.scontrol_path)
    )
    wrapper.chmod(0o755)
    return wrapper


def _restart_slurmctld(testbed):
    """Start slurmctld again from its saved state (as slurm.sh up does, without -c), wait for every node."""
    conf = testbed.root / "slurm" / "slurm.conf"
    testbed.on_hub("unshare", "--uts", "sh", "-c", "hostname tb-head; SLURM_CONF=%s exec /usr/sbin/slurmctld" % conf)

    def answering():
        out = testbed.slurm("sinfo", "-h", "-N", "-o", "%N %T", check=False)
        states = dict(line.split() for line in out.splitlines() if len(line.split()) == 2)
        return len(states) == len(testbed.nodes) and not any(s.startswith(("unk", "down")) for s in states.values())

    testbed.wait_for(answering, timeout=60, interval=0.5, what="slurmctld back with every node registered")


def _isolate_vars(nodes, state_dir, **extra):
    v = {
        "isolate_nodes": nodes,
        "gpuops_ticket": "INC-4712",
        "gpuops_change_id": "CHG-21",
        "isolate_reason": "Xid 79 fallen off the bus",
        "gpuops_state_dir": str(state_dir),
        "isolate_requeue_after": 0,
        "isolate_node_marker": False,
    }
    v.update(extra)
    return v


def test_slurmctld_killed_mid_isolate_exits_2_and_frees_the_cap(testbed, tmp_path, state_dir):
    """Observation 1: the drain of the first node went through, then slurmctld died. Before: exit 0, a `done`
    claim that kept counting for an hour and refused the next, really faulty node. Now: exit 2, per-node
    outcomes failed/unconfirmed, claims released as failed, and the next isolation is allowed."""
    a, b, c = testbed.nodes[0], testbed.nodes[1], testbed.nodes[2]
    wrapper = _fault_scontrol(testbed, tmp_path, "show node %s" % b)
    ctl = {"host": "slurm_head", "scontrol_path": str(wrapper)}
    try:
        proc = _playbook(
            testbed, state_dir, "isolate.yml", _isolate_vars([a, b], state_dir, gpuops_slurm_controller=ctl)
        )
    finally:
        _restart_slurmctld(testbed)
    assert proc.returncode == 2, proc.stdout[-4000:]
    out = _outcome(state_dir, "isolate")
    assert out["success"] is False and out["exit_code"] == 2 and out["ticket"] == "INC-4712"
    assert out["nodes"][a]["outcome"] == "unconfirmed" and out["nodes"][b]["outcome"] == "failed"
    # the tool's own error reached the record: one of the texts a client prints for a controller that is gone
    assert any(t in out["nodes"][b]["error"] for t in SLURMCTLD_GONE), out["nodes"][b]
    assert "gpuops outcome: isolate" in proc.stdout and "INCOMPLETE" in proc.stdout
    hist = _state_db.claims(state_dir)
    assert {e["node"]: e["state"] for e in hist} == {a: "failed", b: "failed"}
    # the audit trail names each node, the ticket, the change and the tool's own error text
    recs = [r for r in _audit(state_dir) if r.get("event") == "outcome"]
    assert {r["node"]: r["outcome"] for r in recs} == {a: "unconfirmed", b: "failed"}
    assert all(r["ticket"] == "INC-4712" and r["change_id"] == "CHG-21" for r in recs)
    assert any(t in (r.get("msg") or "") for r in _audit(state_dir) for t in SLURMCTLD_GONE)
    # reality: whatever slurmctld recovered, the nodes are in service now (an operator undid a half drain)
    _undrain(testbed, a, b)
    testbed.wait_for(lambda: all(testbed.node_state(n).rstrip("*") == "IDLE" for n in (a, b)), timeout=30)
    # a different, really faulty node: within a cap of ONE node out of service it must be isolated
    proc = _playbook(testbed, state_dir, "isolate.yml", _isolate_vars([c], state_dir, isolate_guard_policy=TIGHT))
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert _outcome(state_dir, "isolate")["nodes"][c]["outcome"] == "done"
    assert testbed.node_state(c) == "IDLE+DRAIN"
    _undrain(testbed, c)


def test_guard_refusal_exits_2_with_refused_outcome_and_records(testbed, tmp_path, state_dir):
    """Observation 2 and 3: a guard refusal exits 2, not 0, and leaves a record naming node, ticket, change
    and decision; the isolated node's record names the node, not localhost."""
    a, b = testbed.nodes[3], testbed.nodes[4]
    proc = _playbook(testbed, state_dir, "isolate.yml", _isolate_vars([a, b], state_dir, isolate_guard_policy=TIGHT))
    assert proc.returncode == 2, proc.stdout[-4000:]
    out = _outcome(state_dir, "isolate")
    assert out["counts"] == {"done": 1, "refused": 1}
    refused = [n for n, e in out["nodes"].items() if e["outcome"] == "refused"][0]
    done = a if refused == b else b
    assert "blast-radius guard" in out["nodes"][refused]["detail"] and "limit 1" in out["nodes"][refused]["detail"]
    assert sum("DRAIN" in testbed.node_state(n) for n in (a, b)) == 1 and "DRAIN" in testbed.node_state(done)
    recs = _audit(state_dir)
    mine = {r["node"]: r for r in recs if r.get("event") == "outcome"}
    assert mine[refused]["outcome"] == "refused" and "refused by the blast-radius guard" in mine[refused]["decision"]
    assert mine[done]["outcome"] == "done" and mine[done]["ticket"] == "INC-4712"
    assert mine[done]["change_id"] == "CHG-21"
    # the callback's own task records: the drain names the node (loop item), the ticket is the run's ticket
    drains = [r for r in recs if r.get("event") == "task" and r.get("task", "").endswith("Isolate the nodes in Slurm")]
    assert drains and all(r["ticket"] == "INC-4712" for r in drains)
    assert {n for r in drains for n in r.get("nodes") or []} == {done}
    guard = [r for r in recs if r.get("event") == "task" and "Blast-radius guard" in (r.get("task") or "")]
    assert guard and guard[0]["refused"] == [{"node": refused, "reason": out["nodes"][refused]["detail"]}]
    _undrain(testbed, done)


def test_resume_of_an_unreachable_node_is_refused_with_exit_2(testbed, tmp_path, state_dir):
    node = testbed.nodes[5]
    testbed.scontrol("update", "NodeName=%s" % node, "State=DRAIN", "Reason=gpuops: Xid 79 [INC-4712]")
    (testbed.node_dir(node) / "no_return").touch()
    testbed.on_node(node, "/usr/local/sbin/gpuops-sim-reboot")
    testbed.wait_for(lambda: not testbed.running_on(node, "sshd"), timeout=15, what="sshd gone")
    try:
        proc = _playbook(
            testbed,
            state_dir,
            "resume.yml",
            {"resume_nodes": [node], "gpuops_ticket": "INC-4712", "gpuops_state_dir": str(state_dir)},  # fmt: skip
        )
    finally:
        testbed.reset()
    assert proc.returncode == 2, proc.stdout[-4000:]
    out = _outcome(state_dir, "resume")
    assert out["nodes"][node]["outcome"] == "refused" and out["counts"] == {"refused": 1}
    assert "unreachable" in out["nodes"][node]["detail"] or "inspection" in out["nodes"][node]["detail"]
    assert [r["node"] for r in _audit(state_dir) if r.get("event") == "outcome"] == [node]


def test_gpu_reset_refused_by_a_process_says_so_in_the_slurm_reason(testbed, tmp_path, state_dir):
    """Observation 5: after a refused reset the reason says the truth, not "GPU reset 2"."""
    node = testbed.nodes[6]
    with testbed.edit_state(node) as s:
        faults.apply(s, "row_remap_pending", random.Random(4), gpu=2)
        s["gpus"][2]["processes"] = [{"pid": 4242, "name": "python3", "type": "C", "used_mib": 1000}]
    proc = _playbook(
        testbed,
        state_dir,
        "gpu_reset.yml",
        {"gpuops_ticket": "INC-4712", "gpuops_state_dir": str(state_dir), "gpuops_targets": node},  # fmt: skip
    )
    assert proc.returncode == 2, proc.stdout[-4000:]
    assert _reason(testbed, node) == "gpuops: GPU reset refused: process 4242 [INC-4712]"
    assert testbed.node_state(node) == "IDLE+DRAIN"
    out = _outcome(state_dir, "gpu_reset")
    assert out["nodes"][node]["outcome"] == "refused" and "4242" in out["nodes"][node]["error"]
    marker = json.loads((state_dir / "isolation" / ("%s.json" % node)).read_text())
    assert marker["who"] not in ("", "unknown", None)
    _undrain(testbed, node)


def test_marker_who_without_user_is_the_controller_user(testbed, tmp_path, state_dir, monkeypatch):
    """Observation 5: with USER (and LOGNAME) unset the marker's `who` is the controller user, never `unknown`."""
    node = testbed.nodes[7]
    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("LOGNAME", raising=False)
    proc = _playbook(testbed, state_dir, "isolate.yml", _isolate_vars([node], state_dir))
    assert proc.returncode == 0, proc.stdout[-4000:]
    marker = json.loads((state_dir / "isolation" / ("%s.json" % node)).read_text())
    assert marker["who"] == pwd.getpwuid(os.getuid()).pw_name
    _undrain(testbed, node)
