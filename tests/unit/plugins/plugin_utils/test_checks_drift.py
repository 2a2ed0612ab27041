# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift checks (_checks/drift.py): the golden baseline."""

from __future__ import annotations

import copy


from ansible_collections.gpuops.cluster.plugins.plugin_utils import checks as C
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as S
from checks_helpers import HOST, NOW, facts, gpu, run


def test_drift_against_golden_baseline():
    base = C.make_baseline(facts(), NOW)
    st = S.empty_host_state(HOST)
    st["baseline"] = base
    assert run(facts(), state=st)[0] == []
    changed = facts(
        gpu={"driver_version": "550.54.15"},
        node={"kernel": "6.1.0-21-amd64"},
        gpus=[gpu(0, vbios_version="96.00.99.00.01")] + [gpu(i) for i in range(1, 8)],
    )
    changed["node"]["fabric_manager_version"] = "550.54.15"
    fs = run(changed, state=st)[0]
    codes = sorted((f["check"], f["component"], f["code"]) for f in fs)
    assert ("gpu.drift", "node", "driver_version") in codes
    assert ("gpu.drift", "gpu0", "vbios_version") in codes
    assert ("node.drift", "node", "kernel") in codes
    assert all(f["severity"] == "P3" for f in fs)


def test_golden_baseline_may_be_a_whole_facts_document():
    st = S.empty_host_state(HOST)
    st["baseline"] = facts(gpu={"driver_version": "535.129.03"})
    fs = run(facts(), state=st)[0]
    assert [(f["check"], f["code"]) for f in fs] == [("gpu.drift", "driver_version")]


def test_ib_and_bmc_drift():
    f = facts(bmc={"mc": {"firmware_revision": "1.10"}, "redfish": {"systems": [{"id": "1", "bios_version": "2.1"}]}})
    st = S.empty_host_state(HOST)
    st["baseline"] = C.make_baseline(f)
    f2 = copy.deepcopy(f)
    f2["ib"]["hcas"][1]["fw_version"] = "28.40.1000"
    f2["bmc"]["mc"]["firmware_revision"] = "1.20"
    f2["bmc"]["redfish"]["systems"][0]["bios_version"] = "2.3"
    got = sorted((x["check"], x["component"], x["code"]) for x in run(f2, state=st)[0])
    assert got == [
        ("bmc.drift", "bmc", "bios_version"),
        ("bmc.drift", "bmc", "firmware_revision"),
        ("ib.drift", "mlx5_1", "fw_version"),
    ]
