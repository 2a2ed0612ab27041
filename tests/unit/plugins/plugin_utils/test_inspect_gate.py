# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 41: what auto-isolation drains (every P0/P1 node fault, whatever the repair action) and the
gpuops_fail_on gate with the nodes that could not be judged (inspect/gate.py, the isolation_targets filter).

Expected values are the issue's: the demo's Xid 79 (action reboot), IB port down and post-FEC BER (reseat) nodes
are drained like an `isolate` one; members of a cluster incident, nodes in status error, withheld findings and a
job's Xid storm are not; `-e gpuops_fail_on=P1` with 16 of 16 nodes in error fails.
"""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cluster.plugins.filter import isolation_targets as F
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import gate


def _f(host, check, severity, action, code=None, cause=None, withheld=False):
    ev = {"withheld_action": "reboot"} if withheld else {}
    return {"host": host, "check": check, "severity": severity, "action": action, "code": code, "cause": cause,
            "evidence": ev}  # fmt: skip


NODES = {
    "xid79": {"status": "faulty", "findings": [_f("xid79", "gpu.xid", "P1", "reboot", "79")]},
    "ibdown": {"status": "faulty", "findings": [_f("ibdown", "ib.port_state", "P1", "reseat", "Down")]},
    "ber": {"status": "faulty", "findings": [_f("ber", "ib.ber", "P1", "reseat", "post_fec")]},
    "fabric": {"status": "faulty", "findings": [_f("fabric", "gpu.fabric", "P1", "isolate")]},
    "leafmember": {
        "status": "faulty",
        "findings": [
            _f(
                "leafmember",
                "ib.port_state",
                "P1",
                "monitor",
                "Down",
                cause="cluster:cluster.leaf:leaf:l1:ib.port_state",
            ),
            _f("leafmember", "gpu.xid", "P1", "reboot", "79"),
        ],
    },
    "blind": {"status": "error", "findings": [_f("blind", "collector.error", "P1", "monitor", withheld=True)]},
    "withheld": {
        "status": "faulty",
        "findings": [
            _f("withheld", "gpu.xid", "P1", "monitor", "79", withheld=True),
            _f("withheld", "x", "P2", "tune"),
        ],
    },
    "storm": {
        "status": "faulty",
        "findings": [_f("storm", "gpu.xid", "P1", "monitor", "45", cause="cluster:job.xid_storm:job:7001:45")],
    },
    "stormhw": {
        "status": "faulty",
        "findings": [
            _f("stormhw", "gpu.xid", "P1", "monitor", "45", cause="cluster:job.xid_storm:job:7001:45"),
            _f("stormhw", "gpu.xid", "P1", "reboot", "79"),
        ],
    },
    "p2only": {"status": "degraded", "findings": [_f("p2only", "gpu.throttle", "P2", "isolate")]},
    "healthy": {"status": "healthy", "findings": []},
}


def test_every_p0_p1_node_fault_is_drained_whatever_the_repair():
    out = gate.auto_isolation_targets(NODES)
    assert out["nodes"] == ["ber", "fabric", "ibdown", "stormhw", "xid79"]
    assert [f["code"] for f in out["by_host"]["stormhw"]] == ["79"]  # the job's Xid 45 is not a reason
    assert set(out["held_back"]) == {"leafmember", "blind", "withheld", "storm"}
    assert "cluster.leaf" in out["held_back"]["leafmember"] and "status error" in out["held_back"]["blind"]
    assert "job" in out["held_back"]["storm"] and "withheld" in out["held_back"]["withheld"]
    assert all(f["severity"] in ("P0", "P1") for f in out["findings"])


def test_the_filter_selects_the_same_with_auto_and_by_action_without():
    result = {"nodes": NODES}
    assert F.isolation_targets(result, auto=True) == gate.auto_isolation_targets(NODES)
    assert F.isolation_targets(result)["nodes"] == ["fabric", "p2only"]  # by action: the old selection


@pytest.mark.parametrize(
    "status, threshold, failed, exceeded",
    [
        ({"error": 16}, "10%", True, True),  # issue 41: 16 of 16 unreadable
        ({"error": 16}, "100%", True, True),  # every node unjudged always fails
        ({"error": 16}, "off", False, False),
        ({"healthy": 15, "error": 1}, "10%", False, False),  # 6.25 % is not more than 10 %
        ({"healthy": 14, "error": 2}, "10%", True, True),  # 12.5 %
        ({"healthy": 15, "error": 1}, "0", True, True),  # any node
        ({"healthy": 14, "error": 2}, "2", False, False),  # not more than 2
        ({"healthy": 16}, "0", False, False),
    ],
)
def test_fail_on_counts_unjudged_nodes(status, threshold, failed, exceeded):
    summary = {"nodes": 16, "status": status, "severity": {"P0": 0, "P1": 0, "P2": 3, "P3": 1}}
    g = gate.fail_on_gate(summary, "P1", threshold)
    assert g["count"] == 0 and g["failed"] is failed and g["unknown"]["exceeded"] is exceeded
    assert g["msg"].endswith("0 finding(s) at or above P1")
    if exceeded:
        assert "%d of 16 nodes could not be judged" % status["error"] in g["msg"]


def test_gate_off_and_defaults():
    assert gate.fail_on_gate({"nodes": 1, "status": {"error": 1}, "severity": {}}, "") is None
    g = gate.fail_on_gate({"nodes": 4, "status": {"error": 4}, "severity": {"P0": 1}}, "P0")
    assert g["failed"] and g["unknown"]["threshold"] == "10%" and g["count"] == 1


@pytest.mark.parametrize("bad", ["ten", "101%", "-1", "1.5", "%", "5%%", "P1", "10%,2"])
def test_bad_threshold_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="gpuops_fail_on_unknown"):
        gate.parse_threshold(bad)


@pytest.mark.parametrize("good, want", [("25%", {"percent": 25.0, "text": "25%"}), ("3", {"count": 3, "text": "3"}),
                                        ("", {"percent": 10.0, "text": "10%"}), ("never", None)])  # fmt: skip
def test_threshold_forms(good, want):
    assert gate.parse_threshold(good) == want
