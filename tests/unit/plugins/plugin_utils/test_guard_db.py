# -*- coding: utf-8 -*-
"""The isolation guard on the state's one backend, the store (plugins/plugin_utils/store/state_store.py): the cap holds
across processes (execution nodes) on one database, and claims, releases and expiry answer alike on the embedded
SQLite file, a SQLite db_url and PostgreSQL (docs/isolation.md "Several controllers")."""

from __future__ import annotations

import multiprocessing

import pytest

from ansible_collections.gpuops.cluster.plugins.action import isolation_guard
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import guard as _guard
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state_store as _state_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.state import StateError

import state_procs

NOW = 1_800_000_000.0
STALE = "\n".join("NodeName=gpu-node-%02d State=IDLE Partitions=gpu Gres=gpu:8" % i for i in range(1, 9))


def cluster(n=8):
    """One partition of ``n`` nodes, all IDLE (a stale view: nobody sees the others' drains), no racks."""
    return {"gpu-node-%02d" % i: {"partitions": ["gpu"], "rack": None, "state": "IDLE"} for i in range(1, n + 1)}


@pytest.fixture
def db_url(store_kw, tmp_path):
    """The database backend on each store: a SQLite file (db_url) and a fresh PostgreSQL database."""
    if "db_url" in store_kw:
        return store_kw["db_url"]
    return "sqlite:///%s" % (tmp_path / "x.db")


@pytest.fixture(params=["embedded", "sqlite", "postgresql"])
def backend(request, tmp_path):
    """An opened state store of each kind: the embedded SQLite file of the state directory, a SQLite db_url and
    PostgreSQL."""
    if request.param == "embedded":
        store = _state_store.open_state(state_dir=str(tmp_path / "state"))
    elif request.param == "sqlite":
        store = _state_store.open_state(state_dir=str(tmp_path / "state"), db_url="sqlite:///%s" % (tmp_path / "x.db"))
    else:
        store = _state_store.open_state(db_url=request.getfixturevalue("pg_url"))
    yield store
    store.close()


def test_backend_is_chosen_from_state_dir_and_db_url(tmp_path, db_url):
    assert _state_store.open_state() is None
    embedded = _state_store.open_state(state_dir=str(tmp_path / "embedded"))
    assert embedded.backend == "db" and embedded.store.url == "sqlite:///%s" % (tmp_path / "embedded" / "gpuops.db")
    embedded.close()
    store = _state_store.open_state(state_dir=str(tmp_path), db_url=db_url)
    assert store.backend == "db"
    store.close()
    assert not (tmp_path / "isolation").exists()  # the database keeps the claims, not the state directory


def test_four_processes_on_a_stale_view_claim_two_of_eight_in_total(db_url):
    """Four controllers (spawned processes), one database, the same stale Slurm view (every node IDLE), each asking
    to isolate two different nodes of one 8-node partition with a 25 % cap: exactly 2 claims in total."""
    _state_store.open_state(db_url=db_url).close()  # migrate once before the race (as the first run would)
    ctx = multiprocessing.get_context("spawn")
    barrier, q = ctx.Barrier(4), ctx.Queue()
    procs = []
    for i in range(4):
        nodes = ["gpu-node-%02d" % (2 * i + 1), "gpu-node-%02d" % (2 * i + 2)]
        procs.append(ctx.Process(target=state_procs.claim, args=({"db_url": db_url}, nodes, "run-%d" % i, barrier, q)))
    for proc in procs:
        proc.start()
    answers = [q.get(timeout=120) for _proc in procs]
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    allowed = sorted(n for _run, ok, _refused in answers for n in ok)
    assert len(allowed) == 2, answers
    assert sum(len(refused) for _run, _ok, refused in answers) == 6
    store = _state_store.open_state(db_url=db_url)
    history = store.load_history()
    store.close()
    assert sorted(e["node"] for e in history) == allowed
    assert {e["state"] for e in history} == {_guard.CLAIMED}
    winners = {run for run, ok, _refused in answers if ok}
    assert {e["run_id"] for e in history} == winners


def test_claims_releases_and_expiry_answer_alike_on_every_store(backend):
    c = cluster()
    pol = {"window_s": 0, "claim_ttl_s": 7200}
    a = backend.guard_and_claim(["gpu-node-01", "gpu-node-02", "gpu-node-03"], c, policy=pol,
                                claim=_guard.Claim(run_id="a", ticket="INC-1"), now=NOW)  # fmt: skip
    assert a["allowed"] == ["gpu-node-01", "gpu-node-02"] and [x["node"] for x in a["refused_by_guard"]] == [
        "gpu-node-03"
    ]
    assert a["claim_ttl_s"] == 7200
    # claims count for another run; check mode (record=False) decides and writes nothing
    b = backend.guard_and_claim(["gpu-node-05"], c, policy=pol, claim=_guard.Claim(record=False), now=NOW + 1)
    assert b["allowed"] == [] and b["claimed"] == ["gpu-node-01", "gpu-node-02"]
    assert len(backend.load_history()) == 2
    # only the run that claimed releases; check mode says what it would release
    assert backend.release_claims("b", {"gpu-node-01": "failed"}, now=NOW + 2) == {
        "released": {},
        "not_claimed": ["gpu-node-01"],
    }
    dry = backend.release_claims("a", {"gpu-node-01": "done"}, now=NOW + 2, write=False)
    assert dry == {"released": {"gpu-node-01": "done"}, "not_claimed": []}
    assert {e["state"] for e in backend.load_history()} == {_guard.CLAIMED}
    r = backend.release_claims(
        "a", {"gpu-node-01": "done", "gpu-node-02": "failed", "gpu-node-04": "done"}, now=NOW + 3
    )
    assert r == {"released": {"gpu-node-01": "done", "gpu-node-02": "failed"}, "not_claimed": ["gpu-node-04"]}
    hist = {e["node"]: e for e in backend.load_history()}
    assert hist["gpu-node-01"]["state"] == "done" and hist["gpu-node-01"]["released_at"] == NOW + 3
    assert hist["gpu-node-02"]["ticket"] == "INC-1" and hist["gpu-node-02"]["time"] == NOW
    # a done claim counts again with a flap window; a failed one never does
    d = _guard.decide(["gpu-node-07"], c, backend.load_history(), {"window_s": 3600}, NOW + 4)
    assert d["recently_isolated"] == ["gpu-node-01"]
    # an unreleased claim expires after its TTL, not before
    backend.guard_and_claim(["gpu-node-05"], c, policy=pol, claim=_guard.Claim(run_id="c"), now=NOW + 10)
    backend.guard_and_claim(["gpu-node-06"], c, policy=pol, claim=_guard.Claim(run_id="d"), now=NOW + 11)
    late = backend.guard_and_claim(["gpu-node-07"], c, policy=pol, claim=_guard.Claim(record=False), now=NOW + 7209)
    assert late["allowed"] == [] and late["claimed"] == ["gpu-node-05", "gpu-node-06"]
    expired = backend.guard_and_claim(["gpu-node-07"], c, policy=pol, claim=_guard.Claim(record=False), now=NOW + 7211)
    assert expired["allowed"] == ["gpu-node-07"]
    with pytest.raises(_guard.GuardError):
        backend.release_claims("", {"gpu-node-05": "done"})
    with pytest.raises(_guard.GuardError):
        backend.release_claims("c", {"gpu-node-05": "maybe"})


def test_override_is_recorded_with_the_claims(backend):
    c = cluster()
    claim = _guard.Claim(run_id="ov")
    r = backend.guard_and_claim(["gpu-node-01", "gpu-node-02", "gpu-node-03"], c, override_reason="CHG-9 approved",
                                claim=claim, now=NOW)  # fmt: skip
    assert r["allowed"] == ["gpu-node-01", "gpu-node-02", "gpu-node-03"] and r["overridden"]
    assert {e.get("override_reason") for e in backend.load_history()} == {"CHG-9 approved"}


def test_old_entries_are_pruned_when_new_claims_are_made(backend):
    c = cluster()
    backend.guard_and_claim(["gpu-node-01"], c, claim=_guard.Claim(run_id="old"), now=NOW)
    backend.release_claims("old", {"gpu-node-01": "done"}, now=NOW + 1)
    backend.guard_and_claim(["gpu-node-02"], c, claim=_guard.Claim(run_id="new"), now=NOW + 2 * 86400)
    assert [e["node"] for e in backend.load_history()] == ["gpu-node-02"]


def test_the_action_claims_and_releases_in_the_database(db_url, tmp_path, run_action, slurm_view):
    sd = tmp_path / "state"
    slurm_view.set(STALE)
    req = {"nodes": ["gpu-node-01", "gpu-node-02", "gpu-node-03"], "scontrol_path": slurm_view.path,
           "state_dir": str(sd), "db_url": db_url, "run_id": "r1"}  # fmt: skip
    check = run_action(isolation_guard, req, check_mode=True)
    assert not check.get("failed") and check["allowed"] == ["gpu-node-01", "gpu-node-02"]
    first = run_action(isolation_guard, req)
    assert not first.get("failed") and first["changed"] and first["allowed"] == ["gpu-node-01", "gpu-node-02"]
    second = run_action(isolation_guard, dict(req, nodes=["gpu-node-04"], run_id="r2"))
    assert second["allowed"] == [] and second["claimed"] == ["gpu-node-01", "gpu-node-02"]
    rel = run_action(isolation_guard, {"action": "release", "state_dir": str(sd), "db_url": db_url, "run_id": "r1",
                                       "failed": ["gpu-node-01", "gpu-node-02"]})  # fmt: skip
    assert rel["released"] == {"gpu-node-01": "failed", "gpu-node-02": "failed"}
    assert not (sd / "isolation").exists()  # nothing in the state directory: the database has it all


def test_an_unreachable_database_is_a_clear_failure(tmp_path, run_action, slurm_view):
    slurm_view.set(STALE)
    req = {"nodes": ["gpu-node-01"], "scontrol_path": slurm_view.path, "state_dir": str(tmp_path), "run_id": "r1",
           "db_url": "postgresql://nobody@127.0.0.1:1/none"}  # fmt: skip
    r = run_action(isolation_guard, req)
    assert r.get("failed") and "isolation guard" in r["msg"] and "cannot reach the store" in r["msg"]
    assert "Traceback" not in r["msg"]
    with pytest.raises(StateError, match="unsupported database"):
        _state_store.open_state(db_url="mysql://x@y/z")
