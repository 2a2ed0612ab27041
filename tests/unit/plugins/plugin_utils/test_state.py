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


def test_a_document_is_named_normalized_and_stored_without_its_stamp():
    """docs/state.md: a host document is gpuops.state/v1 with every section; the store keeps it as sorted, compact
    JSON without updated_at (state_text), so a repeat run over unchanged evidence compares equal."""
    older = {"boot_id": "b1", "ib": "garbage", "updated_at": "2026-12-01T00:00:00Z", "custom": 1}
    doc = S.document("gpu-node-01", older)
    text = S.state_text(doc)
    assert json.loads(text) == {
        "schema": "gpuops.state/v1", "host": "gpu-node-01", "boot_id": "b1", "boot_seen_at": None,
        "ib": {"ports": {}}, "gpu": {"gpus": {}}, "clears": {}, "resets": [], "escalation": [], "active_faults": {},
        "baseline": None, "custom": 1,
    }  # fmt: skip
    assert text.startswith('{"active_faults":{},"baseline":null,"boot_id":"b1",') and " " not in text
    assert S.state_text(dict(doc, updated_at="2026-12-05T10:00:00Z")) == text


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
