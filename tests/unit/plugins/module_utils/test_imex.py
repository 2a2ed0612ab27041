# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""IMEX state (issue 38): ``nvidia-imex-ctl -q`` / ``-N -j`` as DCGM's DcgmImexManager reads them
(gpu-knowledge-2026.md 3.4: one daemon word; the last "status" of the JSON; "Failed to read node configuration
file" = not configured), the live read through a stand-in binary, and the gpu.fabric judgement."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import gpu as G
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import imex as I

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "plugin_utils"))
from checks_helpers import facts, only, run  # noqa: E402

#: the shape DCGM parses: per-node entries with their own "status", the domain's status last
DOMAIN_JSON = (
    '{"nodes": {"0": {"host": "gb200-n01", "status": "READY", "version": "570.124"},'
    ' "1": {"host": "gb200-n02", "status": "UNAVAILABLE"}}, "timestamp": "12/2/2026 10:00:00", "status": "%s"}'
)


@pytest.mark.parametrize("word", I.DAEMON_STATES)
def test_every_daemon_state(word):
    assert I.parse_daemon(word + "\n") == {"configured": True, "daemon": word, "domain": None, "error": None}


@pytest.mark.parametrize("status", ["UP", "DOWN", "DEGRADED"])
def test_domain_status_is_the_last_one(status):
    assert I.parse_domain(DOMAIN_JSON % status)["domain"] == status


@pytest.mark.parametrize(
    "text, key, want",
    [
        ("Failed to read node configuration file /etc/nvidia-imex/nodes_config.cfg\n", "configured", False),
        ("", "error", "nvidia-imex-ctl -q: not a daemon state: ''"),
        ("Segmentation fault\n", "daemon", None),
        (None, "configured", None),
    ],
)
def test_daemon_unconfigured_empty_and_garbage(text, key, want):
    assert I.parse_daemon(text)[key] == want


@pytest.mark.parametrize("text", ['{"nodes": {}, "status": "SOMETHING"}', "not json at all", '{"status": "UP"'])
def test_domain_unknown_or_cut(text):
    res = I.parse_domain(text)
    assert res["domain"] == ("UP" if text.endswith('"UP"') else None)  # a cut document still names its status
    assert (res["error"] is None) == (res["domain"] is not None)


def _fake_ctl(tmp_path, daemon_out, domain_out, rc=0):
    path = tmp_path / "nvidia-imex-ctl"
    path.write_text(
        "#!/bin/sh\nif [ \"$1\" = -q ]; then printf '%%s' '%s'; else printf '%%s' '%s'; fi\nexit %d\n"
        % (daemon_out, domain_out, rc)
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_live_read_through_the_binary(tmp_path):
    res = {"errors": []}
    G._imex(res, _fake_ctl(tmp_path, "WAITING_FOR_PEERS\n", DOMAIN_JSON % "DEGRADED"))
    assert res == {"errors": [], "imex": {"configured": True, "daemon": "WAITING_FOR_PEERS", "domain": "DEGRADED"}}
    res = {"errors": []}
    G._imex(res, _fake_ctl(tmp_path, "Failed to read node configuration file x", "unused"))
    assert res == {"errors": [], "imex": {"configured": False, "daemon": None, "domain": None}}
    res = {"errors": []}
    G._imex(res, _fake_ctl(tmp_path, "garbage", "garbage"))
    assert [e["kind"] for e in res["errors"]] == ["parse"] and res["imex"]["daemon"] is None


def test_not_installed_leaves_no_imex_key(monkeypatch):
    monkeypatch.setattr(G, "which", lambda name: None)
    res = {"errors": []}
    G._imex(res)
    assert "imex" not in res and "imex" not in G._domain(res)


@pytest.mark.parametrize(
    "imex, want",
    [
        ({"configured": True, "daemon": "READY", "domain": "UP"}, []),
        ({"configured": False, "daemon": None, "domain": None}, []),
        ({"configured": True, "daemon": None, "domain": None}, []),  # unreadable: unknown, no finding
        ({"configured": True, "daemon": "WAITING_FOR_RECOVERY", "domain": "UP"}, [("P2", "monitor")]),
        ({"configured": True, "daemon": "UNAVAILABLE", "domain": None}, [("P1", "isolate")]),
        ({"configured": True, "daemon": "READY", "domain": "DOWN"}, [("P1", "isolate")]),
        ({"configured": True, "daemon": "READY", "domain": "DEGRADED"}, [("P2", "monitor")]),
    ],
)
def test_imex_judged(imex, want):
    fs = only(run(facts(gpu={"imex": imex}))[0], "gpu.fabric", "node", "imex")
    assert [(f["severity"], f["action"]) for f in fs] == want


# ------------------------------------------------------------------------------------ IMEX in a capture directory
# The files of docs/capture.md (nvidia-imex-ctl-q.txt, nvidia-imex-ctl-N-j.txt) holding the outputs of
# tests/fixtures/imex (formats of gpu-knowledge-2026.md 3.4; see its SOURCE).
IMEX_FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "imex")


def _fix(name):
    with open(os.path.join(IMEX_FIX, name), encoding="utf-8") as fh:
        return fh.read()


def _capture_dir(tmp_path, daemon=None, domain=None, meta=None):
    import json

    if daemon is not None:
        (tmp_path / "nvidia-imex-ctl-q.txt").write_text(daemon)
    if domain is not None:
        (tmp_path / "nvidia-imex-ctl-N-j.txt").write_text(domain)
    if meta is not None:
        (tmp_path / "capture.json").write_text(json.dumps({"schema": "gpuops.capture/v1", "files": meta}))
    return str(tmp_path)


def test_capture_file_list_names_the_imex_files():
    from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import capture as C

    assert "nvidia-imex-ctl-q.txt" in C.FILES and "nvidia-imex-ctl-N-j.txt" in C.FILES


def test_a_capture_with_imex_output_is_read(tmp_path):
    d = _capture_dir(tmp_path, _fix("daemon-waiting.txt"), _fix("domain-degraded.json"))
    gpu = G.collect(capture_dir=d)
    # -q: one word; -N -j: the LAST "status" (the domain's, after the per-node READY / UNAVAILABLE)
    assert gpu["imex"] == {"configured": True, "daemon": "WAITING_FOR_PEERS", "domain": "DEGRADED"}
    assert not [e for e in gpu["errors"] if e.get("parser") == "imex"]
    # and the judgement reads it as it reads a live node's: DEGRADED domain -> P2 monitor (test_imex_judged)
    fs = only(run(facts(gpu={"imex": gpu["imex"]}))[0], "gpu.fabric", "node", "imex")
    assert [(f["severity"], f["action"]) for f in fs] == [("P2", "monitor")]


def test_a_capture_of_an_unconfigured_node(tmp_path):
    d = _capture_dir(tmp_path, _fix("not-configured.txt"), _fix("not-configured.txt"))
    gpu = G.collect(capture_dir=d)
    assert gpu["imex"] == {"configured": False, "daemon": None, "domain": None} and not gpu["errors"]


def test_the_message_on_stderr_recorded_in_capture_json(tmp_path):
    meta = {"nvidia-imex-ctl-q.txt": {"rc": 1, "stderr": _fix("not-configured.txt")}}
    gpu = G.collect(capture_dir=_capture_dir(tmp_path, "", None, meta))
    assert gpu["imex"]["configured"] is False


def test_only_the_daemon_file(tmp_path):
    gpu = G.collect(capture_dir=_capture_dir(tmp_path, _fix("daemon-ready.txt")))
    assert gpu["imex"] == {"configured": True, "daemon": "READY", "domain": None}


@pytest.mark.parametrize(
    "daemon, domain, want_domain",
    [
        ("Segmentation fault\n", '{"nodes": {}, "status": "SOMETHING"}', None),  # garbage and an unknown word
        (None, _fix("domain-degraded.json")[:60], None),  # cut before the domain's status: only a node's READY
        (None, _fix("domain-degraded.json").rstrip()[:-1], "DEGRADED"),  # cut after it: still read
    ],
)
def test_broken_and_truncated_imex_files(tmp_path, daemon, domain, want_domain):
    gpu = G.collect(capture_dir=_capture_dir(tmp_path, daemon, domain))
    assert gpu["imex"]["domain"] == want_domain
    errors = [e for e in gpu["errors"] if e.get("parser") == "imex"]
    assert [e["kind"] for e in errors] == ([] if want_domain else ["parse"])


def test_no_imex_file_tool_missing_timeout_or_a_link(tmp_path):
    (tmp_path / "a").mkdir()
    assert "imex" not in G.collect(capture_dir=_capture_dir(tmp_path / "a"))  # no IMEX file: not captured
    # the capture ran without the tool: an empty file and capture.json's error: not installed, nothing to judge
    meta = {"nvidia-imex-ctl-q.txt": {"rc": None, "error": "nvidia-imex-ctl not found on PATH"}}
    (tmp_path / "b").mkdir()
    assert "imex" not in G.collect(capture_dir=_capture_dir(tmp_path / "b", "", None, meta))
    (tmp_path / "c").mkdir()
    meta = {"nvidia-imex-ctl-N-j.txt": {"rc": 124, "timed_out": True, "stderr": ""}}
    gpu = G.collect(capture_dir=_capture_dir(tmp_path / "c", None, "", meta))
    assert [e["kind"] for e in gpu["errors"] if "imex" in str(e.get("source"))] == ["timeout"]
    (tmp_path / "d").mkdir()
    os.symlink("/etc/hostname", str(tmp_path / "d" / "nvidia-imex-ctl-q.txt"))
    gpu = G.collect(capture_dir=str(tmp_path / "d"))
    assert "imex" not in gpu and any("nvidia-imex-ctl-q.txt" in str(e.get("source")) for e in gpu["errors"])
