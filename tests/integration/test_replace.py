"""Drain-and-replace end to end on the test bed (playbooks/replace.yml, role gpuops.cluster.replace).

A node's BMC is the IPMI emulator (tests/testbed/bmc, mapped through an extra inventory file); the "part swap" is a
simnode state edit that gives the failed GPU a new serial between the prepare and the return phase.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect
from ansible_collections.gpuops.cluster.plugins.plugin_utils.replace import parts as _replace

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
from simnode import faults  # noqa: E402

import _state_db  # noqa: E402

GPU = 2  # the failed GPU's index


@pytest.fixture(scope="module")
def bed(testbed, bmc_emulators, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replace")
    b = bmc_emulators
    inv = tmp / "bmc-inventory.yml"
    hosts = {
        h: {
            "gpuops_bmc_address": "127.0.0.1",
            "gpuops_bmc_port": b.ipmi_port,
            "gpuops_bmc_protocol": "ipmi",
            "gpuops_bmc_user": b.user,
            "gpuops_bmc_password": b.password,
        }  # fmt: skip
        for h in testbed.nodes[:2]
    }
    inv.write_text(json.dumps({"all": {"children": {"gpu_nodes": {"hosts": hosts}}}}))
    power_file = Path(b.work) / "ipmi" / "power"
    yield {"tmp": tmp, "inv": inv, "evidence": tmp / "evidence", "bmc": b, "power": power_file}
    power_file.write_text("1\n")  # leave the shared emulator powered on


def state_dir(bed, ticket):
    """One state dir (and audit chain) per test: the isolation guard remembers recent isolations there."""
    return bed["tmp"] / ticket / "state"


def replace(testbed, bed, host, ticket, phase, component, *extra):
    sd = state_dir(bed, ticket)
    env = dict(testbed.env, ANSIBLE_CALLBACKS_ENABLED="gpuops.cluster.audit", GPUOPS_STATE_DIR=str(sd))
    cmd = [
        str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(testbed.inventory), "-i", str(bed["inv"]),
        str(REPO / "playbooks" / "replace.yml"),
        "-e", "replace_host=%s" % host, "-e", "replace_ticket=%s" % ticket, "-e", "replace_part=gpu",
        "-e", "replace_component=%s" % component, "-e", "replace_phase=%s" % phase,
        "-e", "replace_emergency_reason='integration test: RMA outside the window'",
        "-e", "gpuops_state_dir=%s" % sd, "-e", "gpuops_evidence_dir=%s" % bed["evidence"],
        "-e", "replace_power_verify_delay=1", "-e", "replace_bmc_timeout=10",
    ] + list(extra)  # fmt: skip
    return testbed._run(cmd, check=False, timeout=240, env=env)


def record(bed, ticket, host):
    return _replace.load_record(str(state_dir(bed, ticket)), ticket, host)


def bus_of(testbed, host):
    return testbed.load_state(host)["gpus"][GPU]["bus_id"]


def test_row_remap_failure_replaced_end_to_end(testbed, bed):
    host, ticket = testbed.nodes[0], "RMA-E2E-1"
    with testbed.edit_state(host) as s:
        faults.apply(s, "row_remap_failure", gpu=GPU)
        old_serial = s["gpus"][GPU]["serial"]
    bus = bus_of(testbed, host)

    # ---- prepare: guard (emergency override), isolate, drain, evidence, power off, hand over
    res = replace(testbed, bed, host, ticket, "prepare", bus)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert bed["bmc"].password not in res.stdout
    assert "DRAIN" in testbed.node_state(host)
    assert bed["power"].read_text().strip() == "0"
    rec = record(bed, ticket, host)
    assert rec["status"] == "waiting" and rec["step"] == "handed_over"
    assert rec["before"]["gpu"][bus] == old_serial

    bundle = bed["evidence"] / ticket / host
    assert _replace.verify_manifest(str(bundle))["ok"] is True
    manifest = json.loads((bundle / "manifest.json").read_text())
    paths = {f["path"] for f in manifest["files"]}
    assert {"capture/nvidia-smi-q.xml", "capture/dcgmi-diag.txt", "capture/ipmitool-sel.txt", "serials.json",
            "bmc-remote.json"} <= paths  # fmt: skip
    assert manifest["serials"]["gpu"][bus] == old_serial and manifest["gpu_uuids"][bus].startswith("GPU-")

    # the policy's own answer for this evidence is "replace" for exactly that GPU
    report = _inspect.inspect_nodes({host: {"capture_dir": str(bundle / "capture")}}, include_facts=False)
    replace_for = [f for f in report["nodes"][host]["findings"] if f["action"] == "replace"]
    assert [(f["check"], f["component"], f["code"]) for f in replace_for] == [
        ("gpu.row_remap", "gpu%d" % GPU, "failure")
    ]
    assert bus in replace_for[0]["message"]

    # ---- the technician swaps the GPU: new serial, new UUID, healthy row remapper
    with testbed.edit_state(host) as s:
        g = s["gpus"][GPU]
        g.update(serial="1659" + old_serial[4:][::-1], uuid="GPU-11111111-2222-3333-4444-555555555555")
        g["remap"].update(failure=False, pending=False, unc=0)
        g["remap"]["histogram"].update(max=2560, high=0, partial=0, low=0, none=0)
        s["faults"] = []

    # ---- return: power on, wait, verify, acceptance (inspection gate), resume, close
    res = replace(testbed, bed, host, ticket, "return", bus)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert bed["power"].read_text().strip() == "1"
    rec = record(bed, ticket, host)
    assert rec["status"] == "closed" and rec["verdict"]["verdict"] == "replaced"
    assert rec["verdict"]["changed"] == [bus] and rec["after"]["gpu"][bus] != old_serial
    assert _replace.done_steps(rec) == list(_replace.STEPS)
    assert rec["steps"]["isolated"]["via"] == "gpuops.cluster.isolate"
    # a rerun of the return phase on the closed record changes nothing
    res = replace(testbed, bed, host, ticket, "return", bus)
    assert res.returncode == 0 and "is closed" in res.stdout, res.stdout[-4000:]
    assert record(bed, ticket, host) == rec
    assert rec["steps"]["accepted"]["mode"] in ("inspect", "onboard")
    testbed.wait_for(lambda: testbed.node_state(host) == "IDLE", timeout=20, what="node back in service")

    # every step audited, the chain verifies
    log = state_dir(bed, ticket) / "audit" / "audit.log"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    guards = [x for x in lines if x["event"] == "guard"]
    assert guards and all(g["guard"]["allowed"] for g in guards)
    assert {g["guard"]["decision"] for g in guards} == {"emergency_override"}
    assert any(x["event"] == "task" and x.get("ticket") == ticket and x.get("host") == host for x in lines)
    ver = testbed.module("localhost", "gpuops.cluster.audit_verify", {"path": str(log)})
    assert ver.get("ok") is True and ver["records"] == len(lines), ver


def test_serial_unchanged_is_refused_and_the_node_stays_drained(testbed, bed):
    host, ticket = testbed.nodes[1], "RMA-NOSWAP-1"
    with testbed.edit_state(host) as s:
        faults.apply(s, "row_remap_failure", gpu=GPU)
    bus = bus_of(testbed, host)
    # the other paths: powered off and on by the technician, no dcgmi diag; isolated through the isolate role (its
    # guard) all the same. Check mode first: it shows what opening the record would do and writes nothing.
    slim = ("-e", "replace_bmc_power=false", "-e", "replace_dcgm_level=0")
    res = replace(testbed, bed, host, ticket, "prepare", bus, *(slim + ("--check",)))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert "next isolated" in res.stdout and record(bed, ticket, host) is None
    assert "DRAIN" not in testbed.node_state(host)
    res = replace(testbed, bed, host, ticket, "prepare", bus, *slim)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    rec = record(bed, ticket, host)
    assert rec["steps"]["isolated"]["via"] == "gpuops.cluster.isolate"
    assert rec["steps"]["powered_off"]["method"] == "technician"
    # the technician did not swap anything
    res = replace(testbed, bed, host, ticket, "return", bus, *slim)
    assert res.returncode != 0
    assert "part not replaced" in res.stdout
    rec = record(bed, ticket, host)
    assert rec["status"] == "stopped" and rec["stopped"]["step"] == "verified"
    assert rec["verdict"]["verdict"] == "not_replaced" and "resumed" not in rec["steps"]
    assert "DRAIN" in testbed.node_state(host)
    assert os.path.exists(_replace.record_path(str(state_dir(bed, ticket)), ticket, host))
    # the guard's history holds the isolation claim of this run (the guard was not skipped)
    history = _state_db.claims(state_dir(bed, ticket))
    assert [e.get("node") for e in history] == [host], history


def outcome_of(bed, ticket):
    """The newest replace run outcome (gpuops.cluster.run_outcome) under the test's state dir."""
    runs = sorted((state_dir(bed, ticket) / "runs" / "replace").glob("*.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(runs[-1].read_text())


def test_bmc_refusing_the_power_off_leaves_a_final_record_and_the_node_drained(testbed, bed):
    """Issue 21 observation 4: the BMC refuses the power-off (its chassis control cannot change the power state:
    the emulator's state file is made immutable, so ipmi_sim answers the request with an error and keeps
    reporting "on"). The record must not stay open at "evidence" with error None."""
    import subprocess

    host, ticket = testbed.nodes[0], "RMA-REFUSED-1"
    bus = bus_of(testbed, host)
    bed["power"].write_text("1\n")
    subprocess.run(["chattr", "+i", str(bed["power"])], check=True)
    try:
        res = replace(testbed, bed, host, ticket, "prepare", bus, "-e", "replace_dcgm_level=0",
                      "-e", "replace_bug_report=false", "-e", "replace_power_verify_retries=1")  # fmt: skip
    finally:
        subprocess.run(["chattr", "-i", str(bed["power"])], check=True)
    try:
        assert res.returncode == 2, res.stdout[-4000:] + res.stderr[-2000:]
        assert bed["power"].read_text().strip() == "1"  # still powered
        rec = record(bed, ticket, host)
        assert rec["status"] == "stopped", rec
        assert rec["stopped"]["step"] == "powered_off" and "powered_off" not in rec["steps"]
        assert rec["stopped"]["reason"].startswith("power-off failed: power off not confirmed: %s on - BMC: " % host)
        assert rec["stopped"]["message"] and "None" not in rec["stopped"]["message"]
        # the node's state afterwards: drained, still powered
        assert rec["left"]["power"] == "on" and "DRAIN" in rec["left"]["slurm_state"], rec["left"]
        reason = testbed.scontrol("show", "node", host).split("Reason=", 1)[1].split("\n")[0]
        assert reason.startswith("gpuops: replace stopped at power-off: ") and "[%s]" % ticket in reason, reason
        assert "DRAIN" in testbed.node_state(host)
        # the run outcome and the audit trail say it too
        out = outcome_of(bed, ticket)
        node = out["nodes"][host]
        assert out["exit_code"] == 2 and node["outcome"] == "left_drained", node
        assert node["error"] == rec["stopped"]["message"] and "DRAIN" in node["slurm_state"]
        lines = [json.loads(x) for x in (state_dir(bed, ticket) / "audit" / "audit.log").read_text().splitlines()]
        recs = [x for x in lines if x["event"] == "outcome" and x["node"] == host]
        assert recs and recs[-1]["outcome"] == "left_drained" and recs[-1]["ticket"] == ticket
        assert recs[-1]["error"] == rec["stopped"]["message"]
        assert bed["bmc"].password not in json.dumps(lines) and bed["bmc"].password not in res.stdout
    finally:
        testbed.scontrol("update", "NodeName=%s" % host, "State=RESUME")
