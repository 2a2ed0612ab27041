"""The gpuops.cluster.audit callback, driven with stand-in playbook/play/task/result objects."""

from __future__ import annotations

import json
import os
import socket

import pytest
import yaml
from ansible import constants as C

from ansible_collections.gpuops.cluster.plugins.callback import audit as audit_cb
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as A

SECRET = "Bmc-Pa55word-XYZ"
SECRET2 = "ExtraVar-S3cret-77"


class Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class FakeTask:
    def __init__(self, name, action, args=None, no_log=False, role=None):
        self.name = name
        self.action = action
        self.resolved_action = action
        self.args = args or {}
        self.no_log = no_log
        self._role = Obj(get_name=lambda: role) if role else None
        self.ignore_errors = False

    def get_name(self):
        return self.name


class FakeResult:
    def __init__(self, host, task, result):
        self._host = Obj(get_name=lambda: host)
        self._task = task
        self._result = result


class FakePlay:
    def __init__(self, name, play_vars=None, extra_vars=None):
        self._name = name
        self.vars = play_vars or {}
        self.hosts = ["gpu"]
        self.serial = [2]
        self.check_mode = False
        vm = Obj(extra_vars=extra_vars or {})
        self.get_variable_manager = lambda: vm

    def get_name(self):
        return self._name


class FakeStats:
    def __init__(self, hosts):
        self.processed = dict.fromkeys(hosts, 1)

    def summarize(self, host):
        return {"ok": 1, "changed": 1, "failures": 0, "unreachable": 0, "skipped": 0, "rescued": 0, "ignored": 0}


@pytest.fixture
def make_cb(tmp_path, monkeypatch):
    monkeypatch.delenv(audit_cb.MARKER_ENV, raising=False)
    for var in ("GPUOPS_AUDIT_LOG", "GPUOPS_AUDIT_HEAD", "GPUOPS_AUDIT_SYSLOG_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GPUOPS_STATE_DIR", str(tmp_path / "state"))
    options = yaml.safe_load(audit_cb.DOCUMENTATION)["options"]
    C.config.initialize_plugin_configuration_definitions("callback", "gpuops.cluster.audit", options)

    def make(**direct):
        cb = audit_cb.CallbackModule()
        cb._load_name = "gpuops.cluster.audit"
        cb.set_options(direct=direct or None)
        return cb

    return make


def _records(cb):
    with open(cb.log_path) as f:
        return [json.loads(line) for line in f]


def _run(cb, extra_vars=None, play_vars=None):
    cb.v2_playbook_on_start(Obj(_file_name="/x/playbooks/fw.yml"))
    cb.v2_playbook_on_play_start(FakePlay("Firmware", play_vars=play_vars, extra_vars=extra_vars))
    guard = FakeTask("Decide", "gpuops.cluster.change_window", role="gpuops.cluster.change_guard")
    facts = {"allowed": True, "decision": "window", "window": "weekend", "override": None, "change_id": "CHG-9"}
    cb.v2_runner_on_ok(
        FakeResult("localhost", guard, {"changed": False, "ansible_facts": {"gpuops_change_window": facts}})
    )
    bmc = FakeTask("Flash BMC", "gpuops.cluster.bmc_firmware", args={"bmc_password": SECRET, "image": "/fw.bin"})
    cb.v2_runner_on_ok(
        FakeResult(
            "node1",
            bmc,
            {
                "changed": True,
                "diff": {
                    "before": {"version": "1.0", "password": SECRET},
                    "after": {"version": "2.0", "password": "n"},
                },
                "invocation": {"module_args": {"bmc_password": SECRET}},
            },
        )
    )
    cb.v2_runner_on_ok(FakeResult("node2", bmc, {"changed": False}))  # unchanged: not recorded
    cb.v2_runner_on_failed(
        FakeResult("node3", bmc, {"failed": True, "msg": "login as admin/%s failed (%s)" % (SECRET, SECRET2)})
    )
    hidden = FakeTask("Secret task", "ansible.builtin.command", args={"cmd": "ipmitool -P " + SECRET}, no_log=True)
    cb.v2_runner_on_failed(FakeResult("node4", hidden, {"failed": True, "msg": "x", "_ansible_no_log": True}))
    cb.v2_runner_on_unreachable(FakeResult("node5", bmc, {"unreachable": True, "msg": "ssh: timeout"}))
    cb.v2_playbook_on_stats(FakeStats(["node1", "node2", "node3", "node4", "node5"]))


def test_records_changes_failures_and_plays(make_cb):
    cb = make_cb()
    _run(cb, extra_vars={"gpuops_ticket": "OPS-1", "bmc_pw": SECRET2}, play_vars={"gpuops_change_id": "CHG-9"})
    recs = _records(cb)
    events = [(r["event"], r.get("host"), r.get("status")) for r in recs]
    assert events == [
        ("run_start", None, None),
        ("play_start", None, None),
        ("guard", "localhost", "ok"),
        ("task", "node1", "ok"),
        ("task", "node3", "failed"),
        ("task", "node4", "failed"),
        ("task", "node5", "unreachable"),
        ("play_end", None, None),
        ("run_end", None, None),
    ]
    assert {r["run_id"] for r in recs} == {cb.run_id}
    task = recs[3]
    assert task["module"] == "gpuops.cluster.bmc_firmware" and task["changed"] is True and task["failed"] is False
    assert task["playbook"] == "/x/playbooks/fw.yml" and task["play"] == "Firmware" and task["task"] == "Flash BMC"
    assert task["ticket"] == "OPS-1" and task["change_id"] == "CHG-9"
    assert task["window"] == "weekend" and task["decision"] == "window"
    assert task["diff"] == {"items": [{"added": [], "removed": [], "changed": ["password", "version"]}]}
    assert recs[5]["msg"] == "(hidden: no_log)" and recs[5]["no_log"] is True
    assert recs[6]["unreachable"] is True and recs[6]["msg"] == "ssh: timeout"
    assert recs[7]["counts"] == {"ok": 3, "failed": 2, "unreachable": 1}
    assert recs[8]["hosts"] == 5
    assert recs[0]["user"] and recs[0]["controller"]


def test_secrets_never_reach_the_log(make_cb):
    cb = make_cb()
    _run(cb, extra_vars={"bmc_password": SECRET2}, play_vars={"ipmi_password": "PlayVar-Secret-1"})
    with open(cb.log_path) as f:
        text = f.read()
    assert SECRET not in text and SECRET2 not in text and "PlayVar-Secret-1" not in text
    assert "ipmitool" not in text and "/fw.bin" not in text  # task args are never logged
    assert "login as admin/******** failed (********)" in text
    assert A.verify(cb.log_path, cb.head_path)["ok"]


def test_extra_vars_override_play_vars_for_ids(make_cb):
    cb = make_cb()
    cb.v2_playbook_on_start(Obj(_file_name="p.yml"))
    cb.v2_playbook_on_play_start(
        FakePlay("p", {"gpuops_ticket": "PLAY"}, {"gpuops_ticket": "EXTRA", "gpuops_change_id": 42})
    )
    rec = _records(cb)[-1]
    assert rec["ticket"] == "EXTRA" and rec["change_id"] == 42


def test_chain_verifies_and_head_written(make_cb, tmp_path):
    cb = make_cb()
    _run(cb)
    assert cb.head_path == str(tmp_path / "state" / "audit" / "head.json")
    with open(cb.head_path) as f:
        head = json.load(f)
    assert head["run_id"] == cb.run_id and head["seq"] == 9
    res = A.verify(cb.log_path, cb.head_path)
    assert res["ok"] and res["records"] == 9
    cb2 = make_cb()  # a second run extends the same chain
    _run(cb2)
    res = A.verify(cb2.log_path, cb2.head_path)
    assert res["ok"] and res["records"] == 18 and res["runs"] == [cb.run_id, cb2.run_id]


def test_marker_exported_for_the_guard(make_cb):
    cb = make_cb()
    marker = json.loads(os.environ[audit_cb.MARKER_ENV])
    assert marker == {"pid": os.getpid(), "run_id": cb.run_id, "log": cb.log_path, "broken": None}


def test_unwritable_log_marks_the_trail_broken(make_cb, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cb = make_cb(log_path=str(blocker / "audit.log"))  # a directory under a regular file cannot exist
    cb.v2_playbook_on_start(Obj(_file_name="p.yml"))
    marker = json.loads(os.environ[audit_cb.MARKER_ENV])
    assert marker["broken"]


def test_syslog_gets_records_and_the_run_head(make_cb):
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(("127.0.0.1", 0))
    srv.settimeout(5)
    try:
        cb = make_cb(syslog_address="127.0.0.1:%d" % srv.getsockname()[1])
        _run(cb, extra_vars={"bmc_password": SECRET2})
        msgs = []
        try:
            while True:
                msgs.append(srv.recv(65536).decode())
                srv.settimeout(0.5)
        except socket.timeout:
            pass
    finally:
        srv.close()
    assert any("gpuops-audit-head run_id=%s seq=9 hash=%s" % (cb.run_id, cb.head["hash"]) in m for m in msgs)
    assert len(msgs) == 10
    assert not any(SECRET in m or SECRET2 in m for m in msgs)


def test_guard_context_carries_into_later_plays(make_cb):
    cb = make_cb()
    cb.v2_playbook_on_start(Obj(_file_name="p.yml"))
    cb.v2_playbook_on_play_start(FakePlay("guard"))
    guard = FakeTask("Decide", "gpuops.cluster.change_window")
    facts = {"allowed": True, "decision": "emergency_override", "window": None,
             "override": {"ticket": "INC-1", "reason": "CVE"}}  # fmt: skip
    cb.v2_runner_on_ok(FakeResult("localhost", guard, {"ansible_facts": {"gpuops_change_window": facts}}))
    cb.v2_playbook_on_play_start(FakePlay("reboot"))
    cb.v2_runner_on_ok(FakeResult("node1", FakeTask("Reboot", "ansible.builtin.reboot"), {"changed": True}))
    rec = _records(cb)[-1]
    assert rec["play"] == "reboot" and rec["override"] == {"ticket": "INC-1", "reason": "CVE"}
    assert rec["ticket"] == "INC-1" and rec["decision"] == "emergency_override"


# ---- issue 21: records name the node, the ticket and the decision; failures keep the tool's text ----------------
def _start(cb, extra_vars=None):
    cb.v2_playbook_on_start(Obj(_file_name="/x/playbooks/isolate.yml"))
    cb.v2_playbook_on_play_start(FakePlay("Isolate", extra_vars=extra_vars))


def test_loop_records_name_each_node_and_keep_the_tools_error(make_cb):
    cb = make_cb()
    _start(cb, extra_vars={"isolate_ticket": "INC-4712"})
    drain = FakeTask("isolate : Isolate the nodes in Slurm", "gpuops.cluster.slurm_node")
    res = {
        "failed": True,
        "msg": "One or more items failed",
        "_ansible_delegated_vars": {"ansible_delegated_host": "slurm_head"},
        "results": [
            {"item": "gpu-node-01", "changed": True, "node": "gpu-node-01"},
            {
                "item": "gpu-node-02",
                "failed": True,
                "msg": "scontrol show node gpu-node-02: exit 1: slurm_load_node error: Unable to contact slurm "
                "controller (connect failure)",
            },
            {"item": "gpu-node-03", "skipped": True},
        ],
    }
    cb.v2_runner_on_failed(FakeResult("localhost", drain, res))
    rec = _records(cb)[-1]
    assert rec["host"] == "localhost" and rec["delegated_to"] == "slurm_head"
    assert rec["nodes"] == ["gpu-node-01", "gpu-node-02"] and "node" not in rec
    assert rec["ticket"] == "INC-4712"  # the role's own ticket variable counts (an alias of gpuops_ticket)
    assert "gpu-node-02: scontrol show node gpu-node-02: exit 1: slurm_load_node error: Unable to contact" in rec["msg"]
    assert rec["items"][1] == {"node": "gpu-node-02", "changed": False, "failed": True, "msg": res["results"][1]["msg"]}


def test_command_failure_keeps_stderr_redacted(make_cb):
    cb = make_cb()
    _start(cb, extra_vars={"bmc_password": SECRET})
    cmd = FakeTask("reset", "ansible.builtin.command")
    err = "nvidia-smi: GPU 00000000:18:00.0 is in use (login %s)" % SECRET
    cb.v2_runner_on_failed(
        FakeResult("gpu-node-03", cmd, {"failed": True, "msg": "non-zero return code", "stderr": err})
    )
    rec = _records(cb)[-1]
    assert "GPU 00000000:18:00.0 is in use" in rec["msg"] and SECRET not in json.dumps(rec)


def test_the_ticket_validated_by_untrusted_input_names_every_later_record(make_cb):
    cb = make_cb()
    _start(cb)
    inp = FakeTask("Outside input is data", "gpuops.cluster.untrusted_input")
    facts = {"__isolate_in": {"isolate_ticket": "INC-9", "gpuops_change_id": "CHG-3", "isolate_reason": "x"}}
    cb.v2_runner_on_ok(FakeResult("localhost", inp, {"changed": False, "ansible_facts": facts}))
    drain = FakeTask("drain", "gpuops.cluster.slurm_node")
    cb.v2_runner_on_ok(FakeResult("localhost", drain, {"changed": True, "node": "gpu-node-04"}))
    rec = _records(cb)[-1]
    assert (rec["ticket"], rec["change_id"], rec["node"], rec["nodes"]) == (
        "INC-9",
        "CHG-3",
        "gpu-node-04",
        ["gpu-node-04"],
    )


def test_a_guard_refusal_leaves_a_record(make_cb):
    cb = make_cb()
    _start(cb, extra_vars={"gpuops_ticket": "INC-1"})
    guard = FakeTask("isolate : Blast-radius guard", "gpuops.cluster.isolation_guard")
    res = {
        "changed": False,
        "allowed": [],
        "already_isolated": [],
        "refused_by_guard": [{"node": "gpu-node-05", "reason": "blast-radius guard: cluster would have 2 of 8"}],
    }
    cb.v2_runner_on_ok(FakeResult("localhost", guard, res))
    rec = _records(cb)[-1]
    assert rec["decision"] == "refused" and rec["nodes"] == ["gpu-node-05"] and rec["ticket"] == "INC-1"
    assert rec["refused"] == [{"node": "gpu-node-05", "reason": "blast-radius guard: cluster would have 2 of 8"}]
