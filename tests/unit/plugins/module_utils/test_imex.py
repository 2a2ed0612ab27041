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
