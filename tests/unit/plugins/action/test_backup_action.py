"""gpuops.cluster.backup and gpuops.cluster.restore_plan as Ansible runs them: verified snapshot, check mode,
a refused backup (status file + audit record), off-site copy, a tampered snapshot refused naming the file."""

from __future__ import annotations

import json
import os
import tempfile

import pytest

from ansible_collections.gpuops.cluster.plugins.action import backup, restore_plan
from ansible_collections.gpuops.cluster.plugins.module_utils import _backup as N


@pytest.fixture(autouse=True)
def key_file(tmp_path, monkeypatch):
    """The key file of these runs (never the user's ~/.config/gpuops/backup.key)."""
    path = tmp_path / "keys" / "backup.key"
    monkeypatch.setenv("GPUOPS_BACKUP_KEY_FILE", str(path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # restore_plan's staging copies: under tmp_path
    return path


def _entries():
    ok = N.with_content(N._entry("files/etc/slurm/gres.conf", "/etc/slurm/gres.conf", "file", True,
                                 "/etc/slurm/gres.conf"), b"NodeName=n1 Name=gpu\n")  # fmt: skip
    ok.update(mode="0644", uid=0, gid=0, owner="root", group="root")
    return [ok, N._entry("files/etc/default/grub", "/etc/default/grub", "file", True)]


def test_backup_verifies_records_and_restores(run_action, tmp_path, key_file):
    args = {"node": "n1", "entries": _entries(), "backup_dir": str(tmp_path / "b"), "state_dir": str(tmp_path / "s"),
            "change_id": "CHG-1", "offsite": str(tmp_path / "off")}  # fmt: skip
    dry = run_action(backup, args, check_mode=True)
    assert dry["changed"] is False and dry["verified"] is None and not (tmp_path / "b").exists()
    assert not key_file.exists()  # check mode creates no key
    out = run_action(backup, args)
    assert out["verified"] is True and out["files"] == 1 and out["absent"] == ["files/etc/default/grub"]
    # the first backup created the key file: this user's, 0600, in a 0700 directory
    assert oct(key_file.stat().st_mode & 0o777) == "0o600" and oct(key_file.parent.stat().st_mode & 0o777) == "0o700"
    assert len(key_file.read_text().strip()) == 64 and out["signed_by"]
    assert out["restore_command"].endswith("-e gpuops_backup_id=%s -l n1 --diff" % out["snapshot_id"])
    assert out["offsite"]["ok"] is True and (tmp_path / "off" / "snapshots" / out["snapshot_id"]).is_dir()
    audit = [json.loads(ln) for ln in (tmp_path / "s" / "audit" / "audit.log").read_text().splitlines()]
    assert audit[-1]["event"] == "backup" and audit[-1]["ok"] is True and audit[-1]["snapshot_id"] == out["snapshot_id"]
    plan = run_action(restore_plan, {"backup_dir": str(tmp_path / "b"), "snapshot_id": out["snapshot_id"], "node": "n1"})
    assert [f["path"] for f in plan["files"]] == ["/etc/slurm/gres.conf"] and plan["verified"]["ok"] is True
    assert plan["files"][0]["object"].startswith(plan["staging"]) and os.path.isfile(plan["files"][0]["object"])
    obj = tmp_path / "b" / "objects" / plan["files"][0]["sha256"]
    obj.write_bytes(b"tampered")
    bad = run_action(restore_plan, {"backup_dir": str(tmp_path / "b"), "snapshot_id": out["snapshot_id"]})
    assert bad["failed"] is True and bad["refused"] is True and "files/etc/slurm/gres.conf (checksum mismatch" in bad["msg"]


def test_unreadable_file_fails_the_backup_with_a_record(run_action, tmp_path):
    err = N._fail(N._entry("files/etc/slurm/slurm.conf", "/etc/slurm/slurm.conf", "file", True), "cannot read: denied")
    cmd = N._fail(N._entry("commands/nvidia-smi.csv", "command: nvidia-smi", "command", False), "exit 9")
    ok = run_action(backup, {"node": "n1", "entries": _entries() + [cmd], "backup_dir": str(tmp_path / "b")})
    assert ok["verified"] is True and ok["errors"][0]["file"] == "commands/nvidia-smi.csv"  # evidence only
    out = run_action(backup, {"node": "n1", "entries": _entries() + [err], "backup_dir": str(tmp_path / "b"),
                              "state_dir": str(tmp_path / "s"), "change_id": "CHG-2"})  # fmt: skip
    assert out["failed"] is True and "the change is refused: could not read files/etc/slurm/slurm.conf" in out["msg"]
    status = json.loads((tmp_path / "b" / "status" / "n1.json").read_text())
    assert status["ok"] is False and status["change_id"] == "CHG-2"
    audit = [json.loads(ln) for ln in (tmp_path / "s" / "audit" / "audit.log").read_text().splitlines()]
    assert audit[-1]["event"] == "backup" and audit[-1]["ok"] is False
