# -*- coding: utf-8 -*-
"""The controller state's host documents in its one backend, the store (plugins/plugin_utils/store/state_store.py): the
embedded SQLite file of the state directory, a SQLite db_url and PostgreSQL answer alike; read-modify-write holds
across processes; a batch killed half-way leaves nothing half-written and the next run completes (docs/state.md).
The state files of an older collection are imported once, on the first open (test_state_import.py)."""

from __future__ import annotations

import datetime
import multiprocessing
import os
import signal
import sys
from pathlib import Path

import pytest

from ansible_collections.gpuops.cluster.plugins.action import gpu_reset_record
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import collect as _collect
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect
from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard import stage as _onboard_stage
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as _state, state_store as _state_store

import state_procs

REPO = Path(__file__).resolve().parents[4]
if str(REPO / "tools") not in sys.path:
    sys.path.insert(0, str(REPO / "tools"))

from simnode.capture import capture  # noqa: E402
from simnode.state import default_state  # noqa: E402

KINDS = ["embedded", "sqlite", "postgresql"]
NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)


def _kw(kind, tmp_path, request):
    """open_state() keywords of each store: the state directory alone (its embedded SQLite file), or a db_url beside it."""
    sd = str(tmp_path / "state")
    if kind == "embedded":
        return {"state_dir": sd}
    if kind == "sqlite":
        return {"state_dir": sd, "db_url": "sqlite:///%s" % (tmp_path / "x.db")}
    return {"state_dir": sd, "db_url": request.getfixturevalue("pg_url")}


@pytest.fixture(params=KINDS)
def kw(request, tmp_path):
    return _kw(request.param, tmp_path, request)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_kw(request, tmp_path):
    return _kw(request.param, tmp_path, request)


def test_load_save_update_answer_alike(kw):
    store = _state_store.open_state(**kw)
    try:
        empty = store.load_host("gpu-node-01")
        assert empty == _state.empty_host_state("gpu-node-01")
        assert store.load_hosts([]) == {}
        store.save_host("gpu-node-01", {"boot_id": "b1", "clears": {"0000:18:00.0": "2026-01-01T00:00:00Z"}})
        got = store.load_host("gpu-node-01")
        assert got["boot_id"] == "b1" and got["schema"] == _state.HOST_STATE_SCHEMA and got["host"] == "gpu-node-01"
        assert got["ib"] == {"ports": {}} and got["updated_at"]  # normalized, stamped
        after = store.update_host("gpu-node-01", lambda s: _state.record_gpu_reset(s, "gpu-node-01", "0:1", "S1", 0))
        assert after["resets"] == [{"bus_id": "0:1", "serial": "S1", "time": "1970-01-01T00:00:00Z"}]
        assert store.load_host("gpu-node-01")["resets"] == after["resets"] and after["boot_id"] == "b1"
        assert store.update_host("gpu-node-02", lambda s: dict(s, boot_id="new"))["boot_id"] == "new"
        assert store.save_hosts({"gpu-node-%02d" % i: {"boot_id": str(i)} for i in range(3, 8)}) == 5
        states = store.load_hosts(["gpu-node-03", "gpu-node-07", "gpu-node-99"])
        assert [states[h]["boot_id"] for h in sorted(states)] == ["3", "7", None]
        assert store.host_names() == ["gpu-node-%02d" % i for i in range(1, 8)]
        for bad in ("../etc", "a/b", "", "x y"):
            with pytest.raises(_state.StateError):
                store.load_host(bad)
            with pytest.raises(_state.StateError):
                store.save_hosts({bad: {}})
    finally:
        store.close()


def test_the_state_directory_holds_no_state_files(kw):
    """Every store keeps the host states in its table: no hosts/, no locks/ in the state directory (the embedded one
    holds gpuops.db and its WAL files only)."""
    store = _state_store.open_state(**kw)
    assert store.backend == "db"
    store.save_hosts({"gpu-node-01": {"boot_id": "b"}})
    store.update_host("gpu-node-01", lambda s: None)
    store.close()
    assert not os.path.exists(os.path.join(kw["state_dir"], "hosts"))
    assert not os.path.exists(os.path.join(kw["state_dir"], "locks"))
    if "db_url" not in kw:
        assert set(os.listdir(kw["state_dir"])) <= {"gpuops.db", "gpuops.db-wal", "gpuops.db-shm"}


def test_read_modify_write_holds_across_processes(kw):
    """Four processes, ten read-modify-writes each of one host: no update is lost (the database lock host:<h>)."""
    _state_store.open_state(**kw).close()  # migrate before the race
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=state_procs.count, args=(kw, "gpu-node-01", 10, barrier)) for _proc in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    store = _state_store.open_state(**kw)
    assert store.load_host("gpu-node-01")["boot_id"] == "40"
    store.close()


def test_a_batch_killed_half_way_leaves_no_partial_state_and_the_next_run_completes(kw):
    store = _state_store.open_state(**kw)
    # the database writes 500 rows a statement: stop after the first statement
    total, stop = 600, 550
    hosts = ["gpu-node-%04d" % i for i in range(1, total + 1)]
    store.save_hosts({h: {"boot_id": "run-1"} for h in hosts})
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=state_procs.save_and_hang, args=(kw, hosts, "run-2", stop, q))
    proc.start()
    assert q.get(timeout=120) == "mid-batch"  # half-way: the database has 500 rows in the open transaction
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    assert proc.exitcode == -signal.SIGKILL
    seen = store.load_hosts(hosts)
    assert {seen[h]["boot_id"] for h in hosts} == {"run-1"}  # one transaction: none of the killed batch
    # the next run completes: a whole batch, then a locked update of a host the killed run was writing
    assert store.save_hosts({h: {"boot_id": "run-3"} for h in hosts}) == len(hosts)
    store.update_host(hosts[0], lambda s: dict(s, boot_id="run-4"), timeout=10)
    final = store.load_hosts(hosts)
    assert final[hosts[0]]["boot_id"] == "run-4" and {final[h]["boot_id"] for h in hosts[1:]} == {"run-3"}
    store.close()


@pytest.fixture(scope="module")
def capture_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cap") / "gpu-node-01"
    capture(default_state("gpu-node-01"), str(d))
    return str(d)


def _saved_without_stamps(store):
    out = store.load_hosts(store.host_names())
    for doc in out.values():
        doc.pop("updated_at")
    return out


def test_inspections_keep_the_same_state_on_every_backend(capture_dir, tmp_path, request):
    """Two inspections of the same capture through inspect_nodes: the state each backend keeps is the same."""
    kept = {}
    for kind in KINDS:
        kw = _kw(kind, tmp_path / kind, request)
        for _run in range(2):
            report = _inspect.inspect_nodes({"gpu-node-01": {"capture_dir": capture_dir}}, now=NOW, **kw)
        assert report["nodes"]["gpu-node-01"]["status"]
        store = _state_store.open_state(**kw)
        kept[kind] = _saved_without_stamps(store)
        store.close()
    assert kept["embedded"]["gpu-node-01"]["boot_id"]
    assert kept["sqlite"] == kept["embedded"] and kept["postgresql"] == kept["embedded"]


def test_onboarding_baseline_and_reset_record_reach_the_inspection_through_the_database(capture_dir, db_kw, run_action):
    """Stage 5 saves the golden baseline into the database, the reset record too; a later inspection with the same
    db_url reads them (drift against the baseline; the reset recorded), the state directory holds no host state."""
    facts = _collect.collect_all(capture_dir=capture_dir)
    p = {"stage": "baseline", "problems": None, "facts": facts, "host": "gpu-node-01", **db_kw}
    assert _onboard_stage.evaluate(p, False)["passed"]
    r = run_action(gpu_reset_record, {"host": "gpu-node-01", "gpus": [{"bus_id": "00000000:18:00.0", "serial": "S"}],
                                      "time": "2026-01-02T03:04:05Z", **db_kw})  # fmt: skip
    assert not r.get("failed") and r["changed"] and "host_state[gpu-node-01]" in r["path"]
    store = _state_store.open_state(**db_kw)
    hs = store.load_host("gpu-node-01")
    assert hs["baseline"]["gpu"]["gpus"] and hs["resets"][0]["time"] == "2026-01-02T03:04:05Z"
    state = default_state("gpu-node-01")
    state["gpus"][2]["vbios"] = "96.00.99.00.01"
    drifted = os.path.join(os.path.dirname(capture_dir), "drifted-%s" % store.store.dialect)
    capture(state, drifted)
    report = _inspect.inspect_nodes({"gpu-node-01": {"capture_dir": drifted}}, **db_kw)
    drift = [
        (f["component"], f["code"]) for f in report["nodes"]["gpu-node-01"]["findings"] if f["check"] == "gpu.drift"
    ]
    assert drift == [("gpu2", "vbios_version")]
    after = store.load_host("gpu-node-01")
    assert after["baseline"] == hs["baseline"] and after["resets"] == hs["resets"]  # kept by the inspection
    store.close()
    assert not os.path.exists(os.path.join(db_kw["state_dir"], "hosts"))


def test_a_repeat_batch_rewrites_only_the_hosts_that_changed(kw):
    """save_hosts(previous=what this run loaded): a host whose state did not change is not rewritten (a repeat
    inspection over unchanged evidence writes nothing), a changed one is (a new key given as an int is stored as
    its str, as before); every store alike."""
    store = _state_store.open_state(**kw)
    hosts = ["gpu-node-%02d" % i for i in range(1, 5)]
    first = {h: {"boot_id": "b-" + h, "active_faults": {"xid79": {"n": 1, "gpus": ["0:1"]}}} for h in hosts}
    assert store.save_hosts(first) == 4
    loaded = store.load_hosts(hosts)
    stamps = {h: loaded[h]["updated_at"] for h in hosts}
    again = {h: _state.copy_state(loaded[h]) for h in hosts}
    again["gpu-node-02"]["active_faults"]["xid79"]["n"] = 2  # changed
    again["gpu-node-03"]["clears"] = {7: "2026-12-01T00:00:00Z"}  # changed, stored as {"7": ...}
    assert store.save_hosts(again, previous=loaded) == 2
    after = store.load_hosts(hosts)
    assert after["gpu-node-02"]["active_faults"]["xid79"]["n"] == 2
    assert after["gpu-node-03"]["clears"] == {"7": "2026-12-01T00:00:00Z"}
    assert after["gpu-node-01"] == loaded["gpu-node-01"] and after["gpu-node-04"]["updated_at"] == stamps["gpu-node-04"]
    assert after["gpu-node-02"]["updated_at"] >= stamps["gpu-node-02"] and after["gpu-node-03"]["updated_at"]
    assert store.save_hosts({h: _state.copy_state(after[h]) for h in hosts}, previous=after) == 0
    store.close()
