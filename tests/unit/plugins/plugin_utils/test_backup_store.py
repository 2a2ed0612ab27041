"""The backup store (plugins/plugin_utils/backup/store.py): objects, signed manifests, verify, tamper, retention, off-site.

The boundaries of issue 35 (signatures, sources, limits, secrets) are in test_backup_boundaries.py."""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import os
import stat

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils import _backup as N
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import store as B
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import keys as B_keys
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import objects as B_objects
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import restore as B_restore
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import secrets as B_secrets

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 12, 3, 8, 0, 0, tzinfo=UTC)
GRES = b"NodeName=gpu-node-[01-08] Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"
KEY = B_keys.SigningKey(b"test-signing-key-0123456789abcdef", "test")


def entry(name, data, path=None, **kw):
    e = N.with_content(N._entry(name, path or "/" + name.split("/", 1)[1], "file", True, path), data)
    e.update(mode="0644", uid=0, gid=0, owner="root", group="root", **kw)
    return e


def snap(tmp_path, node="gpu-node-01", now=NOW, extra=(), gres=GRES):
    entries = [entry("files/etc/slurm/gres.conf", gres, "/etc/slurm/gres.conf"),
               entry("files/etc/modprobe.d/nvidia.conf", b"options nvidia NVreg_RestrictProfilingToAdminUsers=0\n",
                     "/etc/modprobe.d/nvidia.conf")] + list(extra)  # fmt: skip
    return B.write_snapshot(
        str(tmp_path), node, entries, {"change_id": "CHG-1", "workflow": "upgrade"}, key=KEY, now=now
    )


def test_snapshot_is_content_addressed_private_and_verifies(tmp_path):
    m = snap(tmp_path)
    assert m["schema"] == "gpuops.backup/v2" and m["node"] == "gpu-node-01" and m["change_id"] == "CHG-1"
    assert m["signed_by"] == KEY.key_id
    f = {x["file"]: x for x in m["files"]}["files/etc/slurm/gres.conf"]
    assert f["sha256"] == hashlib.sha256(GRES).hexdigest() and f["size"] == len(GRES)
    assert f["source"] == "/etc/slurm/gres.conf" and f["node"] == "gpu-node-01" and f["time"] == "2026-12-03T08:00:00Z"
    obj = tmp_path / "objects" / f["sha256"]
    assert obj.read_bytes() == GRES and stat.S_IMODE(obj.stat().st_mode) == 0o600
    sd = tmp_path / "snapshots" / m["id"]
    assert stat.S_IMODE(sd.stat().st_mode) == 0o700 and stat.S_IMODE((sd / "manifest.json").stat().st_mode) == 0o600
    assert (sd / "manifest.sig").read_text().startswith("hmac-sha256 %s " % KEY.key_id)
    assert B.verify(str(tmp_path), m["id"], KEY)["ok"] and m["stored_objects"] == 2


def test_identical_files_are_stored_once(tmp_path):
    m1 = snap(tmp_path)
    m2 = snap(tmp_path, node="gpu-node-02", now=NOW + datetime.timedelta(seconds=1))
    assert m2["stored_objects"] == 0 and m2["stored_bytes"] == 0
    assert len(os.listdir(tmp_path / "objects")) == 2 and m1["id"] != m2["id"]


def test_tampered_object_is_refused_naming_the_file(tmp_path):
    m = snap(tmp_path)
    sha = hashlib.sha256(GRES).hexdigest()
    (tmp_path / "objects" / sha).write_bytes(GRES + b"# evil\n")
    res = B.verify(str(tmp_path), m["id"], KEY)
    assert not res["ok"] and res["problems"][0]["file"] == "files/etc/slurm/gres.conf"
    with pytest.raises(B_objects.BackupError, match=r"does not verify: files/etc/slurm/gres.conf \(checksum mismatch"):
        B_restore.restore_plan(str(tmp_path), m["id"], "gpu-node-01", key=KEY)


def test_missing_object_and_missing_or_edited_manifest_are_refused(tmp_path):
    m = snap(tmp_path)
    os.unlink(tmp_path / "objects" / hashlib.sha256(GRES).hexdigest())
    with pytest.raises(B_objects.BackupError, match="gres.conf .object [0-9a-f]+ is missing"):
        B_restore.restore_plan(str(tmp_path), m["id"], key=KEY)
    m2 = snap(tmp_path, now=NOW + datetime.timedelta(seconds=5))
    p = tmp_path / "snapshots" / m2["id"] / "manifest.json"
    doc = json.loads(p.read_text())
    doc["files"][0]["path"] = "/etc/shadow"
    p.write_text(json.dumps(doc))
    with pytest.raises(B_objects.BackupError, match="tampered: .*manifest.json does not match manifest.sha256"):
        B_restore.restore_plan(str(tmp_path), m2["id"], key=KEY)
    os.unlink(tmp_path / "snapshots" / m2["id"] / "manifest.sha256")
    with pytest.raises(B_objects.BackupError, match="incomplete: .*manifest.sha256 is missing"):
        B.load_manifest(str(tmp_path), m2["id"])


def test_restore_plan_lists_restorable_files_of_its_node_only(tmp_path):
    cmd = N.with_content(N._entry("commands/packages.txt", "command: dpkg-query", "command", False), b"x\n")
    m = snap(tmp_path, extra=[cmd, entry("files/proc/cmdline", b"ro quiet\n", "/proc/cmdline", restore=False)])
    plan = B_restore.restore_plan(str(tmp_path), m["id"], "gpu-node-01", key=KEY, stage_dir=str(tmp_path / "stage"))
    assert sorted(f["path"] for f in plan["files"]) == ["/etc/modprobe.d/nvidia.conf", "/etc/slurm/gres.conf"]
    gres = [f for f in plan["files"] if f["path"] == "/etc/slurm/gres.conf"][0]
    assert (gres["owner"], gres["group"], gres["mode"]) == ("root", "root", "0644")
    # the plan names a private staged copy of each verified object, not the store's object
    assert open(gres["object"], "rb").read() == GRES and gres["object"].startswith(str(tmp_path / "stage"))
    assert stat.S_IMODE(os.stat(gres["object"]).st_mode) == 0o600
    with pytest.raises(B_objects.BackupError, match="of node gpu-node-01, not gpu-node-02"):
        B_restore.restore_plan(str(tmp_path), m["id"], "gpu-node-02", key=KEY)


def test_absent_and_error_entries_are_recorded(tmp_path):
    absent = N._entry("files/etc/default/grub", "/etc/default/grub", "file", True)
    err = N._fail(N._entry("files/etc/slurm/slurm.conf", "/etc/slurm/slurm.conf", "file", True), "cannot read: denied")
    m = snap(tmp_path, extra=[absent, err])
    assert m["absent"] == [{"file": "files/etc/default/grub", "source": "/etc/default/grub", "note": "not present"}]
    assert m["errors"][0]["file"] == "files/etc/slurm/slurm.conf" and "denied" in m["errors"][0]["error"]


@pytest.mark.parametrize("bad", ["../x", "files/../../etc", ""])
def test_bad_entry_names_and_nodes_are_refused(tmp_path, bad):
    with pytest.raises(B_objects.BackupError):
        B.write_snapshot(str(tmp_path), "n1", [entry(bad or "", b"x", "/x")], {}, key=KEY)
    with pytest.raises(B_objects.BackupError, match="invalid node"):
        B.write_snapshot(str(tmp_path), "../n1", [entry("files/x", b"x", "/x")], {}, key=KEY)


def test_content_that_does_not_match_the_node_sha_is_refused(tmp_path):
    e = entry("files/etc/slurm/gres.conf", b"abc", "/etc/slurm/gres.conf")
    e["content"] = base64.b64encode(b"abd").decode()
    with pytest.raises(B_objects.BackupError, match="does not match the sha256 read on the node"):
        B.write_snapshot(str(tmp_path), "n1", [e], {}, key=KEY)


def test_check_mode_writes_nothing(tmp_path):
    entries = [entry("files/etc/slurm/gres.conf", b"abc", "/etc/slurm/gres.conf")]
    m = B.write_snapshot(str(tmp_path / "b"), "n1", entries, {}, key=None, check_mode=True, now=NOW)
    assert m["files"] and not (tmp_path / "b").exists()
    with pytest.raises(B_objects.BackupError, match="only signed"):
        B.write_snapshot(str(tmp_path / "b"), "n1", entries, {}, key=None, now=NOW)


def test_retention_by_count_and_age_keeps_the_newest(tmp_path):
    ids = [snap(tmp_path, now=NOW - datetime.timedelta(days=d))["id"] for d in (40, 20, 3, 2, 1)]
    snaps = B.list_snapshots(str(tmp_path), "gpu-node-01")
    assert [s["id"] for s in snaps] == ids
    assert B.retention_plan(snaps, keep=3, max_age_days=365, now=NOW) == sorted(ids[:2])
    assert B.retention_plan(snaps, keep=10, max_age_days=30, now=NOW) == [ids[0]]
    # everything old: the newest is still kept
    assert ids[-1] not in B.retention_plan(snaps, keep=1, max_age_days=0.0001, now=NOW)
    res = B.prune(str(tmp_path), B.retention_plan(snaps, keep=1, max_age_days=30, now=NOW))
    assert [s["id"] for s in B.list_snapshots(str(tmp_path))] == [ids[-1]] and res["objects"] == []
    assert B.verify(str(tmp_path), ids[-1], KEY)["ok"]


def test_prune_removes_unreferenced_objects(tmp_path):
    old = snap(tmp_path, now=NOW - datetime.timedelta(days=1), gres=b"old\n")
    snap(tmp_path)
    res = B.prune(str(tmp_path), [old["id"]])
    assert res["objects"] == [hashlib.sha256(b"old\n").hexdigest()]
    assert not (tmp_path / "objects" / hashlib.sha256(b"old\n").hexdigest()).exists()


def test_offsite_copy_is_verified_there(tmp_path):
    m = snap(tmp_path / "a")
    res = B.copy_offsite(str(tmp_path / "a"), str(tmp_path / "off"), m["id"], KEY)
    assert res["ok"] and res["copied"] == 2 and B.verify(str(tmp_path / "off"), m["id"], KEY)["ok"]
    assert (tmp_path / "off" / "snapshots" / m["id"] / "manifest.sig").is_file()
    assert B.copy_offsite(str(tmp_path / "a"), str(tmp_path / "off"), m["id"], KEY)["copied"] == 0


def test_status_stale_and_failed(tmp_path):
    snap(tmp_path, now=NOW - datetime.timedelta(hours=200))
    snap(tmp_path, node="gpu-node-02", now=NOW - datetime.timedelta(hours=2))
    B.write_status(str(tmp_path), "gpu-node-02", {"ok": False, "error": "backup of gpu-node-02 failed"})
    st = B.status(str(tmp_path), ["gpu-node-01", "gpu-node-02", "gpu-node-03"], 168, NOW)
    assert st["gpu-node-01"]["stale"] and st["gpu-node-01"]["age_hours"] == 200
    assert not st["gpu-node-02"]["stale"] and st["gpu-node-02"]["failed"]["error"].startswith("backup of")
    assert st["gpu-node-03"]["stale"] and st["gpu-node-03"]["last"] is None


def test_state_entries_skip_the_backups_and_locks(tmp_path):
    (tmp_path / "audit").mkdir()
    (tmp_path / "audit" / "audit.log").write_text('{"seq": 1}\n')
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "x.lock").write_text("")
    snap(tmp_path / "backups")
    names = [e["name"] for e in B_secrets.state_entries(str(tmp_path), str(tmp_path / "backups"))]
    assert names == ["controller/state/audit/audit.log"]


def test_a_concurrent_prune_never_deletes_the_objects_of_a_backup_in_progress(tmp_path, monkeypatch):
    """Several hosts back up at once (one action per host): one host's prune must not collect the objects another
    has stored but not yet named in its manifest (the bed's onboarding lost nvidia-smi-versions.csv that way)."""
    import threading

    old = snap(tmp_path, node="gpu-node-02", now=NOW - datetime.timedelta(days=1), gres=b"old\n")
    stored = threading.Event()
    release = threading.Event()
    real_write = B.write_private_atomic

    def slow_manifest(path, data, mode=0o600):
        if path.endswith("manifest.json") and "gpu-node-01" in path:
            stored.set()  # every object of gpu-node-01 is in the store, its manifest not yet written
            release.wait(10)
        return real_write(path, data, mode)

    monkeypatch.setattr(B, "write_private_atomic", slow_manifest)
    result = {}
    writer = threading.Thread(target=lambda: result.update(snap=snap(tmp_path, node="gpu-node-01")))
    writer.start()
    assert stored.wait(10)
    pruner = threading.Thread(target=lambda: result.update(pruned=B.prune(str(tmp_path), [old["id"]])))
    pruner.start()
    pruner.join(0.5)
    assert pruner.is_alive()  # the collection waits for the backup in progress
    release.set()
    writer.join(10)
    pruner.join(10)
    assert B.verify(str(tmp_path), result["snap"]["id"], KEY)["ok"]
    assert result["pruned"]["objects"] == [hashlib.sha256(b"old\n").hexdigest()]
