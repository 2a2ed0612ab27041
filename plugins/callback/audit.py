# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: audit
type: aggregate
short_description: Tamper-evident audit trail of changes, failures and maintenance-window decisions
version_added: 0.1.0
author: gpuops.cluster contributors (@gpuops)
description:
  - Appends one JSON line per state-changing, failed or unreachable task result, per play start and end,
    per run start and end, and per C(gpuops.cluster.change_window) decision to an append-only audit log.
  - Each line carries C(prev), the sha256 of the previous line, and C(seq), a counter across runs; the
    current head (hash and seq) is written to C(head.json) in the state directory after every record and,
    when O(syslog_address) is set, each run's final head is sent to syslog. Verify with
    C(gpuops.cluster.audit_verify) or the operator CLI C(gpuops-audit verify) (docs/audit.md).
  - Never logs task arguments or result values. Diffs are summarized as key names and line counts. Values of
    extra vars, play vars and module arguments whose names look secret (password, token, secret, key, ...) are
    replaced by C(********) wherever they would appear (failure messages, task names).
  - Appends take an exclusive C(flock) on the log and C(fsync) it, so concurrent runs extend one valid chain.
  - While loaded, the callback exports C(GPUOPS_AUDIT_ACTIVE) into the controller environment; the
    C(gpuops.cluster.change_guard) role refuses disruptive plays when it is absent. See C(docs/audit.md).
requirements:
  - Enable it, for example C(ANSIBLE_CALLBACKS_ENABLED=gpuops.cluster.audit) or C(callbacks_enabled) in ansible.cfg.
options:
  state_dir:
    description:
      - The gpuops state directory. The log defaults to C(<state_dir>/audit/audit.log), the head to
        C(<state_dir>/audit/head.json).
      - Defaults to C(~/.local/state/gpuops), or C(./state) when the home directory is not writable.
    type: path
    env:
      - name: GPUOPS_STATE_DIR
    ini:
      - section: gpuops_audit
        key: state_dir
  log_path:
    description: The audit log (JSON lines). Defaults to C(<state_dir>/audit/audit.log).
    type: path
    env:
      - name: GPUOPS_AUDIT_LOG
    ini:
      - section: gpuops_audit
        key: log_path
  head_path:
    description: Where the current head of the chain is written. Defaults to C(<state_dir>/audit/head.json).
    type: path
    env:
      - name: GPUOPS_AUDIT_HEAD
    ini:
      - section: gpuops_audit
        key: head_path
  syslog_address:
    description:
      - Also send every record and each run's final head to syslog at this address.
      - A socket path (C(/dev/log)) or C(host:port) (UDP). Empty disables syslog.
    type: str
    default: ""
    env:
      - name: GPUOPS_AUDIT_SYSLOG_ADDRESS
    ini:
      - section: gpuops_audit
        key: syslog_address
  syslog_facility:
    description: Syslog facility name.
    type: str
    default: user
    env:
      - name: GPUOPS_AUDIT_SYSLOG_FACILITY
    ini:
      - section: gpuops_audit
        key: syslog_facility
"""

import getpass
import json
import logging
import logging.handlers
import os
import socket
import uuid

from ansible import context
from ansible.plugins.callback import CallbackBase

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as _audit

#: Environment variable the callback exports while it is loaded (read by the change_window action).
MARKER_ENV = "GPUOPS_AUDIT_ACTIVE"
GUARD_ACTIONS = ("gpuops.cluster.change_window", "change_window")
#: the blast-radius guard: every decision is recorded, refusals included
ISOLATION_GUARD_ACTIONS = ("gpuops.cluster.isolation_guard", "isolation_guard")
#: the step that validates outside input: its facts carry the run's ticket and change id, validated
INPUT_ACTIONS = ("gpuops.cluster.untrusted_input", "untrusted_input")
#: the real-time path's ledger step: which nodes it lets act, and each suppression with its reason (docs/alerting.md)
REALTIME_ACTIONS = ("gpuops.cluster.incident_event", "incident_event")
_MSG_MAX = 300
_ITEMS_MAX = 50
#: role-specific ticket variables, aliases of gpuops_ticket (the first one set names the run's ticket)
_TICKET_VARS = ("gpuops_ticket",) + tuple(
    "%s_ticket" % r
    for r in ("isolate", "resume", "gpu_reset", "upgrade", "onboard", "replace", "leak_response", "change_guard")
)


def _first(*values):
    for v in values:
        if v not in (None, ""):
            return v
    return None


def _error_text(res):
    """The failure as the tool said it: msg, plus stderr (or stdout) when msg is a generic wrapper."""
    msg = res.get("msg")
    parts = [str(msg)] if msg not in (None, "") else []
    generic = not parts or str(msg).startswith(("non-zero return code", "One or more items failed", "MODULE FAILURE"))
    if generic:
        for key in ("stderr", "module_stderr", "stdout", "module_stdout"):
            text = res.get(key)
            if isinstance(text, str) and text.strip():
                parts.append(text.strip())
                break
    if isinstance(res.get("results"), list):
        for r in res["results"]:
            if isinstance(r, dict) and r.get("failed"):
                parts.append("%s: %s" % (_item_name(r.get("item")) or "item", _error_text(r) or "failed"))
    return " | ".join(parts)[: _MSG_MAX * 2] if parts else None


def _item_name(item):
    """The node a loop item stands for: the item itself (an inventory name) or its ``node``/``name``/``host``."""
    if isinstance(item, str):
        return item[:253]
    if isinstance(item, dict):
        for key in ("node", "host", "name"):
            if isinstance(item.get(key), str):
                return item[key][:253]
    return None


def _nodes_and_items(res, no_log):
    """(the nodes a task acted on, one short line per loop item) - the node is the loop item or the module's own
    ``node`` (slurm_node returns it; with ``names`` one ``node_results`` entry per node), never only the host the
    task ran on (localhost for delegated steps)."""
    nodes, items = [], []
    if isinstance(res.get("node"), str):
        nodes.append(res["node"])
    rows = [r for key in ("results", "node_results") if isinstance(res.get(key), list) for r in res[key]]
    for r in rows:
        if not isinstance(r, dict) or r.get("skipped"):
            continue
        name = r.get("node") if isinstance(r.get("node"), str) else _item_name(r.get("item"))
        if name is None:
            continue
        if name not in nodes:
            nodes.append(name)
        if len(items) < _ITEMS_MAX:
            item = {"node": name, "changed": bool(r.get("changed")), "failed": bool(r.get("failed"))}
            if r.get("failed"):
                item["msg"] = "(hidden: no_log)" if no_log else _error_text(r)
            items.append(item)
    return nodes[:_ITEMS_MAX], items


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpuops.cluster.audit"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super().__init__(display=display)
        self.run_id = uuid.uuid4().hex
        self.log_path = None
        self.head_path = None
        self.head = None
        self.broken = None
        self._syslog = None
        self._playbook = None
        self._play = None
        self._play_counts = {}
        self._vars = {}
        self._secrets = []
        self._guard = None
        self._ids = {}
        try:
            self._user = getpass.getuser()
        except Exception:  # noqa: BLE001 - no passwd entry in a container
            self._user = str(os.getuid())
        self._controller = socket.gethostname()

    # ---- setup -------------------------------------------------------------------------------------------
    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        state = _audit.state_dir(self.get_option("state_dir"))
        self.log_path = self.get_option("log_path") or os.path.join(state, "audit", "audit.log")
        self.head_path = self.get_option("head_path") or os.path.join(state, "audit", "head.json")
        address = (self.get_option("syslog_address") or "").strip()
        if address:
            try:
                if ":" in address and not address.startswith("/"):
                    host, port = address.rsplit(":", 1)
                    addr = (host, int(port))
                else:
                    addr = address
                facility = logging.handlers.SysLogHandler.facility_names.get(
                    (self.get_option("syslog_facility") or "user").lower(), logging.handlers.SysLogHandler.LOG_USER
                )
                handler = logging.handlers.SysLogHandler(address=addr, facility=facility)
                logger = logging.getLogger("gpuops.audit.%s" % self.run_id)
                logger.propagate = False
                logger.setLevel(logging.INFO)
                logger.addHandler(handler)
                self._syslog = logger
            except (OSError, ValueError) as e:
                self._display.warning("gpuops.cluster.audit: syslog %s unusable: %s" % (address, e))
        self._export_marker()

    def _export_marker(self):
        """Tell action plugins (forked workers of this process) that the audit trail is live, or broken."""
        os.environ[MARKER_ENV] = json.dumps(
            {"pid": os.getpid(), "run_id": self.run_id, "log": self.log_path, "broken": self.broken},
            sort_keys=True,
        )

    # ---- writing -----------------------------------------------------------------------------------------
    def _write(self, record):
        base = {
            "run_id": self.run_id,
            "user": self._user,
            "controller": self._controller,
            "playbook": self._playbook,
        }
        base.update(record)
        try:
            line = _audit.scrub(_audit.dumps(base), self._secrets)
            self.head = _audit.append(self.log_path, json.loads(line), head_path=self.head_path)
        except (OSError, ValueError) as e:
            if not self.broken:
                self._display.warning("gpuops.cluster.audit: cannot write %s: %s" % (self.log_path, e))
            self.broken = str(e)
            self._export_marker()
            return
        if self._syslog is not None:
            try:
                self._syslog.info("gpuops-audit %s", line)
            except Exception:  # noqa: BLE001 - syslog must never break a run
                pass

    def _context(self):
        ctx = {
            "ticket": _first(*[self._vars.get(k) for k in _TICKET_VARS], self._ids.get("ticket")),
            "change_id": _first(self._vars.get("gpuops_change_id"), self._ids.get("change_id")),
        }
        g = self._guard
        if g:
            ctx["window"] = g.get("window")
            ctx["override"] = g.get("override")
            ctx["decision"] = g.get("decision")
            ctx["ticket"] = _first(ctx["ticket"], g.get("ticket"), (g.get("override") or {}).get("ticket"))
            ctx["change_id"] = _first(ctx["change_id"], g.get("change_id"))
        return ctx

    def _add_secrets(self, variables):
        for v in _audit.secret_values(variables):
            if v not in self._secrets:
                self._secrets.append(v)

    # ---- playbook and plays ------------------------------------------------------------------------------
    def v2_playbook_on_start(self, playbook):
        self._playbook = os.path.abspath(getattr(playbook, "_file_name", "") or "") or None
        self._write(
            {
                "event": "run_start",
                "check_mode": bool(context.CLIARGS.get("check", False)),
                "pid": os.getpid(),
            }
        )

    def _play_end(self):
        if self._play is not None:
            self._write(dict(self._context(), event="play_end", play=self._play, counts=self._play_counts))
        self._play = None
        self._play_counts = {}

    def v2_playbook_on_play_start(self, play):
        self._play_end()
        variables = {}
        try:
            vm = play.get_variable_manager()
            extra = dict(vm.extra_vars) if vm is not None else {}
        except Exception:  # noqa: BLE001 - older cores
            extra = {}
        variables.update(play.vars or {})
        variables.update(extra)  # extra vars win, as in Ansible
        self._add_secrets(variables)
        self._vars = {k: variables.get(k) for k in _TICKET_VARS + ("gpuops_change_id",)}
        for k, v in list(self._vars.items()):
            if v is not None and not isinstance(v, (str, int, float)):
                self._vars[k] = str(v)
        # the guard's decision stays in force for later plays of this run (a guard play on localhost
        # usually precedes the disruptive play); a later guard replaces it
        self._play = play.get_name()
        self._write(
            dict(
                self._context(),
                event="play_start",
                play=self._play,
                hosts=[str(h) for h in (play.hosts if isinstance(play.hosts, list) else [play.hosts])][:50],
                serial=[str(s) for s in (play.serial or [])],
                check_mode=bool(context.CLIARGS.get("check", False)) or bool(play.check_mode),
            )
        )

    def v2_playbook_on_stats(self, stats):
        self._play_end()
        hosts = sorted(stats.processed.keys())
        totals = {h: stats.summarize(h) for h in hosts[:1000]}
        self._write({"event": "run_end", "hosts": len(hosts), "stats": totals})
        if self.head and self._syslog is not None:
            try:
                self._syslog.info(
                    "gpuops-audit-head run_id=%s seq=%s hash=%s log=%s",
                    self.run_id,
                    self.head.get("seq"),
                    self.head.get("hash"),
                    self.log_path,
                )
            except Exception:  # noqa: BLE001
                pass

    # ---- task results ------------------------------------------------------------------------------------
    def _result_record(self, result, status):
        task = result._task
        res = result._result if isinstance(result._result, dict) else {}
        action = getattr(task, "resolved_action", None) or task.action
        no_log = bool(getattr(task, "no_log", False)) or bool(res.get("_ansible_no_log"))
        invocation = res.get("invocation") if isinstance(res.get("invocation"), dict) else {}
        self._add_secrets(task.args if isinstance(task.args, dict) else {})
        self._add_secrets(invocation.get("module_args") or {})
        rec = {
            "event": "task",
            "status": status,
            "host": result._host.get_name(),
            "play": self._play,
            "task": task.get_name(),
            "role": task._role.get_name() if getattr(task, "_role", None) else None,
            "module": action,
            "changed": bool(res.get("changed", False)),
            "failed": status == "failed",
            "skipped": bool(res.get("skipped", False)),
            "unreachable": status == "unreachable",
            "ignore_errors": bool(getattr(task, "ignore_errors", False)) if status == "failed" else None,
            "check_mode": bool(res.get("_ansible_check_mode", context.CLIARGS.get("check", False))),
            "no_log": no_log,
        }
        delegated = res.get("_ansible_delegated_vars") or {}
        if isinstance(delegated, dict) and delegated.get("ansible_delegated_host"):
            rec["delegated_to"] = str(delegated.get("ansible_delegated_host"))
        if status in ("failed", "unreachable"):
            rec["msg"] = "(hidden: no_log)" if no_log else _error_text(res)
        nodes, items = _nodes_and_items(res, no_log)
        if nodes:
            rec["nodes"] = nodes
            if len(nodes) == 1:
                rec["node"] = nodes[0]
        if items:
            rec["items"] = items
        if not no_log:
            rec["diff"] = _audit.diff_summary(res.get("diff"))
        rec.update(self._context())
        return rec, action, res

    def _remember_ids(self, res):
        """The ticket and change id validated by untrusted_input (``-e gpuops_ticket=...`` or a role alias)."""
        facts = res.get("ansible_facts") if isinstance(res.get("ansible_facts"), dict) else {}
        for value in facts.values():
            if not isinstance(value, dict):
                continue
            ticket = _first(*[value.get(k) for k in _TICKET_VARS])
            if isinstance(ticket, str) and ticket:
                self._ids["ticket"] = ticket
            if isinstance(value.get("gpuops_change_id"), str) and value["gpuops_change_id"]:
                self._ids["change_id"] = value["gpuops_change_id"]

    def _record_result(self, result, status):
        rec, action, res = self._result_record(result, status)
        self._play_counts[status] = self._play_counts.get(status, 0) + 1
        if action in INPUT_ACTIONS and status == "ok":
            self._remember_ids(res)
            rec.update(self._context())
        if action in ISOLATION_GUARD_ACTIONS and status == "ok" and "allowed" in res:
            # every decision, refusals included (a refused node is not a change, but the auditor needs it)
            rec["event"] = "task"
            rec["decision"] = "refused" if res.get("refused_by_guard") else "allowed"
            rec["allowed"] = list(res.get("allowed") or [])[:_ITEMS_MAX]
            rec["already_isolated"] = list(res.get("already_isolated") or [])[:_ITEMS_MAX]
            rec["refused"] = [
                {"node": r.get("node"), "reason": str(r.get("reason"))[:_MSG_MAX]}
                for r in (res.get("refused_by_guard") or [])[:_ITEMS_MAX]
                if isinstance(r, dict)
            ]
            rec["nodes"] = sorted(
                set(rec["allowed"]) | set(rec["already_isolated"]) | {r["node"] for r in rec["refused"]}
            )
            self._write(rec)
            return
        if action in REALTIME_ACTIONS and status == "ok" and "act_hosts" in res:
            sup = res.get("suppressed") if isinstance(res.get("suppressed"), dict) else {}
            rec["act"] = list(res.get("act_hosts") or [])[:_ITEMS_MAX]
            rec["suppressed"] = [{"node": n, "reason": str(w)[:_MSG_MAX]} for n, w in sorted(sup.items())][:_ITEMS_MAX]
            outcomes = [r for r in res.get("results") or [] if isinstance(r, dict)]
            rec["repeats"] = sorted({str(r.get("host")) for r in outcomes if r.get("outcome") == "repeat"})[:_ITEMS_MAX]
            rec["incidents"] = list(res.get("incidents") or [])[:_ITEMS_MAX]
            self._write(rec)
            return
        if action in GUARD_ACTIONS and status == "ok":
            facts = res.get("ansible_facts") or {}
            guard = facts.get("gpuops_change_window") if isinstance(facts, dict) else None
            if isinstance(guard, dict):
                self._guard = guard
                rec.update(self._context())
                rec["event"] = "guard"
                rec["guard"] = {
                    k: guard.get(k)
                    for k in (
                        "allowed",
                        "decision",
                        "change_class",
                        "hosts",
                        "window",
                        "override",
                        "findings",
                        "clock",
                        "clock_override",
                        "unaudited_opt_out",
                        "next_window",
                    )
                }
            self._write(rec)
            return
        if status == "ok" and not rec["changed"]:
            return
        self._write(rec)

    def v2_runner_on_ok(self, result):
        self._record_result(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record_result(result, "failed")

    def v2_runner_on_unreachable(self, result):
        self._record_result(result, "unreachable")
