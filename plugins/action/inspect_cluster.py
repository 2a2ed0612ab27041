# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side evaluation of an inspection: see plugins/modules/inspect_cluster.py for the docs.

A ``ControllerAction`` that picks one of the steps of ``plugin_utils/inspect/steps.py`` (issue 36): the plan
(``validate_only``), a slice or the merge of a sliced run (``slice``, docs/scale-out.md), or the evaluation.
"""

from __future__ import annotations

import time

from ansible.utils.display import Display

from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, HostVarsOnce, StepError
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import gate as _gate
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import run_notes as _run_notes
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import steps as _steps
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform import plan as _platform_plan

_DISPLAY = Display()


def _progress(n_hosts):
    """Progress lines of a long inspection (issue 41; inspect/run_notes.py): through Display (a worker's stderr is
    not the terminal), from run_notes.PROGRESS_MIN_HOSTS nodes."""
    return _DISPLAY.display if n_hosts >= _run_notes.PROGRESS_MIN_HOSTS else False


class ActionModule(ControllerAction):
    NAME = "inspect_cluster"
    ARGUMENT_SPEC = {
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

    def _resolve_targets(self, pattern):
        """The hosts ``pattern`` matches, as a play over it would have them (``ansible_play_hosts_all``): the
        inventory's order, ``--limit`` applied. The plan runs on localhost, so no task iterates over 10,000
        targets (ansible-core spends ~2 ms a target on every task of such a play, even a run_once one)."""
        manager = getattr(self._task, "_variable_manager", None)
        inventory = getattr(manager, "_inventory", None)
        if inventory is None or not hasattr(inventory, "get_hosts"):
            raise StepError(
                "resolve_targets needs the play's inventory, which this ansible-core does not give an action; pass "
                "targets instead"
            )
        # limits (--limit) apply; restrictions do not: they are this play's own batch (localhost)
        return [h.name for h in inventory.get_hosts(pattern, ignore_restrictions=True)]

    def step(self, args, check_mode, task_vars):
        hostvars = HostVarsOnce(task_vars.get("hostvars", {}))  # read in several passes below: merged once a host
        t0 = time.monotonic()
        targets = self._resolve_targets(args["target_pattern"]) if args["resolve_targets"] else args["targets"]
        _steps.check_args(
            targets=targets,
            target_pattern=args["target_pattern"],
            fail_on=args["fail_on"],
            fail_on_unknown=args["fail_on_unknown"],
            textfile_dir=args["textfile_dir"],
            inventory_sources=task_vars.get("ansible_inventory_sources"),
        )
        sliced = _steps.slice_options(options=args["slice"], db_url=args["db_url"], state_dir=args["state_dir"])
        profiles, without_class, planned = _steps.profiles(
            hostvars,
            targets=targets,
            policy_overrides=args["policy_overrides"],
            state_dir=args["state_dir"],
            plan_token=args["plan_token"],
            reuse_plan=not args["validate_only"] and not sliced,
        )
        warnings = [_steps.without_class_warning(without_class)] if without_class else []
        if args["validate_only"]:
            out = _steps.plan_step(
                hostvars,
                targets=targets,
                profiles=profiles,
                without_class=without_class,
                state_dir=args["state_dir"],
                sliced=sliced,
                check_mode=check_mode,
            )
        else:
            out = self._run(args, check_mode, hostvars, targets, (profiles, without_class, planned, sliced), t0)
        if warnings:
            out["warnings"] = warnings
        return out

    def _run(self, args, check_mode, hostvars, targets, plan, t0):
        """A slice, the merge of a sliced run or the evaluation; ``plan``: (profiles, without_class, planned, sliced)."""
        profiles, without_class, planned, sliced = plan
        hosts, collected = _steps.entries(
            hostvars,
            targets=targets,
            profiles=profiles,
            collect_var=args["collect_var"],
            planned=planned["captured"] if planned else None,
        )
        t_vars = time.monotonic() - t0
        state_dir, db_url = args["state_dir"], args["db_url"]
        if check_mode:
            state_dir = db_url = None  # check mode: never advance counters, clear markers or escalation history
        if sliced and sliced["mode"] == "slice":
            out = _steps.slice_step(
                hosts,
                sliced=sliced,
                policy_overrides=args["policy_overrides"],
                state_dir=state_dir,
                db_url=db_url,
                check_mode=check_mode,
            )
            return dict(out, collected=collected, timing={"total_s": _steps.elapsed(t0)})
        platform = _platform_plan.platform_facts(
            hostvars,
            targets,
            _steps.capture_path,
            args["platform_var"],
            plan=planned["platform"] if planned else None,
        )
        phases, extra = {}, {}
        if sliced:  # the merge step: the slices collected and evaluated the nodes
            collected = dict.fromkeys(collected, 0)
            report, extra["slices"] = _steps.merge_step(
                hosts,
                sliced=sliced,
                policy_overrides=args["policy_overrides"],
                platform=platform,
                include_facts=args["include_facts"],
                check_mode=check_mode,
            )
        else:
            report = _steps.evaluate_step(
                hosts,
                policy_overrides=args["policy_overrides"],
                state_dir=state_dir,
                db_url=db_url,
                include_facts=args["include_facts"],
                platform=platform,
                timing=phases,
                progress=_progress(len(hosts)),
            )
        # the service ledger (docs/service.md): SLA findings into the report now, the run recorded after the reports
        ledger = _steps.ledger_prepare(
            report,
            hosts,
            enabled=args["ledger"],
            policy_overrides=args["policy_overrides"],
            state_dir=state_dir,
            db_url=db_url,
            check_mode=check_mode,
        )
        t_eval = time.monotonic()
        published = _steps.publish_step(
            report,
            ledger=ledger,
            report_dir=(args["report_dir"] or _inspect.default_report_dir()) if args["write_reports"] else None,
            templates_dir=args["report_templates"],
            # a stable path others read (node_exporter): check mode leaves it alone
            textfile_dir=None if check_mode else args["textfile_dir"],
            profiles_path=None if check_mode else args["write_profiles"],
            progress=_progress(len(hosts)),
        )
        out = dict(extra, **published)
        out.update(_steps.verdicts(report, fail_on=args["fail_on"], fail_on_unknown=args["fail_on_unknown"]))
        out.update(
            without_class=without_class,
            collected=collected,
            timing=dict(
                {k: round(v, 3) for k, v in phases.items()},
                hostvars_s=round(t_vars, 3),
                plan_reused=planned is not None,
                reports_s=_steps.elapsed(t_eval),
                total_s=_steps.elapsed(t0),
            ),
        )
        return out
