# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 37 "done means" for storage: a cluster capture directory holding only what an operator typed (``lfs df -h``
with its prompt line, ``mmhealth node show -Y``) goes through the real offline inspection (the inspect_cluster
step, gpuops_cluster_capture_dir, report.json) and yields the faults in it (a full OST, a degraded GPFS filesystem)
and nothing for healthy outputs. The outputs are real (tests/fixtures/storage/*.source.txt); the expected faults
are what the outputs themselves print (Use% 100 on myth-OST0001, DEGRADED on kyukonhome)."""

from __future__ import annotations

import json
import os

from ansible_collections.gpuops.cluster.plugins.action import inspect_cluster

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "storage")


def fx(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return fh.read()


def inspect(run_action, tmp_path, files):
    cap = tmp_path / "cluster-capture"
    cap.mkdir()
    for name, text in files.items():
        (cap / name).write_text(text)
    hv = {
        "n1": {
            "inventory_hostname": "n1",
            "gpuops_cluster_capture_dir": str(cap),
            "__inspect_collect": {"facts": {"schema": "gpuops.facts/v1", "mode": "live", "errors": []}},
        }
    }
    args = {"targets": ["n1"], "report_dir": str(tmp_path / "reports"), "include_facts": False}
    res = run_action(inspect_cluster, args, task_vars={"hostvars": hv})
    assert not res.get("failed"), res.get("msg")
    with open(res["reports"]["json"], encoding="utf-8") as fh:
        report = json.load(fh)
    return {(f["check"], f["component"], f["code"]): f for f in report["summary"]["cluster_findings"]}


def test_operator_typed_storage_capture_yields_its_faults(run_action, tmp_path):
    got = inspect(
        run_action,
        tmp_path,
        {
            "lfs-df-h.txt": "[root@login1 ~]# lfs df -h\n" + fx("lustre-manual-myth-lfs-df-h-ost-full.txt"),
            "mmhealth.txt": "$ mmhealth node show -Y\n" + fx("vsc-mmhealth-node-show-Y-fs-degraded.txt"),
        },
    )
    full = got[("storage.capacity", "storage:myth/myth-OST0001", "space")]
    assert full["severity"] == "P1" and full["evidence"]["used_pct"] == 100
    fsdeg = got[("storage.health", "storage:server:gpfs:nsd03.gastly.data:FILESYSTEM/kyukonhome", "degraded")]
    assert (fsdeg["severity"], fsdeg["action"]) == ("P2", "contact_vendor")
    assert "unmounted_fs_check" in fsdeg["message"]
    assert not [k for k in got if k[0] == "collector.error"]  # partial capture: unknown parts, not P2 alarms
    health = [k for k in got if k[0] == "storage.health"]
    assert health == [("storage.health", "storage:server:gpfs:nsd03.gastly.data:FILESYSTEM/kyukonhome", "degraded")]


def test_operator_typed_healthy_storage_capture_yields_nothing(run_action, tmp_path):
    got = inspect(
        run_action,
        tmp_path,
        {
            "lfs-df-h.txt": "$ lfs df -h\n" + fx("lustre-manual-lfs-df-h.txt"),
            "mmhealth.txt": fx("vsc-mmhealth-node-show-Y-healthy-subset.txt"),
        },
    )
    assert got == {}
