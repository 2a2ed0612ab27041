# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling batch planner: capacity share, rack/leaf/power limits, canary, window cut-off, determinism."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import planner as P


def cluster(n=40, racks=8, partition="gpu", state="idle", dur=1800):
    return [
        {
            "name": "node%03d" % i,
            "partition": partition,
            "rack": "r%02d" % (i % racks),
            "leaf": "leaf%d" % (i % racks // 2),
            "power": "pdu%d" % (i % (racks * 2)),
            "est_duration_s": dur,
            "state": state,
        }
        for i in range(n)
    ]


def by_name(nodes):
    return {n["name"]: n for n in nodes}


def assert_invariants(nodes, res, c):
    """What must hold for every plan: recomputed from the input, not from the planner's own stats."""
    cons = P.check_constraints(c)
    idx = by_name(nodes)
    total, pre = {}, {}
    for n in nodes:
        parts = n.get("partition") or ["(unknown)"]
        parts = [parts] if isinstance(parts, str) else parts
        for p in parts:
            total[p] = total.get(p, 0) + 1
            if P.slurm_state(n.get("state") or "idle") in ("drained", "down"):
                pre[p] = pre.get(p, 0) + 1
    seen = []
    elapsed = 0.0
    for b in res["batches"]:
        seen += b["hosts"]
        for p, size in total.items():
            share = cons["max_offline_share"].get(p, cons["max_offline_share"]["default"])
            cap = math.floor(share * size + 1e-9)
            extra = 0
            for h in b["hosts"]:
                parts = idx[h].get("partition") or ["(unknown)"]
                parts = [parts] if isinstance(parts, str) else parts
                if p in parts and P.slurm_state(idx[h].get("state") or "idle") in ("idle", "allocated"):
                    extra += 1
            if extra:
                assert pre.get(p, 0) + extra <= cap, (b, p)
        for dom, lim in (
            ("rack", cons["max_per_rack"]),
            ("leaf", cons["max_per_leaf"]),
            ("power", cons["max_per_power"]),
        ):
            if lim is None:
                continue
            counts = {}
            for h in b["hosts"]:
                k = idx[h].get(dom)
                counts[k] = counts.get(k, 0) + 1
            assert max(counts.values()) <= lim, (b, dom)
        if cons["max_batch_size"] is not None:
            assert len(b["hosts"]) <= cons["max_batch_size"]
        elapsed += max(idx[h].get("est_duration_s", 0) for h in b["hosts"]) + cons["batch_overhead_s"]
        assert b["ends_at_s"] == pytest.approx(elapsed)
        if cons["window_s"] is not None:
            assert elapsed <= cons["window_s"]
    assert len(seen) == len(set(seen)), "a host in two batches"
    assert res["ordered_hosts"] == seen
    assert res["batch_sizes"] == [len(b["hosts"]) for b in res["batches"]]
    deferred = [d["name"] for d in res["deferred"]]
    wanted = [n["name"] for n in nodes if n.get("upgrade", True)]
    assert sorted(seen + deferred) == sorted(wanted), "every node needing work is planned or deferred, once"
    if res["batches"] and cons["canary_size"]:
        assert res["batches"][0]["canary"] and len(res["batches"][0]["hosts"]) <= cons["canary_size"]


# ---- basic shape -------------------------------------------------------------------------------------------------
def test_plans_everything_without_a_window():
    nodes = cluster()
    c = {"max_offline_share": 0.1, "max_per_rack": 1}
    res = P.plan_batches(nodes, c)
    assert_invariants(nodes, res, c)
    assert res["deferred"] == [] and res["stats"]["planned"] == 40
    assert res["batch_sizes"][0] == 1  # canary
    assert max(res["batch_sizes"]) == 4  # 10% of 40
    assert res["stats"]["min_online_share"] == {"gpu": 0.9}
    assert res["stats"]["max_per_rack_in_batch"] == 1


def test_per_partition_share_is_never_exceeded():
    nodes = cluster(30, racks=30, partition="a") + [
        dict(n, name="b" + n["name"], partition="b") for n in cluster(10, racks=10)
    ]
    c = {"max_offline_share": {"default": 0.2, "b": 0.1}, "max_per_rack": 5}
    res = P.plan_batches(nodes, c)
    assert_invariants(nodes, res, c)
    for b in res["batches"]:
        assert b["offline"].get("a", 0) <= 6 and b["offline"].get("b", 0) <= 1
    assert res["stats"]["max_offline"] == {"a": 6, "b": 1}


def test_already_drained_and_down_nodes_count_against_the_share():
    nodes = cluster(20, racks=20)
    nodes[0]["state"] = "drained"  # needs the upgrade too
    nodes[1]["state"] = "IDLE+DRAIN"  # Slurm spelling
    nodes[2].update(state="down", upgrade=False)
    c = {"max_offline_share": 0.2, "max_per_rack": 1}  # 4 of 20 may be offline; 3 already are
    res = P.plan_batches(nodes, c)
    assert_invariants(nodes, res, c)
    assert res["stats"]["already_offline"] == {"gpu": 3}
    for b in res["batches"]:
        idle = [h for h in b["hosts"] if h not in ("node000", "node001")]
        assert len(idle) <= 1, b
        assert b["offline"]["gpu"] <= 4
    # the canary is an idle node (a drained one may be broken); the drained nodes cost nothing and ride
    # along in the first batch after it
    assert res["batches"][0]["hosts"] == ["node003"]
    assert set(res["batches"][1]["hosts"]) >= {"node000", "node001"}


def test_no_room_left_defers_with_the_partition_reason():
    nodes = cluster(10, racks=10)
    for n in nodes[:2]:
        n.update(state="down", upgrade=False)
    res = P.plan_batches(nodes, {"max_offline_share": 0.2})
    assert res["batches"] == []
    assert len(res["deferred"]) == 8
    assert res["deferred"][0]["reason"] == (
        "partition gpu: 3 of 10 node(s) would be offline, max_offline_share 0.2 allows 2"
    )


def test_rack_leaf_power_limits():
    nodes = cluster(64, racks=4)
    c = {"max_offline_share": 0.5, "max_per_rack": 3, "max_per_leaf": 4, "max_per_power": 1, "canary_size": 2}
    res = P.plan_batches(nodes, c)
    assert_invariants(nodes, res, c)
    assert max(res["batch_sizes"]) == 8  # 2 leaves x 4 per leaf; rack (3) and power (1 of 8 PDUs) allow it


def test_unknown_rack_is_one_shared_domain():
    nodes = cluster(10, racks=10)
    for n in nodes:
        n.pop("rack")
    res = P.plan_batches(nodes, {"max_offline_share": 0.5, "max_per_rack": 2})
    assert max(res["batch_sizes"]) == 2


def test_max_batch_size():
    nodes = cluster(100, racks=100)
    c = {"max_offline_share": 0.5, "max_batch_size": 7}
    res = P.plan_batches(nodes, c)
    assert_invariants(nodes, res, c)
    assert res["batch_sizes"][1:] == [7] * 14 + [1]


# ---- canary ----------------------------------------------------------------------------------------------------------
def test_canary_first_from_the_least_loaded_rack():
    nodes = cluster(16, racks=4)
    for n in nodes:
        if n["rack"] != "r02":
            n["state"] = "allocated"
    nodes[2]["state"] = "allocated"  # r02 now 3 of 4 idle: still the least loaded
    res = P.plan_batches(nodes, {"max_offline_share": 0.25, "max_per_rack": 2})
    first = res["batches"][0]
    assert first["canary"] and len(first["hosts"]) == 1
    assert nodes[int(first["hosts"][0][4:])]["rack"] == "r02"
    assert first["hosts"] == ["node006"]  # the idle one, by name
    assert not any(b["canary"] for b in res["batches"][1:])


def test_canary_size_configurable_and_zero():
    nodes = cluster(40, racks=8)
    res = P.plan_batches(nodes, {"canary_size": 3, "max_offline_share": 0.2, "max_per_rack": 1})
    assert res["batch_sizes"][0] == 3
    assert len({by_name(nodes)[h]["rack"] for h in res["batches"][0]["hosts"]}) == 3
    res = P.plan_batches(nodes, {"canary_size": 0, "max_offline_share": 0.2, "max_per_rack": 1})
    assert not res["batches"][0]["canary"] and res["batch_sizes"][0] == 8


# ---- window ---------------------------------------------------------------------------------------------------------
def test_window_cut_off_defers_the_rest():
    nodes = cluster(40, racks=8, dur=3600)
    c = {"max_offline_share": 0.1, "max_per_rack": 1, "window_s": 4 * 3600 + 1800, "batch_overhead_s": 0}
    res = P.plan_batches(nodes, c)
    assert_invariants(nodes, res, c)
    assert res["batch_sizes"] == [1, 4, 4, 4]
    assert res["stats"]["est_total_s"] == 4 * 3600
    assert len(res["deferred"]) == 40 - 13
    assert all(d["reason"].startswith("window: needs 3600s, 1800s of the window left after 4 batch(es)")
               for d in res["deferred"])  # fmt: skip


def test_window_keeps_planning_shorter_nodes():
    nodes = cluster(8, racks=8, dur=600)
    nodes[5]["est_duration_s"] = 5000  # a long one alone does not block the short ones
    c = {"max_offline_share": 0.25, "max_per_rack": 1, "window_s": 2400}  # canary + 3 batches of 2
    res = P.plan_batches(nodes, c)
    assert_invariants(nodes, res, c)
    assert [d["name"] for d in res["deferred"]] == ["node005"]
    assert res["batch_sizes"] == [1, 2, 2, 2] and res["stats"]["est_total_s"] == 2400


def test_window_too_short_for_anything():
    res = P.plan_batches(cluster(4, racks=4), {"window_s": 10, "max_offline_share": 0.5})
    assert res["batches"] == [] and len(res["deferred"]) == 4


# ---- states, priorities ----------------------------------------------------------------------------------------------
def test_down_nodes_are_deferred_unless_included():
    nodes = cluster(10, racks=10)
    nodes[3]["state"] = "DOWN*"
    res = P.plan_batches(nodes, {"max_offline_share": 0.3})
    assert res["deferred"] == [{"name": "node003", "reason": "node is down (set include_down to plan it anyway)"}]
    res = P.plan_batches(nodes, {"max_offline_share": 0.3, "include_down": True})
    assert "node003" in res["ordered_hosts"] and res["deferred"] == []


def test_priority_and_allocated_last():
    nodes = cluster(6, racks=6)
    nodes[4]["priority"] = 10
    nodes[0]["state"] = "allocated"
    res = P.plan_batches(nodes, {"max_offline_share": 0.34, "canary_size": 0})  # 2 at a time
    assert res["ordered_hosts"][0] == "node004"
    assert res["ordered_hosts"][-1] == "node000"


def test_multi_partition_node_counts_in_both():
    nodes = [
        {"name": "x", "partition": ["a", "b"], "rack": "r1", "est_duration_s": 10},
        {"name": "y", "partition": "a", "rack": "r2", "est_duration_s": 10},
        {"name": "z", "partition": "b", "rack": "r3", "est_duration_s": 10},
        {"name": "w", "partition": "b", "rack": "r4", "est_duration_s": 10},
    ]
    c = {"max_offline_share": 0.5, "canary_size": 0}  # a: 1 of 2, b: 1 of 3
    res = P.plan_batches(nodes, c)
    assert_invariants(nodes, res, c)
    # x takes the one free slot of both a and b; then y (a) and z (b) together; then w
    assert [sorted(b["hosts"]) for b in res["batches"]] == [["x"], ["y", "z"], ["w"]]


def test_partition_sizes_raise_capacity():
    nodes = cluster(4, racks=4)
    res = P.plan_batches(nodes, {"max_offline_share": 0.1, "partition_sizes": {"gpu": 40}, "canary_size": 0})
    assert res["batch_sizes"] == [4]


# ---- determinism ----------------------------------------------------------------------------------------------------
def test_deterministic_under_input_order():
    nodes = cluster(200, racks=16)
    for i, n in enumerate(nodes):
        n["state"] = ("idle", "allocated", "idle", "drained")[i % 4] if i % 7 else "allocated"
        n["est_duration_s"] = 1200 + (i % 5) * 300
    c = {"max_offline_share": 0.15, "max_per_rack": 2, "max_per_power": 1, "window_s": 30000, "canary_size": 2}
    ref = P.plan_batches(nodes, c)
    assert_invariants(nodes, ref, c)
    rng = random.Random(3)
    for _unused in range(3):
        shuffled = list(nodes)
        rng.shuffle(shuffled)
        assert P.plan_batches(shuffled, c) == ref


# ---- input errors ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "nodes,cons,key",
    [
        ([], {"max_per_rak": 1}, "constraints.max_per_rak"),
        ([], {"max_offline_share": 1.5}, "constraints.max_offline_share"),
        ([], {"max_offline_share": {"gpu": "x"}}, "constraints.max_offline_share.gpu"),
        ([], {"max_per_rack": 0}, "constraints.max_per_rack"),
        ([], {"window_s": -1}, "constraints.window_s"),
        ([], {"canary_size": True}, "constraints.canary_size"),
        ([], "x", "constraints"),
        ("x", {}, "nodes"),
        ([{"name": "a"}, {"name": "a"}], {}, "nodes[1](a).name"),
        ([{"name": "a", "state": "sleepy"}], {}, "nodes[0](a).state"),
        ([{"name": "a", "rackk": "r"}], {}, "nodes[0](a).rackk"),
        ([{"name": "a", "est_duration_s": "1h"}], {}, "nodes[0](a).est_duration_s"),
        ([{"name": "a", "upgrade": "yes"}], {}, "nodes[0](a).upgrade"),
        ([{"name": ""}], {}, "nodes[0].name"),
        ([{"name": "a", "est_duration_s": float("inf")}], {"window_s": 10}, "nodes[0](a).est_duration_s"),
        ([{"name": "a", "priority": float("nan")}], {}, "nodes[0](a).priority"),
        ([], {"window_s": float("inf")}, "constraints.window_s"),
    ],
)
def test_bad_input_names_the_key(nodes, cons, key):
    with pytest.raises(P.PlanError) as ei:
        P.plan_batches(nodes, cons)
    assert ei.value.key == key


@pytest.mark.parametrize(
    "state,want",
    [("IDLE", "idle"), ("MIXED", "allocated"), ("ALLOCATED+DRAIN", "drained"), ("IDLE+DRAIN", "drained"),
     ("DOWN*+DRAIN", "down"), ("DRAINING", "drained"), ("IDLE*", "idle"), ("", None), ("SLEEPY", None), (None, None)],
)  # fmt: skip
def test_slurm_state(state, want):
    assert P.slurm_state(state) == want


def test_empty():
    res = P.plan_batches([], None)
    assert res["batches"] == [] and res["batch_sizes"] == [] and res["stats"]["batches"] == 0


# ---- property test ---------------------------------------------------------------------------------------------------
_node = st.fixed_dictionaries(
    {
        "partition": st.sampled_from(["a", "b", ["a", "b"], None]),
        "rack": st.sampled_from(["r1", "r2", "r3", "r4", None]),
        "leaf": st.sampled_from(["l1", "l2"]),
        "power": st.sampled_from(["p1", "p2", "p3"]),
        "est_duration_s": st.integers(0, 4000),
        "state": st.sampled_from(["idle", "idle", "allocated", "drained", "down"]),
        "priority": st.integers(0, 2),
        "upgrade": st.booleans(),
    }
)


@settings(max_examples=120, deadline=None, derandomize=True)
@given(
    nodes=st.lists(_node, max_size=30),
    c=st.fixed_dictionaries(
        {
            "max_offline_share": st.sampled_from([0.1, 0.25, 0.5, 1.0, {"default": 0.3, "b": 0.6}]),
            "max_per_rack": st.sampled_from([None, 1, 2]),
            "max_per_leaf": st.sampled_from([None, 2]),
            "max_per_power": st.sampled_from([None, 1, 3]),
            "canary_size": st.integers(0, 2),
            "max_batch_size": st.sampled_from([None, 3]),
            "window_s": st.sampled_from([None, 3000, 9000]),
            "batch_overhead_s": st.sampled_from([0, 300]),
            "include_down": st.booleans(),
        }
    ),
)
def test_property_constraints_always_hold(nodes, c):
    named = [dict(n, name="n%02d" % i) for i, n in enumerate(nodes)]
    res = P.plan_batches(named, c)
    assert_invariants(named, res, c)
    assert P.plan_batches(list(reversed(named)), c) == res


_junk = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 5), st.floats(allow_nan=True), st.text(max_size=6)),
    lambda ch: st.one_of(st.lists(ch, max_size=3), st.dictionaries(st.sampled_from(sorted(P.NODE_KEYS)), ch)),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    nodes=st.one_of(_junk, st.lists(_junk, max_size=5)),
    c=st.one_of(_junk, st.dictionaries(st.sampled_from(sorted(P.CONSTRAINT_KEYS)), _junk, max_size=3)),
)
def test_fuzz_garbage_gives_a_plan_or_plan_error(nodes, c):
    try:
        res = P.plan_batches(nodes, c)
    except P.PlanError as e:
        assert e.key.startswith(("nodes", "constraints"))
        return
    assert set(res) == {"batches", "deferred", "batch_sizes", "ordered_hosts", "stats"}
