"""Part inventories, replacement verification, evidence manifest and the record (plugins/plugin_utils/replace/parts.py)."""

from __future__ import annotations

import copy
import json
import os

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import (
    ipmi as _ipmi,
    nvsmi_xml as _nvsmi_xml,
    redfish as _redfish,
)

from ansible_collections.gpuops.cluster.plugins.plugin_utils.replace import parts as _replace

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")


def fx(folder, name):
    with open(os.path.join(FIX, folder, name), encoding="utf-8") as fh:
        return fh.read()


@pytest.fixture(scope="module")
def facts():
    """Real samples: 8x V100 nvidia-smi -q -x, the emulated BMC's FRU, a Dell R640 Power document."""
    gpu = _nvsmi_xml.parse(fx("nvidia-smi-xml", "datakit-8xv100s-pcie-460.73.01.xml"))
    power = _redfish.parse_power(json.loads(fx("redfish", "telegraf-dell-r640-power.json")))
    red = dict(_redfish.empty(), psus=power["psus"])
    red.pop("sensors", None)
    bmc = {"sensors": [], "sel": [], "fru": _ipmi.parse_fru(fx("ipmitool-fru", "openipmi-sim-fru-print.txt")),
           "redfish": red, "errors": []}  # fmt: skip
    ib = {"hcas": [{"name": "mlx5_0", "serial": None, "node_guid": "0xa088c20300e1b1c2", "board_id": "MT_0000000838"}]}
    return {"gpu": gpu, "ib": ib, "bmc": bmc}


def swap_gpu(facts, bus, serial):
    f = copy.deepcopy(facts)
    for g in f["gpu"]["gpus"]:
        if g["bus_id"] == bus:
            g["serial"] = serial
    return f


BUS = "00000000:00:0E.0"


def test_inventory_from_real_samples(facts):
    inv = _replace.part_inventory(facts)
    assert len(inv["gpu"]) == 8 and inv["gpu"][BUS] == "1562920005886"
    assert all(inv["gpu_uuid"].values())
    assert inv["psu"] == {"PSU.Slot.1": "PHARP0079G0049"}
    assert inv["node"] == {"fru:serial": "PRD-0001", "fru:board_serial": "BRD-0001", "fru:chassis_serial": "CHS-0001"}
    assert inv["hca"] == {"mlx5_0": "0xa088c20300e1b1c2"} and inv["hca_psid"] == {"mlx5_0": "MT_0000000838"}


def test_single_gpu_swap_is_replaced(facts):
    before = _replace.part_inventory(facts)
    after = _replace.part_inventory(swap_gpu(facts, BUS, "1999999999999"))
    v = _replace.verify("gpu", "00:0e.0", before, after)  # short / lower-case bus id normalized
    assert v["verdict"] == "replaced" and v["changed"] == [BUS] and v["unexpected"] == []


def test_unchanged_serial_is_part_not_replaced(facts):
    inv = _replace.part_inventory(facts)
    v = _replace.verify("gpu", BUS, inv, copy.deepcopy(inv))
    assert v["verdict"] == "not_replaced" and "part not replaced" in v["reason"]


def test_serial_unknown_before_or_after_is_not_verifiable(facts):
    before = _replace.part_inventory(facts)
    after = _replace.part_inventory(swap_gpu(facts, BUS, "N/A"))
    v = _replace.verify("gpu", BUS, before, after)
    assert v["verdict"] == "not_verifiable" and v["unknown"] == [BUS]
    gone = copy.deepcopy(after)
    del gone["gpu"][BUS]
    assert _replace.verify("gpu", BUS, before, gone)["verdict"] == "not_verifiable"


def test_another_gpu_changing_too_is_not_verifiable(facts):
    before = _replace.part_inventory(facts)
    f = swap_gpu(swap_gpu(facts, BUS, "1"), "00000000:00:0F.0", "2")
    v = _replace.verify("gpu", BUS, before, _replace.part_inventory(f))
    assert v["verdict"] == "not_verifiable" and v["unexpected"] == ["00000000:00:0F.0"]


def test_baseboard_swap_changes_every_gpu(facts):
    before = _replace.part_inventory(facts)
    f = copy.deepcopy(facts)
    for i, g in enumerate(f["gpu"]["gpus"]):
        g["serial"] = "NEW%d" % i
    assert _replace.verify("baseboard", None, before, _replace.part_inventory(f))["verdict"] == "replaced"
    one = swap_gpu(facts, BUS, "NEW")
    v = _replace.verify("baseboard", None, before, _replace.part_inventory(one))
    assert v["verdict"] == "not_replaced" and len(v["unchanged"]) == 7


def test_psu_dimm_hca_node(facts):
    before = _replace.part_inventory(facts)
    f = copy.deepcopy(facts)
    f["bmc"]["redfish"]["psus"][0]["serial"] = "NEWPSU"
    f["ib"]["hcas"][0]["node_guid"] = "0xffff"
    f["bmc"]["fru"][0]["serial"] = "PRD-0002"
    after = _replace.part_inventory(f)
    assert _replace.verify("psu", "PSU.Slot.1", before, after)["verdict"] == "replaced"
    assert _replace.verify("hca", "mlx5_0", before, after)["verdict"] == "replaced"
    assert _replace.verify("node", None, before, after)["verdict"] == "replaced"
    assert _replace.verify("psu", "PSU.Slot.1", before, before)["verdict"] == "not_replaced"
    assert _replace.verify("dimm", "DIMM3", before, after)["verdict"] == "not_verifiable"  # no DIMM serials read
    assert _replace.verify("psu", None, before, after)["verdict"] == "not_verifiable"


def test_fan_needs_operator_confirmation_and_clean_sensors():
    assert _replace.verify("fan", None, {}, {}, fan_confirmed=False, fan_clean=True)["verdict"] == "not_verifiable"
    assert _replace.verify("fan", None, {}, {}, fan_confirmed=True, fan_clean=False)["verdict"] == "not_verifiable"
    assert _replace.verify("fan", None, {}, {}, fan_confirmed=True, fan_clean=True)["verdict"] == "replaced"


def test_fan_clean_from_the_real_sdr_sample():
    sensors = _ipmi.parse_sdr(fx("ipmitool-sdr", "openipmi-sim-sdr-elist-faults.txt"))  # FAN1 800 RPM (lcr)
    assert _replace.fan_clean({"sensors": sensors, "sel": []}) is False
    ok = [dict(s, status="ok") for s in sensors if s["type"] == "fan"]
    assert _replace.fan_clean({"sensors": ok, "sel": []}) is True
    crit = [{"sensor_type": "Fan", "sensor": "FAN1", "severity": "critical", "time": "2026-12-02T10:00:00"}]
    assert _replace.fan_clean({"sensors": ok, "sel": crit}) is False
    assert _replace.fan_clean({"sensors": ok, "sel": crit}, since="2026-12-02T11:00:00") is True


def test_lost_gpu_serial_from_the_state_dir(facts):
    f = copy.deepcopy(facts)
    g = next(g for g in f["gpu"]["gpus"] if g["bus_id"] == BUS)
    g.update(serial=None, readable=False)
    inv = _replace.part_inventory(f, state_gpus={BUS: {"serial": "1562920005886"}})
    assert inv["gpu"][BUS] == "1562920005886"


def test_unknown_part_raises():
    with pytest.raises(_replace.ReplaceError):
        _replace.verify("cpu", None, {}, {})


# ---------------------------------------------------------------------------------------------- manifest
def test_manifest_hashes_every_file_and_detects_tampering(tmp_path):
    (tmp_path / "capture").mkdir()
    (tmp_path / "capture" / "kernel.log").write_text("Xid 79\n")
    (tmp_path / "serials.json").write_text("{}")
    files = _replace.hash_tree(str(tmp_path))
    assert [f["path"] for f in files] == ["capture/kernel.log", "serials.json"]
    m = _replace.manifest({"ticket": "T-1", "host": "n1", "part": "gpu", "component": BUS}, files, {"gpu": {BUS: "1"}})
    (tmp_path / "manifest.json").write_text(json.dumps(m))
    assert _replace.verify_manifest(str(tmp_path))["ok"] is True
    (tmp_path / "capture" / "kernel.log").write_text("edited\n")
    (tmp_path / "extra.txt").write_text("x")
    res = _replace.verify_manifest(str(tmp_path))
    assert res["ok"] is False and res["mismatched"] == ["capture/kernel.log"] and res["extra"] == ["extra.txt"]


def test_manifest_sha256_is_the_real_digest(tmp_path):
    import hashlib

    (tmp_path / "a").write_bytes(b"abc")
    assert _replace.hash_tree(str(tmp_path))[0]["sha256"] == hashlib.sha256(b"abc").hexdigest()


# ---------------------------------------------------------------------------------------------- record
def test_record_steps_in_order_and_resumable(tmp_path):
    sd = str(tmp_path)
    r = _replace.new_record("T-1", "n1", "gpu", BUS, now="2026-12-02T10:00:00Z")
    assert _replace.next_step(r) == "isolated"
    with pytest.raises(_replace.ReplaceError):
        _replace.advance(r, "evidence")  # isolated and drained first
    for step in ("isolated", "drained"):
        _replace.advance(r, step)
    _replace.advance(r, "evidence", {"before": {"gpu": {BUS: "1"}}, "evidence": {"dir": "/x"}})
    assert r["before"] == {"gpu": {BUS: "1"}} and r["evidence"] == {"dir": "/x"}
    _replace.save_record(sd, r)
    again = _replace.load_record(sd, "T-1", "n1")
    assert _replace.done_steps(again) == ["opened", "isolated", "drained", "evidence"]
    assert _replace.next_step(again) == "powered_off"
    _replace.advance(again, "powered_off")
    _replace.advance(again, "handed_over")
    assert again["status"] == "waiting"
    _replace.advance(again, "handed_over")  # idempotent
    assert again["steps"]["handed_over"]["at"]


def test_stop_and_reopen(tmp_path):
    r = _replace.new_record("T-2", "n1", "gpu", BUS)
    for s in _replace.PREPARE_STEPS[1:] + ("powered_on", "node_up"):
        _replace.advance(r, s)
    _replace.stop(r, "verified", "part not replaced: serial unchanged", {"verdict": {"verdict": "not_replaced"}})
    assert r["status"] == "stopped" and r["stopped"]["step"] == "verified" and r["verdict"]["verdict"] == "not_replaced"
    assert _replace.next_step(r) == "verified"
    _replace.reopen_for_prepare(r)
    assert r["status"] == "open" and _replace.next_step(r) == "powered_off" and r["step"] == "evidence"
    for s in ("powered_off", "handed_over", "powered_on", "node_up", "verified", "accepted", "resumed", "closed"):
        _replace.advance(r, s)
    assert r["status"] == "closed"
    with pytest.raises(_replace.ReplaceError):
        _replace.advance(r, "closed")


@pytest.mark.parametrize("ticket,host", [("../x", "n1"), ("T 1", "n1"), ("T-1", "a/b"), ("", "n1")])
def test_unsafe_names_are_refused(tmp_path, ticket, host):
    with pytest.raises(_replace.ReplaceError):
        _replace.record_path(str(tmp_path), ticket, host)


def test_corrupt_record_is_an_error_not_a_fresh_start(tmp_path):
    p = tmp_path / "replace" / "T-1-n1.json"
    p.parent.mkdir()
    p.write_text("{not json")
    with pytest.raises(_replace.ReplaceError):
        _replace.load_record(str(tmp_path), "T-1", "n1")
    p.write_bytes(b"\xff\xfe")
    with pytest.raises(_replace.ReplaceError):
        _replace.load_record(str(tmp_path), "T-1", "n1")


# ---------------------------------------------------------------------------------------------- commands
def test_apply_command_leaves_the_loaded_record_alone_and_repeats_are_no_ops():
    rec = _replace.apply_command(None, "open", "T-4", "n1", {"part": "gpu", "component": BUS, "phase": "prepare"})
    nxt = _replace.apply_command(rec, "step", "T-4", "n1", {"step": "isolated", "data": {"via": "x"}})
    assert "isolated" not in rec["steps"] and nxt["steps"]["isolated"]["via"] == "x"
    assert _replace.apply_command(nxt, "step", "T-4", "n1", {"step": "isolated", "data": {"via": "y"}}) == nxt
    with pytest.raises(_replace.ReplaceError, match="unknown command"):
        _replace.apply_command(nxt, "bogus", "T-4", "n1", {})


def test_a_closed_record_reruns_return_as_a_no_op_and_refuses_prepare():
    rec = _replace.new_record("T-5", "n1", "gpu", BUS)
    for step in _replace.STEPS[1:]:
        _replace.advance(rec, step)
    req = {"part": "gpu", "component": BUS}
    assert _replace.apply_command(rec, "open", "T-5", "n1", dict(req, phase="return")) == rec
    with pytest.raises(_replace.ReplaceError, match="is closed"):
        _replace.apply_command(rec, "open", "T-5", "n1", dict(req, phase="prepare"))


def test_write_bundle_refuses_paths_outside_the_bundle(tmp_path):
    with pytest.raises(_replace.ReplaceError, match="outside"):
        _replace.write_bundle(str(tmp_path), {"ticket": "T"}, {}, {"../x.json": {}})
    assert not (tmp_path.parent / "x.json").exists() and not (tmp_path / "manifest.json").exists()


# ---------------------------------------------------------------------------------------------- fuzz
_val = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(
        ["gpu", "gpus", "bus_id", "serial", "readable", "ib", "hcas", "name", "bmc", "redfish", "psus", "memory",
         "fru", "id", "sensors", "type", "status", "systems"]), c, max_size=4),
    max_leaves=20,
)  # fmt: skip


@seed(20261202)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_val, _val, st.sampled_from(_replace.PARTS), st.sampled_from([None, BUS, "PSU1", "mlx5_0"]))
def test_fuzz_inventory_and_verify_never_raise(a, b, part, comp):
    inv_a, inv_b = _replace.part_inventory(a), _replace.part_inventory(b)
    v = _replace.verify(part, comp, inv_a, inv_b, fan_confirmed=True, fan_clean=_replace.fan_clean(b))
    assert v["verdict"] in (_replace.REPLACED, _replace.NOT_REPLACED, _replace.NOT_VERIFIABLE)
