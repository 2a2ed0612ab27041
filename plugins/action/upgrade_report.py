# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.upgrade_report: write the rolling upgrade's run report on the controller.

Documentation: plugins/modules/upgrade_report.py; the report: plugins/plugin_utils/upgrade/report.py.
"""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.module_utils import _timeutil
from ansible_collections.gpuops.cluster.plugins.plugin_utils.upgrade import report as _upgrade_report
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError


def _current(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""


class ActionModule(ControllerAction):
    NAME = "upgrade_report"
    ARGUMENT_SPEC = {
        "run_dir": {"type": "path", "required": True},
        "change_id": {"type": "str", "default": ""},
        "planned": {"type": "list", "elements": "str", "default": []},
        "blocked": {"type": "list", "elements": "dict", "default": []},
        "deferred": {"type": "list", "elements": "dict", "default": []},
        "batches": {"type": "list", "elements": "dict", "default": []},
        "stopped": {"type": "str", "default": ""},
    }

    def step(self, args, check_mode, task_vars):
        run_dir = args["run_dir"]
        records, unreadable = _upgrade_report.read_records(run_dir)
        report = _upgrade_report.build_report(
            args["change_id"],
            records,
            args["planned"],
            args["blocked"],
            args["deferred"],
            args["batches"],
            _timeutil.utcnow_iso(),
        )
        _upgrade_report.mark_stopped(report, args["stopped"])
        report["unreadable_records"] = unreadable
        files = _upgrade_report.rendered(report, run_dir)
        paths = _upgrade_report.report_paths(run_dir)
        out = {
            "changed": True,
            "report": report,
            "outcomes": _upgrade_report.outcomes(report),
            "json_path": paths["json"],
            "markdown_path": paths["markdown"],
        }
        if self._play_context.diff:
            md_path, md_text = files[1]
            out["diff"] = {
                "before": _current(md_path),
                "after": md_text,
                "before_header": md_path,
                "after_header": md_path,
            }
        if check_mode:
            out["msg"] = "check mode: would write %s" % ", ".join(p for p, _t in files)
            return out
        try:
            _upgrade_report.write(files, run_dir)
        except OSError as exc:
            raise StepError("cannot write the report: %s" % exc, report=report) from exc
        return out
