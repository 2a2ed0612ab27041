"""backup.failed / backup.stale (plugins/plugin_utils/checks/backup.py) through evaluate_node."""

from __future__ import annotations

import datetime

from ansible_collections.gpuops.cluster.plugins.module_utils import _backup as N
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import store as B
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import keys as B_keys
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import evaluate_node
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.backup import with_backup_status

NOW = datetime.datetime(2026, 12, 3, 8, 0, 0, tzinfo=datetime.timezone.utc)


KEY = B_keys.SigningKey(b"test-signing-key-0123456789abcdef", "test")


def _snap(bdir, node, hours_ago):
    e = N.with_content(N._entry("files/etc/x", "/etc/x", "file", False, "/etc/x"), b"x\n")
    return B.write_snapshot(str(bdir), node, [e], {}, key=KEY, now=NOW - datetime.timedelta(hours=hours_ago))


def _findings(tmp_path, host):
    facts = with_backup_status({"node": {}}, str(tmp_path), host, {}, NOW)
    found = evaluate_node(facts, None, None, None, NOW, host)[0]
    return {f["check"]: f for f in found if f["check"].startswith("backup.")}


def test_no_backup_store_no_finding(tmp_path):
    assert with_backup_status({"node": {}}, str(tmp_path), "n1", {}, NOW) == {"node": {}}
    assert _findings(tmp_path, "n1") == {}


def test_fresh_snapshot_no_finding_old_one_stale(tmp_path):
    _snap(tmp_path / "backups", "n1", 2)
    _snap(tmp_path / "backups", "n2", 200)
    assert _findings(tmp_path, "n1") == {}
    stale = _findings(tmp_path, "n2")["backup.stale"]
    assert stale["severity"] == "P3" and stale["action"] == "monitor" and "200.0h old" in stale["message"]
    assert _findings(tmp_path, "n3")["backup.stale"]["message"] == "no verified configuration snapshot of this node"


def test_failed_backup_is_a_finding_until_a_later_success(tmp_path):
    _snap(tmp_path / "backups", "n1", 1)
    B.write_status(str(tmp_path / "backups"), "n1", {"ok": False, "error": "could not read files/etc/slurm/gres.conf"})
    f = _findings(tmp_path, "n1")
    assert f["backup.failed"]["severity"] == "P2" and "gres.conf" in f["backup.failed"]["message"]
    B.write_status(str(tmp_path / "backups"), "n1", {"ok": True, "id": "x"})
    assert _findings(tmp_path, "n1") == {}
