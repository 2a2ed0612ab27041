"""Ticket payload -> validated run request -> per-node locks -> ansible-runner -> result document.

Exit codes (cli.main): 0 the playbook succeeded; 1 it ran and failed (or could not be started);
2 the payload was refused (invalid, unknown runbook/host, approval missing): nothing was run;
75 another run holds a lock on one of the nodes (EX_TEMPFAIL: retry later): nothing was run.
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import json
import os
import re
import subprocess
import sys
import time
import uuid
from typing import Any, Dict, List, Optional, Tuple

from gpuops_runbook import catalog, safety

RC_OK, RC_FAILED, RC_INVALID, RC_BUSY = 0, 1, 2, 75
SCHEMA = "gpuops.runbook_result/v1"
_TICKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}")  # always re.fullmatch
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:+-]{0,252}")
_AUDIT_ENV = "gpuops.cluster.audit"
APPROVAL_KEYS = ("by", "at", "ref", "approved")


class PayloadError(ValueError):
    """The payload cannot be run; `errors` lists every reason."""

    def __init__(self, errors: List[str], status: str = "invalid"):
        super().__init__("; ".join(errors))
        self.errors = errors
        self.status = status


def utcnow() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------------------------------- payload
def parse_payload(text: str) -> Dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise PayloadError(["payload is not valid JSON: %s" % exc])
    if not isinstance(data, dict):
        raise PayloadError(["payload must be a JSON object"])
    return data


def _finding_ref(value: Any) -> Tuple[Optional[str], Optional[str]]:
    """A finding as {check, code} / "check:code" / "check" -> (check, code)."""
    if isinstance(value, dict):
        check, code = value.get("check"), value.get("code")
        return (str(check) if check else None), (None if code is None else str(code))
    if isinstance(value, str) and value:
        check, _, code = value.partition(":")
        return check, (code or None)
    return None, None


def _approval(approval: Any, errors: List[str]) -> Optional[Dict[str, Any]]:
    """The approval object, checked: {by, at, ref, approved} with string by/at/ref and a boolean approved."""
    if approval is None:
        return None
    if not isinstance(approval, dict):
        errors.append("`approval` must be an object {by, at, ref, approved}")
        return None
    extra = sorted(set(approval) - set(APPROVAL_KEYS))
    if extra:
        errors.append("`approval` takes only %s (got %s)" % (", ".join(APPROVAL_KEYS), ", ".join(map(str, extra))))
    for key in ("by", "at", "ref"):
        if approval.get(key) is not None and not isinstance(approval.get(key), str):
            errors.append("`approval.%s` must be a string" % key)
    if "approved" in approval and not isinstance(approval["approved"], bool):
        errors.append("`approval.approved` must be JSON true or false, got %r" % (approval["approved"],))
    return {k: approval[k] for k in APPROVAL_KEYS if k in approval}


def resolve(
    payload: Dict[str, Any],
    data: Dict[str, Any],
    known_hosts: Optional[set],
    config: Optional[safety.HookConfig] = None,
    state_dir: Optional[str] = None,
) -> Dict[str, Any]:
    """Check a payload against the catalogue, the inventory and the hook config; return the run request or raise
    PayloadError. Without a config nobody may request anything (fail closed)."""
    config = config if config is not None else safety.HookConfig({})
    errors: List[str] = []
    ticket = payload.get("ticket") if payload.get("ticket") is not None else payload.get("ticket_id")
    if ticket is None or (isinstance(ticket, str) and not ticket.strip()):
        errors.append("missing ticket id (`ticket`)")
    elif isinstance(ticket, bool) or not isinstance(ticket, (str, int)) or not _TICKET.fullmatch(str(ticket)):
        errors.append("ticket id %r: use letters, digits and _.@+- (at most 128)" % (ticket,))

    entry = None
    how = None
    if payload.get("runbook"):
        entry = catalog.by_id(data, payload["runbook"]) if isinstance(payload["runbook"], str) else None
        how = "runbook"
        if entry is None:
            known = ", ".join(e["id"] for e in catalog.entries(data))
            errors.append("unknown runbook %r (known: %s)" % (payload["runbook"], known))
    elif payload.get("alert"):
        alert = payload["alert"]
        name = alert.get("labels", {}).get("alertname") if isinstance(alert, dict) else alert
        entry = catalog.by_alert(data, name) if isinstance(name, str) else None
        how = "alert"
        if entry is None:
            errors.append("no runbook for alert %r" % (name,))
    elif payload.get("finding"):
        check, code = _finding_ref(payload["finding"])
        entry = catalog.by_finding(data, check or "", code)
        how = "finding"
        if entry is None:
            reason = (data.get("unmapped") or {}).get(check or "")
            errors.append(
                "no runbook for finding %s%s%s"
                % (check, ":%s" % code if code is not None else "", " (%s)" % reason.strip() if reason else "")
            )
    else:
        errors.append("name a `runbook`, an `alert` or a `finding`")

    nodes = payload.get("nodes")
    if isinstance(nodes, str):
        nodes = [n.strip() for n in nodes.split(",") if n.strip()]
    if not isinstance(nodes, list) or not nodes:
        errors.append("`nodes` must be a non-empty list of inventory host names")
        nodes = []
    else:
        bad = [n for n in nodes if not isinstance(n, str) or not _NODE.fullmatch(n)]
        if bad:
            errors.append("bad node names: %s" % ", ".join(repr(b) for b in bad))
        elif known_hosts is not None:
            unknown = [n for n in nodes if n not in known_hosts]
            if unknown:
                errors.append("unknown hosts (not in the inventory): %s" % ", ".join(unknown))
        nodes = sorted(set(n for n in nodes if isinstance(n, str)))

    requester = payload.get("requester")
    if requester is not None and not isinstance(requester, str):
        errors.append("`requester` must be a string")
        requester = None
    elif requester is not None:
        safety.check_data(requester, "requester", errors)

    user_vars = payload.get("extra_vars") or {}
    if not isinstance(user_vars, dict):
        errors.append("`extra_vars` must be an object")
        user_vars = {}
    else:
        safety.check_data(user_vars, "extra_vars", errors)
    if entry is not None:
        allowed = set(entry.get("allowed_vars") or [])
        taken = catalog.RESERVED_VARS | set(entry.get("ticket_vars") or {})
        refused = sorted(str(k) for k in user_vars if k not in allowed or k in taken)
        if refused:
            errors.append(
                "runbook %s does not take extra_vars %s (allowed: %s)"
                % (entry["id"], ", ".join(refused), ", ".join(sorted(allowed)) or "none")
            )
    for var, value in sorted(user_vars.items(), key=lambda kv: str(kv[0])):
        roots_key = safety.PATH_VARS.get(var)
        if roots_key is None:
            continue
        real = safety.confine(value, config.roots[roots_key]) if isinstance(value, str) else None
        if real is None:
            errors.append(
                "extra_vars.%s %r is not under the configured %s (%s)"
                % (var, value, roots_key, ", ".join(config.roots[roots_key]) or "none configured")
            )
        else:
            user_vars = dict(user_vars, **{var: real})
    approval = _approval(payload.get("approval"), errors)
    if entry is not None and "node" in (entry.get("ticket_vars") or {}).values() and len(nodes) > 1:
        errors.append("runbook %s acts on one node at a time; this ticket names %d" % (entry["id"], len(nodes)))
    if errors:
        raise PayloadError(errors)

    if not config.may("requester", requester, entry):
        raise PayloadError(
            [
                "runbook %s (%s): requester %r may not request it (allowed: %s); nothing was run"
                % (entry["id"], entry["change_class"], requester, config.describe("requester", entry))
            ],
            status="refused",
        )
    if entry.get("approval_required"):
        if approval is None or not str(approval.get("by") or "").strip() or approval.get("approved") is not True:
            raise PayloadError(
                [
                    "runbook %s needs an approval: the payload must carry approval {by, at, ref, approved: true} "
                    "(a change/CAB reference); nothing was run" % entry["id"]
                ],
                status="refused",
            )
        if safety.same_person(approval.get("by"), requester):
            raise PayloadError(
                ["runbook %s: the requester cannot approve their own request" % entry["id"]], status="refused"
            )
        if not config.may("approver", approval.get("by"), entry):
            raise PayloadError(
                [
                    "runbook %s (%s): %r may not approve it (allowed: %s); nothing was run"
                    % (entry["id"], entry["change_class"], approval.get("by"), config.describe("approver", entry))
                ],
                status="refused",
            )

    extravars = dict(entry.get("extra_vars") or {})
    extravars.update(user_vars)
    extravars.update(
        {
            "gpuops_ticket": str(ticket),
            "gpuops_targets": ",".join(nodes),
            "gpuops_nodes": nodes,
            "gpuops_runbook": entry["id"],
            "gpuops_requester": requester or "",
        }
    )
    sources = {"nodes": nodes, "node": nodes[0], "ticket": str(ticket), "requester": requester or ""}
    for var, src in (entry.get("ticket_vars") or {}).items():
        extravars[var] = sources[src]
    if approval is not None:
        extravars["gpuops_approval"] = approval
        if approval.get("ref") and "gpuops_change_id" not in extravars:
            extravars["gpuops_change_id"] = str(approval["ref"])
    return {
        "ticket": str(ticket),
        "entry": entry,
        "matched_by": how,
        "nodes": nodes,
        "extravars": extravars,
        "requester": requester,
        "approval": approval,
        "check_mode": payload.get("check_mode") is True,
    }


# ------------------------------------------------------------------------------------------------- inventory
def inventory_hosts(inventory: str, env: Dict[str, str]) -> set:
    """Every host name of the inventory, as `ansible-inventory --list` sees it."""
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
    hosts = set((data.get("_meta") or {}).get("hostvars") or {})
    for group in data.values():
        if isinstance(group, dict):
            hosts.update(group.get("hosts") or [])
    return hosts


# ------------------------------------------------------------------------------------------------------ locks
class NodeLocks:
    """Exclusive fcntl locks <state_dir>/locks/runbook.<node>.lock for every node, taken in sorted order.

    Distinct from the inspection's per-host state locks (<host>.lock): a playbook run under the hook takes
    those itself. `timeout` 0 = refuse at once when a node is busy.
    """

    def __init__(self, state_dir: str, nodes: List[str], timeout: float, poll: float = 0.2):
        self.dir = os.path.join(state_dir, "locks")
        self.nodes = sorted(set(nodes))
        self.timeout = max(0.0, float(timeout))
        self.poll = poll
        self.fds: List[int] = []
        self.busy: Optional[str] = None

    def path(self, node: str) -> str:
        return os.path.join(self.dir, "runbook.%s.lock" % node)

    def acquire(self) -> bool:
        safety.private_dir(self.dir)
        deadline = time.monotonic() + self.timeout
        for node in self.nodes:
            fd = os.open(self.path(node), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            os.fchmod(fd, 0o600)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        os.close(fd)
                        self.release()
                        raise
                    if time.monotonic() >= deadline:
                        os.close(fd)
                        self.busy = node
                        self.release()
                        return False
                    time.sleep(self.poll)
            os.ftruncate(fd, 0)
            os.write(fd, ("%d\n" % os.getpid()).encode())
            self.fds.append(fd)
        return True

    def holder(self, node: str) -> Optional[str]:
        try:
            with open(self.path(node), encoding="ascii", errors="replace") as fh:
                return fh.read().strip() or None
        except OSError:
            return None

    def release(self) -> None:
        while self.fds:
            fd = self.fds.pop()
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> NodeLocks:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


# ------------------------------------------------------------------------------------------------- outcomes
def node_outcomes(events: List[Dict[str, Any]], stats: Optional[Dict[str, Any]], nodes: List[str]) -> Dict[str, Any]:
    """Per host: counts from the runner stats, failed tasks from the events, one status word.

    Hosts of the play that are not in `nodes` (e.g. localhost for the report play) are listed too.
    """
    out: Dict[str, Any] = {}

    def rec(host: str) -> Dict[str, Any]:
        return out.setdefault(
            host,
            {"status": "not_run", "ok": 0, "changed": 0, "failed": 0, "unreachable": 0, "skipped": 0, "failures": []},
        )

    for n in nodes:
        rec(n)
    for ev in events:
        kind = ev.get("event")
        data = ev.get("event_data") or {}
        host = data.get("host")
        if not host or kind not in ("runner_on_failed", "runner_on_unreachable"):
            continue
        if data.get("ignore_errors"):
            continue
        res = data.get("res") or {}
        msg = res.get("msg") if isinstance(res, dict) else None
        r = rec(host)
        if len(r["failures"]) < 5:
            r["failures"].append(
                {"task": data.get("task"), "kind": kind[len("runner_on_") :], "msg": str(msg or "")[:300]}
            )
    for key, field in (
        ("ok", "ok"),
        ("changed", "changed"),
        ("failures", "failed"),
        ("dark", "unreachable"),
        ("skipped", "skipped"),
    ):
        for host, count in ((stats or {}).get(key) or {}).items():
            rec(host)[field] = int(count or 0)
    # An inspection analyses capture hosts on the controller: they get no task events of their own, but the
    # inspect_cluster result says what was found on each node; that is their outcome.
    for ev in events:
        if ev.get("event") != "runner_on_ok":
            continue
        res = (ev.get("event_data") or {}).get("res") or {}
        if not (isinstance(res, dict) and isinstance(res.get("nodes"), dict) and "summary" in res):
            continue
        for host, node in res["nodes"].items():
            if isinstance(node, dict) and (host in nodes or host in out):
                rec(host)["inspection"] = node.get("status")
    for r in out.values():
        if r["unreachable"]:
            r["status"] = "unreachable"
        elif r["failed"]:
            r["status"] = "failed"
        elif r["changed"]:
            r["status"] = "changed"
        elif r["ok"] or (r.get("inspection") and r["inspection"] != "unreachable"):
            r["status"] = "ok"
        elif r["skipped"]:
            r["status"] = "skipped"
    return out


def report_paths(events: List[Dict[str, Any]]) -> List[str]:
    """Report files/directories a task returned (report_dir, report_paths, reports, dest of a capture)."""
    found: List[str] = []
    for ev in events:
        if ev.get("event") != "runner_on_ok":
            continue
        res = (ev.get("event_data") or {}).get("res") or {}
        if not isinstance(res, dict):
            continue
        for key in ("report_dir", "report_paths", "reports"):
            val = res.get(key)
            vals = val if isinstance(val, list) else list(val.values()) if isinstance(val, dict) else [val]
            for v in vals:
                if isinstance(v, str) and v and v not in found:
                    found.append(v)
    return found


def audit_run_ids(audit_log: str, offset: int, pids: set, playbook: str) -> List[str]:
    """run_id of the run_start records appended after `offset` by our ansible-playbook process(es)."""
    ids: List[str] = []
    try:
        with open(audit_log, "rb") as fh:
            fh.seek(offset)
            for raw in fh:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(rec, dict) or rec.get("event") != "run_start":
                    continue
                if (pids and rec.get("pid") in pids) or (not pids and rec.get("playbook") == playbook):
                    if rec.get("run_id") and rec["run_id"] not in ids:
                        ids.append(rec["run_id"])
    except OSError:
        pass
    return ids


# ------------------------------------------------------------------------------------------------------ audit
def _audit_module(root: str) -> Any:
    """The collection's audit chain writer (plugins/plugin_utils/_audit.py), imported from the collections path
    the playbooks use ($ANSIBLE_COLLECTIONS_PATH, else <root>/build)."""
    import importlib

    rel = os.path.join("ansible_collections", "gpuops", "cluster", "plugins", "plugin_utils", "_audit.py")
    dirs = [d for d in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if d]
    dirs.append(os.path.join(root, "build"))
    found = next((d for d in dirs if os.path.isfile(os.path.join(d, rel))), None)
    if found is None:
        raise OSError("cannot find the collection's audit writer (%s) under %s" % (rel, ", ".join(dirs)))
    if found not in sys.path:
        sys.path.insert(0, found)
    return importlib.import_module("ansible_collections.gpuops.cluster.plugins.plugin_utils._audit")


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
def runner_env(root: str, state_dir: str, bin_dir: str) -> Dict[str, str]:
    env = dict(os.environ)
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
    import ansible_runner  # imported late: validation must work (and fail fast) without it

    entry = req["entry"]
    playbook = os.path.join(root, entry["playbook"])
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
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
    # line and runner writes no env/ files of its own (stale ones from older hooks are removed).
    vars_dir = safety.private_dir(os.path.join(private, "vars"))
    vars_file = os.path.join(vars_dir, "%s.yml" % ident)
    safety.write_private(vars_file, safety.dump_unsafe_yaml(extravars))
    for stale in ("extravars", "cmdline"):
        try:
            os.unlink(os.path.join(private, "env", stale))
        except FileNotFoundError:
            pass
    old_umask = os.umask(0o077)  # whatever ansible-playbook creates without an explicit mode is private
    try:
        if req.get("approval"):
            record_approval(root, audit_log, req, ident)
        try:
            offset = os.path.getsize(audit_log)
        except OSError:
            offset = 0
        result["started_at"] = utcnow()
        r = ansible_runner.run(
            private_data_dir=private,
            ident=ident,
            playbook=playbook,
            inventory=os.path.abspath(inventory),
            extravars=vars_file,
            suppress_env_files=True,
            envvars={k: env[k] for k in ("ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_CALLBACKS_ENABLED", "GPUOPS_STATE_DIR")},
            cmdline="--check --diff" if req["check_mode"] else None,
            quiet=True,
            timeout=timeout,
            rotate_artifacts=20,
        )
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
    return (RC_OK if r.status == "successful" and r.rc == 0 else RC_FAILED), result


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
        "errors": [],
        "hook_pid": os.getpid(),
        "python": sys.executable,
    }
