# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operator CLI (tools/gpuops_audit): `python -m gpuops_audit verify LOG [--head H] [--anchor A] [--chain-only]`,
exit 0 when the log verifies, 1 when it does not (the result as JSON on stdout), 2 on a usage error."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as A

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from gpuops_audit import cli  # noqa: E402


def _write(tmp_path, n=5):
    """A log of ``n`` records and its head.json: (log, head path, last head)."""
    log = tmp_path / "audit" / "audit.log"
    heads = [A.append(str(log), {"event": "cli-test", "n": n, "i": i}) for i in range(n)]
    return str(log), str(log.parent / "head.json"), heads[-1]


def _drop_last(log):
    with open(log, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    with open(log, "wb") as f:
        f.write(b"".join(lines[:-1]))


def _run(capsys, *argv):
    rc = cli.main(["verify", *argv])
    return rc, json.loads(capsys.readouterr().out)


def test_cli(tmp_path, capsys):
    log, _head_path, _unused = _write(tmp_path, 3)
    rc, out = _run(capsys, log)  # finds head.json beside the log
    assert rc == 0 and out["ok"] is True and out["head_checked"] is True
    _drop_last(log)
    rc, out = _run(capsys, log)
    assert rc == 1 and "removed or truncated" in out["reason"]
    assert _run(capsys, log, "--no-head")[0] == 0


def test_a_deleted_head_fails_unless_chain_only_is_asked_for(tmp_path, capsys):
    log, head_path, _unused = _write(tmp_path, 5)
    os.unlink(head_path)
    rc, out = _run(capsys, log)
    assert rc == 1 and out["ok"] is False and "missing" in out["reason"]
    rc, out = _run(capsys, log, "--chain-only")
    assert rc == 0 and out["chain_only"] is True and out["head_checked"] is False


def test_head_by_hash_and_anchor(tmp_path, capsys):
    log, _head_path, head = _write(tmp_path, 5)
    rc, out = _run(capsys, log, "--head", head["hash"], "--anchor", "%d:%s" % (head["seq"], head["hash"]))
    assert rc == 0 and out["anchor_checked"] is True
    anchor = "%d:%s" % (head["seq"], head["hash"])
    os.unlink(log)
    _write(tmp_path, 3)  # log and head.json rebuilt together: only the anchor can tell
    assert _run(capsys, log)[0] == 0
    rc, out = _run(capsys, log, "--anchor", anchor)
    assert rc == 1 and "anchor says seq 5" in out["reason"]


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        cli.main(["verify"])
    assert exc.value.code == 2
    capsys.readouterr()


def test_audit_module_comes_from_the_collections_path(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSIBLE_COLLECTIONS_PATH", str(tmp_path / "nowhere"))
    assert cli.audit_module().verify is A.verify  # the same module the playbooks load


def test_python_m_gpuops_audit(tmp_path):
    log, _head_path, _unused = _write(tmp_path, 2)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tools"), os.path.join(ROOT, "build")]))
    p = subprocess.run(
        [sys.executable, "-m", "gpuops_audit", "verify", log], env=env, capture_output=True, text=True, check=False
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["records"] == 2
    _drop_last(log)
    p = subprocess.run(
        [sys.executable, "-m", "gpuops_audit", "verify", log], env=env, capture_output=True, text=True, check=False
    )
    assert p.returncode == 1 and json.loads(p.stdout)["first_bad_line"] == 2
