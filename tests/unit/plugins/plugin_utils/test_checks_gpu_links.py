# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU interconnect checks (_checks/gpu_links.py): PCIe, NVLink, fabric."""

from __future__ import annotations


from checks_helpers import PROFILE, facts, gpu, only, run


def test_idle_pcie_downshift_is_not_a_fault_but_under_load_it_is():
    idle = [gpu(i, pcie={"gen_current": 1}) for i in range(8)]
    assert run(facts(gpus=idle), PROFILE)[0] == []
    busy = [gpu(0, pcie={"gen_current": 3}, throttle={"active": []}, utilization={"gpu_pct": 95})]
    f = only(run(facts(gpus=busy))[0], "gpu.pcie", "gpu0", "gen")[0]
    assert (f["severity"], f["action"]) == ("P2", "reseat")


def test_pcie_width_needs_profile():
    narrow = [gpu(i, pcie={"width_current": 8}) for i in range(8)]
    assert not only(run(facts(gpus=narrow))[0], "gpu.pcie")
    assert len(only(run(facts(gpus=narrow), PROFILE)[0], "gpu.pcie", code="width")) == 8


def test_pcie_replay_rate_from_two_readings():
    _unused, st = run(facts(gpus=[gpu(0)]))
    # 600 replays in 10 minutes = 60/min > 1.92*16 = 30.72/min
    fs, st = run(
        facts(gpus=[gpu(0, pcie={"replay_counter": 600})], collected_at="2026-12-02T10:10:00Z"),
        state=st,
        now="2026-12-02T10:10:00Z",
    )
    f = only(fs, "gpu.pcie", "gpu0", "replay")[0]
    assert f["evidence"]["delta"] == 600
    # driver reload (counter went down): new baseline, no finding
    fs, _unused = run(
        facts(gpus=[gpu(0, pcie={"replay_counter": 5})], collected_at="2026-12-02T10:20:00Z"),
        state=st,
        now="2026-12-02T10:20:00Z",
    )
    assert not only(fs, "gpu.pcie")


# ------------------------------------------------------------------------------- nvlink, fabric, driver, diag


def test_nvlink_down_per_link_missing_needs_profile_and_crc_rate():
    links = [{"link": n, "state": "up" if n < 16 else "down", "errors": {}} for n in range(18)]
    g = [gpu(0, nvlink={"links": links})] + [gpu(i) for i in range(1, 8)]
    fs = only(run(facts(gpus=g))[0], "gpu.nvlink")  # a down link next to up links is evidence, profile or not
    assert [(f["component"], f["severity"], f["code"]) for f in fs] == [
        ("gpu0/nvlink16", "P1", "down"),
        ("gpu0/nvlink17", "P1", "down"),
    ]
    # all links down on a GPU with no profile: could be a PCIe-only card, no alarm
    alldown = [gpu(0, nvlink={"links": [{"link": n, "state": "down"} for n in range(4)]})]
    assert not only(run(facts(gpus=alldown))[0], "gpu.nvlink")
    assert len(only(run(facts(gpus=alldown), PROFILE)[0], "gpu.nvlink", code="down")) == 4
    few = [gpu(0, nvlink={"links": links[:12]})]
    assert not only(run(facts(gpus=few))[0], "gpu.nvlink")
    assert only(run(facts(gpus=few), PROFILE)[0], "gpu.nvlink", "gpu0", "missing")[0]["evidence"]["listed"] == 12
    _unused, st = run(facts(gpus=[gpu(0)]))
    bad = gpu(0)
    bad["nvlink"]["links"][5]["errors"] = {"replay": 0, "recovery": 2, "crc_flit": 70000, "crc_data": 0}
    fs, _unused = run(facts(gpus=[bad], collected_at="2026-12-02T10:10:00Z"), state=st, now="2026-12-02T10:10:00Z")
    assert only(fs, "gpu.nvlink", "gpu0/nvlink5", "crc")[0]["severity"] == "P2"
    assert only(fs, "gpu.nvlink", "gpu0/nvlink5", "recovery")


def test_fabric_states():
    f = only(run(facts(gpus=[gpu(0, fabric={"state": "In Progress", "status": None})]))[0], "gpu.fabric")[0]
    assert f["severity"] == "P2"
    f = only(run(facts(gpus=[gpu(0, fabric={"state": "Completed", "status": "Failure"})]))[0], "gpu.fabric")[0]
    assert f["severity"] == "P1"
    assert not only(run(facts(gpus=[gpu(0, fabric=None)]))[0], "gpu.fabric")
