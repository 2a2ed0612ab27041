# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import json
import multiprocessing
import os
import time

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as S


def test_missing_file_and_missing_dir_give_empty_state(tmp_path):
    st = S.load_host_state(str(tmp_path / "nope"), "gpu-node-01")
    assert st["host"] == "gpu-node-01"
    assert st["active_faults"] == {} and st["resets"] == [] and st["ib"] == {"ports": {}}
    assert S.load_host_state(None, "h")["schema"] == S.HOST_STATE_SCHEMA


def test_save_load_roundtrip_is_atomic(tmp_path):
    d = str(tmp_path)
    st = S.empty_host_state("gpu-node-01")
    st["boot_id"] = "b1"
    st["ib"]["ports"]["mlx5_0/1"] = {"collected_at": 1.0, "counters": {"symbol_error": 3}}
    assert S.save_host_states(d, {"gpu-node-01": st}) == 1
    path = S.host_state_path(d, "gpu-node-01")
    assert path == os.path.join(d, "hosts", "gpu-node-01.json")
    assert os.listdir(os.path.dirname(path)) == ["gpu-node-01.json"]  # no temporary file left
    back = S.load_host_state(d, "gpu-node-01")
    assert back["boot_id"] == "b1"
    assert back["ib"]["ports"]["mlx5_0/1"]["counters"]["symbol_error"] == 3
    assert back["updated_at"]


def test_corrupt_file_raises_or_resets(tmp_path):
    d = str(tmp_path)
    os.makedirs(os.path.join(d, "hosts"))
    p = os.path.join(d, "hosts", "h1.json")
    with open(p, "w") as fh:
        fh.write('{"active_faults": {"x": ')
    with pytest.raises(S.StateError, match="corrupt"):
        S.load_host_state(d, "h1")
    st = S.load_host_state(d, "h1", on_corrupt="reset")
    assert st["active_faults"] == {}
    assert any(n.startswith("h1.json.corrupt-") for n in os.listdir(os.path.join(d, "hosts")))


def test_older_or_partial_state_is_normalized(tmp_path):
    st = S.normalize_host_state({"boot_id": "b", "ib": "garbage", "resets": None, "custom": 1}, "h")
    assert st["ib"] == {"ports": {}} and st["resets"] == [] and st["custom"] == 1 and st["boot_id"] == "b"


@pytest.mark.parametrize("bad", ["../etc/passwd", "a/b", "", "..", "x y"])
def test_unsafe_host_names_are_rejected(tmp_path, bad):
    with pytest.raises(S.StateError):
        S.host_state_path(str(tmp_path), bad)


def test_record_gpu_reset_sets_clear_marker_both_shapes():
    hs = S.empty_host_state("h")
    S.record_gpu_reset(hs, "h", "00000000:18:00.0", "S1", "2026-12-02T10:00:00Z")
    assert hs["resets"][-1] == {"bus_id": "00000000:18:00.0", "serial": "S1", "time": "2026-12-02T10:00:00Z"}
    assert hs["clears"]["00000000:18:00.0"] == "2026-12-02T10:00:00Z"
    whole = {"hosts": {}}
    S.record_gpu_reset(whole, "h2", "00000000:19:00.0", None, "2026-12-02T11:00:00Z")
    assert whole["hosts"]["h2"]["resets"][0]["bus_id"] == "00000000:19:00.0"


def _hold(d, name, q):
    with S.StateLock(d, name, timeout=5):
        q.put("locked")
        time.sleep(0.6)


def test_state_lock_excludes_other_processes_and_times_out(tmp_path):
    d = str(tmp_path)
    q = multiprocessing.get_context("fork").Queue()
    p = multiprocessing.get_context("fork").Process(target=_hold, args=(d, "isolation", q))
    p.start()
    try:
        assert q.get(timeout=5) == "locked"
        with pytest.raises(S.StateError, match="timed out"):
            S.StateLock(d, "isolation", timeout=0.1).acquire()
        t0 = time.monotonic()
        with S.StateLock(d, "isolation", timeout=5):
            assert time.monotonic() - t0 > 0.1
    finally:
        p.join(5)
    # same process, two objects: they exclude each other too
    with S.StateLock(d, "audit", timeout=1):
        with pytest.raises(S.StateError):
            S.StateLock(d, "audit", timeout=0).acquire()


def test_private_dir_survives_a_concurrent_mkdir_but_not_a_file(tmp_path, monkeypatch):
    calls = []
    real = S.ensure_private_dir

    def racing(path, tighten=False):
        calls.append(path)
        if len(calls) == 1:  # another process created it between the isdir and lexists checks
            os.mkdir(path, 0o700)
            raise NotADirectoryError(20, "not a directory", path)
        return real(path, tighten=tighten)

    monkeypatch.setattr(S, "ensure_private_dir", racing)
    assert S.private_dir(str(tmp_path / "locks"), tighten=True) == str(tmp_path / "locks") and len(calls) == 2
    monkeypatch.setattr(S, "ensure_private_dir", real)
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        S.private_dir(str(tmp_path / "file"))


def test_record_times_are_utc_with_z_and_junk_is_refused():
    import datetime

    hs = S.empty_host_state("h")
    S.record_gpu_reset(
        hs,
        "h",
        "b1",
        None,
        datetime.datetime(2026, 12, 2, 11, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
    )
    S.record_clear(hs, "h", "b2", 1796205600)
    assert hs["resets"][0]["time"] == "2026-12-02T10:00:00Z" and hs["clears"]["b1"] == "2026-12-02T10:00:00Z"
    assert hs["clears"]["b2"] == "2026-12-02T10:00:00Z"
    with pytest.raises(S.StateError, match="not a time"):
        S.record_clear(hs, "h", "b3", "soon")
    assert "b3" not in hs["clears"]


def test_a_state_compared_with_its_file_bytes_is_unchanged_or_rewritten_whole(tmp_path):
    """encode_if_changed(previous_file=...): the worker's comparison with the file it read (issue 17)."""
    d = str(tmp_path)
    st = S.empty_host_state("gpu-node-01")
    st["ib"]["ports"]["mlx5_0/1"] = {"collected_at": 1.0, "counters": {"symbol_error": 3}}
    S.save_host_states(d, {"gpu-node-01": st})
    loaded, raw = S.load_host_state_file(d, "gpu-node-01")
    assert raw == open(S.host_state_path(d, "gpu-node-01"), "rb").read()
    stamp = "2026-12-05T10:00:00Z"
    # the same state (changed in place and back, as an evaluation may): nothing to write
    loaded["ib"]["ports"]["mlx5_0/1"]["counters"]["symbol_error"] = 3
    assert S.encode_if_changed("gpu-node-01", loaded, None, stamp, (raw, loaded["updated_at"])) is None
    # a changed counter: the whole file, with the new stamp, as save_host_states writes it
    loaded["ib"]["ports"]["mlx5_0/1"]["counters"]["symbol_error"] = 4
    body = S.encode_if_changed("gpu-node-01", loaded, None, stamp, (raw, loaded["updated_at"]))
    doc = json.loads(body)
    assert doc["updated_at"] == stamp and doc["ib"]["ports"]["mlx5_0/1"]["counters"]["symbol_error"] == 4
    assert body == S.encode_if_changed("gpu-node-01", loaded, {}, stamp)  # the layout of the other path
    # no file (raw None) or a file without a stamp: written
    assert S.encode_if_changed("gpu-node-01", loaded, None, stamp, (None, None)) == body
    assert S.encode_if_changed("gpu-node-01", loaded, None, stamp, (raw, None)) == body


def test_a_state_file_in_the_indented_layout_is_rewritten_once_in_the_compact_one(tmp_path):
    """An older collection's isolation and reset records wrote indented JSON: byte-compared, it reads as changed and
    is rewritten as the same document; from then on it compares equal."""
    d = str(tmp_path)
    st = S.document("h1", S.empty_host_state("h1"))
    st.update(boot_id="b1", updated_at="2026-12-01T00:00:00Z")
    S.atomic_write_json(S.host_state_path(d, "h1"), st)  # indent=1, as the older save_host_state wrote it
    loaded, raw = S.load_host_state_file(d, "h1")
    assert b"\n " in raw  # indented
    body = S.encode_if_changed("h1", loaded, None, "2026-12-05T10:00:00Z", (raw, loaded["updated_at"]))
    assert body is not None and S.state_text(json.loads(body)) == S.state_text(json.loads(raw))
    S.save_host_states(d, {"h1": body})
    loaded, raw = S.load_host_state_file(d, "h1")
    assert S.encode_if_changed("h1", loaded, None, "2026-12-06T10:00:00Z", (raw, loaded["updated_at"])) is None
