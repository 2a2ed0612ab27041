# -*- coding: utf-8 -*-
"""The shared state's host documents behind one interface (plugins/plugin_utils/store/state_store.py): the file default
and the database on SQLite and PostgreSQL answer alike; read-modify-write holds across processes; a batch killed
half-way leaves nothing half-written and the next run completes (docs/state.md "Backends")."""

from __future__ import annotations

import datetime
import json
import multiprocessing
import os
import re
import signal
import subprocess
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

KINDS = ["file", "sqlite", "postgresql"]
NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)


def _kw(kind, tmp_path, request):
    """open_state() keywords of each backend: the state directory alone (file), or a db_url beside it."""
    sd = str(tmp_path / "state")
    if kind == "file":
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


def test_the_database_leaves_the_state_directory_alone(db_kw):
    store = _state_store.open_state(**db_kw)
    store.save_hosts({"gpu-node-01": {"boot_id": "b"}})
    store.update_host("gpu-node-01", lambda s: None)
    store.close()
    assert not os.path.exists(os.path.join(db_kw["state_dir"], "hosts"))
    assert not os.path.exists(os.path.join(db_kw["state_dir"], "locks"))


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
    # the database writes 500 rows a statement: stop after the first statement; files: one fsync'd file a host
    total, stop = (600, 550) if store.backend == "db" else (60, 40)
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
    runs = {h: seen[h]["boot_id"] for h in hosts}
    if store.backend == "db":  # one transaction: none of the killed batch
        assert set(runs.values()) == {"run-1"}
    else:  # one atomic file per host: each whole, the old or the new document, never a mix within one host
        assert set(runs.values()) <= {"run-1", "run-2"}
        assert all(seen[h]["active_faults"] in ({}, {"x": {"n": i}}) for i, h in enumerate(hosts))
        for name in os.listdir(os.path.join(kw["state_dir"], "hosts")):
            if not name.startswith("."):  # a killed writer may leave its temporary file: never read as a state
                with open(os.path.join(kw["state_dir"], "hosts", name), encoding="utf-8") as fh:
                    assert json.load(fh)["schema"] == _state.HOST_STATE_SCHEMA
        assert store.host_names() == hosts
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
    assert kept["file"]["gpu-node-01"]["boot_id"]
    assert kept["sqlite"] == kept["file"] and kept["postgresql"] == kept["file"]


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
    its str, as before); every backend alike."""
    store = _state_store.open_state(**kw)
    hosts = ["gpu-node-%02d" % i for i in range(1, 5)]
    first = {h: {"boot_id": "b-" + h, "active_faults": {"xid79": {"n": 1, "gpus": ["0:1"]}}} for h in hosts}
    assert store.save_hosts(first) == 4
    loaded = store.load_hosts(hosts)
    stamps = {h: loaded[h]["updated_at"] for h in hosts}
    files = {h: os.path.join(kw["state_dir"], "hosts", h + ".json") for h in hosts}
    if kw.get("db_url") is None:
        before = {h: os.stat(files[h]).st_ino for h in hosts}
    again = {h: _state.copy_state(loaded[h]) for h in hosts}
    again["gpu-node-02"]["active_faults"]["xid79"]["n"] = 2  # changed
    again["gpu-node-03"]["clears"] = {7: "2026-12-01T00:00:00Z"}  # changed, stored as {"7": ...}
    assert store.save_hosts(again, previous=loaded) == 2
    after = store.load_hosts(hosts)
    assert after["gpu-node-02"]["active_faults"]["xid79"]["n"] == 2
    assert after["gpu-node-03"]["clears"] == {"7": "2026-12-01T00:00:00Z"}
    assert after["gpu-node-01"] == loaded["gpu-node-01"] and after["gpu-node-04"]["updated_at"] == stamps["gpu-node-04"]
    if kw.get("db_url") is None:  # untouched files keep their inode (a rewrite renames a new file over them)
        assert [os.stat(files[h]).st_ino == before[h] for h in hosts] == [True, False, False, True]
        assert all(os.stat(files[h]).st_mode & 0o777 == 0o600 for h in hosts)
    assert store.save_hosts({h: _state.copy_state(after[h]) for h in hosts}, previous=after) == 0
    store.close()


def test_the_file_state_moves_into_the_database_once(db_kw, run_action):
    """gpuops.cluster.state_import: host documents and the guard's claims, check mode first, then for real; a
    second run changes nothing; a host the database already has is kept unless overwrite."""
    from ansible_collections.gpuops.cluster.plugins.action import state_import
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import guard as _guard

    files = _state_store.open_state(state_dir=db_kw["state_dir"])
    files.save_hosts({"gpu-node-01": {"boot_id": "f1"}, "gpu-node-02": {"boot_id": "f2"}})
    c = state_procs.guard_cluster()
    files.guard_and_claim(["gpu-node-05"], c, claim=_guard.Claim(run_id="r", ticket="INC-7"), now=1_800_000_000.0)
    files.release_claims("r", {"gpu-node-05": "done"}, now=1_800_000_001.0)
    db = _state_store.open_state(**db_kw)
    db.save_host("gpu-node-02", {"boot_id": "db2"})
    args = {"state_dir": db_kw["state_dir"], "db_url": db_kw["db_url"]}
    check = run_action(state_import, args, check_mode=True)
    assert not check.get("failed") and check["changed"] and check["hosts"] == ["gpu-node-01"] and check["claims"] == 1
    assert db.host_names() == ["gpu-node-02"] and db.load_history() == []
    real = run_action(state_import, args)
    assert real["hosts"] == ["gpu-node-01"] and real["skipped"] == ["gpu-node-02"] and real["claims"] == 1
    assert db.load_host("gpu-node-01")["boot_id"] == "f1" and db.load_host("gpu-node-02")["boot_id"] == "db2"
    assert db.load_history() == files.load_history()  # the same entries: node, time, run, ticket, state, released_at
    again = run_action(state_import, args)
    assert not again["changed"] and again["hosts"] == [] and again["claims"] == 0
    over = run_action(state_import, dict(args, overwrite=True))
    assert over["hosts"] == ["gpu-node-01", "gpu-node-02"] and db.load_host("gpu-node-02")["boot_id"] == "f2"
    with open(os.path.join(db_kw["state_dir"], "hosts", "gpu-node-03.json"), "w", encoding="utf-8") as fh:
        fh.write("{not json")
    bad = run_action(state_import, args)
    assert bad.get("failed") and "corrupt state file" in bad["msg"] and "gpu-node-03" in bad["msg"]
    assert "gpu-node-03" not in db.host_names()
    db.close()


def _playbook(*args):
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"), ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    env["PATH"] = bindir + os.pathsep + env["PATH"]
    cmd = [os.path.join(bindir, "ansible-playbook"), "-i", "localhost,", "gpuops.cluster.state_import", *args]
    return subprocess.run(cmd, cwd=str(REPO), env=env, capture_output=True, text=True, timeout=240, check=False)


def test_the_state_import_playbook_check_run_rerun(tmp_path):
    """The documented commands (ansible-playbook gpuops.cluster.state_import, --check first): changed, changed,
    not changed; the state directory's hosts end up in the database."""
    sd, url = str(tmp_path / "state"), "sqlite:///%s" % (tmp_path / "x.db")
    _state_store.open_state(state_dir=sd).save_hosts({"gpu-node-01": {"boot_id": "b1"}})
    ev = ["-e", "gpuops_state_dir=%s" % sd, "-e", "gpuops_db_url=%s" % url]
    for extra, changed in ((["--check"], 1), ([], 1), ([], 0)):
        proc = _playbook(*ev, *extra)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert re.search(r"localhost\s*: ok=\d+\s+changed=%d " % changed, proc.stdout), proc.stdout[-1500:]
    db = _state_store.open_state(db_url=url)
    assert db.load_host("gpu-node-01")["boot_id"] == "b1"
    db.close()
