# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.preflight's verdict (docs/inventory-plugin.md "Preflight"): one line per gap with its fix.

``scontrol ping`` texts are the test bed's real captures (tests/fixtures/slurm-platform/, Slurm 22.05.8: up, and
slurmctld stopped with exit 1); the node probe's output is what ``id -u`` and ``command -v`` print."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.cluster.plugins.action import preflight as A
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inventory import preflight as P

REPO = Path(__file__).resolve().parents[4]
PING = REPO / "tests" / "fixtures" / "slurm-platform"
UP = (PING / "tb-22.05-ping-up.txt").read_text()
DOWN = (PING / "tb-22.05-ping-down.txt").read_text()

ALL_TOOLS = (
    "uid=0\nnvidia-smi=/usr/local/bin/nvidia-smi\nibstat=/usr/local/bin/ibstat\nipmitool=/usr/bin/ipmitool\n"
    "dcgmi=/usr/local/bin/dcgmi\nmlxlink=/usr/bin/mlxlink\n"
)


def _node(stdout=ALL_TOOLS, rc=0):
    return {"rc": rc, "stdout": stdout, "stderr": "", "changed": False}


def _args(tmp_path, **extra):
    args = {
        "nodes": {"n1": _node(), "n2": _node()},
        "targets_total": 250,
        "slurm": {"host": "slurm_head", "scontrol_path": "/usr/bin/scontrol", "rc": 0, "stdout": UP, "stderr": ""},
        "state_dir": str(tmp_path / "state"),
        "bmc": {
            "n1": {"address": True, "user": True, "password": True},
            "n2": {"address": True, "user": True, "password": True},
        },
    }
    args.update(extra)
    return args


@pytest.fixture
def audited(monkeypatch):
    """The audit callback's marker as the live callback exports it (pid = this process's parent or itself)."""
    monkeypatch.setenv("GPUOPS_AUDIT_ACTIVE", '{"pid": %d, "run_id": "r"}' % os.getpid())
    monkeypatch.setenv("GPUOPS_STATE_DIR", "/x")


def test_green(tmp_path, run_action, audited):
    out = run_action(A, _args(tmp_path))
    assert out["passed"] is True and not out.get("failed"), out
    assert out["lines"] == []
    assert out["summary"] == "preflight: green - 0 required gap(s), 0 note(s); 2 of 250 target node(s) sampled"


def test_audit_callback_off_is_a_required_gap(tmp_path, run_action, monkeypatch):
    monkeypatch.delenv("GPUOPS_AUDIT_ACTIVE", raising=False)
    monkeypatch.setenv("GPUOPS_STATE_DIR", "/x")
    out = run_action(A, _args(tmp_path))
    assert out["failed"] is True and out["items"] == ["audit_callback"]
    assert out["lines"][0].startswith("GAP  audit_callback:")
    assert "ANSIBLE_CALLBACKS_ENABLED=gpuops.cluster.audit" in out["lines"][0]


def test_marker_of_another_process_does_not_count(tmp_path, run_action, monkeypatch):
    monkeypatch.setenv("GPUOPS_AUDIT_ACTIVE", '{"pid": 1, "run_id": "r"}')
    out = run_action(A, _args(tmp_path))
    assert "audit_callback" in out["items"]


def test_controller_down_and_client_missing(tmp_path, run_action, audited):
    down = {"host": "slurm_head", "scontrol_path": "scontrol", "rc": 1, "stdout": DOWN, "stderr": ""}
    out = run_action(A, _args(tmp_path, slurm=down))
    assert out["failed"] is True and out["items"] == ["slurm_controller"]
    assert "Slurmctld(primary) at tb-head is DOWN" in out["lines"][0] and "rc 1" in out["lines"][0]
    missing = {"host": "localhost", "scontrol_path": "/opt/slurm/bin/scontrol", "rc": 2, "failed": True,
               "msg": "[Errno 2] No such file or directory: b'/opt/slurm/bin/scontrol'"}  # fmt: skip
    out = run_action(A, _args(tmp_path, slurm=missing))
    assert out["items"] == ["slurm_client"] and "/opt/slurm/bin/scontrol on localhost" in out["lines"][0]
    out = run_action(A, _args(tmp_path, slurm={"unreachable": True, "msg": "ssh: connect refused"}))
    assert out["items"] == ["slurm_host"]


def test_node_gaps_name_the_hosts_and_the_fix(tmp_path, run_action, audited):
    no_gpu = ALL_TOOLS.replace("/usr/local/bin/nvidia-smi", "").replace("/usr/bin/mlxlink", "")
    nodes = {
        "n1": _node(no_gpu),
        "n2": _node(ALL_TOOLS.replace("uid=0", "uid=1001")),
        "n3": {
            "unreachable": True,
            "msg": "Failed to connect to the host via ssh: Connection timed out",
            "changed": False,
        },
        "n4": _node(no_gpu + "nvml=yes\n"),
    }
    out = run_action(A, _args(tmp_path, nodes=nodes, bmc={}))
    lines = {line.split(":")[0]: line for line in out["lines"]}
    assert out["failed"] is True
    assert "n3" in lines["GAP  ssh"] and "Connection timed out" in lines["GAP  ssh"]
    assert "n2" in lines["GAP  become"] and "uid 1001" in lines["GAP  become"]
    assert "ansible_become: true" in lines["GAP  become"]
    # n4 has no nvidia-smi but NVML: only n1 lacks both
    assert "on 1 sampled node(s): n1" in lines["GAP  nvidia-smi"]
    assert "on 2 sampled node(s): n1, n4" in lines["note mlxlink"]
    # required first, then notes
    assert [line[:4] for line in out["lines"]] == ["GAP "] * 3 + ["note"]


def test_state_dir_and_store(tmp_path, run_action, audited):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(str(ro), os.W_OK):
            pytest.skip("running as a user who writes anywhere (root)")
        out = run_action(A, _args(tmp_path, state_dir=str(ro)))
        assert out["items"] == ["state_dir"] and "not writable" in out["lines"][0]
    finally:
        ro.chmod(0o700)
    out = run_action(A, _args(tmp_path, state_dir=""))
    assert out["items"] == ["state_dir"] and "GPUOPS_STATE_DIR" in out["lines"][0]
    out = run_action(A, _args(tmp_path, state_dir=str(tmp_path / "file")))
    assert out["passed"] is True  # does not exist yet, its parent is writable
    (tmp_path / "file").write_text("x")
    out = run_action(A, _args(tmp_path, state_dir=str(tmp_path / "file")))
    assert "exists and is not a directory" in out["lines"][0]
    out = run_action(A, _args(tmp_path, db_url="postgresql://gpuops@127.0.0.1:1/gpuops"))
    assert out["items"] == ["store"] and "127.0.0.1:1" in out["lines"][0]
    out = run_action(A, _args(tmp_path, db_url="mysql://x/y"))
    assert out["items"] == ["store"] and "unknown scheme" in out["lines"][0]


def test_bmc_credentials(tmp_path, run_action, audited, monkeypatch):
    monkeypatch.delenv("GPUOPS_BMC_USER", raising=False)
    monkeypatch.delenv("GPUOPS_BMC_PASSWORD", raising=False)
    bmc = {"n1": {"address": True, "user": False, "password": False}, "n2": {"address": False}}
    out = run_action(A, _args(tmp_path, bmc=bmc))
    assert out["items"] == ["bmc_address", "bmc_credentials"] and out["failed"] is True
    monkeypatch.setenv("GPUOPS_BMC_USER", "admin")
    monkeypatch.setenv("GPUOPS_BMC_PASSWORD", "x")
    out = run_action(A, _args(tmp_path, bmc=bmc))
    assert out["items"] == ["bmc_address"] and out["passed"] is True  # a note only


def test_no_live_target(tmp_path, run_action, audited):
    out = run_action(A, _args(tmp_path, nodes={}, targets_total=0))
    assert out["items"] == ["targets"] and out["failed"] is True


def test_parse_probe_ignores_noise():
    got = P.parse_probe("Last login: today\nuid=0\nnvidia-smi=/usr/bin/nvidia-smi\nibstat=\nbogus line\nnvml=yes\n")
    assert got == {
        "uid": 0,
        "tools": {
            "nvidia-smi": "/usr/bin/nvidia-smi",
            "ibstat": None,
            "ipmitool": None,
            "dcgmi": None,
            "mlxlink": None,
        },
        "nvml": True,
    }
    assert P.parse_probe(None)["uid"] is None


def test_the_playbook_runs_the_probe_the_verdict_parses():
    plays = yaml.safe_load((REPO / "playbooks" / "preflight.yml").read_text())
    probe = next(t for p in plays for t in p.get("tasks", []) if "ansible.builtin.raw" in t)
    assert re.sub(r"\s+", " ", probe["ansible.builtin.raw"]).strip() == P.PROBE
