# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.upgrade_plan: plan a rolling firmware/driver upgrade on the controller.

Read-only. Documentation: plugins/modules/upgrade_plan.py and docs/upgrades.md.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _planner, _upgrade

ARGS = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "facts_var": {"type": "str", "default": "gpuops_upgrade_collect"},
    "baseline": {"type": "dict"},
    "matrix": {"type": "dict"},
    "methods": {"type": "dict"},
    "constraints": {"type": "dict", "default": {}},
    "window_s": {"type": "float"},
    "allow_downgrade": {"type": "bool", "default": False},
}


def _plain(value):
    """HostVars values are lazy wrappers: turn them into plain containers."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return {to_text(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _slurm_info(facts):
    """(state, partitions) of the node from its slurm facts, or (None, None)."""
    nodes = ((facts or {}).get("slurm") or {}).get("nodes") or []
    node = nodes[0] if nodes and isinstance(nodes[0], dict) else {}
    return _planner.slurm_state(node.get("state")), node.get("partitions") or None


def plan_hosts(hosts, baseline, matrix, methods, constraints, window_s, allow_downgrade):
    """The whole plan as a plain function. ``hosts``: {name: {facts, node_class, rack, leaf, power, partition,
    state, priority}}. Raises _upgrade.UpgradeError / _planner.PlanError for invalid input."""
    problems = _upgrade.validate_baseline(baseline, matrix)
    res = {"problems": problems, "nodes": {}, "skipped": [], "blocked": []}
    if problems:
        return res
    planner_nodes = []
    for name in sorted(hosts):
        h = hosts[name]
        nc = h.get("node_class")
        target = _upgrade.target_for(baseline, nc)
        facts = h.get("facts")
        state, partitions = _slurm_info(facts)
        node = {
            "name": name,
            "partition": h.get("partition") or partitions,
            "rack": h.get("rack"),
            "leaf": h.get("leaf"),
            "power": h.get("power"),
            "state": h.get("state") or state or "idle",
            "priority": h.get("priority") or 0,
            "upgrade": False,
        }
        reason = None
        if target is None:
            reason = "no baseline for node class %r (gpuops_node_class)" % (nc,)
        elif not isinstance(facts, dict):
            reason = h.get("facts_error") or "no facts"
        if reason:
            res["blocked"].append({"host": name, "reason": reason})
            planner_nodes.append(node)
            continue
        current = _upgrade.current_versions(facts)
        if methods is not None and not isinstance(methods, dict):
            raise _upgrade.UpgradeError("gpuops_upgrade_methods", "must be a mapping node class -> steps")
        try:
            steps = _upgrade.plan_node(current, target, nc, (methods or {}).get(nc))
        except _upgrade.UpgradeError as exc:
            raise _upgrade.UpgradeError("gpuops_upgrade_methods.%s.%s" % (nc, exc.key[len("methods.") :]), exc.message)
        summary = _upgrade.summarize(steps)
        res["nodes"][name] = {"node_class": nc, "current": current, "steps": steps, "summary": summary}
        if not steps:
            res["skipped"].append(name)
        elif summary["verify"]:
            res["blocked"].append(
                {"host": name, "reason": "current version unknown for: %s" % ", ".join(summary["verify"])}
            )
        elif summary["downgrade"] and not allow_downgrade:
            res["blocked"].append({"host": name, "reason": "plan downgrades a component (allow_downgrade=false)"})
        else:
            node.update(upgrade=True, est_duration_s=summary["est_duration_s"])
        planner_nodes.append(node)
    cons = dict(constraints or {})
    if window_s is not None:
        cons["window_s"] = window_s
    res.update(_planner.plan_batches(planner_nodes, cons))
    res["host_batches"] = {h: b["index"] for b in res["batches"] for h in b["hosts"]}
    return res


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _unused, args = self.validate_argument_spec(argument_spec=ARGS)
        hostvars = task_vars.get("hostvars", {})

        def pick(name, var):
            if args[name] is not None:
                return args[name]
            if task_vars.get(var) is not None:
                return _plain(self._templar.template(task_vars[var]))
            for h in args["hosts"]:
                if h in hostvars and hostvars[h].get(var) is not None:
                    return _plain(hostvars[h].get(var))
            return None

        baseline = pick("baseline", "gpuops_upgrade_baseline")
        matrix = pick("matrix", "gpuops_compat_matrix")
        methods = pick("methods", "gpuops_upgrade_methods")
        window_s = args["window_s"]
        if window_s is None:
            cw = task_vars.get("gpuops_change_window")
            if isinstance(cw, dict) and cw.get("remaining_s") is not None:
                window_s = float(cw["remaining_s"])
        hosts = {}
        for h in args["hosts"]:
            if h not in hostvars:
                raise AnsibleActionFail("upgrade_plan: host %r is not in the inventory" % h)
            hv = hostvars[h]
            entry = {
                "node_class": hv.get("gpuops_node_class"),
                "rack": hv.get("gpuops_rack"),
                "leaf": hv.get("gpuops_leaf_switch"),
                "power": hv.get("gpuops_power_domain"),
                "partition": _plain(hv.get("gpuops_partition")),
                "state": hv.get("gpuops_slurm_state"),
                "priority": hv.get("gpuops_upgrade_priority"),
            }
            reg = hv.get(args["facts_var"])
            reg = _plain(reg) if reg is not None else None
            if isinstance(reg, dict) and isinstance(reg.get("facts"), dict):
                entry["facts"] = reg["facts"]
            elif isinstance(reg, dict) and reg.get("schema"):
                entry["facts"] = reg
            elif hv.get("gpuops_capture_dir"):
                entry["facts"] = self._capture_facts(hv)
            else:
                entry["facts_error"] = "no facts: %s not registered and no gpuops_capture_dir" % args["facts_var"]
                if isinstance(reg, dict) and (reg.get("failed") or reg.get("unreachable")):
                    entry["facts_error"] = "collection failed: %s" % to_text(reg.get("msg") or "unreachable")
            hosts[h] = entry
        try:
            res = plan_hosts(hosts, baseline, matrix, methods, args["constraints"], window_s, args["allow_downgrade"])
        except (_upgrade.UpgradeError, _planner.PlanError) as exc:
            raise AnsibleActionFail("upgrade_plan: %s" % exc) from exc
        result.update(res)
        result["changed"] = False
        result["window_s"] = window_s
        if res["problems"]:
            result["failed"] = True
            result["msg"] = "upgrade_plan: the baseline is refused: " + "; ".join(p["message"] for p in res["problems"])
        else:
            result["msg"] = "%d host(s) in %d batch(es); %d at target, %d blocked, %d deferred" % (
                len(res["ordered_hosts"]),
                len(res["batches"]),
                len(res["skipped"]),
                len(res["blocked"]),
                len(res["deferred"]),
            )
        return result

    @staticmethod
    def _capture_facts(hv):
        from ansible_collections.gpuops.cluster.plugins.module_utils._collect import collect_all

        capture_dir = os.path.expanduser(to_text(hv.get("gpuops_capture_dir")))
        if not os.path.isabs(capture_dir) and hv.get("inventory_dir"):
            capture_dir = os.path.join(to_text(hv.get("inventory_dir")), capture_dir)
        return collect_all(capture_dir=capture_dir, domains=("gpu", "ib", "bmc", "slurm", "node"))
