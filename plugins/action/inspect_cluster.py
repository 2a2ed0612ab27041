# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side evaluation of an inspection: see plugins/modules/inspect_cluster.py for the docs."""

from __future__ import annotations

import json
import os
import time

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.gpuops.cluster.plugins.module_utils._collect import SCHEMA as FACTS_SCHEMA
from ansible_collections.gpuops.cluster.plugins.module_utils._common import write_private_atomic
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _fleet, _inspect, _policy, _report, _runbooks
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _platform_plan
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import plain
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import SEVERITIES, severity_rank

_ARGS = {
    "targets": {"type": "list", "elements": "str"},
    "target_pattern": {"type": "str", "default": "gpu_nodes"},
    "fail_on": {"type": "str", "default": ""},
    "textfile_dir": {"type": "path"},
    "report_dir": {"type": "path"},
    "state_dir": {"type": "path"},
    "policy_overrides": {"type": "dict", "default": {}},
    "collect_var": {"type": "str", "default": "__inspect_collect"},
    "write_reports": {"type": "bool", "default": True},
    "include_facts": {"type": "bool", "default": True},
    "validate_only": {"type": "bool", "default": False},
    "report_templates": {"type": "path"},
    "write_profiles": {"type": "path"},
    "platform_var": {"type": "str", "default": "__inspect_platform"},
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

    @staticmethod
    def _check_args(args, task_vars):
        """Stop with a clear message on an empty target set, a bad fail_on or a missing textfile directory."""
        if not args["targets"]:
            sources = ", ".join(to_text(s) for s in task_vars.get("ansible_inventory_sources") or []) or "?"
            raise AnsibleActionFail(
                "inspect_cluster: the host pattern %r (gpuops_targets, default gpu_nodes) matched no host in the "
                "inventory (%s): nothing was inspected. Define the group gpu_nodes or pass "
                "-e gpuops_targets=<group or pattern>" % (args["target_pattern"], sources)
            )
        fail_on = args["fail_on"] or ""
        if fail_on and fail_on not in SEVERITIES:
            raise AnsibleActionFail(
                "inspect_cluster: gpuops_fail_on must be one of %s (the run fails when a finding at or above it "
                "exists) or empty (off), got %r" % (", ".join(SEVERITIES), fail_on)
            )
        if args["textfile_dir"] and not os.path.isdir(args["textfile_dir"]):
            raise AnsibleActionFail(
                "inspect_cluster: gpuops_textfile_dir %r is not a directory: create node_exporter's textfile "
                "collector directory first (docs/metrics.md)" % args["textfile_dir"]
            )

    @staticmethod
    def _plan(hostvars, targets):
        """(live, captured): targets contacted over their connection, and those analysed from a capture directory."""
        live, captured = [], []
        for host in targets:
            (captured if hostvars[host].get("gpuops_capture_dir") else live).append(host)
        return live, captured

    @staticmethod
    def _gate(summary, fail_on):
        """Findings (node and cluster) at or above ``fail_on``: {severity, count, by_severity}; None when off."""
        if not fail_on:
            return None
        by = {s: int(summary["severity"].get(s, 0)) for s in SEVERITIES if severity_rank(s) <= severity_rank(fail_on)}
        return {"severity": fail_on, "count": sum(by.values()), "by_severity": by}

    @staticmethod
    def _live(reg):
        """What a live host's registered collection gives the pipeline, and its outcome (ok/unreachable/failed)."""
        if reg is None:
            return {
                "unreachable": True,
                "message": "no collection result (host skipped or failed before collecting)",
            }, ("unreachable")
        if reg.get("unreachable"):
            return {"unreachable": True, "message": to_text(reg.get("msg") or "unreachable")}, "unreachable"
        if reg.get("facts") is None and reg.get("facts_json") is not None:  # collect_info result_format=json
            try:
                reg = dict(reg, facts=json.loads(to_text(reg["facts_json"])))
            except ValueError as exc:
                reg = dict(reg, failed=True, facts=None, msg="collect_info returned unreadable facts_json: %s" % exc)
        if reg.get("failed") and not reg.get("facts"):
            error = {
                "domain": "collect",
                "kind": "tool_error",
                "source": "gpuops.cluster.collect_info",
                "parser": None,
                "line": None,
                "message": to_text(reg.get("msg") or "module failed"),
            }
            return {"facts": {"schema": FACTS_SCHEMA, "mode": "live", "errors": [error]}}, "failed"
        return {"facts": reg.get("facts")}, "ok"

    def _entries(self, hostvars, targets, profiles, collect_var):
        """The pipeline's input per host, and the live collection's counts {live, ok, unreachable, failed}."""
        hosts = {}
        collected = {"live": 0, "ok": 0, "unreachable": 0, "failed": 0}
        for host in targets:
            hv = hostvars[host]
            capture_dir = self._capture_path(hv, "gpuops_capture_dir")
            entry = {
                "capture_dir": capture_dir,
                "previous_capture_dir": self._capture_path(hv, "gpuops_previous_capture_dir"),
                "rack": hv.get("gpuops_rack"),
                "leaf": hv.get("gpuops_leaf_switch"),
                "power": hv.get("gpuops_power_domain"),
                "node_class": hv.get("gpuops_node_class"),
                "policy_overrides": plain(hv.get("gpuops_policy_overrides") or {}),
                "baseline": plain(hv.get("gpuops_golden_baseline")) if hv.get("gpuops_golden_baseline") else None,
                "profile": profiles[host],
            }
            if not capture_dir:
                reg = hv.get(collect_var)
                update, outcome = self._live(plain(reg) if reg is not None else None)
                entry.update(update)
                collected["live"] += 1
                collected[outcome] += 1
            hosts[host] = entry
        return hosts, collected

    @staticmethod
    def _write_profiles(path, report):
        """The inferred fleet baseline as a gpuops_profiles block (0600): {path, classes}."""
        baselines = report.get("fleet_baseline") or {}
        text = _fleet.profiles_yaml(baselines, report["generated_at"])
        try:
            write_private_atomic(path, text, 0o600)
        except OSError as exc:
            raise AnsibleActionFail(
                "inspect_cluster: cannot write the inferred profiles to %s: %s" % (path, exc)
            ) from exc
        return {"path": path, "classes": sorted(baselines)}

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _unused, args = self.validate_argument_spec(argument_spec=_ARGS)
        hostvars = task_vars.get("hostvars", {})
        t0 = time.monotonic()
        self._check_args(args, task_vars)
        # before anything is read: a node class that names no profile stops the run by name
        profiles, without_class = self._classes(hostvars, args["targets"], args["policy_overrides"])
        if without_class:
            result.setdefault("warnings", []).append(
                "%d target(s) have no hardware profile (no gpuops_node_class, or no gpuops_profiles defined): they are "
                "compared with their peers instead (the ports and GPUs within each node, and the majority of their "
                "class where it has enough nodes: zero-config baseline, docs/policy.md; -e gpuops_write_profiles=FILE "
                "writes it as profiles to review): %s%s"
                % (len(without_class), ", ".join(without_class[:10]), " ..." if len(without_class) > 10 else "")
            )
        if args["validate_only"]:
            live, captured = self._plan(hostvars, args["targets"])
            result.update(
                changed=False,
                without_class=without_class,
                targets=list(args["targets"]),
                live=live,
                captured=captured,
                platform_hosts=_platform_plan.platform_hosts(hostvars, args["targets"], self._capture_path),
                msg="%d targets checked" % len(profiles),
            )
            return result
        hosts, collected = self._entries(hostvars, args["targets"], profiles, args["collect_var"])
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
                platform=_platform_plan.platform_facts(
                    hostvars, args["targets"], self._capture_path, args["platform_var"]
                ),
            )
        except _policy.PolicyError as exc:
            raise AnsibleActionFail("invalid gpuops policy: %s" % exc) from exc
        except _runbooks.CatalogError as exc:  # the report links each finding to its runbook: a broken install
            raise AnsibleActionFail("inspect_cluster: %s" % exc) from exc
        paths = {}
        if args["write_reports"]:
            report_dir = args["report_dir"] or _inspect.default_report_dir()
            try:
                paths = _inspect.write_reports(
                    report,
                    report_dir,
                    templates_dir=args["report_templates"],
                    # a stable path others read (node_exporter): check mode leaves it alone
                    textfile_dir=None if self._task.check_mode else args["textfile_dir"],
                )
            except _report.ReportTemplateError as exc:
                raise AnsibleActionFail("inspect_cluster: %s" % exc) from exc
            result["report_dir"] = os.path.abspath(report_dir)
        if args["write_profiles"] and not self._task.check_mode:
            result["profiles_written"] = self._write_profiles(args["write_profiles"], report)
        result.update(
            changed=False,
            summary=report["summary"],
            policy=report["policy"],
            generated_at=report["generated_at"],
            nodes=_inspect.host_summary(report),
            reports=paths,
            without_class=without_class,
            collected=collected,
            fail_on=self._gate(report["summary"], args["fail_on"]),
            timing={"hostvars_s": round(t_vars, 3), "total_s": round(time.monotonic() - t0, 3)},
        )
        return result
