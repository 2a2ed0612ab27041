"""gpuops.cluster.service_report as Ansible runs it: the three files written privately, check mode writes nothing,
a bad period, a missing or broken store and a bad SLA policy are clear failures; and the playbook
gpuops.cluster.service_report end to end with the real ansible-playbook."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cluster.plugins.action import service_report
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugin_utils"))
from service_ledger import build_ledger  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


@pytest.fixture
def state_dir(tmp_path):
    path = str(tmp_path / "state")
    store = open_store(state_dir=path)
    try:
        build_ledger(store)
    finally:
        store.close()
    return path


def test_writes_three_private_files_and_check_mode_writes_nothing(run_action, state_dir, tmp_path):
    args = {"period": "2026-10", "state_dir": state_dir, "report_dir": str(tmp_path / "rep")}
    dry = run_action(service_report, args, check_mode=True)
    assert dry.get("failed") is not True, dry
    assert dry["changed"] is False and dry["msg"].startswith("check mode: would write")
    assert not (tmp_path / "rep").exists()
    out = run_action(service_report, args)
    assert out["changed"] is True and out["summary"] == dict(dry["summary"])
    assert out["summary"]["peak_allocated_share"] == 0.85 and len(out["summary"]["breaches"]) == 4
    for path in out["paths"].values():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    data = json.loads((tmp_path / "rep" / "service-report.json").read_text())
    assert data["schema"] == "gpuops.service_report/v1" and data["sla"]["breaches"] == out["summary"]["breaches"]


@pytest.mark.parametrize(
    "args, message",
    [
        ({"period": "last quarter"}, "is not understood: use a quarter (2026Q4)"),
        ({"period": "2026Q4", "state_dir": ""}, "set gpuops_state_dir or gpuops_db_url"),
        ({"period": "2099Q1"}, "period 2099Q1 starts in the future"),
        ({"period": "2026Q4", "policy_overrides": {"sla": {"capacity_trigger": 7}}}, "capacity_trigger must be"),
        ({"period": "2026Q4", "policy_overrides": {"sla": {"targets": {"P0": {"respond": "soon"}}}}}, "P0.respond"),
    ],
)
def test_bad_input_is_a_clear_failure(run_action, state_dir, args, message):
    args = dict({"state_dir": state_dir}, **args)
    out = run_action(service_report, args)
    assert out["failed"] is True and message in out["msg"] and "Traceback" not in out["msg"]


def test_missing_and_corrupt_stores_are_clear_failures(run_action, tmp_path):
    out = run_action(service_report, {"period": "2026Q4", "state_dir": str(tmp_path / "none")})
    assert out["failed"] is True and "no store at" in out["msg"] and not (tmp_path / "none" / "gpuops.db").exists()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "gpuops.db").write_bytes(b"this is not a database" * 100)
    out = run_action(service_report, {"period": "2026Q4", "state_dir": str(tmp_path / "bad")})
    assert out["failed"] is True and "is corrupt" in out["msg"]
    down = run_action(service_report, {"period": "2026Q4", "db_url": "postgresql://nobody@127.0.0.1:1/x"})
    assert down["failed"] is True and "cannot reach the store" in down["msg"]


PLAYBOOK_BIN = shutil.which("ansible-playbook") or os.path.join(ROOT, ".venv", "bin", "ansible-playbook")


@pytest.mark.skipif(not os.path.exists(PLAYBOOK_BIN), reason="no ansible-playbook")
def test_the_playbook_end_to_end(state_dir, tmp_path):
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"),
        PYTHONPATH=os.path.join(ROOT, "build"),
    )
    base = [PLAYBOOK_BIN, "gpuops.cluster.service_report", "-e", "gpuops_state_dir=%s" % state_dir]
    rep = str(tmp_path / "rep")
    ok = subprocess.run(
        base + ["-e", "gpuops_period=2026-10-01/2026-10-31", "-e", "gpuops_report_dir=%s" % rep],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "service report 2026-10-01/2026-10-31: availability" in ok.stdout
    assert sorted(os.listdir(rep)) == ["service-report.html", "service-report.json", "service-report.md"]
    bad = subprocess.run(
        base + ["-e", "gpuops_period={{ 7 * 7 }}"], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert bad.returncode != 0 and "template syntax" in bad.stdout and "49" not in bad.stdout
