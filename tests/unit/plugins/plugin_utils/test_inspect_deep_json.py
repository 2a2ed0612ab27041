# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One deep JSON file blinds one node, never the cluster (issue 35, observation 1).

A capture file holding ``[`` x 100,000 then ``]`` x 100,000 made ``json.loads`` raise RecursionError, which the
capture readers (``except ValueError``) let out of the collector boundary and the worker pool re-raised: the
inspection stopped with no report for any node. Now the file is refused by ``_safejson`` (a ``collector.error``
naming it), that node is ``error``, and the other nodes are judged exactly as without it. The pooled path
(forked workers) and the per-node boundary of reading and judging are checked as well.
"""

from __future__ import annotations

import base64
import datetime
import shutil
import sys
import zlib
from pathlib import Path

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    collect as _collect,
    livecapture as _livecapture,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils import checks as _checks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect, pool as _pool
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state_store as _state_store
from sim_inventory import gpu_nodes

REPO = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(REPO / "tools"))
from simcluster import generate as G  # noqa: E402

WHEN = datetime.datetime(2026, 12, 3, 12, 0, tzinfo=datetime.timezone.utc)
DEEP = "[" * 100000 + "]" * 100000
BAD = "gpu-node-02"


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    out = tmp_path_factory.mktemp("deep") / "sim"
    G.generate(4, str(out), 7, "default")
    own, gv, _every = gpu_nodes(out)
    hosts = {
        h: {"capture_dir": v["gpuops_capture_dir"], "node_class": v.get("gpuops_node_class")} for h, v in own.items()
    }
    return hosts, gv.get("gpuops_profiles") or {}


def _run(hosts, profiles, **kw):
    return _inspect.inspect_nodes({h: dict(v) for h, v in hosts.items()}, profiles=profiles, now=WHEN, **kw)


def _judged(report):
    return {h: (n["status"], sorted(f["id"] for f in n["findings"])) for h, n in report["nodes"].items() if h != BAD}


@pytest.fixture(scope="module")
def baseline(sim):
    hosts, profiles = sim
    report = _run(hosts, profiles)
    assert report["nodes"][BAD]["status"] != "error"  # the node is readable before its file is replaced
    return _judged(report)


def _replace(hosts, tmp_path, name, text):
    """The hosts with BAD's capture copied to tmp_path and its ``name`` replaced by ``text``."""
    dst = tmp_path / BAD
    shutil.copytree(hosts[BAD]["capture_dir"], dst)
    (dst / name).write_text(text)
    return dict(hosts, **{BAD: dict(hosts[BAD], capture_dir=str(dst))})


def _errors_naming(node, name):
    return [
        e
        for f in node["findings"]
        if f["check"] == "collector.error"
        for e in (f.get("evidence") or {}).get("errors") or []
        if name in str(e.get("source")) or name in str(e.get("message"))
    ]


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("capture.json", DEEP, "nesting deeper than 64 levels"),
        ("capture.json", '{"hostname": "x", "files": ' + DEEP + "}", "nesting deeper than 64 levels"),
        ("dcgmi-diag.txt", '{"DCGM GPU Diagnostic": ' + DEEP + "}", "nesting deeper than 64 levels"),
    ],
    ids=["capture.json", "capture.json-inside", "dcgmi-json"],
)
def test_a_deep_capture_file_is_that_nodes_error_and_the_others_are_judged(sim, baseline, tmp_path, name, text, reason):
    hosts, profiles = sim
    report = _run(_replace(hosts, tmp_path, name, text), profiles)
    node = report["nodes"][BAD]
    named = _errors_naming(node, name)
    assert named, node["findings"]
    assert any(reason in str(e.get("message")) for e in named), named
    if name == "capture.json":
        assert node["status"] == "error"
    assert _judged(report) == baseline


def test_a_deep_node_json_is_a_collector_error_of_that_node(sim, baseline, tmp_path):
    hosts, profiles = sim
    report = _run(_replace(hosts, tmp_path, "node.json", DEEP), profiles)
    node = report["nodes"][BAD]
    assert node["status"] in ("error", "degraded", "faulty")
    assert _judged(report) == baseline
    # the readers of node.json (ib, kernel: boot id; node: its domain) refuse it by name, none lets RecursionError out
    assert not [f for f in node["findings"] if "RecursionError" in f["message"]], node["findings"]
    assert _errors_naming(node, "node.json"), node["findings"]


@pytest.fixture
def pooled(monkeypatch):
    """Every host through the forked pool, one host a chunk."""
    monkeypatch.setattr(_pool, "POOL_MIN_HOSTS", 2)
    monkeypatch.setattr(_pool, "CHUNK", 1)
    monkeypatch.setattr(_inspect, "READ_POOL_MIN_HOSTS", 2)


def test_pooled_a_deep_capture_json_costs_that_node_only(sim, baseline, tmp_path, pooled, monkeypatch):
    hosts, profiles = sim
    monkeypatch.setenv("GPUOPS_INSPECT_WORKERS", "2")
    report = _run(_replace(hosts, tmp_path, "capture.json", DEEP), profiles, state_dir=str(tmp_path / "state"))
    assert report["nodes"][BAD]["status"] == "error"
    assert _errors_naming(report["nodes"][BAD], "capture.json")
    assert _judged(report) == baseline


def test_whatever_reading_one_node_raises_is_that_nodes_error(sim, baseline, pooled, monkeypatch, tmp_path):
    """The per-node boundary of the read: a RecursionError out of one node's collection (a parser that lets it
    out) is that node's ``collector.error``, in the forked workers too; the run completes."""
    hosts, profiles = sim
    monkeypatch.setenv("GPUOPS_INSPECT_WORKERS", "2")
    real = _collect.collect_all

    def collect(capture_dir=None, **kw):
        if capture_dir == hosts[BAD]["capture_dir"]:
            raise RecursionError("maximum recursion depth exceeded while decoding a JSON array")
        return real(capture_dir=capture_dir, **kw)

    monkeypatch.setattr(_inspect, "collect_all", collect)
    report = _run(hosts, profiles, state_dir=str(tmp_path / "state"))
    node = report["nodes"][BAD]
    assert node["status"] == "error"
    assert any("RecursionError" in f["message"] for f in node["findings"] if f["check"] == "collector.error")
    assert _judged(report) == baseline


def _stored(state_dir, host):
    """The host's state in the store of the state directory (its embedded SQLite file)."""
    store = _state_store.open_state(str(state_dir))
    try:
        return store.load_host(host)
    finally:
        store.close()


def test_whatever_judging_one_node_raises_is_that_nodes_error_and_its_state_is_kept(
    sim, baseline, pooled, monkeypatch, tmp_path
):
    hosts, profiles = sim
    monkeypatch.setenv("GPUOPS_INSPECT_WORKERS", "2")
    state = tmp_path / "state"
    _run(hosts, profiles, state_dir=str(state))
    before = _stored(state, BAD)
    real = _checks.evaluate_node

    def evaluate(facts, profile, policy, state_, now, host, *a, **kw):
        messages = [str(e.get("message")) for e in facts.get("errors") or [] if isinstance(e, dict)]
        if host == BAD and not any(m.startswith("judging") for m in messages):
            raise RecursionError("maximum recursion depth exceeded")
        return real(facts, profile, policy, state_, now, host, *a, **kw)

    monkeypatch.setattr(_checks, "evaluate_node", evaluate)
    report = _inspect.inspect_nodes(
        {h: dict(v) for h, v in hosts.items()},
        profiles=profiles,
        now=WHEN + datetime.timedelta(days=2),
        state_dir=str(state),
    )
    node = report["nodes"][BAD]
    assert node["status"] == "error"
    assert any("RecursionError" in f["message"] for f in node["findings"] if f["check"] == "collector.error")
    assert _stored(state, BAD) == before  # not judged: its state is left as it was (updated_at included)
    assert {h for h, n in report["nodes"].items() if n["status"] != "error"} == set(hosts) - {BAD}


def _live(hosts, tree=None, packed=None):
    """The hosts with BAD live: its evidence sent back packed (collect_info ``capture_via: python``)."""
    if packed is None:
        packed = _livecapture.pack(tree)
    return dict(hosts, **{BAD: {"evidence": packed, "node_class": hosts[BAD]["node_class"]}})


def test_live_a_deep_capture_json_sent_by_the_node_is_its_error(sim, baseline):
    """What a live node sends with ``capture_via: python``: its capture.json nested 100,000 deep."""
    hosts, profiles = sim
    src = Path(hosts[BAD]["capture_dir"])
    tree = {p.name: p.read_text() for p in src.iterdir() if p.is_file()}
    tree["capture.json"] = DEEP
    report = _run(_live(hosts, tree), profiles)
    node = report["nodes"][BAD]
    assert node["status"] == "error"
    named = _errors_naming(node, "capture.json")
    assert named and all("nesting deeper than 64 levels" in str(e["message"]) for e in named), node["findings"]
    assert _judged(report) == baseline


def test_live_a_deep_packed_answer_is_its_error(sim, baseline):
    hosts, profiles = sim
    packed = base64.b64encode(zlib.compress(DEEP.encode("ascii"))).decode("ascii")
    report = _run(_live(hosts, packed=packed), profiles)
    node = report["nodes"][BAD]
    assert node["status"] == "error"
    assert any("nesting deeper than 64 levels" in f["message"] for f in node["findings"]), node["findings"]
    assert _judged(report) == baseline
