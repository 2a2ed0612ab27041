# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.start_checks: what every playbook checks first, before any change.

Thin glue around ``plugin_utils.change.start_checks``: gathers the ``gpuops_*`` names of the extra vars and of the
inventory (hosts, groups, host_vars/group_vars next to the inventory or the playbook), the documented names of
docs/inventory.md and whether the audit callback is live; warns (or, with ``gpuops_strict_vars``, fails) on unknown
names and refuses a disruptive playbook without the audit trail.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List

from ansible import context
from ansible.utils.vars import load_extra_vars

from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import start_checks as _sc
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change.change_window import audit_marker
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as _audit

#: docs/inventory.md of this collection (it ships in the tarball).
_DOC = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "inventory.md"
)


class ActionModule(ControllerAction):
    NAME = "start_checks"
    ARGUMENT_SPEC = {
        "workflow": {"type": "str", "default": ""},
        "disruptive": {"type": "bool", "default": False},
        "allow_unaudited_default": {"type": "bool", "default": False},
        "allow_unaudited_vars": {"type": "list", "elements": "str", "default": ["gpuops_allow_unaudited"]},
        "check_vars": {"type": "bool", "default": True},
        "state_dir": {"type": "path"},
    }

    def step(self, args, check_mode, task_vars):
        result: Dict[str, Any] = {"changed": False, "unknown_variables": [], "audit": "ok"}
        args["workflow"] = args["workflow"] or "this playbook"
        strict = self._flag(task_vars, ["gpuops_strict_vars"], False)
        allow = self._flag(task_vars, args["allow_unaudited_vars"], args["allow_unaudited_default"])
        if args["check_vars"]:
            problems = self._unknown(task_vars)
            result["unknown_variables"] = [{"name": n, "where": w, "nearest": near} for n, w, near in problems]
            lines = [_sc.unknown_message(n, w, near) for n, w, near in problems]
            if lines and strict:
                raise StepError("gpuops_strict_vars=true: " + "; ".join(lines))
            for line in lines:
                self._display.warning(line + " (it is ignored; -e gpuops_strict_vars=true makes this fatal)")
        decision = _sc.audit_decision(args["disruptive"], audit_marker() is not None, allow, check_mode)
        result["audit"] = decision
        msg = _sc.REFUSED_UNAUDITED % args["workflow"]
        if decision == "refuse":
            raise StepError(msg)
        if decision == "would_refuse":
            self._display.display("start_checks: check mode: would refuse: " + msg)
        elif decision == "opt_out":
            self._display.warning("%s runs WITHOUT the audit callback (opt-out, recorded)" % args["workflow"])
            if not check_mode:
                self._record_opt_out(args, task_vars)
        result["msg"] = "%d unknown variable(s); audit: %s" % (len(result["unknown_variables"]), decision)
        return result

    @staticmethod
    def _flag(task_vars, names, default):
        """The first of the variables ``names`` that is set, as a literal boolean, read raw: these run before the
        playbooks' untrusted-input check, so a value is never templated (a template is refused)."""
        for name in names:
            if name not in task_vars:
                continue
            value = task_vars[name]
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("true", "yes", "on", "1"):
                return True
            if text in ("false", "no", "off", "0", ""):
                return False
            raise StepError("%s must be true or false, not %r" % (name, str(value)[:80]))
        return default

    # -- unknown variables ---------------------------------------------------------------------------------
    def _unknown(self, task_vars):
        try:
            with open(_DOC, encoding="utf-8") as fh:
                known = _sc.documented_names(fh.read())
        except OSError as e:
            self._display.warning("start_checks: cannot read %s (%s): variable names are not checked" % (_DOC, e))
            return []
        extra = load_extra_vars(self._loader) if context.CLIARGS.get("extra_vars") else {}
        sources: Dict[str, List[str]] = {"extra vars": list(extra or {})}
        sources.update(self._inventory_names(task_vars))
        return _sc.unknown_variables(sources, known)

    def _inventory_names(self, task_vars) -> Dict[str, List[str]]:
        """``{"host NAME" | "group NAME": [gpuops_* names]}``: inventory vars and vars plugins (host_vars/,
        group_vars/ next to the inventory source and the playbook). The plugins are asked at the "task" stage, as
        the variable manager does by default (run_vars_plugins=demand); with "start" they already ran at
        inventory load and their vars are in the entities' own."""
        hostvars = task_vars.get("hostvars")
        inventory = getattr(hostvars, "_inventory", None)
        if inventory is None:
            return {}
        from ansible.vars.plugins import get_vars_from_inventory_sources, get_vars_from_path

        basedir = task_vars.get("playbook_dir")
        sources = getattr(inventory, "_sources", None) or []
        out: Dict[str, List[str]] = {}
        entities = [("group", g) for g in inventory.groups.values()] + [("host", h) for h in inventory.hosts.values()]
        for kind, ent in entities:
            names = {n for n in ent.get_vars() if _sc.is_collection_name(n)}
            try:
                names.update(n for n in get_vars_from_inventory_sources(self._loader, sources, [ent], "task") or {})
                if basedir:
                    names.update(n for n in get_vars_from_path(self._loader, basedir, [ent], "task") or {})
            except Exception as e:  # pylint: disable=broad-except  # a broken vars file is the run's own error
                self._display.vvv("start_checks: vars plugins for %s: %s" % (ent.name, e))
            names = {n for n in names if _sc.is_collection_name(n)}
            if names:
                out["%s %s" % (kind, ent.name)] = sorted(names)
        return out

    # -- audit opt-out -------------------------------------------------------------------------------------
    def _record_opt_out(self, args, task_vars):
        record = {
            "event": "unaudited_opt_out",
            "run_id": None,
            "user": os.environ.get("USER") or str(os.getuid()),
            "playbook": task_vars.get("playbook_dir"),
            "play": task_vars.get("ansible_play_name"),
            "workflow": args["workflow"],
            "clock": utcnow().isoformat(),
        }
        state_var = task_vars.get("gpuops_state_dir")
        state_var = self._templar.template(state_var) if isinstance(state_var, str) and state_var.strip() else None
        try:
            state = _audit.state_dir(args.get("state_dir") or state_var)
            _audit.append(_audit.default_log_path(state), record, head_path=os.path.join(state, "audit", "head.json"))
        except OSError as e:
            self._display.warning("start_checks: could not record the audit opt-out: %s" % e)
