# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real-time path end to end on the test bed, every daemon real (issue 40; tests/testbed/realtime.sh):
the health check installed by its role and run by each node's slurmd, prometheus-node-exporter (textfile +
infiniband) in every node, Prometheus with the generated rules, Alertmanager with the collection's routing,
ansible-rulebook with the collection's rulebook running the real playbooks (isolate through the guard against
the bed's Slurm). Faults are injected the way the node's tools see them (tools/simnode state, IB sysfs); every
wait is a condition with a deadline. Needs prometheus, prometheus-alertmanager, prometheus-node-exporter
(tests/testbed/deps.sh) and build/venv-eda (tests/testbed/eda-setup.sh); skipped without them, failed under
CI=true."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "testbed" / "lib"))
from rtchain import Chain  # noqa: E402

import _state_db  # noqa: E402

REALTIME = REPO / "tests" / "testbed" / "realtime.sh"
HC_INTERVAL = 5


def _missing():
    for tool in ("prometheus", "prometheus-alertmanager", "prometheus-node-exporter", "promtool", "amtool"):
        if not shutil.which(tool):
            return "no %s (tests/testbed/deps.sh)" % tool
    if not (REPO / "build" / "venv-eda" / "bin" / "ansible-rulebook").exists():
        return "no build/venv-eda (tests/testbed/eda-setup.sh)"
    return None


@pytest.fixture(scope="module")
def chain(testbed):
    why = _missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    env = dict(os.environ, GPUOPS_TB=str(testbed.root), GPUOPS_RT_HC_INTERVAL=str(HC_INTERVAL))
    up = subprocess.run(
        ["bash", str(REALTIME), "up"], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert up.returncode == 0, up.stderr[-3000:]
    c = Chain(str(testbed.root))
    try:
        for host in c.nodes:
            c.heal(host, timeout=120)
        yield c
    finally:
        subprocess.run(["bash", str(REALTIME), "down"], env=env, capture_output=True, timeout=300, check=False)


@pytest.fixture
def node(chain, request):
    """The node a test faults (the test function's `node_index` attribute), healed afterwards
    whatever the test's outcome: a node left drained would make the guard refuse the next test's isolation."""
    host = chain.nodes[request.function.node_index]
    yield host
    chain.heal(host, timeout=200)


def _reason(c, host):
    out = c.run([str(c.root / "bin" / "scontrol"), "show", "node", host]).stdout
    m = re.search(r"Reason=(.*?)(?: \[[^\]]*\])?$", out, re.M)
    return m.group(1).strip() if m else None


def test_xid79_drained_by_slurmd_health_check_and_alert_fires(chain, node):
    """Xid 79 in the kernel log: the next HealthCheckInterval run drains the node with the owned reason (second
    scale), and the health check's textfile, scraped by node_exporter, fires GpuopsNodeHealthFailed."""
    host = node
    t = chain.time_xid79(host, timeout=HC_INTERVAL * 2 + 10)
    assert t["verified"] < HC_INTERVAL * 2 + 10, t
    assert re.match(r"^gpuops: gpu\.(missing|xid) gpu", _reason(chain, host) or ""), _reason(chain, host)
    alerts = chain.wait(
        lambda: chain.alerts(node=host, name="GpuopsNodeHealthFailed", state="firing"), 90, "GpuopsNodeHealthFailed"
    )
    assert {a["labels"]["severity"] for a in alerts} <= {"P0", "P1"}


def test_xid79_storm_of_1000_lines_is_one_finding_one_alert_one_drain(chain, node):
    """1,000 identical Xid 79 lines on one node: one drain, one finding per GPU and check in the textfile, one
    firing alert series for the Xid finding."""
    host = node
    t0 = time.time()
    chain.time_xid79(host, timeout=HC_INTERVAL * 3 + 10, count=1000)
    run = chain.hc_run(host)
    assert run["verdict"] == 3 and run["drained"] is True
    alerts = chain.wait(
        lambda: chain.alerts(node=host, name="GpuopsNodeHealthFailed", state="firing"), 90, "GpuopsNodeHealthFailed"
    )
    xid = [a for a in alerts if a["labels"].get("check") == "gpu.xid"]
    assert len(xid) <= 1, xid  # one series (gpu.missing may stand for the same event)
    keys = [(a["labels"].get("check"), a["labels"].get("component")) for a in alerts]
    assert len(keys) == len(set(keys)), keys
    # slurmctld logged one drain of the node for the storm
    log = (chain.root / "slurm-state" / "slurmctld.log").read_text(errors="replace")
    drains = [
        ln
        for ln in log.splitlines()
        if host in ln
        and "drain" in ln.lower()
        and ln[1:20] >= time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t0 - 1))
    ]
    assert 1 <= len(drains) <= 2, drains  # update_node: node ... state set to DRAINING (+ its reason line)


def test_ib_port_down_drained_by_the_health_check_after_consecutive_runs(chain, node):
    """An IB port going Disabled: slurmd's health check sees the expected port DOWN (ib.port_state) and drains the
    node itself on the third consecutive run (health_check_ib_down_runs), never on the first."""
    host = node
    t = chain.time_ib_down(host, timeout=HC_INTERVAL * 6 + 20)
    assert t["verified"] < 30, t  # issue 40's target on the bed (3 runs at 5 s + one run)
    assert t["verified"] - t["detect"] >= HC_INTERVAL, t  # not the first run that saw it
    assert (chain.reason(host) or "").startswith("gpuops: ib.port_state "), chain.reason(host)
    run = chain.hc_run(host)
    assert run["drained"] and max(run["ib_down_runs"].values()) >= 3, run["ib_down_runs"]


def test_leak_critical_powers_the_system_off_through_the_leak_watch(chain):
    """The Redfish emulator's leak detector Critical (the BMC in the hub netns): the rulebook's leak watch
    (gpuops.cluster.redfish_leak) -> the real playbooks/leak_response.yml (guard, audit) -> the system's power Off
    on the emulator; one run, its audit records and its leak record name the watch's ticket."""
    host = chain.leak_source()
    chain.leak_heal(timeout=120)
    t0 = time.time()
    try:
        t = chain.time_leak(timeout=90)
        assert t["verified"] < 90, t
        assert chain.power_state() == "Off"
        runs = chain.audit_runs("leak_response.yml", t0)
        assert len(runs) == 1, runs  # one change of the detector, one event, one run
        # the run's records: the leak result (ticket = the watch's leak-<hash>) and the audit trail of that run
        records = chain.wait(
            lambda: [p for p in (chain.rt / "state" / "leak").glob("leak-*.json") if p.stat().st_mtime >= t0],
            60, "the leak record",
        )  # fmt: skip
        result = json.loads(records[-1].read_text(encoding="utf-8"))
        assert re.fullmatch(r"leak-[0-9a-f]{16}", records[-1].stem), records
        assert result["fired"] is True and host in result["powered_off"], result
        audit = [json.loads(x) for x in (chain.rt / "state" / "audit" / "audit.log").read_text().splitlines()]
        mine = [x for x in audit if x.get("run_id") == runs[0]["run_id"]]
        assert mine[0]["event"] == "run_start", mine[:2]
        changed = {x.get("module") for x in mine if x["event"] == "task" and x.get("changed")}
        assert "gpuops.cluster.leak_assess" in changed, changed
        assert "gpuops-Emul4ted-pw" not in json.dumps(mine)  # the BMC password never reaches the audit
        # one incident in the ledger for the leak, opened by the watch's event (read with sqlite3, not the store)
        leaks = [i for i in _state_db.open_incidents(chain.rt / "state", host) if ":bmc.leak:" in i["fingerprint"]]
        assert len(leaks) == 1 and leaks[0]["severity"] == "P1", leaks  # docs/policy.md: leak Critical is P1
    finally:
        chain.leak_heal(timeout=200)


test_xid79_drained_by_slurmd_health_check_and_alert_fires.node_index = 1
test_xid79_storm_of_1000_lines_is_one_finding_one_alert_one_drain.node_index = 2
test_ib_port_down_drained_by_the_health_check_after_consecutive_runs.node_index = 3
