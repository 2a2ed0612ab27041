# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared context (_checks/context.py) and the helpers the package split out of the checks."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import bmc, context, xid
from checks_helpers import BUS, HOST, gpu

NOW = datetime.datetime(2026, 12, 2, 10, 0, tzinfo=datetime.timezone.utc)


def ctx():
    return context.Ctx(HOST, P.DEFAULT_POLICY, NOW)


def test_add_keeps_the_more_severe_finding_and_remembers_the_component():
    c = ctx()
    c.add("gpu.ecc", "P2", "gpu0", "x", "m", "monitor", "r", evidence={"a": 1}, bus_id=BUS[0], serial="S1")
    f = c.add("gpu.ecc", "P1", "gpu0", "x", "m2", "reset_gpu", "r2")
    assert f["severity"] == "P1" and f["evidence"] == {} and len(c.findings) == 1
    assert c.add("gpu.ecc", "P3", "gpu0", "x", "m3", "monitor", "r3") is f  # a lower severity does not replace it
    assert c.meta[f["id"]] == {"bus_id": None, "serial": None, "raised_at": None}
    with pytest.raises(TypeError, match="bus"):
        c.add("gpu.ecc", "P1", "gpu0", "y", "m", "monitor", "r", bus=BUS[0])


def test_for_gpu_fills_component_bus_id_and_serial():
    c = ctx()
    g = gpu(3, serial="1650923000123")
    f = c.for_gpu(g)("gpu.ecc", "P2", "code", "msg", "monitor", "rule", {"k": 1})
    assert f["component"] == "gpu3" and f["evidence"] == {"k": 1}
    assert c.meta[f["id"]]["bus_id"] == BUS[3] and c.meta[f["id"]]["serial"] == "1650923000123"
    f = c.for_gpu(g, "/nvlink2", serial=False)("gpu.nvlink", "P2", "crc", "msg", "monitor", "rule")
    assert f["component"] == "gpu3/nvlink2" and c.meta[f["id"]]["serial"] is None
    assert c.meta[f["id"]]["bus_id"] == BUS[3]


def test_rate_window_unpacks_in_order():
    prev, cur, interval = context.RateWindow({"a": 1}, {}, 60.0)
    assert prev == {"a": 1} and cur == {} and interval == 60.0


@pytest.mark.parametrize(
    "event, code",
    [
        ({"kind": "xid", "code": 79}, 79),
        ({"kind": "fallen_off_bus"}, 79),
        ({"kind": "xid", "code": 45, "caused_by": 79}, None),
        ({"kind": "xid", "code": 45}, 45),
        ({"kind": "xid", "code": True}, None),
        ({"kind": "xid", "code": "79"}, None),
        ({"kind": "sxid", "code": 12028}, None),
    ],
)
def test_xid_code(event, code):
    assert xid._xid_code(event) == code


def test_group_xids_counts_per_code_and_bus_and_places_gpu_index():
    facts = {
        "kernel": {
            "events": [
                {"kind": "xid", "code": 48, "bus_id": BUS[0], "timestamp": "2026-12-02T09:00:00Z", "pid": "7"},
                {"kind": "xid", "code": 48, "bus_id": BUS[0], "timestamp": "2026-12-02T09:30:00Z", "pid": "8"},
                {"kind": "xid", "code": 48, "gpu_index": 1},
                "junk",
                {"kind": "xid", "code": 13, "bus_id": BUS[2], "timestamp": "2026-12-02T09:40:00Z"},
            ]
        }
    }
    by_index = {1: gpu(1)}
    groups = xid.group_xids(facts, lambda ev, bus: bus != BUS[2], by_index)
    assert sorted(groups) == [(48, BUS[0]), (48, BUS[1])]  # BUS[2] did not count (cleared)
    g = groups[(48, BUS[0])]
    assert g["count"] == 2 and g["pids"] == {"7", "8"} and g["undated"] == 0
    assert g["first"] < g["last"] and groups[(48, BUS[1])]["undated"] == 1


def test_xid_verdict_user_caused_and_fatal():
    c = ctx()
    grp = {"recovery_action": None, "pids": {"1"}, "processes": set(), "fatal": False}
    notes = []
    assert xid.xid_verdict(c, 13, {"user_caused": True, "severity": "P2"}, grp, notes) == ("P3", "monitor")
    assert "user-caused" in notes[0]
    grp = dict(grp, fatal=True)
    row = {"severity": "P2", "action": "monitor", "fatal_escalation": {"severity": "P1", "action": "reset_gpu"}}
    assert xid.xid_verdict(c, 149, row, grp, []) == ("P1", "reset_gpu")


def test_check_sensor_coolant_never_powers_off_and_leak_may():
    c = ctx()
    th = P.DEFAULT_POLICY["thresholds"]["bmc"]
    bmc.check_sensor(c, {"name": "Flow", "type": "coolant", "status": "critical", "reading": 0.1, "unit": "lpm"}, th)
    bmc.check_sensor(c, {"name": "Leak1", "type": "leak", "status": "critical", "states": ["leak detected"]}, th)
    by_check = {f["check"]: f for f in c.findings.values()}
    assert by_check["bmc.coolant"]["action"] != "emergency_shutdown"
    assert by_check["bmc.coolant"]["message"].startswith("coolant sensor Flow: critical (reading 0.1 lpm")
    assert by_check["bmc.leak"]["message"] == "leak sensor Leak1: critical (leak detected)"
    assert by_check["bmc.leak"]["rule"] == "thresholds.bmc.leak[Critical]"
