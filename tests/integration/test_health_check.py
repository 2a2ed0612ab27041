"""The node-side health check under the test bed's real slurmd/slurmctld (docs/health_check.md).

gpuops.cluster.health_check installs the program on two nodes and sets HealthCheckProgram/HealthCheckInterval=5
in the bed's (shared) slurm.conf; slurmd runs it, nothing else does: the controller's inspection never runs here.
An injected Xid 79 drains its node within one interval with the owned ``gpuops:`` reason; the fault hidden from
the tools does not return the node (the policy remembers an Xid 79 until a new boot); after a reboot the next
run resumes it. A human's drain is never touched, not even when the same node has a fault. The module's
teardown removes the Slurm block again (health_check_state=absent), so the other modules see the bed as before.
"""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest
from simnode import faults

INTERVAL = 5
STATE_FILE = "/var/lib/gpuops/health_check/state.json"
PROM = "/var/lib/node_exporter/textfile_collector/gpuops_node_health.prom"
REPO = Path(__file__).resolve().parents[2]


def _play(testbed, hosts, state="present", *args):
    """The shipped playbook gpuops.cluster.health_check on ``hosts``."""
    proc = testbed.playbook(
        str(REPO / "playbooks" / "health_check.yml"),
        "-e",
        "gpuops_targets=%s" % ",".join(hosts),
        "-e",
        "health_check_state=%s" % state,
        "-e",
        "health_check_interval=%d" % INTERVAL,
        *args,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc


def _recap(proc):
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", proc.stdout, re.M)}


@pytest.fixture(scope="module")
def installed(testbed):
    hosts = testbed.nodes[3:5]
    for host in hosts:  # no memory of an earlier run (the policy escalates a second Xid 79 to replace)
        testbed.on_node(host, "rm", "-rf", STATE_FILE.rsplit("/", 1)[0])
    first = _play(testbed, hosts)
    assert set(_recap(first).values()) != {0}
    assert "Reconfigure Slurm" in first.stdout
    again = _play(testbed, hosts, "present", "--check", "--diff")  # idempotent: nothing would change
    assert _recap(again) == {h: 0 for h in hosts}, again.stdout[-3000:]
    assert "RUNNING HANDLER" not in again.stdout
    try:
        yield hosts
    finally:
        gone = _play(testbed, hosts, "absent")
        for host in hosts:
            testbed.on_node(host, "rm", "-rf", STATE_FILE.rsplit("/", 1)[0])
        assert "HealthCheckProgram" not in (testbed.root / "slurm" / "slurm.conf").read_text()
        assert "Reconfigure Slurm" in gone.stdout


def _last_run(testbed, host):
    proc = testbed.on_node(host, "cat", STATE_FILE, check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None


def _next_run(testbed, host, after, timeout=INTERVAL * 2 + 6):
    """The first run of slurmd's health check that ended after ``after`` (epoch)."""

    def newer():
        run = _last_run(testbed, host)
        return run if run and run["timestamp"] > after else None

    return testbed.wait_for(
        newer,
        timeout=timeout,
        interval=0.5,
        what="a health check run on %s" % host,
    )


def _reason(testbed, host):
    m = re.search(r"Reason=(.*?)(?: \[[^\]]*\])?$", testbed.scontrol("show", "node", host), re.M)
    return m.group(1).strip() if m else None


def _metrics(testbed, host):
    text = testbed.on_node(host, "cat", PROM).stdout
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out


def _xid79(testbed, host):
    with testbed.edit_state(host) as s:
        s["now"] = time.time()  # the simulator's clock: the fault happens in this boot
        faults.apply(s, "xid79", random.Random(7), gpu=2)


def test_healthy_node_runs_fast_and_exports_its_verdict(testbed, installed):
    host = installed[0]
    run = _next_run(testbed, host, time.time())
    assert run["verdict"] == 0 and run["status"] == "healthy" and run["decision"]["action"] == "none"
    assert run["run_seconds"] < 2.0, run["run_seconds"]
    mode = testbed.on_node(host, "stat", "-c", "%a", STATE_FILE).stdout.strip()
    assert mode == "600"
    m = _metrics(testbed, host)
    assert m['gpuops_node_health{node="%s"}' % host] == 0
    assert m['gpuops_node_health_drained{node="%s"}' % host] == 0
    assert m['gpuops_node_health_policy_info{node="%s",policy_version="%s"}' % (host, run["policy_version"])] == 1
    assert not [k for k in m if k.startswith("gpuops_node_health_finding")]
    assert testbed.node_state(host).rstrip("*") == "IDLE"


def test_xid79_drains_within_one_interval_and_a_reboot_returns_the_node(testbed, installed):
    host = installed[0]
    before = _next_run(testbed, host, time.time())  # a run just ended: the next one is one interval away
    _xid79(testbed, host)
    injected = time.time()
    testbed.wait_for(lambda: "DRAIN" in testbed.node_state(host), timeout=INTERVAL + 4, interval=0.2, what="drain")
    assert time.time() - injected <= INTERVAL + 4
    assert before["timestamp"] < injected
    reason = _reason(testbed, host)
    assert re.match(r"^gpuops: gpu\.(missing|xid) gpu", reason), reason
    run = _next_run(testbed, host, injected)
    assert run["verdict"] == 3 and run["drained"] is True and run["own_reason"] == reason
    m = _metrics(testbed, host)
    assert m['gpuops_node_health{node="%s"}' % host] == 3 and m['gpuops_node_health_drained{node="%s"}' % host] == 1
    assert any('check="gpu.xid",severity="P1"' in k for k in m), m
    # the fault hidden from the tools: the policy remembers an Xid 79 until a new boot, the node stays drained
    with testbed.edit_state(host) as s:
        for g in s["gpus"]:
            g["lost"] = False
        s["kernel_log"] = [ln for ln in s["kernel_log"] if "NVRM" not in ln["msg"]]
    hidden = time.time()
    run = _next_run(testbed, host, hidden)
    assert run["verdict"] == 3 and "DRAIN" in testbed.node_state(host) and _reason(testbed, host) == reason
    # a reboot (fresh kernel log, new boot id): the next run lifts its own drain
    boot = testbed.boot_id(host)
    testbed.on_node(host, "/usr/local/sbin/gpuops-sim-reboot")
    testbed.wait_for(lambda: testbed.boot_id(host) != boot, timeout=10, what="new boot id")
    testbed.wait_for(
        lambda: testbed.node_state(host).rstrip("*") == "IDLE", timeout=INTERVAL * 2 + 8, interval=0.3, what="resumed"
    )
    run = _last_run(testbed, host)
    assert run["drained"] is False and run["own_reason"] is None


def test_a_human_drain_is_left_alone_even_with_a_fault(testbed, installed):
    host = installed[1]
    testbed.scontrol("update", "NodeName=%s" % host, "State=DRAIN", "Reason=bad fan, ticket OPS-9")
    _xid79(testbed, host)
    run = _next_run(testbed, host, time.time())  # a run with the fault in view
    assert run["verdict"] == 3 and run["drained"] is False
    assert "someone else" in run["decision"]["why"]
    assert _reason(testbed, host) == "bad fan, ticket OPS-9" and "DRAIN" in testbed.node_state(host)
    assert _metrics(testbed, host)['gpuops_node_health_drained{node="%s"}' % host] == 0
    # clean again (reboot): still the human's drain, never resumed by the program
    boot = testbed.boot_id(host)
    testbed.on_node(host, "/usr/local/sbin/gpuops-sim-reboot")
    testbed.wait_for(lambda: testbed.boot_id(host) != boot, timeout=10, what="new boot id")
    run = _next_run(testbed, host, time.time() + 1)
    assert run["verdict"] in (0, 1) and run["decision"]["action"] == "none"
    assert _reason(testbed, host) == "bad fan, ticket OPS-9" and "DRAIN" in testbed.node_state(host)
