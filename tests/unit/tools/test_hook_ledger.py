# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ticket hook records each ticket in the service ledger and opens an incident from it (issue 15)."""

from __future__ import annotations

import os
import sys

import sqlalchemy as sa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools"))
from gpuops_runbook import hook  # noqa: E402

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger as _ledger  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _req(**extra):
    req = {
        "ticket": "OPS-77",
        "entry": {"id": "gpu_fell_off_bus"},
        "nodes": ["gpu-node-03"],
        "severity": "P1",
        "summary": '{{ lookup("pipe", "id") }} GPU 3 gone',
        "check_mode": False,
    }
    req.update(extra)
    return req


def test_a_ticket_opens_one_incident_and_is_recorded_once(store_kw, tmp_path):
    env = {"GPUOPS_DB_URL": store_kw["db_url"]} if "db_url" in store_kw else {}
    state = store_kw.get("state_dir") or str(tmp_path / "state")
    out = hook.record_ticket(ROOT, state, _req(), env)
    assert out["recorded"] is True and out["incident_id"].startswith("INC-")
    again = hook.record_ticket(ROOT, state, _req(), env)
    assert again == {"ticket_id": "OPS-77", "incident_id": out["incident_id"], "recorded": False}
    store = open_store(**store_kw)
    inc = _ledger.tables()["incidents"]
    with store.read() as conn:
        row = conn.execute(sa.select(inc)).mappings().one()
        ev = conn.execute(sa.select(_ledger.tables()["incident_events"])).mappings().one()
    assert (row["source"], row["ticket_id"], row["severity"], row["host"]) == ("ticket", "OPS-77", "P1", "gpu-node-03")
    assert row["title"] == '{{ lookup("pipe", "id") }} GPU 3 gone'  # data, stored literally
    assert (ev["step"], ev["source"]) == ("detected", "hook")


def test_a_ticket_without_a_known_severity_is_p2_and_check_mode_records_nothing(tmp_path):
    state = str(tmp_path / "state")
    assert hook.record_ticket(ROOT, state, _req(check_mode=True), {}) is None
    assert not os.path.exists(os.path.join(state, "gpuops.db"))
    hook.record_ticket(ROOT, state, _req(severity="urgent!!"), {})
    with open_store(state_dir=state).read() as conn:
        assert conn.execute(sa.select(_ledger.tables()["incidents"].c.severity)).scalar_one() == "P2"


def test_a_broken_store_never_stops_the_runbook(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "gpuops.db").write_bytes(b"garbage" * 200)
    out = hook.record_ticket(ROOT, str(state), _req(), {})
    assert "not recorded in the service ledger" in out["error"] and "corrupt" in out["error"]
