# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.isolation_guard: validation, decide/claim, release, check mode and diff."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cluster.plugins.action import isolation_guard as A
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state_store as _state_store

SHOW = "\n".join(
    "NodeName=gpu-node-%02d State=%s Partitions=gpu Gres=gpu:8" % (i, "IDLE+DRAIN" if i == 8 else "IDLE")
    for i in range(1, 9)
)
STALE = SHOW.replace("IDLE+DRAIN", "IDLE")


@pytest.fixture
def slurm(slurm_view):
    """Slurm as the guard reads it (tests/unit/plugins/conftest.py): every node IDLE unless a test sets it."""
    slurm_view.set(STALE)
    return slurm_view


def _decide(tmp_path, slurm, **extra):
    args = {"nodes": ["gpu-node-01"], "scontrol_path": slurm.path, "state_dir": str(tmp_path), "run_id": "r"}
    args.update(extra)
    return {k: v for k, v in args.items() if v is not None}  # None: the argument is not given


def _history(tmp_path):
    """The guard's claims in the store of the state directory (its embedded SQLite file)."""
    store = _state_store.open_state(str(tmp_path))
    try:
        return store.load_history()
    finally:
        store.close()


@pytest.mark.parametrize(
    "req,msg",
    [
        ({"policy": {"window_s": -5}}, "window_s must be >= 0"),
        ({"policy": {"max_share_cluster": 2}}, "max_share_cluster must be in (0, 1]"),
        ({"policy": {"windows": 0}}, "unknown guard setting 'windows'"),
        ({"action": "drop"}, "value of action must be one of: decide, release"),
        ({"state_dir": ""}, "needs a state directory"),
        ({"nodes": None}, "missing: nodes"),
        ({"scontrol_path": ""}, "scontrol_path must not be empty"),
        ({"nodes": "gpu-node-01,gpu-node-02", "racks": "rack-1"}, "racks"),
        ({"action": "release", "run_id": None}, "missing: run_id"),
        ({"action": "release", "state_dir": ""}, "needs a state directory"),
        ({"action": "release", "done": ["gpu-node-01"], "failed": ["gpu-node-01"]}, "both done and failed"),
        ({"lock_timeout": "soon"}, "lock_timeout"),
    ],
)
def test_refuses_bad_arguments_and_settings_before_any_claim(tmp_path, run_action, monkeypatch, slurm, req, msg):
    monkeypatch.chdir(tmp_path)  # an empty state_dir must not become the current directory
    out = run_action(A, _decide(tmp_path, slurm, **req))
    assert out["failed"] is True and msg in out["msg"], out
    assert not (tmp_path / "isolation").exists() and not (tmp_path / "locks").exists()


def test_unparseable_scontrol_output_is_a_clear_failure(tmp_path, run_action, slurm):
    slurm.set("State=IDLE without a node name")
    out = run_action(A, _decide(tmp_path, slurm))
    assert out["failed"] is True and out["msg"].startswith("isolation_guard: isolation guard:")
    assert _history_or_none(tmp_path) is None  # nothing claimed


def test_a_failing_scontrol_is_a_clear_failure_and_claims_nothing(tmp_path, run_action, slurm):
    slurm.fail("Unable to contact slurm controller (connect failure)")
    out = run_action(A, _decide(tmp_path, slurm))
    assert out["failed"] is True and "Unable to contact slurm controller (connect failure)" in out["msg"], out
    assert "show node failed (rc 1)" in out["msg"] and "Traceback" not in out["msg"]
    assert _history_or_none(tmp_path) is None
    # the lock was given back: the next run decides
    slurm.failing.unlink()
    assert run_action(A, _decide(tmp_path, slurm))["allowed"] == ["gpu-node-01"]


def _history_or_none(tmp_path):
    return _history(tmp_path) or None


def test_decide_claims_the_allowed_nodes_worst_severity_first(tmp_path, run_action, slurm):
    findings = [{"host": "gpu-node-03", "severity": "P0"}, {"host": "gpu-node-01", "severity": "P3"}]
    slurm.set(SHOW)
    args = _decide(tmp_path, slurm, nodes=["gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-08"],
                   findings=findings, racks={"gpu-node-01": "r1"}, ticket="T-1")  # fmt: skip
    out = run_action(A, args)
    # 25 % of 8 = 2, gpu-node-08 already drained counts: one more, the P0 one
    assert out["changed"] is True and out["allowed"] == ["gpu-node-03"]
    assert out["already_isolated"] == ["gpu-node-08"]
    assert [r["node"] for r in out["refused_by_guard"]] == ["gpu-node-01", "gpu-node-02"]
    assert out["limits"]["cluster"] == 2 and out["limits"]["rack:r1"] == 0 or out["limits"]["rack:r1"] == 1
    assert "diff" not in out
    assert [(e["node"], e["run_id"], e["ticket"], e["state"]) for e in _history(tmp_path)] == [
        ("gpu-node-03", "r", "T-1", "claimed")
    ]


def test_check_mode_decides_but_claims_and_writes_nothing(tmp_path, run_action, slurm):
    sd = tmp_path / "state"
    out = run_action(A, _decide(sd, slurm, nodes=["gpu-node-01", "gpu-node-02", "gpu-node-03"]), check_mode=True,
                     diff=True)  # fmt: skip
    assert slurm.reads == 1  # Slurm is read in check mode too (read-only)
    assert out["changed"] is True and out["allowed"] == ["gpu-node-01", "gpu-node-02"]
    assert out["diff"] == {"before": {"claimed": []}, "after": {"claimed": ["gpu-node-01", "gpu-node-02"]}}
    assert _history(sd) == [] and not (sd / "isolation").exists()  # no claim, no lock, no history file
    # nothing allowed: nothing would change
    slurm.set(SHOW)
    full = run_action(A, _decide(sd, slurm, nodes=["gpu-node-08"]), check_mode=True)
    assert full["changed"] is False and full["already_isolated"] == ["gpu-node-08"]


def test_diff_shows_the_open_claims_before_and_after(tmp_path, run_action, slurm):
    run_action(A, _decide(tmp_path, slurm, run_id="a"))
    out = run_action(A, _decide(tmp_path, slurm, nodes=["gpu-node-02", "gpu-node-03"], run_id="b"), diff=True)
    assert out["allowed"] == ["gpu-node-02"] and out["claimed"] == ["gpu-node-01"]
    assert out["diff"] == {"before": {"claimed": ["gpu-node-01"]}, "after": {"claimed": ["gpu-node-01", "gpu-node-02"]}}


def test_release_done_and_failed_and_check_mode(tmp_path, run_action, slurm):
    run_action(A, _decide(tmp_path, slurm, nodes=["gpu-node-01", "gpu-node-02"], run_id="a"))
    rel = {"action": "release", "state_dir": str(tmp_path), "run_id": "a", "done": ["gpu-node-01"],
           "failed": ["gpu-node-02", "gpu-node-05"]}  # fmt: skip
    dry = run_action(A, rel, check_mode=True, diff=True)
    assert dry["changed"] is True and dry["released"] == {"gpu-node-01": "done", "gpu-node-02": "failed"}
    assert dry["not_claimed"] == ["gpu-node-05"]
    assert dry["diff"]["before"] == {"claims": {"gpu-node-01": "claimed", "gpu-node-02": "claimed"}}
    assert {e["state"] for e in _history(tmp_path)} == {"claimed"}  # check mode wrote nothing
    out = run_action(A, rel)
    assert out["changed"] is True and out["released"] == dry["released"]
    assert {e["node"]: e["state"] for e in _history(tmp_path)} == {"gpu-node-01": "done", "gpu-node-02": "failed"}
    again = run_action(A, rel)
    assert again["changed"] is False and again["released"] == {}
    assert again["not_claimed"] == ["gpu-node-01", "gpu-node-02", "gpu-node-05"]


def test_override_allows_and_records_the_reason(tmp_path, run_action, slurm):
    args = _decide(tmp_path, slurm, nodes=["gpu-node-01", "gpu-node-02", "gpu-node-03"], override_reason="rack fire")
    out = run_action(A, args)
    assert out["allowed"] == ["gpu-node-01", "gpu-node-02", "gpu-node-03"] and out["overridden"] is True
    assert [w["node"] for w in out["would_refuse"]] == ["gpu-node-03"]
    assert {e["override_reason"] for e in _history(tmp_path)} == {"rack fire"}
