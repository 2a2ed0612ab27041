# -*- coding: utf-8 -*-
"""Sliced inspections' store (plugin_utils/inspect/slices, docs/scale-out.md) on both backends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import sqlalchemy as sa

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect, slices as _slices
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store


def _node(host, status="healthy", rack="r1"):
    return {
        "findings": [{"id": "%s:gpu.xid:gpu0:79" % host, "check": "gpu.xid", "severity": "P1", "action": "isolate"}]
        if status == "faulty"
        else [],
        "status": status,
        "status_reason": None if status == "healthy" else "1 P0/P1 finding(s)",
        "domains": {"gpu": {"state": "ok", "needed": True}},
        "facts": {"schema": "gpuops.facts/v1", "mode": "offline", "gpu": {"gpus": [{"index": 0, "name": "H100"}]}},
        "rack": rack,
        "leaf": "leaf1",
        "power": "pdu1",
        "mode": "offline",
        "policy_hash": "abc",
        "baseline": "profile",
        "not_stored": "the loop's scratch",
    }


def test_a_group_round_trips_every_node_entry(store_kw):
    store = open_store(**store_kw)
    a = {"n1": _node("n1"), "n3": _node("n3", "faulty")}
    b = {"n2": _node("n2", rack="r2")}
    assert _slices.write_slice(store, "g-1", 1, a, {"slice_count": 2})["hosts"] == 2
    _slices.write_slice(store, "g-1", 2, b, {"slice_count": 2})
    nodes, info = _slices.load_group(store, "g-1", expect_slices=2, hosts=["n1", "n2", "n3"])
    assert sorted(nodes) == ["n1", "n2", "n3"]
    want = {k: v for k, v in _node("n3", "faulty").items() if k != "not_stored"}
    assert nodes["n3"] == want
    assert [s["slice"] for s in info["slices"]] == ["1", "2"] and info["hosts"] == 3
    # a rerun of a slice replaces its own rows (one host fewer now), never adds to them
    _slices.write_slice(store, "g-1", 1, {"n1": _node("n1", "faulty")}, {"slice_count": 2})
    nodes, unused_info = _slices.load_group(store, "g-1", expect_slices=2)
    assert sorted(nodes) == ["n1", "n2"] and nodes["n1"]["status"] == "faulty"
    # another group is untouched by all of it
    _slices.write_slice(store, "g-2", 1, {"n9": _node("n9")})
    assert sorted(_slices.load_group(store, "g-2")[0]) == ["n9"]


def test_a_missing_slice_is_refused_by_number(store_kw):
    store = open_store(**store_kw)
    _slices.write_slice(store, "g", 1, {"n1": _node("n1")}, {"slice_count": 3})
    _slices.write_slice(store, "g", 3, {"n3": _node("n3")}, {"slice_count": 3})
    with pytest.raises(_slices.SliceError, match=r"2 of 3 slices written \(1, 3\); missing: 2"):
        _slices.load_group(store, "g")
    with pytest.raises(_slices.SliceError, match="2 of 4 slices"):
        _slices.load_group(store, "g", expect_slices=4)
    with pytest.raises(_slices.SliceError, match="no slice has written"):
        _slices.load_group(store, "other")


def test_a_host_written_twice_or_never_is_refused(store_kw):
    store = open_store(**store_kw)
    _slices.write_slice(store, "g", 1, {"n1": _node("n1"), "n2": _node("n2")})
    _slices.write_slice(store, "g", 2, {"n2": _node("n2"), "n3": _node("n3")})
    with pytest.raises(_slices.SliceError, match=r"1 host\(s\) written by more than one slice \(n2 in slices 1\+2\)"):
        _slices.load_group(store, "g", expect_slices=2)
    _slices.write_slice(store, "g", 2, {"n3": _node("n3")})
    with pytest.raises(_slices.SliceError, match="not inspected by any slice: n4, n5"):
        _slices.load_group(store, "g", hosts=["n1", "n2", "n3", "n4", "n5"])
    with pytest.raises(_slices.SliceError, match="not among the merge's targets: n2, n3"):
        _slices.load_group(store, "g", hosts=["n1"])


@pytest.mark.parametrize("bad", ["", "-x", "a b", "x" * 129, "{{ x }}", None, "a\nb"])
def test_bad_group_names_are_refused(tmp_path, bad):
    store = open_store(state_dir=str(tmp_path))
    with pytest.raises(_slices.SliceError, match="gpuops_run_group"):
        _slices.write_slice(store, bad, 1, {})


def test_old_groups_are_pruned(store_kw):
    store = open_store(**store_kw)
    _slices.write_slice(store, "old", 1, {"n1": _node("n1")})
    _slices.write_slice(store, "new", 1, {"n1": _node("n1")})
    t = _slices._tables()
    with store.begin() as conn:
        conn.execute(t["slice_runs"].update().where(t["slice_runs"].c.group_id == "old").values(finished_at=1.0))
    assert _slices.prune(store, keep_s=3600) == 1
    with store.read() as conn:
        left = sorted({r[0] for r in conn.execute(sa.select(t["slice_nodes"].c.group_id))})
    assert left == ["new"]


_WRITER = textwrap.dedent(
    """
    import json, os, sys, time
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import slices as _slices
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store
    kw, slice_id, n = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    store = open_store(**kw)
    node = {"status": "healthy", "findings": [], "facts": {"pad": "x" * 2000}}
    nodes = {"node%04d" % i: dict(node, rack="r%d" % (i % 4)) for i in range(n)}
    def chunk(done):
        if done >= 400 and os.environ.get("HANG"):
            print("inserted", done, flush=True)
            time.sleep(60)
    _slices.write_slice(store, "g", slice_id, nodes, {"slice_count": 2}, on_chunk=chunk)
    print("committed", flush=True)
    """
)


def _writer(store_kw, slice_id, n, hang):
    build = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "build")
    path = os.pathsep.join(p for p in (os.path.normpath(build), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, HANG="1" if hang else "", PYTHONPATH=path)
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, json.dumps(store_kw), str(slice_id), str(n)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_a_slice_killed_mid_write_leaves_nothing_and_its_rerun_completes(store_kw):
    store = open_store(**store_kw)
    _slices.write_slice(store, "g", 1, {"a1": _node("a1")}, {"slice_count": 2})
    proc = _writer(store_kw, 2, 1000, hang=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("inserted 400"), line  # half the slice's rows are in its open transaction
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    t = _slices._tables()
    with store.read() as conn:
        rows = conn.execute(sa.select(sa.func.count()).select_from(t["slice_nodes"])).scalar()
    assert rows == 1  # only slice 1's node: nothing of the killed slice
    with pytest.raises(_slices.SliceError, match="1 of 2 slices written"):
        _slices.load_group(store, "g")
    rerun = _writer(store_kw, 2, 1000, hang=False)
    out, unused_err = rerun.communicate(timeout=60)
    assert rerun.returncode == 0 and "committed" in out
    nodes, info = _slices.load_group(store, "g")
    assert len(nodes) == 1001 and [s["host_count"] for s in info["slices"]] == [1, 1000]


def _verdicts(report):
    nodes = {
        h: (n["status"], n["status_reason"], sorted((f["id"], f.get("action"), f.get("cause")) for f in n["findings"]))
        for h, n in report["nodes"].items()
    }
    return nodes, sorted(f["id"] for f in report["summary"]["cluster_findings"]), report["summary"]["status"]


def test_the_merge_of_slices_equals_the_unsliced_inspection(tmp_path):
    """Platform node findings join their node at the merge (status assessed again), and a rack whose nodes are
    split over both slices is down as a whole: the merged report equals inspect_nodes over all hosts."""
    from test_checks_platform import NOW, done, healthy

    platform = healthy()
    platform["scheduler"]["history"] += [done(900 + i, "n03", "FAILED") for i in range(6)]
    live = {"schema": "gpuops.facts/v1", "mode": "live", "errors": []}
    hosts = {}
    for i in range(1, 9):
        rack = "r1" if i <= 4 else "r2"
        entry = {"rack": rack, "leaf": "l-" + rack, "power": "p1", "facts": dict(live)}
        if rack == "r2":
            entry = dict(entry, unreachable=True, message="no route to host")
        hosts["n%02d" % i] = entry
    unsliced = _inspect.inspect_nodes(hosts, platform=platform, now=_when(NOW))
    store = open_store(state_dir=str(tmp_path / "state"))
    names = sorted(hosts)
    for k in (0, 1):
        part = {h: hosts[h] for h in names[k::2]}
        evaluated = _inspect.evaluate_nodes(part, now=_when(NOW))
        assert set(evaluated["nodes"]) == set(part)
        _slices.write_slice(store, "m", k + 1, evaluated["nodes"], {"slice_count": 2})
    nodes, unused_info = _slices.load_group(store, "m", hosts=names)
    merged = _slices.merge_report(nodes, hosts, platform=platform, now=_when(NOW))
    assert _verdicts(merged) == _verdicts(unsliced)
    assert "cluster:cluster.leaf:leaf:l-r2:node.unreachable" in _verdicts(merged)[1]
    assert [f["check"] for f in merged["nodes"]["n03"]["findings"]].count("scheduler.job_failures") == 1
    assert merged["platform"] == unsliced["platform"] and merged["fleet_baseline"] == unsliced["fleet_baseline"]


def _when(epoch):
    import datetime

    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
