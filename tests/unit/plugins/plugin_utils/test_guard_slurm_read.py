# -*- coding: utf-8 -*-
"""The isolation guard reads Slurm inside its critical section (issue 35, observation 5).

A run that decides on a ``scontrol show node`` read before it takes the guard's lock can decide on a view from
before another run's drain: that run claims, drains and releases ``done``, and the stale run is allowed the cap
again. The action (gpuops.cluster.isolation_guard) therefore runs ``scontrol show node`` itself, after the lock is
taken: here a fake scontrol probes the lock from its own process when it is called, on each store (the state
directory's embedded SQLite and a SQLite URL: the write lock; PostgreSQL: the advisory lock)."""

from __future__ import annotations

import sys

import pytest

from ansible_collections.gpuops.cluster.plugins.action import isolation_guard as A
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import engine

IDLE = "\n".join("NodeName=gpu-node-%02d State=IDLE Partitions=gpu" % i for i in range(1, 9))

#: scontrol that says, in a log, whether the guard's lock was held by another process when it was called
PROBE = """#!{python}
import sys
kind, where, log, view = {kind!r}, {where!r}, {log!r}, {view!r}
held = None
if kind == "sqlite":
    import sqlite3
    conn = sqlite3.connect(where, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        held = False
    except sqlite3.OperationalError:
        held = True
    conn.close()
else:
    import sqlalchemy as sa
    eng = sa.create_engine(where)
    with eng.connect() as conn:
        held = not conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {{"k": {key}}}).scalar()
        if not held:
            conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {{"k": {key}}})
    eng.dispose()
with open(log, "a") as fh:
    fh.write("%s %s\\n" % (" ".join(sys.argv[1:]), "held" if held else "free"))
sys.stdout.write(open(view).read())
"""


@pytest.fixture(params=["embedded", "sqlite", "postgresql"])
def store(request, tmp_path):
    """(action arguments for the store, how the fake scontrol probes its lock, where). The state directory alone is
    the embedded store, ``<state_dir>/gpuops.db`` (docs/state.md "Backends"; issue 36: no file backend)."""
    sd = tmp_path / "state"
    if request.param == "embedded":
        return {"state_dir": str(sd)}, "sqlite", str(sd / "gpuops.db")
    if request.param == "sqlite":
        db = tmp_path / "x.db"
        return {"state_dir": str(sd), "db_url": "sqlite:///%s" % db}, "sqlite", str(db)
    url = request.getfixturevalue("pg_url")
    return {"state_dir": str(sd), "db_url": url}, "postgresql", url


@pytest.fixture
def probe(slurm_view, store, tmp_path):
    """The fake scontrol that probes ``store``'s guard lock; returns (action args, the log's lines())."""
    args, kind, where = store
    log = tmp_path / "reads.log"
    with open(slurm_view.path, "w", encoding="utf-8") as fh:
        fh.write(PROBE.format(python=sys.executable, kind=kind, where=where, log=str(log), view=str(slurm_view.view),
                              key=engine._lock_key("isolation-guard")))  # fmt: skip  # pylint: disable=protected-access
    slurm_view.set(IDLE)
    args = dict(args, scontrol_path=slurm_view.path, policy={"max_share_partition": 0.25, "window_s": 0})

    def lines():
        return log.read_text(encoding="utf-8").splitlines() if log.exists() else []

    return args, lines


def test_slurm_is_read_after_the_guard_lock_is_taken(probe, run_action):
    args, reads = probe
    out = run_action(A, dict(args, nodes=["gpu-node-01"], run_id="a"))
    assert not out.get("failed") and out["allowed"] == ["gpu-node-01"], out
    assert reads() == ["show node held"]  # one read, while this run held the guard's lock
    # check mode takes no lock and claims nothing: it still reads Slurm (read-only) to say what would happen
    dry = run_action(A, dict(args, nodes=["gpu-node-02"], run_id="b"), check_mode=True)
    assert dry["allowed"] == ["gpu-node-02"] and reads() == ["show node held", "show node free"]
    # a release reads nothing
    run_action(A, dict(args, action="release", run_id="a", done=["gpu-node-01"]))
    assert len(reads()) == 2


def test_a_done_release_hands_the_node_to_the_slurm_view_the_next_run_reads(probe, slurm_view, run_action):
    """The issue's sequence without a flap window: A claims two of eight (cap 2), Slurm drains them, A releases
    them `done`; B, deciding after, reads Slurm under the lock and counts A's drains: nothing more is allowed."""
    args, reads = probe
    a = run_action(A, dict(args, nodes=["gpu-node-01", "gpu-node-02", "gpu-node-03"], run_id="a"))
    assert a["allowed"] == ["gpu-node-01", "gpu-node-02"]
    slurm_view.set(IDLE.replace("01 State=IDLE", "01 State=IDLE+DRAIN").replace("02 State=IDLE", "02 State=IDLE+DRAIN"))
    rel = run_action(A, dict(args, action="release", run_id="a", done=["gpu-node-01", "gpu-node-02"]))
    assert rel["released"] == {"gpu-node-01": "done", "gpu-node-02": "done"}
    b = run_action(A, dict(args, nodes=["gpu-node-05", "gpu-node-06"], run_id="b"))
    assert b["allowed"] == [] and b["out_of_service"] == ["gpu-node-01", "gpu-node-02"] and b["claimed"] == []
    assert [r["node"] for r in b["refused_by_guard"]] == ["gpu-node-05", "gpu-node-06"]
    assert "partition:gpu would have 3 of 8 nodes out of service (limit 2)" in b["refused_by_guard"][0]["reason"]
    assert reads() == ["show node held", "show node held"]
