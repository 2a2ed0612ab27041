# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ticket hook (tools/gpuops_runbook) without running playbooks: payload validation, approval, locks,
per-node outcomes from runner events, report paths, audit run ids, and the CLI's refusal path (exit 2)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from hook_cases import payload, resolve_errors  # noqa: E402

from gpuops_runbook import catalog, cli, hook, safety  # noqa: E402

CATALOG = os.path.join(ROOT, "runbooks", "catalog.yml")
HOSTS = {"gpu-node-01", "gpu-node-02", "gpu-node-03"}
CONFIG = {
    "requesters": {"corrective": ["alice", "eda"], "planned": ["alice"], "read_only": ["*"]},
    "approvers": {"corrective": ["bob", "carol"], "planned": ["carol"]},
    "report_roots": ["/srv/gpuops/reports"],
}
POLICY = safety.HookConfig(CONFIG)


@pytest.fixture(scope="module")
def data():
    return catalog.load(CATALOG)


def errors_of(data, p, hosts=None):
    return resolve_errors(data, p, HOSTS if hosts is None else hosts, POLICY)


# ------------------------------------------------------------------------------------------------ validation
def test_valid_payload_builds_extravars(data):
    req = hook.resolve(payload(nodes=["gpu-node-02", "gpu-node-01", "gpu-node-02"]), data, HOSTS, POLICY)
    assert req["entry"]["playbook"] == "playbooks/isolate.yml"
    assert req["nodes"] == ["gpu-node-01", "gpu-node-02"]
    ev = req["extravars"]
    assert ev["gpuops_ticket"] == "OPS-7"
    assert ev["gpuops_targets"] == "gpu-node-01,gpu-node-02"
    assert ev["gpuops_nodes"] == ["gpu-node-01", "gpu-node-02"]
    assert ev["gpuops_runbook"] == "gpu_fell_off_bus"
    assert ev["isolate_reason"] == "Xid 79 GPU fell off the bus"  # the catalogue's extra_vars
    assert ev["isolate_nodes"] == ["gpu-node-01", "gpu-node-02"]  # the playbook's own names (ticket_vars)
    assert ev["isolate_ticket"] == "OPS-7"


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"ticket": None}, "missing ticket id"),
        ({"ticket": "  "}, "missing ticket id"),
        ({"ticket": "../etc/passwd"}, "ticket id"),
        ({"runbook": "format_disks"}, "unknown runbook 'format_disks'"),
        ({"nodes": ["gpu-node-99"]}, "unknown hosts (not in the inventory): gpu-node-99"),
        ({"nodes": []}, "non-empty list"),
        ({"nodes": None}, "non-empty list"),
        ({"nodes": ["gpu-node-01; rm -rf /"]}, "bad node names"),
        ({"runbook": None}, "name a `runbook`, an `alert` or a `finding`"),
        ({"extra_vars": {"gpuops_targets": "all"}}, "does not take extra_vars gpuops_targets"),
        ({"extra_vars": {"ansible_become_pass": "x"}}, "does not take extra_vars ansible_become_pass"),
        ({"extra_vars": {"isolate_nodes": ["gpu-node-03"]}}, "does not take extra_vars isolate_nodes"),
        ({"extra_vars": "x"}, "`extra_vars` must be an object"),
    ],
)
def test_invalid_payloads(data, kw, needle):
    err = errors_of(data, payload(**kw))
    assert err.status == "invalid"
    assert any(needle in e for e in err.errors), err.errors


def test_all_errors_reported_at_once(data):
    err = errors_of(data, {"runbook": "nope", "nodes": ["x-1"]})
    assert len(err.errors) == 3  # ticket, runbook, host


def test_resolve_by_finding_and_alert(data):
    req = hook.resolve(payload(runbook=None, finding={"check": "gpu.xid", "code": 79}), data, HOSTS, POLICY)
    assert req["entry"]["id"] == "gpu_fell_off_bus" and req["matched_by"] == "finding"
    req = hook.resolve(payload(runbook=None, finding="gpu.row_remap:pending"), data, HOSTS, POLICY)
    assert req["entry"]["id"] == "gpu_row_remap_pending"
    req = hook.resolve(payload(runbook=None, alert={"labels": {"alertname": "GpuopsCoolantLeak"}}), data, HOSTS, POLICY)
    assert req["entry"]["playbook"] == "playbooks/leak_response.yml"
    err = errors_of(data, payload(runbook=None, finding="node.mounts:hung"))
    assert "no runbook for finding node.mounts:hung" in err.errors[0] and "storage" in err.errors[0]


def test_approval_required(data):
    p = payload(runbook="gpu_row_remap_failure")
    err = errors_of(data, p)
    assert err.status == "refused" and "needs an approval" in err.errors[0]
    err = errors_of(
        data, payload(runbook="gpu_row_remap_failure", approval={"by": "alice", "ref": "CHG-1", "approved": True})
    )
    assert "cannot approve their own" in err.errors[0]
    err = errors_of(data, payload(runbook="gpu_row_remap_failure", approval={"by": "bob", "approved": False}))
    assert err.status == "refused"
    req = hook.resolve(
        payload(runbook="gpu_row_remap_failure", approval={"by": "bob", "ref": "CHG-1", "approved": True}),
        data,
        HOSTS,
        POLICY,
    )
    assert req["extravars"]["gpuops_approval"]["by"] == "bob"
    assert req["extravars"]["replace_host"] == "gpu-node-02" and req["extravars"]["replace_ticket"] == "OPS-7"
    err = errors_of(
        data,
        payload(
            runbook="gpu_row_remap_failure",
            nodes=["gpu-node-01", "gpu-node-02"],
            approval={"by": "bob", "approved": True},
        ),
    )
    assert "acts on one node at a time; this ticket names 2" in err.errors[0]
    assert req["extravars"]["gpuops_change_id"] == "CHG-1"


def test_allowed_extra_vars_pass_through(data):
    req = hook.resolve(
        payload(extra_vars={"isolate_reason": "seen by hand", "isolate_mode": "requeue"}), data, HOSTS, POLICY
    )
    assert req["extravars"]["isolate_reason"] == "seen by hand" and req["extravars"]["isolate_mode"] == "requeue"


# ------------------------------------------------------------------------ issue 12: who may do what, data only
@pytest.mark.parametrize("ticket", ["T-1\n", "T-1\r\n", "\nT-1", "T-1 ", "T-1\x00", True, 1.5, ["T-1"]])
def test_ticket_is_a_full_match(data, ticket):
    # "T-1\n" passed the old `^...$` pattern (re.match: `$` matches before a trailing newline)
    err = errors_of(data, payload(ticket=ticket))
    assert err.status == "invalid" and any("ticket id" in e for e in err.errors), err.errors


@pytest.mark.parametrize("node", ["gpu-node-01\n", "gpu-node-01 ", "{{ x }}"])
def test_node_name_is_a_full_match(data, node):
    err = errors_of(data, payload(nodes=[node]), hosts={node, "gpu-node-01"})
    assert any("bad node names" in e for e in err.errors), err.errors


@pytest.mark.parametrize("approved", ["false", "true", 1, "yes", None])
def test_approval_needs_json_true(data, approved):
    p = payload(runbook="gpu_row_remap_failure", approval={"by": "bob", "ref": "CHG-1", "approved": approved})
    err = errors_of(data, p)
    assert err.status in ("invalid", "refused"), err.errors
    # approved missing altogether is no approval either
    err = errors_of(data, payload(runbook="gpu_row_remap_failure", approval={"by": "bob", "ref": "CHG-1"}))
    assert err.status == "refused" and "approved: true" in err.errors[0]


@pytest.mark.parametrize("approver", ["Alice", "ALICE", " alice ", "al ice", "\uff41lice"])
def test_self_approval_is_refused_whatever_the_case_and_spacing(data, approver):
    p = payload(runbook="gpu_row_remap_failure", approval={"by": approver, "ref": "CHG-1", "approved": True})
    err = errors_of(data, p)
    assert err.status == "refused" and "cannot approve their own" in err.errors[0], err.errors


def test_requester_and_approver_allowlists_per_class(data):
    err = errors_of(data, payload(requester="mallory"))
    assert err.status == "refused" and "requester 'mallory' may not request it (allowed: alice, eda)" in err.errors[0]
    err = errors_of(data, payload(requester=None))
    assert err.status == "refused" and "may not request" in err.errors[0]
    # read_only admits anyone who names themselves
    assert (
        hook.resolve(payload(runbook="inspect", requester="mallory"), data, HOSTS, POLICY)["entry"]["id"] == "inspect"
    )
    # the approver must be on the class's approver list (planned: carol only)
    p = payload(runbook="psu_fan_failure", approval={"by": "bob", "ref": "CHG-2", "approved": True})
    err = errors_of(data, p)
    assert err.status == "refused" and "'bob' may not approve it (allowed: carol)" in err.errors[0]
    p["approval"]["by"] = "Carol"
    assert hook.resolve(p, data, HOSTS, POLICY)["approval"]["by"] == "Carol"
    # a runbook id key wins over its class
    cfg = safety.HookConfig(dict(CONFIG, requesters={"corrective": ["alice"], "gpu_fell_off_bus": ["eve"]}))
    with pytest.raises(hook.PayloadError):
        hook.resolve(payload(), data, HOSTS, cfg)
    assert hook.resolve(payload(requester="eve"), data, HOSTS, cfg)["requester"] == "eve"


def test_no_config_refuses_everything(data):
    with pytest.raises(hook.PayloadError) as exc:
        hook.resolve(payload(runbook="inspect"), data, HOSTS)
    assert exc.value.status == "refused" and "allowed: nobody" in exc.value.errors[0]


@pytest.mark.parametrize(
    "value",
    [
        "/etc",
        "/srv/gpuops/reports/../../../etc",
        "/srv/gpuops/reports-evil/x",
        "relative/dir",
        "",
        ["/srv/gpuops/reports"],
    ],
)
def test_report_dir_from_a_payload_is_confined(data, value):
    err = errors_of(data, payload(runbook="inspect", extra_vars={"gpuops_report_dir": value}))
    assert any("gpuops_report_dir" in e and "report_roots" in e for e in err.errors), err.errors


def test_report_dir_under_a_root_and_symlink_escape(data, tmp_path):
    root = tmp_path / "reports"
    (root / "ok").mkdir(parents=True)
    (root / "link").symlink_to("/etc")
    cfg = safety.HookConfig(dict(CONFIG, report_roots=[str(root)]))
    req = hook.resolve(
        payload(runbook="inspect", extra_vars={"gpuops_report_dir": str(root / "ok" / "new")}), data, HOSTS, cfg
    )
    assert req["extravars"]["gpuops_report_dir"] == os.path.realpath(str(root / "ok" / "new"))
    with pytest.raises(hook.PayloadError) as exc:
        hook.resolve(payload(runbook="inspect", extra_vars={"gpuops_report_dir": str(root / "link")}), data, HOSTS, cfg)
    assert "not under the configured report_roots" in exc.value.errors[0]


@pytest.mark.parametrize(
    "extra, needle",
    [
        ({"isolate_reason": "a\x00b"}, "control characters"),
        ({"isolate_reason": "x" * 5000}, "longer than"),
        ({"isolate_reason": {"{{ k }}": 1}}, "is not an identifier"),
        ({"isolate_reason": float("nan")}, "not a finite number"),
    ],
)
def test_payload_strings_are_bounded_data(data, extra, needle):
    err = errors_of(data, payload(extra_vars=extra))
    assert any(needle in e for e in err.errors), err.errors


def test_approval_object_is_checked(data):
    p = payload(runbook="gpu_row_remap_failure", approval={"by": "bob", "approved": True, "extra": "{{ x }}"})
    assert "`approval` takes only" in errors_of(data, p).errors[0]
    p = payload(runbook="gpu_row_remap_failure", approval={"by": ["bob"], "approved": True})
    assert "`approval.by` must be a string" in errors_of(data, p).errors[0]


HOSTILE = [
    "{{ lookup('pipe', 'touch /tmp/gpuops-h1-never') }}",
    "{% set x = lookup('pipe', 'touch /tmp/gpuops-h1-never') %}",
    "{# a comment #}kept",
    "{{ 7 * 7 }} \"quoted\" 'single' \\ back\tslash: - [x] {a: b} &anchor *alias !tag # hash",
]


def test_extravars_file_is_unsafe_for_ansible():
    """The file the hook hands to ansible-playbook: Ansible's own loader yields untrusted strings (never
    templated) that equal the payload's text, at any depth."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, is_trusted_as_template

    ev = {
        "s": HOSTILE[0],
        "n": 3,
        "b": True,
        "none": None,
        "l": [HOSTILE[1], {"k": HOSTILE[2]}],
        "d": {"deep": {"deeper": [HOSTILE[3]]}},
    }
    text = safety.dump_unsafe_yaml(ev)
    loaded = DataLoader().load(text)
    assert loaded == ev

    def strings(v):
        if isinstance(v, str):
            yield v
        elif isinstance(v, list):
            for i in v:
                yield from strings(i)
        elif isinstance(v, dict):
            for i in v.values():
                yield from strings(i)

    assert all(not is_trusted_as_template(x) for x in strings(loaded))
    templar = Templar(loader=DataLoader(), variables=loaded)
    assert templar.template(loaded["s"]) == HOSTILE[0]
    assert templar.template(loaded["l"]) == ev["l"]
    assert not os.path.exists("/tmp/gpuops-h1-never")
    with pytest.raises(ValueError):
        safety.dump_unsafe_yaml({"ok": {"{{ bad }}": 1}})


# ------------------------------------------------------------------------------------- private files, umask 022
def test_locks_results_and_dirs_are_private_under_umask_022(tmp_path, capsys, monkeypatch):
    old = os.umask(0o022)
    try:
        locks = hook.NodeLocks(str(tmp_path / "state"), ["gpu-node-01"], timeout=0)
        assert locks.acquire()
        locks.release()
        assert oct(os.stat(locks.path("gpu-node-01")).st_mode & 0o777) == "0o600"
        assert oct(os.stat(locks.dir).st_mode & 0o777) == "0o700"
        safety.write_private(str(tmp_path / "r.json"), "{}")
        assert oct(os.stat(tmp_path / "r.json").st_mode & 0o777) == "0o600"
        d = safety.private_dir(str(tmp_path / "a" / "b"))
        assert oct(os.stat(d).st_mode & 0o777) == "0o700"
        assert oct(os.stat(tmp_path / "a").st_mode & 0o777) == "0o700"
        # the CLI's --result file
        inv = tmp_path / "hosts.yml"
        inv.write_text("all:\n  hosts:\n    gpu-node-01:\n")
        pl = tmp_path / "p.json"
        pl.write_text(json.dumps(payload(nodes=["gpu-node-09"])))
        monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
        cfg = tmp_path / "cfg.yml"
        cfg.write_text(json.dumps(CONFIG))
        out = tmp_path / "result.json"
        rc = cli.main(
            ["run", "-i", str(inv), "--config", str(cfg), "--state-dir", str(tmp_path), "--result", str(out), str(pl)]
        )
        capsys.readouterr()
        assert rc == 2 and oct(os.stat(out).st_mode & 0o777) == "0o600"
    finally:
        os.umask(old)


def test_record_approval_appends_to_the_audit_chain(data, tmp_path):
    p = payload(runbook="gpu_row_remap_failure", approval={"by": "bob", "ref": "CHG-9", "at": "now", "approved": True})
    req = hook.resolve(p, data, HOSTS, POLICY)
    log = tmp_path / "audit" / "audit.log"
    hook.record_approval(ROOT, str(log), req, "20260101T000000Z-abcdef01")
    rec = json.loads(log.read_text().splitlines()[-1])
    assert rec["event"] == "ticket_approval" and rec["ticket"] == "OPS-7" and rec["runbook"] == "gpu_row_remap_failure"
    assert rec["requester"] == "alice" and rec["approved_by"] == "bob" and rec["change_id"] == "CHG-9"
    assert rec["approved"] is True and rec["nodes"] == ["gpu-node-02"]


def test_config_file_is_required_and_checked(tmp_path):
    with pytest.raises(safety.ConfigError, match="nothing runs without it"):
        safety.load_config(str(tmp_path / "missing.yml"))
    bad = tmp_path / "bad.yml"
    bad.write_text("requesters: {corrective: alice}\nreport_roots: [relative]\nextra: 1\n")
    with pytest.raises(safety.ConfigError) as exc:
        safety.load_config(str(bad))
    assert (
        "unknown keys extra" in str(exc.value) and "requesters" in str(exc.value) and "report_roots" in str(exc.value)
    )


def test_parse_payload_errors():
    for text in ("", "{", "[1]", "\x00\xff"):
        with pytest.raises(hook.PayloadError):
            hook.parse_payload(text)


# --------------------------------------------------------------------------------------------------- locks
def _hold(state_dir, node, ready, release):
    locks = hook.NodeLocks(state_dir, [node], timeout=0)
    assert locks.acquire()
    ready.set()
    release.wait(10)
    locks.release()


def test_node_lock_refuses_then_waits(tmp_path):
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold, args=(str(tmp_path), "gpu-node-02", ready, release))
    p.start()
    try:
        assert ready.wait(10)
        other = hook.NodeLocks(str(tmp_path), ["gpu-node-01", "gpu-node-02"], timeout=0)
        assert other.acquire() is False and other.busy == "gpu-node-02"
        assert other.holder("gpu-node-02") == str(p.pid)
        assert other.fds == []  # gpu-node-01 was given back
        free = hook.NodeLocks(str(tmp_path), ["gpu-node-01"], timeout=0)
        assert free.acquire()
        free.release()
        t0 = time.monotonic()
        waiting = hook.NodeLocks(str(tmp_path), ["gpu-node-02"], timeout=0.6, poll=0.05)
        assert waiting.acquire() is False
        assert time.monotonic() - t0 >= 0.55
        release.set()
        waiting = hook.NodeLocks(str(tmp_path), ["gpu-node-02"], timeout=10, poll=0.05)
        assert waiting.acquire()
        waiting.release()
    finally:
        release.set()
        p.join(10)


def test_lock_names_are_not_the_state_lock_names(tmp_path):
    locks = hook.NodeLocks(str(tmp_path), ["gpu-node-01"], timeout=0)
    assert locks.path("gpu-node-01").endswith("locks/runbook.gpu-node-01.lock")


# ----------------------------------------------------------------------------------------------- outcomes
def test_node_outcomes_and_reports():
    events = [
        {"event": "runner_on_ok", "event_data": {"host": "localhost", "res": {"report_dir": "/r", "changed": False}}},
        {"event": "runner_on_failed", "event_data": {"host": "n2", "task": "Drain", "res": {"msg": "boom"}}},
        {"event": "runner_on_failed", "event_data": {"host": "n1", "ignore_errors": True, "res": {"msg": "meh"}}},
        {"event": "runner_on_unreachable", "event_data": {"host": "n3", "task": "ping", "res": {"msg": "ssh"}}},
    ]
    stats = {"ok": {"n1": 3, "localhost": 1}, "changed": {"n1": 1}, "failures": {"n2": 1}, "dark": {"n3": 1}}
    out = hook.node_outcomes(events, stats, ["n1", "n2", "n3", "n4"])
    assert out["n1"]["status"] == "changed" and out["n1"]["failures"] == []
    assert out["n2"]["status"] == "failed" and out["n2"]["failures"][0] == {
        "task": "Drain",
        "kind": "failed",
        "msg": "boom",
    }
    assert out["n3"]["status"] == "unreachable"
    assert out["n4"]["status"] == "not_run"
    assert out["localhost"]["status"] == "ok"
    assert hook.report_paths(events) == ["/r"]


def test_audit_run_ids(tmp_path):
    log = tmp_path / "audit.log"
    log.write_text(json.dumps({"event": "run_start", "pid": 1, "run_id": "old"}) + "\n")
    offset = log.stat().st_size
    with open(log, "a") as fh:
        fh.write(json.dumps({"event": "run_start", "pid": 2, "run_id": "other", "playbook": "/x.yml"}) + "\n")
        fh.write("garbage\n")
        fh.write(json.dumps({"event": "run_start", "pid": 3, "run_id": "ours", "playbook": "/p.yml"}) + "\n")
    assert hook.audit_run_ids(str(log), offset, {3}, "/p.yml") == ["ours"]
    assert hook.audit_run_ids(str(log), offset, set(), "/p.yml") == ["ours"]
    assert hook.audit_run_ids(str(log), 0, {1}, "/p.yml") == ["old"]
    assert hook.audit_run_ids(str(tmp_path / "none"), 0, {1}, "/p.yml") == []


def test_runner_env_enables_audit_and_venv_first(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSIBLE_CALLBACKS_ENABLED", "ansible.posix.profile_tasks")
    env = hook.runner_env(ROOT, str(tmp_path), "/venv/bin")
    assert env["PATH"].startswith("/venv/bin" + os.pathsep)
    assert env["ANSIBLE_CALLBACKS_ENABLED"] == "ansible.posix.profile_tasks,gpuops.cluster.audit"
    assert env["GPUOPS_STATE_DIR"] == str(tmp_path)


# -------------------------------------------------------------------------------------------------- the CLI
def test_cli_refuses_unknown_host_exit_2_nothing_run(tmp_path, capsys, monkeypatch):
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    gpu-node-01:\n      ansible_host: 192.0.2.1\n")
    pl = tmp_path / "p.json"
    pl.write_text(json.dumps(payload(nodes=["gpu-node-09"])))
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    state = tmp_path / "state"
    cfg = tmp_path / "cfg.yml"
    cfg.write_text(json.dumps(CONFIG))
    rc = cli.main(
        [
            "run",
            "-i",
            str(inv),
            "--config",
            str(cfg),
            "--state-dir",
            str(state),
            "--result",
            str(tmp_path / "r.json"),
            str(pl),
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 2
    assert out["status"] == "invalid" and "unknown hosts (not in the inventory): gpu-node-09" in out["errors"][0]
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "invalid"
    assert not (state / "tickets").exists() and not (state / "locks").exists()


def test_cli_validate_only_and_approval_refusal(tmp_path, capsys, monkeypatch):
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    gpu-node-01:\n      ansible_host: 192.0.2.1\n")
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    pl = tmp_path / "p.json"
    pl.write_text(json.dumps(payload(nodes=["gpu-node-01"], runbook="inspect")))
    monkeypatch.setenv("GPUOPS_RUNBOOK_CONFIG", str(tmp_path / "none.yml"))
    rc = cli.main(["run", "-i", str(inv), "--state-dir", str(tmp_path), "--validate-only", str(pl)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 2 and out["status"] == "error" and "cannot read the runbook hook config" in out["errors"][0]
    cfg = tmp_path / "cfg.yml"
    cfg.write_text(json.dumps(CONFIG))
    monkeypatch.setenv("GPUOPS_RUNBOOK_CONFIG", str(cfg))
    rc = cli.main(["run", "-i", str(inv), "--state-dir", str(tmp_path), "--validate-only", str(pl)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["status"] == "valid" and out["extravars"]["gpuops_targets"] == "gpu-node-01"
    pl.write_text(json.dumps(payload(nodes=["gpu-node-01"], runbook="driver_firmware_drift")))
    rc = cli.main(["run", "-i", str(inv), "--state-dir", str(tmp_path), str(pl)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 2 and out["status"] == "refused" and "needs an approval" in out["errors"][0]


def test_cli_bad_json_on_stdin_exit_2():
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tools"))
    proc = subprocess.run(
        [sys.executable, "-m", "gpuops_runbook", "run", "-i", "/nonexistent", "--state-dir", "/nonexistent"],
        input="{not json",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["errors"][0].startswith("payload is not valid JSON")


def test_cli_lookup(capsys):
    assert cli.main(["lookup", "--alert", "GpuXid79", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entry"]["id"] == "gpu_fell_off_bus"
    assert cli.main(["lookup", "--check", "node.services", "--json"]) == 1
    assert "persistenced" in json.loads(capsys.readouterr().out)["unmapped_reason"]


# ------------------------------------------------------------------------ the collection's code, not a copy
def test_private_writes_use_the_collections_writer_and_fail_closed_without_it(tmp_path, monkeypatch):
    from gpuops_runbook import collection

    files = collection.files()
    assert files.__name__ == "ansible_collections.gpuops.cluster.plugins.module_utils._files"
    assert hook._audit_module(ROOT).__name__.endswith("plugin_utils.store.audit")
    old = os.umask(0o000)
    try:
        safety.write_private(str(tmp_path / "new" / "r.json"), "{}")
    finally:
        os.umask(old)
    assert oct(os.stat(tmp_path / "new" / "r.json").st_mode & 0o777) == "0o600"
    assert oct(os.stat(tmp_path / "new").st_mode & 0o777) == "0o700"
    # no collection on the collections path: a clear error, and nothing is written
    monkeypatch.setenv("ANSIBLE_COLLECTIONS_PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("GPUOPS_ROOT", str(tmp_path))
    monkeypatch.setattr(collection, "_ansible_paths", lambda: [])
    with pytest.raises(collection.CollectionNotFound, match="ANSIBLE_COLLECTIONS_PATH"):
        safety.write_private(str(tmp_path / "x.json"), "{}")
    assert not os.path.exists(tmp_path / "x.json")
    with pytest.raises(OSError, match="gpuops.cluster"):
        hook._audit_module(str(tmp_path))


def test_cli_without_the_collection_prints_the_result_and_fails_clearly(tmp_path, capsys, monkeypatch):
    from gpuops_runbook import collection

    monkeypatch.setenv("ANSIBLE_COLLECTIONS_PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("GPUOPS_ROOT", str(tmp_path))
    monkeypatch.setattr(collection, "_ansible_paths", lambda: [])
    pl = tmp_path / "p.json"
    pl.write_text("not json")
    out = tmp_path / "result.json"
    rc = cli.main(["--root", str(tmp_path), "run", "--state-dir", str(tmp_path), "--result", str(out), str(pl)])
    captured = capsys.readouterr()
    assert rc == hook.RC_FAILED
    assert json.loads(captured.out)["status"] == "invalid"  # the ticket still gets its result on stdout
    assert "cannot find the gpuops.cluster collection" in captured.err
    assert not out.exists() and not [p for p in os.listdir(tmp_path) if p.startswith(".result")]
