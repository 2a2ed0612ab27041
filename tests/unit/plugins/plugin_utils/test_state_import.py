# -*- coding: utf-8 -*-
"""The state files of an older collection (docs/state.md "The state files of older versions"): a state directory with
``hosts/<host>.json`` and ``isolation/history.json`` is imported into the store on the first open, once; the guard
still counts the imported claims; a file that cannot be read refuses the open with a message naming it.

Every expected value below comes from the files this test writes (the layout an older gpuops.cluster wrote: a host
document ``gpuops.state/v1``, a history ``{"schema": "gpuops.isolation-history/v1", "entries": [...]}``) and from
the guard's documented cap (docs/isolation.md: 25 % of an 8-node partition is 2 nodes), never from the code under
test."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import time

import pytest

from ansible_collections.gpuops.cluster.plugins.action import isolation_guard
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import guard as _guard
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store, state_store as _state_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.state import StateError

import state_procs

NOW = 1_800_000_000.0
SHOW = "\n".join("NodeName=gpu-node-%02d State=IDLE Partitions=gpu Gres=gpu:8" % i for i in range(1, 9))
CLUSTER = {"gpu-node-%02d" % i: {"partitions": ["gpu"], "rack": None, "state": "IDLE"} for i in range(1, 9)}

# what an older collection left in its state directory
HOST_01 = {
    "schema": "gpuops.state/v1",
    "host": "gpu-node-01",
    "updated_at": "2026-11-30T08:00:00Z",
    "boot_id": "0f4c-old-boot",
    "clears": {"00000000:18:00.0": "2026-11-29T10:00:00Z"},
    "resets": [{"bus_id": "00000000:18:00.0", "serial": "1650924010233", "time": "2026-11-29T10:00:00Z"}],
    "active_faults": {"gpu.xid/79/00000000:3b:00.0": {"first_seen": "2026-11-30T07:00:00Z"}},
}
HOST_02 = {"schema": "gpuops.state/v1", "host": "gpu-node-02", "updated_at": "2026-11-30T08:00:00Z", "boot_id": "b2"}
# two open claims of a run that drained gpu-node-03 and gpu-node-04 ten minutes ago, and one released one
ENTRIES = [
    {"node": "gpu-node-03", "time": NOW - 600, "run_id": "old-run", "ticket": "INC-41", "state": "claimed"},
    {"node": "gpu-node-04", "time": NOW - 600, "run_id": "old-run", "ticket": "INC-41", "state": "claimed"},
    {
        "node": "gpu-node-06",
        "time": NOW - 7200,
        "run_id": "older",
        "ticket": "",
        "state": "failed",
        "released_at": NOW - 7100,
    },
]
HISTORY = {"schema": "gpuops.isolation-history/v1", "entries": ENTRIES}


def _kw(kind, tmp_path, request):
    sd = str(tmp_path / "state")
    if kind == "embedded":
        return {"state_dir": sd}
    if kind == "sqlite":
        return {"state_dir": sd, "db_url": "sqlite:///%s" % (tmp_path / "x.db")}
    return {"state_dir": sd, "db_url": request.getfixturevalue("pg_url")}


@pytest.fixture(params=["embedded", "sqlite", "postgresql"])
def kw(request, tmp_path):
    return _kw(request.param, tmp_path, request)


def _write_old(sd, hosts=(HOST_01, HOST_02), history=None):
    history = HISTORY if history is None else history
    os.makedirs(os.path.join(sd, "hosts"), mode=0o700)
    os.makedirs(os.path.join(sd, "isolation"), mode=0o700)
    texts = {}
    for doc in hosts:
        path = os.path.join(sd, "hosts", doc["host"] + ".json")
        texts[path] = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    path = os.path.join(sd, "isolation", "history.json")
    texts[path] = history if isinstance(history, str) else json.dumps(history, indent=1, sort_keys=True) + "\n"
    for path, text in texts.items():
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return texts


def _bare(kw):
    """The store of ``kw`` opened WITHOUT the import (what is in it, whatever the state directory holds)."""
    store = open_store(**({"db_url": kw["db_url"]} if kw.get("db_url") else {"state_dir": kw["state_dir"]}))
    return _state_store.DbStateStore(store)


def _moved(sd, rel):
    """The paths ``rel`` was moved aside to (``<rel>.imported-<stamp>``)."""
    head, tail = os.path.split(os.path.join(sd, rel))
    return sorted(os.path.join(head, n) for n in os.listdir(head) if n.startswith(tail + ".imported-"))


def test_an_old_state_directory_is_imported_on_first_open_and_the_guard_still_refuses(kw):
    texts = _write_old(kw["state_dir"])
    store = _state_store.open_state(**kw)
    try:
        assert store.imported["hosts"] == ["gpu-node-01", "gpu-node-02"] and store.imported["claims"] == 3
        assert store.host_names() == ["gpu-node-01", "gpu-node-02"]
        one = store.load_host("gpu-node-01")
        for key in ("boot_id", "clears", "resets", "active_faults", "updated_at"):
            assert one[key] == HOST_01[key], key
        hist = sorted(store.load_history(), key=lambda e: e["node"])
        assert hist == sorted(ENTRIES, key=lambda e: e["node"])  # node, time, run, ticket, state, released_at
        # the two open claims count: 2 of 8 is the 25 % cap, so a third node of the partition is refused ...
        r = store.guard_and_claim(["gpu-node-05"], CLUSTER, policy={"max_share_partition": 0.25},
                                  claim=_guard.Claim(run_id="new-run"), now=NOW)  # fmt: skip
        assert r["allowed"] == [] and r["claimed"] == ["gpu-node-03", "gpu-node-04"]
        assert [x["node"] for x in r["refused_by_guard"]] == ["gpu-node-05"]
        assert "partition:gpu would have 3 of 8 nodes out of service (limit 2)" in r["refused_by_guard"][0]["reason"]
        # ... until the old run's claims are released as failed (no drain happened): then it is allowed
        rel = store.release_claims("old-run", {"gpu-node-03": "failed", "gpu-node-04": "failed"}, now=NOW + 1)
        assert rel["released"] == {"gpu-node-03": "failed", "gpu-node-04": "failed"}
        r = store.guard_and_claim(["gpu-node-05"], CLUSTER, policy={"max_share_partition": 0.25},
                                  claim=_guard.Claim(run_id="new-run"), now=NOW + 2)  # fmt: skip
        assert r["allowed"] == ["gpu-node-05"]
    finally:
        store.close()
    # the old files are moved aside whole (the directory and the history, byte for byte), not deleted
    sd = kw["state_dir"]
    assert not os.path.exists(os.path.join(sd, "hosts")) and not os.path.exists(
        os.path.join(sd, "isolation", "history.json")
    )
    [hosts_dir] = _moved(sd, "hosts")
    [history] = _moved(sd, os.path.join("isolation", "history.json"))
    for path, text in texts.items():
        moved = history if path.endswith("history.json") else os.path.join(hosts_dir, os.path.basename(path))
        with open(moved, encoding="utf-8") as fh:
            assert fh.read() == text
    # the next open imports nothing and finds the same state
    again = _state_store.open_state(**kw)
    assert again.imported is None and again.load_host("gpu-node-01")["boot_id"] == HOST_01["boot_id"]
    again.close()


def test_the_guard_action_refuses_after_the_import(tmp_path, run_action, slurm_view):
    """gpuops.cluster.isolation_guard on a state directory an older collection used: the claims in its history.json
    count on the first run of this one."""
    sd = tmp_path / "state"
    recent = time.time() - 600  # the action decides at the real time: the old run claimed ten minutes ago
    _write_old(str(sd), history=dict(HISTORY, entries=[dict(e, time=recent) for e in ENTRIES[:2]]))
    slurm_view.set(SHOW)
    args = {"nodes": ["gpu-node-05"], "scontrol_path": slurm_view.path, "state_dir": str(sd), "run_id": "new-run",
            "policy": {"max_share_partition": 0.25, "max_share_cluster": 0.25}}  # fmt: skip
    out = run_action(isolation_guard, args)
    assert not out.get("failed"), out
    assert out["allowed"] == [] and [x["node"] for x in out["refused_by_guard"]] == ["gpu-node-05"]
    assert out["changed"] is False


def test_importing_twice_does_not_duplicate(kw):
    """A run killed between the import's commit and the move of the files: the next open finds the files again and
    adds nothing (the store's hosts kept, no claim twice)."""
    _write_old(kw["state_dir"])
    _state_store.open_state(**kw).close()
    sd = kw["state_dir"]
    # put the moved files back where they were, as if the first run had died before moving them
    os.rename(_moved(sd, "hosts")[0], os.path.join(sd, "hosts"))
    os.rename(_moved(sd, os.path.join("isolation", "history.json"))[0], os.path.join(sd, "isolation", "history.json"))
    store = _bare(kw)
    store.update_host("gpu-node-02", lambda s: dict(s, boot_id="newer-in-the-store"))
    store.close()
    store = _state_store.open_state(**kw)
    try:
        assert store.imported["hosts"] == [] and store.imported["claims"] == 0
        assert store.imported["skipped"] == ["gpu-node-01", "gpu-node-02"]
        assert len(store.load_history()) == len(ENTRIES)
        assert store.load_host("gpu-node-02")["boot_id"] == "newer-in-the-store"  # the store's document wins
        assert store.load_host("gpu-node-01")["boot_id"] == HOST_01["boot_id"]
    finally:
        store.close()
    assert _moved(sd, "hosts") and not os.path.exists(os.path.join(sd, "hosts"))  # moved aside again


def test_old_history_entries_count_as_the_guard_counted_them(tmp_path):
    """docs/isolation.md: a claim without a state (an older history) counts as claimed; an entry without a valid time
    never counted; a released one counts in the flap window only. The import keeps exactly that."""
    sd = str(tmp_path / "state")
    entries = [
        {"node": "gpu-node-03", "time": NOW - 600, "run_id": "r0"},  # no state: claimed
        {"node": "gpu-node-04", "time": "soon", "state": "claimed"},  # no valid time: never counted
        {"node": "gpu-node-05", "time": NOW - 600, "state": "done", "released_at": "yesterday"},
        "not an entry",
    ]
    _write_old(sd, history={"schema": "gpuops.isolation-history/v1", "entries": entries})
    store = _state_store.open_state(state_dir=sd)
    try:
        hist = store.load_history()
        assert [(e["node"], e["state"], e.get("released_at")) for e in hist] == [
            ("gpu-node-03", "claimed", None),
            ("gpu-node-05", "done", None),
        ]
        r = store.guard_and_claim(["gpu-node-06"], CLUSTER, policy={"max_share_partition": 0.25},
                                  claim=_guard.Claim(record=False), now=NOW)  # fmt: skip
        assert r["claimed"] == ["gpu-node-03"] and r["recently_isolated"] == ["gpu-node-03", "gpu-node-05"]
        assert r["allowed"] == [] and [x["node"] for x in r["refused_by_guard"]] == ["gpu-node-06"]
    finally:
        store.close()


def test_parallel_first_opens_import_once(kw):
    """Four processes open the state of one old state directory at the same moment: one of them imports, the others
    find the store already holding it (or the files moved aside); no claim and no host twice."""
    _write_old(kw["state_dir"])
    ctx = multiprocessing.get_context("spawn")
    barrier, q = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=state_procs.open_once, args=(kw, barrier, q)) for _proc in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    results = [q.get(timeout=10) for _proc in procs]
    done = [r for r in results if r and (r["hosts"] or r["claims"])]
    assert len(done) == 1 and done[0]["hosts"] == ["gpu-node-01", "gpu-node-02"] and done[0]["claims"] == len(ENTRIES)
    store = _bare(kw)
    try:
        assert store.host_names() == ["gpu-node-01", "gpu-node-02"] and len(store.load_history()) == len(ENTRIES)
    finally:
        store.close()
    assert not os.path.exists(os.path.join(kw["state_dir"], "hosts"))


@pytest.mark.parametrize(
    "where,text,why",
    [
        ("hosts/gpu-node-02.json", '{"schema": "gpuops.state/v1", "host": "gpu-n', "JSON"),  # truncated
        ("hosts/gpu-node-02.json", "[1, 2]", "not a JSON object"),
        ("hosts/gpu-node-02.json", "\xff\xfe{}", ""),  # not UTF-8 once encoded as latin-1 below
        ("isolation/history.json", '{"schema": "gpuops.isolation-history/v1", "entries": [{"node": "gpu-no', "JSON"),
        ("isolation/history.json", '[{"node": "gpu-node-03", "time": 1799999400}]', "not a JSON object"),
        ("isolation/history.json", '{"schema": "gpuops.isolation-history/v1", "entries": "gpu-node-03"}', "entries"),
        ("isolation/history.json", "", ""),  # empty
    ],
)
def test_a_corrupt_old_file_is_a_clear_error_and_nothing_is_imported(kw, where, text, why):
    sd = kw["state_dir"]
    _write_old(sd)
    path = os.path.join(sd, *where.split("/"))
    with open(path, "wb") as fh:
        fh.write(text.encode("latin-1"))
    with pytest.raises(StateError) as err:
        _state_store.open_state(**kw)
    msg = str(err.value)
    assert path in msg and "cannot import the old state file" in msg and why in msg
    assert "Nothing was imported" in msg and "Traceback" not in msg
    store = _bare(kw)
    try:
        assert store.host_names() == [] and store.load_history() == []  # nothing of the good files either
    finally:
        store.close()
    assert os.path.isfile(path) and os.path.isdir(os.path.join(sd, "hosts"))  # nothing moved aside
    assert _moved(sd, "hosts") == []


def test_a_corrupt_history_refuses_the_guard_instead_of_reading_no_claims(tmp_path, run_action, slurm_view):
    sd = tmp_path / "state"
    _write_old(str(sd), history='{"schema": "gpuops.isolation-history/v1", "entries": [{"node": "gpu-node-03", "ti')
    slurm_view.set(SHOW)
    args = {"nodes": ["gpu-node-05"], "scontrol_path": slurm_view.path, "state_dir": str(sd), "run_id": "r"}
    out = run_action(isolation_guard, args)
    assert out.get("failed") and "isolation guard" in out["msg"] and "Traceback" not in out["msg"]
    assert str(sd / "isolation" / "history.json") in out["msg"]
    assert slurm_view.reads == 0  # refused before any decision
    store = _bare({"state_dir": str(sd)})
    assert store.load_history() == []  # nothing claimed
    store.close()


def test_an_unsafe_host_file_name_is_refused_by_name(tmp_path):
    sd = str(tmp_path / "state")
    _write_old(sd)
    shutil.copy(os.path.join(sd, "hosts", "gpu-node-01.json"), os.path.join(sd, "hosts", "gpu node 9.json"))
    with pytest.raises(StateError, match="gpu node 9.json"):
        _state_store.open_state(state_dir=sd)


def test_a_state_directory_without_old_files_imports_nothing_and_takes_no_lock(tmp_path):
    sd = str(tmp_path / "state")
    store = _state_store.open_state(state_dir=sd)
    assert store.imported is None
    store.close()
    assert "gpuops.db" in os.listdir(sd) and set(os.listdir(sd)) <= {"gpuops.db", "gpuops.db-wal", "gpuops.db-shm"}


def test_no_state_at_all(tmp_path):
    assert _state_store.open_state() is None
    with pytest.raises(StateError, match="the guard needs a state directory"):
        _state_store.open_state(need="the guard")


def test_the_replacement_evidence_reads_a_lost_gpu_serial_from_the_imported_state(tmp_path, run_action):
    """gpuops.cluster.replace_parts (the replace role's evidence) takes the serial of a GPU that cannot be read now
    from the host's state in the store: here the state an older collection left in hosts/gpu-node-01.json."""
    from ansible_collections.gpuops.cluster.plugins.action import replace_parts

    sd = str(tmp_path / "state")
    bus = "00000000:3B:00.0"  # as nvidia-smi prints a bus id (the state keeps it so)
    _write_old(sd, hosts=(dict(HOST_01, gpu={"gpus": {bus: {"serial": "1650924010777"}}}),))
    facts = {"gpu": {"gpus": [{"bus_id": bus, "serial": None, "readable": False}]}}
    out = run_action(replace_parts, {"action": "inventory", "facts": facts, "host": "gpu-node-01", "state_dir": sd})
    assert not out.get("failed"), out
    assert out["serials"]["gpu"][bus] == "1650924010777"
    # without a state: unknown, never a guess
    out = run_action(replace_parts, {"action": "inventory", "facts": facts, "host": "gpu-node-02", "state_dir": sd})
    assert out["serials"]["gpu"].get(bus) is None
