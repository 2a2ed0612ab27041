# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.upgrade_plan: plan a rolling firmware/driver upgrade on the controller.

Read-only. Gathers each host's inventory placement and facts, then ``_planner.plan_hosts`` decides.
Documentation: plugins/modules/upgrade_plan.py and docs/upgrades.md.
"""

from __future__ import annotations

import os

from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import collect_all
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import planner as _planner
from ansible_collections.gpuops.cluster.plugins.plugin_utils.upgrade import plan as _upgrade
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError, plain

#: Inventory variable -> planner key, per host.
HOST_VARS = (
    ("gpuops_node_class", "node_class"),
    ("gpuops_rack", "rack"),
    ("gpuops_leaf_switch", "leaf"),
    ("gpuops_power_domain", "power"),
    ("gpuops_partition", "partition"),
    ("gpuops_slurm_state", "state"),
    ("gpuops_upgrade_priority", "priority"),
)


def _capture_facts(hv):
    capture_dir = os.path.expanduser(to_text(hv.get("gpuops_capture_dir")))
    if not os.path.isabs(capture_dir) and hv.get("inventory_dir"):
        capture_dir = os.path.join(to_text(hv.get("inventory_dir")), capture_dir)
    return collect_all(capture_dir=capture_dir, domains=("gpu", "ib", "bmc", "slurm", "node"))


def _host_entry(hv, facts_var):
    """The planner's view of one host: placement from the inventory, facts registered or from its capture."""
    entry = {key: plain(hv.get(var)) for var, key in HOST_VARS}
    entry["state"] = plain(hv.get("upgrade_slurm_state")) or entry["state"]  # collected by the upgrade role
    reg = hv.get(facts_var)
    reg = plain(reg) if reg is not None else None
    if isinstance(reg, dict) and isinstance(reg.get("facts"), dict):
        entry["facts"] = reg["facts"]
    elif isinstance(reg, dict) and reg.get("schema"):
        entry["facts"] = reg
    elif hv.get("gpuops_capture_dir"):
        entry["facts"] = _capture_facts(hv)
    elif isinstance(reg, dict) and (reg.get("failed") or reg.get("unreachable")):
        entry["facts_error"] = "collection failed: %s" % to_text(reg.get("msg") or "unreachable")
    else:
        entry["facts_error"] = "no facts: %s not registered and no gpuops_capture_dir" % facts_var
    return entry


class ActionModule(ControllerAction):
    NAME = "upgrade_plan"
    ARGUMENT_SPEC = {
        "hosts": {"type": "list", "elements": "str", "required": True},
        "facts_var": {"type": "str", "default": "gpuops_upgrade_collect"},
        "baseline": {"type": "dict"},
        "matrix": {"type": "dict"},
        "methods": {"type": "dict"},
        "constraints": {"type": "dict", "default": {}},
        "window_s": {"type": "float"},
        "allow_downgrade": {"type": "bool", "default": False},
    }

    def _pick(self, args, name, var, task_vars):
        """The argument, else the play's variable, else the first target host's variable."""
        if args[name] is not None:
            return args[name]
        if task_vars.get(var) is not None:
            return plain(self._templar.template(task_vars[var]))
        hostvars = task_vars.get("hostvars", {})
        for h in args["hosts"]:
            if h in hostvars and hostvars[h].get(var) is not None:
                return plain(hostvars[h].get(var))
        return None

    def step(self, args, check_mode, task_vars):
        hostvars = task_vars.get("hostvars", {})
        window_s = args["window_s"]
        cw = task_vars.get("gpuops_change_window")
        if window_s is None and isinstance(cw, dict) and cw.get("remaining_s") is not None:
            window_s = float(cw["remaining_s"])
        missing = [h for h in args["hosts"] if h not in hostvars]
        if missing:
            raise StepError("host %r is not in the inventory" % missing[0])
        hosts = {h: _host_entry(hostvars[h], args["facts_var"]) for h in args["hosts"]}
        res = _planner.plan_hosts(
            hosts,
            self._pick(args, "baseline", "gpuops_upgrade_baseline", task_vars),
            self._pick(args, "matrix", "gpuops_compat_matrix", task_vars),
            self._pick(args, "methods", "gpuops_upgrade_methods", task_vars),
            args["constraints"],
            window_s,
            args["allow_downgrade"],
        )  # UpgradeError / PlanError (ValueError): a failed result naming the key
        res.update(changed=False, window_s=window_s)
        if res["problems"]:
            res.update(
                failed=True,
                msg="upgrade_plan: the baseline is refused: " + "; ".join(p["message"] for p in res["problems"]),
            )
            return res
        # the lines the role shows (plan: "components: ...", verify: "still not at target: ...")
        res["components_text"] = _upgrade.components_text(res["nodes"])
        res["pending_text"] = {h: _upgrade.pending_text(n["steps"]) for h, n in res["nodes"].items() if n["steps"]}
        res["msg"] = "%d host(s) in %d batch(es); %d at target, %d blocked, %d deferred" % (
            len(res["ordered_hosts"]),
            len(res["batches"]),
            len(res["skipped"]),
            len(res["blocked"]),
            len(res["deferred"]),
        )
        return res
