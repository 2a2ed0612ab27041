# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/upgrade.yml on the test bed: a clean rollout in the planned batches, and the fault matrix.

Each test is one ansible-playbook run (with the audit callback) over 3 bed nodes; the fake firmware tools
(tests/testbed/fakes/mlxfwmanager, nvfwupd) are written into the nodes' /usr/local/bin, the old driver packages
(535) are installed from the bed's apt repository. Faults: `<node dir>/fault-<tool>` (fail | hang | stale),
`no_return` (the node does not come back from its reboot), slurmctld frozen with SIGSTOP (unreachable), and a
maintenance window that closes while the canary runs (the windows come from a file read at each batch gate).
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VARS = ROOT / "tests" / "integration" / "playbooks" / "upgrade" / "vars.yml"
PLAYBOOK = ROOT / "playbooks" / "upgrade.yml"
FAKES = ROOT / "tests" / "testbed" / "fakes"
NEW = {"driver": "550.54.15", "vbios": "96.00.99.00.01", "hca_fw": "28.41.1000"}
OLD = {"driver": "535.161.08", "vbios": "96.00.74.00.0D", "hca_fw": "28.39.1002"}
SSH_ARGS = "-C -o ControlMaster=auto -o ControlPersist=60s -o ServerAliveInterval=2 -o ServerAliveCountMax=3"


#: the packages every test starts from (the simulator's reset() puts the driver back to 535 but leaves packages)
BASELINE = (
    "apt-get -qq update >/dev/null 2>&1 && apt-get install -qq -y --allow-downgrades"
    " nvidia-driver-535 nvidia-fabricmanager-535 >/dev/null 2>&1"
)


def _on_hosts(testbed, hosts, script):
    procs = [subprocess.Popen(["bash", str(ROOT / "tests/testbed/testbed.sh"), "node", h, "sh", "-c", script],
                              env=testbed.env) for h in hosts]  # fmt: skip
    assert [p.wait(timeout=120) for p in procs] == [0] * len(hosts)


@pytest.fixture(scope="module")
def bed_nodes(testbed):
    hosts = testbed.nodes[:3]
    # the node's /root overlays the host's: its .bashrc runs `pyenv rehash` in every ssh session, and a reboot
    # that kills one mid-rehash leaves /root/.pyenv/shims/.pyenv-shim behind, hanging every later session
    script = (
        "rm -f /root/.pyenv/shims/.pyenv-shim; echo '# gpuops test bed node' > /root/.bashrc;"
        " for t in mlxfwmanager nvfwupd; do printf '#!/bin/sh\\nexec /usr/bin/python3 %s/%%s \"$@\"\\n' $t > /usr/local/bin/$t;"
        " chmod 755 /usr/local/bin/$t; done" % FAKES
    )
    _on_hosts(testbed, hosts, script)
    yield testbed, hosts
    for h in testbed.nodes:
        for f in ("fault-mlxfwmanager", "fault-nvfwupd"):
            (testbed.node_dir(h) / f).unlink(missing_ok=True)


@pytest.fixture
def bed(bed_nodes):
    """The three nodes on the 535 driver and fabric manager packages, before every test: a rollout before it
    left the 550 packages installed, and with the simulator reset to driver 535 the fabric manager the node runs
    (550) is a P1 mismatch that the health gate rightly refuses (the tests after the clean rollout failed there)."""
    testbed, hosts = bed_nodes
    _on_hosts(testbed, hosts, BASELINE)
    testbed.reset()
    return testbed, hosts


def write_windows(path, open_now=True):
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    if open_now:
        start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(hours=2)
    else:  # closed a minute ago
        start, end = now - datetime.timedelta(hours=2), now - datetime.timedelta(minutes=1)
    w = [{"name": "upgrade-test", "start": start.strftime("%Y-%m-%dT%H:%M"), "end": end.strftime("%Y-%m-%dT%H:%M"),
          "timezone": "UTC"}]  # fmt: skip
    path.write_text(json.dumps(w))


class Run:
    """One ansible-playbook run of playbooks/upgrade.yml with its own state dir, run dir and windows file."""

    def __init__(self, testbed, hosts, tmp_path, change_id, extra=None, check=False):
        self.tmp = tmp_path
        self.state = tmp_path / "state"
        self.run_dir = tmp_path / "run"
        self.windows = tmp_path / "windows.json"
        write_windows(self.windows)
        inv = tmp_path / "group.yml"
        inv.write_text(json.dumps({"all": {"children": {"upgrade_test": {
            "hosts": {h: {} for h in hosts},
            "vars": {"gpuops_node_class": "h100-sxm-8", "gpuops_partition": "gpu"}}}}}))  # fmt: skip
        ev = {
            "gpuops_targets": "upgrade_test",
            "gpuops_allow_target_patterns": True,  # a group: the operator's flag
            "gpuops_change_id": change_id,
            "upgrade_run_dir": str(self.run_dir),
            "gpuops_maintenance_windows": "{{ lookup('file', '%s') | from_json }}" % self.windows,
        }
        ev.update(extra or {})
        (tmp_path / "extra.json").write_text(json.dumps(ev))
        env = dict(testbed.env)
        env.update(ANSIBLE_CALLBACKS_ENABLED="gpuops.cluster.audit", GPUOPS_STATE_DIR=str(self.state),
                   ANSIBLE_SSH_ARGS=SSH_ARGS, ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))  # fmt: skip
        self.cmd = ["ansible-playbook", "-i", str(testbed.inventory), "-i", str(inv), str(PLAYBOOK),
                    "-e", "@%s" % VARS, "-e", "@%s" % (tmp_path / "extra.json")]  # fmt: skip
        if check:
            self.cmd.append("--check")
        self.env = env
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.cmd, env=self.env, cwd=str(ROOT), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)  # fmt: skip
        return self

    def wait(self, timeout=240):
        try:
            out = self.proc.communicate(timeout=timeout)[0]
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out = self.proc.communicate()[0]
            raise AssertionError("ansible-playbook ran over %ss:\n%s" % (timeout, out[-4000:]))
        self.rc, self.out = self.proc.returncode, out
        return self

    def run(self, timeout=240):
        return self.start().wait(timeout)

    def audit(self):
        path = self.state / "audit" / "audit.log"
        if not path.exists():
            return []
        return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip().startswith("{")]

    def tasks(self, name_part, status=None):
        return [r for r in self.audit() if r["event"] == "task" and name_part in (r.get("task") or "")
                and (status is None or r.get("status") == status)]  # fmt: skip

    def plan(self):
        return json.loads((self.run_dir / "plan.json").read_text())

    def report(self):
        return json.loads((self.run_dir / "report.json").read_text())

    def record(self, host):
        return json.loads((self.run_dir / "nodes" / ("%s.json" % host)).read_text())

    def outcome(self):
        """The run outcome (gpuops.cluster.run_outcome): <state>/runs/upgrade/<run dir name>.json."""
        return json.loads((self.state / "runs" / "upgrade" / ("%s.json" % self.run_dir.name)).read_text())

    def outcomes(self):
        return {h: n["outcome"] for h, n in self.outcome()["nodes"].items()}


def versions(testbed, host):
    s = testbed.load_state(host)
    return {"driver": s["driver_version"], "vbios": sorted({g["vbios"] for g in s["gpus"]}),
            "hca_fw": sorted({h["fw_ver"] for h in s["hcas"]})}  # fmt: skip


def slurm_reason(testbed, host):
    out = testbed.scontrol("show", "node", host)
    return out.split("Reason=", 1)[1].split(" [")[0].strip() if "Reason=" in out else None


def test_check_mode_prints_the_plan_and_changes_nothing(bed, tmp_path):
    testbed, hosts = bed
    r = Run(testbed, hosts, tmp_path, "CHG-UPG-0", check=True).run()
    assert r.rc == 0, r.out[-3000:]
    assert "batches: [[" in r.out and "vbios+hca_fw+driver" in r.out
    assert not r.tasks("Drain") and not (r.run_dir / "plan.json").exists()
    assert "gpuops outcome: upgrade" in r.out and "OK (check mode: would be) done=3 -> exit 0" in r.out, r.out[-3000:]
    assert not (r.state / "runs").exists()
    assert all(testbed.node_state(h) == "IDLE" for h in hosts)
    assert all(versions(testbed, h)["driver"] == OLD["driver"] for h in hosts)


def test_clean_rollout_in_planned_batches(bed, tmp_path):
    testbed, hosts = bed
    r = Run(testbed, hosts, tmp_path, "CHG-UPG-1").run()
    assert r.rc == 0, r.out[-4000:]
    plan = r.plan()
    batches = [b["hosts"] for b in plan["batches"]]
    assert [len(b) for b in batches] == [1, 2] and sorted(sum(batches, [])) == sorted(hosts)
    # the audit trail: drains in exactly the planned batches and order; a batch starts after the last one resumed
    drains = r.tasks("Drain the node", "ok")
    resumes = r.tasks("Resume the node", "ok")
    assert [d["host"] for d in drains][:1] == batches[0]
    assert sorted(d["host"] for d in drains[1:]) == sorted(batches[1])
    assert max(x["seq"] for x in resumes if x["host"] in batches[0]) < min(d["seq"] for d in drains[1:])
    assert all(d["change_id"] == "CHG-UPG-1" for d in drains + resumes)
    flashed = [t["host"] for t in r.tasks("Flash the ConnectX firmware", "ok")]
    assert flashed[0] == batches[0][0] and sorted(flashed) == sorted(hosts)
    for h in hosts:
        v = versions(testbed, h)
        assert v == {"driver": NEW["driver"], "vbios": [NEW["vbios"]], "hca_fw": [NEW["hca_fw"]]}, (h, v)
        assert testbed.node_state(h).startswith("IDLE") and "DRAIN" not in testbed.node_state(h)
        rec = r.record(h)
        assert rec["result"] == "upgraded" and rec["change_id"] == "CHG-UPG-1"
        assert rec["found"]["driver"] == NEW["driver"] and rec["duration_s"] > 0
    rep = r.report()
    assert rep["ok"] and rep["counts"] == {"upgraded": 3}
    assert r.outcomes() == {h: "done" for h in hosts} and r.outcome()["exit_code"] == 0
    md = (r.run_dir / "report.md").read_text()
    assert "| %s | 0 | upgraded | vbios | 96.00.74.00.0D | 96.00.99.00.01 |" % batches[0][0] in md
    assert "driver 535.161.08, fabric_manager 535.161.08" in md
    # the trail is intact
    v = subprocess.run([str(ROOT / ".venv/bin/python"), "-m", "gpuops_audit", "verify", str(r.state / "audit" / "audit.log")],
                       env=dict(testbed.env, PYTHONPATH=os.pathsep.join([str(ROOT / "tools"), str(ROOT / "build")])),
                       capture_output=True, text=True, check=False)  # fmt: skip
    assert v.returncode == 0, v.stdout + v.stderr


def test_failed_canary_flash_stops_the_rollout(bed, tmp_path):
    testbed, hosts = bed
    testbed.reset()
    for h in hosts:
        (testbed.node_dir(h) / "fault-mlxfwmanager").write_text("fail")
    try:
        r = Run(testbed, hosts, tmp_path, "CHG-UPG-2").run()
    finally:
        for h in hosts:
            (testbed.node_dir(h) / "fault-mlxfwmanager").unlink(missing_ok=True)
    assert r.rc == 2, r.out[-4000:]
    canary, later = r.plan()["batches"][0]["hosts"][0], r.plan()["batches"][1]["hosts"]
    rec = r.record(canary)
    assert rec["result"] == "failed" and rec["stage"] == "apply:hca_fw", rec
    assert "Burning FW image failed" in json.dumps(r.out) or "non-zero return code" in rec["message"]
    # the Slurm reason says the truth: the stage, the tool's words, the ticket (the change id)
    assert slurm_reason(testbed, canary).startswith("gpuops: upgrade failed at apply:hca_fw: "), slurm_reason(testbed, canary)
    assert "[CHG-UPG-2]" in testbed.scontrol("show", "node", canary)
    assert r.outcomes() == dict({canary: "failed"}, **{h: "not_started" for h in later})
    assert "batch 0 failed on %s" % canary in r.outcome()["nodes"][later[0]]["decision"]
    assert r.report()["outcome"]["exit_code"] == 2  # merged into report.json
    assert "DRAIN" in testbed.node_state(canary)
    assert Path(rec["evidence"]).is_dir() and any(Path(rec["evidence"]).iterdir())
    v = versions(testbed, canary)
    assert v["vbios"] == [NEW["vbios"]] and v["hca_fw"] == [OLD["hca_fw"]] and v["driver"] == OLD["driver"]
    # max_fail_percentage 0: the later batch never started, never drained, reported as not started
    assert not [t for t in r.tasks("Drain the node") if t["host"] in later]
    rep = {n["host"]: n for n in r.report()["nodes"]}
    assert all(rep[h]["result"] == "not_started" for h in later) and not r.report()["ok"]
    assert all(testbed.node_state(h) == "IDLE" for h in later)
    assert "## Not upgraded" in (r.run_dir / "report.md").read_text()


def test_faults_in_one_batch_leave_known_recorded_states(bed, tmp_path):
    testbed, hosts = bed
    testbed.reset()
    gone, stale, hung = hosts
    (testbed.node_dir(gone) / "no_return").touch()
    (testbed.node_dir(stale) / "fault-nvfwupd").write_text("stale")
    (testbed.node_dir(hung) / "fault-mlxfwmanager").write_text("hang")
    extra = {"gpuops_upgrade_constraints": {"max_offline_share": 1.0, "max_per_rack": 3, "canary_size": 0},
             "upgrade_max_fail_percentage": 100, "upgrade_reboot_timeout": 15}  # fmt: skip
    try:
        r = Run(testbed, hosts, tmp_path, "CHG-UPG-3", extra).run()
    finally:
        (testbed.node_dir(stale) / "fault-nvfwupd").unlink(missing_ok=True)
        (testbed.node_dir(hung) / "fault-mlxfwmanager").unlink(missing_ok=True)
    assert r.rc == 2, r.out[-4000:]
    assert [len(b["hosts"]) for b in r.plan()["batches"]] == [3]
    g, s, h = r.record(gone), r.record(stale), r.record(hung)
    assert g["result"] == "failed" and g["stage"] == "activate", g
    assert g["evidence"] == "not captured: node unreachable"
    assert s["result"] == "failed" and s["stage"] == "verify" and "vbios" in s["message"], s
    assert s["found"]["driver"] == NEW["driver"] and s["rollback"] is None
    assert slurm_reason(testbed, stale).startswith("gpuops: upgrade failed at verify: "), slurm_reason(testbed, stale)
    assert h["result"] == "failed" and h["stage"] == "apply:hca_fw", h
    assert "rc" in h["message"] or "124" in h["message"] or "non-zero" in h["message"]
    assert slurm_reason(testbed, hung).startswith("gpuops: upgrade failed at apply:hca_fw: ")
    rep = r.report()
    assert rep["counts"] == {"failed": 3}
    # outcomes: the node that never came back is unconfirmed, the one whose verification failed after the flash
    # is left drained, the hung flash failed
    assert r.outcomes() == {gone: "unconfirmed", stale: "left_drained", hung: "failed"}
    testbed.reset()  # revives the node that did not come back


def test_window_closes_after_the_canary(bed, tmp_path):
    testbed, hosts = bed
    testbed.reset()
    r = Run(testbed, hosts, tmp_path, "CHG-UPG-4").start()
    try:
        testbed.wait_for(lambda: r.tasks("Drain the node", "ok"), timeout=180, interval=0.3, what="the canary's drain")
        write_windows(r.windows, open_now=False)  # the window closes while the canary is upgraded
    finally:
        r.wait()
    plan = r.plan()
    canary, later = plan["batches"][0]["hosts"][0], plan["batches"][1]["hosts"]
    assert r.record(canary)["result"] == "upgraded" and versions(testbed, canary)["driver"] == NEW["driver"]
    assert testbed.node_state(canary) == "IDLE"
    # the plan's guard, the canary's batch gate, the canary's drain (gpuops.cluster.isolate, planned), then the
    # second batch's gate refuses: the window closed
    gates = [x for x in r.audit() if x["event"] == "guard"]
    assert len(gates) == 4 and all(g["guard"]["allowed"] for g in gates[:3]) and gates[3]["guard"]["allowed"] is False
    assert "stopping before batch" in r.out
    assert not [t for t in r.tasks("Drain the node") if t["host"] in later]
    assert all(testbed.node_state(h) == "IDLE" and versions(testbed, h)["driver"] == OLD["driver"] for h in later)
    rep = {n["host"]: n for n in r.report()["nodes"]}
    assert all(rep[h]["result"] == "not_started" for h in later) and rep[canary]["result"] == "upgraded"
    # issue 21 observation 2: a window stop is not a success - exit 2, the later nodes not_started
    assert r.rc == 2, r.out[-3000:]
    assert "INCOMPLETE" in r.out
    assert r.outcomes() == dict({canary: "done"}, **{h: "not_started" for h in later})
    assert r.outcome()["nodes"][later[0]]["decision"].startswith("stopped: window: ")
    # observation 3: the audit trail names each node, the ticket, the change and the decision
    recs = {x["node"]: x for x in r.audit() if x["event"] == "outcome"}
    for h in later:
        assert recs[h]["outcome"] == "not_started" and recs[h]["change_id"] == "CHG-UPG-4", recs[h]
        assert recs[h]["ticket"] == "CHG-UPG-4" and "window" in recs[h]["decision"]


def test_slurmctld_unreachable_during_drain(bed, tmp_path):
    testbed, hosts = bed
    testbed.reset()
    node = hosts[0]
    pid = int((testbed.root / "slurm-state" / "slurmctld.pid").read_text().strip())
    extra = {"gpuops_upgrade_constraints": {"max_offline_share": 1.0, "canary_size": 1}}  # one node: it may go
    r = Run(testbed, [node], tmp_path, "CHG-UPG-5", extra).start()
    stopped = False
    try:
        testbed.wait_for(lambda: any(x["event"] == "play_start" and "roll" in (x.get("play") or "") for x in r.audit()),
                         timeout=120, interval=0.3, what="the rolling play")  # fmt: skip
        os.kill(pid, signal.SIGSTOP)  # slurmctld unreachable: scontrol times out
        stopped = True
        # the isolate role's first scontrol call (or its drain) fails while slurmctld is stopped
        testbed.wait_for(lambda: [t for t in r.tasks("", "failed") if t["host"] == node], timeout=120, interval=0.3,
                         what="drain failure")  # fmt: skip
    finally:
        if stopped:
            os.kill(pid, signal.SIGCONT)
        r.wait()
    assert r.rc == 2, r.out[-3000:]
    rec = r.record(node)
    assert rec["result"] == "failed" and rec["stage"] == "drain", rec
    assert r.outcomes() == {node: "failed"}
    assert versions(testbed, node)["driver"] == OLD["driver"]  # nothing was flashed
    # the rescue drains it once slurmctld answers again, or records that it could not: either way it is known
    state = testbed.node_state(node)
    if rec["slurm"]["state"] == "unknown":
        assert rec["slurm"]["error"]
    else:
        assert "DRAIN" in rec["slurm"]["state"] and "DRAIN" in state
    assert r.report()["counts"] == {"failed": 1}


def test_redfish_simple_update_polls_the_task_and_activates_on_reset(testbed, bmc_emulators):
    b = bmc_emulators
    conn = {"url": b.redfish_url, "user": b.user, "password": b.password, "validate_certs": False}
    system = "00000000-0000-0000-0000-000000000001"  # gpu-node-01 (the fake driver serves systems by UUID)
    inv = "/redfish/v1/UpdateService/FirmwareInventory/gpu-node-01-BIOS"
    new = "4.%d.%d" % (int(time.time()) % 1000, os.getpid() % 100)  # differs from whatever a shared emulator has
    steps = [
        dict(conn, image_uri="https://repo.example/fw/bios-%s.bin" % new, targets=[inv], _check=True),
        dict(conn, image_uri="https://repo.example/fw/bios-%s.bin" % new, targets=[inv], timeout=30),
        dict(conn, image_uri="https://repo.example/fw/bios-fail-2.5.0.bin", targets=[inv], timeout=30),
        dict(conn, image_uri="https://repo.example/fw/bios-2.6.0.bin", targets=[inv], timeout=0.5),
        dict(conn, reset_type="PowerCycle", system_id=system, power_off_s=0.2),
    ]
    chk, ok, bad, slow, reset = testbed.module_steps("localhost", "gpuops.cluster.redfish_firmware_update", steps)
    assert chk["changed"] and chk["polls"] == 0 and not chk.get("failed")
    assert not ok.get("failed"), ok
    assert (
        ok["outcome"]["state"] == "Completed"
        and ok["polls"] >= 3
        and ok["monitor"].startswith("/redfish/v1/TaskService")
    )
    assert bad["failed"] and "Exception" in bad["msg"] and "image verification failed" in bad["msg"]
    assert slow["failed"] and slow["timed_out"] and "still running" in slow["msg"]
    assert not reset.get("failed"), reset
    assert reset["reset"] == {"system": "/redfish/v1/Systems/%s" % system, "type": "PowerCycle",
                              "sequence": ["ForceOff", "On"]}  # fmt: skip
    assert b.password not in json.dumps([chk, ok, bad, slow, reset])
    import ssl
    import urllib.request
    import base64

    req = urllib.request.Request(b.redfish_url + inv)
    req.add_header("Authorization", "Basic " + base64.b64encode(("%s:%s" % (b.user, b.password)).encode()).decode())
    ctx = ssl._create_unverified_context()
    doc = json.loads(urllib.request.urlopen(req, context=ctx, timeout=10).read())
    assert doc["Version"] == new  # staged by the completed task, active after the reset; the failed one never
