# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files the collection writes are private whatever the umask, and never written through a link (issue 12).

Every test runs under umask 022 (the usual default, under which a plain open() makes 0644 files and 0755
directories): reports, state, locks, replacement records, upgrade and onboarding reports, the live capture.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils import _files as F
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import livecapture as _livecapture
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect
from ansible_collections.gpuops.cluster.plugins.plugin_utils.replace import parts as _replace
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as _state
from ansible_collections.gpuops.cluster.plugins.action import onboard_stage, upgrade_report

SECRET = "victim-file-content"


@pytest.fixture(autouse=True)
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture()
def victim(tmp_path):
    """A file outside every directory the code writes to: a link planted in its place must not reach it."""
    p = tmp_path / "victim.txt"
    p.write_text(SECRET)
    p.chmod(0o644)
    return p


def mode(path):
    return stat.S_IMODE(os.lstat(str(path)).st_mode)


def assert_private(path, allowed=(0o600,)):
    m = mode(path)
    assert m in allowed, "%s is %o" % (path, m)
    assert m & 0o007 == 0


def assert_private_dir(path):
    assert stat.S_ISDIR(os.lstat(str(path)).st_mode)
    assert mode(path) == 0o700, "%s is %o" % (path, mode(path))


# --- the helpers -----------------------------------------------------------------------------------------------


def test_write_private_atomic_modes_dirs_and_no_leftovers(tmp_path):
    target = tmp_path / "a" / "b" / "report.json"
    assert F.write_private_atomic(str(target), '{"x": 1}') == str(target)
    assert target.read_text() == '{"x": 1}'
    assert_private(target)
    assert_private_dir(tmp_path / "a")
    assert_private_dir(tmp_path / "a" / "b")
    F.write_private_atomic(str(target), b"\x00bytes", mode=0o640)
    assert target.read_bytes() == b"\x00bytes"
    assert mode(target) == 0o640
    assert sorted(os.listdir(target.parent)) == ["report.json"]


def test_write_private_atomic_refuses_world_modes(tmp_path):
    for bad in (0o644, 0o604, 0o660, 0o666):
        with pytest.raises(ValueError):
            F.write_private_atomic(str(tmp_path / "x"), "x", mode=bad)
    assert not (tmp_path / "x").exists()


def test_write_private_atomic_replaces_a_planted_link_never_writes_through_it(tmp_path, victim):
    target = tmp_path / "report.json"
    os.symlink(str(victim), target)
    F.write_private_atomic(str(target), "new")
    assert victim.read_text() == SECRET and mode(victim) == 0o644
    assert not os.path.islink(target) and target.read_text() == "new"
    assert_private(target)


def test_write_private_atomic_cleans_up_on_failure(tmp_path, monkeypatch):
    def boom(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(F.os, "fsync", boom)
    with pytest.raises(OSError):
        F.write_private_atomic(str(tmp_path / "r.json"), "x")
    assert os.listdir(tmp_path) == []


def test_ensure_private_dir_creates_0700_and_leaves_existing_dirs_alone(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    F.ensure_private_dir(str(shared / "x" / "y"))
    assert mode(shared) == 0o755  # the operator's directory is not re-moded
    assert_private_dir(shared / "x")
    assert_private_dir(shared / "x" / "y")
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError):
        F.ensure_private_dir(str(tmp_path / "file" / "sub"))


def test_open_private_refuses_links_and_tightens_our_old_lock(tmp_path, victim):
    link = tmp_path / "locks" / "x.lock"
    link.parent.mkdir()
    os.symlink(str(victim), link)
    with pytest.raises(OSError):
        F.open_private(str(link))
    assert victim.read_text() == SECRET
    old = tmp_path / "locks" / "old.lock"
    old.write_text("")
    old.chmod(0o644)
    os.close(F.open_private(str(old)))
    assert_private(old)
    fd = F.open_private(str(tmp_path / "new" / "n.lock"))
    os.close(fd)
    assert_private(tmp_path / "new" / "n.lock")
    assert_private_dir(tmp_path / "new")


# --- state, locks, reports, records -------------------------------------------------------------------------


def test_state_locks_and_dirs_are_private(tmp_path):
    sdir = tmp_path / "state"
    with _state.StateLock(str(sdir), "isolation-guard"):
        pass
    assert_private(sdir / "locks" / "isolation-guard.lock")
    assert_private_dir(sdir / "locks")
    with _state.StateLock(str(sdir), "gpu-node-02"):
        pass
    assert_private(sdir / "locks" / "gpu-node-02.lock")


def test_a_state_record_rewrite_tightens_an_old_world_readable_file(tmp_path):
    """atomic_write_json: the replacement and onboarding records' files under the state directory."""
    sdir = tmp_path / "state"
    (sdir / "replace").mkdir(parents=True)
    old = sdir / "replace" / "h1.json"
    old.write_text(json.dumps({"host": "h1"}))
    old.chmod(0o644)
    _state.atomic_write_json(str(old), {"host": "h1", "boot_id": "b1"})
    assert_private(old)
    assert json.loads(old.read_text()) == {"host": "h1", "boot_id": "b1"}


def test_state_lock_through_a_planted_link_is_refused(tmp_path, victim):
    sdir = tmp_path / "state"
    (sdir / "locks").mkdir(parents=True)
    os.symlink(str(victim), sdir / "locks" / "gpu-node-01.lock")
    with pytest.raises(_state.StateError):
        with _state.StateLock(str(sdir), "gpu-node-01", timeout=0):
            pass
    assert victim.read_text() == SECRET and mode(victim) == 0o644


def test_a_state_record_write_replaces_a_planted_link(tmp_path, victim):
    sdir = tmp_path / "state"
    (sdir / "replace").mkdir(parents=True)
    os.symlink(str(victim), sdir / "replace" / "h1.json")
    _state.atomic_write_json(str(sdir / "replace" / "h1.json"), {"host": "h1"})
    assert victim.read_text() == SECRET
    assert not os.path.islink(sdir / "replace" / "h1.json")
    assert_private(sdir / "replace" / "h1.json")


def _tiny_report():
    return {
        "schema": "gpuops.report/v1",
        "generated_at": "2026-12-02T10:00:00Z",
        "summary": {"nodes": 0},
        "nodes": {},
        "cluster_findings": [],
        "policy": {"hash": "x", "version": 1},
    }


def test_reports_are_private_and_replace_planted_links(tmp_path, victim, monkeypatch):
    monkeypatch.setattr(_inspect._report, "to_json", lambda r: "{}")
    monkeypatch.setattr(_inspect._report, "to_markdown", lambda r: "# r\n")
    monkeypatch.setattr(_inspect._report, "to_html", lambda r: "<html></html>")
    monkeypatch.setattr(_inspect._report, "to_prometheus", lambda r, generated_ts=None: "gpuops_up 1\n")
    rdir = tmp_path / "reports" / "run-1"
    rdir.parent.mkdir()
    rdir.mkdir()
    os.symlink(str(victim), rdir / "report.md")
    paths = _inspect.write_reports(_tiny_report(), str(rdir))
    assert set(paths) == {"json", "markdown", "html", "prometheus"}
    for key, path in paths.items():
        assert not os.path.islink(path)
        assert_private(path, (0o640,) if key == "prometheus" else (0o600,))
    assert victim.read_text() == SECRET
    assert sorted(os.listdir(rdir)) == ["gpuops.prom", "report.html", "report.json", "report.md"]
    new_dir = tmp_path / "reports" / "run-2" / "sub"
    _inspect.write_reports(_tiny_report(), str(new_dir))
    assert_private_dir(new_dir)
    assert_private_dir(new_dir.parent)


def test_replacement_records_and_bundles_are_private(tmp_path, run_action, victim):
    from ansible_collections.gpuops.cluster.plugins.action import replace_parts, replace_record

    sdir = tmp_path / "state"
    rec = _replace.new_record("T-1", "gpu-node-01", "gpu", "00000000:07:00.0")
    path = _replace.save_record(str(sdir), rec)
    assert_private(path)
    d = os.path.dirname(path)
    while os.path.realpath(d) != os.path.realpath(str(tmp_path)):
        assert_private_dir(d)
        d = os.path.dirname(d)
    # through the action: a link planted at the record's path is refused, never read or written through
    os.unlink(path)
    os.symlink(str(victim), path)
    args = {"action": "open", "state_dir": str(sdir), "ticket": "T-1", "host": "gpu-node-01", "part": "gpu",
            "component": "00000000:07:00.0"}  # fmt: skip
    out = run_action(replace_record, args)
    assert out["failed"] is True and "symbolic link" in out["msg"] and victim.read_text() == SECRET
    os.unlink(path)
    out = run_action(replace_record, args)
    assert not out.get("failed"), out
    assert_private(path)
    # the evidence bundle: every file 0600, every directory 0700
    bundle = tmp_path / "evidence" / "T-1" / "gpu-node-01"
    out = run_action(replace_parts, {"action": "manifest", "root": str(bundle), "ticket": "T-1", "host": "gpu-node-01",
                                     "part": "gpu", "serials": {"gpu": {}}, "write_serials": True,
                                     "write": {"bmc/remote.json": {"sel": []}}})  # fmt: skip
    assert not out.get("failed"), out
    for name in ("serials.json", "bmc/remote.json", "manifest.json"):
        assert_private(str(bundle / name))
    assert_private_dir(bundle / "bmc")


def test_upgrade_report_files_are_private(tmp_path, run_action, victim):
    run_dir = tmp_path / "upgrades" / "CHG-1"
    out = run_action(upgrade_report, {"run_dir": str(run_dir), "change_id": "CHG-1"})
    assert not out.get("failed"), out
    assert_private(out["json_path"])
    assert_private(out["markdown_path"])
    assert_private_dir(run_dir)
    os.unlink(out["markdown_path"])
    os.symlink(str(victim), out["markdown_path"])
    out = run_action(upgrade_report, {"run_dir": str(run_dir), "change_id": "CHG-1"})
    assert not out.get("failed") and victim.read_text() == SECRET and not os.path.islink(out["markdown_path"])


def test_onboarding_records_and_signoff_are_private(tmp_path, run_action):
    base = {"state_dir": str(tmp_path / "state"), "host": "n1", "node_class": "h100"}
    run_action(onboard_stage, dict(base, stage="inventory", problems=["GPU count 7"], ticket="T-1", by="a"))
    out = run_action(onboard_stage, dict(base, action="signoff"))
    assert not out.get("failed"), out
    for key in ("record", "signoff_json", "signoff_md"):
        assert_private(out["paths"][key])
    assert_private_dir(tmp_path / "state" / "onboarding")


# --- the live capture writer ----------------------------------------------------------------------------------


def test_live_capture_writes_private_files_and_never_through_a_link(tmp_path, victim, monkeypatch):
    monkeypatch.setattr(_livecapture, "which", lambda name: None)  # no tools: only node.json and capture.json
    dest = tmp_path / "cap"
    dest.mkdir()
    os.symlink(str(victim), dest / "capture.json")
    res = _livecapture.capture(
        dest_dir=str(dest), timeout=2, sysfs_root=str(tmp_path / "nosys"), node_options={"root": str(tmp_path)}
    )
    assert victim.read_text() == SECRET
    assert "capture.json" in res["files"]
    for name in res["files"]:
        assert not os.path.islink(dest / name)
        assert_private(dest / name)


def test_read_tree_ships_only_plain_files(tmp_path, victim):
    root = tmp_path / "cap"
    root.mkdir()
    (root / "ibstat.txt").write_text("CA 'mlx5_0'\n")
    os.symlink(str(victim), root / "kernel.log")
    os.mkfifo(root / "ipmitool-sel.txt")
    tree = _livecapture.read_tree(str(root))
    assert tree == {"ibstat.txt": "CA 'mlx5_0'\n"}
    (root / "big.txt").write_bytes(b"x" * 2000)
    with pytest.raises(ValueError):
        _livecapture.read_tree(str(root), max_bytes=1000)


def test_sysfs_capture_writes_private_files_and_never_through_a_link(tmp_path, victim):
    from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import ib as _ib

    hca = tmp_path / "root" / "sys" / "class" / "infiniband" / "mlx5_0"
    hca.mkdir(parents=True)
    (hca / "fw_ver").write_text("28.41.1000\n")
    dest = tmp_path / "cap"
    planted = dest / "infiniband-sysfs.txt"
    planted.parent.mkdir(parents=True)
    os.symlink(str(victim), planted)
    res = _ib.capture_sysfs(str(tmp_path / "root"), str(dest), timeout=None)
    assert res["hcas"] == ["mlx5_0"] and res["errors"] == []
    assert victim.read_text() == SECRET
    assert not os.path.islink(planted) and planted.read_text() == "./mlx5_0/fw_ver:28.41.1000\n"
    assert_private(planted)


def test_state_subdirs_of_an_older_install_are_narrowed_the_state_dir_is_not(tmp_path):
    sdir = tmp_path / "state"
    (sdir / "locks").mkdir(parents=True)
    (sdir / "locks").chmod(0o755)
    sdir.chmod(0o755)
    with _state.StateLock(str(sdir), "h1"):
        pass
    assert_private_dir(sdir / "locks")
    assert mode(sdir) == 0o755  # the operator's directory (it may be shared): its files are private instead


def test_ensure_private_dir_tolerates_a_directory_created_by_another_process(tmp_path, monkeypatch):
    """The race the guard's concurrency test hit: the directory appears between isdir() and lexists()."""
    target = tmp_path / "state" / "locks"
    real_isdir = os.path.isdir
    seen = []

    def racing_isdir(p):
        if str(p) == str(target) and not seen:
            seen.append(p)
            os.makedirs(str(target))  # another process wins the race here
            return False
        return real_isdir(p)

    monkeypatch.setattr(F.os.path, "isdir", racing_isdir)
    assert F.ensure_private_dir(str(target)) == str(target)
    assert seen and real_isdir(str(target))
