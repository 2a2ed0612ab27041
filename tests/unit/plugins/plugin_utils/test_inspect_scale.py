# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline inspection at scale (issue 17): the pooled run is the serial run, the facts cache is used only
for an unchanged capture, a corrupt entry is parsed again, cache files are private, report.json streamed is
report.json. On a small simulated cluster with the pool's thresholds lowered (the same code path as 10,000
nodes in chunks of 100; bench/bench_offline.py runs the big one)."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import (
    facts_cache as _facts_cache,
    fleet_summary as _fleet_summary,
    pipeline as _inspect,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger as _ledger
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pool as _pool, report as _report
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as _state, state_store as _state_store
from sim_inventory import gpu_nodes

REPO = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(REPO / "tools"))
from simcluster import generate as G  # noqa: E402

WHEN = datetime.datetime(2026, 12, 3, 12, 0, tzinfo=datetime.timezone.utc)


def same(text: str) -> str:
    """report.json less what differs between any two runs: each parse's own duration (``facts.timings``)."""
    report = json.loads(text)
    for node in report["nodes"].values():
        (node.get("facts") or {}).pop("timings", None)
    return json.dumps(report, sort_keys=True)


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    out = tmp_path_factory.mktemp("scale") / "sim"
    G.generate(24, str(out), 7, "default")
    own, gv, _every = gpu_nodes(out)
    hosts = {
        h: {
            "capture_dir": v["gpuops_capture_dir"],
            "previous_capture_dir": v.get("gpuops_previous_capture_dir"),
            "rack": v.get("gpuops_rack"),
            "leaf": v.get("gpuops_leaf_switch"),
            "power": v.get("gpuops_power_domain"),
            "node_class": v.get("gpuops_node_class"),
        }
        for h, v in own.items()
    }
    assert any(h["previous_capture_dir"] for h in hosts.values())  # the previous-reading path is exercised too
    return hosts, gv.get("gpuops_profiles") or {}


@pytest.fixture
def pooled(monkeypatch):
    """Pool from the first host, 5 hosts a chunk: several chunks over two workers."""
    monkeypatch.setattr(_pool, "POOL_MIN_HOSTS", 2)
    monkeypatch.setattr(_pool, "CHUNK", 5)
    monkeypatch.setattr(_inspect, "READ_POOL_MIN_HOSTS", 2)


def test_a_cheaper_threshold_splits_a_few_dozen_hosts_over_every_worker():
    """The reads (a parse a host) pool from READ_POOL_MIN_HOSTS: 40 hosts on 2 workers go as 2 chunks of 20."""
    hosts = ["h%02d" % i for i in range(40)]
    out = _pool.map_hosts(lambda h, ctx: (h, os.getpid()), hosts, None, 2, min_hosts=_inspect.READ_POOL_MIN_HOSTS)
    assert [h for h, _p in out] == hosts
    pids = [p for _h, p in out]
    assert os.getpid() not in pids and pids[:20] == [pids[0]] * 20 and pids[20:] == [pids[20]] * 20
    # under the threshold: one process, as before
    assert {p for _h, p in _pool.map_hosts(lambda h, ctx: (h, os.getpid()), hosts[:10], None, 2, min_hosts=32)} == {
        os.getpid()
    }


def test_map_hosts_forks_and_keeps_host_order(pooled):
    hosts = ["h%02d" % i for i in range(23)]
    out = _pool.map_hosts(lambda h, ctx: (h, ctx, os.getpid()), hosts, "ctx", 2)
    assert [h for h, _c, _p in out] == hosts and {c for _h, c, _p in out} == {"ctx"}
    assert os.getpid() not in {p for _h, _c, p in out}
    assert {p for _h, _c, p in _pool.map_hosts(lambda h, ctx: (h, ctx, os.getpid()), hosts, "c", 1)} == {os.getpid()}


def test_workers_never_walk_the_parents_heap_and_the_parent_is_unfrozen_after(pooled):
    """The parent's objects are frozen (gc.freeze) before the fork: a worker's collections skip them, so they are
    neither walked nor written to (copy-on-write). After the map, and after a failed one, nothing stays frozen."""
    import gc

    parent_heap = [{"host": i} for i in range(5000)]  # stands for the inventory an ansible-core worker holds
    out = _pool.map_hosts(lambda h, ctx: (h, gc.get_freeze_count()), ["a", "b", "c", "d"], parent_heap, 2)
    assert [h for h, _n in out] == ["a", "b", "c", "d"]
    assert all(n >= len(parent_heap) for _h, n in out), out  # in the workers: the parent's heap, frozen
    assert gc.get_freeze_count() == 0
    with pytest.raises(ZeroDivisionError):
        _pool.map_hosts(lambda h, ctx: 1 / 0, ["a", "b", "c"], None, 2)
    assert gc.get_freeze_count() == 0
    # serial (one worker): nothing is frozen at all
    assert _pool.map_hosts(lambda h, ctx: gc.get_freeze_count(), ["a", "b"], None, 1) == [0, 0]


def test_a_dead_worker_stops_the_run_clearly(pooled):
    def die(host, ctx):
        os._exit(9)

    with pytest.raises(_pool.PoolError, match="worker process of the inspection died"):
        _pool.map_hosts(die, ["a", "b", "c"], None, 2)


@pytest.mark.parametrize("with_profiles", [True, False], ids=["profiles", "fleet-baseline"])
def test_pooled_report_is_the_serial_report(sim, pooled, tmp_path, with_profiles):
    hosts, profiles = sim
    profiles = profiles if with_profiles else {}
    texts = {}
    for workers in (1, 2):
        state_dir = str(tmp_path / ("state%d" % workers))
        for run in ("cold", "warm"):  # the warm run reads the state the cold one saved, and the facts cache
            report = _inspect.inspect_nodes(hosts, profiles=profiles, state_dir=state_dir, now=WHEN, workers=workers)
            texts[workers, run] = _report.to_json(report)
    assert same(texts[1, "cold"]) == same(texts[2, "cold"])
    assert same(texts[1, "warm"]) == same(texts[2, "warm"])
    report = json.loads(texts[2, "cold"])
    assert report["summary"]["nodes"] == len(hosts) and sum(report["summary"]["severity"].values()) > 0


def _counting_collect(monkeypatch):
    calls = []
    real = _inspect.collect_all

    def collect_all(capture_dir=None, **kw):
        calls.append(capture_dir)
        return real(capture_dir=capture_dir, **kw)

    monkeypatch.setattr(_inspect, "collect_all", collect_all)
    return calls


def test_unchanged_captures_come_from_the_cache_and_a_changed_file_is_parsed(sim, tmp_path, monkeypatch):
    hosts, profiles = sim
    hosts = {h: dict(v) for h, v in hosts.items()}
    for h in hosts:  # a private copy of the captures: this test changes one
        for key in ("capture_dir", "previous_capture_dir"):
            if hosts[h][key]:
                dest = tmp_path / key / h
                shutil.copytree(hosts[h][key], dest, symlinks=True)
                hosts[h][key] = str(dest)
    state = tmp_path / "state"
    calls = _counting_collect(monkeypatch)
    _inspect.inspect_nodes(hosts, profiles=profiles, state_dir=str(state), now=WHEN, workers=1)
    parsed = len(calls)
    assert parsed == sum(1 + bool(v["previous_capture_dir"]) for v in hosts.values())
    # the cache is private: 0700 directories, 0600 files
    cache = state / "cache" / "facts"
    assert stat.S_IMODE(os.stat(state / "cache").st_mode) == 0o700 and stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    files = sorted(cache.iterdir())
    assert len(files) == parsed and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)

    # same captures: nothing parsed, and the report is the one of a run that parsed everything
    uncached = tmp_path / "state-uncached"
    shutil.copytree(state, uncached)
    shutil.rmtree(uncached / "cache")
    calls.clear()
    warm = _report.to_json(_inspect.inspect_nodes(hosts, profiles=profiles, state_dir=str(state), now=WHEN))
    assert calls == []
    cold = _report.to_json(_inspect.inspect_nodes(hosts, profiles=profiles, state_dir=str(uncached), now=WHEN))
    assert same(warm) == same(cold) and len(calls) == parsed

    # one file of one capture changed in place (same size): that capture alone is parsed again
    host = sorted(hosts)[3]
    log = Path(hosts[host]["capture_dir"]) / "kernel.log"
    text = log.read_text()
    log.write_text(text[:-2] + "x\n" if len(text) > 2 else "x\n")
    calls.clear()
    _inspect.inspect_nodes(hosts, profiles=profiles, state_dir=str(state), now=WHEN)
    assert calls == [hosts[host]["capture_dir"]]


def test_a_corrupt_or_foreign_cache_entry_is_parsed_again(sim, tmp_path, monkeypatch):
    hosts, profiles = sim
    host = sorted(hosts)[0]
    one = {host: hosts[host]}
    state = tmp_path / "state"
    calls = _counting_collect(monkeypatch)
    first = _report.to_json(_inspect.inspect_nodes(one, profiles=profiles, now=WHEN))
    cache = _facts_cache.FactsCache(str(state))
    capture = hosts[host]["capture_dir"]
    path = Path(cache._path(host, capture))
    fingerprint = _facts_cache.capture_fingerprint(capture)
    good = dict(cache._key(host, capture, fingerprint), facts={"schema": "forged", "mode": "capture", "errors": []})
    for content in (
        b"{not json",
        b"",
        b"\xff\xfe",
        json.dumps([1, 2]).encode(),
        json.dumps(dict(good, host="other")).encode(),  # another host's entry under this name
        json.dumps(dict(good, collector="0" * 64)).encode(),  # an older parser's
        json.dumps(dict(good, facts="not a dict")).encode(),
    ):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.write_bytes(content)
        calls.clear()
        again = _report.to_json(_inspect.inspect_nodes(one, profiles=profiles, now=WHEN, state_dir=str(state)))
        assert calls and calls[0] == capture, content
        # the entry was rewritten from the parse: valid and of this key
        assert cache.get(host, capture, fingerprint) is not None
        shutil.rmtree(state / "hosts", ignore_errors=True)  # each run judged from no previous state
        assert same(again) == same(first)


def _entry(head, body):
    head = dict(head, length=len(body), sha256=hashlib.sha256(body).hexdigest())
    return json.dumps(head).encode() + b"\n" + body


def _forget_the_state(state):
    """Remove the store of the state directory (its embedded SQLite file): the next run is a first run again; the
    facts cache beside it stays."""
    for name in ("gpuops.db", "gpuops.db-wal", "gpuops.db-shm"):
        if (state / name).exists():
            (state / name).unlink()


def test_a_torn_edited_or_forged_cache_entry_is_parsed_again_never_a_traceback(sim, tmp_path, monkeypatch):
    """An entry is its key as one JSON line, then the facts' text with its length and sha256 in the key line:
    a torn body, a body edited in place (same length), a key line naming another length, or a body that
    matches its checksum but is not JSON (written by hand into the private cache) are all parsed again, and the
    report is the parse's."""
    hosts, profiles = sim
    host = sorted(hosts)[0]
    one = {host: hosts[host]}
    state = tmp_path / "state"
    first = _report.to_json(_inspect.inspect_nodes(one, profiles=profiles, now=WHEN))
    cache = _facts_cache.FactsCache(str(state))
    capture = hosts[host]["capture_dir"]
    path = Path(cache._path(host, capture))
    fingerprint = _facts_cache.capture_fingerprint(capture)
    _inspect.inspect_nodes(one, profiles=profiles, now=WHEN, state_dir=str(state))
    _forget_the_state(state)
    head_line, _sep, body = path.read_bytes().partition(b"\n")
    head = json.loads(head_line)
    assert head["schema"] == _facts_cache.CACHE_SCHEMA and head["length"] == len(body) and json.loads(body)
    key = cache._key(host, capture, fingerprint)
    edited = body.replace(b'"capture"', b'"captura"', 1)
    assert len(edited) == len(body) and edited != body
    calls = _counting_collect(monkeypatch)
    for content in (
        head_line + b"\n" + body[: len(body) // 2],  # torn
        head_line + b"\n" + edited,  # edited in place: the checksum no longer holds
        _entry(key, body)[:-1],  # a byte short of the length its key line gives
        _entry(key, b'{"schema": "gpuops.facts/v1", "mode": '),  # checksum holds, not JSON
    ):
        path.write_bytes(content)
        calls.clear()
        again = _report.to_json(_inspect.inspect_nodes(one, profiles=profiles, now=WHEN, state_dir=str(state)))
        assert calls and calls[0] == capture, content[:80]
        _forget_the_state(state)
        assert same(again) == same(first)


def test_the_parent_holds_facts_as_text_and_the_checkup_and_ledger_read_alike(sim, pooled):
    """Between reading and writing report.json the inspection holds each captured node's facts as their JSON
    text (_facts_cache.RawFacts, ~4x smaller than the decoded objects) plus the parts it still reads
    (NodeFacts): the fleet checkup and the ledger's node states are the same as from the whole facts, and
    report.json carries the whole facts."""
    hosts, profiles = sim
    report = _inspect.inspect_nodes(hosts, profiles=profiles, now=WHEN)
    whole = {}
    for host, node in report["nodes"].items():
        facts = node["facts"]
        assert isinstance(facts, _facts_cache.NodeFacts) and isinstance(facts.full, _facts_cache.RawFacts), host
        whole[host] = json.loads(facts.full)
        assert len(facts.full) > 4 * len(json.dumps(dict(facts)))  # the held parts are a fraction of the whole
    decoded = dict(report, nodes={h: dict(n, facts=whole[h]) for h, n in report["nodes"].items()})
    assert _fleet_summary.fleet_summary(decoded) == _fleet_summary.fleet_summary(report)
    assert _fleet_summary.fleet_summary(report)["hardware"]["gpu_models"]  # the checkup saw the GPUs
    for host in report["nodes"]:
        assert _ledger.node_state(host, decoded["nodes"][host]) == _ledger.node_state(host, report["nodes"][host])
    assert json.loads(_report.to_json(report))["nodes"] == json.loads(json.dumps(decoded["nodes"], default=str))


def test_pooled_states_are_saved_in_one_batch_and_a_corrupt_row_stops_the_run_before_anything_is_saved(
    sim, pooled, tmp_path
):
    """Pooled: every host's new state is saved in one batch in the store of the state directory; a repeat over
    unchanged captures rewrites only the few states that move on; a corrupt state row of one host stops the run with
    the StateError naming it, and no other host's state was touched (the batch is saved after the pool)."""
    import sqlalchemy as sa  # pylint: disable=import-outside-toplevel

    hosts, profiles = sim
    state = tmp_path / "state"
    timing = {}
    _inspect.inspect_nodes(hosts, profiles=profiles, now=WHEN, state_dir=str(state), timing=timing)
    assert timing["state_written"] == len(hosts)
    store = _state_store.open_state(str(state))
    before = store.load_hosts(sorted(hosts))
    doc = before[sorted(hosts)[3]]
    assert doc["host"] == sorted(hosts)[3] and doc["schema"] == _state.HOST_STATE_SCHEMA and doc["updated_at"]
    timing = {}
    _inspect.inspect_nodes(hosts, profiles=profiles, now=WHEN, state_dir=str(state), timing=timing)
    after = store.load_hosts(sorted(hosts))
    changed = sorted(h for h in hosts if after[h] != before[h])
    # a few faulty nodes' states move on (repeat counts, escalation); every other state is left as it was
    assert len(changed) == timing["state_written"] < len(hosts) // 4
    for h in changed:
        assert _state.state_text(before[h]) != _state.state_text(after[h]), h
    bad = sorted(hosts)[17]
    with store.store.begin() as conn:
        conn.execute(sa.text("UPDATE host_state SET doc = :d WHERE host = :h"), {"d": '{"active_faults": {', "h": bad})
    later = WHEN + datetime.timedelta(days=3)  # every host's state would change (times, escalations)
    with pytest.raises(_state.StateError, match="corrupt state row of %s" % bad):
        _inspect.inspect_nodes(hosts, profiles=profiles, now=later, state_dir=str(state))
    others = sorted(h for h in hosts if h != bad)
    assert store.load_hosts(others) == {h: after[h] for h in others}
    store.close()


def test_a_worker_killed_mid_batch_saves_no_state_and_the_next_run_completes(sim, pooled, tmp_path, monkeypatch):
    """The parent saves the batch only after every host was judged. A worker that dies after others judged theirs:
    PoolError, no host state saved; the next run completes and saves its own batch."""
    hosts, profiles = sim
    state = tmp_path / "state"  # a first run: every host's state is new
    victim = sorted(hosts)[-2]  # in the last chunk: earlier chunks were judged by then
    real = _inspect._evaluate_host

    def dying(host, ctx):
        if host == victim:
            os._exit(9)
        return real(host, ctx)

    monkeypatch.setattr(_inspect, "_evaluate_host", dying)
    with pytest.raises(_pool.PoolError):
        _inspect.inspect_nodes(hosts, profiles=profiles, now=WHEN, state_dir=str(state))
    store = _state_store.open_state(str(state))
    assert store.host_names() == []  # no host state saved
    monkeypatch.setattr(_inspect, "_evaluate_host", real)
    timing = {}
    _inspect.inspect_nodes(hosts, profiles=profiles, now=WHEN, state_dir=str(state), timing=timing)
    assert timing["state_written"] == len(hosts)
    assert store.host_names() == sorted(hosts)
    store.close()


def test_no_state_dir_no_cache_and_an_unlistable_capture_is_never_cached(tmp_path):
    cache = _facts_cache.FactsCache(str(tmp_path))
    assert _facts_cache.capture_fingerprint(str(tmp_path / "missing")) is None
    cache.put("h", str(tmp_path / "missing"), None, {"a": 1})
    assert cache.get("h", str(tmp_path / "missing"), None) is None and not (tmp_path / "cache").exists()


def test_streamed_report_json_is_to_json(sim, tmp_path):
    hosts, profiles = sim
    report = _inspect.inspect_nodes(hosts, profiles=profiles, now=WHEN)
    paths = _inspect.write_reports(report, str(tmp_path / "r"))
    on_disk = json.loads(Path(paths["json"]).read_text())
    # issue 41: the facts in facts.json.gz beside it, named with their sha256; everything else as to_json's
    entry = on_disk.pop("facts_file")
    assert entry["path"] == "facts.json.gz" and entry["nodes"] == len(report["nodes"])
    assert on_disk == json.loads(_report.to_json(report, facts=False))
    whole = _inspect.load_report(str(tmp_path / "r"))
    whole.pop("facts_file")
    assert whole == json.loads(_report.to_json(report))
    for key in ("json", "facts"):
        assert stat.S_IMODE(os.stat(paths[key]).st_mode) == 0o600
    inline = _inspect.write_reports(report, str(tmp_path / "inline"), inline_facts=True)
    assert Path(inline["json"]).read_text() == _report.to_json(report) and "facts" not in inline
    for small in ({}, {"nodes": {}}, {"a": [1], "nodes": {"b": {}, "a": None}, "z": "\u2028"}):
        assert "".join(_report.iter_json(small)) == _report.to_json(small)
