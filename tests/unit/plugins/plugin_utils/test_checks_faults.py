# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fault lifecycle (_checks/faults.py): active faults, clear rules, escalation history."""

from __future__ import annotations


import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as S
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.cluster import node_status
from checks_helpers import BUS, HOST, facts, gpu, only, run, xid


# ------------------------------------------------------------------------------- clearing


def test_reset_class_fault_survives_aging_out_until_reset_recorded():
    fs, st = run(facts(events=[xid(48, index=2)]))
    f = only(fs, "gpu.xid", "gpu2", 48)[0]
    assert f["action"] == "reset_gpu"
    # 5 h later, same boot: the log line is outside the lookback, the fault is still active
    fs, st = run(facts(events=[xid(48, index=2)]), state=st, now="2026-12-02T15:00:00Z")
    f = only(fs, "gpu.xid", "gpu2", 48)[0]
    assert f["evidence"]["still_active"] is True and "still active since 2026-12-02T10:00:00Z" in f["message"]
    assert f["respond_by"] == "2026-12-02T10:30:00Z"  # the deadline does not move
    # a reset of ANOTHER GPU does not clear it
    S.record_gpu_reset(st, HOST, BUS[3], "S3", "2026-12-02T15:10:00Z")
    fs, st = run(facts(), state=st, now="2026-12-02T15:20:00Z")
    assert only(fs, "gpu.xid", "gpu2", 48)
    S.record_gpu_reset(st, HOST, BUS[2], "S2", "2026-12-02T15:30:00Z")
    fs, st = run(facts(), state=st, now="2026-12-02T15:40:00Z")
    assert not only(fs, "gpu.xid", "gpu2", 48) and not st["active_faults"]


def test_reboot_class_fault_needs_new_boot_not_a_reset():
    _unused, st = run(facts(events=[xid(79)]))
    S.record_gpu_reset(st, HOST, BUS[0], "S0", "2026-12-02T10:10:00Z")
    fs, st = run(facts(), state=st, now="2026-12-02T13:00:00Z")
    assert only(fs, "gpu.xid", "gpu0", 79)
    fs, st = run(facts(boot="b2"), state=st, now="2026-12-02T14:00:00Z")
    assert not only(fs, "gpu.xid")


def test_remap_failure_clears_only_when_serial_changes():
    bad = [gpu(0, remapped_rows={"failure": True})] + [gpu(i) for i in range(1, 8)]
    fs, st = run(facts(gpus=bad))
    f = only(fs, "gpu.row_remap", "gpu0", "failure")[0]
    assert (f["severity"], f["action"]) == ("P1", "replace")
    fs, st = run(facts(boot="b2"), state=st, now="2026-12-03T10:00:00Z")  # flag not shown, new boot
    assert only(fs, "gpu.row_remap", "gpu0", "failure")
    fs, st = run(
        facts(boot="b3", gpus=[gpu(0, serial="NEW")] + [gpu(i) for i in range(1, 8)]),
        state=st,
        now="2026-12-04T10:00:00Z",
    )
    assert not only(fs, "gpu.row_remap")


def test_unreachable_node_keeps_active_faults():
    _unused, st = run(facts(events=[xid(79)]))
    fs, st2 = run(None, state=st, now="2026-12-03T10:00:00Z")
    assert only(fs, "node.unreachable")[0]["severity"] == "P1"
    assert only(fs, "gpu.xid", "gpu0", 79) and st2["active_faults"]
    fs, _unused = run({"unreachable": True, "unreachable_reason": "ssh timeout"}, state=st)
    assert "ssh timeout" in only(fs, "node.unreachable")[0]["message"]
    assert node_status(fs) == "unreachable"


def test_escalation_history_is_pruned_and_counted_once_per_incident():
    _unused, st = run(facts(events=[xid(79)]))
    for minute in (5, 10, 15):
        _unused, st = run(facts(events=[xid(79)]), state=st, now="2026-12-02T10:%02d:00Z" % minute)
    assert len(st["escalation"]) == 1
    _unused, st = run(facts(boot="b2"), state=st, now="2027-03-01T10:00:00Z")
    assert st["escalation"] == []  # older than the longest window


@pytest.mark.parametrize(
    "fault",
    [
        None,
        [],
        {"finding": None},
        {"finding": {"severity": "P9"}},
        {"finding": {"severity": "P1", "action": "reboot"}},
        {"finding": {"check": "gpu.xid", "severity": "P1", "action": "reboot", "id": "other"}, "clear": ["x"]},
    ],
)
def test_damaged_active_faults_in_the_state_are_dropped_not_raised(fault):
    st = S.empty_host_state(HOST)
    st["active_faults"] = {"%s:gpu.xid:gpu0:79" % HOST: fault}
    st["escalation"] = [{"check": "gpu.xid", "code": "79", "serial": "S0", "time": "x", "step": "2"}]
    fs, new = run(facts(events=[xid(79)]), state=st)
    assert only(fs, "gpu.xid", "gpu0", 79)[0]["action"] == "reboot"  # the undated history entry is dropped
    assert isinstance(new["active_faults"], dict) and len(new["escalation"]) == 1
    fs, _unused = run(None, state=st)
    assert [f["check"] for f in fs] == ["node.unreachable"]
