# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.incident (issue 15): the operator's steps, in order, idempotent, check mode, reviews, the list."""

from __future__ import annotations

import sqlalchemy as sa

from ansible_collections.gpuops.cluster.plugins.action import incident
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import (
    audit as _audit,
    ledger as _ledger,
    ledger_audit as _ledger_audit,
    ledger_incidents as _ledger_incidents,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store
from ledger_reports import T0, finding, report

REVIEW = {"cause": "riser fault", "fix": "riser replaced", "change_ref": "policy 2026.12-site3", "checks": "gpu.pcie"}


def _setup(store_kw, severity="P1"):
    store = open_store(**store_kw)
    rep = report(T0, {"b": {"status": "faulty", "findings": [finding("b", severity=severity)]}})
    iid = _ledger.record_run(store, rep)["incidents_opened"][0]
    return store, iid


def _run(run_action, store_kw, check_mode=False, **args):
    base = {"state_dir": store_kw.get("state_dir"), "db_url": store_kw.get("db_url")}
    return run_action(incident, dict(base, **args), check_mode=check_mode)


def _events(store, iid):
    t = _ledger.tables()["incident_events"]
    with store.read() as conn:
        q = sa.select(t.c.step, t.c.actor, t.c.source, t.c.detail).where(t.c.incident_id == iid).order_by(t.c.id)
        return [tuple(r) for r in conn.execute(q)]


def test_the_five_steps_in_order_with_a_review(run_action, store_kw):
    store, iid = _setup(store_kw)
    res = _run(run_action, store_kw, step="acknowledge", incident=iid, by="alice")
    assert res["changed"] is True and res["msg"] == "incident %s acknowledged" % iid
    again = _run(run_action, store_kw, step="acknowledge", incident=iid, by="bob")
    assert again["changed"] is False and "already acknowledged" in again["msg"] and "nothing to do" in again["msg"]
    res = _run(run_action, store_kw, step="locate", incident=iid, by="alice", cause="PCIe riser of GPU 3")
    assert res["incident"]["cause"] == "PCIe riser of GPU 3"
    _run(run_action, store_kw, step="mitigate", incident=iid, by="alice")
    refused = _run(run_action, store_kw, step="close", incident=iid, by="alice", review=REVIEW)
    assert refused["failed"] and "not restored yet: restore it before 'close'" in refused["msg"]
    _run(run_action, store_kw, step="restore", incident=iid, by="alice")
    no_review = _run(run_action, store_kw, step="close", incident=iid, by="alice")
    assert no_review["failed"] and "review's cause" in no_review["msg"]
    res = _run(run_action, store_kw, step="close", incident=iid, by="alice", review=REVIEW)
    assert res["changed"] and res["review"]["checks"] == ["gpu.pcie"] and res["incident"]["state"] == "closed"
    assert _run(run_action, store_kw, step="close", incident=iid, by="alice", review=REVIEW)["changed"] is False
    late = _run(run_action, store_kw, step="note", incident=iid, by="alice", cause="x")
    assert late["failed"] and "is closed" in late["msg"]
    steps = [e[0] for e in _events(store, iid)]
    assert steps == ["detected", "acknowledged", "located", "mitigated", "restored", "closed"]
    assert _events(store, iid)[1][1:3] == ("alice", "operator")
    rv = _ledger.tables()["reviews"]
    with store.read() as conn:
        assert conn.execute(sa.select(rv.c.change_ref, rv.c.checks)).one() == ("policy 2026.12-site3", ["gpu.pcie"])


def test_out_of_order_and_unknown_incidents_are_refused(run_action, store_kw):
    store, iid = _setup(store_kw)
    res = _run(run_action, store_kw, step="locate", incident=iid, by="alice", cause="c")
    assert res["failed"] and "not acknowledged yet" in res["msg"]
    res = _run(run_action, store_kw, step="acknowledge", incident="INC-20991231-0042", by="alice")
    assert res["failed"] and "unknown incident INC-20991231-0042" in res["msg"]
    for bad in ("INC-20261005-0001 ", "inc-20261005-0001", "INC-20261005-0001;x", "INC-2026-1"):
        res = _run(run_action, store_kw, step="acknowledge", incident=bad, by="alice")
        assert res["failed"] and "is not an incident id" in res["msg"], bad
    res = _run(run_action, store_kw, step="acknowledge", incident=iid)
    assert res["failed"] and "by" in res["msg"]
    _run(run_action, store_kw, step="acknowledge", incident=iid, by="alice")
    res = _run(run_action, store_kw, step="locate", incident=iid, by="alice")
    assert res["failed"] and "cause" in res["msg"]
    assert [e[0] for e in _events(store, iid)] == ["detected", "acknowledged"]


def test_check_mode_writes_nothing_and_says_what_would_change(run_action, store_kw):
    store, iid = _setup(store_kw)
    res = _run(run_action, store_kw, check_mode=True, step="acknowledge", incident=iid, by="alice")
    assert res["changed"] is True and res["msg"].startswith("would be: incident %s acknowledged" % iid)
    assert [e[0] for e in _events(store, iid)] == ["detected"]
    res = _run(run_action, store_kw, check_mode=True, step="locate", incident=iid, by="alice", cause="c")
    assert res["failed"] and "not acknowledged yet" in res["msg"]


def test_a_p2_closes_without_a_review_and_text_is_stored_literally(run_action, store_kw):
    store, iid = _setup(store_kw, severity="P2")
    evil = '{{ lookup("pipe", "id") }}'
    _run(run_action, store_kw, step="acknowledge", incident=iid, by="alice")
    _run(run_action, store_kw, step="note", incident=iid, by="alice", cause=evil)
    _run(run_action, store_kw, step="restore", incident=iid, by="alice")
    assert _run(run_action, store_kw, step="close", incident=iid, by="alice")["changed"] is True
    assert ("note", "alice", "operator", evil) in _events(store, iid)


def test_the_list_shows_open_incidents_and_their_clocks(run_action, store_kw):
    store, iid = _setup(store_kw)
    res = _run(run_action, store_kw, step="list")
    assert res["changed"] is False and len(res["incidents"]) == 1
    line = res["lines"][0]
    assert line.startswith("%s P1 b detected 2026-10-05T08:00:00Z" % iid)
    assert "respond breached due 2026-10-05T08:30:00Z" in line  # the clock ran out long ago


def test_the_list_on_an_empty_ledger(run_action, tmp_path):
    res = run_action(incident, {"step": "list", "state_dir": str(tmp_path / "s")})
    assert res["lines"] == ["no open incident"]


def test_no_store_is_a_clear_error(run_action):
    res = run_action(incident, {"step": "list"})
    assert res["failed"] and "gpuops_state_dir" in res["msg"]


def when(hour):
    return "2026-10-05T%02d:00:00Z" % hour


def test_the_roles_move_the_clocks_through_the_audit_trail(tmp_path):
    state = str(tmp_path / "state")
    store = open_store(state_dir=state)
    rep = report(T0, {"b": {"status": "faulty", "findings": [finding("b")]}, "c": {}})
    iid = _ledger.record_run(store, rep)["incidents_opened"][0]
    log = _audit.default_log_path(state)
    _audit.append(log, {"event": "outcome", "workflow": "isolate", "node": "b", "outcome": "done", "time": when(9)})
    _audit.append(log, {"event": "outcome", "workflow": "isolate", "node": "c", "outcome": "refused", "time": when(9)})
    _audit.append(log, {"event": "task", "host": "b", "time": when(9)})
    _audit.append(log, {"event": "outcome", "workflow": "gpu_reset", "node": "b", "outcome": "done", "time": when(10)})
    out = _ledger_audit.ingest_audit(store, log)
    assert out["loaded"] == 3
    assert [(m["incident_id"], m["step"]) for m in out["moved"]] == [(iid, "mitigated"), (iid, "restored")]
    assert _ledger_audit.ingest_audit(store, log) == {"loaded": 0, "moved": []}
    inc = _ledger.tables()["incidents"]
    with store.read() as conn:
        row = conn.execute(sa.select(inc.c.mitigated_at, inc.c.restored_at)).one()
    assert row == (T0 + 3600, T0 + 7200)
    assert _ledger_incidents.iso(row[0]) == "2026-10-05T09:00:00Z"
