"""The test bed's fault switches (tests/testbed/README.md "Fault switches") do what they document, and lift again.

The fault-matrix suite (test_fault_matrix.py) relies on them; these tests pin what a client sees under each.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from _fault_matrix import SLURMCTLD_GONE


def _ipmitool(bmc, *args, timeout=20):
    env = dict(os.environ, IPMI_PASSWORD=bmc.password)
    cmd = ["ipmitool", "-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p", str(bmc.ipmi_port), "-U", bmc.user, "-E"]
    cmd += ["-N", "1", "-R", "1"] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)


def _redfish(bmc, path, method="GET", body=None, timeout=5):
    cmd = ["curl", "-sk", "-m", str(timeout), "-u", "%s:%s" % (bmc.user, bmc.password), "-X", method]
    cmd += ["-w", "\n%{http_code}", bmc.redfish_url + path]
    if body is not None:
        cmd += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 5, check=False)
    text, _sep, code = res.stdout.rpartition("\n")
    return res.returncode, code, text


def _system(bmc):
    _rc, _code, text = _redfish(bmc, "/redfish/v1/Systems")
    return json.loads(text)["Members"][0]["@odata.id"]


def test_gpu_process_and_reset_switches(testbed):
    host = testbed.nodes[5]
    testbed.gpu_process(host, 2, pid=4242)
    apps = testbed.on_node(host, "nvidia-smi", "--query-compute-apps=pid,gpu_bus_id", "--format=csv,noheader")
    assert apps.stdout.startswith("4242, ")
    busy = testbed.on_node(host, "nvidia-smi", "-r", "-i", "2", check=False)
    assert busy.returncode == 255 and "currently in use by another process" in busy.stdout
    with testbed.edit_state(host) as s:
        s["gpus"][2]["processes"] = []

    testbed.gpu_reset_fault(host, "fail", message="Insufficient Permissions", gpus=[2])
    bad = testbed.on_node(host, "nvidia-smi", "-r", "-i", "2", check=False)
    assert bad.returncode == 255
    assert "could not be reset" in bad.stdout and "Insufficient Permissions" in bad.stdout
    assert testbed.on_node(host, "nvidia-smi", "-r", "-i", "1", check=False).returncode == 0  # other GPUs reset

    testbed.gpu_reset_fault(host, "hang")
    with pytest.raises(subprocess.TimeoutExpired):
        testbed.on_node(host, "nvidia-smi", "-r", "-i", "2", check=False, timeout=2)
    t0 = time.monotonic()
    testbed.gpu_reset_fault(host, "hang", hang_seconds=1)
    res = testbed.on_node(host, "nvidia-smi", "-r", "-i", "2", check=False, timeout=15)
    assert res.returncode == 255 and "Timeout" in res.stdout and time.monotonic() - t0 < 10
    testbed.gpu_reset_fault(host, None)
    assert testbed.on_node(host, "nvidia-smi", "-r", "-i", "2", check=False).returncode == 0


def test_slurmctld_switches_keep_saved_state(testbed):
    host = testbed.nodes[6]
    testbed.scontrol("update", "NodeName=%s" % host, "State=DRAIN", "Reason=gpuops: switch test [T-1]")
    # stop (SIGTERM) saves the state: the drain survives the restart (a SIGKILL may lose the last seconds' changes)
    with testbed.slurmctld_down("stop"):
        res = testbed._run([testbed.scontrol_path, "show", "node", host], check=False, timeout=30)
        # one of the texts a client prints for a controller that is gone (which one: the moment it died)
        assert res.returncode != 0 and any(t in res.stderr for t in SLURMCTLD_GONE), res.stderr
    out = testbed.scontrol("show", "node", host)
    assert "DRAIN" in out and "gpuops: switch test [T-1]" in out
    with testbed.slurmctld_down("kill"):
        res = testbed._run([testbed.scontrol_path, "ping"], check=False, timeout=30)
        assert "DOWN" in res.stdout
    with testbed.slurmctld_down("freeze"):
        t0 = time.monotonic()
        res = testbed._run([testbed.scontrol_path, "ping"], check=False, timeout=30)
        assert "DOWN" in res.stdout and time.monotonic() - t0 < 15
    testbed.scontrol("update", "NodeName=%s" % host, "State=RESUME")


def test_unreachable_node(testbed):
    host = testbed.nodes[7]
    ip = testbed.load_state(host).get("ip") or (testbed.node_dir(host) / "ip").read_text().strip()
    with testbed.unreachable(host):
        assert testbed.on_hub("nc", "-z", "-w", "1", ip, "22", check=False).returncode != 0
    assert testbed.on_hub("nc", "-z", "-w", "2", ip, "22", check=False).returncode == 0


def test_bmc_refuses_power_off(bmc_emulators):
    bmc = bmc_emulators
    system = _system(bmc)
    bmc.refuse_power_off("Power action denied: chassis locked")
    try:
        res = _ipmitool(bmc, "chassis", "power", "off")
        assert res.returncode != 0 and "Down/Off failed" in res.stderr
        assert "is on" in _ipmitool(bmc, "chassis", "power", "status").stdout
        _rc, code, text = _redfish(bmc, system + "/Actions/ComputerSystem.Reset", "POST", {"ResetType": "ForceOff"})
        assert code == "409" and "Power action denied: chassis locked" in text
        assert json.loads(_redfish(bmc, system)[2])["PowerState"] == "On"
    finally:
        bmc.clear_switches()
    assert _ipmitool(bmc, "chassis", "power", "off").returncode == 0
    assert _ipmitool(bmc, "chassis", "power", "on").returncode == 0


def test_redfish_stall_and_death(bmc_emulators):
    bmc = bmc_emulators
    with bmc.switched(stall=["/redfish/v1/UpdateService/FirmwareInventory"]):
        rc, _code, _text = _redfish(bmc, "/redfish/v1/UpdateService/FirmwareInventory", timeout=2)
        assert rc == 28  # curl: operation timed out (connected, no answer)
        assert _redfish(bmc, "/redfish/v1/UpdateService")[1] == "200"
    assert _redfish(bmc, "/redfish/v1/UpdateService/FirmwareInventory")[1] == "200"

    bmc.redfish_switch(die_on_update=0)
    try:
        _rc, code, text = _redfish(
            bmc, "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate", "POST",
            {"ImageURI": "http://repo.example/bios-2.4.0.bin"},
        )  # fmt: skip
        assert code == "202" and "TaskMonitor" in text
        # the emulator exits after its answer: connection refused (curl exit 7) within a deadline
        deadline, rc = time.monotonic() + 20, None
        while time.monotonic() < deadline:
            rc = _redfish(bmc, "/redfish/v1/", timeout=2)[0]
            if rc == 7:
                break
            time.sleep(0.1)
        assert rc == 7, "the Redfish emulator still answers (curl exit %s)" % rc  # curl: connection refused
    finally:
        bmc.clear_switches()
    assert _redfish(bmc, "/redfish/v1/")[1] == "200"


def test_hung_ipmi_bmc(bmc_emulators):
    bmc = bmc_emulators
    bmc.freeze("ipmi")
    try:
        t0 = time.monotonic()
        res = _ipmitool(bmc, "chassis", "power", "status", timeout=30)
        assert res.returncode != 0 and time.monotonic() - t0 < 25
    finally:
        bmc.clear_switches()
    assert "is on" in _ipmitool(bmc, "chassis", "power", "status").stdout
