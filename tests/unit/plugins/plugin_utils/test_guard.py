# -*- coding: utf-8 -*-
"""Unit tests for the isolation blast-radius guard (plugins/plugin_utils/change/guard.py)."""

from __future__ import annotations

import multiprocessing
import os
import stat
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.action import isolation_guard
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import guard as _guard
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state_store as _state_store
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm import parse_show_node

NOW = 1_800_000_000.0


def cluster(n=8, racks=2, state="IDLE", partitions=("gpu",)):
    per = n // racks
    return {
        "gpu-node-%02d" % i: {"partitions": list(partitions), "rack": "rack-%d" % ((i - 1) // per + 1), "state": state}
        for i in range(1, n + 1)
    }


def test_eight_faulty_nodes_with_a_25_percent_cap_drain_exactly_two():
    c = cluster()
    targets = [{"node": n, "severity": "P1"} for n in c]
    r = _guard.decide(targets, c, [], {"max_share_partition": 0.25, "max_share_cluster": 0.25}, NOW)
    assert r["allowed"] == ["gpu-node-01", "gpu-node-02"]
    assert len(r["refused_by_guard"]) == 6
    assert all("limit 2" in x["reason"] for x in r["refused_by_guard"])
    assert r["limits"]["cluster"] == 2 and r["limits"]["partition:gpu"] == 2 and r["limits"]["rack:rack-1"] == 2


def test_worst_severity_first():
    c = cluster()
    targets = [
        {"node": "gpu-node-01", "severity": "P2"},
        {"node": "gpu-node-08", "severity": "P0"},
        {"node": "gpu-node-05", "severity": "P1"},
        "gpu-node-03",
    ]
    r = _guard.decide(targets, c, [], None, NOW)
    assert r["allowed"] == ["gpu-node-08", "gpu-node-05"]
    assert [x["node"] for x in r["refused_by_guard"]] == ["gpu-node-01", "gpu-node-03"]


def test_already_drained_and_down_nodes_count():
    c = cluster()
    c["gpu-node-07"]["state"] = "IDLE+DRAIN"
    c["gpu-node-08"]["state"] = "DOWN*"
    r = _guard.decide(["gpu-node-01", "gpu-node-07"], c, [], None, NOW)
    assert r["allowed"] == []
    assert r["already_isolated"] == ["gpu-node-07"]
    assert r["refused_by_guard"][0]["node"] == "gpu-node-01"
    assert r["out_of_service"] == ["gpu-node-07", "gpu-node-08"]


def test_flapping_nodes_count_within_the_window_only():
    c = cluster()
    # released ("done") isolations, the nodes resumed since: they count within the flap window only
    hist = [{"node": "gpu-node-03", "time": NOW - 600, "state": "done"},
            {"node": "gpu-node-04", "time": NOW - 1200, "state": "done"}]  # fmt: skip
    r = _guard.decide(["gpu-node-05"], c, hist, None, NOW)
    assert r["allowed"] == [] and r["recently_isolated"] == ["gpu-node-03", "gpu-node-04"]
    old = [{"node": "gpu-node-03", "time": NOW - 7200, "state": "done"},
           {"node": "gpu-node-04", "time": NOW - 4000, "state": "done"}]  # fmt: skip
    assert _guard.decide(["gpu-node-05"], c, old, None, NOW)["allowed"] == ["gpu-node-05"]
    # the flapping node itself failing again does not count twice
    assert _guard.decide(["gpu-node-03"], c, hist, None, NOW)["allowed"] == ["gpu-node-03"]


def test_rack_cap_and_count_cap():
    c = cluster(8, 2)
    pol = {"max_share_cluster": 1, "max_share_partition": 1, "max_share_rack": 0.25}
    r = _guard.decide(["gpu-node-01", "gpu-node-02", "gpu-node-05"], c, [], pol, NOW)
    assert r["allowed"] == ["gpu-node-01", "gpu-node-05"]
    assert "rack:rack-1" in r["refused_by_guard"][0]["reason"]
    pol = {"max_share_cluster": 1, "max_share_partition": 1, "max_share_rack": 1, "max_count_cluster": 1}
    assert _guard.decide(["gpu-node-01", "gpu-node-05"], c, [], pol, NOW)["allowed"] == ["gpu-node-01"]


def test_small_partition_min_allowed_and_strict():
    c = cluster(3, 1)
    assert _guard.decide(["gpu-node-01", "gpu-node-02"], c, [], None, NOW)["allowed"] == ["gpu-node-01"]
    assert _guard.decide(["gpu-node-01"], c, [], {"min_allowed": 0}, NOW)["allowed"] == []


def test_override_allows_and_reports():
    c = cluster()
    r = _guard.decide(list(c), c, [], None, NOW, override_reason="rack power work CHG-1")
    assert len(r["allowed"]) == 8 and r["refused_by_guard"] == [] and r["overridden"] is True
    assert len(r["would_refuse"]) == 6


def test_unknown_node_refused_and_bad_inputs():
    r = _guard.decide(["nope"], cluster(), [], None, NOW)
    assert r["refused_by_guard"] == [{"node": "nope", "reason": "not a node of the cluster (unknown to Slurm)"}]
    for bad in ({"max_share_rack": 2}, {"max_share_rack": "x"}, {"bogus": 1}, {"max_count_rack": -1}):
        with pytest.raises(_guard.GuardError):
            _guard.normalize_policy(bad)
    with pytest.raises(_guard.GuardError):
        _guard.normalize_targets([{"severity": "P1"}])
    with pytest.raises(_guard.GuardError):
        _guard.normalize_targets([3])


@pytest.mark.parametrize(
    "state,out",
    [
        ("IDLE", False),
        ("IDLE*", False),
        ("MIXED", False),
        ("ALLOCATED", False),
        ("IDLE+DRAIN", True),
        ("MIXED+DRAIN", True),
        ("DOWN", True),
        ("DOWN*+DRAIN", True),
        ("DRAINED", True),
        (None, False),
        ("IDLE+FAIL", True),
        ("", False),
    ],
)
def test_slurm_unavailable(state, out):
    assert _guard.slurm_unavailable(state) is out


def test_cluster_from_scontrol_text():
    text = "\n".join(
        "NodeName=n%d State=%s Partitions=gpu,debug Gres=gpu:8" % (i, "IDLE+DRAIN" if i == 2 else "IDLE")
        for i in range(1, 5)
    )
    c = _guard.cluster_from_slurm(parse_show_node(text), {"n1": "r1", "n2": "r1"})
    assert c["n1"] == {"partitions": ["gpu", "debug"], "rack": "r1", "state": "IDLE"}
    assert c["n3"]["rack"] is None
    r = _guard.decide(["n1", "n3"], c, [], None, NOW)
    assert r["allowed"] == [] and len(r["refused_by_guard"]) == 2  # 1 of 4 already drained, cap 25 %


@pytest.fixture
def store(tmp_path):
    """The guard's claims where production keeps them (issue 36): the state store, here the embedded SQLite file
    of a state directory (``state_store.DbStateStore.guard_and_claim`` / ``release_claims``)."""
    opened = _state_store.open_state(state_dir=str(tmp_path / "state"))
    yield opened
    opened.close()


def test_claims_are_recorded_and_counted(store, tmp_path):
    c = cluster()
    first = store.guard_and_claim(["gpu-node-01", "gpu-node-02", "gpu-node-03"], c, claim=_guard.Claim(run_id="a"))
    assert first["allowed"] == ["gpu-node-01", "gpu-node-02"]
    second = store.guard_and_claim(["gpu-node-05"], c, claim=_guard.Claim(run_id="b"))
    assert second["allowed"] == [] and second["recently_isolated"] == ["gpu-node-01", "gpu-node-02"]
    assert [(e["node"], e["run_id"], e["state"]) for e in store.load_history()] == [
        ("gpu-node-01", "a", "claimed"), ("gpu-node-02", "a", "claimed")]  # fmt: skip
    # check mode claims nothing
    other = _state_store.open_state(state_dir=str(tmp_path / "x"))
    try:
        checked = other.guard_and_claim(["gpu-node-01"], c, claim=_guard.Claim(record=False))
        assert checked["allowed"] == ["gpu-node-01"] and other.load_history() == []
    finally:
        other.close()


def test_corrupt_history_is_an_error(tmp_path):
    (tmp_path / "isolation").mkdir()
    (tmp_path / "isolation" / "history.json").write_text("{nope")
    with pytest.raises(_guard.StateError):
        _guard.load_history(str(tmp_path))


def _worker(args):
    state_dir, nodes, run = args
    opened = _state_store.open_state(state_dir=state_dir)
    try:
        return opened.guard_and_claim(nodes, cluster(), claim=_guard.Claim(run_id=run))["allowed"]
    finally:
        opened.close()


def test_concurrent_runs_stay_within_the_cap(tmp_path):
    state_dir = str(tmp_path / "state")
    jobs = [(state_dir, ["gpu-node-0%d" % i, "gpu-node-0%d" % (i + 4)], "r%d" % i) for i in range(1, 5)]
    with multiprocessing.get_context("fork").Pool(4) as pool:
        results = pool.map(_worker, jobs)
    assert sum(len(r) for r in results) == 2
    opened = _state_store.open_state(state_dir=state_dir)
    try:
        assert len(opened.load_history()) == 2
    finally:
        opened.close()


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(st.sampled_from(["gpu-node-0%d" % i for i in range(1, 9)] + ["x"]), max_size=10),
    st.lists(st.sampled_from(["IDLE", "IDLE+DRAIN", "DOWN", "MIXED", "ALLOCATED+DRAIN"]), min_size=8, max_size=8),
    st.floats(min_value=0, max_value=1, exclude_min=True),
)
def test_fuzz_never_exceeds_the_cap(targets, states, share):
    c = cluster()
    for (_name, info), s in zip(sorted(c.items()), states):
        info["state"] = s
    pol = {"max_share_cluster": share, "max_share_partition": 1, "max_share_rack": 1, "min_allowed": 0}
    r = _guard.decide(targets, c, [], pol, NOW)
    out = set(r["out_of_service"]) | set(r["allowed"])
    limit = int(8 * share + 1e-9)
    assert len(r["allowed"]) == 0 or len(out) <= limit
    assert set(r["allowed"]).isdisjoint(x["node"] for x in r["refused_by_guard"])


def test_targets_from_findings_worst_severity():
    findings = [{"host": "a", "severity": "P2"}, {"host": "a", "severity": "P1"}, {"host": None, "severity": "P0"}, "x"]
    assert _guard.targets_from_findings(["a", "b"], findings) == [
        {"node": "a", "severity": "P1"},
        {"node": "b", "severity": None},
    ]
    with pytest.raises(_guard.GuardError):
        _guard.targets_from_findings("ab", [])
    with pytest.raises(_guard.GuardError):
        _guard.normalize_targets("gpu-node-01")


# ------------------------------------------------------------------ issue 12 item 8: the cap is a cap
STALE = "\n".join("NodeName=gpu-node-%02d State=IDLE Partitions=gpu Gres=gpu:8" % i for i in range(1, 9))


@pytest.mark.parametrize(
    "bad",
    [
        {"window_s": -1},
        {"window_s": 1.5},
        {"window_s": "0"},
        {"window_s": True},
        {"window_s": None},
        {"max_share_cluster": 0},
        {"max_share_cluster": 1.01},
        {"max_share_rack": -0.1},
        {"max_share_rack": float("nan")},
        {"max_share_rack": "0.5"},
        {"max_count_rack": -1},
        {"max_count_rack": 2.5},
        {"max_count_rack": False},
        {"min_allowed": -1},
        {"claim_ttl_s": 0},
        {"window": 0},
        {"max_fraction": 0.5},
    ],
)
def test_invalid_guard_settings_are_refused(bad):
    with pytest.raises(_guard.GuardError) as exc:
        _guard.normalize_policy(bad)
    assert list(bad)[0] in str(exc.value)


def test_valid_guard_settings():
    pol = _guard.normalize_policy({"max_share_rack": 1, "max_count_cluster": None, "window_s": 0, "claim_ttl_s": 60})
    assert pol["max_share_rack"] == 1.0 and pol["max_count_cluster"] is None and pol["window_s"] == 0
    with pytest.raises(_guard.GuardError):
        _guard.normalize_policy(["window_s", 0])


@pytest.mark.parametrize("window", [0, 1, 3600])
def test_open_claims_count_whatever_the_window(store, window):
    c = cluster()
    pol = {"window_s": window}
    first = store.guard_and_claim(["gpu-node-01", "gpu-node-02"], c, pol, claim=_guard.Claim(run_id="a"), now=NOW)
    assert first["allowed"] == ["gpu-node-01", "gpu-node-02"]
    # an hour later Slurm's view is still stale (all IDLE): the open claims still fill the cap
    later = store.guard_and_claim(["gpu-node-05"], c, pol, claim=_guard.Claim(run_id="b"), now=NOW + 3601)
    assert later["allowed"] == [] and later["claimed"] == ["gpu-node-01", "gpu-node-02"]
    assert "limit 2" in later["refused_by_guard"][0]["reason"]


def test_released_claims(store):
    c = cluster()
    pol = {"window_s": 0}
    store.guard_and_claim(["gpu-node-01", "gpu-node-02"], c, pol, claim=_guard.Claim(run_id="a"), now=NOW)
    # another run cannot release them, and unknown nodes are reported
    other = store.release_claims("b", {"gpu-node-01": "failed"}, now=NOW + 1)
    assert other == {"released": {}, "not_claimed": ["gpu-node-01"]}
    r = store.release_claims("a", {"gpu-node-01": "done", "gpu-node-02": "failed"}, now=NOW + 2)
    assert r == {"released": {"gpu-node-01": "done", "gpu-node-02": "failed"}, "not_claimed": []}
    # done: Slurm's view counts the drained node; failed: nothing counts it any more
    c["gpu-node-01"]["state"] = "IDLE+DRAIN"
    d = store.guard_and_claim(["gpu-node-05", "gpu-node-06"], c, pol, claim=_guard.Claim(run_id="c"), now=NOW + 3)
    assert d["allowed"] == ["gpu-node-05"] and d["claimed"] == []
    # with a flap window a done claim keeps counting after a resume, a failed one does not
    c["gpu-node-01"]["state"] = "IDLE"
    e = _guard.decide(["gpu-node-07"], c, store.load_history(), {"window_s": 3600}, NOW + 4)
    assert e["recently_isolated"] == ["gpu-node-01", "gpu-node-05"] and e["allowed"] == []
    entries = {x["node"]: x["state"] for x in store.load_history()}
    assert entries == {"gpu-node-01": "done", "gpu-node-02": "failed", "gpu-node-05": "claimed"}
    with pytest.raises(_guard.GuardError):
        store.release_claims("", {"gpu-node-05": "done"})
    with pytest.raises(_guard.GuardError):
        store.release_claims("c", {"gpu-node-05": "maybe"})


def test_unreleased_claim_expires_after_its_ttl_not_the_window(store):
    c = cluster()
    pol = {"window_s": 0, "claim_ttl_s": 7200}
    store.guard_and_claim(["gpu-node-01", "gpu-node-02"], c, pol, claim=_guard.Claim(run_id="a"), now=NOW)
    assert (
        store.guard_and_claim(["gpu-node-05"], c, pol, now=NOW + 7199, claim=_guard.Claim(record=False))["allowed"]
        == []
    )
    assert store.guard_and_claim(["gpu-node-05"], c, pol, now=NOW + 7200, claim=_guard.Claim(record=False))[
        "allowed"
    ] == ["gpu-node-05"]


def test_the_claims_database_and_state_dir_are_private_whatever_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        sd = tmp_path / "state"
        opened = _state_store.open_state(state_dir=str(sd))
        try:
            opened.guard_and_claim(["gpu-node-01"], cluster(), claim=_guard.Claim(run_id="a"))
        finally:
            opened.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE((sd / "gpuops.db").stat().st_mode) == 0o600
    assert stat.S_IMODE(sd.stat().st_mode) == 0o700
    assert not (sd / "isolation").exists()  # the claims are in the database, not in a history file


def _decide_in_a_process(run_action, req, q):
    q.put(run_action(isolation_guard, req))


@pytest.mark.parametrize("window", [0, 1, 3600])
def test_concurrent_guard_processes_on_a_stale_view_never_exceed_the_cap(tmp_path, run_action, slurm_view, window):
    """Six isolate runs (real processes, each running the gpuops.cluster.isolation_guard action), started 0.4 s
    apart so that some claims are older than a 1 s window, all on the same stale Slurm view (every node IDLE):
    2 of 8 at most."""
    ctx = multiprocessing.get_context("fork")
    slurm_view.set(STALE)  # Slurm never shows the drains here: only the claims keep the cap
    procs = []
    for i in range(6):
        req = {"nodes": ["gpu-node-%02d" % (i + 1)], "findings": [], "scontrol_path": slurm_view.path, "racks": {},
               "policy": {"window_s": window}, "state_dir": str(tmp_path), "run_id": "run-%d" % i}  # fmt: skip
        q = ctx.Queue()
        p = ctx.Process(target=_decide_in_a_process, args=(run_action, req, q))
        p.start()
        procs.append((p, q))
        time.sleep(0.4)
    answers = []
    for p, q in procs:
        answers.append(q.get(timeout=60))
        p.join(60)
        assert p.exitcode == 0 and not answers[-1].get("failed"), answers[-1]
    allowed = [n for a in answers for n in a["allowed"]]
    assert len(allowed) == 2, answers
    assert sum(len(a["refused_by_guard"]) for a in answers) == 4
    assert sum(a["changed"] for a in answers) == 2  # the runs that claimed something
    # the action releases them: failed ones stop counting at once
    first = next(i for i, a in enumerate(answers) if a["allowed"])
    rel = run_action(isolation_guard, {"action": "release", "state_dir": str(tmp_path), "run_id": "run-%d" % first,
                                       "failed": answers[first]["allowed"]})  # fmt: skip
    assert not rel.get("failed") and rel["released"] == {answers[first]["allowed"][0]: "failed"}
    again = run_action(isolation_guard, {"nodes": ["gpu-node-08"], "scontrol_path": slurm_view.path,
                                         "policy": {"window_s": window}, "state_dir": str(tmp_path), "run_id": "run-9"})  # fmt: skip
    assert not again.get("failed") and again["allowed"] == ["gpu-node-08"]


def test_severity_rank_is_the_policy_scale():
    from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy

    assert _guard.severity_rank is _policy.severity_rank
    assert [_guard.severity_rank(s) for s in ("P0", "p3", None, "P4")] == [0, 3, 9, 9]


def test_release_without_writing_reports_what_it_would_release(store):
    store.guard_and_claim(["gpu-node-01"], cluster(), claim=_guard.Claim(run_id="a"), now=NOW)
    before = store.load_history()
    r = store.release_claims("a", {"gpu-node-01": "done", "gpu-node-02": "failed"}, write=False)
    assert r == {"released": {"gpu-node-01": "done"}, "not_claimed": ["gpu-node-02"]}
    assert store.load_history() == before
    assert _guard.claimed_nodes(store.load_history(), NOW + 1, 86400) == ["gpu-node-01"]
