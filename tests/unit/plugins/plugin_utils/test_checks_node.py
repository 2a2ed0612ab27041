# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node checks (_checks/node.py, _checks/domains.py): mounts, services, fabric manager, collector errors."""

from __future__ import annotations


from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.cluster import node_status
from checks_helpers import PROFILE, facts, only, run


def test_mounts_services_fabric_manager():
    node = {
        "mounts": [
            {"path": "/lustre", "present": True, "responsive": False, "error": "timeout"},
            {"path": "/scratch", "present": True, "responsive": True, "free_pct": 1.0},
            {"path": "/home", "present": False},
        ],
        "services": {
            "nvidia-persistenced": {"running": False},
            "nvidia-fabricmanager": {"running": False, "version": "535.161.08"},
        },
    }
    fs = run(facts(node=node), PROFILE)[0]
    assert only(fs, "node.mounts", "mount:/lustre", "hung")[0]["severity"] == "P1"
    assert only(fs, "node.mounts", "mount:/scratch", "full")[0]["severity"] == "P2"
    assert not only(fs, "node.mounts", "mount:/home")  # not in the profile
    assert only(fs, "node.services", "service:nvidia-persistenced")[0]["severity"] == "P2"
    assert only(fs, "node.fabric_manager", code="not_running")[0]["severity"] == "P1"
    # no profile: FM not running on unknown hardware is no alarm
    assert not only(run(facts(node=node))[0], "node.fabric_manager")
    mism = facts(
        node={
            "fabric_manager_version": "535.154.05",
            "services": {"nvidia-fabricmanager": {"running": True, "version": "535.154.05"}},
        }
    )
    assert only(run(mism)[0], "node.fabric_manager", code="version_mismatch")[0]["severity"] == "P1"


def test_collector_errors():
    errs = [
        {"domain": "gpu", "kind": "timeout", "message": "nvidia-smi timed out after 60 s", "source": "nvidia-smi"},
        {"domain": "ib", "kind": "parse", "message": "bad line", "source": "ibstat", "line": 3},
        {"domain": "ib", "kind": "parse", "message": "bad line 2", "source": "ibstat", "line": 9},
    ]
    fs = run(facts(errors=errs))[0]
    g = only(fs, "collector.error", "collector:gpu", "timeout")[0]
    assert (g["severity"], g["action"]) == ("P1", "reboot") and g["evidence"]["required"] is True
    i = only(fs, "collector.error", "collector:ib", "parse")[0]
    assert i["severity"] == "P2" and i["evidence"]["count"] == 2 and i["evidence"]["required"] is False
    fs = run(facts(errors=[{"domain": "gpu", "kind": "parse", "message": "truncated XML"}]))[0]
    assert node_status(fs) == "error"
    fs = run(facts(errors=errs[1:]))[0]
    assert node_status(fs) == "degraded"
