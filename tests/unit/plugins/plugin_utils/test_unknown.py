# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
""" "I could not see" is not "it is broken" (issue 12, items 4 and 5).

A fact domain that could not be read is unknown: its checks do not fire, the node is ``error`` (not ``faulty``,
not ``healthy``), no finding from it carries a disruptive action, automation never targets it; a domain read
completely that shows a fault is still a fault. A node class that names no profile stops the run by name.
Captures come from simnode states through the real collectors (as in test_onboard.py).
"""

from __future__ import annotations

import copy
import datetime
import os
import random
import sys
import types
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.cluster.plugins.plugin_utils import checks as C
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import cluster as K
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import collect as _collect
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P

REPO = Path(__file__).resolve().parents[4]
TOOLS = str(REPO / "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

from simnode import faults  # noqa: E402
from simnode.capture import capture  # noqa: E402
from simnode.state import default_state  # noqa: E402

NOW = "2026-12-02T10:00:00Z"
NOW_DT = datetime.datetime(2026, 12, 2, 10, 0, tzinfo=datetime.timezone.utc)
CLASS = "h100-sxm-8"
#: the simulated cluster's profile, read from where the inventory keeps it
SIM_GROUP_VARS = REPO / "inventories" / "sim" / "group_vars" / "gpu_nodes.yml"
PROFILE = yaml.safe_load(SIM_GROUP_VARS.read_text(encoding="utf-8"))["gpuops_profiles"][CLASS]
PROFILES = {CLASS: PROFILE}


def disruptive(findings):
    return [f for f in findings if f["action"] in P.DISRUPTIVE_ACTIONS]


def cap(tmp_path, name="gpu-node-01", fault=None, **params):
    state = default_state(name)
    if fault:
        faults.apply(state, fault, random.Random(1), **params)
    d = str(tmp_path / ("cap-%s-%s" % (name, fault or "ok")))
    capture(state, d)
    return d


def inspect(hosts, **kw):
    return _inspect.inspect_nodes(hosts, profiles=PROFILES, now=NOW_DT, include_facts=False, **kw)


# ------------------------------------------------------------------------- item 4: missing evidence


def test_missing_capture_dir_is_error_with_no_disruptive_finding_and_no_isolation_target(tmp_path):
    """Regression (item 4): this read 'faulty' with P1 isolate (0 of 8 GPUs, IB ports, fabric manager)."""
    missing = str(tmp_path / "no-such-capture")
    report = inspect({"gpu-node-02": {"capture_dir": missing, "node_class": CLASS}})
    node = report["nodes"]["gpu-node-02"]
    assert node["status"] == "error"
    assert missing in node["status_reason"] and "does not exist" in node["status_reason"]
    assert [(f["check"], f["component"]) for f in node["findings"]] == [("collector.error", "collector:capture")]
    assert disruptive(node["findings"]) == []
    assert all(d["state"] == "unknown" for d in node["domains"].values())
    assert _inspect.actions_by_host(report, "isolate") == {}
    assert report["summary"]["status"]["error"] == 1 and report["summary"]["status"]["faulty"] == 0


def test_empty_capture_dir_is_error_and_says_no_evidence(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    node = inspect({"h": {"capture_dir": str(empty), "node_class": CLASS}})["nodes"]["h"]
    assert node["status"] == "error" and disruptive(node["findings"]) == []
    assert "no evidence file" in node["findings"][0]["message"]


def test_remembered_fault_is_not_acted_on_while_nothing_can_be_read(tmp_path):
    """An earlier reset_gpu fault stays reported (nothing proves it cleared) but its action is withheld."""
    policy = P.DEFAULT_POLICY
    facts = _collect.collect_all(capture_dir=cap(tmp_path, fault="xid48"))
    fs, state = C.evaluate_node(facts, PROFILE, policy, None, NOW, "h")
    assert any(f["action"] == "reset_gpu" for f in fs)
    gone = _collect.collect_all(capture_dir=str(tmp_path / "typo"))
    fs2, state2 = C.evaluate_node(gone, PROFILE, policy, state, NOW, "h")
    kept = [f for f in fs2 if (f["evidence"] or {}).get("still_active")]
    assert kept, fs2
    assert disruptive(fs2) == []
    assert {f["evidence"]["withheld_action"] for f in kept} >= {"reset_gpu"}
    assert all("withheld" in f["rule"] for f in kept)
    assert K.node_status(fs2, gone, policy, C.domain_states(gone, PROFILE, policy)) == "error"
    # the state still holds the real fault: when the evidence is back it acts again
    assert any(a["finding"]["action"] == "reset_gpu" for a in state2["active_faults"].values())


def test_collector_that_raised_is_unknown_other_domains_still_evaluated(tmp_path, monkeypatch):
    """The ib collector raises; its checks stay silent; the PSU failure in the same node's BMC data is found."""

    def boom(**_kw):
        raise RuntimeError("driver crashed")

    monkeypatch.setitem(_collect.DOMAIN_MODULES, "ib", types.SimpleNamespace(collect=boom))
    monkeypatch.setattr(_collect, "_cache", {})
    monkeypatch.setattr(_collect, "_params", {})
    d = cap(tmp_path, fault="psu_failure")
    report = inspect({"h": {"capture_dir": d, "node_class": CLASS}})
    node = report["nodes"]["h"]
    assert node["domains"]["ib"]["state"] == "unknown" and "driver crashed" in node["domains"]["ib"]["reason"]
    assert node["domains"]["bmc"]["state"] == "ok" and node["domains"]["gpu"]["state"] == "ok"
    checks = {(f["check"], f["code"]) for f in node["findings"]}
    assert not [c for c in checks if c[0].startswith("ib.")]  # no "0 of 8 expected IB ports found"
    assert ("collector.error", "internal") in checks
    psu = [f for f in node["findings"] if f["check"] == "bmc.sensor" and "PSU2" in f["component"]]
    assert psu and psu[0]["action"] == "replace"  # read completely: still a fault, with its action
    assert node["status"] == "error" and "ib" in node["status_reason"]


def test_complete_gpu_read_with_seven_of_eight_gpus_is_still_p1_isolate(tmp_path):
    facts = _collect.collect_all(capture_dir=cap(tmp_path, fault="gpu_missing"))
    assert C.domain_states(facts, PROFILE)["gpu"]["state"] == "ok"
    report = inspect({"h": {"capture_dir": cap(tmp_path, fault="gpu_missing"), "node_class": CLASS}})
    node = report["nodes"]["h"]
    count = [f for f in node["findings"] if f["check"] == "gpu.missing" and f["code"] == "count"]
    assert count and (count[0]["severity"], count[0]["action"]) == ("P1", "isolate")
    assert "7 of 8" in count[0]["message"] and "withheld_action" not in count[0]["evidence"]
    assert node["status"] == "faulty"
    assert list(_inspect.actions_by_host(report, "isolate")) == ["h"]


def test_optional_file_missing_is_not_an_error(tmp_path):
    d = cap(tmp_path)
    os.unlink(os.path.join(d, "dcgmi-diag.txt"))
    node = inspect({"h": {"capture_dir": d, "node_class": CLASS}})["nodes"]["h"]
    assert node["status"] == "healthy", node
    assert node["findings"] == []
    assert node["domains"]["dcgm"] == {"state": "unknown", "needed": False, "reason": node["domains"]["dcgm"]["reason"]}


def test_capture_without_the_files_a_profile_needs_is_error_not_fabric_manager_down(tmp_path):
    d = cap(tmp_path)
    os.unlink(os.path.join(d, "node.json"))
    node = inspect({"h": {"capture_dir": d, "node_class": CLASS}})["nodes"]["h"]
    assert not [f for f in node["findings"] if f["check"].startswith("node.")]
    assert node["status"] == "error" and "node" in node["status_reason"]
    # without a profile nothing is expected of the node domain: not an error
    node = _inspect.inspect_nodes({"h": {"capture_dir": d}}, now=NOW_DT, include_facts=False)["nodes"]["h"]
    assert node["status"] == "healthy"


# ------------------------------------------------------------------------- the rules at the checks level


def _facts(**domains):
    f = {
        "schema": "gpuops.facts/v1",
        "mode": "live",
        "collected_at": NOW,
        "gpu": {"source": "nvidia-smi-xml", "count": 0, "gpus": [], "errors": []},
        "ib": {"source": "sysfs", "hcas": [], "errors": []},
        "node": {"source": "live", "services": {}, "mounts": [], "errors": []},
        "errors": [],
    }
    f.update(domains)
    return f


def test_unknown_gpu_domain_raises_no_count_finding_and_withholds_the_timeout_reboot():
    err = {"domain": "gpu", "kind": "timeout", "message": "nvidia-smi timed out after 20 s", "source": "nvidia-smi"}
    f = _facts(gpu={"source": None, "gpus": [], "errors": [err]})
    profile = {"gpu_count": 8, "nvlinks_per_gpu": 18}
    fs, _st = C.evaluate_node(f, profile, P.DEFAULT_POLICY, None, NOW, "h")
    assert [x["check"] for x in fs] == ["collector.error"]
    assert not [x for x in fs if x["check"] == "gpu.missing"]
    ce = [x for x in fs if x["check"] == "collector.error" and x["component"] == "collector:gpu"][0]
    # policy collector_errors.overrides gpu:timeout is P1 reboot: severity kept, the reboot withheld, and why
    assert (ce["severity"], ce["action"]) == ("P1", "monitor")
    assert ce["evidence"]["withheld_action"] == "reboot" and "gpu data unknown" in ce["evidence"]["withheld_because"]
    status, reason = K.node_assessment(fs, f, P.DEFAULT_POLICY, C.domain_states(f, profile))
    assert status == "error" and "gpu" in reason


def test_a_complete_read_showing_nothing_is_evidence_live_ib_without_ports():
    """Live, no IB stack, no collector error: the read was complete -- the profile's ports are missing."""
    fs, _st = C.evaluate_node(_facts(), {"ib_ports": 8}, P.DEFAULT_POLICY, None, NOW, "h")
    miss = [x for x in fs if x["check"] == "ib.port_state" and x["code"] == "missing"]
    assert miss and miss[0]["action"] == "isolate"
    # the same empty domain in a capture means "not captured": unknown, no finding
    fs, _st = C.evaluate_node(
        _facts(mode="capture", ib={"source": None, "hcas": [], "errors": []}),
        {"ib_ports": 8},
        P.DEFAULT_POLICY,
        None,
        NOW,
        "h",
    )
    assert not [x for x in fs if x["check"].startswith("ib.")]


def test_partial_domain_keeps_what_was_read():
    port = {"port": 1, "state": "DOWN", "phys_state": "Polling", "link_layer": "InfiniBand", "counters": {}}
    ib = {
        "source": "ibstat",
        "hcas": [{"name": "mlx5_0", "ports": [port]}],
        "errors": [{"domain": "ib", "kind": "parse", "message": "bad line", "source": "ibstat", "line": 40}],
    }
    f = _facts(ib=ib)
    assert C.domain_states(f)["ib"]["state"] == "partial"
    fs, _st = C.evaluate_node(f, {"ib_ports": ["mlx5_0/1", "mlx5_1/1"]}, P.DEFAULT_POLICY, None, NOW, "h")
    assert [x["code"] for x in fs if x["check"] == "ib.port_state"] == ["DOWN"]  # no "missing" on a partial list


def test_failed_collection_module_is_error_not_dead():
    """The live path's failed collect_info (no facts, one collect error) is read as unknown, not as 0 GPUs."""
    f = {
        "schema": "gpuops.facts/v1",
        "mode": "live",
        "errors": [{"domain": "collect", "kind": "tool_error", "message": "MODULE FAILURE", "source": "x"}],
    }
    fs, _st = C.evaluate_node(f, PROFILE, P.DEFAULT_POLICY, None, NOW, "h")
    assert [x["check"] for x in fs] == ["collector.error"] and disruptive(fs) == []
    assert K.node_status(fs, f, P.DEFAULT_POLICY, C.domain_states(f, PROFILE)) == "error"


def test_every_check_names_its_domain():
    assert set(C.CHECK_DOMAINS) == set(C.CHECKS)
    assert set(v for v in C.CHECK_DOMAINS.values() if v) <= set(C.FACT_DOMAINS)
    assert set(C.PROFILE_DOMAINS) <= set(P.PROFILE_KEYS)


def test_withhold_disruptive_only_touches_disruptive_actions():
    f = {"check": "x", "action": "tune", "evidence": {}, "rule": "r", "message": "m"}
    assert P.withhold_disruptive(f, "why") is False and f["action"] == "tune"
    for action in P.DISRUPTIVE_ACTIONS:
        f = {"check": "x", "action": action, "evidence": None, "rule": "r", "message": "m"}
        assert P.withhold_disruptive(f, "why") is True
        assert f["action"] == P.WITHHELD_ACTION and P.is_withheld(f)
        assert f["evidence"] == {"withheld_action": action, "withheld_because": "why"}


# ------------------------------------------------------------------------- cluster view


def _node(host, status, findings=(), rack="rack-1"):
    return {"findings": list(findings), "status": status, "rack": rack, "leaf": "leaf-1", "power": "pdu-1"}


def test_unknown_nodes_are_not_down_and_are_named():
    nodes = {"n%d" % i: _node("n%d" % i, "error") for i in range(4)}
    out = K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW)
    # a rack of nodes nobody could read is not "rack down", and not capacity lost
    assert [f["check"] for f in out] == ["cluster.unknown"]
    assert out[0]["severity"] == "P2" and out[0]["evidence"]["unknown"] == sorted(nodes)
    nodes = {
        "n%d" % i: _node("n%d" % i, "unreachable" if i < 2 else ("error" if i < 4 else "healthy")) for i in range(8)
    }
    cap_f = [f for f in K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW) if f["check"] == "cluster.capacity"][0]
    assert cap_f["evidence"]["down"] == ["n0", "n1"] and cap_f["evidence"]["unknown"] == ["n2", "n3"]
    assert "2 more could not be inspected" in cap_f["message"]


def test_withheld_findings_take_part_in_no_correlation():
    def f(h):
        x = {
            "check": "ib.port_state",
            "severity": "P1",
            "component": "mlx5_0/1",
            "code": "missing",
            "message": "m",
            "action": "isolate",
            "rule": "r",
            "evidence": {},
            "host": h,
            "cause": None,
            "id": "%s:ib.port_state:mlx5_0/1:missing" % h,
        }
        P.withhold_disruptive(x, "ib data unknown (test)")
        return x

    nodes = {"n%d" % i: _node("n%d" % i, "error", [f("n%d" % i)]) for i in range(4)}
    out = K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW)
    assert not [c for c in out if c["check"] in ("cluster.leaf", "cluster.rack", "cluster.power")]


# ------------------------------------------------------------------------- item 5: node classes


def test_class_typo_stops_the_run_naming_class_and_known_classes(tmp_path):
    """Regression (item 5): 'h100-sxm8' switched every profile check off; an IB port down read healthy."""
    d = cap(tmp_path, fault="ib_port_down")
    good = inspect({"h": {"capture_dir": d, "node_class": CLASS}})["nodes"]["h"]
    assert good["status"] == "faulty" and any(f["check"] == "ib.port_state" for f in good["findings"])
    with pytest.raises(P.PolicyError) as exc:
        inspect({"h": {"capture_dir": d, "node_class": "h100-sxm8"}, "ok": {"capture_dir": d, "node_class": CLASS}})
    msg = str(exc.value)
    assert "h100-sxm8" in msg and "known classes: %s" % CLASS in msg and "host h" in msg


def test_class_from_policy_profiles_and_no_class_is_allowed(tmp_path):
    d = cap(tmp_path, fault="ib_port_down")
    pol = {"profiles": {"site-a": copy.deepcopy(PROFILE)}}
    rep = _inspect.inspect_nodes(
        {"h": {"capture_dir": d, "node_class": "site-a"}}, policy_overrides=pol, now=NOW_DT, include_facts=False
    )
    assert rep["nodes"]["h"]["status"] == "faulty"
    with pytest.raises(P.PolicyError, match="known classes: site-a"):
        _inspect.inspect_nodes({"h": {"capture_dir": d, "node_class": "site-b"}}, policy_overrides=pol, now=NOW_DT)
    # no class at all: inspected without profile checks (the action plugin warns)
    assert _inspect.resolve_profiles({"h": {"capture_dir": d}}, PROFILES, P.DEFAULT_POLICY) == {"h": None}
    # a class while no profile is defined anywhere only keys other data (upgrade baselines): no profile
    assert _inspect.resolve_profiles({"h": {"node_class": CLASS}}, None, P.DEFAULT_POLICY) == {"h": None}


def test_action_plugin_refuses_a_class_typo_before_reading_anything():
    steps = pytest.importorskip("ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.steps")
    from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import StepError

    hv = {
        "a": {"gpuops_node_class": CLASS, "gpuops_profiles": PROFILES, "gpuops_capture_dir": "/nonexistent"},
        "b": {"gpuops_node_class": "h100-sxm8", "gpuops_profiles": PROFILES},
        "c": {"gpuops_profiles": PROFILES},
    }
    with pytest.raises(StepError) as exc:
        steps.classes(hv, ["a", "b", "c"], {})
    assert "'h100-sxm8'" in str(exc.value) and "known classes: %s" % CLASS in str(exc.value)
    profiles, without = steps.classes(hv, ["a", "c"], {})
    assert profiles == {"a": PROFILE, "c": None} and without == ["c"]
    # a class defined in the policy overrides is known
    profiles, _w = steps.classes(hv, ["b"], {"profiles": {"h100-sxm8": {"gpu_count": 8}}})
    assert profiles == {"b": {"gpu_count": 8}}
    # no profile defined anywhere: the class keys other data only (upgrade baselines), profile checks off
    profiles, without = steps.classes({"u": {"gpuops_node_class": CLASS}}, ["u"], {})
    assert profiles == {"u": None} and without == ["u"]


def test_a_gpu_part_skipped_for_time_is_p2_monitor_not_the_timeout_reboot():
    """collectors/gpu.py's record when nvlink was not run after a slow -q -x (issue 40's loaded bed): the GPUs were
    read, nothing hung; docs/checks.md collector.error: a skipped part is the default P2 monitor, not a reboot."""
    err = {"domain": "gpu", "kind": "skipped", "message": "nvidia-smi nvlink -s skipped: timeout budget spent",
           "source": "nvidia-smi-xml"}  # fmt: skip
    f = _facts(gpu={"source": "nvidia-smi-xml", "count": 0, "gpus": [], "errors": [err]})
    fs, _st = C.evaluate_node(f, {}, P.DEFAULT_POLICY, None, NOW, "h")
    ce = [x for x in fs if x["check"] == "collector.error"]
    assert [(x["severity"], x["action"]) for x in ce] == [("P2", "monitor")]
    assert not [x for x in fs if x["action"] in ("reboot", "isolate", "reset_gpu", "replace")]
