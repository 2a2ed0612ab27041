# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ticket hook's boundaries of issue 35 without running playbooks: a deep or oversized payload is refused
with exit 2 and a result, ticket nodes are hosts (never groups or patterns), a payload cannot allow target
patterns, the playbook's environment is an allowlist and its secrets go through a pipe, never a file (the run
itself, with the real ansible-runner: tests/integration/test_runbook_hook.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from hook_cases import payload, resolve_errors  # noqa: E402

from gpuops_runbook import catalog, hook, safety  # noqa: E402

CATALOG = os.path.join(ROOT, "runbooks", "catalog.yml")
HOSTS = {"gpu-node-01", "gpu-node-02", "gpu-node-03"}
POLICY = safety.HookConfig({"requesters": {"corrective": ["alice"], "read_only": ["*"]}})


@pytest.fixture(scope="module")
def data():
    return catalog.load(CATALOG)


def errors_of(data, p, hosts=None):
    return resolve_errors(data, p, HOSTS if hosts is None else hosts, POLICY)


# ------------------------------------------------------------------ deep payloads
DEEP = {
    "list": "[" * 100000 + "]" * 100000,
    "object": '{"ticket": "OPS-1", "extra_vars": ' + '{"a": ' * 100000 + "1" + "}" * 100000 + "}",
    "nodes": '{"ticket": "OPS-1", "runbook": "inspect", "nodes": ' + "[" * 100000 + "]" * 100000 + "}",
}


@pytest.mark.parametrize("shape", sorted(DEEP))
def test_a_deep_payload_is_refused_with_a_result_not_a_traceback(tmp_path, shape):
    """Observed (issue 35 item 1): `[` x 100,000 then `]` x 100,000 on stdin ended `gpuops-runbook run` in a
    RecursionError traceback and no result document. Now: exit 2 and the result, which names the budget."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tools"))
    result = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, "-m", "gpuops_runbook", "run", "-i", "/nonexistent", "--state-dir", str(tmp_path / "state")]
        + ["--result", str(result), "-"],
        input=DEEP[shape],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == hook.RC_INVALID, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["schema"] == hook.SCHEMA and doc["status"] == "invalid"
    assert "nesting deeper than" in doc["errors"][0] and doc["errors"][0].startswith("payload is not valid JSON")
    assert json.loads(result.read_text()) == doc
    assert not (tmp_path / "state").exists()


def test_an_oversized_payload_is_refused():
    with pytest.raises(hook.PayloadError) as exc:
        hook.parse_payload(json.dumps({"ticket": "OPS-1", "summary": "x" * (2 * 1024 * 1024)}))
    assert "larger than" in exc.value.errors[0]


@pytest.mark.parametrize(
    "nodes, needle",
    [
        (["all"], "names inventory groups, not hosts: all"),
        (["gpu_nodes"], "names inventory groups, not hosts: gpu_nodes"),
        (["gpu-node-01", "gpu_nodes"], "names inventory groups, not hosts: gpu_nodes"),
        (["gpu-node-0*"], "bad node names"),
        (["gpu_nodes:!gpu-node-01"], "bad node names"),
        (["gpu-node-01:gpu-node-02"], "bad node names"),
        (["@/tmp/list"], "bad node names"),
        (["~gpu.*"], "bad node names"),
    ],
)
def test_ticket_nodes_are_hosts_never_groups_or_patterns(data, nodes, needle):
    """Even when the inventory holds a host of that name (a host named like a group is still the group)."""
    groups = {"all", "ungrouped", "gpu_nodes"}
    with pytest.raises(hook.PayloadError) as exc:
        hook.resolve(payload(runbook="inspect", nodes=nodes), data, HOSTS | groups, POLICY, known_groups=groups)
    assert any(needle in e for e in exc.value.errors), exc.value.errors


def test_a_payload_cannot_allow_target_patterns(data):
    entry = dict(catalog.by_id(data, "inspect"), allowed_vars=["gpuops_allow_target_patterns"])
    data2 = dict(data, entries=[entry])
    err = errors_of(data2, payload(runbook="inspect", extra_vars={"gpuops_allow_target_patterns": True}))
    assert any("may not set gpuops_allow_target_patterns" in e for e in err.errors), err.errors


def test_inventory_lists_hosts_and_groups(tmp_path):
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  hosts:\n    solo: {}\n  children:\n    gpu_nodes:\n      children:\n        rack_a:\n"
        "          hosts:\n            gpu-node-01: {}\n"
    )
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    hosts, groups = hook.inventory(str(inv), env)
    assert hosts == {"solo", "gpu-node-01"}
    assert groups == {"all", "ungrouped", "gpu_nodes", "rack_a"}
    assert hook.inventory_hosts(str(inv), env) == hosts


def test_runner_env_is_an_allowlist(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-value")
    monkeypatch.setenv("SOME_RANDOM_SETTING", "x")
    monkeypatch.setenv("GPUOPS_BMC_PASSWORD", "bmc-secret-value")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("SITE_VAULT_ADDR", "https://vault.example")
    env = hook.runner_env(ROOT, str(tmp_path), "/venv/bin", pass_env=["SITE_VAULT_ADDR"])
    assert "AWS_SECRET_ACCESS_KEY" not in env and "SOME_RANDOM_SETTING" not in env
    assert env["GPUOPS_BMC_PASSWORD"] == "bmc-secret-value" and env["LC_ALL"] == "C.UTF-8"
    assert env["SITE_VAULT_ADDR"] == "https://vault.example"


def test_secrets_are_split_from_the_recorded_environment():
    from gpuops_runbook import secretenv

    secret_key = hook._audit_module(ROOT).SECRET_KEY
    env = {
        "PATH": "/usr/bin",
        "GPUOPS_BMC_PASSWORD": "pw-123456",
        "GPUOPS_DB_URL": "sqlite:////var/lib/gpuops/gpuops.db",  # always secret: a URL may carry a password
        "HTTPS_PROXY": "http://u:proxy-pw@proxy:3128",
        "GPUOPS_EDA_TOKEN": "tok-0123456789abcdef",
        "ANSIBLE_SOMETHING": "prefix-pw-123456-suffix",  # holds a secret's value
        "GPUOPS_STATE_DIR": "/var/lib/gpuops",
        "GPUOPS_BMC_USER": "admin",
    }
    plain, secrets = secretenv.split(env, secret_key)
    assert sorted(plain) == ["GPUOPS_BMC_USER", "GPUOPS_STATE_DIR", "PATH"]
    assert sorted(secrets) == sorted(set(env) - set(plain))
    runner = dict(plain, AWX_ISOLATED_DATA_DIR="/a", ANSIBLE_STDOUT_CALLBACK="awx_display", OTHER="x", **secrets)
    child = secretenv.child_env(runner, plain, secrets)
    assert sorted(child) == ["ANSIBLE_STDOUT_CALLBACK", "AWX_ISOLATED_DATA_DIR", *sorted(plain)]


def test_the_secret_pipe_hands_over_once_and_leaves_nothing(tmp_path, monkeypatch):
    from gpuops_runbook import envexec, secretenv

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(secretenv.tempfile, "tempdir", None)
    with secretenv.SecretPipe({"GPUOPS_BMC_PASSWORD": "pw-1"}) as pipe:
        assert os.path.dirname(pipe.path).startswith(str(tmp_path))
        assert oct(os.stat(os.path.dirname(pipe.path)).st_mode & 0o777) == "0o700"
        assert envexec.read_secrets(pipe.path) == {"GPUOPS_BMC_PASSWORD": "pw-1"}
    assert os.listdir(tmp_path) == []
    # the command never started: the writer waiting for a reader is released, nothing is left
    t0 = time.monotonic()
    with secretenv.SecretPipe({"GPUOPS_BMC_PASSWORD": "pw-2"}) as pipe:
        pass
    assert time.monotonic() - t0 < 5 and os.listdir(tmp_path) == []
    with secretenv.SecretPipe({}) as pipe:
        assert pipe.path is None


def test_envexec_adds_the_secrets_and_execs(tmp_path):
    from gpuops_runbook import secretenv

    with secretenv.SecretPipe({"GPUOPS_BMC_PASSWORD": "pw-3 with space"}) as pipe:
        env = {"PATH": os.environ["PATH"], secretenv.PIPE_VAR: pipe.path}
        proc = subprocess.run(
            [
                sys.executable,
                "-I",
                secretenv.ENVEXEC,
                "sh",
                "-c",
                'printf %s "$GPUOPS_BMC_PASSWORD:$GPUOPS_RUNBOOK_SECRETS_PIPE"',
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert proc.returncode == 0 and proc.stdout == "pw-3 with space:", proc.stderr
    bad = subprocess.run(
        [sys.executable, "-I", secretenv.ENVEXEC, "true"],
        env={"PATH": os.environ["PATH"], secretenv.PIPE_VAR: str(tmp_path / "none")},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert bad.returncode == 1 and "cannot read the secrets" in bad.stderr
