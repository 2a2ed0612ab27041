# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.audit_verify as Ansible runs it: a missing head is a failure unless chain_only is asked for."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as A
from ansible_collections.gpuops.cluster.plugins.action import audit_verify


@pytest.fixture
def run(run_action):
    def _run(args):
        out = run_action(audit_verify, args)
        return (1 if out.get("failed") else 0), out

    return _run


@pytest.fixture
def log(tmp_path):
    path = str(tmp_path / "audit" / "audit.log")
    for i in range(5):
        A.append(path, {"event": "task", "i": i, "run_id": "r1"})
    return path


def test_intact_log_verifies_against_the_default_head(log, run):
    rc, out = run({"path": log})
    assert rc == 0 and out["ok"] is True and out["head_checked"] is True and out["records"] == 5
    assert out["expected_head"].endswith("head.json")


def test_truncated_log_with_its_head_deleted_fails(log, run):
    with open(log, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    with open(log, "wb") as f:
        f.write(b"".join(lines[:2]))
    os.unlink(os.path.join(os.path.dirname(log), "head.json"))
    rc, out = run({"path": log})
    assert rc == 1 and out["failed"] is True and out["ok"] is False
    assert "does not verify" in out["msg"] and "missing" in out["msg"]
    rc, out = run({"path": log, "fail_on_broken": False})
    assert rc == 0 and out["ok"] is False
    # the explicit chain-only check passes and says that it did not check the end
    rc, out = run({"path": log, "chain_only": True})
    assert rc == 0 and out["ok"] is True and out["chain_only"] is True and out["head_checked"] is False
    assert out["expected_head"] is None


def test_anchor_option(log, run):
    with open(os.path.join(os.path.dirname(log), "head.json")) as f:
        head = json.load(f)
    rc, out = run({"path": log, "anchor": "%d:%s" % (head["seq"], head["hash"])})
    assert rc == 0 and out["anchor_checked"] is True
    rc, out = run({"path": log, "anchor": "9:%s" % head["hash"]})
    assert rc == 1 and "anchor says seq 9" in out["msg"]
