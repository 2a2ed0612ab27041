# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Onboarding stage logic (_onboard_checks, _onboard_burnin, _onboard_record, _onboard_render).

Facts come from simnode states captured and parsed by the real collectors."""

from __future__ import annotations

import copy
import json
import os
import random
import sys
from pathlib import Path

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import collect as _collect, nccl as _nccl

from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard import (
    burnin as _onboard_burnin,
    checks as _onboard_checks,
    record as _onboard_record,
    render as _onboard_render,
    stage as _onboard_stage,
)

REPO = Path(__file__).resolve().parents[4]
TOOLS = str(REPO / "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

from simnode import faults  # noqa: E402
from simnode.capture import capture  # noqa: E402
from simcluster.generate import NODE_CLASS  # noqa: E402
from simcluster.generate import PROFILE as SIM_PROFILE  # noqa: E402
from simnode.state import default_state  # noqa: E402

NCCL = REPO / "tests" / "fixtures" / "nccl"
PROFILE = SIM_PROFILE[NODE_CLASS]  # the simulated cluster's H100 class (extra keys are ignored)
ACC = {"gpu_memory_mib": 81559, "hca_count": 8}


def _facts(tmp, state):
    d = os.path.join(str(tmp), "cap-%d" % random.randint(0, 1 << 30))
    capture(state, d)
    return _collect.collect_all(capture_dir=d)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("onb")
    state = default_state("gpu-node-01")
    return state, _facts(tmp, state), tmp


def test_inventory_clean(healthy):
    _state, facts, _tmp = healthy
    v = _onboard_checks.check_inventory(facts, PROFILE, ACC)
    assert v["problems"] == [] and v["passed"] is True
    ev = v["evidence"]
    assert ev["gpu_count"] == 8 and len(ev["gpu_serials"]) == 8 and all(ev["gpu_serials"].values())
    assert len(ev["hcas"]) == 8 and ev["ib_ports_active"] == 8 and ev["bmc_reachable"] is True


def test_inventory_wrong_count_model_links_ports(healthy):
    state, _facts_ok, tmp = healthy
    s = copy.deepcopy(state)
    s["gpus"].pop()
    faults.apply(s, "ib_port_down", random.Random(1), hca="mlx5_3")
    v = _onboard_checks.check_inventory(_facts(tmp, s), PROFILE, ACC)
    assert v["passed"] is False
    assert "GPU count 7, profile expects 8" in v["problems"]
    assert any(p.startswith("7 IB ports ACTIVE, profile expects 8 (not active: mlx5_3/1)") for p in v["problems"])
    v2 = _onboard_checks.check_inventory(_facts_ok, dict(PROFILE, gpu_model="B200", nvlinks_per_gpu=12), ACC)
    assert sum("profile expects B200" in p for p in v2["problems"]) == 8
    assert sum("NVLinks up, profile expects 12" in p for p in v2["problems"]) == 8


def test_inventory_memory_hca_bmc_and_no_profile(healthy):
    _state, facts, _tmp = healthy
    f = copy.deepcopy(facts)
    f["gpu"]["gpus"][2]["memory"]["total_mib"] = 40000
    f["gpu"]["gpus"][4]["serial"] = None
    f["ib"]["hcas"].pop()
    f["bmc"] = {"source": None, "errors": [{"kind": "missing", "message": "ipmitool not found"}]}
    v = _onboard_checks.check_inventory(f, PROFILE, ACC)
    probs = v["problems"]
    assert any(p.startswith("GPU 2 (") and "memory 40000 MiB, expected 81559 MiB" in p for p in probs)
    assert "7 HCAs, expected 8" in probs
    assert "BMC not reachable: missing: ipmitool not found" in probs
    assert "GPU serial numbers missing for GPU 4" in probs
    assert (
        _onboard_checks.check_inventory(f, PROFILE, dict(ACC, bmc_required=False, hca_count=7))["problems"].count(
            "7 HCAs, expected 8"
        )
        == 0
    )
    assert _onboard_checks.check_inventory(facts, {}, None)["problems"][0].startswith("no hardware profile")


def test_compliance(healthy):
    _state, facts, _tmp = healthy
    ok = {"h100": {"driver": "535.161.08", "vbios": "96.00.74.00.0D", "hca_fw": "28.39.1002"}}
    v = _onboard_checks.check_compliance(facts, ok, "h100", "gpu-node-01")
    assert v["passed"] and v["remedy"] is None
    old = {"h100": {"driver": "550.127.05", "hca_fw": "28.41.1000"}}
    v = _onboard_checks.check_compliance(facts, old, "h100", "gpu-node-01", inventory="inv/prod", ticket="T-9")
    assert not v["passed"] and len(v["problems"]) == 2
    assert v["problems"][0].startswith("hca_fw ['28.39.1002'] on mlx5_0")
    assert "550.127.05" in v["problems"][1]
    assert v["remedy"] == (
        "ansible-playbook -i inv/prod playbooks/upgrade.yml -e gpuops_targets=gpu-node-01 -e gpuops_ticket=T-9"
        " -e gpuops_change_id=<change id>"
    )
    nofm = copy.deepcopy(facts)
    nofm["node"]["fabric_manager_version"] = None
    nofm["node"]["services"] = {}
    v = _onboard_checks.check_compliance(nofm, {"h100": {"fabric_manager": "535.161.08"}}, "h100", "n")
    assert len(v["problems"]) == 1 and "version unknown" in v["problems"][0]  # never assumed fine
    assert not _onboard_checks.check_compliance(facts, {}, "h100", "n")["passed"]


def test_health():
    findings = [
        {"severity": "P3", "check": "scheduler.node_state", "component": "slurm", "message": "drained"},
        {"severity": "P1", "check": "gpu.xid", "component": "gpu3", "message": "Xid 79"},
        {"severity": "P2", "check": "ib.errors", "component": "mlx5_0/1", "message": "symbol errors"},
    ]
    v = _onboard_checks.check_health(findings)
    assert v["problems"] == ["P1 gpu.xid gpu3: Xid 79", "P2 ib.errors mlx5_0/1: symbol errors"]
    assert v["evidence"]["findings_by_severity"] == {"P3": 1, "P1": 1, "P2": 1}
    assert _onboard_checks.check_health(findings, ignore=["ib.errors"])["problems"] == ["P1 gpu.xid gpu3: Xid 79"]
    assert _onboard_checks.check_health([])["passed"]


def _nccl_res(name):
    return _nccl.parse((NCCL / name).read_text(), name)


def test_burnin_clean_and_deltas(healthy):
    state, before, tmp = healthy
    dcgm_ok = {"level": 2, "overall": "pass", "tests": [], "gpus": {"0": "pass"}, "errors": []}
    runs = [{"name": "single-node", "result": _nccl_res("allreduce-2node-16rank-large.txt")}]
    v = _onboard_burnin.check_burnin(before, before, dcgm_ok, runs, {"nccl_min_busbw_gbps": 350})
    assert v["problems"] == [] and v["evidence"]["new_events"] == 0
    s = copy.deepcopy(state)
    faults.apply(s, "xid48", random.Random(2), gpu=3)
    s["hcas"][2]["ports"][0]["counters"]["symbol_error"] += 7
    faults.apply(s, "thermal_throttle", random.Random(3), gpu=6)
    after = _facts(tmp, s)
    v = _onboard_burnin.check_burnin(before, after, dcgm_ok, runs, {"nccl_min_busbw_gbps": 350})
    probs = v["problems"]
    assert not v["passed"]
    assert sum(p.startswith("new Xid 48 on GPU 3 (") for p in probs) == 1
    assert sum(p.startswith("new Xid 63 on GPU 3 (") for p in probs) == 1
    assert "IB port mlx5_2/1 symbol_error +7 during burn-in" in probs
    assert any("ECC volatile uncorrected +1" in p and p.startswith("GPU 3 (") for p in probs)
    assert any(p.startswith("GPU 3 (") and "row remap pending" in p for p in probs)
    assert any(p.startswith("GPU 6 (") and "throttled (" in p for p in probs)
    assert v["evidence"]["new_events"] >= 2


def test_burnin_gpu_lost_and_port_down(healthy):
    state, before, tmp = healthy
    s = copy.deepcopy(state)
    faults.apply(s, "xid79", random.Random(4), gpu=1)
    faults.apply(s, "ib_port_down", random.Random(5), hca="mlx5_6")
    probs = _onboard_burnin.counter_deltas(before, _facts(tmp, s))
    assert any(p.startswith("GPU 1 (") and "unreadable after burn-in" in p for p in probs), probs
    assert "only 1 of 8 GPUs listed after burn-in (a GPU was lost)" in probs
    assert any(p.startswith("new Xid 79 on GPU 1 (00000000:3B:00.0)") for p in probs)
    assert any(p.startswith("IB port mlx5_6/1 went ") for p in probs)


def test_dcgm_fail_hang_and_warn(healthy):
    _state, facts, _tmp = healthy
    dcgm = {
        "level": 3,
        "overall": "fail",
        "tests": [
            {"name": "Memory", "result": "fail", "gpus": {"5": "fail", "0": "pass"}, "messages": ["GPU 5 DBE"]},
            {"name": "Targeted Power", "result": "warn", "gpus": {"2": "warn"}, "messages": ["GPU 2 power"]},
        ],
        "gpus": {"0": "pass", "2": "warn", "5": "fail"},
        "errors": [],
    }
    probs = _onboard_burnin.check_dcgm(dcgm, facts)
    assert (
        len(probs) == 1 and probs[0].startswith("dcgmi diag GPU 5 (") and probs[0].endswith("fail in Memory: GPU 5 DBE")
    )
    assert len(_onboard_burnin.check_dcgm(dcgm, facts, fail_on_warn=True)) == 2
    hung = {"level": 3, "overall": None, "tests": [], "gpus": {}, "errors": [{"kind": "timeout", "message": "x"}]}
    assert _onboard_burnin.check_dcgm(hung) == ["dcgmi diag -r 3 timed out: x"]
    assert _onboard_burnin.check_dcgm({"level": 1, "tests": [], "gpus": {}, "errors": []}) == [
        "dcgmi diag produced no result"
    ]


def test_nccl_thresholds_and_errors():
    low = {"name": "single-node", "result": _nccl_res("allreduce-low-busbw.txt")}
    wrong = {"name": "rail mlx5_1", "result": _nccl_res("allreduce-wrong-results.txt"), "min_busbw_gbps": 100}
    trunc = {"name": "t", "result": _nccl_res("allreduce-truncated.txt")}
    timed = {"name": "h", "result": {"rows": [], "errors": [{"kind": "timeout", "message": "timed out after 5 s"}]}}
    probs, table = _onboard_burnin.check_nccl([low, wrong, trunc, timed], 400)
    assert probs[0] == "NCCL single-node: avg bus bandwidth 119.9 GB/s below the threshold 400 GB/s"
    assert "NCCL rail mlx5_1: 24 wrong results (data corruption)" in probs
    assert not any("rail mlx5_1: avg bus bandwidth" in p for p in probs)  # its own threshold 100
    assert any(p.startswith("NCCL t: no bus bandwidth in the output") for p in probs)
    assert "NCCL h timed out: timed out after 5 s" in probs
    assert len(table) == 4 and table[1]["threshold_gbps"] == 100
    peak, _t = _onboard_burnin.check_nccl([low], 119.95, metric="peak")
    assert peak == []


def test_record_resume_and_signoff(tmp_path):
    rec = _onboard_record.new_record("n1", "h100")
    assert _onboard_record.resume_from(rec) == 0
    ok = _onboard_checks.verdict
    for st in ("inventory", "compliance", "health"):
        rec = _onboard_record.record_stage(
            rec, ok(st, [], {"x": 1}), by="alice", now="2026-12-02T10:00:00Z", ticket="T"
        )
    assert _onboard_record.resume_from(rec) == 3 and rec["status"] == "in_progress"
    rec = _onboard_record.record_stage(
        rec, ok("burnin", ["new Xid 48 on GPU 3", "IB port mlx5_2/1 symbol_error +7"], {})
    )
    assert rec["status"] == "failed" and rec["failed_stage"] == "burnin" and _onboard_record.resume_from(rec) == 3
    assert (
        _onboard_record.drain_reason(rec)
        == "onboard burnin failed: new Xid 48 on GPU 3; IB port mlx5_2/1 symbol_error +7"
    )
    assert len(_onboard_record.drain_reason(_onboard_record.record_stage(rec, ok("burnin", ["x" * 500], {})))) == 200
    # a failure of an earlier stage makes the later passes stale
    rec2 = _onboard_record.record_stage(rec, ok("compliance", ["driver old"], {}))
    assert rec2["stages"]["health"]["status"] == "stale" and _onboard_record.resume_from(rec2) == 1
    for st in ("burnin", "baseline", "service"):
        rec = _onboard_record.record_stage(rec, ok(st, [], {}), by="bob")
    assert rec["status"] == "accepted" and rec["accepted_at"] and _onboard_record.resume_from(rec) == 6
    assert rec["stages"]["burnin"]["attempt"] == 2 and rec["stages"]["inventory"]["by"] == "alice"
    md = _onboard_render.render_signoff(rec)
    assert md.count("| passed |") == 6 and "**accepted**" in md and "- FAIL" not in md
    prom = _onboard_render.prometheus_text(rec, now_ts=1.0)
    assert prom.count("gpuops_onboard_stage_passed{") == 6 and 'gpuops_onboard_accepted{host="n1"} 1' in prom
    with pytest.raises(ValueError):
        _onboard_record.record_stage(rec, ok("bogus", [], {}))
    path = Path(_onboard_record.record_path(str(tmp_path), "n1"))
    assert _onboard_record.load_record(str(tmp_path), "n1")["status"] == "new"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(rec))
    assert _onboard_record.load_record(str(tmp_path), "n1")["status"] == "accepted"
    path.write_text("{broken")
    with pytest.raises(ValueError):
        _onboard_record.load_record(str(tmp_path), "n1")


def test_slurm_node_definition():
    node = {
        "name": "n1",
        "state": "IDLE+DRAIN",
        "base_state": "IDLE",
        "flags": ["DRAIN"],
        "gres": "gpu:h100:8",
        "gres_gpus": 8,
        "partitions": ["gpu"],
        "reason": "gpuops: onboarding",
    }
    assert _onboard_checks.check_slurm_node([node], "n1", PROFILE)["passed"]
    bad = dict(
        node, gres="gpu:h100:4", gres_gpus=4, partitions=[], state="DOWN*", base_state="DOWN", flags=["NOT_RESPONDING"]
    )
    probs = _onboard_checks.check_slurm_node([bad], "n1", PROFILE)["problems"]
    assert len(probs) == 4 and "Slurm Gres=gpu:h100:4 gives 4 GPUs, profile expects 8" in probs
    assert _onboard_checks.check_slurm_node([], "n1", PROFILE)["problems"] == ["Slurm does not know node n1"]


def test_garbage_inputs_never_raise():
    for junk in (None, 1, "x", [], {"gpu": "x", "ib": [1], "kernel": {"events": ["x", None]}}):
        assert isinstance(_onboard_checks.check_inventory(junk, PROFILE, junk)["problems"], list)
        assert isinstance(_onboard_burnin.counter_deltas(junk, junk, junk), list)
        assert isinstance(_onboard_burnin.check_burnin(junk, junk, junk, junk, junk, None)["problems"], list)
        assert isinstance(_onboard_checks.check_health(junk)["problems"], list)


def test_golden_baseline_is_read_by_later_inspections(healthy, tmp_path):
    """Stage 5 through the module's own code path, then a plain inspection with the same state dir: drift."""
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect

    state, facts, tmp = healthy
    p = {"stage": "baseline", "problems": None, "facts": facts, "state_dir": str(tmp_path), "host": "gpu-node-01"}
    v = _onboard_stage.evaluate(p, False)
    assert v["passed"] and Path(v["evidence"]["path"]) == tmp_path / "baselines" / "gpu-node-01.json"
    assert not (tmp_path / "baselines" / "gpu-node-02.json").exists()
    s = copy.deepcopy(state)
    s["gpus"][2]["vbios"] = "96.00.99.00.01"
    s["gpus"][4]["serial"] = "1650999999999"
    d = tmp / "drifted"
    capture(s, str(d))
    report = _inspect.inspect_nodes({"gpu-node-01": {"capture_dir": str(d)}}, state_dir=str(tmp_path))
    drift = sorted(
        (f["component"], f["code"]) for f in report["nodes"]["gpu-node-01"]["findings"] if f["check"] == "gpu.drift"
    )
    assert drift == [("gpu2", "vbios_version"), ("gpu4", "serial")]
    v_check = _onboard_stage.evaluate(dict(p, facts={}), True)
    assert v_check["problems"] == ["no GPU facts to take a golden baseline from"]
