"""Restore drills (plugins/plugin_utils/backup/drill.py): sample, scratch restore, RTO/RPO, report."""

from __future__ import annotations

import datetime

from ansible_collections.gpuops.cluster.plugins.module_utils import _backup as N
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import store as B
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import keys as B_keys
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import drill as D

NOW = datetime.datetime(2026, 12, 3, 8, 0, 0, tzinfo=datetime.timezone.utc)
POLICY = {"rto_minutes": 30, "rpo_hours": 24}
KEY = B_keys.SigningKey(b"test-signing-key-0123456789abcdef", "test")


def _snap(bdir, node, hours_ago, data=b"x\n"):
    e = N.with_content(
        N._entry("files/etc/slurm/gres.conf", "/etc/slurm/gres.conf", "file", True, "/etc/slurm/gres.conf"), data
    )
    e.update(mode="0644", uid=0, gid=0, owner="root", group="root")
    return B.write_snapshot(str(bdir), node, [e], {}, key=KEY, now=NOW - datetime.timedelta(hours=hours_ago))


def test_drill_restores_the_newest_per_node_and_meets_rto_rpo(tmp_path):
    _snap(tmp_path / "b", "n1", 30)
    new = _snap(tmp_path / "b", "n1", 1, b"y\n")
    _snap(tmp_path / "b", "n2", 2)
    rep = D.run(str(tmp_path / "b"), str(tmp_path / "scratch"), POLICY, NOW, count=5, key=KEY)
    assert rep["ok"] and [r["node"] for r in rep["restores"]] == ["n2", "n1"]
    assert rep["restores"][1]["id"] == new["id"] and rep["restores"][1]["data_age_hours"] == 1.0
    assert rep["rto_seconds"] == 1800 and not (tmp_path / "scratch").exists()
    assert "PASS" in D.render_markdown(rep)


def test_drill_fails_on_rpo_tamper_and_missing_node(tmp_path):
    old = _snap(tmp_path / "b", "n1", 30)
    rep = D.run(str(tmp_path / "b"), str(tmp_path / "s"), POLICY, NOW, nodes=["n1", "n9"], key=KEY)
    assert not rep["ok"] and not rep["restores"][0]["rpo_ok"] and rep["nodes_without_snapshot"] == ["n9"]
    obj = tmp_path / "b" / "objects" / old["files"][0]["sha256"]
    obj.write_bytes(b"tampered")
    rep = D.run(str(tmp_path / "b"), str(tmp_path / "s"), dict(POLICY, rpo_hours=100), NOW, nodes=["n1"], key=KEY)
    assert not rep["ok"] and rep["restores"][0]["problems"][0]["file"] == "files/etc/slurm/gres.conf"
    assert "FAIL" in D.render_markdown(rep) and "checksum mismatch" in D.render_markdown(rep)
