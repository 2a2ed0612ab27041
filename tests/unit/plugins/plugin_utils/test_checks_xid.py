# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel-event checks (_checks/xid.py): Xid and NVSwitch SXid, with their escalation."""

from __future__ import annotations


import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as S
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.cluster import node_status
from checks_helpers import BUS, HOST, facts, only, run, xid


# ------------------------------------------------------------------------------- gpu.xid


def test_xid79_first_reboot_then_inspect_the_link_then_replace_within_30_days():
    # NVIDIA: Xid 79 is RESTART_BM; a second one may be the riser, slot, power or driver, so the second incident
    # asks to inspect and reseat (a P1 that persists until the node was powered down), only the third replaces.
    fs, st = run(facts(events=[xid(79, index=3)]))
    f = only(fs, "gpu.xid", "gpu3", 79)[0]
    assert (f["severity"], f["action"]) == ("P1", "reboot")
    assert "xid_catalog[79]" in f["rule"] and "step 1/3" in f["rule"]
    # same incident on the next run: still step 1
    fs, st = run(facts(events=[xid(79, index=3)]), state=st, now="2026-12-02T10:05:00Z")
    assert "step 1/3" in only(fs, "gpu.xid", "gpu3", 79)[0]["rule"]
    # reboot: new boot id clears it
    fs, st = run(facts(boot="b2"), state=st, now="2026-12-03T10:00:00Z")
    assert not only(fs, "gpu.xid")
    # second Xid 79 on the same GPU (serial) 10 days later: inspect the link (reseat), not replace
    fs, st = run(
        facts(boot="b2", events=[xid(79, index=3, ts="2026-12-12T09:59:00Z")]), state=st, now="2026-12-12T10:00:00Z"
    )
    f = only(fs, "gpu.xid", "gpu3", 79)[0]
    assert (f["severity"], f["action"]) == ("P1", "reseat") and "step 2/3" in f["rule"]
    # the line ages out of the 2 h window, the reseat is still owed (same boot)
    fs, st = run(facts(boot="b2"), state=st, now="2026-12-12T16:00:00Z")
    assert only(fs, "gpu.xid", "gpu3", 79)[0]["evidence"]["still_active"] is True
    fs, st = run(facts(boot="b3"), state=st, now="2026-12-13T10:00:00Z")
    assert not only(fs, "gpu.xid")
    # a third one after the reseat: contact support (NVIDIA's investigatory bucket CONTACT_SUPPORT), not replace
    fs, st = run(
        facts(boot="b3", events=[xid(79, index=3, ts="2026-12-14T09:59:00Z")]), state=st, now="2026-12-14T10:00:00Z"
    )
    f = only(fs, "gpu.xid", "gpu3", 79)[0]
    assert f["action"] == "contact_vendor" and "step 3/3" in f["rule"]


def test_xid79_after_window_starts_again_and_other_serial_is_independent():
    _unused, st = run(facts(events=[xid(79, index=3)]))
    _unused, st = run(facts(boot="b2"), state=st, now="2026-12-03T10:00:00Z")
    fs, _unused = run(
        facts(boot="b2", events=[xid(79, index=3, ts="2027-01-10T09:59:00Z")]), state=st, now="2027-01-10T10:00:00Z"
    )
    assert only(fs, "gpu.xid", "gpu3")[0]["action"] == "reboot"
    fs, _unused = run(
        facts(boot="b2", events=[xid(79, index=4, ts="2026-12-04T09:59:00Z")]), state=st, now="2026-12-04T10:00:00Z"
    )
    assert only(fs, "gpu.xid", "gpu4")[0]["action"] == "reboot"


@pytest.mark.parametrize("code", [13, 31, 43])
def test_user_caused_xids_do_not_raise_node_alarms(code):
    fs, _unused = run(facts(events=[xid(code, pid=4242, process="python")] * 30))
    f = only(fs, "gpu.xid", "gpu0", code)[0]
    assert f["severity"] == "P3" and f["evidence"]["count"] == 30
    assert node_status(fs) == "healthy"


def test_user_caused_xid_repeated_across_processes_on_one_gpu_is_p2():
    evs = [xid(13, pid=p, process="app%d" % p) for p in (1, 2, 3)]
    f = only(run(facts(events=evs))[0], "gpu.xid", "gpu0", 13)[0]
    assert f["severity"] == "P2" and "WORKFLOW_XID_13" in f["rule"]


def test_xid_window_lookback_boot_clear_dedupe_and_undated():
    evs = [
        xid(48, ts="2026-12-02T07:00:00Z"),  # older than 2 h lookback: ignored
        xid(94, index=1, ts="2026-12-02T09:10:00Z"),
        xid(94, index=1, ts="2026-12-02T09:20:00Z"),
        xid(94, index=2, ts="2026-12-02T09:20:00Z"),
        xid(119, index=5, ts=None),  # no placeable time: counts as this boot
    ]
    fs, _unused = run(facts(events=evs))
    assert not only(fs, "gpu.xid", "gpu0")
    assert only(fs, "gpu.xid", "gpu1", 94)[0]["evidence"]["count"] == 2  # deduped per (code, bus id)
    assert only(fs, "gpu.xid", "gpu2", 94)[0]["evidence"]["count"] == 1
    assert only(fs, "gpu.xid", "gpu5", 119)[0]["evidence"]["undated"] == 1
    # boot time (Slurm BootTime) after the event: ignored
    f2 = facts(
        events=[xid(94, index=1, ts="2026-12-02T09:10:00Z")],
        slurm={"nodes": [{"name": HOST, "state": "IDLE", "flags": [], "boot_time": "2026-12-02T09:30:00"}]},
    )
    assert not only(run(f2)[0], "gpu.xid")
    # a recorded clear for that GPU after the event: ignored; other GPUs unaffected
    st = S.record_clear(S.empty_host_state(HOST), HOST, BUS[1], "2026-12-02T09:15:00Z")
    fs, _unused = run(facts(events=evs), state=st)
    assert only(fs, "gpu.xid", "gpu1", 94)[0]["evidence"]["count"] == 1
    assert only(fs, "gpu.xid", "gpu2", 94)


def test_xid45_caused_by_reports_root_and_154_acts_on_new_action():
    evs = [xid(45, caused_by=149), xid(154, index=1, recovery_action="0x2 (Node Reboot Required)")]
    fs, _unused = run(facts(events=evs))
    assert not only(fs, "gpu.xid", code=45)
    f = only(fs, "gpu.xid", "gpu1", 154)[0]
    assert (f["severity"], f["action"]) == ("P1", "reboot")


def test_fallen_off_bus_without_xid_is_79_and_policy_override_applies():
    ev = {"kind": "fallen_off_bus", "code": None, "bus_id": "0000:18:00.0", "timestamp": None, "message": "fell"}
    assert only(run(facts(events=[ev]))[0], "gpu.xid", "gpu0", 79)
    pol = P.merge_policy(None, {"xid": {"overrides": {"94": {"severity": "P2", "action": "isolate"}}}})
    f = only(run(facts(events=[xid(94)]), policy=pol)[0], "gpu.xid", "gpu0", 94)[0]
    assert (f["severity"], f["action"]) == ("P2", "isolate") and "xid.overrides[94]" in f["rule"]


def test_nvlink5_fatal_word_escalates():
    f = only(run(facts(events=[xid(145, message="RLW Fatal XC0 i0 Link 05")]))[0], "gpu.xid", code=145)[0]
    assert f["severity"] == "P1"


def test_sxid():
    evs = [
        {
            "kind": "sxid",
            "code": 20034,
            "bus_id": "0000:05:00.0",
            "timestamp": "2026-12-02T09:55:00Z",
            "message": "Fatal, Link 62 LTSSM Fault Up",
        },
        {"kind": "sxid", "code": 11004, "bus_id": "0000:06:00.0", "timestamp": None, "message": "Non-fatal, x"},
    ]
    fs = run(facts(events=evs))[0]
    f = only(fs, "nvswitch.sxid", "nvswitch:00000000:05:00.0", 20034)[0]
    assert (f["severity"], f["action"]) == ("P1", "reboot")
    # 11004 ingress invalid ACL: non-fatal by class, but the guide's recovery is a reset/restart (section 4)
    f = only(fs, "nvswitch.sxid", code=11004)[0]
    assert (f["severity"], f["action"]) == ("P1", "reboot")


def test_nvswitch_index_from_the_line_and_unreachable_message():
    ev = {
        "kind": "sxid",
        "code": 20034,
        "bus_id": "0000:05:00.0",
        "timestamp": None,
        "severity": "fatal",
        "raw": "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 62 LTSSM Fault Up",
        "message": "x",
    }
    f = only(run(facts(events=[ev]))[0], "nvswitch.sxid")[0]
    assert f["component"] == "nvswitch3" and f["severity"] == "P1"
    fs, _unused = run({"unreachable": True, "unreachable_message": "no route"})
    assert "no route" in fs[0]["message"]
