# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the per-node checks: facts dicts are built by hand per docs/facts.md."""

from __future__ import annotations

import copy
import re

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _checks as C
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _state as S
from ansible_collections.gpuops.cluster.plugins.plugin_utils._cluster import node_status

NOW = "2026-12-02T10:00:00Z"
HOST = "gpu-node-07"
BUS = ["00000000:%02X:00.0" % b for b in (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)]
PROFILE = {
    "gpu_model": "H100",
    "gpu_count": 8,
    "nvlinks_per_gpu": 18,
    "pcie_gen": 5,
    "pcie_width": 16,
    "ib_ports": ["mlx5_0/1", "mlx5_1/1"],
    "ib_rate_gbps": 400,
    "driver_version": "535.161.08",
    "mounts": ["/lustre"],
    "services": ["nvidia-persistenced", "nvidia-fabricmanager"],
    "nvswitch": True,
}


def merge(base, over):
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def gpu(index=0, **over):
    g = {
        "index": index,
        "readable": True,
        "error": None,
        "bus_id": BUS[index],
        "uuid": "GPU-%d" % index,
        "serial": "S%d" % index,
        "name": "NVIDIA H100 80GB HBM3",
        "vbios_version": "96.00.89.00.01",
        "driver_version": "535.161.08",
        "temperature": {"gpu_c": 33, "memory_c": 41, "slowdown_c": 87, "shutdown_c": 92, "max_operating_c": 85},
        "power": {"draw_w": 71.3, "limit_w": 700.0, "enforced_limit_w": 700.0, "default_limit_w": 700.0},
        "utilization": {"gpu_pct": 0, "memory_pct": 0},
        "ecc": {
            "mode_current": True,
            "volatile": {"corrected": 0, "uncorrected": 0},
            "aggregate": {"corrected": 0, "uncorrected": 0},
        },
        "retired_pages": {"supported": False, "sbe": None, "dbe": None, "pending": None},
        "remapped_rows": {
            "supported": True,
            "correctable": 0,
            "uncorrectable": 0,
            "pending": False,
            "failure": False,
            "histogram": {"max": 2560, "high": 0, "partial": 0, "low": 0, "none": 0},
        },
        "throttle": {"active": ["gpu_idle"]},
        "pcie": {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16, "replay_counter": 0},
        "nvlink": {
            "links": [
                {
                    "link": n,
                    "state": "up",
                    "speed_gbps": 26.562,
                    "errors": {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0},
                }
                for n in range(18)
            ]
        },
        "fabric": {"state": "Completed", "status": "Success"},
        "recovery_action": "none",
    }
    return merge(g, over)


def port(hca, **over):
    p = {
        "port": 1,
        "state": "ACTIVE",
        "phys_state": "LinkUp",
        "rate_gbps": 400.0,
        "link_layer": "InfiniBand",
        "sm_lid": 1,
        "counters": {"symbol_error": 0, "link_downed": 0, "port_rcv_errors": 0, "link_error_recovery": 0},
        "saturated": [],
    }
    return merge(p, over)


def facts(gpus=None, events=None, hcas=None, boot="b1", collected_at=None, ib_at=1764669600.0, **domains):
    f = {
        "schema": "gpuops.facts/v1",
        "hostname": HOST,
        "collected_at": collected_at,
        "gpu": {"source": "nvidia-smi-xml", "driver_version": "535.161.08", "count": None, "errors": []},
        "kernel": {"source": "journalctl", "boot_id": boot, "events": events or [], "errors": []},
        "ib": {
            "source": "sysfs",
            "collected_at": ib_at,
            "boot_id": boot,
            "errors": [],
            "hcas": hcas
            if hcas is not None
            else [
                {"name": "mlx5_%d" % i, "fw_version": "28.39.1002", "ports": [port("mlx5_%d" % i)]} for i in range(2)
            ],
        },
        "node": {
            "source": "live",
            "hostname": HOST,
            "boot_id": boot,
            "kernel": "6.1.0-18-amd64",
            "os": "Debian 12",
            "mounts": [{"path": "/lustre", "present": True, "responsive": True, "free_pct": 41.2}],
            "services": {
                "nvidia-persistenced": {"running": True},
                "nvidia-fabricmanager": {"running": True, "version": "535.161.08"},
            },
            "fabric_manager_version": "535.161.08",
            "errors": [],
        },
        "errors": [],
    }
    gl = gpus if gpus is not None else [gpu(i) for i in range(8)]
    f["gpu"]["gpus"] = gl
    f["gpu"]["count"] = len(gl)
    for k, v in domains.items():
        f[k] = merge(f.get(k) or {}, v) if isinstance(v, dict) else v
    return f


def run(f, profile=None, state=None, now=NOW, policy=None):
    if isinstance(f, dict) and "schema" in f and f.get("collected_at") is None:
        f = dict(f, collected_at=now)  # a live collection: the facts describe "now"
    return C.evaluate_node(f, profile, policy or P.DEFAULT_POLICY, state, now, HOST)


def only(findings, check, component=None, code=None):
    return [
        x
        for x in findings
        if x["check"] == check
        and (component is None or x["component"] == component)
        and (code is None or x["code"] == str(code))
    ]


def xid(code, index=0, ts="2026-12-02T09:50:00Z", pid="<unknown>", process="<unknown>", **kw):
    e = {
        "kind": "xid",
        "code": code,
        "bus_id": BUS[index],
        "gpu_index": index,
        "pid": pid,
        "process": process,
        "message": "msg",
        "timestamp": ts,
        "caused_by": None,
        "recovery_action": None,
        "raw": "NVRM: Xid %s" % code,
    }
    e.update(kw)
    return e


# ------------------------------------------------------------------------------- shape, healthy, robustness


def test_healthy_node_has_no_findings_with_and_without_profile():
    assert run(facts())[0] == []
    assert run(facts(), PROFILE)[0] == []
    assert node_status(run(facts(), PROFILE)[0]) == "healthy"


def test_finding_shape_and_catalogue_matches_docs():
    f = run(facts(events=[xid(79)]))[0][0]
    assert set(f) == {
        "check",
        "severity",
        "component",
        "code",
        "message",
        "action",
        "rule",
        "respond_by",
        "evidence",
        "host",
        "cause",
        "id",
    }
    assert f["id"] == "%s:gpu.xid:gpu0:79" % HOST and f["host"] == HOST and f["cause"] is None
    assert f["respond_by"] == "2026-12-02T10:30:00Z"
    assert f["action"] in P.ACTIONS
    with open(__file__.replace("tests/unit/plugins/plugin_utils/test_checks.py", "docs/checks.md")) as fh:
        doc = fh.read()
    for check in C.CHECKS:
        assert "`%s`" % check in doc, check


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


# ------------------------------------------------------------------------------- gpu.missing


def test_gpu_missing_needs_a_profile_for_counts_but_not_for_unreadable():
    seven = facts(gpus=[gpu(i) for i in range(7)])
    assert run(seven)[0] == []  # unknown hardware: no "missing" alarm
    m = only(run(seven, PROFILE)[0], "gpu.missing")
    assert m[0]["severity"] == "P1" and m[0]["code"] == "count" and m[0]["evidence"] == {"count": 7, "expected": 8}
    lost = facts(gpus=[gpu(0, readable=False, error="GPU is lost")] + [gpu(i) for i in range(1, 8)])
    f = only(run(lost)[0], "gpu.missing", "gpu0", "unreadable")[0]
    assert f["severity"] == "P1" and f["action"] == "reboot"


def test_gpu_model_mismatch_is_drift():
    fs = run(facts(gpus=[gpu(0, name="NVIDIA A100-SXM4-80GB")] + [gpu(i) for i in range(1, 8)]), PROFILE)[0]
    assert only(fs, "gpu.drift", "gpu0", "model")[0]["severity"] == "P3"


# ------------------------------------------------------------------------------- gpu.xid


def test_xid79_first_reboot_then_replace_within_30_days():
    fs, st = run(facts(events=[xid(79, index=3)]))
    f = only(fs, "gpu.xid", "gpu3", 79)[0]
    assert (f["severity"], f["action"]) == ("P1", "reboot")
    assert "xid_catalog[79]" in f["rule"] and "step 1/2" in f["rule"]
    # same incident on the next run: still step 1
    fs, st = run(facts(events=[xid(79, index=3)]), state=st, now="2026-12-02T10:05:00Z")
    assert "step 1/2" in only(fs, "gpu.xid", "gpu3", 79)[0]["rule"]
    # reboot: new boot id clears it
    fs, st = run(facts(boot="b2"), state=st, now="2026-12-03T10:00:00Z")
    assert not only(fs, "gpu.xid")
    # second Xid 79 on the same GPU (serial) 10 days later: replace
    fs, st = run(
        facts(boot="b2", events=[xid(79, index=3, ts="2026-12-12T09:59:00Z")]), state=st, now="2026-12-12T10:00:00Z"
    )
    f = only(fs, "gpu.xid", "gpu3", 79)[0]
    assert f["action"] == "replace" and "step 2/2" in f["rule"]


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


# ------------------------------------------------------------------------------- ECC, remap, pages, recovery


def test_aggregate_ecc_alone_is_at_most_p3_volatile_is_an_alarm():
    agg = [gpu(0, ecc={"aggregate": {"corrected": 10**9, "uncorrected": 7}})] + [gpu(i) for i in range(1, 8)]
    fs, _unused = run(facts(gpus=agg))
    assert [f["severity"] for f in only(fs, "gpu.ecc")] == ["P3"]
    vol = [gpu(0, ecc={"volatile": {"uncorrected": 2}})] + [gpu(i) for i in range(1, 8)]
    f = only(run(facts(gpus=vol))[0], "gpu.ecc", "gpu0", "volatile_uncorrected")[0]
    assert (f["severity"], f["action"]) == ("P1", "reset_gpu")
    cor = [gpu(0, ecc={"volatile": {"corrected": 20000}})] + [gpu(i) for i in range(1, 8)]
    assert only(run(facts(gpus=cor))[0], "gpu.ecc", "gpu0", "volatile_corrected")[0]["severity"] == "P2"


def test_row_remap_pending_is_p2_reset_and_p1_with_uncorrectable_xid():
    g = [gpu(0, remapped_rows={"pending": True, "uncorrectable": 4})] + [gpu(i) for i in range(1, 8)]
    f = only(run(facts(gpus=g))[0], "gpu.row_remap", "gpu0", "pending")[0]
    assert (f["severity"], f["action"]) == ("P2", "reset_gpu")
    f = only(run(facts(gpus=g, events=[xid(48)]))[0], "gpu.row_remap", "gpu0", "pending")[0]
    assert f["severity"] == "P1" and f["evidence"]["xids"] == [48]
    # an uncorrectable Xid on ANOTHER GPU does not make it P1
    f = only(run(facts(gpus=g, events=[xid(48, index=1)]))[0], "gpu.row_remap", "gpu0", "pending")[0]
    assert f["severity"] == "P2"


def test_row_remap_rma_limit_and_histogram():
    g = [gpu(0, remapped_rows={"uncorrectable": 512})] + [gpu(i) for i in range(1, 8)]
    f = only(run(facts(gpus=g))[0], "gpu.row_remap", "gpu0", "rma_limit")[0]
    assert (f["severity"], f["action"]) == ("P1", "replace")
    h = {"max": 0, "high": 0, "partial": 100, "low": 2000, "none": 460}
    g = [gpu(0, remapped_rows={"histogram": h})] + [gpu(i) for i in range(1, 8)]
    f = only(run(facts(gpus=g))[0], "gpu.row_remap", "gpu0", "histogram_exhausted")[0]
    assert (f["severity"], f["action"]) == ("P3", "replace")
    g = [gpu(0, remapped_rows={"supported": False, "failure": True})] + [gpu(i) for i in range(1, 8)]
    assert not only(run(facts(gpus=g))[0], "gpu.row_remap")


def test_retired_pages_only_where_supported():
    na = [gpu(0, retired_pages={"supported": False, "sbe": None, "dbe": None, "pending": None})]
    assert not only(run(facts(gpus=na))[0], "gpu.retired_pages")
    old = [gpu(0, retired_pages={"supported": True, "sbe": 40, "dbe": 23, "pending": True})]
    fs = run(facts(gpus=old))[0]
    assert only(fs, "gpu.retired_pages", "gpu0", "max")[0]["action"] == "replace"
    assert only(fs, "gpu.retired_pages", "gpu0", "pending")[0]["severity"] == "P2"


@pytest.mark.parametrize(
    "ra, sev, action",
    [("node_reboot", "P1", "reboot"), ("gpu_reset", "P1", "reset_gpu"), ("drain_p2p", "P2", "reset_gpu")],
)
def test_recovery_action(ra, sev, action):
    f = only(run(facts(gpus=[gpu(0, recovery_action=ra)]))[0], "gpu.recovery_action")[0]
    assert (f["severity"], f["action"], f["code"]) == (sev, action, ra)


# ------------------------------------------------------------------------------- throttle, temperature, pcie


def test_sw_power_cap_at_load_is_not_an_alarm():
    busy = [gpu(i, throttle={"active": ["sw_power_cap"]}, utilization={"gpu_pct": 100}) for i in range(8)]
    assert run(facts(gpus=busy), PROFILE)[0] == []


def test_hw_throttle_per_gpu_also_when_on_every_gpu():
    one = [gpu(0, throttle={"active": ["hw_thermal_slowdown"]})] + [gpu(i) for i in range(1, 8)]
    f = only(run(facts(gpus=one))[0], "gpu.throttle")
    assert [(x["component"], x["severity"]) for x in f] == [("gpu0", "P2")]
    brake = [gpu(i, throttle={"active": ["hw_power_brake_slowdown"]}) for i in range(8)]
    f = only(run(facts(gpus=brake))[0], "gpu.throttle")
    assert [(x["component"], x["code"]) for x in f] == [("gpu%d" % i, "hw_power_brake_slowdown") for i in range(8)]
    assert all(x["evidence"]["on_every_gpu"] for x in f) and "external signal" in f[0]["message"]


def test_power_cap_below_default_is_p3_tune():
    g = [gpu(0, power={"enforced_limit_w": 400.0})]
    f = only(run(facts(gpus=g))[0], "gpu.throttle", "gpu0", "power_cap")[0]
    assert (f["severity"], f["action"]) == ("P3", "tune")


@pytest.mark.parametrize(
    "temp, sev, action",
    [
        ({"gpu_c": 84}, "P2", "tune"),
        ({"gpu_c": 91}, "P1", "emergency_shutdown"),
        ({"gpu_c": 83}, None, None),
        ({"memory_c": 96}, "P2", "tune"),
        ({"memory_c": 106}, "P1", "emergency_shutdown"),
        ({"gpu_c": 86, "slowdown_c": None, "shutdown_c": None}, "P2", "tune"),
    ],
)
def test_temperature(temp, sev, action):
    fs = only(run(facts(gpus=[gpu(0, temperature=temp)]))[0], "gpu.temperature")
    if sev is None:
        assert fs == []
    else:
        assert (fs[0]["severity"], fs[0]["action"]) == (sev, action)


def test_idle_pcie_downshift_is_not_a_fault_but_under_load_it_is():
    idle = [gpu(i, pcie={"gen_current": 1}) for i in range(8)]
    assert run(facts(gpus=idle), PROFILE)[0] == []
    busy = [gpu(0, pcie={"gen_current": 3}, throttle={"active": []}, utilization={"gpu_pct": 95})]
    f = only(run(facts(gpus=busy))[0], "gpu.pcie", "gpu0", "gen")[0]
    assert (f["severity"], f["action"]) == ("P2", "reseat")


def test_pcie_width_needs_profile():
    narrow = [gpu(i, pcie={"width_current": 8}) for i in range(8)]
    assert not only(run(facts(gpus=narrow))[0], "gpu.pcie")
    assert len(only(run(facts(gpus=narrow), PROFILE)[0], "gpu.pcie", code="width")) == 8


def test_pcie_replay_rate_from_two_readings():
    _unused, st = run(facts(gpus=[gpu(0)]))
    # 600 replays in 10 minutes = 60/min > 1.92*16 = 30.72/min
    fs, st = run(
        facts(gpus=[gpu(0, pcie={"replay_counter": 600})], collected_at="2026-12-02T10:10:00Z"),
        state=st,
        now="2026-12-02T10:10:00Z",
    )
    f = only(fs, "gpu.pcie", "gpu0", "replay")[0]
    assert f["evidence"]["delta"] == 600
    # driver reload (counter went down): new baseline, no finding
    fs, _unused = run(
        facts(gpus=[gpu(0, pcie={"replay_counter": 5})], collected_at="2026-12-02T10:20:00Z"),
        state=st,
        now="2026-12-02T10:20:00Z",
    )
    assert not only(fs, "gpu.pcie")


# ------------------------------------------------------------------------------- nvlink, fabric, driver, diag


def test_nvlink_down_per_link_missing_needs_profile_and_crc_rate():
    links = [{"link": n, "state": "up" if n < 16 else "down", "errors": {}} for n in range(18)]
    g = [gpu(0, nvlink={"links": links})] + [gpu(i) for i in range(1, 8)]
    fs = only(run(facts(gpus=g))[0], "gpu.nvlink")  # a down link next to up links is evidence, profile or not
    assert [(f["component"], f["severity"], f["code"]) for f in fs] == [
        ("gpu0/nvlink16", "P1", "down"),
        ("gpu0/nvlink17", "P1", "down"),
    ]
    # all links down on a GPU with no profile: could be a PCIe-only card, no alarm
    alldown = [gpu(0, nvlink={"links": [{"link": n, "state": "down"} for n in range(4)]})]
    assert not only(run(facts(gpus=alldown))[0], "gpu.nvlink")
    assert len(only(run(facts(gpus=alldown), PROFILE)[0], "gpu.nvlink", code="down")) == 4
    few = [gpu(0, nvlink={"links": links[:12]})]
    assert not only(run(facts(gpus=few))[0], "gpu.nvlink")
    assert only(run(facts(gpus=few), PROFILE)[0], "gpu.nvlink", "gpu0", "missing")[0]["evidence"]["listed"] == 12
    _unused, st = run(facts(gpus=[gpu(0)]))
    bad = gpu(0)
    bad["nvlink"]["links"][5]["errors"] = {"replay": 0, "recovery": 2, "crc_flit": 70000, "crc_data": 0}
    fs, _unused = run(facts(gpus=[bad], collected_at="2026-12-02T10:10:00Z"), state=st, now="2026-12-02T10:10:00Z")
    assert only(fs, "gpu.nvlink", "gpu0/nvlink5", "crc")[0]["severity"] == "P2"
    assert only(fs, "gpu.nvlink", "gpu0/nvlink5", "recovery")


def test_fabric_states():
    f = only(run(facts(gpus=[gpu(0, fabric={"state": "In Progress", "status": None})]))[0], "gpu.fabric")[0]
    assert f["severity"] == "P2"
    f = only(run(facts(gpus=[gpu(0, fabric={"state": "Completed", "status": "Failure"})]))[0], "gpu.fabric")[0]
    assert f["severity"] == "P1"
    assert not only(run(facts(gpus=[gpu(0, fabric=None)]))[0], "gpu.fabric")


def test_driver_vs_profile():
    f = facts(
        gpu={"driver_version": "550.54.15"},
        node={"fabric_manager_version": "550.54.15", "services": {"nvidia-fabricmanager": {"version": None}}},
    )
    fs = run(f, PROFILE)[0]
    assert only(fs, "gpu.driver")[0]["severity"] == "P3"
    assert not only(fs, "node.fabric_manager")


def test_dcgm_diag():
    d = {
        "level": 3,
        "overall": "fail",
        "gpus": {"0": "pass", "3": "fail", "4": "warn"},
        "tests": [{"name": "Memory Bandwidth", "gpus": {"3": "fail", "4": "warn"}}],
    }
    fs = run(facts(dcgm=d))[0]
    f = only(fs, "gpu.diag", "gpu3", "fail")[0]
    assert f["severity"] == "P1" and f["evidence"]["tests"] == ["Memory Bandwidth:fail"]
    assert only(fs, "gpu.diag", "gpu4", "warn")[0]["severity"] == "P2"
    assert not only(fs, "gpu.diag", "gpu0")


# ------------------------------------------------------------------------------- IB


def test_ib_port_states():
    init = [{"name": "mlx5_0", "ports": [port("mlx5_0", state="INIT", phys_state="LinkUp")]}]
    f = only(run(facts(hcas=init))[0], "ib.port_state", "mlx5_0/1", "INIT")[0]
    assert f["severity"] == "P1"
    down = [
        {"name": "mlx5_0", "ports": [port("mlx5_0", state="DOWN", phys_state="Polling")]},
        {"name": "mlx5_1", "ports": [port("mlx5_1", rate_gbps=200.0)]},
        {"name": "mlx5_4", "ports": [port("mlx5_4", state="DOWN", link_layer="Ethernet")]},
    ]
    assert not only(run(facts(hcas=down))[0], "ib.port_state")  # unknown hardware: down ports may be unused
    fs = run(facts(hcas=down), PROFILE)[0]
    assert only(fs, "ib.port_state", "mlx5_0/1", "DOWN")[0]["action"] == "reseat"
    assert only(fs, "ib.port_rate", "mlx5_1/1")[0]["severity"] == "P2"
    assert not only(fs, "ib.port_state", "mlx5_4/1")
    fs = run(facts(hcas=down[:1]), PROFILE)[0]
    assert only(fs, "ib.port_state", "mlx5_1/1", "missing")


def test_ib_port_count_profile():
    prof = dict(PROFILE, ib_ports=4)
    fs = run(facts(), prof)[0]
    assert only(fs, "ib.port_state", "node", "missing")[0]["evidence"]["expected"] == 4


def _ib(counters, fw="28.39.1002", saturated=None):
    return [
        {"name": "mlx5_0", "fw_version": fw, "ports": [port("mlx5_0", counters=counters, saturated=saturated or [])]}
    ]


def test_ib_error_rate_from_two_readings_and_baselines():
    base = {"symbol_error": 10, "link_downed": 3, "port_rcv_errors": 0}
    fs, st = run(facts(hcas=_ib(base)))
    assert not only(fs, "ib.errors")  # first reading: baseline only
    t1 = 1764669600.0 + 3600
    fs, st1 = run(facts(hcas=_ib(dict(base, symbol_error=510)), ib_at=t1), state=st)
    f = only(fs, "ib.errors", "mlx5_0/1", "symbol_error")[0]
    assert f["evidence"]["delta"] == 500 and f["evidence"]["per_hour"] == pytest.approx(500)
    assert f["action"] == "reseat"
    # below the threshold: 100/h < 120/h
    fs, _unused = run(facts(hcas=_ib(dict(base, symbol_error=110)), ib_at=t1), state=st)
    assert not only(fs, "ib.errors")
    # counters cleared (negative delta): new baseline, no finding
    fs, st2 = run(facts(hcas=_ib({"symbol_error": 0, "link_downed": 0}), ib_at=t1), state=st)
    assert not only(fs, "ib.errors") and not only(fs, "ib.link_flap")
    assert st2["ib"]["ports"]["mlx5_0/1"]["counters"]["symbol_error"] == 0
    # a new boot id: new baseline without a finding
    fs, _unused = run(facts(boot="b2", hcas=_ib(dict(base, symbol_error=9999, link_downed=50)), ib_at=t1), state=st)
    assert not only(fs, "ib.errors") and not only(fs, "ib.link_flap")
    # new HCA firmware: new baseline without a finding
    fs, st3 = run(facts(hcas=_ib(dict(base, symbol_error=9999), fw="28.40.1000"), ib_at=t1), state=st)
    assert not only(fs, "ib.errors") and st3["ib"]["ports"]["mlx5_0/1"]["fw_version"] == "28.40.1000"


def test_ib_short_interval_keeps_older_baseline():
    base = {"symbol_error": 10, "link_downed": 0}
    _unused, st = run(facts(hcas=_ib(base)))
    fs, st1 = run(facts(hcas=_ib(dict(base, symbol_error=11)), ib_at=1764669600.0 + 30), state=st)
    assert not only(fs, "ib.errors")
    assert st1["ib"]["ports"]["mlx5_0/1"]["counters"]["symbol_error"] == 10


def test_ib_saturated_counter_is_delta_unknown():
    sat = {"symbol_error": 0, "link_downed": 255}
    _unused, st = run(facts(hcas=_ib(sat, saturated=["link_downed"])))
    fs, _unused = run(facts(hcas=_ib(sat, saturated=["link_downed"]), ib_at=1764669600.0 + 3600), state=st)
    f = only(fs, "ib.link_flap", "mlx5_0/1", "link_downed")
    assert len(f) == 1 and f[0]["severity"] == "P2" and "delta unknown" in f[0]["message"]
    # without a previous reading too
    f = only(run(facts(hcas=_ib(sat, saturated=["link_downed"])))[0], "ib.link_flap")
    assert f[0]["evidence"]["saturated"] is True
    other = only(run(facts(hcas=_ib({"symbol_error": 65535}, saturated=["symbol_error"])))[0], "ib.errors")
    assert other[0]["severity"] == "P3" and "delta unknown" in other[0]["message"]


@pytest.mark.parametrize("downs, sev", [(1, "P2"), (5, "P1")])
def test_ib_link_flap_within_one_boot(downs, sev):
    _unused, st = run(facts(hcas=_ib({"link_downed": 2})))
    fs, _unused = run(facts(hcas=_ib({"link_downed": 2 + downs}), ib_at=1764669600.0 + 600), state=st)
    assert only(fs, "ib.link_flap", "mlx5_0/1", "link_downed")[0]["severity"] == sev


# ------------------------------------------------------------------------------- BMC


def test_ns_sensors_are_not_alarms():
    sensors = [
        {"name": "Temp 4", "type": "temperature", "reading": None, "status": "unknown", "states": []},
        {"name": "SEL", "type": "event_logging", "reading": None, "status": None, "states": []},
        {"name": "PSU3", "type": "power_supply", "reading": None, "status": "not_present", "states": []},
    ]
    assert run(facts(bmc={"sensors": sensors}))[0] == []


def test_bmc_sensor_status_and_failure_state():
    sensors = [
        {"name": "PSU2 Status", "type": "power_supply", "status": "critical", "states": []},
        {
            "name": "PSU1 Status",
            "type": "power_supply",
            "status": "ok",
            "states": ["Presence detected", "Failure detected"],
        },
        {"name": "CPU Temp", "type": "temperature", "status": "non_recoverable", "reading": 105},
    ]
    fs = run(facts(bmc={"sensors": sensors}))[0]
    assert only(fs, "bmc.sensor", "bmc/PSU2 Status")[0]["action"] == "replace"
    assert only(fs, "bmc.sensor", "bmc/PSU1 Status", "Failure detected")[0]["action"] == "replace"
    f = only(fs, "bmc.sensor", "bmc/CPU Temp")[0]
    assert (f["severity"], f["action"]) == ("P1", "emergency_shutdown")


def test_bmc_sel_window_and_deassertion():
    sel = [
        {
            "id": 1,
            "time": "2026-12-02T09:00:00",
            "sensor": "PS1",
            "event": "Failure detected",
            "direction": "asserted",
            "severity": "critical",
        },
        {
            "id": 2,
            "time": "2026-11-01T09:00:00",
            "sensor": "FAN1",
            "event": "Lower Critical going low",
            "direction": "asserted",
            "severity": "critical",
        },
        {
            "id": 3,
            "time": "2026-12-02T09:10:00",
            "sensor": "PS2",
            "event": "Failure detected",
            "direction": "asserted",
            "severity": "critical",
        },
        {
            "id": 4,
            "time": "2026-12-02T09:20:00",
            "sensor": "PS2",
            "event": "Failure detected",
            "direction": "deasserted",
            "severity": "critical",
        },
        {"id": 5, "time": None, "sensor": "X", "event": "Y", "direction": "asserted", "severity": "critical"},
    ]
    fs = only(run(facts(bmc={"sel": sel}))[0], "bmc.sel")
    assert [f["code"] for f in fs] == ["PS1: Failure detected"]


def test_bmc_redfish_health_and_leak():
    rf = {
        "systems": [{"id": "1", "health": "OK", "health_rollup": "Critical"}],
        "leak_detectors": [{"name": "Tray1", "state": "Critical", "health": "Critical"}],
        "psus": [{"name": "PSU0", "health": "Critical"}],
    }
    fs = run(facts(bmc={"redfish": rf}))[0]
    assert only(fs, "bmc.health", "bmc", "systems:1")[0]["severity"] == "P2"
    assert only(fs, "bmc.health", "bmc/PSU0")[0]["action"] == "replace"
    f = only(fs, "bmc.leak", "bmc/Tray1")[0]
    assert (f["severity"], f["action"]) == ("P1", "emergency_shutdown")


# ------------------------------------------------------------------------------- scheduler, node, collectors


@pytest.mark.parametrize(
    "state, flags, reason, sev",
    [
        ("DOWN*", [], "Not responding", "P1"),
        ("IDLE+DRAIN", ["DRAIN"], "gpuops: gpu.xid T-1", "P3"),
        ("MIXED+DRAIN", ["DRAIN"], "bad fan", "P3"),
        ("IDLE", [], None, None),
    ],
)
def test_scheduler_node_state(state, flags, reason, sev):
    sl = {
        "nodes": [
            {
                "name": HOST,
                "state": state,
                "base_state": state.split("+")[0].rstrip("*"),
                "flags": flags,
                "reason": reason,
            },
            {"name": "other", "state": "DOWN", "flags": []},
        ]
    }
    fs = only(run(facts(slurm=sl))[0], "scheduler.node_state")
    assert [f["severity"] for f in fs] == ([sev] if sev else [])


def test_mounts_services_fabric_manager():
    node = {
        "mounts": [
            {"path": "/lustre", "present": True, "responsive": False, "error": "timeout"},
            {"path": "/scratch", "present": True, "responsive": True, "free_pct": 1.0},
            {"path": "/home", "present": False},
        ],
        "services": {
            "nvidia-persistenced": {"running": False},
            "nvidia-fabricmanager": {"running": False, "version": "535.161.08"},
        },
    }
    fs = run(facts(node=node), PROFILE)[0]
    assert only(fs, "node.mounts", "mount:/lustre", "hung")[0]["severity"] == "P1"
    assert only(fs, "node.mounts", "mount:/scratch", "full")[0]["severity"] == "P2"
    assert not only(fs, "node.mounts", "mount:/home")  # not in the profile
    assert only(fs, "node.services", "service:nvidia-persistenced")[0]["severity"] == "P2"
    assert only(fs, "node.fabric_manager", code="not_running")[0]["severity"] == "P1"
    # no profile: FM not running on unknown hardware is no alarm
    assert not only(run(facts(node=node))[0], "node.fabric_manager")
    mism = facts(
        node={
            "fabric_manager_version": "535.154.05",
            "services": {"nvidia-fabricmanager": {"running": True, "version": "535.154.05"}},
        }
    )
    assert only(run(mism)[0], "node.fabric_manager", code="version_mismatch")[0]["severity"] == "P1"


def test_collector_errors():
    errs = [
        {"domain": "gpu", "kind": "timeout", "message": "nvidia-smi timed out after 60 s", "source": "nvidia-smi"},
        {"domain": "ib", "kind": "parse", "message": "bad line", "source": "ibstat", "line": 3},
        {"domain": "ib", "kind": "parse", "message": "bad line 2", "source": "ibstat", "line": 9},
    ]
    fs = run(facts(errors=errs))[0]
    g = only(fs, "collector.error", "collector:gpu", "timeout")[0]
    assert (g["severity"], g["action"]) == ("P1", "reboot") and g["evidence"]["required"] is True
    i = only(fs, "collector.error", "collector:ib", "parse")[0]
    assert i["severity"] == "P2" and i["evidence"]["count"] == 2 and i["evidence"]["required"] is False
    fs = run(facts(errors=[{"domain": "gpu", "kind": "parse", "message": "truncated XML"}]))[0]
    assert node_status(fs) == "error"
    fs = run(facts(errors=errs[1:]))[0]
    assert node_status(fs) == "degraded"


def test_drift_against_golden_baseline():
    base = C.make_baseline(facts(), NOW)
    st = S.empty_host_state(HOST)
    st["baseline"] = base
    assert run(facts(), state=st)[0] == []
    changed = facts(
        gpu={"driver_version": "550.54.15"},
        node={"kernel": "6.1.0-21-amd64"},
        gpus=[gpu(0, vbios_version="96.00.99.00.01")] + [gpu(i) for i in range(1, 8)],
    )
    changed["node"]["fabric_manager_version"] = "550.54.15"
    fs = run(changed, state=st)[0]
    codes = sorted((f["check"], f["component"], f["code"]) for f in fs)
    assert ("gpu.drift", "node", "driver_version") in codes
    assert ("gpu.drift", "gpu0", "vbios_version") in codes
    assert ("node.drift", "node", "kernel") in codes
    assert all(f["severity"] == "P3" for f in fs)


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
    assert only(fs, "nvswitch.sxid", code=11004)[0]["severity"] == "P2"


def test_ids_are_unique_and_stable():
    evs = [xid(79), xid(94, index=1)]
    a = [f["id"] for f in run(facts(events=evs))[0]]
    b = [f["id"] for f in run(facts(events=evs))[0]]
    assert a == b and len(set(a)) == len(a)
    assert all(re.match(r"^%s:[a-z_.]+:[^:]+(:[^:]+)*:" % HOST, i) for i in a)


def test_contained_ecc_is_p2_uncontained_or_unexplained_is_p1():
    g = [gpu(0, ecc={"volatile": {"uncorrected": 1}})] + [gpu(i) for i in range(1, 8)]
    f = only(run(facts(gpus=g, events=[xid(94, pid=1, process="python3")]))[0], "gpu.ecc", "gpu0")[0]
    assert (f["severity"], f["action"]) == ("P2", "monitor") and "contained" in f["rule"]
    f = only(run(facts(gpus=g, events=[xid(94), xid(95)]))[0], "gpu.ecc", "gpu0")[0]
    assert f["severity"] == "P1"
    f = only(run(facts(gpus=g))[0], "gpu.ecc", "gpu0")[0]
    assert (f["severity"], f["action"]) == ("P1", "reset_gpu")


def test_leak_sensor_from_ipmi_and_profile_extra_keys():
    sensors = [{"name": "Leak Detect", "type": "leak", "status": "critical", "states": ["State Asserted"]}]
    f = only(run(facts(bmc={"sensors": sensors}))[0], "bmc.leak", "bmc/Leak Detect")[0]
    assert (f["severity"], f["action"]) == ("P1", "emergency_shutdown")
    prof = dict(PROFILE, ib_link_layer="InfiniBand", fabric_manager_version="535.161.08", ib_ports=2)
    assert run(facts(), prof)[0] == []


def test_capture_analysed_later_uses_collected_at_for_windows():
    f = facts(events=[xid(79)], collected_at="2026-12-02T10:00:00Z")
    fs, _unused = C.evaluate_node(f, None, P.DEFAULT_POLICY, None, "2026-12-09T08:00:00Z", HOST)
    assert only(fs, "gpu.xid", "gpu0", 79)
    assert only(fs, "gpu.xid")[0]["respond_by"] == "2026-12-09T08:30:00Z"


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


def test_golden_baseline_may_be_a_whole_facts_document():
    st = S.empty_host_state(HOST)
    st["baseline"] = facts(gpu={"driver_version": "535.129.03"})
    fs = run(facts(), state=st)[0]
    assert [(f["check"], f["code"]) for f in fs] == [("gpu.drift", "driver_version")]


def test_reset_status_of_v12_xml_stands_in_for_the_recovery_action():
    g = [gpu(0, recovery_action=None, reset_status={"reset_required": True, "drain_and_reset_recommended": False})]
    f = only(run(facts(gpus=g))[0], "gpu.recovery_action", "gpu0")[0]
    assert (f["code"], f["severity"], f["action"]) == ("gpu_reset", "P1", "reset_gpu")
    g = [gpu(0, recovery_action=None, reset_status={"drain_and_reset_recommended": True})]
    assert only(run(facts(gpus=g))[0], "gpu.recovery_action")[0]["code"] == "drain_and_reset"
    # the reset a pending row remap needs is reported by gpu.row_remap (P2), not as a P1 recovery action
    g = [gpu(0, recovery_action=None, reset_status={"reset_required": True}, remapped_rows={"pending": True})]
    fs = run(facts(gpus=g))[0]
    assert not only(fs, "gpu.recovery_action") and only(fs, "gpu.row_remap", "gpu0", "pending")[0]["severity"] == "P2"


def test_gpu_count_is_skipped_when_the_listing_is_incomplete():
    f = facts(gpus=[gpu(0, readable=False, error="GPU is lost")])
    f["gpu"]["errors"] = [
        {"domain": "gpu", "kind": "tool_error", "message": "nvidia-smi -q -x: exit 15"},
        {"domain": "gpu", "kind": "unreadable", "message": "GPU 0 lost"},
    ]
    fs = run(f, PROFILE)[0]
    assert not only(fs, "gpu.missing", "node", "count")
    assert only(fs, "gpu.missing", "gpu0", "unreadable")
    assert not only(fs, "collector.error", "collector:gpu", "unreadable")  # said by gpu.missing already
    assert only(fs, "collector.error", "collector:gpu", "tool_error")


def test_ib_and_bmc_drift():
    f = facts(bmc={"mc": {"firmware_revision": "1.10"}, "redfish": {"systems": [{"id": "1", "bios_version": "2.1"}]}})
    st = S.empty_host_state(HOST)
    st["baseline"] = C.make_baseline(f)
    f2 = copy.deepcopy(f)
    f2["ib"]["hcas"][1]["fw_version"] = "28.40.1000"
    f2["bmc"]["mc"]["firmware_revision"] = "1.20"
    f2["bmc"]["redfish"]["systems"][0]["bios_version"] = "2.3"
    got = sorted((x["check"], x["component"], x["code"]) for x in run(f2, state=st)[0])
    assert got == [
        ("bmc.drift", "bmc", "bios_version"),
        ("bmc.drift", "bmc", "firmware_revision"),
        ("ib.drift", "mlx5_1", "fw_version"),
    ]


def test_escalation_history_is_pruned_and_counted_once_per_incident():
    _unused, st = run(facts(events=[xid(79)]))
    for minute in (5, 10, 15):
        _unused, st = run(facts(events=[xid(79)]), state=st, now="2026-12-02T10:%02d:00Z" % minute)
    assert len(st["escalation"]) == 1
    _unused, st = run(facts(boot="b2"), state=st, now="2027-03-01T10:00:00Z")
    assert st["escalation"] == []  # older than the longest window


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
