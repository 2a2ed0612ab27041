# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ticket hook end to end: `gpuops-runbook run` runs playbooks/inspect.yml through ansible-runner on a
generated capture inventory (nothing is contacted), with the audit callback on, and writes the result JSON;
per-node locks make a second payload for the same node wait or refuse."""

from __future__ import annotations

import calendar
import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from gpuops_runbook import hook  # noqa: E402

BIN = os.path.dirname(sys.executable)


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    gen = os.path.join(ROOT, "tools", "simcluster", "generate.py")
    subprocess.run(
        [sys.executable, gen, "--nodes", "4", "--out", str(out), "--seed", "1", "--faults", "xid79:1", "--jobs", "1"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    key = json.loads((out / "answer_key.json").read_text())
    faulty = sorted(h for h, f in key["hosts"].items() if f)
    return {"inventory": str(out / "inventory" / "hosts.yml"), "faulty": faulty[0], "hosts": sorted(key["hosts"])}


CONFIG = {
    "requesters": {"read_only": ["*"], "corrective": ["alice"]},
    "approvers": {"corrective": ["bob"]},
    "report_roots": [],
}


def run_hook(payload, state_dir, *extra, wait=True, config=None, root=None, env=None):
    env = dict(env or os.environ, PYTHONPATH=os.path.join(ROOT, "tools"), PATH=BIN + os.pathsep + os.environ["PATH"])
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    os.makedirs(str(state_dir), exist_ok=True)
    cfg = os.path.join(str(state_dir), "..", "hook-config-%s.json" % os.path.basename(str(state_dir)))
    with open(cfg, "w", encoding="utf-8") as fh:
        json.dump(config or CONFIG, fh)
    cmd = [
        sys.executable,
        "-m",
        "gpuops_runbook",
        *(["--root", str(root)] if root else []),
        "run",
        "--config",
        cfg,
        "-i",
        payload.pop("_inventory"),
        "--state-dir",
        str(state_dir),
    ]
    proc = subprocess.Popen(
        [*cmd, *extra, "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    proc.stdin.write(json.dumps(payload))
    proc.stdin.close()
    if not wait:
        return proc
    return finish(proc)


def finish(proc):
    out = proc.stdout.read()
    proc.wait(180)
    assert out.strip(), proc.stderr.read()
    return proc.returncode, json.loads(out)


def test_inspect_through_the_hook(sim, tmp_path):
    state = tmp_path / "state"
    nodes = [sim["faulty"], sim["hosts"][0] if sim["hosts"][0] != sim["faulty"] else sim["hosts"][1]]
    payload = {"_inventory": sim["inventory"], "ticket": "OPS-4711", "runbook": "inspect", "nodes": nodes}
    payload["requester"] = "alice"
    rc, res = run_hook(payload, state)
    assert rc == 0, res
    assert res["status"] == "successful" and res["rc"] == 0 and res["errors"] == []
    assert res["ticket"] == "OPS-4711" and res["playbook"] == "playbooks/inspect.yml"
    for n in nodes:
        # capture hosts are analysed on the controller: their outcome is what the inspection found
        assert res["nodes"][n]["status"] == "ok" and res["nodes"][n]["failed"] == 0
    assert res["nodes"][sim["faulty"]]["inspection"] == "faulty"
    assert res["nodes"]["localhost"]["ok"] >= 1
    # only the requested nodes were inspected
    report = [p for p in res["reports"] if p.endswith("report.json")]
    assert len(report) == 1 and report[0].startswith(str(state / "tickets" / "OPS-4711" / "reports"))
    doc = json.loads(open(report[0], encoding="utf-8").read())
    assert sorted(doc["nodes"]) == sorted(nodes)
    assert doc["nodes"][sim["faulty"]]["status"] == "faulty"
    assert any(f["check"] == "gpu.xid" and f["code"] == "79" for f in doc["nodes"][sim["faulty"]]["findings"])
    # artifacts per ticket, the result file next to them
    assert os.path.isdir(res["artifact_dir"]) and res["artifact_dir"].startswith(str(state / "tickets" / "OPS-4711"))
    assert json.loads(open(res["result_file"], encoding="utf-8").read())["status"] == "successful"
    # the audit callback was on: the run's records carry the ticket
    assert res["audit_run_id"]
    records = [json.loads(line) for line in open(state / "audit" / "audit.log", encoding="utf-8")]
    ours = [r for r in records if r.get("run_id") == res["audit_run_id"]]
    assert ours[0]["event"] == "run_start" and ours[0]["playbook"].endswith("playbooks/inspect.yml")
    assert any(r["event"] == "play_start" and r.get("ticket") == "OPS-4711" for r in ours)


def test_unknown_host_runs_nothing(sim, tmp_path):
    payload = {"_inventory": sim["inventory"], "ticket": "OPS-1", "runbook": "inspect", "nodes": ["gpu-node-99"]}
    rc, res = run_hook(payload, tmp_path)
    assert rc == 2 and res["status"] == "invalid"
    assert "gpu-node-99" in res["errors"][0]
    assert not (tmp_path / "tickets").exists()


def test_same_node_never_runs_twice_at_once(sim, tmp_path):
    node = sim["faulty"]
    holder = hook.NodeLocks(str(tmp_path), [node], timeout=0)
    assert holder.acquire()
    try:
        payload = {"_inventory": sim["inventory"], "ticket": "OPS-2", "runbook": "inspect", "nodes": [node]}
        payload["requester"] = "carol"
        rc, res = run_hook(dict(payload), tmp_path, "--lock-timeout", "0")
        assert rc == 75 and res["status"] == "busy"
        assert "is locked by another runbook run (pid %d)" % os.getpid() in res["errors"][0]
        assert not os.path.exists(res["artifact_dir"])  # nothing was run
        # a waiting run starts once the lock is given back
        proc = run_hook(dict(payload), tmp_path, "--lock-timeout", "60", wait=False)
        time.sleep(1.5)
        assert proc.poll() is None
        released = time.time()
        holder.release()
        rc, res = finish(proc)
        assert rc == 0 and res["status"] == "successful"
        started = calendar.timegm(time.strptime(res["started_at"], "%Y-%m-%dT%H:%M:%SZ"))
        assert started >= int(released)
    finally:
        holder.release()


def test_two_hooks_for_one_node_serialize(sim, tmp_path):
    node = sim["faulty"]
    procs = []
    for t in ("OPS-10", "OPS-11"):
        payload = {
            "_inventory": sim["inventory"],
            "ticket": t,
            "runbook": "inspect",
            "nodes": [node],
            "requester": "carol",
        }
        procs.append(run_hook(payload, tmp_path, "--lock-timeout", "120", wait=False))
    results = [finish(p) for p in procs]
    assert [rc for rc, _unused in results] == [0, 0]
    spans = sorted((r["started_at"], r["finished_at"]) for _unused, r in results)
    assert spans[0][1] <= spans[1][0], "the two runs overlapped: %s" % spans


# ------------------------------------------------------------------ issue 12: ticket text is data, never a template
MARKER_DIR = "/tmp"


def _hostile(marker):
    """Jinja in every form: an expression, a statement and a comment; each would leave a trace if rendered."""
    return {
        "expr": "{{ lookup('pipe', 'touch %s.expr; echo RAN') }}" % marker,
        "stmt": "{%% set x = lookup('pipe', 'touch %s.stmt') %%}stmt" % marker,
        "comment": "{# invisible if rendered #}comment",
    }


PROBE_PLAYBOOK = """---
- name: Probe what the playbook sees
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Write every payload value as the playbook renders it
      ansible.builtin.copy:
        dest: "{{ gpuops_state_dir }}/seen.json"
        mode: "0600"
        content: >-
          {{ {'reason': probe_reason, 'notes': probe_notes, 'requester': gpuops_requester,
              'approval': gpuops_approval, 'change_id': gpuops_change_id, 'ticket': probe_ticket,
              'nodes': gpuops_nodes} | to_json }}
    - name: Use the reason in a task argument too (as isolate does for Slurm)
      ansible.builtin.command:
        argv: [/bin/echo, "{{ probe_reason }} [{{ gpuops_ticket }}]"]
      register: __probe_echo
      changed_when: false
    - name: Keep what the command printed
      ansible.builtin.copy:
        dest: "{{ gpuops_state_dir }}/echo.txt"
        mode: "0600"
        content: "{{ __probe_echo.stdout }}"
"""

PROBE_CATALOG = {
    "schema": "gpuops.runbook_catalog/v1",
    "entries": [
        {
            "id": "probe",
            "title": "probe",
            "runbook": "README.md",
            "playbook": "playbooks/probe.yml",
            "checks": [],
            "codes": [],
            "alerts": [],
            "ticket_vars": {"probe_ticket": "ticket"},
            "extra_vars": {},
            "allowed_vars": ["probe_reason", "probe_notes"],
            "approval_required": True,
            "change_class": "corrective",
            "disruptive": False,
        }
    ],
    "unmapped": {},
}


@pytest.fixture()
def probe_root(tmp_path):
    root = tmp_path / "root"
    (root / "playbooks").mkdir(parents=True)
    (root / "runbooks").mkdir()
    (root / "playbooks" / "probe.yml").write_text(PROBE_PLAYBOOK)
    (root / "runbooks" / "catalog.yml").write_text(json.dumps(PROBE_CATALOG))
    (root / "build").symlink_to(os.path.join(ROOT, "build"))
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n      ansible_python_interpreter: %s\n"
        % sys.executable
    )
    return root, str(inv)


def test_jinja_in_every_payload_string_changes_nothing(probe_root, tmp_path):
    """Observed (issue 12 item 1): `extra_vars.isolate_reason` / `approval.ref` holding a lookup ran it on the
    controller. Every string field carries {{ }}, {% %} and {# #}: no marker appears, and the playbook, the
    command it runs, the audit trail and the ticket result all see the literal text."""
    root, inv = probe_root
    marker = os.path.join(str(tmp_path), "marker")
    h = _hostile(marker)
    reason = " | ".join(h.values())
    payload = {
        "_inventory": inv,
        "ticket": "OPS-66",
        "runbook": "probe",
        "nodes": ["localhost"],
        "requester": "alice " + h["expr"],
        "extra_vars": {"probe_reason": reason, "probe_notes": {"list": [h["stmt"], h["comment"]], "n": 1}},
        "approval": {"by": "bob", "at": h["comment"], "ref": h["expr"], "approved": True},
    }
    cfg = dict(CONFIG, requesters={"corrective": ["alice " + h["expr"]]})
    state = tmp_path / "state"
    old = os.umask(0o022)
    try:
        rc, res = run_hook(payload, state, config=cfg, root=root)
    finally:
        os.umask(old)
    assert rc == 0, res
    assert not [f for f in os.listdir(str(tmp_path)) if f.startswith("marker")], "a payload template ran"
    seen = json.loads((state / "seen.json").read_text())
    assert seen["reason"] == reason
    assert seen["notes"] == {"list": [h["stmt"], h["comment"]], "n": 1}
    assert seen["requester"] == "alice " + h["expr"]
    assert seen["approval"] == {"by": "bob", "at": h["comment"], "ref": h["expr"], "approved": True}
    assert seen["change_id"] == h["expr"] and seen["ticket"] == "OPS-66" and seen["nodes"] == ["localhost"]
    assert (state / "echo.txt").read_text() == "%s [OPS-66]" % reason
    # the ticket result: literal approval, the request as given
    result = json.loads(open(res["result_file"], encoding="utf-8").read())
    assert result["approval"]["ref"] == h["expr"] and result["requester"] == "alice " + h["expr"]
    # the audit trail: the approval record and the run's records carry the literal reference
    records = [json.loads(line) for line in open(state / "audit" / "audit.log", encoding="utf-8")]
    approval = [r for r in records if r["event"] == "ticket_approval"]
    assert len(approval) == 1 and approval[0]["change_id"] == h["expr"] and approval[0]["approved_by"] == "bob"
    assert approval[0]["requester"] == "alice " + h["expr"] and approval[0]["ticket"] == "OPS-66"
    plays = [r for r in records if r["event"] == "play_start" and r.get("run_id") == res["audit_run_id"]]
    assert plays and plays[0]["change_id"] == h["expr"] and plays[0]["ticket"] == "OPS-66"
    # what the hook wrote is private although the umask was 022
    for path in (res["result_file"], state / "locks" / "runbook.localhost.lock"):
        assert os.stat(path).st_mode & 0o077 == 0, path
    for path in (
        state / "tickets",
        state / "tickets" / "OPS-66",
        state / "locks",
        state / "tickets" / "OPS-66" / "reports",
    ):
        assert os.stat(path).st_mode & 0o777 == 0o700, path
    vars_files = list((state / "tickets" / "OPS-66" / "runner" / "vars").iterdir())
    assert len(vars_files) == 1 and vars_files[0].stat().st_mode & 0o777 == 0o600
    assert "!unsafe" in vars_files[0].read_text()


@pytest.mark.parametrize(
    "field, value",
    [
        ("ticket", "{{ lookup('pipe', 'touch MARK') }}"),
        ("ticket", "OPS-1\n"),
        ("nodes", ["{{ lookup('pipe', 'touch MARK') }}"]),
        ("runbook", "{{ lookup('pipe', 'touch MARK') }}"),
    ],
)
def test_jinja_in_identifiers_is_refused(probe_root, tmp_path, field, value):
    root, inv = probe_root
    marker = os.path.join(str(tmp_path), "marker")
    value = json.loads(json.dumps(value).replace("MARK", marker))
    payload = {"_inventory": inv, "ticket": "OPS-67", "runbook": "probe", "nodes": ["localhost"], "requester": "alice"}
    payload["approval"] = {"by": "bob", "ref": "CHG-1", "approved": True}
    payload[field] = value
    rc, res = run_hook(payload, tmp_path / "state", root=root)
    assert rc == 2 and res["status"] == "invalid", res
    assert not os.path.exists(marker)
    assert not (tmp_path / "state" / "tickets").exists()


# ------------------------------------------------------------------ issue 35 item 3: secrets never rest in clear text
SECRET_PLAYBOOK = """---
- name: Probe which secrets the playbook gets (their digests only)
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Write the digest of each variable the playbook sees
      ansible.builtin.copy:
        dest: "{{ gpuops_state_dir }}/env-digests.json"
        mode: "0600"
        content: >-
          {{ {'bmc': lookup('ansible.builtin.env', 'GPUOPS_BMC_PASSWORD') | hash('sha256'),
              'db': lookup('ansible.builtin.env', 'GPUOPS_DB_URL') | hash('sha256'),
              'token': lookup('ansible.builtin.env', 'GPUOPS_EDA_TOKEN') | hash('sha256'),
              'proxy': lookup('ansible.builtin.env', 'HTTPS_PROXY') | hash('sha256'),
              'other': lookup('ansible.builtin.env', 'UNRELATED_SERVICE_PASSWORD') | hash('sha256'),
              'state': lookup('ansible.builtin.env', 'GPUOPS_STATE_DIR')} | to_json }}
"""


def _sha256(text):
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _files_holding(top, needles):
    """(path, needle) for every file under `top` (any name, any depth, symlinks not followed) holding a needle."""
    hits = []
    for dirpath, _dirs, files in os.walk(str(top)):
        for name in files:
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as fh:
                data = fh.read()
            hits += [(path, n) for n in needles if n.encode("utf-8") in data]
    return hits


def test_secrets_in_the_hook_environment_are_never_written(tmp_path):
    """Observed (issue 35 item 3): with GPUOPS_BMC_PASSWORD and a GPUOPS_DB_URL holding a password in the hook's
    environment, ansible-runner's artifacts/<ident>/command under state/tickets/<ticket>/runner/ held both in
    clear text. The playbook still gets every secret it may use (their digests match) and none that is not
    allowlisted; no file the hook or the run wrote holds any planted value."""
    root = tmp_path / "root"
    (root / "playbooks").mkdir(parents=True)
    (root / "runbooks").mkdir()
    (root / "playbooks" / "probe.yml").write_text(SECRET_PLAYBOOK)
    catalog = dict(PROBE_CATALOG, entries=[dict(PROBE_CATALOG["entries"][0], approval_required=False)])
    catalog["entries"][0].update(change_class="read_only", ticket_vars={}, allowed_vars=[])
    (root / "runbooks" / "catalog.yml").write_text(json.dumps(catalog))
    (root / "build").symlink_to(os.path.join(ROOT, "build"))
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n      ansible_python_interpreter: %s\n"
        % sys.executable
    )
    tag = os.urandom(6).hex()
    planted = {
        "GPUOPS_BMC_PASSWORD": "bmc-Pl4nted-%s" % tag,
        # a store that refuses the connection at once: the ledger's error names the URL, masked
        "GPUOPS_DB_URL": "postgresql+psycopg://gpuops:db-Pl4nted-%s@127.0.0.1:9/gpuops" % tag,
        "GPUOPS_EDA_TOKEN": "tok-Pl4nted-%s" % tag,
        "HTTPS_PROXY": "http://proxyuser:proxy-Pl4nted-%s@127.0.0.1:9" % tag,
        "UNRELATED_SERVICE_PASSWORD": "other-Pl4nted-%s" % tag,
    }
    needles = [v for k, v in planted.items() if k != "HTTPS_PROXY"] + ["proxy-Pl4nted-%s" % tag, tag]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch), ANSIBLE_LOCAL_TEMP=str(scratch / "ansible"), **planted)
    env.pop("GPUOPS_STATE_DIR", None)
    state = tmp_path / "state"
    payload = {"_inventory": str(inv), "ticket": "OPS-35", "runbook": "probe", "nodes": ["localhost"]}
    payload["requester"] = "alice"
    proc = run_hook(payload, state, "--result", str(tmp_path / "result.json"), root=root, env=env, wait=False)
    out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.wait(180) == 0, (out, err)
    res = json.loads(out)
    assert res["status"] == "successful", res
    # no planted value in anything the hook, ansible-runner or the playbook wrote, nor on stdout/stderr
    assert _files_holding(tmp_path, needles) == []
    assert [n for n in needles if n in out or n in err] == []
    # the playbook got what it may use, and nothing else
    seen = json.loads((state / "env-digests.json").read_text())
    assert seen["bmc"] == _sha256(planted["GPUOPS_BMC_PASSWORD"])
    assert seen["db"] == _sha256(planted["GPUOPS_DB_URL"])
    assert seen["token"] == _sha256(planted["GPUOPS_EDA_TOKEN"])
    assert seen["proxy"] == _sha256(planted["HTTPS_PROXY"])
    assert seen["other"] == _sha256(""), "a variable outside the allowlist reached the playbook"
    assert seen["state"] == str(state)
    # the run's artifacts are there (command, stdout, job events): the grep below has something to look at
    art = res["artifact_dir"]
    assert os.path.isfile(os.path.join(art, "command")) and os.listdir(os.path.join(art, "job_events"))
    command = json.loads(open(os.path.join(art, "command"), encoding="utf-8").read())
    assert "GPUOPS_STATE_DIR" in command["env"] and "GPUOPS_BMC_PASSWORD" not in command["env"]
    assert not [p for p in scratch.iterdir() if p.name.startswith("gpuops-")], "the secrets pipe was left behind"
