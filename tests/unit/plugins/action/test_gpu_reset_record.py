# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.gpu_reset_record: the reset lands in the host's state (resets + clear marker)."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cluster.plugins.action import gpu_reset_record as A
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state_store as _state_store

BUS = "00000000:18:00.0"


def _args(tmp_path, **extra):
    args = {"state_dir": str(tmp_path), "host": "gpu-node-03", "gpus": [{"bus_id": BUS, "serial": "S1"}],
            "time": "2026-12-02T10:00:00Z"}  # fmt: skip
    args.update(extra)
    return {k: v for k, v in args.items() if v is not None}  # None: the argument is not given


def _stored(tmp_path, host="gpu-node-03", fn=None):
    """The host's state in the store of the state directory (its embedded SQLite file); ``fn``: update it first."""
    store = _state_store.open_state(str(tmp_path))
    try:
        return store.update_host(host, fn) if fn else store.load_host(host)
    finally:
        store.close()


def test_records_resets_and_clear_markers(tmp_path, run_action):
    out = run_action(A, _args(tmp_path, gpus=[{"bus_id": BUS, "serial": "S1"}, {"bus_id": "00000000:19:00.0"}]))
    assert out["changed"] is True and out["recorded"] == 2 and "diff" not in out
    assert out["path"] == "sqlite:///%s host_state[gpu-node-03]" % (tmp_path / "gpuops.db")
    hs = _stored(tmp_path)
    assert hs["resets"] == [
        {"bus_id": BUS, "serial": "S1", "time": "2026-12-02T10:00:00Z"},
        {"bus_id": "00000000:19:00.0", "serial": None, "time": "2026-12-02T10:00:00Z"},
    ]
    assert out["resets"] == hs["resets"]
    assert hs["clears"] == {BUS: "2026-12-02T10:00:00Z", "00000000:19:00.0": "2026-12-02T10:00:00Z"}


def test_keeps_the_rest_of_the_host_state_and_defaults_to_now(tmp_path, run_action):
    _stored(tmp_path, fn=lambda s: s.update(boot_id="b1"))
    out = run_action(A, _args(tmp_path, time=None, gpus=[{"bus_id": BUS}]))
    hs = _stored(tmp_path)
    assert hs["boot_id"] == "b1" and hs["resets"][0]["time"].endswith("Z")
    assert out["resets"][0]["time"] == hs["resets"][0]["time"]


def test_check_mode_writes_nothing_and_diff_shows_the_change(tmp_path, run_action):
    out = run_action(A, _args(tmp_path), check_mode=True, diff=True)
    assert out["changed"] is True and out["recorded"] == 1
    assert out["diff"]["before"] == {"resets": [], "clears": {}}
    assert out["diff"]["after"]["clears"] == {BUS: "2026-12-02T10:00:00Z"}
    assert not (tmp_path / "hosts").exists() and _stored(tmp_path)["resets"] == []


@pytest.mark.parametrize(
    "extra,msg",
    [
        ({"host": "../etc"}, "invalid host name"),
        ({"time": "yesterday"}, "not a time"),
        ({"gpus": [{"serial": "S1"}]}, "bus_id"),
        ({"gpus": None}, "gpus"),
        ({"state_dir": None}, "state_dir"),
        ({"state_dir": ""}, "needs a state directory"),
    ],
)
def test_refuses_bad_input_and_writes_nothing(tmp_path, run_action, monkeypatch, extra, msg):
    monkeypatch.chdir(tmp_path)  # an empty state_dir must not become the current directory
    out = run_action(A, _args(tmp_path, **extra))
    assert (out.get("failed"), msg in out.get("msg", "")) == (True, True), out
    assert list(tmp_path.iterdir()) == []  # no hosts/, no locks/, nothing


def test_a_corrupt_old_host_state_file_is_not_imported_nor_overwritten(tmp_path, run_action):
    """A state file an older collection left (hosts/<host>.json) that is not JSON: the first open refuses to import
    it, naming it, and the reset is not recorded over it."""
    (tmp_path / "hosts").mkdir()
    (tmp_path / "hosts" / "gpu-node-03.json").write_text("{broken")
    out = run_action(A, _args(tmp_path))
    assert out["failed"] is True and "cannot import the old state file" in out["msg"] and "Traceback" not in out["msg"]
    assert str(tmp_path / "hosts" / "gpu-node-03.json") in out["msg"]
    assert (tmp_path / "hosts" / "gpu-node-03.json").read_text() == "{broken"
