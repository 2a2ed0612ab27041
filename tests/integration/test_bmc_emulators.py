"""bmc_info and the Redfish/IPMI emulators (tests/testbed/bmc/): real ipmitool -I lanplus -C 3, real HTTPS."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time

import pytest
from bmc_fixtures import ROOT, BMCs, free_port

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import bmc as _bmc
from ansible_collections.gpuops.cluster.plugins.module_utils._http import Http

pytestmark = pytest.mark.emulators

SYS1 = "/redfish/v1/Systems/00000000-0000-0000-0000-000000000001"


def playbook(tmp_path, bmcs, module_args, env=None):
    out = tmp_path / "result.json"
    pb = tmp_path / "play.yml"
    pb.write_text(
        textwrap.dedent(
            """\
            - hosts: localhost
              gather_facts: false
              vars:
                ansible_python_interpreter: "{{ ansible_playbook_python }}"
              tasks:
                - name: Read the BMC
                  gpuops.cluster.bmc_info: %s
                  register: __bmc
                - name: Save
                  ansible.builtin.copy:
                    content: "{{ __bmc | to_json }}"
                    dest: %s
                    mode: "0600"
            """
        )
        % (json.dumps(module_args), out)
    )
    bin_dir = os.path.join(ROOT, ".venv", "bin")
    full_env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"), ANSIBLE_NOCOLOR="1",
                    PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))  # fmt: skip
    full_env.update(env or {})
    res = subprocess.run(
        [os.path.join(bin_dir, "ansible-playbook"), "-i", "localhost,", "-c", "local", "-vvv", str(pb)],
        env=full_env, capture_output=True, text=True, timeout=300, cwd=str(tmp_path), check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(out.read_text()), res.stdout + res.stderr


def test_redfish_through_playbook_password_hidden(tmp_path, bmc_emulators):
    b = bmc_emulators
    args = {"bmc_host": "127.0.0.1", "port": b.redfish_port, "bmc_user": b.user, "bmc_password": b.password,
            "validate_certs": False, "timeout": 20}  # fmt: skip
    result, output = playbook(tmp_path, b, args)
    assert b.password not in output
    bmc = result["bmc"]
    assert bmc["source"] == "redfish" and bmc["errors"] == []
    red = bmc["redfish"]
    assert [s["name"] for s in red["systems"]] == ["gpu-node-01", "gpu-node-02"]
    assert len(red["firmware"]) == 2 * 18
    assert {p["serial"] for p in red["psus"]} and all(p["serial"] for p in red["psus"])
    assert all(m["serial"] for m in red["memory"]) and len(red["memory"]) == 8
    assert red["leak_detectors"][0]["state"] == "OK"
    assert len(red["log_entries"]) == 2 * 3  # paginated, 2 per page


def test_redfish_validate_certs_refuses_self_signed(bmc_emulators):
    b = bmc_emulators
    r = _bmc.collect(
        mode="redfish", host="127.0.0.1", port=b.redfish_port, user=b.user, password=b.password, timeout=10
    )
    assert r["errors"] and "CERTIFICATE_VERIFY_FAILED" in r["errors"][0]["message"]


def test_ipmi_lan_through_playbook_env_credentials(tmp_path, bmc_emulators):
    b = bmc_emulators
    args = {"bmc_host": "127.0.0.1", "protocol": "ipmi", "port": b.ipmi_port, "timeout": 20}
    result, output = playbook(tmp_path, b, args, env={"GPUOPS_BMC_USER": b.user, "GPUOPS_BMC_PASSWORD": b.password})
    assert b.password not in output
    bmc = result["bmc"]
    assert bmc["source"] == "ipmitool" and bmc["errors"] == []
    names = {s["name"]: s for s in bmc["sensors"]}
    assert set(names) == {
        "Inlet Temp",
        "GPU0 Temp",
        "GPU1 Temp",
        "FAN1",
        "FAN2",
        "PSU1 Status",
        "PSU2 Status",
        "Leak Detect",
    }
    assert names["FAN1"]["reading"] == 7200.0 and names["PSU1 Status"]["states"] == ["Presence detected"]
    assert all(s["status"] == "ok" for s in names.values())
    assert bmc["sel"][0]["time"] is None and bmc["sel"][0]["sensor"] == "GPU0 Temp"  # Pre-Init entry
    assert bmc["mc"]["manufacturer_id"] == 4753
    fru = bmc["fru"][0]
    assert (fru["serial"], fru["board_serial"], fru["chassis_serial"]) == ("PRD-0001", "BRD-0001", "CHS-0001")
    assert fru["product"] == "GPU-NODE-8X" and fru["present"] is True
    assert bmc["sel_info"]["entries"] >= 2 and bmc["sel_info"]["overflow"] is False


def test_ipmi_injected_psu_failure_and_leak(bmc_emulators):
    b = bmc_emulators
    kw = {
        "mode": "ipmi_lan",
        "host": "127.0.0.1",
        "port": b.ipmi_port,
        "user": b.user,
        "password": b.password,
        "timeout": 20,
    }
    b.inject("sensor_set_bit 0x20 0 6 1 1 0")  # PSU1: Failure detected
    b.inject("sensor_set_bit 0x20 0 8 0 0 0")  # Leak: State Deasserted off
    b.inject("sensor_set_bit 0x20 0 8 1 1 0")  # Leak: State Asserted
    b.inject("sensor_set_value 0x20 0 2 90 0")  # GPU0 90 C > uc 85
    b.inject("sel_add 0x20 0x02 0x00 0x00 0x00 0x00 0x20 0x00 0x04 0x08 0x06 0x6f 0x01 0xff 0xff")
    try:
        r = _bmc.collect(**kw)
        s = {x["name"]: x for x in r["sensors"]}
        assert s["PSU1 Status"]["status"] == "critical" and "Failure detected" in s["PSU1 Status"]["states"]
        assert s["Leak Detect"]["status"] == "critical" and s["Leak Detect"]["type"] == "leak"
        assert s["GPU0 Temp"]["status"] == "critical" and s["GPU0 Temp"]["reading"] == 90.0
        assert s["PSU2 Status"]["status"] == "ok"
        psu_events = [e for e in r["sel"] if e["sensor_type"] == "Power Supply" and e["event"] == "Failure detected"]
        assert psu_events and psu_events[-1]["severity"] == "critical" and psu_events[-1]["direction"] == "asserted"
        # bmc.sh set the SEL clock: events added at run time carry a real UTC time (LC_ALL=C: MM/DD/YY + TZ)
        assert (
            psu_events[-1]["time"] and psu_events[-1]["time"].startswith("20") and psu_events[-1]["time"].endswith("Z")
        )
    finally:
        b.inject("sensor_set_bit 0x20 0 6 1 0 0")
        b.inject("sensor_set_bit 0x20 0 8 1 0 0")
        b.inject("sensor_set_bit 0x20 0 8 0 1 0")
        b.inject("sensor_set_value 0x20 0 2 41 0")
    r = _bmc.collect(**kw)
    assert all(x["status"] == "ok" for x in r["sensors"])


def test_redfish_injected_psu_failure_and_leak(bmc_emulators):
    b = bmc_emulators
    http = Http(b.redfish_url, b.user, b.password, validate_certs=False, timeout=10)
    assert (
        http.post_json("/emulator/faults", {"psu": "PSU1", "psu_health": "Critical", "leak": "Critical"}).status == 200
    )
    try:
        r = _bmc.collect(mode="redfish", host="127.0.0.1", port=b.redfish_port, user=b.user, password=b.password,
                         validate_certs=False, timeout=10)  # fmt: skip
        red = r["redfish"]
        assert {p["name"]: p["health"] for p in red["psus"]} == {"PSU1": "Critical", "PSU2": "OK"}
        assert red["leak_detectors"][0]["state"] == "Critical"
        assert [s["status"] for s in r["sensors"] if s["type"] == "leak"] == ["critical"]
        assert [s["status"] for s in r["sensors"] if s["name"] == "PSU1"] == ["critical"]
        msgs = [e["message"] for e in red["log_entries"] if e["severity"] == "Critical"]
        assert "PSU1 Failure detected" in msgs and "Coolant leak detected" in msgs
    finally:
        http.request("DELETE", "/emulator/faults")


def _poll(http, monitor, limit=20):
    states = []
    for _unused in range(limit):
        r = http.request("GET", monitor)
        states.append(r.json["TaskState"])
        if r.status != 202:
            break
        time.sleep(0.05)
    return states


def _bios(http):
    return http.get_json(SYS1)["BiosVersion"], http.get_json(
        "/redfish/v1/UpdateService/FirmwareInventory/gpu-node-01-BIOS"
    )["Version"]


def test_simple_update_task_and_reset(bmc_emulators):
    b = bmc_emulators
    http = Http(b.redfish_url, b.user, b.password, validate_certs=False, timeout=10)
    before = _bios(http)
    new = "3.%d.%d" % (int(time.time()) % 1000, os.getpid() % 100)  # differs from whatever a shared emulator has
    r = http.post_json("/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
                       {"ImageURI": "https://repo.example/bios-%s.bin" % new, "Targets": [SYS1]})  # fmt: skip
    assert r.status == 202
    monitor = r.header("Location")
    assert monitor and "/TaskMonitors/" in monitor and r.json["TaskState"] == "Running"
    states = _poll(http, monitor)
    assert states[:3] == ["Running"] * 3 and states[-1] == "Completed"
    task = http.get_json("/redfish/v1/TaskService/Tasks/%s" % monitor.rsplit("/", 1)[-1])
    assert task["TaskState"] == "Completed" and task["TaskStatus"] == "OK"
    assert _bios(http) == before  # not active before a reset
    assert http.post_json(SYS1 + "/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"}).status == 204
    assert before != (new, new) and _bios(http) == (new, new)


def test_simple_update_failure(bmc_emulators):
    b = bmc_emulators
    http = Http(b.redfish_url, b.user, b.password, validate_certs=False, timeout=10)
    before = _bios(http)
    r = http.post_json("/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
                       {"ImageURI": "https://repo.example/bios-fail-9.9.9.bin",
                        "Targets": ["/redfish/v1/UpdateService/FirmwareInventory/gpu-node-01-BIOS"]})  # fmt: skip
    assert r.status == 202
    states = _poll(http, r.header("Location"))
    assert states[-1] == "Exception" and "Running" in states
    http.post_json(SYS1 + "/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    assert _bios(http) == before
    bad = http.post_json("/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate", {})
    assert bad.status == 400
    anon = Http(b.redfish_url, validate_certs=False, timeout=10).request("GET", "/redfish/v1/Systems")
    assert anon.status == 401


def test_bmc_sh_idempotent_and_leaves_nothing(tmp_path, bmc_emulators):
    rf = free_port(avoid=(bmc_emulators.redfish_port, bmc_emulators.ipmi_port))
    ipmi = free_port(avoid=(rf, rf + 1000, bmc_emulators.redfish_port, bmc_emulators.ipmi_port))
    work = tmp_path / "bmc"
    b = BMCs(str(work), rf, ipmi)
    try:
        assert b.sh("up").returncode == 0
        pids = [(work / "sushy.pid").read_text().strip(), (work / "ipmi" / "ipmi_sim.pid").read_text().strip()]
        assert b.sh("up").returncode == 0  # idempotent: the running pair is kept
        assert [(work / "sushy.pid").read_text().strip(), (work / "ipmi" / "ipmi_sim.pid").read_text().strip()] == pids
        assert b.sh("status").returncode == 0
    finally:
        assert b.sh("down").returncode == 0
    assert b.sh("down").returncode == 0
    assert not work.exists()
    for pid in pids:
        assert not os.path.exists("/proc/%s" % pid) or "zombie" in open("/proc/%s/status" % pid).read().lower()
    assert b.sh("status").returncode == 1


def test_ipmi_chassis_power_is_stateful(bmc_emulators):
    b = bmc_emulators
    argv = ["ipmitool", "-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p", str(b.ipmi_port), "-U", b.user, "-E"]
    env = dict(os.environ, IPMI_PASSWORD=b.password)

    def ipmi(*args):
        res = subprocess.run(argv + list(args), env=env, capture_output=True, text=True, timeout=30, check=False)
        assert res.returncode == 0, res.stderr
        return res.stdout.strip()

    try:
        ipmi("chassis", "power", "off")
        assert ipmi("chassis", "power", "status") == "Chassis Power is off"
    finally:
        ipmi("chassis", "power", "on")
    assert ipmi("chassis", "power", "status") == "Chassis Power is on"
    log = open(os.path.join(b.work, "ipmi", "power.log")).read()
    assert "set power 0" in log and "set power 1" in log


CG_FLOW = """\
- hosts: localhost
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  module_defaults:
    community.general.redfish_command: &rf
      baseuri: "127.0.0.1:%(port)d"
      username: "%(user)s"
      password: "{{ lookup('ansible.builtin.env', 'RF_PW') }}"
    community.general.redfish_info: *rf
  tasks:
    - name: Update the BIOS of gpu-node-02
      community.general.redfish_command:
        category: Update
        command: SimpleUpdate
        update_image_uri: https://repo.example/bios-%(version)s.bin
        update_targets: [/redfish/v1/UpdateService/FirmwareInventory/gpu-node-02-BIOS]
      register: __upd
    - name: Poll the task
      community.general.redfish_info:
        category: Update
        command: GetUpdateStatus
        update_handle: "{{ __upd.return_values.update_status.handle }}"
      register: __st
      until: __st.redfish_facts.update_status.status | default('') != 'Running'
      retries: 10
      delay: 0
    - name: Restart to activate
      community.general.redfish_command:
        category: Systems
        command: PowerForceRestart
        resource_id: 00000000-0000-0000-0000-000000000002
    - name: Read the inventory
      community.general.redfish_info:
        category: Update
        command: GetFirmwareInventory
      register: __inv
    - name: Save
      ansible.builtin.copy:
        dest: %(out)s
        mode: "0600"
        content: "{{ {'first': __upd.return_values.update_status.status, 'final': __st.redfish_facts.update_status.status,
                      'polls': __st.attempts, 'inventory': __inv.redfish_facts.firmware.entries} | to_json }}"
"""


def test_community_general_redfish_update_flow(tmp_path, bmc_emulators):
    """The later upgrade role drives community.general.redfish_*: the emulator must satisfy them."""
    b = bmc_emulators
    version = "4.%d.%d" % (int(time.time()) % 1000, os.getpid() % 100)
    out = tmp_path / "cg.json"
    pb = tmp_path / "cg.yml"
    pb.write_text(CG_FLOW % {"port": b.redfish_port, "user": b.user, "version": version, "out": out})
    bin_dir = os.path.join(ROOT, ".venv", "bin")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"), RF_PW=b.password,
               PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))  # fmt: skip
    res = subprocess.run(
        [os.path.join(bin_dir, "ansible-playbook"), "-i", "localhost,", "-c", "local", str(pb)],
        env=env, capture_output=True, text=True, timeout=300, cwd=str(tmp_path), check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    got = json.loads(out.read_text())
    assert got["first"] == "Running" and got["final"] == "Completed" and got["polls"] >= 3
    versions = {e["Id"]: e["Version"] for e in got["inventory"]}
    assert versions["gpu-node-02-BIOS"] == version and versions["gpu-node-01-GPU0"] == "96.00.89.00.01"
