# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.service_report: the service report of a period from the store's ledger.

Documentation: plugins/modules/service_report.py; the figures: plugins/plugin_utils/service/report.py;
rendering: plugins/plugin_utils/service/report_render.py; docs/service-report.md.
"""

from __future__ import annotations

import os
import re
import time

from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import report as _service_report, sla as _sla
from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import report_render as _render
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError, plain
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import StoreError, open_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.engine import DB_FILE


def _policy_sla(overrides):
    """The ``sla`` key of the policy overrides (targets, profiles, capacity_trigger), checked."""
    sla = (overrides or {}).get("sla") or {}
    if not isinstance(sla, dict):
        raise StepError("policy_overrides.sla must be a mapping")
    trigger = sla.get("capacity_trigger", _sla.DEFAULT_SLA["capacity_trigger"])
    if isinstance(trigger, bool) or not isinstance(trigger, (int, float)) or not 0 < trigger <= 1:
        raise StepError("policy_overrides.sla.capacity_trigger must be a share between 0 and 1, got %r" % (trigger,))
    try:
        for sev in _sla.SEVERITIES:
            _sla.targets_for(sev, sla)
    except _sla.SlaError as exc:
        raise StepError("policy_overrides.sla: %s" % exc) from None
    return sla


def _summary(report):
    return {
        "availability_cluster": report["availability"]["cluster"],
        "incidents": report["sla"]["incidents"],
        "breaches": report["sla"]["breaches"],
        "peak_allocated_share": report["capacity"]["peak_allocated_share"],
        "capacity_trigger": report["capacity"]["trigger"],
        "reviews": len(report["reviews"]),
    }


class ActionModule(ControllerAction):
    NAME = "service_report"
    ARGUMENT_SPEC = {
        "period": {"type": "str", "required": True},
        "report_dir": {"type": "path", "default": ""},
        "state_dir": {"type": "path", "default": ""},
        "db_url": {"type": "str", "default": "", "no_log": True},
        "policy_overrides": {"type": "dict", "default": {}},
    }

    def _store(self, args, check_mode):
        if not args["state_dir"] and not args["db_url"]:
            raise StepError("the service report reads the store: set gpuops_state_dir or gpuops_db_url")
        if not args["db_url"]:
            path = os.path.join(os.path.abspath(args["state_dir"]), DB_FILE)
            if not os.path.isfile(path):
                raise StepError("no store at %s: nothing has been recorded there yet (run an inspection first)" % path)
        # check mode writes nothing: not even a schema migration (a store older than this collection is refused)
        return open_store(
            state_dir=args["state_dir"] or None, db_url=args["db_url"] or None, migrate_schema=not check_mode
        )

    def step(self, args, check_mode, task_vars):
        try:
            period = _service_report.parse_period(args["period"], now=time.time())
        except _service_report.ServiceReportError as exc:
            raise StepError(str(exc)) from None
        policy_sla = _policy_sla(plain(args["policy_overrides"]))
        report_dir = args["report_dir"] or os.path.join(
            "reports", "service-" + re.sub(r"[^0-9A-Za-z-]", "_", period["label"])
        )
        try:
            store = self._store(args, check_mode)
            try:
                report = _service_report.compute(store, period, policy_sla=policy_sla)
            finally:
                store.close()
            texts = _render.rendered(report)
        except (StoreError, _service_report.ServiceReportError) as exc:
            raise StepError(str(exc)) from None
        paths = {k: os.path.join(os.path.abspath(report_dir), name) for k, name in _render.FILES.items()}
        out = {"changed": not check_mode, "summary": _summary(report), "period": report["period"], "paths": paths}
        if check_mode:
            out["msg"] = "check mode: would write %s" % ", ".join(sorted(paths.values()))
            return out
        try:
            _render.write(texts, os.path.abspath(report_dir))
        except OSError as exc:
            raise StepError("cannot write the service report to %s: %s" % (report_dir, exc)) from None
        out["msg"] = "service report %s: availability %s %%, %d incidents, %d breaches, peak allocation %s -> %s" % (
            report["period"]["label"],
            report["availability"]["cluster"],
            report["sla"]["incidents"],
            len(report["sla"]["breaches"]),
            report["capacity"]["peak_allocated_share"],
            paths["html"],
        )
        return out
