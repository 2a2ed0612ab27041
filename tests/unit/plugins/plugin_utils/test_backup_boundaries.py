"""Issue 35, observations 2, 3 (backup half) and 7 (backup half): the backup store's boundaries.

* a rewritten manifest (the issue's exact attack: entries for /root/.ssh/authorized_keys 0600 and
  /usr/local/bin/rootsh 4755 root appended to a real snapshot, its plain SHA-256 recomputed) is refused, nothing is
  planned; so is a correctly signed snapshot that would write outside the node's backup sources, a link, a setuid
  mode or an owner that was not captured;
* the signing key lives outside the store, is checked, and unsigned snapshots from before signing are refused for a
  restore with the commands that re-take or re-sign them;
* what a node returns is bounded on the controller (24 MiB in one entry, 3,000 entries: refused naming the node and
  the entry);
* a state backup carries no ticket, no ansible-runner artifact, nothing that looks like a secret and no object
  holding a configured secret value, locally or off-site (every written file is searched for the planted values).

Before the fix (the code at 3e77f23): the attack planned both root files with ``verified: True``; 3,001 entries and
25 MB were stored and planned; the runner's ``command`` file with the BMC password was stored and copied off-site.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import os
import stat
import tempfile

import pytest

from ansible_collections.gpuops.cluster.plugins.action import backup, restore_drill, restore_plan
from ansible_collections.gpuops.cluster.plugins.module_utils import _backup as N
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import store as B
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import keys as B_keys
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import objects as B_objects
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import restore as B_restore
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import secrets as B_secrets
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import drill as D

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 12, 3, 8, 0, 0, tzinfo=UTC)
KEY = B_keys.SigningKey(b"test-signing-key-0123456789abcdef", "test")
BMC_PW = "Planted-BMC-S3cret-pw"
DB_PW = "Planted-DB-S3cret-pw"
DB_URL = "postgresql://gpuops:%s@db01/gpuops" % DB_PW


@pytest.fixture(autouse=True)
def key_file(tmp_path, monkeypatch):
    """The key file of these runs (never the user's ~/.config/gpuops/backup.key); no secret from the caller's env."""
    path = tmp_path / "keys" / "backup.key"
    monkeypatch.setenv("GPUOPS_BACKUP_KEY_FILE", str(path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # restore_plan's staging copies: under tmp_path
    for name in ("GPUOPS_BMC_PASSWORD", "GPUOPS_DB_URL"):
        monkeypatch.delenv(name, raising=False)
    return path


def entry(path, data, mode="0644", owner="root", **kw):
    e = N.with_content(N._entry(N.file_name(path), path, "file", True, path), data)
    e.update(mode=mode, uid=0 if owner == "root" else 1000, gid=0, owner=owner, group="root", **kw)
    return e


def snap(bdir, node="gpu-node-01", entries=None, key=KEY, now=NOW):
    entries = entries or [entry("/etc/slurm/gres.conf", b"NodeName=gpu-node-01 Name=gpu\n")]
    return B.write_snapshot(str(bdir), node, entries, {"change_id": "CHG-1"}, key=key, now=now)


def manifest_path(bdir, sid):
    return bdir / "snapshots" / sid / "manifest.json"


def rewrite(bdir, sid, doc, sign=None, sha=True):
    """Write ``doc`` as the manifest (recomputing manifest.sha256, as the issue's attacker did; ``sign``: a key)."""
    body = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
    manifest_path(bdir, sid).write_bytes(body)
    if sha:
        (bdir / "snapshots" / sid / "manifest.sha256").write_text(hashlib.sha256(body).hexdigest() + "\n")
    if sign is not None:
        (bdir / "snapshots" / sid / "manifest.sig").write_text(sign.sign(body))


def add_root_files(bdir, doc):
    """The issue's attack: objects and manifest entries for root's authorized_keys and a setuid root shell."""
    for path, mode, data in (("/root/.ssh/authorized_keys", "0600", b"ssh-ed25519 AAAA attacker\n"),
                             ("/usr/local/bin/rootsh", "4755", b"#!/bin/sh\nexec /bin/sh -p\n")):  # fmt: skip
        sha = hashlib.sha256(data).hexdigest()
        (bdir / "objects" / sha).write_bytes(data)
        doc["files"].append({"file": "files" + path, "path": path, "source": path, "kind": "file", "sha256": sha,
                             "size": len(data), "mode": mode, "uid": 0, "gid": 0, "owner": "root", "group": "root",
                             "restore": True, "node": doc["node"]})  # fmt: skip
    return doc


# ---- observation 2: a rewritten manifest ------------------------------------------------------------------------
def test_the_issue_attack_a_rewritten_manifest_with_its_sha256_recomputed_is_refused(tmp_path):
    bdir = tmp_path / "b"
    m = snap(bdir)
    rewrite(bdir, m["id"], add_root_files(bdir, json.loads(manifest_path(bdir, m["id"]).read_text())))
    stage = tmp_path / "stage"
    with pytest.raises(B_objects.BackupError, match="not authentic: manifest.sig does not match manifest.json") as exc:
        B_restore.restore_plan(str(bdir), m["id"], "gpu-node-01", key=KEY, stage_dir=str(stage))
    assert "authorized_keys" not in str(exc.value) and not stage.exists()  # nothing planned, nothing staged
    res = B.verify(str(bdir), m["id"], KEY)
    assert res["ok"] is False and "not authentic" in res["problems"][0]["problem"]
    # the drill fails on it too
    rep = D.run(str(bdir), str(tmp_path / "scratch"), {"rto_minutes": 30, "rpo_hours": 1e6}, NOW, key=KEY)
    assert not rep["ok"] and "not authentic" in rep["restores"][0]["problems"][0]["problem"]


def test_the_attack_through_the_restore_step_plans_nothing(run_action, tmp_path, key_file):
    """The same attack through gpuops.cluster.restore_plan as the restore playbook runs it: refused, no files."""
    entries = [entry("/etc/slurm/gres.conf", b"NodeName=n1 Name=gpu\n")]
    out = run_action(backup, {"node": "n1", "entries": entries, "backup_dir": str(tmp_path / "b")})
    bdir, sid = tmp_path / "b", out["snapshot_id"]
    rewrite(bdir, sid, add_root_files(bdir, json.loads(manifest_path(bdir, sid).read_text())))
    plan = run_action(restore_plan, {"backup_dir": str(bdir), "snapshot_id": sid, "node": "n1"})
    assert plan["failed"] is True and plan["refused"] is True and "files" not in plan
    assert "restore refused: snapshot %s is not authentic" % sid in plan["msg"]


def test_dropping_the_signature_and_claiming_v1_is_refused_as_unsigned(tmp_path):
    bdir = tmp_path / "b"
    m = snap(bdir)
    doc = add_root_files(bdir, json.loads(manifest_path(bdir, m["id"]).read_text()))
    doc["schema"] = "gpuops.backup/v1"
    rewrite(bdir, m["id"], doc)
    os.unlink(bdir / "snapshots" / m["id"] / "manifest.sig")
    with pytest.raises(
        B_objects.UnsignedSnapshot, match="is unsigned .*Take a new snapshot: ansible-playbook gpuops.cluster.backup"
    ):
        B_restore.restore_plan(str(bdir), m["id"], "gpu-node-01", key=KEY)
    # a v2 manifest without its signature is not authentic
    doc["schema"] = B_objects.SCHEMA
    rewrite(bdir, m["id"], doc)
    with pytest.raises(B_objects.BackupError, match="not authentic: manifest.sig is missing"):
        B_restore.restore_plan(str(bdir), m["id"], "gpu-node-01", key=KEY)


def test_a_snapshot_signed_with_another_key_is_refused_naming_both_keys(tmp_path):
    bdir = tmp_path / "b"
    m = snap(bdir)
    theirs = B_keys.SigningKey(b"an-attacker-key-0123456789abcdef!!", "attacker")
    rewrite(bdir, m["id"], add_root_files(bdir, json.loads(manifest_path(bdir, m["id"]).read_text())), sign=theirs)
    with pytest.raises(
        B_objects.BackupError,
        match="signed with key %s, and this controller's key .* is %s" % (theirs.key_id, KEY.key_id),
    ):
        B_restore.restore_plan(str(bdir), m["id"], "gpu-node-01", key=KEY)


def test_a_correctly_signed_snapshot_with_a_path_outside_the_sources_is_refused(tmp_path):
    """Whoever holds the key (or a bug) still cannot make a restore write a file the node's sources never read."""
    bdir = tmp_path / "b"
    m = snap(bdir)
    rewrite(bdir, m["id"], add_root_files(bdir, json.loads(manifest_path(bdir, m["id"]).read_text())), sign=KEY)
    assert B.verify(str(bdir), m["id"], KEY)["ok"]  # authentic: the signature is right
    stage = tmp_path / "stage"
    stage.mkdir()
    with pytest.raises(B_objects.BackupError) as exc:
        B_restore.restore_plan(str(bdir), m["id"], "gpu-node-01", key=KEY, stage_dir=str(stage))
    msg = str(exc.value)
    assert msg.startswith("snapshot %s is refused, nothing is restored" % m["id"])
    assert (
        "files/root/.ssh/authorized_keys (/root/.ssh/authorized_keys is not produced by the node's backup sources)"
        in msg
    )
    assert "files/usr/local/bin/rootsh (mode 4755 sets setuid/setgid/sticky bits" in msg
    assert os.listdir(stage) == []
    # an operator who configured the path (gpuops_backup_extra_paths) may restore it: sources decide, not the snapshot
    rules = B_objects.restore_rules(extra_paths=["/root/.ssh/authorized_keys"])
    with pytest.raises(B_objects.BackupError) as exc:
        B_restore.restore_plan(str(bdir), m["id"], "gpu-node-01", key=KEY, rules=rules)
    assert "authorized_keys" not in str(exc.value) and "rootsh" in str(exc.value)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"link": "/etc/shadow"}, "a symbolic link (restores never follow links)"),
        ({"mode": "4755"}, "mode 4755 sets setuid/setgid/sticky bits"),
        ({"mode": "2644"}, "mode 2644 sets setuid/setgid/sticky bits"),
        ({"mode": "1777"}, "mode 1777 sets setuid/setgid/sticky bits"),
        ({"mode": "u+s"}, "mode 'u+s' is not a captured file mode"),
        ({"mode": None}, "mode None is not a captured file mode"),
        ({"owner": None, "uid": None}, "no owner was captured"),
        ({"owner": "root;id"}, "owner 'root;id' is not an account name"),
        ({"gid": -1}, "gid -1 is not a captured id"),
        ({"path": "/etc/slurm/../../root/x"}, "is not an absolute normalized path"),
        ({"path": "/etc/modprobe.d/.hidden-nvidia"}, "is not produced by the node's backup sources"),
        ({"path": "/etc/modprobe.d/sub/nvidia.conf"}, "is not produced by the node's backup sources"),
        ({"kind": "command"}, "marked restorable but of kind 'command'"),
    ],
)
def test_signed_records_a_restore_must_not_write_are_refused(tmp_path, change, problem):
    bdir = tmp_path / "b"
    m = snap(bdir)
    doc = json.loads(manifest_path(bdir, m["id"]).read_text())
    doc["files"][0].update(change)
    rewrite(bdir, m["id"], doc, sign=KEY)
    with pytest.raises(B_objects.BackupError, match="is refused, nothing is restored") as exc:
        B_restore.restore_plan(str(bdir), m["id"], "gpu-node-01", key=KEY)
    assert problem in str(exc.value)


def test_numeric_owners_are_restored_as_captured(tmp_path):
    e = entry("/etc/slurm/gres.conf", b"x\n", owner=None)
    e.update(uid=4242, gid=4243, group=None)
    m = snap(tmp_path / "b", entries=[e])
    f = B_restore.restore_plan(str(tmp_path / "b"), m["id"], key=KEY)["files"][0]
    assert (f["owner"], f["group"], f["mode"]) == ("4242", "4243", "0644")


# ---- the node never offers a link or a setuid file for a restore --------------------------------------------------
def test_the_node_reads_links_and_setuid_files_as_evidence_only(tmp_path):
    real = tmp_path / "real.conf"
    real.write_text("x\n")
    link = tmp_path / "nvidia.conf"
    link.symlink_to(real)
    e = N.read_file(str(link))
    assert e["status"] == "ok" and e["restore"] is False and e["link"] == str(real) and "never follows" in e["note"]
    suid = tmp_path / "tool"
    suid.write_text("#!/bin/sh\n")
    suid.chmod(0o4755)
    e = N.read_file(str(suid))
    assert e["status"] == "ok" and e["restore"] is False and e["mode"] == "4755" and "setuid" in e["note"]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            {"path": "/root/.ssh/authorized_keys", "name": "files/root/.ssh/authorized_keys"},
            "not produced by the node's backup sources",
        ),
        ({"link": "/etc/shadow"}, "a symbolic link"),
        ({"mode": "4755"}, "setuid/setgid/sticky"),
        ({"kind": "controller"}, "a node returns only file/command/redfish entries"),
        ({"name": "controller/state/audit/audit.log"}, "a node returns only file/command/redfish entries"),
    ],
)
def test_a_hostile_node_cannot_store_what_a_restore_must_not_write(tmp_path, change, problem):
    e = entry("/etc/slurm/gres.conf", b"x\n")
    e.update(change)
    with pytest.raises(B_objects.BackupError, match="gpu-node-01") as exc:
        snap(tmp_path / "b", entries=[e])
    assert problem in str(exc.value) and not (tmp_path / "b" / "objects").exists()


# ---- the key -------------------------------------------------------------------------------------------------------
def test_the_key_file_is_created_once_private_and_outside_the_store(tmp_path, key_file):
    k1 = B_keys.resolve_key(None, None, str(tmp_path / "b"), create=True)
    assert key_file.is_file() and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    k2 = B_keys.resolve_key(None, None, str(tmp_path / "b"), create=False)
    assert k1.key_id == k2.key_id and k1.secret_text() not in repr(k1)
    key_file.chmod(0o644)
    with pytest.raises(B_objects.BackupError, match=r"accessible to others \(mode 0644\): chmod 600"):
        B_keys.load_key(key_file=str(key_file))
    key_file.chmod(0o600)
    with pytest.raises(B_objects.BackupError, match="must live outside the store: .* is inside"):
        B_keys.resolve_key(None, None, str(key_file.parent), create=False)
    with pytest.raises(B_objects.BackupError, match="must live outside the store"):
        B_keys.load_key(key_file=str(key_file), outside=[str(tmp_path)])
    link = tmp_path / "link.key"
    link.symlink_to(key_file)
    with pytest.raises(B_objects.BackupError, match="symbolic link"):
        B_keys.load_key(key_file=str(link))
    with pytest.raises(B_objects.BackupError, match="too short"):
        B_keys.load_key("short-key")
    assert B_keys.load_key("v" * 40).origin == B_objects.KEY_VAR


def test_a_missing_key_is_not_recreated_for_a_store_signed_with_another(tmp_path, key_file):
    snap(tmp_path / "b")
    with pytest.raises(B_objects.BackupError, match="holds snapshots signed with key %s .*no key at" % KEY.key_id):
        B_keys.resolve_key(None, None, str(tmp_path / "b"), create=True)
    assert not key_file.exists()
    with pytest.raises(B_objects.BackupError, match="no backup signing key: set gpuops_backup_signing_key"):
        B_keys.resolve_key(None, None, str(tmp_path / "b"), create=False)


def test_the_key_from_a_vault_variable(run_action, tmp_path, key_file):
    """gpuops_backup_signing_key (a task variable) signs; the restore with it verifies; no key file is created."""
    tv = {"gpuops_backup_signing_key": "k" * 40}
    entries = [entry("/etc/slurm/gres.conf", b"NodeName=n1 Name=gpu\n")]
    out = run_action(backup, {"node": "n1", "entries": entries, "backup_dir": str(tmp_path / "b")}, task_vars=tv)
    assert out["verified"] is True and out["signed_by"] == B_keys.load_key("k" * 40).key_id and not key_file.exists()
    args = {"backup_dir": str(tmp_path / "b"), "snapshot_id": out["snapshot_id"], "node": "n1", "stage": False}
    assert run_action(restore_plan, args, task_vars=tv)["verified"]["ok"] is True
    refused = run_action(restore_plan, args, task_vars={"gpuops_backup_signing_key": "z" * 40})
    assert refused["failed"] and "signed with key %s" % out["signed_by"] in refused["msg"]


# ---- migration: unsigned snapshots from before signing -------------------------------------------------------------
def legacy(bdir, sid="20261101T000000000000Z-n1", files=None):
    """A gpuops.backup/v1 snapshot as the code before signing wrote it."""
    files = files or [("/etc/slurm/gres.conf", "0644", b"NodeName=n1 Name=gpu\n")]
    recs = []
    for path, mode, data in files:
        sha = hashlib.sha256(data).hexdigest()
        (bdir / "objects").mkdir(parents=True, exist_ok=True)
        (bdir / "objects" / sha).write_bytes(data)
        recs.append({"file": "files" + path, "path": path, "source": path, "kind": "file", "sha256": sha,
                     "size": len(data), "mode": mode, "uid": 0, "gid": 0, "owner": "root", "group": "root",
                     "restore": True})  # fmt: skip
    doc = {"schema": "gpuops.backup/v1", "id": sid, "node": "n1", "created": "2026-11-01T00:00:00Z", "files": recs,
           "absent": [], "errors": [], "total_bytes": sum(r["size"] for r in recs)}  # fmt: skip
    (bdir / "snapshots" / sid).mkdir(parents=True)
    rewrite(bdir, sid, doc)
    return sid


def test_an_unsigned_legacy_snapshot_is_refused_then_signed_on_request(run_action, tmp_path, key_file):
    bdir = tmp_path / "b"
    sid = legacy(bdir)
    B_keys.resolve_key(None, None, str(tmp_path / "other"), create=True)
    args = {"backup_dir": str(bdir), "snapshot_id": sid, "node": "n1"}
    out = run_action(restore_plan, args)
    assert out["failed"] and "is unsigned (gpuops.backup/v1" in out["msg"]
    assert "ansible-playbook gpuops.cluster.backup -l n1" in out["msg"] and "sign_unsigned=true" in out["msg"]
    # --check with sign_unsigned: the plan an operator reviews; nothing is signed
    dry = run_action(restore_plan, dict(args, sign_unsigned=True), check_mode=True)
    assert dry["unsigned"] is True and [f["path"] for f in dry["files"]] == ["/etc/slurm/gres.conf"]
    assert not (bdir / "snapshots" / sid / "manifest.sig").exists()
    signed = run_action(restore_plan, dict(args, sign_unsigned=True))
    assert signed["changed"] is True and signed["signed_now"] == B_keys.load_key().key_id
    assert run_action(restore_plan, args)["verified"]["ok"] is True
    # listed as signed now; the drill restores it
    assert [s["signed"] for s in B.list_snapshots(str(bdir), key=B_keys.load_key())] == [True]


def test_a_legacy_snapshot_that_a_restore_must_not_write_is_never_signed(run_action, tmp_path, key_file):
    bdir = tmp_path / "b"
    sid = legacy(bdir, files=[("/usr/local/bin/rootsh", "4755", b"#!/bin/sh\n")])
    B_keys.resolve_key(None, None, str(tmp_path / "other"), create=True)
    out = run_action(restore_plan, {"backup_dir": str(bdir), "snapshot_id": sid, "sign_unsigned": True})
    assert out["failed"] and "is refused, nothing is restored" in out["msg"] and "rootsh" in out["msg"]
    assert not (bdir / "snapshots" / sid / "manifest.sig").exists()


def test_retention_deletes_legacy_snapshots_by_age_only_and_never_a_forged_one(tmp_path):
    bdir = tmp_path / "b"
    old = legacy(bdir)
    new = snap(bdir, node="n1")["id"]
    forged = snap(bdir, node="n1", now=NOW + datetime.timedelta(hours=1))["id"]
    doc = json.loads(manifest_path(bdir, forged).read_text())
    doc["change_id"] = "forged"
    rewrite(bdir, forged, doc)
    snaps = B.list_snapshots(str(bdir), key=KEY)
    assert {s["id"]: (s["ok"], s["signed"]) for s in snaps} == {
        old: (True, False),
        new: (True, True),
        forged: (False, None),
    }
    assert B.retention_plan(snaps, keep=1, max_age_days=60, now=NOW) == []
    assert B.retention_plan(snaps, keep=1, max_age_days=10, now=NOW) == [old]


# ---- observation 7: a node's answer is bounded -------------------------------------------------------------------
def test_a_24_mib_entry_is_refused_naming_the_node_and_the_entry(run_action, tmp_path):
    big = entry("/etc/slurm/slurm.conf", b"#" * (24 << 20))
    out = run_action(backup, {"node": "gpu-node-07", "entries": [big], "backup_dir": str(tmp_path / "b")})
    assert out["failed"] is True and out["backup_ok"] is False
    assert (
        "backup of gpu-node-07 failed, the change is refused: gpu-node-07 returned files/etc/slurm/slurm.conf of "
        "25165824 bytes: more than the controller's limit of 8388608 bytes per entry (backup_max_entry_bytes)"
    ) in out["msg"]
    assert not (tmp_path / "b" / "objects").exists() and not (tmp_path / "b" / "snapshots").exists()


def test_3000_entries_are_refused_naming_the_node_and_the_first_beyond_the_limit(run_action, tmp_path):
    many = [entry("/etc/modprobe.d/nvidia-%04d.conf" % i, b"options nvidia %d\n" % i) for i in range(3000)]
    out = run_action(backup, {"node": "gpu-node-07", "entries": many, "backup_dir": str(tmp_path / "b")})
    assert out["failed"] is True
    assert (
        "gpu-node-07 returned 3000 entries: more than the controller's limit of 1000 per snapshot "
        "(backup_max_entries); the first beyond it: files/etc/modprobe.d/nvidia-1000.conf"
    ) in out["msg"]
    assert not (tmp_path / "b" / "objects").exists()


def test_many_small_entries_over_the_snapshot_total_are_refused(tmp_path):
    entries = [entry("/etc/modprobe.d/nvidia-%d.conf" % i, bytes([65 + i]) * (7 << 20)) for i in range(10)]
    with pytest.raises(
        B_objects.BackupError,
        match=r"gpu-node-01 returned more than the controller's limit of 67108864 bytes "
        r"per snapshot \(backup_max_snapshot_bytes\), reached at files/etc/modprobe.d/nvidia-9.conf",
    ):
        snap(tmp_path / "b", entries=entries)


def test_limits_can_be_raised_and_the_restore_bounds_them_too(tmp_path):
    e = entry("/etc/slurm/slurm.conf", b"#" * (9 << 20))
    rules = B_objects.restore_rules(limits={"entry_bytes": 16 << 20})
    m = B.write_snapshot(str(tmp_path / "b"), "n1", B.prepare("n1", [e], rules=rules), {}, key=KEY)
    with pytest.raises(B_objects.BackupError, match="more than the limit of 8388608 per entry"):
        B_restore.restore_plan(str(tmp_path / "b"), m["id"], key=KEY)
    assert B_restore.restore_plan(str(tmp_path / "b"), m["id"], key=KEY, rules=rules)["files"][0]["size"] == 9 << 20


def test_the_node_itself_returns_one_error_for_a_glob_of_3000_files(tmp_path):
    for i in range(3000):
        (tmp_path / ("nvidia-%04d.conf" % i)).write_text("x\n")
    out = N.collect([{"glob": str(tmp_path / "nvidia-*")}], None, None)
    assert len(out) == 1 and out[0]["status"] == "error" and "3000 matches, more than the 1000" in out[0]["error"]


# ---- observation 3: state backups carry no secrets ------------------------------------------------------------------
def plant_state(state):
    """A state directory as the ticket hook left it (runner artifacts with both secrets in clear text), plus files
    elsewhere that hold secrets."""
    cmd = json.dumps({"command": ["ansible-playbook", "-e", "gpuops_bmc_password=%s" % BMC_PW],
                      "env": {"GPUOPS_BMC_PASSWORD": BMC_PW, "GPUOPS_DB_URL": DB_URL}})  # fmt: skip
    for d in ("tickets/T-1/runner/artifacts/x", "runner/artifacts/y", "isolation/env", "cache/artifacts/z"):
        (state / d).mkdir(parents=True)
        (state / d / "command").write_text(cmd)
    (state / "tickets" / "T-1" / "result.json").write_text('{"ok": true}')
    (state / "audit").mkdir()
    (state / "audit" / "audit.log").write_text('{"seq": 1, "msg": "login failed: password=********"}\n')
    (state / "runs").mkdir()
    (state / "runs" / "leaked.json").write_text('{"error": "bmc said %s"}' % BMC_PW)  # a configured value
    (state / "db.env").write_text("GPUOPS_DB_URL=%s\n" % DB_URL)  # a secret pattern
    (state / "bmc-password.txt").write_text("x")  # a secret name
    (state / "hosts").mkdir()
    (state / "hosts" / "gpu-node-01.json").write_text('{"state": "ok"}')


def every_file(*roots):
    for root in roots:
        for dirpath, _dirs, files in os.walk(str(root)):
            for name in files:
                yield os.path.join(dirpath, name)


def test_state_backups_carry_no_ticket_runner_artifact_or_secret_here_or_offsite(run_action, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUOPS_BMC_PASSWORD", BMC_PW)
    monkeypatch.setenv("GPUOPS_DB_URL", DB_URL)
    state = tmp_path / "state"
    plant_state(state)
    entries = [entry("/etc/slurm/gres.conf", b"NodeName=n1 Name=gpu\n")]
    args = {"node": "n1", "entries": entries, "backup_dir": str(state / "backups"), "state_dir": str(state),
            "offsite": str(tmp_path / "offsite")}  # fmt: skip
    out = run_action(backup, args)
    assert out["verified"] is True and out["offsite"]["ok"] is True, out.get("msg")
    man = json.loads(open(out["manifest"]).read())
    stored = {f["file"] for f in man["files"]}
    assert stored == {"files/etc/slurm/gres.conf", "controller/state/audit/audit.log",
                      "controller/state/hosts/gpu-node-01.json"}  # fmt: skip
    assert {x["file"]: x["reason"] for x in man["excluded"]} == {
        "controller/state/bmc-password.txt": "its name looks like a secret's",
        "controller/state/db.env": "it holds a URL with a password",
    }
    assert man["withheld"] == [{"file": "controller/state/runs/leaked.json", "source": str(state / "runs" / "leaked.json"),
                                "reason": "it holds a configured secret value (GPUOPS_BMC_PASSWORD)"}]  # fmt: skip
    # every file the backup wrote, here and off-site, and the audit record: neither planted value, in any form
    written = list(every_file(state / "backups", tmp_path / "offsite")) + [str(state / "audit" / "audit.log")]
    assert len(written) > 6
    for path in written:
        data = open(path, "rb").read()
        for value in (BMC_PW, DB_PW):
            for form in (value.encode(), base64.b64encode(value.encode())):
                assert form not in data, "%s holds %s" % (path, value)
    # the off-site copy carries only what the snapshot stored
    off_objects = set(os.listdir(tmp_path / "offsite" / "objects"))
    assert off_objects == {f["sha256"] for f in man["files"]}


def test_a_restorable_node_file_holding_a_configured_secret_refuses_the_backup(run_action, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUOPS_BMC_PASSWORD", BMC_PW)
    e = entry("/etc/slurm/slurm.conf", ("AccountingStoragePass=%s\n" % BMC_PW).encode())
    out = run_action(backup, {"node": "n1", "entries": [e], "backup_dir": str(tmp_path / "b"),
                              "state_dir": str(tmp_path / "s")})  # fmt: skip
    assert (
        out["failed"]
        and (
            "n1: files/etc/slurm/slurm.conf holds a configured secret value (GPUOPS_BMC_PASSWORD); "
            "a restore needs that file whole, so the backup is refused"
        )
        in out["msg"]
    )
    assert BMC_PW not in out["msg"] and not (tmp_path / "b" / "objects").exists()
    for path in every_file(tmp_path / "b", tmp_path / "s"):  # status file, audit record
        assert BMC_PW.encode() not in open(path, "rb").read()


def test_configured_secrets_come_from_the_environment_variables_and_the_key():
    env = {"GPUOPS_BMC_PASSWORD": BMC_PW, "GPUOPS_DB_URL": DB_URL, "ANSIBLE_VAULT_PASSWORD_FILE": "/home/u/.vault",
           "HOME": "/home/u", "GPUOPS_TOKEN": "abc"}  # fmt: skip
    tv = {"gpuops_bmc_password": "Var-S3cret-pw", "backup_bmc": {"url": "https://bmc", "auth": "basic"},
          "gpuops_pin_version": "535.104.05", "nested": {"api_key": "Nested-api-key"},
          "backup_bmc_password": "{{ gpuops_bmc_password }}"}  # fmt: skip
    got = dict((v, w) for w, v in B_secrets.configured_secrets(env, tv, [("the backup signing key", "K" * 40)]))
    assert got == {BMC_PW: "GPUOPS_BMC_PASSWORD", DB_PW: "the password in GPUOPS_DB_URL",
                   "Var-S3cret-pw": "gpuops_bmc_password", "Nested-api-key": "nested.api_key",
                   "K" * 40: "the backup signing key"}  # fmt: skip
    assert B_secrets.secret_in(b'{"x": "%s"}' % json.dumps('p"w-S3cret')[1:-1].encode(), [("X", 'p"w-S3cret')]) == "X"
    assert B_secrets.secret_in(b"postgresql://u:p%40ss-S3cret@h", [("X", "p@ss-S3cret")]) == "X"


@pytest.mark.parametrize(
    "text",
    [
        b'{"seq": 1, "msg": "login failed: password=******** user=admin"}',
        b'{"password": "********", "no_log": true, "secret": false, "token": null}',
        b'{"task": "Backup | BIOS attributes and BMC settings over Redfish (no passwords)"}',
        b'{"url": "postgresql://gpuops:***@db01/gpuops", "requires_password": true}',
        b"password_set=true",
    ],
)
def test_masked_values_and_words_are_not_secret_patterns(text):
    assert B_secrets.secret_pattern("audit/audit.log", text) is None


def test_the_drill_still_restores_a_signed_snapshot_and_fails_one_the_restore_would_refuse(run_action, tmp_path):
    entries = [entry("/etc/slurm/gres.conf", b"NodeName=n1 Name=gpu\n")]
    out = run_action(backup, {"node": "n1", "entries": entries, "backup_dir": str(tmp_path / "b")})
    args = {"backup_dir": str(tmp_path / "b"), "report_dir": str(tmp_path / "drills"), "nodes": ["n1"]}
    rep = run_action(restore_drill, args)
    assert rep["ok"] is True and rep["report"]["restores"][0]["id"] == out["snapshot_id"], rep.get("msg")
    # signed with the controller's key, but writing outside the sources: the drill fails like the restore would
    key = B_keys.load_key()
    bdir = tmp_path / "b"
    rewrite(bdir, out["snapshot_id"], add_root_files(bdir, json.loads(manifest_path(bdir, out["snapshot_id"]).read_text())),
            sign=key)  # fmt: skip
    rep = run_action(restore_drill, args)
    assert rep["failed"] is True and "restore drill FAILED" in rep["msg"]
    problems = rep["report"]["restores"][0]["problems"]
    assert {p["file"] for p in problems} == {"files/root/.ssh/authorized_keys", "files/usr/local/bin/rootsh"}
