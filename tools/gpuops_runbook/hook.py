"""Ticket payload -> validated run request -> per-node locks -> ansible-runner -> result document.

Exit codes (cli.main): 0 the playbook succeeded (for a disruptive runbook: every node reached the requested
state); 1 it ran and failed (or could not be started); 2 the payload was refused (invalid, unknown runbook/host,
approval missing): nothing was run; 3 a disruptive runbook ran and only safety gates said no (every node not
done was ``refused``); 4 a disruptive runbook ran and a node failed, was left drained, is unconfirmed or was not
started; 75 another run holds a lock on one of the nodes (EX_TEMPFAIL: retry later): nothing was run.
For 0, 3 and 4 the result carries the run's outcome (``outcome``, from <state>/runs/<workflow>/<run_id>.json)
and each node's ``outcome``/``detail``/``error``.

The parts live in their own modules (payload, locks, outcomes, collection); their public names are
re-exported here, so ``hook.resolve``, ``hook.NodeLocks`` and the rest keep working.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from typing import Any, Dict, Iterable, Optional, Tuple

from gpuops_runbook import collection, safety, secretenv
from gpuops_runbook.locks import NodeLocks
from gpuops_runbook.outcomes import (
    RC_INCOMPLETE,
    RC_REFUSED_ONLY,
    audit_run_ids,
    merge_outcome,
    node_outcomes,
    outcome_rc,
    report_paths,
    run_outcome,
)
from gpuops_runbook.payload import APPROVAL_KEYS, PayloadError, parse_payload, resolve

__all__ = [
    "APPROVAL_KEYS",
    "RC_BUSY",
    "RC_FAILED",
    "RC_INVALID",
    "RC_OK",
    "RC_REFUSED_ONLY",
    "RC_INCOMPLETE",
    "SCHEMA",
    "NodeLocks",
    "PayloadError",
    "audit_run_ids",
    "base_result",
    "inventory",
    "inventory_hosts",
    "node_outcomes",
    "parse_payload",
    "record_approval",
    "report_paths",
    "resolve",
    "run_request",
    "runner_env",
    "utcnow",
]

RC_OK, RC_FAILED, RC_INVALID, RC_BUSY = 0, 1, 2, 75
SCHEMA = "gpuops.runbook_result/v1"
_AUDIT_ENV = "gpuops.cluster.audit"


def utcnow() -> str:
    """Now as 2026-12-02T10:00:00Z (the collection's _timeutil)."""
    return collection.timeutil().utcnow_iso()


# ------------------------------------------------------------------------------------------------- inventory
def inventory(inventory: str, env: Dict[str, str]) -> Tuple[set, set]:
    """(every host name, every group name) of the inventory, as `ansible-inventory --list` sees it."""
    try:
        proc = subprocess.run(
            ["ansible-inventory", "-i", inventory, "--list"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PayloadError(["cannot read the inventory %s: %s" % (inventory, exc)], status="error")
    if proc.returncode != 0:
        raise PayloadError(
            ["ansible-inventory -i %s failed: %s" % (inventory, proc.stderr.strip()[-500:])], status="error"
        )
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise PayloadError(["ansible-inventory printed no JSON"], status="error")
    if not isinstance(data, dict):
        raise PayloadError(["ansible-inventory printed no JSON object"], status="error")
    hosts = set((data.get("_meta") or {}).get("hostvars") or {})
    groups = {"all", "ungrouped"}
    for name, group in data.items():
        if isinstance(group, dict) and name != "_meta":
            groups.add(name)
            hosts.update(group.get("hosts") or [])
            groups.update(group.get("children") or [])
    return hosts, groups


def inventory_hosts(inventory_path: str, env: Dict[str, str]) -> set:
    """Every host name of the inventory, as `ansible-inventory --list` sees it."""
    return inventory(inventory_path, env)[0]


# ------------------------------------------------------------------------------------------------------ audit
def _audit_module(root: str) -> Any:
    """The collection's audit chain writer (plugins/plugin_utils/store/audit.py), imported from the collections path
    the playbooks use ($ANSIBLE_COLLECTIONS_PATH, else <root>/build)."""
    return collection.audit(root)


def record_approval(root: str, audit_log: str, req: Dict[str, Any], ident: str) -> Dict[str, Any]:
    """Append a `ticket_approval` record (who asked, who approved, the reference) to the audit chain."""
    approval = req.get("approval") or {}
    record = {
        "event": "ticket_approval",
        "run_id": "hook-%s" % ident,
        "ticket": req["ticket"],
        "runbook": req["entry"]["id"],
        "change_class": req["entry"].get("change_class"),
        "nodes": req["nodes"],
        "requester": req.get("requester"),
        "approved_by": approval.get("by"),
        "approved_at": approval.get("at"),
        "change_id": approval.get("ref"),
        "approved": approval.get("approved") is True,
        "check_mode": bool(req.get("check_mode")),
    }
    return _audit_module(root).append(audit_log, record)


# ------------------------------------------------------------------------------------------------------- run
def runner_env(root: str, state_dir: str, bin_dir: str, pass_env: Iterable[str] = ()) -> Dict[str, str]:
    """The playbook's environment: the allowlisted variables of the hook's (secretenv.allowed: PATH, HOME, the
    locale, ANSIBLE_*, GPUOPS_*, ... and the config's ``pass_env``), the venv's bin first on PATH, the
    collections path, ansible.cfg, the audit callback and GPUOPS_STATE_DIR. It still holds the secrets of the
    hook's environment (GPUOPS_BMC_PASSWORD, GPUOPS_DB_URL, ...): run_request hands those over without a file."""
    env = secretenv.allowed(os.environ, pass_env)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", os.path.join(root, "build"))
    if os.path.isfile(os.path.join(root, "ansible.cfg")):
        env.setdefault("ANSIBLE_CONFIG", os.path.join(root, "ansible.cfg"))
    enabled = [c for c in env.get("ANSIBLE_CALLBACKS_ENABLED", "").split(",") if c.strip()]
    if _AUDIT_ENV not in enabled:
        enabled.append(_AUDIT_ENV)
    env["ANSIBLE_CALLBACKS_ENABLED"] = ",".join(enabled)
    env["GPUOPS_STATE_DIR"] = state_dir
    env.setdefault("ANSIBLE_PYTHON_INTERPRETER", "auto_silent")
    return env


def record_ticket(root: str, state_dir: str, req: Dict[str, Any], env: Dict[str, str]) -> Optional[Dict[str, Any]]:
    """Record the ticket in the service ledger and open an incident from it (docs/service.md); None in check
    mode. A store that cannot be used is reported in the result (``error``), never a reason to hold the runbook."""
    if req.get("check_mode"):
        return None
    try:
        incidents = collection.module("plugin_utils.store.ledger_incidents", root)
        from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import (  # pylint: disable=import-outside-toplevel
            open_store,
        )

        store = open_store(state_dir=state_dir, db_url=env.get("GPUOPS_DB_URL") or os.environ.get("GPUOPS_DB_URL"))
        try:
            ticket = {
                "ticket_id": req["ticket"],
                "severity": req.get("severity"),
                "host": (req.get("nodes") or [None])[0],
                "summary": req.get("summary") if isinstance(req.get("summary"), str) else req["entry"].get("id"),
                "source": "hook",
            }
            return incidents.record_ticket(store, ticket)
        finally:
            store.close()
    except Exception as exc:  # noqa: BLE001 - the ledger must not stop a remediation; the result says why
        return {"error": "the ticket was not recorded in the service ledger: %s" % exc}


def run_request(
    req: Dict[str, Any],
    root: str,
    inventory: str,
    state_dir: str,
    env: Dict[str, str],
    lock_timeout: float,
    timeout: Optional[int] = None,
) -> Tuple[int, Dict[str, Any]]:
    """Take the node locks, run the playbook with ansible-runner, return (exit code, result document)."""
    entry = req["entry"]
    playbook = os.path.join(root, entry["playbook"])
    stamp = collection.timeutil(root).utcnow().strftime("%Y%m%dT%H%M%SZ")
    ident = "%s-%s" % (stamp, uuid.uuid4().hex[:8])
    ticket_dir = os.path.join(state_dir, "tickets", req["ticket"])
    private = os.path.join(ticket_dir, "runner")
    safety.private_dir(private)
    result = base_result(req)
    result.update(
        {
            "playbook": entry["playbook"],
            "ident": ident,
            "artifact_dir": os.path.join(private, "artifacts", ident),
            "ticket_dir": ticket_dir,
        }
    )
    extravars = dict(req["extravars"])
    if "gpuops_report_dir" not in extravars:
        extravars["gpuops_report_dir"] = os.path.join(ticket_dir, "reports", ident)
        safety.private_dir(os.path.join(ticket_dir, "reports"))
    extravars.setdefault("gpuops_state_dir", state_dir)

    result["ledger"] = record_ticket(root, state_dir, req, env)
    locks = NodeLocks(state_dir, req["nodes"], lock_timeout)
    if not locks.acquire():
        result.update(
            status="busy",
            rc=None,
            errors=[
                "node %s is locked by another runbook run (pid %s) for longer than %ss; nothing was run, retry later"
                % (locks.busy, locks.holder(locks.busy) or "?", lock_timeout)
            ],
        )
        return RC_BUSY, result
    audit_log = os.path.join(state_dir, "audit", "audit.log")
    # Every string of the payload reaches Ansible tagged !unsafe (never templated): the hook writes the
    # extra-vars file itself (0600) and hands it to ansible-playbook as -e @file; nothing goes on a command
    # line and runner writes no env/ files of its own (stale ones from older hooks are removed: an env/envvars
    # would be merged into the environment ansible-runner records).
    vars_dir = safety.private_dir(os.path.join(private, "vars"))
    vars_file = os.path.join(vars_dir, "%s.yml" % ident)
    safety.write_private(vars_file, safety.dump_unsafe_yaml(extravars))
    for stale in ("extravars", "cmdline", "envvars", "passwords", "ssh_key"):
        try:
            os.unlink(os.path.join(private, "env", stale))
        except FileNotFoundError:
            pass
    plain, secrets = secretenv.split(env, _audit_module(root).SECRET_KEY)
    old_umask = os.umask(0o077)  # whatever ansible-playbook creates without an explicit mode is private
    try:
        if req.get("approval"):
            record_approval(root, audit_log, req, ident)
        try:
            offset = os.path.getsize(audit_log)
        except OSError:
            offset = 0
        result["started_at"] = utcnow()
        runner_kwargs = {
            "private_data_dir": private,
            "ident": ident,
            "inventory": os.path.abspath(inventory),
            "extravars": vars_file,
            "suppress_env_files": True,
            "quiet": True,
            "timeout": timeout,
            "rotate_artifacts": 20,
        }
        r = _run_playbook(runner_kwargs, playbook, plain, secrets, req["check_mode"])
        events = list(r.events)
        result["finished_at"] = utcnow()
    finally:
        os.umask(old_umask)
        locks.release()
    pids = {ev.get("pid") for ev in events if ev.get("pid")}
    result.update(
        {
            "status": r.status,
            "rc": r.rc,
            "nodes": node_outcomes(events, r.stats, req["nodes"]),
            "reports": report_paths(events),
            "audit_run_ids": audit_run_ids(audit_log, offset, pids, playbook),
            "audit_log": audit_log if os.path.exists(audit_log) else None,
            "stdout": os.path.join(result["artifact_dir"], "stdout"),
        }
    )
    result["audit_run_id"] = result["audit_run_ids"][0] if result["audit_run_ids"] else None
    if r.status == "successful" and not result["audit_run_id"] and not req["check_mode"]:
        result["errors"].append("no audit record found for this run in %s" % audit_log)
    return _exit_code(r.status, r.rc, events, result), result


def _run_playbook(
    kwargs: Dict[str, Any], playbook: str, plain: Dict[str, str], secrets: Dict[str, str], check_mode: bool
) -> Any:
    """ansible-runner's run of the playbook (``kwargs``: ansible_runner.run's private_data_dir, ident, ...), returned
    when it is over. The environment it records in artifacts/<ident>/command, and starts the command with, holds
    no secret: the secrets reach ansible-playbook through a pipe that envexec.py reads before it execs
    ansible-playbook (secretenv.py)."""
    import ansible_runner.interface  # imported late: validation must work (and fail fast) without it

    check = ["--check", "--diff"] if check_mode else []
    with secretenv.SecretPipe(secrets) as pipe:
        kwargs = dict(kwargs, envvars=plain)
        if pipe.path:
            argv = ["-I", secretenv.ENVEXEC, "ansible-playbook", playbook, *check]
            kwargs.update(binary=sys.executable, cmdline=shlex.join(argv))
        else:
            kwargs.update(playbook=playbook, cmdline=" ".join(check) or None)
        r = ansible_runner.interface.init_runner(**kwargs)
        r.config.env = secretenv.child_env(r.config.env, plain, secrets)
        if pipe.path:
            r.config.env[secretenv.PIPE_VAR] = pipe.path
        r.run()
    return r


def _exit_code(status: str, rc: Any, events: list, result: Dict[str, Any]) -> int:
    """0/1 from ansible-runner; a disruptive runbook's outcome (gpuops.cluster.run_outcome) refines a failure
    into 3 (refused only) or 4 (failed or incomplete), and is copied into the result."""
    doc = run_outcome(events)
    ran_ok = status == "successful" and rc == 0
    if doc is None:
        return RC_OK if ran_ok else RC_FAILED
    result["outcome"] = {
        k: doc.get(k)
        for k in ("workflow", "run_id", "success", "exit_code", "counts", "summary", "requested_state", "path")
    }
    merge_outcome(result["nodes"], doc)
    code = outcome_rc(doc)
    if code == RC_OK:
        return RC_OK if ran_ok else RC_FAILED  # every node done, but a task after the outcome failed
    return code


def base_result(req: Optional[Dict[str, Any]] = None, payload: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    payload = payload or {}
    entry = (req or {}).get("entry") or {}
    return {
        "schema": SCHEMA,
        "ticket": (req or {}).get("ticket") or payload.get("ticket"),
        "runbook": entry.get("id") or payload.get("runbook"),
        "runbook_doc": ("runbooks/%s" % entry["runbook"]) if entry.get("runbook") else None,
        "playbook": entry.get("playbook"),
        "change_class": entry.get("change_class"),
        "requester": (req or {}).get("requester") or payload.get("requester"),
        "approval": (req or {}).get("approval"),
        "requested_nodes": (req or {}).get("nodes") or payload.get("nodes"),
        "check_mode": bool((req or {}).get("check_mode")),
        "status": None,
        "rc": None,
        "nodes": {},
        "reports": [],
        "audit_run_id": None,
        "outcome": None,
        "errors": [],
        "hook_pid": os.getpid(),
        "python": sys.executable,
    }
