# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side evaluation of an inspection: see plugins/modules/inspect_cluster.py for the docs."""

from __future__ import annotations

import os
import time

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.gpuops.cluster.plugins.module_utils._collect import SCHEMA as FACTS_SCHEMA
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _inspect, _policy, _report, _runbooks
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import plain

_ARGS = {
    "targets": {"type": "list", "elements": "str", "required": True},
    "report_dir": {"type": "path"},
    "state_dir": {"type": "path"},
    "policy_overrides": {"type": "dict", "default": {}},
    "collect_var": {"type": "str", "default": "__inspect_collect"},
    "write_reports": {"type": "bool", "default": True},
    "include_facts": {"type": "bool", "default": True},
    "validate_only": {"type": "bool", "default": False},
    "report_templates": {"type": "path"},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    @staticmethod
    def _capture_path(hv, key):
        """A capture directory from host vars; relative paths are relative to the inventory directory."""
        value = hv.get(key)
        if not value:
            return None
        path = os.path.expanduser(to_text(value))
        if not os.path.isabs(path) and hv.get("inventory_dir"):
            path = os.path.join(to_text(hv.get("inventory_dir")), path)
        return path

    @staticmethod
    def _classes(hostvars, targets, policy_overrides):
        """Each target's profile; fails naming every host whose node class names no profile (a typo).

        Returns ``(profiles, without_class)``: host -> profile dict or None, and the hosts without a profile: no
        class at all, or a class while no profile is defined anywhere (the class then only keys other data such
        as upgrade baselines). Allowed: their profile checks are off, the caller warns.
        """
        try:
            base = _policy.merge_policy(_policy.DEFAULT_POLICY, plain(policy_overrides or {}))
        except _policy.PolicyError as exc:
            raise AnsibleActionFail("invalid gpuops policy: %s" % exc) from exc
        profiles, problems, without = {}, [], []
        for host in targets:
            if host not in hostvars:
                raise AnsibleActionFail("inspect_cluster: target %r is not in the inventory" % host)
            hv = hostvars[host]
            node_class = hv.get("gpuops_node_class")
            node_class = to_text(node_class) if node_class not in (None, "") else None
            profile = hv.get("gpuops_profile")
            if profile is None and node_class is not None:
                tables = [
                    plain(hv.get("gpuops_profiles") or {}),
                    plain((hv.get("gpuops_policy_overrides") or {}).get("profiles") or {}),
                    base.get("profiles") or {},
                ]
                for table in tables:
                    if profile is None and isinstance(table, dict):
                        profile = table.get(node_class)
                known = sorted({to_text(k) for t in tables if isinstance(t, dict) for k in t})
                if profile is None and known:
                    problems.append(_policy.unknown_class_message(host, node_class, known))
                    continue
            if profile is None:
                without.append(host)  # no class, or a class while no profile is defined anywhere
            profiles[host] = plain(profile) if profile is not None else None
        if problems:
            raise AnsibleActionFail(
                "inspect_cluster: %d target(s) with an unknown node class, nothing was inspected: %s"
                % (len(problems), "; ".join(problems))
            )
        return profiles, without

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _unused, args = self.validate_argument_spec(argument_spec=_ARGS)
        hostvars = task_vars.get("hostvars", {})
        t0 = time.monotonic()
        # before anything is read: a node class that names no profile stops the run by name
        profiles, without_class = self._classes(hostvars, args["targets"], args["policy_overrides"])
        if without_class:
            result.setdefault("warnings", []).append(
                "%d target(s) have no hardware profile (no gpuops_node_class, or no gpuops_profiles defined): their "
                "profile checks (GPU count, IB ports, services, fabric manager, ...) are off: %s%s"
                % (len(without_class), ", ".join(without_class[:10]), " ..." if len(without_class) > 10 else "")
            )
        if args["validate_only"]:
            result.update(changed=False, without_class=without_class, msg="%d targets checked" % len(profiles))
            return result
        hosts = {}
        for host in args["targets"]:
            hv = hostvars[host]
            capture_dir = self._capture_path(hv, "gpuops_capture_dir")
            node_class = hv.get("gpuops_node_class")
            profile = profiles[host]
            entry = {
                "capture_dir": capture_dir,
                "previous_capture_dir": self._capture_path(hv, "gpuops_previous_capture_dir"),
                "rack": hv.get("gpuops_rack"),
                "leaf": hv.get("gpuops_leaf_switch"),
                "power": hv.get("gpuops_power_domain"),
                "node_class": node_class,
                "policy_overrides": plain(hv.get("gpuops_policy_overrides") or {}),
                "baseline": plain(hv.get("gpuops_golden_baseline")) if hv.get("gpuops_golden_baseline") else None,
            }
            entry["profile"] = profile
            if not capture_dir:
                reg = hv.get(args["collect_var"])
                reg = plain(reg) if reg is not None else None
                if reg is None:
                    entry.update(
                        unreachable=True, message="no collection result (host skipped or failed before collecting)"
                    )
                elif reg.get("unreachable"):
                    entry.update(unreachable=True, message=to_text(reg.get("msg") or "unreachable"))
                elif reg.get("failed") and not reg.get("facts"):
                    entry["facts"] = {
                        "schema": FACTS_SCHEMA,
                        "mode": "live",
                        "errors": [
                            {
                                "domain": "collect",
                                "kind": "tool_error",
                                "source": "gpuops.cluster.collect_info",
                                "parser": None,
                                "line": None,
                                "message": to_text(reg.get("msg") or "module failed"),
                            }
                        ],
                    }
                else:
                    entry["facts"] = reg.get("facts")
            hosts[host] = entry
        t_vars = time.monotonic() - t0
        state_dir = args["state_dir"]
        if self._task.check_mode:
            state_dir = None  # check mode: never advance counters, clear markers or escalation history
        try:
            report = _inspect.inspect_nodes(
                hosts,
                policy_overrides=args["policy_overrides"],
                state_dir=state_dir,
                include_facts=args["include_facts"],
            )
        except _policy.PolicyError as exc:
            raise AnsibleActionFail("invalid gpuops policy: %s" % exc) from exc
        except _runbooks.CatalogError as exc:  # the report links each finding to its runbook: a broken install
            raise AnsibleActionFail("inspect_cluster: %s" % exc) from exc
        paths = {}
        if args["write_reports"]:
            report_dir = args["report_dir"] or _inspect.default_report_dir()
            try:
                paths = _inspect.write_reports(report, report_dir, templates_dir=args["report_templates"])
            except _report.ReportTemplateError as exc:
                raise AnsibleActionFail("inspect_cluster: %s" % exc) from exc
            result["report_dir"] = os.path.abspath(report_dir)
        result.update(
            changed=False,
            summary=report["summary"],
            policy=report["policy"],
            generated_at=report["generated_at"],
            nodes=_inspect.host_summary(report),
            reports=paths,
            without_class=without_class,
            timing={"hostvars_s": round(t_vars, 3), "total_s": round(time.monotonic() - t0, 3)},
        )
        return result
