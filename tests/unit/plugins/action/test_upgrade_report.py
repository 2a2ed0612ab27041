# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.upgrade_report as Ansible runs it: validation, check mode writes nothing, diff, the report."""

from __future__ import annotations

import json

from ansible_collections.gpuops.cluster.plugins.action import upgrade_report

REC = {
    "host": "gpu-node-02",
    "batch": 0,
    "result": "upgraded",
    "duration_s": 12,
    "steps": [{"component": "driver", "from": "535.161.08", "to": "550.54.15"}],
    "applied": [{"component": "driver", "seconds": 3.0}],
}


def _run_dir(tmp_path):
    run_dir = tmp_path / "upgrades" / "CHG-1"
    (run_dir / "nodes").mkdir(parents=True)
    (run_dir / "nodes" / "gpu-node-02.json").write_text(json.dumps(REC))
    (run_dir / "nodes" / "gpu-node-05.json").write_text("{torn")
    return run_dir


def test_writes_both_reports_from_the_node_records(tmp_path, run_action):
    run_dir = _run_dir(tmp_path)
    args = {"run_dir": str(run_dir), "change_id": "CHG-1", "planned": ["gpu-node-02", "gpu-node-03"]}
    out = run_action(upgrade_report, args)
    assert not out.get("failed"), out
    assert out["changed"] is True and out["report"]["counts"] == {"upgraded": 1, "not_started": 1}
    assert out["report"]["ok"] is False and out["report"]["generated_at"].endswith("Z")
    assert out["report"]["unreadable_records"][0].startswith(str(run_dir / "nodes" / "gpu-node-05.json"))
    assert json.loads((run_dir / "report.json").read_text())["change_id"] == "CHG-1"
    md = (run_dir / "report.md").read_text()
    assert md.startswith("# Upgrade run CHG-1\n") and "| gpu-node-03 | - | not_started |" in md
    assert "diff" not in out


def test_check_mode_writes_nothing_and_names_the_files(tmp_path, run_action):
    run_dir = tmp_path / "fresh" / "CHG-2"
    out = run_action(upgrade_report, {"run_dir": str(run_dir), "change_id": "CHG-2"}, check_mode=True, diff=True)
    assert not out.get("failed"), out
    assert out["changed"] is True and not run_dir.exists()
    assert out["msg"] == "check mode: would write %s, %s" % (run_dir / "report.json", run_dir / "report.md")
    assert out["diff"]["before"] == "" and out["diff"]["after"].startswith("# Upgrade run CHG-2\n")


def test_diff_shows_the_markdown_change(tmp_path, run_action):
    run_dir = _run_dir(tmp_path)
    run_action(upgrade_report, {"run_dir": str(run_dir), "change_id": "CHG-1"})
    before = (run_dir / "report.md").read_text()
    out = run_action(upgrade_report, {"run_dir": str(run_dir), "change_id": "CHG-1b"}, diff=True)
    assert out["diff"]["before"] == before and out["diff"]["after"].startswith("# Upgrade run CHG-1b\n")
    assert out["diff"]["after_header"] == str(run_dir / "report.md")


def test_arguments_are_validated(tmp_path, run_action):
    out = run_action(upgrade_report, {"change_id": "CHG-1"})
    assert out["failed"] is True and "run_dir" in out["msg"] and out["msg"].startswith("upgrade_report:")
    out = run_action(upgrade_report, {"run_dir": str(tmp_path), "planned": "gpu-node-01", "bogus": 1})
    assert out["failed"] is True and "bogus" in out["msg"]


def test_an_unwritable_run_dir_fails_with_the_report(tmp_path, run_action):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = run_action(upgrade_report, {"run_dir": str(blocker / "run"), "change_id": "CHG-9"})
    assert out["failed"] is True and out["msg"].startswith("upgrade_report: cannot write the report:")
    assert out["report"]["change_id"] == "CHG-9"
