# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Health checks (plugin_utils/checks): the entry point, the registry vs docs/checks.md, robustness."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.plugin_utils import checks as C
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as S
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.cluster import node_status
from checks_helpers import HOST, NOW, PROFILE, facts, gpu, only, run, xid


# ------------------------------------------------------------------------------- shape, healthy, robustness

#: the repository root is four levels above this file (tests/unit/plugins/plugin_utils/)
DOC_PATH = Path(__file__).resolve().parents[4] / "docs" / "checks.md"
CHECKS_DOC = DOC_PATH.read_text(encoding="utf-8")


def test_healthy_node_has_no_findings_with_and_without_profile():
    assert run(facts())[0] == []
    assert run(facts(), PROFILE)[0] == []
    assert node_status(run(facts(), PROFILE)[0]) == "healthy"


def test_finding_shape_and_catalogue_matches_docs():
    f = run(facts(events=[xid(79)]))[0][0]
    assert set(f) == set("check severity component code message action rule respond_by evidence host cause id".split())
    assert f["id"] == "%s:gpu.xid:gpu0:79" % HOST and f["host"] == HOST and f["cause"] is None
    assert f["respond_by"] == "2026-12-02T10:30:00Z"
    assert f["action"] in P.ACTIONS
    for check in C.CHECKS:
        assert "`%s`" % check in CHECKS_DOC, check


def test_the_catalogue_test_reads_the_doc_not_itself():
    assert DOC_PATH.name == "checks.md" and DOC_PATH.parent.name == "docs"
    assert CHECKS_DOC.startswith("# Health checks") and "def test_" not in CHECKS_DOC
    # both ways: every per-node check heading of the doc is in the catalogue, and every catalogue id has one
    section = CHECKS_DOC.split("## Per-node checks", 1)[1].split("\n## ", 1)[0]
    headed = {c for line in section.splitlines() if line.startswith("### ") for c in re.findall(r"`([^`]+)`", line)}
    assert headed == set(C.CHECKS)


def test_profile_by_name_and_bad_profile():
    pol = P.merge_policy(None, {"profiles": {"h100": PROFILE}})
    fs, _unused = C.evaluate_node(facts(gpus=[gpu(i) for i in range(7)]), "h100", pol, None, NOW, HOST)
    assert only(fs, "gpu.missing", "node", "count")
    with pytest.raises(P.PolicyError):
        run(facts(), {"gpu_cnt": 8})


@pytest.mark.parametrize(
    "garbage",
    [
        {},
        {"gpu": "x", "kernel": [], "ib": None, "bmc": 3, "node": {"mounts": "x", "services": []}, "errors": "e"},
        {"gpu": {"gpus": [None, 1, {"index": "x", "temperature": {"gpu_c": "hot"}, "nvlink": {"links": [1]}}]}},
        {
            "kernel": {
                "events": [
                    {"kind": "xid", "code": "79"},
                    {"kind": "xid", "code": None},
                    None,
                    {"kind": "sxid", "timestamp": "garbage"},
                ]
            }
        },
        {"ib": {"hcas": [{"ports": [{"counters": {"symbol_error": "x"}, "saturated": None}]}], "collected_at": "x"}},
        {"bmc": {"sensors": [{"status": "critical"}], "sel": [{"time": 5}], "redfish": {"systems": [1]}}},
        {"slurm": {"nodes": [{"name": HOST, "flags": None, "state": None}]}, "dcgm": {"gpus": {"0": "fail"}}},
    ],
)
def test_garbage_facts_never_raise(garbage):
    fs, st = run(garbage, PROFILE, state={"ib": "bad", "active_faults": {"x": 1}})
    assert isinstance(fs, list) and isinstance(st, dict)
    assert not only(fs, "collector.error", "collector:policy")  # no check crashed


def test_state_argument_is_not_mutated_and_whole_cluster_shape_works():
    st = S.empty_host_state(HOST)
    before = copy.deepcopy(st)
    _unused, new = run(facts(events=[xid(79)]), state=st)
    assert st == before and new["active_faults"]
    _unused, new2 = run(facts(), state={"hosts": {HOST: new}})
    assert only(run(facts(), state={"hosts": {HOST: new}})[0], "gpu.xid")
    assert new2["active_faults"]


def test_an_owned_state_gives_the_same_findings_and_state_and_is_the_one_changed():
    """evaluate_node(own_state=True) (the inspection's workers, issue 17) skips the copy, nothing else: the same
    findings and new state as a copied run, over two runs in a row (counters, active faults, escalation)."""
    first = facts(events=[xid(79)], hcas=None)
    later = facts(events=[xid(79), xid(48, index=1)])
    copied = S.empty_host_state(HOST)
    owned = S.empty_host_state(HOST)
    for f, now in ((first, NOW), (later, "2026-12-02T16:00:00Z")):
        kept = copy.deepcopy(copied)
        fs_c, copied_new = C.evaluate_node(f, PROFILE, P.DEFAULT_POLICY, copied, now, HOST)
        assert copied == kept  # the default still leaves its argument alone
        fs_o, owned_new = C.evaluate_node(f, PROFILE, P.DEFAULT_POLICY, owned, now, HOST, own_state=True)
        assert fs_o == fs_c and owned_new == copied_new and fs_o
        # the owned state's sections go on into the new state (not copied); the copied run's never do
        sections = [k for k, v in owned.items() if isinstance(v, (dict, list))]
        assert any(owned_new.get(k) is owned[k] for k in sections)
        assert not any(copied_new.get(k) is copied[k] for k in sections)
        copied, owned = copied_new, owned_new


def test_ids_are_unique_and_stable():
    evs = [xid(79), xid(94, index=1)]
    a = [f["id"] for f in run(facts(events=evs))[0]]
    b = [f["id"] for f in run(facts(events=evs))[0]]
    assert a == b and len(set(a)) == len(a)
    assert all(re.match(r"^%s:[a-z_.]+:[^:]+(:[^:]+)*:" % HOST, i) for i in a)


def test_capture_analysed_later_uses_collected_at_for_windows():
    f = facts(events=[xid(79)], collected_at="2026-12-02T10:00:00Z")
    fs, _unused = C.evaluate_node(f, None, P.DEFAULT_POLICY, None, "2026-12-09T08:00:00Z", HOST)
    assert only(fs, "gpu.xid", "gpu0", 79)
    assert only(fs, "gpu.xid")[0]["respond_by"] == "2026-12-09T08:30:00Z"


_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=True), st.text(max_size=8))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@seed(20261202)
@given(
    st.recursive(
        _leaf,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(
                st.sampled_from(
                    [
                        "gpu",
                        "gpus",
                        "kernel",
                        "events",
                        "ib",
                        "hcas",
                        "ports",
                        "counters",
                        "bmc",
                        "sensors",
                        "sel",
                        "node",
                        "mounts",
                        "services",
                        "errors",
                        "kind",
                        "code",
                        "state",
                        "status",
                        "index",
                        "bus_id",
                        "timestamp",
                        "readable",
                        "ecc",
                        "volatile",
                        "remapped_rows",
                        "nvlink",
                        "links",
                        "dcgm",
                        "slurm",
                        "nodes",
                        "collected_at",
                        "throttle",
                        "active",
                        "pcie",
                        "temperature",
                        "redfish",
                    ]
                ),
                children,
                max_size=6,
            ),
        ),
        max_leaves=30,
    )
)
def test_fuzz_evaluate_node_never_raises(doc):
    fs, new = C.evaluate_node(doc if isinstance(doc, dict) else {"gpu": doc}, None, P.DEFAULT_POLICY, None, NOW, HOST)
    assert isinstance(fs, list) and isinstance(new, dict)
    assert all(f["severity"] in P.SEVERITIES and f["action"] in P.ACTIONS for f in fs)
