# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The EDA rulebook extensions/eda/rulebooks/gpuops.yml, unmodified, under a real ansible-rulebook with its
webhook on 127.0.0.1 (with a token: the listener requires one on loopback too).

What the rules DO is tested with the real playbooks against the test bed's Slurm (fixture `bed_eda`: the rulebook
runs from the repository root, so its run_playbook paths are the collection's playbooks, with the bed's inventory, a
state directory of its own and the audit callback): a grouped Xid 79 payload drains exactly its firing nodes through
playbooks/isolate.yml and the guard, a repeated alert isolates once (idempotent by incident: the repeat is recorded on
the incident, nothing acts), a node in a maintenance window is not isolated (the suppression is recorded). Every wait
is a condition with a deadline.

The webhook's own boundaries (token, bind address, hostile bodies, bursts, groups as node names) are about what the
listener lets through to a playbook, not about a playbook: there a recording playbook (RECORDER, in a temp dir)
stands in and only records which nodes and variables it was handed. Needs build/venv-eda
(tests/testbed/eda-setup.sh) and Java 17; skipped without them, failed under CI=true; the bed tests need the bed
(tests/testbed/README.md)."""

from __future__ import annotations

import datetime
import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.environ.get("GPUOPS_EDA_BIN", os.path.join(ROOT, "build", "venv-eda", "bin"))
RULEBOOK = os.path.join(ROOT, "extensions", "eda", "rulebooks", "gpuops.yml")
JAVA_HOME = os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")

RECORDER = """---
- name: Record the targets instead of acting (EDA test)
  hosts: localhost
  gather_facts: false
  tasks:
    - name: One file per run, naming every node the rule asked us to act on
      ansible.builtin.copy:
        dest: "{{ lookup('env', 'GPUOPS_EDA_RECORD') }}/{{ gpuops_runbook }}.{{ 999999999 | random }}.json"
        content: >-
          {{ {'nodes': gpuops_targets.split(',') | select | list, 'ticket': gpuops_ticket, 'vars': __vars,
              'eda': ansible_eda | default(none)} | to_json }}
        mode: "0644"
      vars:
        __vars:
          isolate_nodes: "{{ isolate_nodes | default(none) }}"
          isolate_ticket: "{{ isolate_ticket | default(none) }}"
          isolate_reason: "{{ isolate_reason | default(none) }}"
          leak_response_source: "{{ leak_response_source | default(none) }}"
          leak_response_alert_id: "{{ leak_response_alert_id | default(none) }}"
"""


def _missing():
    if not os.path.isfile(os.path.join(VENV_BIN, "ansible-rulebook")):
        return "no ansible-rulebook in %s (run tests/testbed/eda-setup.sh)" % VENV_BIN
    if not os.path.isfile(os.path.join(JAVA_HOME, "bin", "java")):
        return "no Java at %s" % JAVA_HOME
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_rulebook(work, rec, **env_vars):
    """ansible-rulebook on the unmodified rulebook from `work`, with the GPUOPS_EDA_* variables given (as
    --env-vars). Returns (process, log path); the caller waits for the port or the exit."""
    env = dict(os.environ, JAVA_HOME=JAVA_HOME, **env_vars)
    env.update(PATH=VENV_BIN + os.pathsep + os.environ["PATH"], GPUOPS_EDA_RECORD=str(rec), ANSIBLE_FORKS="1")
    for k in ("ANSIBLE_CONFIG", "ANSIBLE_CALLBACKS_ENABLED", "VIRTUAL_ENV"):
        env.pop(k, None)
    # the event source gpuops.cluster.alertmanager comes from the collection (build/ansible_collections -> repo)
    env["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(ROOT, "build")
    log_path = work / ("rulebook-%s.log" % env_vars.get("GPUOPS_EDA_PORT", "x"))
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [os.path.join(VENV_BIN, "ansible-rulebook"), "--rulebook", RULEBOOK, "-i", "inv.ini"]
            + ["--env-vars", ",".join(sorted(env_vars))],
            cwd=str(work),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return proc, log_path


def wait_listening(proc, port, log_path, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("ansible-rulebook did not start: %s" % log_path.read_text()[-3000:])
            time.sleep(0.2)


def stop(proc):
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def listen_addresses(port):
    """Local addresses of the LISTEN sockets on `port` (from /proc/net/tcp and tcp6)."""
    found = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(name):
            continue
        with open(name, encoding="ascii") as f:
            for line in list(f)[1:]:
                cols = line.split()
                addr, hexport = cols[1].split(":")
                if cols[3] == "0A" and int(hexport, 16) == port:
                    found.add(addr)
    return found


@pytest.fixture(scope="module")
def eda_work(tmp_path_factory):
    why = _missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    work = tmp_path_factory.mktemp("eda")
    (work / "playbooks").mkdir()
    for name in ("isolate.yml", "leak_response.yml"):
        (work / "playbooks" / name).write_text(RECORDER)
    (work / "inv.ini").write_text(
        'localhost ansible_connection=local ansible_python_interpreter="{{ ansible_playbook_python }}"\n'
    )
    return work


#: The bearer token the shipped rulebook is started with (GPUOPS_EDA_TOKEN); `post` sends it unless told not to.
TOKEN = "eda-test-" + os.urandom(8).hex()


@pytest.fixture(scope="module")
def eda(eda_work):
    """The rulebook as shipped, started with a port and a token: the default bind (loopback)."""
    rec = eda_work / "rec"
    rec.mkdir()
    port = _free_port()
    proc, log = start_rulebook(eda_work, rec, GPUOPS_EDA_PORT=str(port), GPUOPS_EDA_TOKEN=TOKEN)
    wait_listening(proc, port, log)
    yield {"url": "http://127.0.0.1:%d/endpoint" % port, "rec": rec, "log": log, "proc": proc, "port": port}
    stop(proc)


def post(url, payload, headers=None, token=TOKEN, raw=None, body=False):
    """POST an Alertmanager body (JSON of `payload`, or the bytes `raw`) with the bearer token; the status, or
    (status, response text) with body=True."""
    hdrs = {"Content-Type": "application/json"}
    if token:
        hdrs["Authorization"] = "Bearer " + token
    hdrs.update(headers or {})
    req = urllib.request.Request(url, raw if raw is not None else json.dumps(payload).encode(), hdrs)
    with urllib.request.urlopen(req, timeout=90) as resp:
        return (resp.status, resp.read().decode()) if body else resp.status


def alert(name, node, status="firing", **labels):
    labels.update(alertname=name, node=node)
    return {"status": status, "labels": labels, "annotations": {}, "fingerprint": "%s-%s" % (name, node)}


def am_payload(group, *alerts):
    firing = any(a["status"] == "firing" for a in alerts)
    return {
        "version": "4",
        "groupKey": group,
        "status": "firing" if firing else "resolved",
        "receiver": "gpuops",
        "alerts": list(alerts),
    }


def recorded(eda, runbook, want, timeout=120):
    """node -> count of recorded actions for `runbook`, once `want` nodes are there (or the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        got = {}
        for f in eda["rec"].glob(runbook + ".*"):
            for node in json.loads(f.read_text())["nodes"]:
                got[node] = got.get(node, 0) + 1
        if len(got) >= want or time.monotonic() > deadline:
            return got
        time.sleep(0.3)


def test_twenty_simultaneous_alerts_all_delivered(eda):
    """A burst of 20 Xid 79 alerts (Alertmanager groups by alertname: two grouped posts at once).
    All 20 nodes reach the playbook; capping how many are isolated is the isolation guard's job."""
    nodes = ["gpu-node-%02d" % i for i in range(40, 60)]
    batches = [nodes[:10], nodes[10:]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        codes = list(
            pool.map(
                lambda b: post(eda["url"], am_payload("burst-" + b[0], *[alert("GpuXid79", n) for n in b])), batches
            )
        )
    assert codes == [200] * 2
    # ~20 s on an idle 2-core machine; generous for a loaded CI box (each run is one ansible-playbook process)
    got = recorded(eda, "gpu_fell_off_bus", 2 + 20, timeout=240)
    assert {n: got.get(n) for n in nodes} == {n: 1 for n in nodes}, eda["log"].read_text()[-2000:]


# --- hostile alert bodies (issue 12 item 2) ---------------------------------------------------------------
HOSTILE = {
    "expr": "{{ lookup('pipe', 'touch %s') }}",
    "stmt": "{%% set _x = lookup('pipe', 'touch %s') %%}",
    "comment": "{# c #}{{ lookup('pipe', 'touch %s') }}{# d #}",
}
FIELDS = (
    "groupKey",
    "labels.node",
    "labels.alertname",
    "labels.gpu",
    "annotations.summary",
    "alert.status",
    "group.status",
    "receiver",
    "externalURL",
    "commonLabels.node",
    "commonAnnotations.description",
    "generatorURL",
    "fingerprint",
)


def hostile_payload(field, text, node):
    a = alert("GpuXid79", node, gpu="3")
    a["annotations"] = {"summary": "GPU fell off the bus"}
    a["generatorURL"] = "http://prometheus.example/graph"
    p = am_payload('{}:{alertname="GpuXid79"}', a)
    p.update(externalURL="http://am.example", commonLabels={"node": node}, commonAnnotations={})
    where, key = field.rpartition(".")[::2]
    if field == "alert.status":
        a["status"] = text
    elif field == "group.status":
        p["status"] = text
    elif where in ("labels", "annotations"):
        a[where][key] = text
    elif where in ("commonLabels", "commonAnnotations"):
        p[where][key] = text
    elif field in ("generatorURL", "fingerprint"):
        a[field] = text
    else:
        p[field] = text
    return p


def test_jinja_in_every_field_executes_nothing(eda, tmp_path):
    """Every field of an Alertmanager body carrying {{ }}, {% %} or {# #} around a pipe lookup: no marker file
    is ever created, no run acts on a node that is not a hostname, and what a run receives holds no template."""
    markers, expect = [], {}
    for i, field in enumerate(FIELDS):
        for kind, tmpl in HOSTILE.items():
            marker = tmp_path / ("m-%s-%s" % (field.replace(".", "_"), kind))
            markers.append(marker)
            node = "gpu-node-%d%s" % (100 + i, kind[0])
            code = post_status(eda["url"], hostile_payload(field, tmpl % marker, node))
            assert code in (200, 202, 400), (field, kind, code)
            if field not in ("labels.node", "labels.alertname", "alert.status", "group.status"):
                expect[node] = 1
    # a clean alert posted last: once it has run, every earlier post has been handled (rules run in order)
    assert post(eda["url"], am_payload("after-hostile", alert("CoolantLeak", "gpu-node-199"))) == 200
    deadline = time.monotonic() + 240
    while "gpu-node-199" not in recorded(eda, "coolant_leak", 0, timeout=0):
        assert time.monotonic() < deadline, eda["log"].read_text()[-3000:]
        time.sleep(0.5)
    assert [str(m) for m in markers if m.exists()] == []
    got = recorded(eda, "gpu_fell_off_bus", 0, timeout=0)
    hostile_runs = {n: c for n, c in got.items() if n.startswith("gpu-node-1") and n != "gpu-node-199"}
    # only well-formed hostnames ever reach a playbook, each once; the alerts around them still act
    assert hostile_runs == expect
    for f in eda["rec"].glob("*.json"):
        text = f.read_text()
        for delim in ("{{", "{%", "{#"):
            assert delim not in text, (f.name, text[:500])


def post_status(url, payload, headers=None, token=TOKEN, raw=None):
    try:
        return post(url, payload, headers, token=token, raw=raw)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_default_bind_is_loopback(eda):
    """Started without GPUOPS_EDA_HOST, the listener is on 127.0.0.1 only."""
    assert listen_addresses(eda["port"]) == {"0100007F"}  # 127.0.0.1, little-endian hex as /proc writes it


def test_non_loopback_without_token_refuses_to_start(eda_work, tmp_path):
    port = _free_port()
    proc, log = start_rulebook(eda_work, tmp_path, GPUOPS_EDA_HOST="0.0.0.0", GPUOPS_EDA_PORT=str(port))
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        stop(proc)
        pytest.fail("ansible-rulebook kept running on 0.0.0.0 without a token: %s" % log.read_text()[-2000:])
    assert proc.returncode != 0
    assert "refusing to listen on 0.0.0.0 without authentication" in log.read_text()
    assert listen_addresses(port) == set()


def test_token_configured_refuses_unauthenticated_posts(eda_work, tmp_path):
    """Bound to all addresses with a token: no header, a wrong token or another scheme gets 401 and acts on
    nothing; the right bearer token is accepted and its alert acts."""
    token = "t0k-" + os.urandom(12).hex()
    port = _free_port()
    rec = tmp_path / "rec"
    rec.mkdir()
    proc, log = start_rulebook(
        eda_work, rec, GPUOPS_EDA_HOST="0.0.0.0", GPUOPS_EDA_PORT=str(port), GPUOPS_EDA_TOKEN=token
    )
    try:
        wait_listening(proc, port, log)
        url = "http://127.0.0.1:%d/endpoint" % port
        bad = am_payload("unauth", alert("GpuXid79", "gpu-node-70"))
        assert post_status(url, bad, token=None) == 401
        assert post_status(url, bad, token=token[:-1]) == 401
        assert post_status(url, bad, {"Authorization": "Basic " + token}) == 401
        good = am_payload("auth", alert("GpuXid79", "gpu-node-71"))
        assert post_status(url, good, token=token) == 200
        got = recorded({"rec": rec}, "gpu_fell_off_bus", 1, timeout=120)
        time.sleep(1.0)
        assert recorded({"rec": rec}, "gpu_fell_off_bus", 1, timeout=0) == got == {"gpu-node-71": 1}
        assert token not in log.read_text()
    finally:
        stop(proc)


def test_rules_alone_never_act_on_a_bad_node(eda_work, tmp_path):
    """Second layer: the rules themselves, fed by a source that does NOT sanitize (eda.builtin.generic), do not
    act on a group that holds a node name outside [A-Za-z0-9._-]; a clean group after them still acts."""
    import yaml

    marker = tmp_path / "marker"
    bad = "gpu-node-80{{ lookup('pipe', 'touch %s') }}" % marker

    def ev(group, *nodes):
        alerts = [{"status": "firing", "labels": {"alertname": "GpuXid79", "node": n}} for n in nodes]
        return {"payload": {"status": "firing", "group": group, "alerts": alerts}}

    events = [
        ev("00000000000000a1", bad),
        ev("00000000000000a2", "gpu-node-81", bad),
        ev("00000000000000a3", "gpu-node-82"),
    ]
    book = yaml.safe_load(open(RULEBOOK, encoding="utf-8"))
    (tmp_path / "events.yml").write_text(yaml.safe_dump(events))  # a file: source args are rendered, files not
    gen = {"payload_file": str(tmp_path / "events.yml"), "startup_delay": 1}
    book = book[:1]  # the alert ruleset alone (the leak watch's ruleset has a source of its own)
    book[0]["sources"] = [{"name": "unsanitized", "eda.builtin.generic": gen}]
    alt = tmp_path / "rules-only.yml"
    alt.write_text(yaml.safe_dump(book, sort_keys=False))
    rec = tmp_path / "rec"
    rec.mkdir()
    env = dict(os.environ, JAVA_HOME=JAVA_HOME, PATH=VENV_BIN + os.pathsep + os.environ["PATH"])
    env.update(GPUOPS_EDA_RECORD=str(rec), ANSIBLE_FORKS="1")
    for k in ("ANSIBLE_CONFIG", "ANSIBLE_CALLBACKS_ENABLED", "VIRTUAL_ENV", "ANSIBLE_COLLECTIONS_PATH"):
        env.pop(k, None)
    with open(tmp_path / "log", "w") as log:
        proc = subprocess.Popen(
            [os.path.join(VENV_BIN, "ansible-rulebook"), "--rulebook", str(alt), "-i", "inv.ini"],
            cwd=str(eda_work),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        got = recorded({"rec": rec}, "gpu_fell_off_bus", 1, timeout=120)
        time.sleep(1.0)
        assert recorded({"rec": rec}, "gpu_fell_off_bus", 1, timeout=0) == got == {"gpu-node-82": 1}, (
            tmp_path / "log"
        ).read_text()[-3000:]
        assert not marker.exists()
    finally:
        stop(proc)


# --- issue 35 item 6: an alert never fans out to a group; the loopback listener needs a token ----------------
def wait_node(eda, runbook, node, timeout=120):
    deadline = time.monotonic() + timeout
    while node not in recorded(eda, runbook, 0, timeout=0):
        assert time.monotonic() < deadline, eda["log"].read_text()[-3000:]
        time.sleep(0.3)


def test_without_a_token_the_loopback_listener_refuses_to_start(eda_work, tmp_path):
    """Observed: on the default loopback bind the webhook took alerts from any local user, without a token. Now
    the rulebook as shipped, started with only a port, stops with the reason and never listens; it listens
    without a token only when told to (GPUOPS_EDA_REQUIRE_TOKEN=false)."""
    port = _free_port()
    proc, log = start_rulebook(eda_work, tmp_path, GPUOPS_EDA_PORT=str(port))
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        stop(proc)
        pytest.fail("ansible-rulebook kept running on 127.0.0.1 without a token: %s" % log.read_text()[-2000:])
    assert proc.returncode != 0
    assert "refusing to listen on 127.0.0.1 without authentication" in log.read_text()
    assert listen_addresses(port) == set()
    rec = tmp_path / "rec"
    rec.mkdir()
    port = _free_port()
    proc, log = start_rulebook(eda_work, rec, GPUOPS_EDA_PORT=str(port), GPUOPS_EDA_REQUIRE_TOKEN="false")
    try:
        wait_listening(proc, port, log)
        url = "http://127.0.0.1:%d/endpoint" % port
        assert post_status(url, am_payload("optout", alert("GpuXid79", "gpu-node-72")), token=None) == 200
        assert recorded({"rec": rec}, "gpu_fell_off_bus", 1, timeout=120) == {"gpu-node-72": 1}
    finally:
        stop(proc)


def test_a_tokenless_post_on_loopback_is_refused(eda):
    before = {f.name for f in eda["rec"].iterdir()}
    assert post_status(eda["url"], am_payload("tokenless", alert("GpuXid79", "gpu-node-73")), token=None) == 401
    assert post_status(eda["url"], am_payload("tokenless", alert("GpuXid79", "gpu-node-73")), token="x" * 16) == 401
    # a clean leak afterwards: once it has run, the refused ones would have too
    assert post(eda["url"], am_payload("after-tokenless", alert("CoolantLeak", "gpu-node-74"))) == 200
    wait_node(eda, "coolant_leak", "gpu-node-74")
    new = [json.loads((eda["rec"] / n).read_text())["nodes"] for n in {f.name for f in eda["rec"].iterdir()} - before]
    assert new == [["gpu-node-74"]]


def test_a_deep_or_oversized_body_is_a_4xx(eda):
    deep = b'{"status": "firing", "alerts": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    assert post_status(eda["url"], None, raw=deep) == 400
    assert post_status(eda["url"], None, raw=b"[" * 100000 + b"]" * 100000) == 400
    assert post_status(eda["url"], None, raw=b" " * (2 * 1024 * 1024)) == 413
    assert post(eda["url"], am_payload("after-deep", alert("CoolantLeak", "gpu-node-75"))) == 200
    wait_node(eda, "coolant_leak", "gpu-node-75")
    assert eda["proc"].poll() is None, "the listener died"


_LOCAL = 'ansible_connection=local ansible_python_interpreter="{{ ansible_playbook_python }}"'
FANOUT_INVENTORY = "localhost %s\n[gpu_nodes]\ngpu-node-01 %s\ngpu-node-02 %s\n" % (_LOCAL, _LOCAL, _LOCAL)


def test_an_alert_naming_a_group_or_pattern_runs_nothing(eda_work, tmp_path):
    """Observed (issue 35 item 6): a GpuThermalThrottle alert whose node label was `all` or `gpu_nodes` ran
    playbooks/collect.yml on every host of the group. Here the rulebook runs the REAL collect.yml over an
    inventory whose nodes are local (a run would leave a capture per node): `all` and `gpu-node-0*` are dropped
    by the source, `gpu_nodes` is refused by the playbook's first task (its inventory knows the group); no
    capture is taken anywhere. A clean alert after them (the recorder) shows that they were all handled."""
    work = tmp_path / "work"
    (work / "playbooks").mkdir(parents=True)
    (work / "playbooks" / "collect.yml").symlink_to(os.path.join(ROOT, "playbooks", "collect.yml"))
    (work / "playbooks" / "leak_response.yml").write_text(RECORDER)
    (work / "inv.ini").write_text(FANOUT_INVENTORY)
    rec = tmp_path / "rec"
    rec.mkdir()
    port = _free_port()
    proc, log = start_rulebook(work, rec, GPUOPS_EDA_PORT=str(port), GPUOPS_EDA_TOKEN=TOKEN)
    try:
        wait_listening(proc, port, log)
        url = "http://127.0.0.1:%d/endpoint" % port
        answers = {}
        for node in ("all", "gpu_nodes", "gpu-node-0*", "ungrouped"):
            answers[node] = post(url, am_payload("fan-" + node, alert("GpuThermalThrottle", node)), body=True)
        assert answers["all"] == (200, "accepted 0 refused 1\n")
        assert answers["gpu-node-0*"] == (200, "accepted 0 refused 1\n")
        assert answers["ungrouped"] == (200, "accepted 0 refused 1\n")
        assert answers["gpu_nodes"] == (200, "accepted 1 refused 0\n")  # a host name to the source
        assert post(url, am_payload("fan-after", alert("CoolantLeak", "gpu-node-01"))) == 200
        assert recorded({"rec": rec}, "coolant_leak", 1, timeout=240) == {"gpu-node-01": 1}, log.read_text()[-3000:]
        text = log.read_text()
        assert "gpuops_targets: gpu_nodes is a group" in text, text[-4000:]
        assert not (work / "captures").exists(), sorted(str(p) for p in (work / "captures").rglob("*"))[:20]
    finally:
        stop(proc)


# --- the real playbooks against the bed's Slurm (issue 40) --------------------------------------------------------
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
