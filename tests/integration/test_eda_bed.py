# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the EDA rules DO, with the real playbooks against the test bed's Slurm (fixture `bed_eda`: the shipped
rulebook runs from the repository root, so its run_playbook paths are the collection's playbooks, with the bed's
inventory, a state directory of its own and the audit callback): a grouped Xid 79 payload drains exactly its firing
nodes through playbooks/isolate.yml and the guard, a repeated alert isolates once (idempotent by incident: the repeat
is recorded on the incident, nothing acts), a node in a maintenance window is not isolated (the suppression is
recorded). Every wait is a condition with a deadline. Needs the bed (tests/testbed/README.md), build/venv-eda and
Java 17."""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import time

import pytest

from _eda import (
    ROOT,
    VENV_BIN,
    RULEBOOK,
    JAVA_HOME,
    TOKEN,
    _missing,
    _free_port,
    wait_listening,
    stop,
    post,
    alert,
    am_payload,
)

REPO_VENV_BIN = os.path.join(ROOT, ".venv", "bin")
WINDOWED = "gpu-node-04"  # the overlay gives it a maintenance window in force for the module's run


def _iso(ts):
    return datetime.datetime.fromtimestamp(ts, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def start_bed_rulebook(testbed, work, overlay):
    """The shipped rulebook from the repository root (its run_playbook paths: the collection's playbooks) over the
    bed's inventory plus ``overlay`` (an inventory document), with its own state directory (work/state) and the audit
    callback, as tests/testbed/realtime.sh starts it. Returns the handle the helpers below take."""
    why = _missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    state = work / "state"
    state.mkdir()
    inv = work / "inventory"
    inv.mkdir()
    (inv / "10-bed.yml").symlink_to(testbed.inventory)
    (inv / "20-eda-test.yml").write_text(json.dumps(overlay))
    port = _free_port()
    env = dict(os.environ, JAVA_HOME=JAVA_HOME, GPUOPS_EDA_PORT=str(port), GPUOPS_EDA_TOKEN=TOKEN)
    # ansible-runner runs the first ansible-playbook on PATH: the collection's venv (the store's SQLAlchemy)
    env.update(PATH=os.pathsep.join([REPO_VENV_BIN, VENV_BIN, os.environ["PATH"]]), ANSIBLE_FORKS="4")
    env.update(ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"), ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    env.update(ANSIBLE_PIPELINING="True", ANSIBLE_CALLBACKS_ENABLED="gpuops.cluster.audit", GPUOPS_STATE_DIR=str(state))
    env.update(GPUOPS_TB=str(testbed.root))
    for k in ("VIRTUAL_ENV", "PYTHONPATH", "ANSIBLE_INVENTORY"):
        env.pop(k, None)
    log_path = work / "rulebook.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [os.path.join(VENV_BIN, "ansible-rulebook"), "--rulebook", RULEBOOK, "-i", str(inv), "-v"]
            + ["--env-vars", "GPUOPS_EDA_PORT,GPUOPS_EDA_TOKEN"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_listening(proc, port, log_path, timeout=90)
    except BaseException:
        stop(proc)
        raise
    return {"url": "http://127.0.0.1:%d/endpoint" % port, "log": log_path, "proc": proc, "state": state, "bed": testbed}


def stop_bed_rulebook(bed):
    stop(bed["proc"])
    for host in bed["bed"].nodes:
        bed["bed"].scontrol("update", "NodeName=%s" % host, "State=RESUME", check=False)


#: no guard cap (a 4-node bed, several isolations per module) and no flap window
OPEN_GUARD = {"max_share_cluster": 1, "max_share_partition": 1, "max_share_rack": 1, "window_s": 0}


@pytest.fixture(scope="module")
def bed_eda(testbed, tmp_path_factory):
    """The rulebook on the bed (start_bed_rulebook) with an open guard and a maintenance window in force on
    WINDOWED."""
    work = tmp_path_factory.mktemp("eda-bed")
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
    window = {"name": "eda-test-window", "start": start.strftime("%Y-%m-%dT%H:%M"), "duration": "6h", "timezone": "UTC"}
    overlay = {
        "all": {
            "vars": {"gpuops_isolation_guard": OPEN_GUARD},
            "children": {"gpu_nodes": {"hosts": {WINDOWED: {"gpuops_maintenance_windows": [window]}}}},
        }
    }
    bed = start_bed_rulebook(testbed, work, overlay)
    try:
        yield bed
    finally:
        stop_bed_rulebook(bed)


def outcomes(bed, workflow):
    """The run outcome documents the real playbooks wrote (<state>/runs/<workflow>/*.json)."""
    return [json.loads(f.read_text()) for f in sorted((bed["state"] / "runs" / workflow).glob("*.json"))]


def isolated_runs(bed, host):
    return [o for o in outcomes(bed, "isolate") if host in (o.get("nodes") or {})]


def ledger(bed):
    """(open incidents, their events) of the run's state directory (the embedded store)."""
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_incidents as _inc
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store
    import sqlalchemy as sa

    if not (bed["state"] / "gpuops.db").exists():
        return [], []
    store = open_store(state_dir=str(bed["state"]))
    try:
        with store.read() as conn:
            ev = _inc.tables()["incident_events"]
            events = [dict(r) for r in conn.execute(sa.select(ev).order_by(ev.c.id)).mappings()]
            return _inc.open_incidents(conn), events
    finally:
        store.close()


def wait_until(what, fn, bed, timeout=240):
    deadline = time.monotonic() + timeout
    while True:
        got = fn()
        if got:
            return got
        assert time.monotonic() < deadline, "timed out waiting for %s\n%s" % (what, bed["log"].read_text()[-4000:])
        time.sleep(0.5)


def xid(node, status="firing", started=None, **labels):
    """GpuopsXid79 as the collection's rule raises it (its labels name the fault: check, code, severity)."""
    a = alert("GpuopsXid79", node, status, check="gpu.xid", component="gpu:0", code="79", severity="P0", **labels)
    a["startsAt"] = _iso(started if started is not None else time.time() - 120)
    return a


def drained(bed, host):
    return any(w in bed["bed"].node_state(host).upper() for w in ("DRAIN", "DRNG"))


def test_grouped_payload_drains_its_firing_nodes_only(bed_eda):
    """A grouped Alertmanager payload (two firing Xid 79 nodes, one resolved, another alert name) runs the real
    playbooks/isolate.yml once, through the guard, on exactly the two firing nodes: Slurm drains them, the run's
    outcome names them with the ticket derived from the group key; the resolved node stays in service."""
    t0 = time.time()
    payload = am_payload(
        '{}:{alertname="GpuopsXid79"}', xid("gpu-node-01"), xid("gpu-node-03", status="resolved"), xid("gpu-node-02")
    )
    assert post(bed_eda["url"], payload) == 200
    runs = wait_until(
        "the isolate run's outcome",
        lambda: [o for o in outcomes(bed_eda, "isolate") if "gpu-node-02" in o["nodes"]],
        bed_eda,
    )
    (run,) = runs
    assert sorted(run["nodes"]) == ["gpu-node-01", "gpu-node-02"], run
    assert {n["outcome"] for n in run["nodes"].values()} == {"done"}, run
    assert re.fullmatch(r"alert-[0-9a-f]{16}", run["ticket"]), run
    assert drained(bed_eda, "gpu-node-01") and drained(bed_eda, "gpu-node-02")
    assert not drained(bed_eda, "gpu-node-03")
    incidents, _events = ledger(bed_eda)
    assert sorted(i["host"] for i in incidents if i["detected_at"] >= t0 - 300) == ["gpu-node-01", "gpu-node-02"]


def test_a_repeated_alert_isolates_once(bed_eda):
    """Alertmanager repeats a firing group every group_interval: the second identical payload is recorded on the
    incident as a repeat and runs no isolation; one incident, detected at the alert's startsAt. A new node's alert
    after it (rules run one at a time) proves the repeat's run has ended."""
    host = "gpu-node-03"
    started = time.time() - 300
    payload = am_payload('{}:{alertname="GpuopsXid79",rep="1"}', xid(host, started=started))
    assert post(bed_eda["url"], payload) == 200
    wait_until("the first isolation", lambda: isolated_runs(bed_eda, host), bed_eda)
    assert drained(bed_eda, host)
    assert post(bed_eda["url"], payload) == 200  # the repeat

    def repeat_recorded():
        incidents, events = ledger(bed_eda)
        mine = [i for i in incidents if i["host"] == host]
        return (
            mine
            if mine and any(e["step"] == "repeat" and e["incident_id"] == mine[0]["incident_id"] for e in events)
            else None
        )

    (inc,) = wait_until("the repeat on the incident", repeat_recorded, bed_eda)
    # a later alert of another runbook-free node: the rulebook runs one playbook at a time, so once this one's
    # incident shows, the repeat's run is over
    assert (
        post(
            bed_eda["url"],
            am_payload(
                "after-repeat", alert("GpuopsNodeHealthDegraded", "gpu-node-01", severity="P2", check="gpu.ecc")
            ),
        )
        == 200
    )
    wait_until("the marker alert's run", lambda: any(e["actor"] == "health_check" for e in ledger(bed_eda)[1]), bed_eda)
    assert len(isolated_runs(bed_eda, host)) == 1, isolated_runs(bed_eda, host)
    assert inc["detected_at"] == float(int(started)), (inc["detected_at"], started)
    steps = [e["step"] for e in ledger(bed_eda)[1] if e["incident_id"] == inc["incident_id"]]
    assert steps == ["detected", "acted", "repeat"], steps
    audit = [json.loads(ln) for ln in (bed_eda["state"] / "audit" / "audit.log").read_text().splitlines() if ln.strip()]
    mine = [
        r
        for r in audit
        if r.get("module") == "gpuops.cluster.incident_event" and host in r.get("act", []) + r.get("repeats", [])
    ]
    assert [(r["act"], r["repeats"]) for r in mine] == [([host], []), ([], [host])], mine


def test_a_node_in_a_maintenance_window_is_not_isolated(bed_eda):
    """The overlay puts WINDOWED in a maintenance window: its Xid 79 alert opens the incident (the fault is real)
    but the real isolate.yml does not act on it (the rollout owns it); the suppression is on the incident."""
    assert post(bed_eda["url"], am_payload('{}:{alertname="GpuopsXid79",win="1"}', xid(WINDOWED))) == 200

    def suppressed():
        incidents, events = ledger(bed_eda)
        ids = {i["incident_id"] for i in incidents if i["host"] == WINDOWED}
        return [e for e in events if e["step"] == "suppressed" and e["incident_id"] in ids]

    (ev,) = wait_until("the suppression on the incident", suppressed, bed_eda)
    assert ev["detail"].startswith("gpu_fell_off_bus: maintenance window eda-test-window"), ev
    assert (
        post(
            bed_eda["url"],
            am_payload(
                "after-window", alert("GpuopsNodeHealthDegraded", "gpu-node-02", severity="P2", check="gpu.hbm")
            ),
        )
        == 200
    )
    wait_until(
        "the marker alert's run",
        lambda: any(e["actor"] == "health_check" and "gpu.hbm" in (e["detail"] or "") for e in ledger(bed_eda)[1]),
        bed_eda,
    )
    assert isolated_runs(bed_eda, WINDOWED) == []
    assert not drained(bed_eda, WINDOWED)
    # the audit trail has the decision: which node acted (none), which was suppressed and why
    audit = [json.loads(ln) for ln in (bed_eda["state"] / "audit" / "audit.log").read_text().splitlines() if ln.strip()]
    sup = [r for r in audit if r.get("module") == "gpuops.cluster.incident_event" and r.get("suppressed")]
    assert [(r["act"], [s["node"] for s in r["suppressed"]]) for r in sup] == [([], [WINDOWED])], sup
    assert sup[0]["suppressed"][0]["reason"].startswith("maintenance window eda-test-window"), sup


def test_resolved_and_unrelated_alerts_do_nothing(bed_eda):
    """A resolved Xid 79 and an alert no rule knows run no playbook and record nothing; a marker alert posted after
    them (rules run in order) shows they have been handled."""

    def events_of(host):
        incidents, events = ledger(bed_eda)
        ids = {i["incident_id"] for i in incidents if i["host"] == host}
        return [e for e in events if e["incident_id"] in ids]

    before = events_of("gpu-node-04")
    runs_before = len(outcomes(bed_eda, "isolate"))
    assert post(bed_eda["url"], am_payload("r", xid("gpu-node-04", status="resolved"))) == 200
    assert post(bed_eda["url"], am_payload("u", alert("NodeFilesystemAlmostFull", "gpu-node-04", severity="P1"))) == 200
    marker = alert("GpuopsNodeHealthDegraded", "gpu-node-02", severity="P2", check="gpu.nvlink")
    assert post(bed_eda["url"], am_payload("after-resolved", marker)) == 200
    wait_until(
        "the marker alert's run",
        lambda: any(e["actor"] == "health_check" and "gpu.nvlink" in (e["detail"] or "") for e in ledger(bed_eda)[1]),
        bed_eda,
    )
    assert len(outcomes(bed_eda, "isolate")) == runs_before
    assert events_of("gpu-node-04") == before
    assert not drained(bed_eda, "gpu-node-04")
