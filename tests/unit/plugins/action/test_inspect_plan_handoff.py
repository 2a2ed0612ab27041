# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan hands the captured targets' variables to the evaluation (issue 17, _plan_handoff): the evaluation's
input is exactly what it reads without the handoff, it reads only the live targets' variables, and every handoff
that is not exactly this run's falls back to reading them all."""

from __future__ import annotations

import datetime
import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.gpuops.cluster.plugins.action import inspect_cluster
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import collect as _collect
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import (
    pipeline as _inspect,
    plan_handoff as _plan_handoff,
)
from sim_inventory import gpu_nodes

REPO = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(REPO / "tools"))
from simcluster import generate as G  # noqa: E402

LIVE = ["live-1", "live-2"]


class Recording(dict):
    """``hostvars`` that records which hosts' variables were read (each read is a merge in ansible-core)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.read = []

    def __getitem__(self, host):
        self.read.append(host)
        return super().__getitem__(host)

    def get(self, host, default=None):
        return self[host] if host in self else default


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    out = tmp_path_factory.mktemp("handoff") / "sim"
    G.generate(10, str(out), 7, "default")
    own, group, every = gpu_nodes(out)
    hostvars = {}
    for host, v in own.items():
        hostvars[host] = dict(every, **group, **v, inventory_hostname=host)
    first = next(iter(hostvars.values()))
    facts = _collect.collect_all(capture_dir=first["gpuops_capture_dir"])
    for host in LIVE:  # live targets: their collection registered, no capture directory
        hv = {k: v for k, v in first.items() if k not in ("gpuops_capture_dir", "gpuops_previous_capture_dir")}
        hostvars[host] = dict(hv, inventory_hostname=host, __inspect_collect={"facts": facts})
    hostvars["cap-odd"] = dict(first, inventory_hostname="cap-odd", gpuops_rack="rack-9", gpuops_policy_overrides={
        "thresholds": {"temperature": {"gpu_slowdown_margin_c": 7}}})  # fmt: skip
    return hostvars


def _inputs(monkeypatch):
    """Record inspect_nodes' hosts argument (the pipeline's input) while running it."""
    seen = []
    real = _inspect.inspect_nodes

    def spy(hosts, **kw):
        seen.append(json.loads(json.dumps(hosts, sort_keys=True, default=str)))
        return real(hosts, **kw)

    monkeypatch.setattr(_inspect, "inspect_nodes", spy)
    return seen


def _plan(run_action, hostvars, state_dir, **extra):
    args = dict({"targets": sorted(hostvars), "validate_only": True, "state_dir": state_dir}, **extra)
    return run_action(inspect_cluster, args, task_vars={"hostvars": Recording(hostvars)}, **{})


def _evaluate(run_action, hostvars, state_dir, report_dir, token, check_mode=False):
    hv = Recording(hostvars)
    args = {"targets": sorted(hostvars), "state_dir": state_dir, "report_dir": report_dir, "plan_token": token}
    res = run_action(inspect_cluster, args, check_mode=check_mode, task_vars={"hostvars": hv})
    return res, hv.read


def test_the_evaluation_takes_the_plans_reading_and_reads_only_the_live_targets(
    cluster, run_action, tmp_path, monkeypatch
):
    seen = _inputs(monkeypatch)
    state = str(tmp_path / "state")
    plan = _plan(run_action, cluster, state)
    token = plan["plan_token"]
    assert len(token) == 32 and plan["live"] == LIVE
    path = Path(state, "cache", "plan", token + ".json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    doc = json.loads(path.read_text())
    assert sorted(doc["captured"]) == sorted(set(cluster) - set(LIVE))  # the live ones are read at evaluation
    handed, read = _evaluate(run_action, cluster, state, str(tmp_path / "r1"), token)
    assert handed["timing"]["plan_reused"] is True
    assert not path.exists()  # one run, one reading
    assert sorted(set(read)) == LIVE  # no captured target's variables merged again
    plain, read_all = _evaluate(run_action, cluster, str(tmp_path / "state2"), str(tmp_path / "r2"), "")
    assert plain["timing"]["plan_reused"] is False and set(read_all) == set(cluster)
    assert seen[0] == seen[1]  # the pipeline's input is the same, profiles, overrides and platform included
    assert seen[0]["cap-odd"]["rack"] == "rack-9" and seen[0]["cap-odd"]["policy_overrides"]
    for key in ("status", "severity"):
        assert handed["summary"][key] == plain["summary"][key]
    assert {h: n["status"] for h, n in handed["nodes"].items()} == {h: n["status"] for h, n in plain["nodes"].items()}
    assert handed["without_class"] == plain["without_class"]


@pytest.mark.parametrize(
    "spoil",
    ["../../../etc/passwd", "not-a-token", "0" * 32, "other-targets", "schema", "captured-not-a-target", "garbage",
     "link", "platform"],
)  # fmt: skip
def test_a_handoff_that_is_not_exactly_this_runs_is_ignored_and_every_target_is_read(
    cluster, run_action, tmp_path, monkeypatch, spoil
):
    seen = _inputs(monkeypatch)
    state = str(tmp_path / "state")
    token = _plan(run_action, cluster, state)["plan_token"]
    path = Path(state, "cache", "plan", token + ".json")
    doc = json.loads(path.read_text())
    if spoil in ("../../../etc/passwd", "not-a-token", "0" * 32):
        token = spoil
    elif spoil == "other-targets":
        doc["targets"] = doc["targets"][:-1]
    elif spoil == "schema":
        doc["schema"] = "gpuops.inspect-plan/v0"
    elif spoil == "captured-not-a-target":
        doc["captured"]["intruder"] = {"capture_dir": "/etc"}
    elif spoil == "platform":
        doc["platform"] = ["not", "a", "dict"]
    if spoil == "garbage":
        path.write_text('{"schema": ')
    elif spoil == "link":
        real = path.with_suffix(".real")
        path.rename(real)
        path.symlink_to(real)
    else:
        path.write_text(json.dumps(doc))
    res, read = _evaluate(run_action, cluster, state, str(tmp_path / "r1"), token)
    assert res["timing"]["plan_reused"] is False and set(read) == set(cluster)
    assert "intruder" not in seen[0] and res["summary"]["nodes"] == len(cluster)


def test_no_handoff_without_a_state_dir_in_check_mode_or_for_values_json_would_change(cluster, run_action, tmp_path):
    assert "plan_token" in _plan(run_action, cluster, None)  # the key is there, empty
    assert _plan(run_action, cluster, None)["plan_token"] == ""
    state = str(tmp_path / "state")
    res = run_action(
        inspect_cluster,
        {"targets": sorted(cluster), "validate_only": True, "state_dir": state},
        check_mode=True,
        task_vars={"hostvars": cluster},
    )
    assert res["plan_token"] == "" and not Path(state, "cache", "plan").exists()
    odd = dict(cluster)
    for rack in (("row-1", 9), datetime.date(2026, 12, 5)):  # a tuple JSON gives back as a list; a date
        odd["cap-odd"] = dict(cluster["cap-odd"], gpuops_rack=rack)
        assert _plan(run_action, odd, state)["plan_token"] == ""
    assert not list(Path(state, "cache", "plan").glob("*.json"))


def test_plans_left_by_runs_that_stopped_are_pruned_after_a_day(tmp_path):
    state = str(tmp_path)
    plat = {"capture_dir": None, "scheduler": None, "storage": None, "hosts": []}
    old = _plan_handoff.write(state, ["a"], {"a": None}, ["a"], {}, plat)
    new = _plan_handoff.write(state, ["a"], {"a": None}, ["a"], {}, plat)
    d = Path(state, "cache", "plan")
    day_ago = time.time() - _plan_handoff.MAX_AGE_S - 60
    os.utime(d / (old + ".json"), (day_ago, day_ago))
    assert _plan_handoff.prune(state) == 1
    assert sorted(p.name for p in d.iterdir()) == [new + ".json"]
    assert _plan_handoff.read(state, new, ["a"])["profiles"] == {"a": None}
    assert _plan_handoff.read(state, new, ["a"]) is None  # read once
