# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Optics evidence collection (_ib_optics.py through _ib.collect and _livecapture): capture files, live tools
(fake mlxlink/ethtool on PATH over a fake sysfs tree), broken and unsupported answers."""

from __future__ import annotations

import os
import shutil

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    ib as _ib,
    ib_optics as _ib_optics,
    livecapture as _livecapture,
)
from tool_helpers import write_tool as _tool

FIX = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures"))


def fixture(kind, name):
    return os.path.join(FIX, kind, name)


def fake_sysfs(root):
    """mlx5_0: an InfiniBand port; mlx5_1: a RoCE port whose netdev is ens9f0np0."""
    for hca, layer in (("mlx5_0", "InfiniBand"), ("mlx5_1", "Ethernet")):
        p = root / "sys" / "class" / "infiniband" / hca / "ports" / "1"
        p.mkdir(parents=True)
        (p / "state").write_text("4: ACTIVE\n")
        (p / "phys_state").write_text("5: LinkUp\n")
        (p / "rate").write_text("400 Gb/sec (4X NDR)\n")
        (p / "link_layer").write_text(layer + "\n")
        (root / "sys" / "class" / "infiniband" / hca / "fw_ver").write_text("28.39.1002\n")
    (root / "sys" / "class" / "infiniband" / "mlx5_1" / "device" / "net" / "ens9f0np0").mkdir(parents=True)
    return root


def test_capture_files_are_merged_into_ib_facts(tmp_path):
    cap = tmp_path / "cap"
    cap.mkdir()
    shutil.copy(fixture("mlxlink", "derived-osfp-ndr-rx-low-warning.txt"), str(cap / "mlxlink-mlx5_0.txt"))
    shutil.copy(fixture("mlxlink", "sigcomm26-bf3-qsfp28-dac-no-ddm.txt"), str(cap / "mlxlink-mlx5_1.txt"))
    shutil.copy(fixture("mlxlink", "broken-not-supported-only.txt"), str(cap / "mlxlink-mlx5_2.txt"))
    shutil.copy(fixture("mlxlink", "broken-garbled.txt"), str(cap / "mlxlink-mlx5_3.txt"))
    shutil.copy(fixture("ethtool-m", "cumulus-qsfp28-sr4-mellanox.txt"), str(cap / "ethtool-m-ens9f0np0.txt"))
    shutil.copy(fixture("ethtool-m", "unsupported-netlink.txt"), str(cap / "ethtool-m-ens10f0.txt"))
    shutil.copy(fixture("ethtool-S", "mlx5-roce-prio3-pfc.txt"), str(cap / "ethtool-S-ens9f0np0.txt"))
    (cap / "mlxlink-..evil.txt").write_text("x")  # a name outside the pattern is ignored
    os.symlink("/etc/passwd", str(cap / "mlxlink-mlx5_9.txt"))  # a link is refused, never followed
    ib = _ib.collect(capture_dir=str(cap))
    # no sysfs copy, no ibstat.txt: the ib domain is read from what mlxlink shows (a partial capture on its own)
    assert ib["source"] == "capture:mlxlink"
    assert [(h["name"], h["ports"][0]["state"], h["ports"][0]["rate_gbps"]) for h in ib["hcas"]] == [
        ("mlx5_0", "ACTIVE", 400.0),
        ("mlx5_1", "ACTIVE", None),
    ]
    recs = {r["component"]: r for r in ib["optics"]}
    assert set(recs) == {"mlx5_0/1", "mlx5_1/1", "mlx5_2/1", "net:ens9f0np0", "net:ens10f0"}
    assert recs["mlx5_0/1"]["module"]["rx_power_dbm"][1] == -8.15 and recs["mlx5_0/1"]["tool"] == "mlxlink"
    assert recs["mlx5_0/1"]["module"]["voltage_v"] == pytest.approx(3.2612)
    assert recs["mlx5_0/1"]["module"]["thresholds"]["voltage_v"]["low_alarm"] == pytest.approx(2.97)
    assert recs["mlx5_1/1"]["module"]["ddm"] is False and recs["mlx5_1/1"]["phy"]["effective_ber"] == 0.0
    assert recs["mlx5_2/1"]["unsupported"] is True  # "not supported" is no error and no fault
    assert recs["net:ens10f0"]["unsupported"] is True and recs["net:ens10f0"]["module"] is None
    assert recs["net:ens9f0np0"]["module"]["thresholds"]["rx_power_dbm"]["low_warning"] == -10.3
    assert ib["netdev_counters"]["ens9f0np0"]["counters"]["rx_prio3_pause"] == 1523
    kinds = sorted((e["kind"], e["source"]) for e in ib["errors"])
    assert ("parse", "mlxlink-mlx5_3.txt") in kinds
    assert [k for k, src in kinds if src.endswith("mlxlink-mlx5_9.txt")] == ["unreadable"]
    assert not any(e["source"] == "mlxlink-mlx5_2.txt" for e in ib["errors"])


def test_live_collection_runs_each_tool_once_per_port(tmp_path, fake_path):
    root = fake_sysfs(tmp_path / "root")
    log = tmp_path / "calls.log"
    _tool(fake_path, "mlxlink", 'echo "mlxlink $*" >> "%s"; cat "%s"' % (
        log, fixture("mlxlink", "derived-osfp-ndr-high-effective-ber.txt")))  # fmt: skip
    _tool(fake_path, "ethtool", 'echo "ethtool $*" >> "%s"; if [ "$1" = "-m" ]; then cat "%s"; else cat "%s"; fi' % (
        log, fixture("ethtool-m", "cumulus-qsfp28-sr4-mellanox.txt"), fixture("ethtool-S", "mlx5-roce-prio3-pfc.txt")))  # fmt: skip
    ib = _ib.collect(sysfs_root=str(root), timeout=10)
    assert ib["source"] == "sysfs"
    calls = log.read_text().splitlines()
    assert calls == ["mlxlink -d mlx5_0 -m -c", "ethtool -m ens9f0np0", "ethtool -S ens9f0np0"]
    comps = {r["component"]: r for r in ib["optics"]}
    assert comps["mlx5_0/1"]["phy"]["effective_ber"] == pytest.approx(2e-10)
    assert comps["net:ens9f0np0"]["module"]["vendor"] == "Mellanox"
    assert "ens9f0np0" in ib["netdev_counters"]


def test_live_without_tools_adds_nothing_and_a_hung_tool_is_a_timeout(tmp_path, fake_path, monkeypatch):
    root = fake_sysfs(tmp_path / "root")
    ib = _ib.collect(sysfs_root=str(root), timeout=10)
    assert "optics" not in ib and not ib["errors"]
    _tool(fake_path, "mlxlink", "sleep 30")
    monkeypatch.setattr(_ib_optics, "PER_CALL_TIMEOUT_S", 1.0)
    ib = _ib.collect(sysfs_root=str(root), timeout=10)
    assert [e["kind"] for e in ib["errors"]] == ["timeout"] and "optics" not in ib


def test_livecapture_saves_the_optics_files(tmp_path, fake_path):
    root = fake_sysfs(tmp_path / "root")
    _tool(fake_path, "mlxlink", 'cat "%s"' % fixture("mlxlink", "derived-osfp-ndr-rx-low-warning.txt"))
    _tool(fake_path, "ethtool", 'echo "netlink error: Operation not supported" >&2; exit 95')
    res = _livecapture.capture(dest_dir=str(tmp_path / "cap"), timeout=10, sysfs_root=str(root),
                               node_options={"services": []})  # fmt: skip
    assert {"mlxlink-mlx5_0.txt", "ethtool-m-ens9f0np0.txt", "ethtool-S-ens9f0np0.txt"} <= set(res["files"])
    assert res["meta"]["files"]["ethtool-m-ens9f0np0.txt"]["rc"] == 95
    ib = _ib.collect(capture_dir=res["dir"])
    comps = {r["component"]: r for r in ib["optics"]}
    assert comps["mlx5_0/1"]["module"]["rx_power_dbm"][1] == -8.15
    assert comps["net:ens9f0np0"]["unsupported"] is True
    assert not [e for e in ib["errors"] if "ethtool" in str(e["source"])]


def test_an_mlxlink_error_only_file_is_a_tool_error(tmp_path):
    cap = tmp_path / "cap"
    cap.mkdir()
    (cap / "mlxlink-mlx5_0.txt").write_text("-E- Failed to open device: mlx5_0, Permission denied\n")
    ib = _ib.collect(capture_dir=str(cap))
    assert [(e["kind"], e["source"]) for e in ib["errors"]] == [("tool_error", "mlxlink-mlx5_0.txt")]
    assert "optics" not in ib
