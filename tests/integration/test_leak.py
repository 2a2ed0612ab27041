"""Coolant-leak response on the test bed (playbooks/leak_response.yml, role gpuops.cluster.leak_response).

Inventory overlay: nodes 1-2 are the Redfish emulator's two systems and node 4 has a BMC that does not answer,
all three in leak domain cdu-a; node 3 is the IPMI emulator in cdu-b. A Redfish leak fault fires the response;
a Critical LiquidFlow sensor (a cooling fault, not a leak: issue 12 item 7) does not.
"""

from __future__ import annotations

import json
import ssl
import urllib.request
from base64 import b64encode
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SYSTEM = "00000000-0000-0000-0000-0000000000%02d"


def redfish(b, method, path, body=None):
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    req = urllib.request.Request(b.redfish_url + path, method=method, data=json.dumps(body).encode() if body else None)
    req.add_header("Authorization", "Basic " + b64encode(("%s:%s" % (b.user, b.password)).encode()).decode())
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        data = r.read()
    return json.loads(data) if data else None


def power_state(b, i):
    return redfish(b, "GET", "/redfish/v1/Systems/" + SYSTEM % i)["PowerState"]


@pytest.fixture(scope="module")
def leak(testbed, bmc_emulators, tmp_path_factory):
    b = bmc_emulators
    tmp = tmp_path_factory.mktemp("leak")
    n = testbed.nodes
    common = {"gpuops_bmc_address": "127.0.0.1", "gpuops_bmc_user": b.user, "gpuops_bmc_password": b.password,
              "gpuops_bmc_validate_certs": False}  # fmt: skip
    hosts = {
        n[0]: dict(common, gpuops_leak_domain="cdu-a", gpuops_bmc_protocol="redfish", gpuops_bmc_port=b.redfish_port,
                   gpuops_bmc_system_id=SYSTEM % 1),
        n[1]: dict(common, gpuops_leak_domain="cdu-a", gpuops_bmc_protocol="redfish", gpuops_bmc_port=b.redfish_port,
                   gpuops_bmc_system_id=SYSTEM % 2),
        n[2]: dict(common, gpuops_leak_domain="cdu-b", gpuops_bmc_protocol="ipmi", gpuops_bmc_port=b.ipmi_port),
        n[3]: dict(common, gpuops_leak_domain="cdu-a", gpuops_bmc_protocol="redfish", gpuops_bmc_port=1,
                   gpuops_bmc_system_id="dead"),
    }  # fmt: skip
    # every other node of a bigger bed sits in a third domain without a BMC
    hosts.update({h: {"gpuops_leak_domain": "cdu-c"} for h in n[4:]})
    inv = tmp / "leak-inventory.yml"
    inv.write_text(json.dumps({"all": {"children": {"gpu_nodes": {"hosts": hosts}}}}))
    ipmi_power = Path(b.work) / "ipmi" / "power"
    for i in (1, 2):
        redfish(b, "POST", "/redfish/v1/Systems/%s/Actions/ComputerSystem.Reset" % (SYSTEM % i), {"ResetType": "On"})
    ipmi_power.write_text("1\n")
    yield {"tmp": tmp, "inv": inv, "bmc": b, "ipmi_power": ipmi_power}
    redfish(b, "DELETE", "/emulator/faults")
    for i in (1, 2):
        redfish(b, "POST", "/redfish/v1/Systems/%s/Actions/ComputerSystem.Reset" % (SYSTEM % i), {"ResetType": "On"})
    ipmi_power.write_text("1\n")


def respond(testbed, leak, source, alert):
    sd = leak["tmp"] / "state"
    env = dict(testbed.env, ANSIBLE_CALLBACKS_ENABLED="gpuops.cluster.audit", GPUOPS_STATE_DIR=str(sd))
    cmd = [
        str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(testbed.inventory), "-i", str(leak["inv"]),
        str(REPO / "playbooks" / "leak_response.yml"), "-e", "leak_response_source=%s" % source,
        "-e", "leak_response_alert_id=%s" % alert, "-e", "gpuops_state_dir=%s" % sd,
        "-e", "leak_response_bmc_timeout=5", "-e", "leak_response_power_verify_delay=1",
    ]  # fmt: skip
    res = testbed._run(cmd, check=False, timeout=180, env=env)
    path = sd / "leak" / ("%s.json" % alert)
    return res, (json.loads(path.read_text()) if path.exists() else None), sd


def slurm_states(testbed):
    return {h: testbed.node_state(h) for h in testbed.nodes}


def outcome_of(sd):
    """The newest run outcome of the leak response (gpuops.cluster.run_outcome) and the audit's outcome records."""
    runs = sorted((sd / "runs" / "leak_response").glob("*.json"), key=lambda p: p.stat().st_mtime)
    doc = json.loads(runs[-1].read_text())
    audit = [json.loads(x) for x in (sd / "audit" / "audit.log").read_text().splitlines()]
    return doc, [x for x in audit if x["event"] == "outcome" and x.get("workflow_run_id") == doc["run_id"]]


def test_unreadable_leak_sensor_powers_off_nothing(testbed, leak):
    n = testbed.nodes
    res, result, sd = respond(testbed, leak, n[3], "ALERT-UNREADABLE")  # its BMC does not answer
    # refused, not a success: the run exits 2 and says so (issue 21 observation 3)
    assert res.returncode == 2, res.stdout[-4000:]
    assert "INCOMPLETE" in res.stdout and "refused=1" in res.stdout
    assert result["status"] == "refused" and "nothing powered off" in result["decision"], result
    assert result["outcomes"][n[3]]["outcome"] == "refused"
    assert result["outcome"]["exit_code"] == 2  # merged into the run record by gpuops.cluster.run_outcome
    doc, recs = outcome_of(sd)
    assert doc["nodes"][n[3]]["outcome"] == "refused" and "unreadable" in doc["nodes"][n[3]]["detail"]
    assert doc["ticket"] == "ALERT-UNREADABLE" and doc["exit_code"] == 2
    mine = [r for r in recs if r.get("node") == n[3] and r.get("ticket") == "ALERT-UNREADABLE"]
    assert mine and mine[-1]["outcome"] == "refused" and "unreadable" in json.dumps(mine[-1]), recs
    assert result["reading"]["state"] == "unreadable" and result["fired"] is False
    assert [(f["severity"], f["code"], f["host"]) for f in result["findings"]] == [("P2", "sensor_unreadable", n[3])]
    assert result["slurm_down"] == [] and result["powered_off"] == []
    assert all(s == "IDLE" for s in slurm_states(testbed).values())
    assert power_state(leak["bmc"], 1) == "On" and power_state(leak["bmc"], 2) == "On"
    assert leak["ipmi_power"].read_text().strip() == "1"


def test_critical_liquid_flow_sensor_is_a_cooling_finding_and_powers_off_nothing(testbed, leak):
    n = testbed.nodes
    b = leak["bmc"]
    redfish(b, "DELETE", "/emulator/faults")
    for i in (1, 2):
        redfish(b, "POST", "/redfish/v1/Systems/%s/Actions/ComputerSystem.Reset" % (SYSTEM % i), {"ResetType": "On"})
    redfish(b, "POST", "/emulator/faults", {"coolant_flow": "Critical"})
    # the emulator serves a Critical LiquidFlow Sensor on every chassis (and a "Coolant flow" SEL entry)
    chassis = redfish(b, "GET", "/redfish/v1/Chassis")["Members"][0]["@odata.id"]
    flow = redfish(b, "GET", chassis + "/Sensors/CoolantFlow")
    assert flow["ReadingType"] == "LiquidFlow" and flow["Status"]["Health"] == "Critical"
    try:
        res, result, sd = respond(testbed, leak, n[0], "ALERT-FLOW-1")
    finally:
        redfish(b, "DELETE", "/emulator/faults")
    assert res.returncode == 0, res.stdout[-4000:]
    # the leak detector reads OK: no leak, nothing fired; the flow fault is a P1 isolate cooling finding
    assert result["reading"]["state"] == "clear" and result["fired"] is False, result["reading"]
    assert result["reading"]["asserted"] == []
    assert "Coolant Flow" in [c["name"] for c in result["reading"]["cooling"]]
    cool = [(f["check"], f["severity"], f["action"], f["host"]) for f in result["findings"]]
    assert ("bmc.coolant", "P1", "isolate", n[0]) in cool
    assert all(f["action"] != "emergency_shutdown" for f in result["findings"])
    assert result["targets"] == [] and result["slurm_down"] == [] and result["powered_off"] == []
    # nothing powered off, nothing taken out of Slurm
    assert power_state(b, 1) == "On" and power_state(b, 2) == "On"
    assert leak["ipmi_power"].read_text().strip() == "1"
    assert all(s == "IDLE" for s in slurm_states(testbed).values())
    # the record is private, and the audit trail shows no guard decision and no change for this alert but the
    # run record itself (gpuops.cluster.leak_assess writing the result file, on the controller)
    path = sd / "leak" / "ALERT-FLOW-1.json"
    assert path.stat().st_mode & 0o777 == 0o600
    lines = [json.loads(x) for x in (sd / "audit" / "audit.log").read_text().splitlines()]
    mine = [x for x in lines if x.get("run_id") == lines[-1]["run_id"]]
    assert mine[0]["event"] == "run_start" and mine[-1]["event"] == "run_end"
    changed = [
        (x["module"], x.get("delegated_to") or x["host"]) for x in mine if x["event"] == "task" and x.get("changed")
    ]
    assert changed == [("gpuops.cluster.leak_assess", "localhost")], changed
    assert [x for x in mine if x["event"] == "guard"] == []


def test_leak_outside_any_window_powers_off_exactly_its_domain(testbed, leak):
    n = testbed.nodes
    b = leak["bmc"]
    redfish(b, "POST", "/emulator/faults", {"leak": "Critical"})
    res, result, sd = respond(testbed, leak, n[0], "ALERT-LEAK-1")
    # node 4's BMC does not answer: P0 "power-off unconfirmed" fails the run after everything else was done
    assert res.returncode != 0 and "power-off unconfirmed" in res.stdout
    assert b.password not in res.stdout
    assert result["fired"] is True and result["domain"] == "cdu-a"
    assert result["targets"] == sorted([n[0], n[1], n[3]])
    assert result["powered_off"] == [n[0], n[1]]
    assert [u["node"] for u in result["unconfirmed"]] == [n[3]]
    sev = {(f["host"], f["severity"], f["code"]) for f in result["findings"]}
    assert (n[3], "P0", "power_off_unconfirmed") in sev and (n[0], "P0", "asserted") in sev
    # emulators: the two Redfish systems of cdu-a are off, the IPMI node of cdu-b is untouched
    assert power_state(b, 1) == "Off" and power_state(b, 2) == "Off"
    assert leak["ipmi_power"].read_text().strip() == "1"
    # Slurm: DOWN (then drained) with a gpuops reason for exactly the domain, no waiting for jobs; others untouched
    # (the bed's slurmd keeps answering after the emulated power-off and ReturnToService=2 may bring a DOWN node
    # back: the role drains as well, so it stays out of service either way)
    assert sorted(result["slurm_down"]) == sorted([n[0], n[1], n[3]])
    states = slurm_states(testbed)
    out = sorted(h for h, s in states.items() if s.startswith("DOWN") or "DRAIN" in s)
    assert out == sorted([n[0], n[1], n[3]]), states
    assert all(states[h] == "IDLE" for h in n[2:3] + n[4:])
    assert "gpuops: coolant leak ALERT-LEAK-1" in testbed.scontrol("show", "node", n[0])
    # the outcome: exit 2, the two confirmed off are done, the dead BMC's node unconfirmed
    assert res.returncode == 2
    assert result["status"] == "incomplete"
    doc, _recs = outcome_of(sd)
    assert {h: v["outcome"] for h, v in doc["nodes"].items()} == {n[0]: "done", n[1]: "done", n[3]: "unconfirmed"}
    # audited: a corrective guard decision carrying the alert id, outside any window
    lines = [json.loads(x) for x in (sd / "audit" / "audit.log").read_text().splitlines()]
    guard = [x["guard"] for x in lines if x["event"] == "guard"]
    assert guard and guard[-1]["decision"] == "corrective" and guard[-1]["allowed"] is True
    assert guard[-1]["window"] is None
    assert any(x["event"] == "task" and x.get("ticket") == "ALERT-LEAK-1" for x in lines)
