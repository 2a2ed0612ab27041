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
from ansible.utils.display import Display

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import SCHEMA as FACTS_SCHEMA
from ansible_collections.gpuops.cluster.plugins.module_utils._files import write_private_atomic
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy, _runbooks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import (
    fleet as _fleet,
    pipeline as _inspect,
    report as _report,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import (
    gate as _gate,
    plan_handoff as _plan_handoff,
    pool as _pool,
    run_notes as _run_notes,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform import plan as _platform_plan
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_run as _ledger_run
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import slices as _slices
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import StoreError, open_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import HostVarsOnce, host_var, plain
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import SEVERITIES
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.state import StateError

_ARGS = {
    "targets": {"type": "list", "elements": "str"},
    "target_pattern": {"type": "str", "default": "gpu_nodes"},
    "resolve_targets": {"type": "bool", "default": False},
    "fail_on": {"type": "str", "default": ""},
    "fail_on_unknown": {"type": "str", "default": _gate.DEFAULT_FAIL_ON_UNKNOWN},
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
    "db_url": {"type": "str", "no_log": False},
    "ledger": {"type": "bool", "default": True},
    "slice": {"type": "dict", "default": {}},  # sliced runs (docs/scale-out.md): _slices.slice_options
    "plan_token": {"type": "str", "default": ""},  # the plan's handoff to the evaluation: _plan_handoff
}


_DISPLAY = Display()


def _progress(n_hosts):
    """Progress lines of a long inspection (issue 41; inspect/run_notes.py): through Display (a worker's stderr is
    not the terminal), from run_notes.PROGRESS_MIN_HOSTS nodes."""
    return _DISPLAY.display if n_hosts >= _run_notes.PROGRESS_MIN_HOSTS else False


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
                overrides = host_var(hostvars, host, "gpuops_policy_overrides", {})
                tables = [
                    host_var(hostvars, host, "gpuops_profiles", {}),
                    (overrides.get("profiles") or {}) if isinstance(overrides, dict) else {},
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

    def _resolve_targets(self, pattern):
        """The hosts ``pattern`` matches, as a play over it would have them (``ansible_play_hosts_all``): the
        inventory's order, ``--limit`` applied. The plan runs on localhost, so no task iterates over 10,000
        targets (ansible-core spends ~2 ms a target on every task of such a play, even a run_once one)."""
        manager = getattr(self._task, "_variable_manager", None)
        inventory = getattr(manager, "_inventory", None)
        if inventory is None or not hasattr(inventory, "get_hosts"):
            raise AnsibleActionFail(
                "inspect_cluster: resolve_targets needs the play's inventory, which this ansible-core does not give "
                "an action; pass targets instead"
            )
        # limits (--limit) apply; restrictions do not: they are this play's own batch (localhost)
        return [h.name for h in inventory.get_hosts(pattern, ignore_restrictions=True)]

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
        try:
            _gate.parse_threshold(args["fail_on_unknown"])
        except ValueError as exc:
            raise AnsibleActionFail("inspect_cluster: %s" % exc) from exc
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
    def _gate(summary, args):
        """Findings (node and cluster) at or above ``fail_on`` and the nodes that could not be judged
        (``_gate.fail_on_gate``); None when off."""
        return _gate.fail_on_gate(summary, args["fail_on"], args["fail_on_unknown"])

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
        if reg.get("facts") is None and reg.get("capture_packed") is not None and not reg.get("failed"):
            # collect_info parse_on=controller, result_format=capture: parsed by _inspect's workers (_livetree)
            return {"evidence": to_text(reg["capture_packed"])}, "ok"
        if reg.get("facts") is None and reg.get("facts_json") is not None:  # collect_info result_format=json
            try:
                reg = dict(reg, facts=_safejson.loads(to_text(reg["facts_json"]), what="facts_json"))
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

    def _host_entry(self, hostvars, host):
        """A target's pipeline input from its variables (its profile and live collection are added by _entries)."""
        hv = hostvars[host]
        return {
            "capture_dir": self._capture_path(hv, "gpuops_capture_dir"),
            "previous_capture_dir": self._capture_path(hv, "gpuops_previous_capture_dir"),
            "rack": hv.get("gpuops_rack"),
            "leaf": hv.get("gpuops_leaf_switch"),
            "power": hv.get("gpuops_power_domain"),
            # the Slurm NodeName where the inventory name differs (the job view names nodes by it: job_storm)
            "slurm_node_name": hv.get("gpuops_slurm_node_name"),
            "node_class": hv.get("gpuops_node_class"),
            "policy_overrides": host_var(hostvars, host, "gpuops_policy_overrides", {}),
            "baseline": host_var(hostvars, host, "gpuops_golden_baseline"),
            # the windows in force, for the ledger's planned downtime (read here, once, with the other variables)
            "maintenance_windows": host_var(hostvars, host, "gpuops_maintenance_windows"),
        }

    def _entries(self, hostvars, targets, profiles, collect_var, planned=None):
        """The pipeline's input per host, and the live collection's counts {live, ok, unreachable, failed}.
        ``planned``: captured targets' entries as the plan read them (_plan_handoff): their variables are not read
        again."""
        hosts = {}
        collected = {"live": 0, "ok": 0, "unreachable": 0, "failed": 0}
        planned = planned or {}
        for host in targets:
            entry = planned.get(host)
            entry = dict(entry) if entry is not None else self._host_entry(hostvars, host)
            entry["profile"] = profiles[host]
            if not entry["capture_dir"]:
                reg = hostvars[host].get(collect_var)
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

    @staticmethod
    def _slice_options(args):
        try:
            raw = dict(plain(args["slice"]) or {})
            raw["db_url"] = raw.get("db_url") or args["db_url"]  # gpuops_db_url: the state's store is the slices' too
            return _slices.slice_options(raw, args["state_dir"])
        except _slices.SliceError as exc:
            raise AnsibleActionFail("inspect_cluster: %s" % exc) from exc

    @staticmethod
    def _store(sliced):
        try:
            return open_store(state_dir=sliced["state_dir"], db_url=sliced["db_url"])
        except StoreError as exc:
            raise AnsibleActionFail("inspect_cluster: %s" % exc) from exc

    def _write_slice(self, result, hosts, args, sliced, state, collected, t0):
        """A slice (docs/scale-out.md): evaluate this slice's nodes as an unsliced run does and write them to the
        store in one transaction; no cluster view, no reports, no gate (the merge step makes them)."""
        try:
            evaluated = _inspect.evaluate_nodes(
                hosts,
                policy_overrides=args["policy_overrides"],
                state_dir=state[0],
                db_url=state[1],
                include_facts=True,
            )
        except _policy.PolicyError as exc:
            raise AnsibleActionFail("invalid gpuops policy: %s" % exc) from exc
        except StateError as exc:  # a corrupt state file, an unreachable gpuops_db_url
            raise AnsibleActionFail("inspect_cluster: state: %s" % exc) from exc
        nodes = evaluated["nodes"]
        written = {"group": sliced["group"], "slice": sliced["slice"], "hosts": len(nodes), "written": False}
        if not self._task.check_mode:  # check mode writes nothing
            store = self._store(sliced)
            try:
                meta = {"slice_count": sliced["count"], "policy_hash": evaluated["policy_hash"]}
                written = dict(_slices.write_slice(store, sliced["group"], sliced["slice"], nodes, meta), written=True)
            except (StoreError, _slices.SliceError) as exc:
                raise AnsibleActionFail("inspect_cluster: slice not written: %s" % exc) from exc
            finally:
                store.close()
        result.update(
            changed=False,
            slices=written,
            summary=_slices.slice_summary(nodes),
            generated_at=evaluated["generated_at"],
            nodes={},  # per-node verdicts are final only after the merge's correlation: nothing acts on a slice
            reports={},
            collected=collected,
            fail_on=None,
            timing={"total_s": round(time.monotonic() - t0, 3)},
        )
        return result

    def _merge(self, hosts, args, sliced, platform):
        """The merge step: every node of the run group, then the cluster view and the report of an unsliced run."""
        store = self._store(sliced)
        try:
            nodes, info = _slices.load_group(store, sliced["group"], sliced["expect"] or sliced["count"], hosts)
            report = _slices.merge_report(
                nodes,
                hosts,
                policy_overrides=args["policy_overrides"],
                platform=platform,
                include_facts=args["include_facts"],
            )
            if not self._task.check_mode:
                info["pruned_groups"] = _slices.prune(store)
        except (StoreError, _slices.SliceError) as exc:
            raise AnsibleActionFail("inspect_cluster: %s" % exc) from exc
        finally:
            store.close()
        return report, info

    def _ledger_prepare(self, args, report, state_dir, db_url):
        """The service ledger (docs/service.md): SLA findings into the report now, the run recorded after the
        reports. None when the ledger is off, there is no store, or in check mode."""
        if not (args["ledger"] and (state_dir or db_url)) or self._task.check_mode:
            return None
        sla = _policy.merge_policy(_policy.DEFAULT_POLICY, plain(args["policy_overrides"] or {}))["sla"]
        return (_ledger_run.prepare(report, state_dir, db_url, sla), sla)

    @staticmethod
    def _ledger_record(ledger, report, report_dir):
        try:
            return _ledger_run.record(ledger[0], report, ledger[1])
        except StoreError as exc:
            raise AnsibleActionFail(
                "inspect_cluster: the run was not recorded in the service ledger (%s); the reports were written "
                "(%s)" % (exc, report_dir or "no report directory")
            ) from exc

    def _profiles(self, hostvars, args, sliced):
        """``(profiles, without_class, planned)``: each target's profile and the targets without one (_classes), from
        the plan's handoff when this is the evaluation of a run whose plan task wrote one (``planned``: its
        captured targets' entries; else None)."""
        planned = None
        if args["plan_token"] and args["state_dir"] and not args["validate_only"] and not sliced:
            # the plan task of this run read the targets' variables already (_plan_handoff): read once a run
            planned = _plan_handoff.read(args["state_dir"], args["plan_token"], args["targets"])
        if planned is not None:
            return planned["profiles"], planned["without_class"], planned
        # before anything is read: a node class that names no profile stops the run by name
        return self._classes(hostvars, args["targets"], args["policy_overrides"]) + (None,)

    def _validate_only(self, result, hostvars, args, sliced, profiles, without_class):
        """The plan: live and captured targets, the platform hosts, and (with a state directory, unsliced, not in
        check mode) the handoff of the captured targets' entries to the evaluation (_plan_handoff)."""
        live, captured = self._plan(hostvars, args["targets"])
        if sliced and sliced["mode"] == "merge":
            live, captured = [], []  # the merge reads the slices' nodes from the store, never the nodes
        platform = _platform_plan.platform_hosts(hostvars, args["targets"], self._capture_path)
        token = None
        if args["state_dir"] and not sliced and not self._task.check_mode:
            entries = {host: self._host_entry(hostvars, host) for host in captured}
            token = _plan_handoff.write(args["state_dir"], args["targets"], profiles, without_class, entries, platform)
        result.update(
            changed=False,
            without_class=without_class,
            targets=list(args["targets"]),
            live=live,
            captured=captured,
            platform_hosts=platform,
            plan_token=token or "",
            msg="%d targets checked" % len(profiles),
        )
        return result

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _unused, args = self.validate_argument_spec(argument_spec=_ARGS)
        hostvars = HostVarsOnce(task_vars.get("hostvars", {}))  # read in several passes below: merged once a host
        t0 = time.monotonic()
        if args["resolve_targets"]:
            args["targets"] = self._resolve_targets(args["target_pattern"])
        self._check_args(args, task_vars)
        sliced = self._slice_options(args)
        profiles, without_class, planned = self._profiles(hostvars, args, sliced)
        if without_class:
            result.setdefault("warnings", []).append(
                "%d target(s) have no hardware profile (no gpuops_node_class, or no gpuops_profiles defined): they are "
                "compared with their peers instead (the ports and GPUs within each node, and the majority of their "
                "class where it has enough nodes: zero-config baseline, docs/policy.md; -e gpuops_write_profiles=FILE "
                "writes it as profiles to review): %s%s"
                % (len(without_class), ", ".join(without_class[:10]), " ..." if len(without_class) > 10 else "")
            )
        if args["validate_only"]:
            return self._validate_only(result, hostvars, args, sliced, profiles, without_class)
        hosts, collected = self._entries(
            hostvars, args["targets"], profiles, args["collect_var"], planned["captured"] if planned else None
        )
        t_vars = time.monotonic() - t0
        state_dir, db_url = args["state_dir"], args["db_url"]
        if self._task.check_mode:
            state_dir = db_url = None  # check mode: never advance counters, clear markers or escalation history
        phases = {}
        if sliced and sliced["mode"] == "slice":
            return self._write_slice(result, hosts, args, sliced, (state_dir, db_url), collected, t0)
        platform = _platform_plan.platform_facts(
            hostvars,
            args["targets"],
            self._capture_path,
            args["platform_var"],
            plan=planned["platform"] if planned else None,
        )
        try:
            if sliced:  # the merge step: the slices collected and evaluated the nodes
                collected = dict.fromkeys(collected, 0)
                report, result["slices"] = self._merge(hosts, args, sliced, platform)
            else:
                report = _inspect.inspect_nodes(
                    hosts,
                    timing=phases,
                    progress=_progress(len(hosts)),
                    policy_overrides=args["policy_overrides"],
                    state_dir=state_dir,
                    db_url=db_url,
                    include_facts=args["include_facts"],
                    platform=platform,
                )
        except _policy.PolicyError as exc:
            raise AnsibleActionFail("invalid gpuops policy: %s" % exc) from exc
        except (_runbooks.CatalogError, _pool.PoolError) as exc:  # CatalogError: a broken install
            raise AnsibleActionFail("inspect_cluster: %s" % exc) from exc
        except StateError as exc:  # a corrupt state file, an unreachable gpuops_db_url
            raise AnsibleActionFail("inspect_cluster: state: %s" % exc) from exc
        # the service ledger (docs/service.md): SLA findings into the report now, the run recorded after the reports
        ledger = self._ledger_prepare(args, report, state_dir, db_url)
        if ledger is not None:  # the maintenance windows in force, for planned downtime (docs/service.md)
            ledger[0]["windows_by_host"] = {h: (e or {}).get("maintenance_windows") for h, e in hosts.items()}
        t_eval = time.monotonic()
        paths = {}
        if args["write_reports"]:
            report_dir = args["report_dir"] or _inspect.default_report_dir()
            try:
                paths = _inspect.write_reports(
                    report,
                    report_dir,
                    progress=_progress(len(hosts)),
                    templates_dir=args["report_templates"],
                    # a stable path others read (node_exporter): check mode leaves it alone
                    textfile_dir=None if self._task.check_mode else args["textfile_dir"],
                )
            except _report.ReportTemplateError as exc:
                raise AnsibleActionFail("inspect_cluster: %s" % exc) from exc
            result["report_dir"] = os.path.abspath(report_dir)
        if ledger is not None:
            result["ledger"] = self._ledger_record(ledger, report, result.get("report_dir"))
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
            fail_on=self._gate(report["summary"], args),
            timing=dict(
                {k: round(v, 3) for k, v in phases.items()},
                hostvars_s=round(t_vars, 3),
                plan_reused=planned is not None,
                reports_s=round(time.monotonic() - t_eval, 3),
                total_s=round(time.monotonic() - t0, 3),
            ),
        )
        return result
