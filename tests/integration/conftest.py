# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures for the integration tests: the multi-node test bed (tests/testbed/testbed.sh).

`testbed` (session) gives paths, the inventory and helpers: run ansible / ansible-playbook against the bed
(ANSIBLE_PIPELINING=True, the collection from <repo>/build), run commands on a node or on the hub, call
Slurm, read and edit a node's simulator state, throw the fault switches (slurmctld down/killed/frozen, a node
cut off, a process on a GPU, a failing or hanging GPU reset; the BMC switches are on `bmc_emulators`), and
`reset()` every node to its default state (also run automatically after each test module that used the bed).

Bring the bed up with `make testbed-up` (or run everything with `make integration`). When it is not up,
tests that need it are skipped -- unless CI=true, where they fail: CI must never silently skip them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
TESTBED_SH = REPO / "tests" / "testbed" / "testbed.sh"
SIMSTATE = REPO / "tests" / "testbed" / "lib" / "simstate.py"
VENV_BIN = REPO / ".venv" / "bin"

# BMC emulator fixtures (written separately) load from here when present; pytest_plugins is not allowed in a
# non-root conftest, so import the module and expose its fixtures in this namespace.
_BMC_FIXTURES = Path(__file__).with_name("bmc_fixtures.py")
if _BMC_FIXTURES.exists():
    _spec = importlib.util.spec_from_file_location("gpuops_bmc_fixtures", _BMC_FIXTURES)
    _mod = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
    sys.modules["gpuops_bmc_fixtures"] = _mod
    _spec.loader.exec_module(_mod)  # type: ignore[union-attr]
    globals().update({k: v for k, v in vars(_mod).items() if not k.startswith("__") and k not in globals()})


#: Slurm's final job states (the base state sacct and squeue print for a job that has ended)
SLURM_FINAL_STATES = (
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "OUT_OF_MEMORY",
)


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


class Testbed:
    """Handle on a running test bed (see tests/testbed/README.md)."""

    __test__ = False  # not a test class

    def __init__(self, root: Path) -> None:
        self.root = root
        self.inventory = root / "inventory.yml"
        self.bin = root / "bin"
        self.scontrol_path = str(self.bin / "scontrol")
        self.nodes = sorted(p.name for p in (root / "nodes").iterdir() if p.is_dir())

    # -- environment -----------------------------------------------------------------------------------
    @property
    def env(self) -> Dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "PATH": "%s:%s" % (VENV_BIN, env.get("PATH", "")),
                "ANSIBLE_COLLECTIONS_PATH": str(REPO / "build"),
                "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
                "ANSIBLE_INVENTORY": str(self.inventory),
                "ANSIBLE_PIPELINING": "True",
                "ANSIBLE_HOST_KEY_CHECKING": "False",
                "ANSIBLE_RETRY_FILES_ENABLED": "False",
                "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_FORCE_COLOR": "0",
                "ANSIBLE_DEPRECATION_WARNINGS": "False",
                "GPUOPS_TB": str(self.root),
            }
        )
        return env

    # -- nodes ---------------------------------------------------------------------------------------
    def node_dir(self, host: str) -> Path:
        return self.root / "nodes" / host

    def state_path(self, host: str) -> Path:
        return self.node_dir(host) / "state.json"

    def load_state(self, host: str) -> Dict[str, Any]:
        return json.loads(self.state_path(host).read_text(encoding="utf-8"))

    def save_state(self, host: str, state: Dict[str, Any]) -> None:
        path = self.state_path(host)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)

    @contextlib.contextmanager
    def edit_state(self, host: str) -> Iterator[Dict[str, Any]]:
        """``with testbed.edit_state("gpu-node-03") as s: s["gpus"][2]["xid"] = ...`` (saved on exit)."""
        state = self.load_state(host)
        yield state
        self.save_state(host, state)

    def on_node(self, host: str, *cmd: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        """Run ``cmd`` inside a node (its netns, hostname, mounts) without SSH."""
        return self._run(["bash", str(TESTBED_SH), "node", host] + list(cmd), check=check, timeout=timeout)

    def on_hub(self, *cmd: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        return self._run(["bash", str(TESTBED_SH), "hub"] + list(cmd), check=check, timeout=timeout)

    def boot_id(self, host: str) -> str:
        return (self.node_dir(host) / "boot_id").read_text().strip()

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 20, interval: float = 0.2, what: str = "") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError("timed out after %s s waiting for %s" % (timeout, what or predicate))
            time.sleep(interval)

    # -- slurm ---------------------------------------------------------------------------------------
    def slurm(self, tool: str, *args: str, check: bool = True) -> str:
        return self._run([str(self.bin / tool)] + list(args), check=check, timeout=30).stdout

    def scontrol(self, *args: str, check: bool = True) -> str:
        return self.slurm("scontrol", *args, check=check)

    def node_state(self, host: str) -> str:
        """Slurm state as scontrol prints it, e.g. ``IDLE+DRAIN``."""
        for tok in self.scontrol("show", "node", host).split():
            if tok.startswith("State="):
                return tok[len("State=") :]
        raise AssertionError("no State= for %s" % host)

    def sbatch(self, *args: str) -> int:
        """Submit a batch job (runs in /tmp, small memory); returns its id."""
        out = self.slurm("sbatch", "--parsable", "--chdir=/tmp", "--mem=100", "-o", "/dev/null", *args)
        return int(out.strip().split(";")[0])

    def job_state(self, job_id: int) -> str:
        out = self.slurm("squeue", "-h", "-j", str(job_id), "-o", "%T", check=False)
        return out.strip() or "GONE"

    # -- accounting (slurmdbd) -----------------------------------------------------------------------------
    def accounting_window(self) -> List[Dict[str, Any]]:
        """Every job sacct holds from the last 24 hours (the window an inspection reads), oldest first:
        ``{"job_id", "state", "nodes"}``; ``state`` is sacct's base state (``CANCELLED by 0`` -> ``CANCELLED``),
        ``nodes`` the NodeList expanded by ``scontrol show hostnames`` (a multi-node job's list is compressed)."""
        out = self.slurm("sacct", "-n", "-X", "-P", "-a", "-S", "now-24hours", "-o", "JobID,State,NodeList")
        rows: List[Dict[str, Any]] = []
        expanded: Dict[str, List[str]] = {}
        for line in out.splitlines():
            fields = line.strip().split("|")
            if len(fields) != 3:
                continue
            job_id, state, nodes = fields
            if nodes not in expanded:
                listed = nodes and nodes not in ("None assigned", "(null)")
                expanded[nodes] = self.scontrol("show", "hostnames", nodes).split() if listed else []
            rows.append({"job_id": job_id, "state": (state.split() or [""])[0], "nodes": expanded[nodes]})
        return rows

    def accounting_lag(self) -> List[str]:
        """Why slurmdbd has not caught up with slurmctld yet ([] once it has). slurmctld sends its job records to
        slurmdbd asynchronously, through its DBD agent queue, so sacct can show a job RUNNING (or not at all) that
        slurmctld has already ended: the queue must be empty, and every job slurmctld still holds in a final
        state (``squeue -t all``: ended jobs stay MinJobAge seconds) must have that state in sacct. Except a
        CANCELLED one that sacct shows in no final state: a requeued job cancelled before it ran again keeps its
        REQUEUED record for good (Slurm's record, not a lag), and a cancelled job counts in no check."""
        lag = []
        for line in self.slurm("sdiag").splitlines():
            key, _sep, value = line.partition(":")
            if key.strip() == "DBD Agent queue size" and value.strip() != "0":
                lag.append("slurmctld's DBD agent queue holds %s records" % value.strip())
        held = {}
        for line in self.slurm("squeue", "-h", "-a", "-t", "all", "-o", "%i|%T").splitlines():
            job_id, sep, state = line.strip().partition("|")
            if sep and state in SLURM_FINAL_STATES + ("COMPLETING",):
                held[job_id] = state
        if held:
            recorded = {row["job_id"]: row["state"] for row in self.accounting_window()}
            for job_id, state in sorted(held.items()):
                got = recorded.get(job_id)
                if state == "CANCELLED" and got not in SLURM_FINAL_STATES:
                    continue
                if got is None or got not in SLURM_FINAL_STATES or (state != "COMPLETING" and got != state):
                    lag.append("job %s: %s in slurmctld, %s in sacct" % (job_id, state, got or "absent"))
        return lag

    def accounting_settled(self, timeout: float = 120, what: str = "") -> List[Dict[str, Any]]:
        """Wait (a condition with a deadline) until slurmdbd has recorded everything slurmctld ended
        (:meth:`accounting_lag` is empty); returns the window then (:meth:`accounting_window`)."""
        last: List[List[str]] = [[]]

        def settled() -> bool:
            last[0] = self.accounting_lag()
            return not last[0]

        try:
            self.wait_for(settled, timeout=timeout, interval=0.5, what="slurmdbd to catch up with slurmctld")
        except AssertionError as exc:
            raise AssertionError("%s%s; still behind: %s" % (what and what + ": ", exc, "; ".join(last[0])))
        return self.accounting_window()

    # -- ansible ---------------------------------------------------------------------------------------
    def adhoc(
        self,
        pattern: str,
        name: str,
        args: Optional[Dict[str, Any]] = None,
        check: bool = False,
        diff: bool = False,
        timeout: float = 120,
    ) -> Dict[str, Dict[str, Any]]:
        """Run one module ad hoc on ``pattern``; returns {host: result} (``changed``, ``failed``, ``unreachable``)."""
        cmd = [str(VENV_BIN / "ansible"), pattern, "-i", str(self.inventory), "-m", name]
        if args:
            cmd += ["-a", json.dumps(args)]
        if check:
            cmd.append("--check")
        if diff:
            cmd.append("--diff")
        env = self.env
        env.update({"ANSIBLE_LOAD_CALLBACK_PLUGINS": "True", "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"})
        proc = self._run(cmd, check=False, timeout=timeout, env=env)
        try:
            data = json.loads(proc.stdout[proc.stdout.index("{") :])
            return data["plays"][0]["tasks"][0]["hosts"]
        except (ValueError, KeyError, IndexError) as exc:
            raise AssertionError("no JSON result (%s):\n%s\n%s" % (exc, proc.stdout[-3000:], proc.stderr[-3000:]))

    def module(self, host: str, name: str, args: Optional[Dict[str, Any]] = None, **kw: Any) -> Dict[str, Any]:
        """Run one module ad hoc on one host; returns its result."""
        return self.adhoc(host, name, args, **kw)[host]

    def module_steps(
        self, host: str, name: str, steps: List[Dict[str, Any]], diff: bool = False, timeout: float = 180
    ) -> List[Dict[str, Any]]:
        """Run ``name`` several times in ONE playbook (one ansible start-up instead of one per step).

        ``steps`` are module argument dicts; a step with ``_check: True`` runs in check mode. Returns each
        step's result in order (the JSON callback's per-host result).
        """
        tasks = []
        for i, step in enumerate(steps):
            args = {k: v for k, v in step.items() if not k.startswith("_")}
            task = {"name": "step %d" % i, name: args, "check_mode": bool(step.get("_check")), "ignore_errors": True}
            if diff:
                task["diff"] = True
            tasks.append(task)
        play = [{"hosts": host, "gather_facts": False, "tasks": tasks}]
        path = self.root / ("steps-%d.yml" % int(time.monotonic() * 1000))
        path.write_text(json.dumps(play), encoding="utf-8")
        env = self.env
        env.update({"ANSIBLE_LOAD_CALLBACK_PLUGINS": "True", "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"})
        proc = self._run(
            [str(VENV_BIN / "ansible-playbook"), "-i", str(self.inventory), str(path)],
            check=False,
            timeout=timeout,
            env=env,
        )
        try:
            data = json.loads(proc.stdout[proc.stdout.index("{") :])
            return [t["hosts"][host] for t in data["plays"][0]["tasks"]]
        except (ValueError, KeyError, IndexError) as exc:
            raise AssertionError("no JSON result (%s):\n%s\n%s" % (exc, proc.stdout[-3000:], proc.stderr[-3000:]))

    def playbook(
        self, playbook: str, *args: str, check: bool = False, timeout: float = 300
    ) -> subprocess.CompletedProcess:
        """ansible-playbook against the bed's inventory; ``playbook`` is a path or YAML text."""
        path = Path(playbook)
        if "\n" in playbook or not path.exists():
            path = self.root / ("play-%d.yml" % int(time.monotonic() * 1000))
            path.write_text(playbook, encoding="utf-8")
        cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(self.inventory), str(path)] + list(args)
        if check:
            cmd.append("--check")
        return self._run(cmd, check=False, timeout=timeout)

    # -- fault switches (tests/testbed/README.md "Fault switches") ------------------------------------------
    def slurmctld(self, action: str) -> None:
        """``stop`` (SIGTERM), ``kill`` (SIGKILL), ``start`` (keeps the saved node states), ``freeze`` (SIGSTOP:
        scontrol times out), ``thaw``."""
        self._run(["bash", str(TESTBED_SH), "slurmctld", action], check=True, timeout=30)

    @contextlib.contextmanager
    def slurmctld_down(self, action: str = "kill") -> Iterator[None]:
        """slurmctld killed (or ``stop``/``freeze``) for the block; running again afterwards."""
        self.slurmctld(action)
        try:
            yield
        finally:
            self.slurmctld("thaw" if action == "freeze" else "start")

    def cut(self, host: str) -> None:
        """The node's only link down: unreachable over ssh, and its slurmd loses the controller."""
        self._run(["bash", str(TESTBED_SH), "cut", host], check=True, timeout=30)

    def mend(self, host: str) -> None:
        self._run(["bash", str(TESTBED_SH), "mend", host], check=True, timeout=30)

    @contextlib.contextmanager
    def unreachable(self, host: str) -> Iterator[None]:
        self.cut(host)
        try:
            yield
        finally:
            self.mend(host)

    def gpu_process(self, host: str, gpu: int, pid: int = 4242, name: str = "python3", used_mib: int = 70400) -> None:
        """A compute process on GPU ``gpu``: every nvidia-smi view lists it and ``nvidia-smi -r`` refuses."""
        with self.edit_state(host) as s:
            s["gpus"][gpu].setdefault("processes", []).append(
                {"pid": pid, "name": name, "type": "C", "used_mib": used_mib}
            )

    def gpu_reset_fault(
        self,
        host: str,
        mode: Optional[str],
        message: Optional[str] = None,
        gpus: Optional[List[int]] = None,
        rc: int = 255,
        hang_seconds: float = 3600,
    ) -> None:
        """``nvidia-smi -r`` on ``host`` fails (``mode="fail"``: the real "could not be reset" text with
        ``message``, exit ``rc``) or never returns (``"hang"``: until ``hang_seconds`` or the switch is cleared);
        ``mode=None`` clears the switch (and releases a hanging reset)."""
        with self.edit_state(host) as s:
            s.pop("gpu_reset_fault", None)
            if mode is not None:
                sw: Dict[str, Any] = {"mode": mode, "rc": rc, "hang_seconds": hang_seconds}
                if message is not None:
                    sw["message"] = message
                if gpus is not None:
                    sw["gpus"] = list(gpus)
                s["gpu_reset_fault"] = sw

    def heal(self) -> None:
        """Lift the bed-level switches: slurmctld running and answering, every node's link up."""
        self.slurmctld("thaw")
        self.slurmctld("start")
        for host in self.nodes:
            self.mend(host)

    # -- reset ---------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Every node back to its default simulator state and in service; all Slurm jobs cancelled; the fault
        switches lifted."""
        self.heal()
        self.slurm("scancel", "--user=root", check=False)
        for host in self.nodes:
            self._revive(host)
        self._run(
            [sys.executable, str(SIMSTATE), "init-many", str(self.root / "nodes")] + self.nodes,
            check=True,
            timeout=60,
            env=dict(self.env, PYTHONPATH=str(REPO / "tools")),
        )
        out = self.slurm("sinfo", "-h", "-N", "-o", "%N %T", check=False)
        blocked = [f[0] for f in (ln.split() for ln in out.splitlines()) if len(f) == 2 and not f[1].startswith("idle")]
        if blocked:
            self.scontrol("update", "NodeName=%s" % ",".join(sorted(set(blocked))), "State=RESUME", check=False)
        self.wait_for(self._all_idle, timeout=30, what="all Slurm nodes idle")

    def _all_idle(self) -> bool:
        out = self.slurm("sinfo", "-h", "-N", "-o", "%N %T", check=False).split("\n")
        states = dict(line.split() for line in out if len(line.split()) == 2)
        return all(states.get(h) == "idle" for h in self.nodes)

    def _revive(self, host: str) -> None:
        """Restart sshd / slurmd on a node left down (e.g. a `no_return` reboot); checked inside the node's
        own PID namespace (the pid files hold node-local pids)."""
        self._run(["bash", str(TESTBED_SH), "revive", host], check=True, timeout=30)

    def running_on(self, host: str, process: str) -> bool:
        """Whether a process named ``process`` runs on the node (its own PID namespace)."""
        return self.on_node(host, "pgrep", "-x", process, check=False).returncode == 0

    def _run(self, cmd: List[str], check: bool, timeout: float, env: Optional[Dict[str, str]] = None):
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=env or self.env, cwd=str(REPO), check=False
        )
        if check and proc.returncode != 0:
            raise AssertionError("%s: exit %s\n%s\n%s" % (" ".join(cmd), proc.returncode, proc.stdout, proc.stderr))
        return proc


def _alive(pidfile: Path) -> bool:
    """The pid in ``pidfile`` runs (a zombie does not count: PID 1 on the CI machine reaps late)."""
    try:
        status = Path("/proc/%d/status" % int(pidfile.read_text().strip())).read_text()
    except (OSError, ValueError):
        return False
    return "\nState:\tZ" not in status


def testbed_root() -> Path:
    return Path(os.environ.get("GPUOPS_TB", "/tmp/gpuops-tb"))


def testbed_is_up(root: Path) -> bool:
    nodes = root / "nodes"
    if not (root / "inventory.yml").exists() or not nodes.is_dir():
        return False
    holders = [p / "holder.pid" for p in nodes.iterdir() if p.is_dir()]
    return bool(holders) and all(_alive(h) for h in holders) and (root / "bin" / "scontrol").exists()


_SESSION: Dict[str, Testbed] = {}


@pytest.fixture(scope="session")
def testbed() -> Testbed:
    root = testbed_root()
    if not testbed_is_up(root):
        msg = "test bed not up at %s: run `make testbed-up` (or `make integration`)" % root
        if _in_ci():
            pytest.fail("CI=true: " + msg, pytrace=False)
        pytest.skip(msg)
    if "bed" not in _SESSION:
        bed = Testbed(root)
        if not (REPO / "build" / "ansible_collections" / "gpuops" / "cluster").exists():
            pytest.fail("the collection is not resolvable: run `make setup` first", pytrace=False)
        _SESSION["bed"] = bed
    return _SESSION["bed"]


@pytest.fixture(scope="module", autouse=True)
def _reset_testbed_after_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """Between test modules: every node back to defaults, in service, no jobs (only after modules that used it)."""
    yield
    bed = _SESSION.get("bed")
    used = any(
        "testbed" in getattr(item, "fixturenames", ())
        for item in request.session.items
        if item.module is request.module
    )
    if bed is not None and used:
        bed.reset()
