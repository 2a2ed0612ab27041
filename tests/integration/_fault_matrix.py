"""Helpers of the fault-matrix suite (test_fault_matrix.py): one run of a disruptive playbook, and the outcome
contract checks (docs/operations.md: outcome vocabulary, exit codes, outcome file, audit records)."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
OUTCOMES = ("done", "already", "skipped", "refused", "failed", "not_started", "left_drained", "unconfirmed")
SUCCESS = ("done", "already", "skipped")
#: fast, admissive guard policy (tests that test the cap pass their own)
OPEN = {"max_share_cluster": 1, "max_share_partition": 1, "max_share_rack": 1}
SSH_ARGS = "-C -o ControlMaster=auto -o ControlPersist=60s -o ServerAliveInterval=2 -o ServerAliveCountMax=3"
#: What a Slurm client prints when slurmctld is killed or stopped: which one depends on the moment the fault lands
#: (before the client connects, while it connects, or in the middle of its request), so a test that wants "the
#: tool's own error text" accepts any of them (libslurm's slurm_strerror texts and the socket errno texts).
#: tests/testbed/README.md "Fault switches".
SLURMCTLD_GONE = (
    "Unable to contact slurm controller",  # SLURMCTLD_COMMUNICATIONS_{CONNECTION,SEND,RECEIVE,SHUTDOWN}_ERROR
    "Transport endpoint is not connected",  # ENOTCONN: connected, then the daemon died under the request
    "Connection reset by peer",  # ECONNRESET
    "Connection refused",  # ECONNREFUSED
    "Broken pipe",  # EPIPE: the request written to a dead peer
    "Zero Bytes were transmitted or received",  # SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT
    "Socket timed out on send/recv operation",  # SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT (a frozen daemon)
    "Communication connection failure",  # SLURM_COMMUNICATIONS_CONNECTION_ERROR
)


class Run:
    """One ansible-playbook run of playbooks/<workflow>.yml against the bed with JSON extra vars, its own state
    dir (audit chain, guard history, outcome files) and the audit callback. ``start()`` runs it in the background
    (its output is collected line by line: ``wait_output(text)``), ``wait()`` / ``run()`` finish it."""

    def __init__(
        self,
        testbed,
        tmp: Path,
        workflow: str,
        extra: Dict[str, Any],
        state: Optional[Path] = None,
        inventories: Iterable[Path] = (),
        playbook: Optional[str] = None,
    ) -> None:
        self.workflow = workflow
        self.state = state or (tmp / "state")
        self.state.mkdir(parents=True, exist_ok=True)
        self.tmp = tmp
        ev = {"gpuops_state_dir": str(self.state)}
        ev.update(extra)
        n = len(list(tmp.glob("extra-*.json")))
        path = tmp / ("extra-%s-%d.json" % (workflow, n))
        path.write_text(json.dumps(ev), encoding="utf-8")
        self.cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(testbed.inventory)]
        for inv in inventories:
            self.cmd += ["-i", str(inv)]
        self.cmd += [str(REPO / "playbooks" / ("%s.yml" % (playbook or workflow))), "-e", "@%s" % path]
        self.env = dict(testbed.env)
        self.env.update(
            ANSIBLE_CALLBACKS_ENABLED="gpuops.cluster.audit",
            GPUOPS_STATE_DIR=str(self.state),
            ANSIBLE_SSH_ARGS=SSH_ARGS,
            ANSIBLE_TIMEOUT="5",
        )
        self.env.pop("USER", None)  # the maintenance marker must not rely on $USER (issue 21 item 5)
        self.proc: Optional[subprocess.Popen] = None
        self.lines: List[str] = []
        self.rc: Optional[int] = None
        self.seconds = 0.0
        self._t0 = 0.0
        self._reader: Optional[threading.Thread] = None

    # -- running -----------------------------------------------------------------------------------------
    def start(self) -> Run:
        self._t0 = time.monotonic()
        self.proc = subprocess.Popen(
            self.cmd, env=self.env, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def out(self) -> str:
        return "".join(self.lines)

    def wait_output(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.out:
            if self.proc is not None and self.proc.poll() is not None and self._reader is not None:
                self._reader.join(5)
                if text in self.out:
                    return
                raise AssertionError("the run ended before %r:\n%s" % (text, self.out[-4000:]))
            if time.monotonic() > deadline:
                raise AssertionError("no %r after %ss:\n%s" % (text, timeout, self.out[-4000:]))
            time.sleep(0.1)

    def wait(self, timeout: float = 240) -> Run:
        assert self.proc is not None
        try:
            self.rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("ansible-playbook ran over %ss:\n%s" % (timeout, self.out[-4000:]))
        finally:
            if self._reader is not None:
                self._reader.join(10)
            self.seconds = time.monotonic() - self._t0
        return self

    def run(self, timeout: float = 240) -> Run:
        return self.start().wait(timeout)

    # -- what it left ------------------------------------------------------------------------------------
    def outcome(self) -> Dict[str, Any]:
        """This run's outcome file, <state>/runs/<workflow>/<run_id>.json (the run id from the summary line it
        printed; else the newest file of the workflow: runs sharing a state dir)."""
        m = re.search(r"gpuops outcome: %s (\S+?):" % re.escape(self.workflow), self.out)
        own = self.state / "runs" / self.workflow / ("%s.json" % m.group(1)) if m else None
        if own is not None and own.exists():
            return json.loads(own.read_text(encoding="utf-8"))
        files = sorted((self.state / "runs" / self.workflow).glob("*.json"), key=lambda p: p.stat().st_mtime)
        assert files, "no outcome file under %s/runs/%s (rc %s):\n%s" % (
            self.state,
            self.workflow,
            self.rc,
            self.out[-4000:],
        )
        return json.loads(files[-1].read_text(encoding="utf-8"))

    def audit(self) -> List[Dict[str, Any]]:
        path = self.state / "audit" / "audit.log"
        if not path.exists():
            return []
        return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip().startswith("{")]

    def outcome_records(self, node: Optional[str] = None) -> List[Dict[str, Any]]:
        return [
            r
            for r in self.audit()
            if r.get("event") == "outcome"
            and r.get("workflow") == self.workflow
            and (node is None or r.get("node") == node)
        ]

    def tail(self) -> str:
        return "rc=%s after %.1f s\n%s" % (self.rc, self.seconds, self.out[-5000:])


def check_outcome(
    run: Run,
    expect: Dict[str, Iterable[str]],
    rc: int,
    ticket: Optional[str] = None,
    error: Union[str, Tuple[str, ...], None] = None,
    error_nodes: Iterable[str] = (),
) -> Dict[str, Any]:
    """The contract for one finished run: exit code, outcome file (schema, success, exit_code, counts, a node entry
    per requested node with an outcome from ``expect[node]``), the summary line in the output, and one audit
    record (event ``outcome``) per node naming it, its outcome and the ticket. ``error``: text that must reach
    the outcome file's and the audit record's error/detail of every node that failed, was refused or left
    drained or unconfirmed (the tool's own message; also for the nodes in ``error_nodes`` whatever their
    outcome); a tuple is the set of texts the fault can produce (e.g. SLURMCTLD_GONE): one of them must be there.
    Returns the outcome document."""
    texts = (error,) if isinstance(error, str) else tuple(error or ())
    assert run.rc == rc, "exit code %s, expected %s\n%s" % (run.rc, rc, run.tail())
    doc = run.outcome()
    assert doc["schema"] == "gpuops.outcome/v1" and doc["workflow"] == run.workflow, doc
    assert doc["exit_code"] == rc and doc["success"] is (rc == 0), doc
    if ticket is not None:
        assert doc["ticket"] == ticket, doc
    for node, allowed in expect.items():
        entry = doc["nodes"].get(node)
        assert entry is not None, "no outcome for %s: %s" % (node, doc["nodes"])
        assert entry["outcome"] in OUTCOMES
        assert entry["outcome"] in tuple(allowed), "%s: %s not in %s (%s)" % (node, entry["outcome"], allowed, entry)
        recs = run.outcome_records(node)
        assert recs, "no audit record of event 'outcome' for %s" % node
        rec = recs[-1]
        assert rec["outcome"] == entry["outcome"], (rec, entry)
        if ticket is not None:
            assert rec.get("ticket") == ticket, rec
        if texts and (node in (error_nodes or ()) or entry["outcome"] not in SUCCESS + ("not_started",)):
            text = json.dumps([entry.get("detail"), entry.get("error")])
            assert any(t in text for t in texts), "none of %r in the outcome of %s: %s" % (texts, node, entry)
            audit = json.dumps([rec.get("error"), rec.get("detail")])
            assert any(t in audit for t in texts), "none of %r in audit %s" % (texts, rec)
    counts: Dict[str, int] = {}
    for entry in doc["nodes"].values():
        counts[entry["outcome"]] = counts.get(entry["outcome"], 0) + 1
    assert {k: v for k, v in doc["counts"].items() if v} == counts, doc["counts"]
    assert doc["summary"] in run.out, "summary %r not printed" % doc["summary"]
    assert ("-> exit %d" % rc) in doc["summary"], doc["summary"]
    return doc


def reason(testbed, host: str) -> str:
    """The node's Slurm reason without Slurm's own ``[user@time]`` suffix."""
    out = testbed.scontrol("show", "node", host)
    if "Reason=" not in out:
        return ""
    text = out.split("Reason=", 1)[1].split("\n")[0].strip()
    head, sep, tail = text.rpartition(" [")
    return head if sep and "@" in tail else text


def drained(testbed, host: str) -> bool:
    return "DRAIN" in testbed.node_state(host)
