# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import cluster as K
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P

NOW = "2026-12-02T10:00:00Z"


def fnd(host, check, severity="P1", component="node", code=None, action="isolate", **ev):
    return {
        "check": check,
        "severity": severity,
        "component": component,
        "code": code,
        "message": "m",
        "action": action,
        "rule": "r",
        "respond_by": None,
        "evidence": dict(ev),
        "host": host,
        "cause": None,
        "id": "%s:%s:%s:%s" % (host, check, component, code or ""),
    }


def cluster(n_racks=4, per_rack=4):
    """n_racks racks of per_rack nodes; leaf == rack (one leaf per rack); power domains span two racks."""
    nodes = {}
    for r in range(n_racks):
        for i in range(per_rack):
            h = "r%dn%d" % (r, i)
            nodes[h] = {"findings": [], "rack": "rack-%d" % r, "leaf": "leaf-%d" % r, "power": "pdu-%d" % (r // 2)}
    return nodes


def correlations(out):
    """The correlation P0s (a domain sharing one failing check), not the domains-down ones."""
    return [f for f in out if f["check"] in ("cluster.leaf", "cluster.rack", "cluster.power") and f["code"] != "down"]


def fail(nodes, hosts, *args, **kw):
    """Give each of ``hosts`` one finding ``fnd(host, *args, **kw)``."""
    for h in hosts:
        nodes[h]["findings"] = [fnd(h, *args, **kw)]


@pytest.mark.parametrize(
    "findings, status",
    [
        ([], "healthy"),
        ([fnd("h", "gpu.ecc", "P3")], "healthy"),
        ([fnd("h", "ib.errors", "P2")], "degraded"),
        ([fnd("h", "collector.error", "P2", required=False)], "degraded"),
        ([fnd("h", "collector.error", "P2", required=True), fnd("h", "ib.errors", "P2")], "error"),
        ([fnd("h", "collector.error", "P2", required=True), fnd("h", "gpu.xid", "P1")], "faulty"),
        ([fnd("h", "gpu.xid", "P1"), fnd("h", "node.unreachable", "P1")], "unreachable"),
        (None, "healthy"),
    ],
)
def test_node_status(findings, status):
    assert K.node_status(findings) == status


def test_dead_leaf_is_one_p0_and_members_are_not_drained():
    nodes = cluster()
    fail(nodes, ["r1n%d" % i for i in range(4)], "ib.port_state", component="mlx5_0/1", code="DOWN", action="reseat")
    out = K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW)
    corr = correlations(out)
    assert len(corr) == 1
    p0 = corr[0]
    assert p0["severity"] == "P0" and p0["component"] == "leaf:leaf-1" and p0["code"] == "ib.port_state"
    assert p0["host"] is None and p0["respond_by"] == "2026-12-02T10:15:00Z"
    assert p0["id"] == "cluster:cluster.leaf:leaf:leaf-1:ib.port_state"
    for i in range(4):
        f = nodes["r1n%d" % i]["findings"][0]
        assert f["action"] == "monitor" and f["cause"] == p0["id"]
        assert f["evidence"]["original_action"] == "reseat" and f["severity"] == "P1"
    # the whole rack is faulty too, but it is already explained: no second P0 for the same nodes
    assert not [f for f in out if f["code"] == "down"]


def test_three_independent_gpu_faults_in_different_racks_stay_node_findings():
    nodes = cluster()
    fail(nodes, ["r%dn0" % r for r in range(3)], "gpu.xid", component="gpu1", code="79", action="reboot")
    out = K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW)
    assert out == []
    assert all(nodes["r%dn0" % r]["findings"][0]["action"] == "reboot" for r in range(3))


def test_correlation_needs_half_the_domain_and_three_nodes():
    nodes = cluster(n_racks=1, per_rack=8)
    fail(
        nodes, ["r0n%d" % i for i in range(3)], "ib.link_flap", "P2", component="mlx5_0/1", code="link_downed"
    )  # 3 of 8 < half
    assert not correlations(K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW))
    nodes = cluster(n_racks=1, per_rack=4)
    fail(nodes, ["r0n%d" % i for i in range(2)], "ib.link_flap", "P2")  # 2 of 4 is half, but fewer than 3 nodes
    assert not K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW)
    # both thresholds are policy data
    pol = P.merge_policy(None, {"correlation": {"min_nodes": 2}})
    out = K.evaluate_cluster(nodes, pol, NOW)
    assert [f["component"] for f in out] == ["leaf:leaf-0"]


def test_p3_and_uncorrelated_checks_do_not_correlate():
    nodes = cluster(n_racks=1, per_rack=4)
    for h in nodes:
        nodes[h]["findings"] = [fnd(h, "ib.errors", "P3", code="symbol_error"), fnd(h, "gpu.driver", "P3")]
    assert K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW) == []


def test_leak_prefers_rack_and_power_issue_across_two_racks_names_the_power_domain():
    nodes = cluster()
    fail(
        nodes,
        ["r2n%d" % i for i in range(4)],
        "bmc.leak",
        component="bmc/Tray1",
        code="Critical",
        action="emergency_shutdown",
    )
    assert [f["component"] for f in correlations(K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW))] == ["rack:rack-2"]
    nodes = cluster()
    hosts = ["r%dn%d" % (r, i) for r in (0, 1) for i in range(4)]
    fail(nodes, hosts, "gpu.throttle", "P2", code="hw_power_brake_slowdown", action="monitor")
    assert [f["component"] for f in correlations(K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW))] == ["power:pdu-0"]


def test_subnet_manager_p0():
    nodes = cluster()
    hosts = ["r0n0", "r1n1", "r2n2", "r3n3"]
    fail(nodes, hosts, "ib.port_state", component="mlx5_0/1", code="INIT")
    out = K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW)
    sm = [f for f in out if f["check"] == "cluster.subnet_manager"]
    assert len(sm) == 1 and sm[0]["component"] == "subnet_manager" and sm[0]["evidence"]["hosts"] == sorted(hosts)
    assert all(nodes[h]["findings"][0]["cause"] == sm[0]["id"] for h in hosts)
    assert not [
        f for f in out if f["check"] in ("cluster.leaf", "cluster.rack", "cluster.power") and f["code"] != "down"
    ]


def test_rack_down_and_cluster_capacity():
    nodes = cluster(n_racks=4, per_rack=2)
    fail(nodes, ["r3n%d" % i for i in range(2)], "node.unreachable")
    out = K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW)
    down = [f for f in out if f["code"] == "down"]
    # leaf-3 and rack-3 have the same members: one P0 (leaf first in the default order), not two
    assert [f["component"] for f in down] == ["leaf:leaf-3"]
    assert nodes["r3n0"]["findings"][0]["cause"] == "cluster:cluster.leaf:leaf:leaf-3:down"
    assert nodes["r3n0"]["findings"][0]["action"] == "monitor"
    cap = [f for f in out if f["check"] == "cluster.capacity"]
    assert cap and cap[0]["evidence"]["down"] == ["r3n0", "r3n1"] and cap[0]["severity"] == "P0"  # 2/8 = 25%


def test_cluster_capacity_threshold_and_status_given():
    nodes = {"h%d" % i: {"findings": [], "status": "healthy"} for i in range(10)}
    nodes["h0"]["status"] = "faulty"
    nodes["h1"]["status"] = "unreachable"
    assert K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW) == []  # 20% < 25%
    nodes["h2"]["status"] = "faulty"
    out = K.evaluate_cluster(nodes, P.DEFAULT_POLICY, NOW)
    assert [f["check"] for f in out] == ["cluster.capacity"]


def test_missing_domains_and_empty_cluster():
    assert K.evaluate_cluster({}, None, NOW) == []
    nodes = {"a": {"findings": [fnd("a", "node.unreachable")]}, "b": None}
    assert K.evaluate_cluster(nodes, None, NOW) == []


def test_node_status_with_facts_and_policy():
    f = [fnd("h", "collector.error", "P2", component="collector:gpu", code="parse")]
    assert K.node_status(f) == "degraded"  # no evidence.required, no policy
    assert K.node_status(f, None, P.DEFAULT_POLICY) == "error"
    facts = {"gpu": {"errors": [{"domain": "gpu", "kind": "parse"}]}}
    assert K.node_status([], facts, P.DEFAULT_POLICY) == "error"
    gpu_ok = {"source": "nvidia-smi-xml", "gpus": [], "errors": []}
    assert K.node_status([], {"gpu": gpu_ok, "ib": {"errors": [{"kind": "parse"}]}}, P.DEFAULT_POLICY) == "healthy"
    # the required gpu domain not read at all: the node is not healthy, it is unknown
    assert K.node_status([], {"ib": {"errors": [{"kind": "parse"}]}}, P.DEFAULT_POLICY) == "error"


def test_blind_reason_names_the_needed_unknown_domains_only():
    domains = {
        "gpu": {"state": "unknown", "needed": True, "reason": "not captured"},
        "ib": {"state": "unknown", "needed": True, "reason": "not captured"},
        "bmc": {"state": "unknown", "needed": False, "reason": "timeout"},
    }
    assert K._blind_reason(domains, {"gpu", "ib", "bmc"}) == "could not read gpu, ib: not captured"
    assert K._blind_reason(domains, {"bmc"}) is None


def test_required_collector_error_from_findings_or_facts():
    policy = {"collector_errors": {"required_domains": ["gpu"]}}
    f = {"check": "collector.error", "component": "collector:gpu", "message": "gpu collector timeout", "evidence": {}}
    assert K._required_collector_error([f], None, policy) == "gpu collector timeout"
    assert K._required_collector_error([dict(f, component="collector:ib")], None, policy) is None
    assert K._required_collector_error([], {"gpu": {"errors": [{"kind": "x"}]}}, policy) == "gpu collector errors"
    assert K._required_collector_error([], {"gpu": {"errors": []}}, policy) is None
