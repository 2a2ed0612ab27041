# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The storage parsers on real outputs (tests/fixtures/storage/*.source.txt) and on broken ones."""

from __future__ import annotations

import glob
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import storage as sp
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import storage_gpfs as sg
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "storage")


def fx(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return fh.read()


def test_every_fixture_records_its_source():
    data = [f for f in glob.glob(os.path.join(FIX, "*.txt")) if not f.endswith(".source.txt")]
    assert len(data) >= 20
    for f in data:
        assert os.path.exists(f[: -len(".txt")] + ".source.txt"), f


def test_lfs_df_h_manual_ost_full():
    (fs,) = sp.parse_lfs_df(fx("lustre-manual-myth-lfs-df-h-ost-full.txt"))
    assert (fs["name"], fs["mount"], fs["mode"]) == ("myth", "/myth", "bytes")
    by = {t["name"]: t for t in fs["targets"]}
    assert by["myth-OST0001"]["used_pct"] == 100 and by["myth-OST0001"]["avail"] == 64 * 1024
    assert by["myth-MDT0000"]["kind"] == "MDT" and by["myth-OST0003"]["index"] == 3
    assert fs["summary"]["used_pct"] == 85


def test_lfs_df_i_manual_mdt_out_of_inodes():
    (fs,) = sp.parse_lfs_df(fx("lustre-manual-myth-lfs-df-i-mdt-inodes-full.txt"))
    assert fs["mode"] == "inodes"
    assert fs["targets"][0]["name"] == "myth-MDT0000" and fs["targets"][0]["avail"] == 0
    assert fs["summary"] == {"total": 1910263, "used": 1910263, "avail": 0, "used_pct": 100}


def test_lfs_df_kib_several_filesystems_pytokio():
    fss = sp.parse_lfs_df(fx("pytokio-edison-lfs-df.txt"))
    assert [f["name"] for f in fss] == ["snx11035", "snx11036", "snx11168", "snx11025"]
    dne = fss[2]
    assert sum(1 for t in dne["targets"] if t["kind"] == "MDT") == 5
    assert dne["targets"][5]["name"] == "snx11168-OST0000"
    assert fss[0]["summary"]["total"] == 2178423632448 * 1024  # 1K-blocks -> bytes


@pytest.mark.parametrize(
    "name,mode,name_want",
    [
        ("lustre-manual-lfs-df.txt", "kib", "lustre"),  # old target names: the mount names the filesystem
        ("lustre-manual-lfs-df-h.txt", "bytes", "lustre"),
        ("lustre-manual-lfs-df-i.txt", "inodes", "lustre"),
        ("lustre-manual-temp-lfs-df-ih.txt", "inodes", "temp"),
    ],
)
def test_lfs_df_manual_variants(name, mode, name_want):
    (fs,) = sp.parse_lfs_df(fx(name))
    assert fs["mode"] == mode and fs["name"] == name_want and fs["summary"] is not None
    assert all(t["used_pct"] is not None for t in fs["targets"])


def test_lfs_df_truncated_raises_with_partial_and_records_errors():
    with pytest.raises(ParseError) as exc:
        sp.parse_lfs_df(fx("pytokio-edison-lfs-df-truncated.txt"), "lfs-df.txt")
    assert "not an lfs df target row" in str(exc.value) and exc.value.partial
    errors = []
    fss = sp.parse_lfs_df(fx("pytokio-edison-lfs-df-truncated.txt"), "lfs-df.txt", errors)
    assert len(fss) == 1 and fss[0]["summary"] is None and len(fss[0]["targets"]) == 17
    assert any("no filesystem summary" in e["message"] for e in errors)


@pytest.mark.parametrize("text", ["", "\n\n", "garbage line\n", "UUID 1K-blocks\nfoo bar\n", "UUID Frobs Used\n"])
def test_lfs_df_garbage(text):
    with pytest.raises(ParseError):
        sp.parse_lfs_df(text)


def test_lfs_df_inactive_device():
    text = fx("lustre-manual-myth-lfs-df-h-ost-full.txt").replace(
        "myth-OST0002_UUID           3.6T        3.1T      394.6G  89% /myth[OST:2]",
        "myth-OST0002_UUID : inactive device",
    )
    (fs,) = sp.parse_lfs_df(text)
    assert [t["state"] for t in fs["targets"] if t["name"] == "myth-OST0002"] == ["inactive"]


def test_lfs_check_servers():
    out = sp.parse_lfs_check(fx("lustre-lfs-check-servers-ost-down.txt"))
    assert [s["state"] for s in out] == ["active", "active", "active", "error"]
    assert out[0]["kind"] == "MGC" and out[1]["target"] == "nas_test-MDT0000"
    assert out[3]["target"] == "nas_test-OST0007" and "(107)" in out[3]["error"]
    with pytest.raises(ParseError):
        sp.parse_lfs_check("something else entirely\n")


def test_health_check():
    assert sp.parse_health_check(fx("lustre-lctl-health_check-healthy.txt"))["healthy"] is True
    bad = sp.parse_health_check(fx("lustre-lctl-health_check-not-healthy.txt"))
    assert bad == {"healthy": False, "devices": ["myth-OST0001"], "lbug": False, "entries": 1}
    assert sp.parse_health_check("LBUG\n")["lbug"] is True
    for text in ("", "health_check=maybe\n"):
        with pytest.raises(ParseError):
            sp.parse_health_check(text)


def test_lctl_dl_pytokio():
    devs = sp.parse_lctl_dl(fx("pytokio-edison-lctl-dl-t.txt"))
    assert len(devs) == 352 and all(d["status"] == "UP" for d in devs)
    osc = [d for d in devs if d["type"] == "osc"][0]
    assert osc["kind"] == "OST" and osc["nid"].endswith("@o2ib2") and osc["target"].startswith("snx11035-OST")
    errors = []
    sp.parse_lctl_dl(fx("pytokio-edison-lctl-dl-t.txt")[:500] + "\nbroken\n", errors=errors)
    assert errors and errors[0]["kind"] == "parse"


def test_mmhealth_Y_treydock():
    h = sg.parse_mmhealth(fx("treydock-mmhealth-node-show-Y.txt"))
    assert len(h["states"]) == 9
    assert {s["status"] for s in h["states"]} >= {"TIPS", "HEALTHY", "FOO"}
    assert h["states"][0]["since"] == "2020-01-27 09:35:21.859186 EST"  # %3A decoded
    conn = [e for e in h["events"] if e["event"] == "cluster_connections_down"]
    assert [e["identifier"] for e in conn] == ["10.22.51.57", "10.22.95.17"]
    with pytest.raises(ParseError, match="no HEADER"):
        sg.parse_mmhealth(fx("treydock-mmhealth-node-show-Y-no-header.txt"))


def test_mmlsdisk_Y_treydock():
    disks = sg.parse_mmlsdisk(fx("treydock-mmlsdisk-Y.txt"))
    assert len(disks) == 8 and disks[0]["name"] == "RG001VS003" and disks[0]["metadata"] is True
    assert (disks[-1]["status"], disks[-1]["availability"]) == ("foo", "bar")
    with pytest.raises(ParseError, match="mmlsdisk:invalid"):
        sg.parse_mmlsdisk(fx("treydock-mmlsdisk-Y-with-invalid.txt"))


def test_mmdf_Y_treydock():
    df = sg.parse_mmdf(fx("treydock-mmdf-Y.txt"))
    assert df["size_kb"] == 3661677723648 and df["used_pct"] == 86.9  # freeBlocksPct 14
    assert df["inodes"]["max"] == 1332164000 and df["inodes"]["used_pct"] == 32.3
    with pytest.raises(ParseError):
        sg.parse_mmdf(fx("treydock-mmdf-Y-errors.txt"))
    short = fx("treydock-mmdf-Y.txt").replace(
        "mmdf:fsTotal:0:1:::3661677723648:481202021888:14:12117655064:0:", "mmdf:fsTotal:0:1:::3661677723648"
    )
    with pytest.raises(ParseError):
        sg.parse_mmdf(short)


def test_nfsstat_m():
    two = sp.parse_nfsstat_m(fx("linux-nfs-list-nfsstat-m-two-mounts.txt"))
    assert [m["mount"] for m in two] == ["/mnt/phil", "/mnt/felipe"]
    assert two[1]["server"] == "10.2.71.6" and two[1]["options"]["vers"] == "4.2" and two[1]["options"]["hard"]
    (rdma,) = sp.parse_nfsstat_m(fx("linux-nfs-list-nfsstat-m-rdma-wrapped.txt"))
    assert rdma["options"]["proto"] == "rdma" and rdma["options"]["addr"] == "192.168.2.55"  # wrapped lines joined
    with pytest.raises(ParseError, match="no Flags"):
        sp.parse_nfsstat_m("/mnt from server:/x\n")


_PARSERS = {
    "lfs-df": sp.parse_lfs_df,
    "lfs-check": sp.parse_lfs_check,
    "health_check": lambda text, errors: sp.parse_health_check(text),
    "lctl-dl": sp.parse_lctl_dl,
    "mmhealth": sg.parse_mmhealth,
    "mmlsdisk": sg.parse_mmlsdisk,
    "mmdf": sg.parse_mmdf,
    "nfsstat-client": lambda text, errors: sp.parse_nfsstat_rpc(text),
    "nfsstat-m": sp.parse_nfsstat_m,
}


def _parser_for(name):
    for key, fn in _PARSERS.items():
        if key in name:
            return fn
    raise AssertionError(name)


_SAMPLES = sorted(
    os.path.basename(f)
    for f in glob.glob(os.path.join(FIX, "*.txt"))
    if not f.endswith(".source.txt") and "pytokio" not in f  # the 350-line pytokio files: covered above
)


@pytest.mark.parametrize("name", _SAMPLES)
@settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(
    cut=st.integers(0, 4000),
    pos=st.integers(0, 4000),
    junk=st.sampled_from(
        ["", "\0", ":", "%", "\n", "x" * 5000, "99999999999999999999999999999999999999999999999999999999999999999%"]
    ),
)
def test_mutated_samples_raise_only_parse_errors(name, cut, pos, junk):
    """Truncated or corrupted real samples: a result or a ParseError, never another exception."""
    text = fx(name)
    text = text[: max(1, len(text) - cut % len(text))]
    p = pos % (len(text) + 1)
    text = text[:p] + junk + text[p:]
    errors = []
    try:
        _parser_for(name)(text, errors=errors) if "health_check" not in name else sp.parse_health_check(text)
    except ParseError:
        pass
    assert all(e["kind"] in ("parse", "tool_error") for e in errors)


def test_nfsstat_client_rpc():
    assert sp.parse_nfsstat_rpc(fx("lkml-2006-nfsstat-client-v3.txt")) == {
        "calls": 13240,
        "retrans": 0,
        "authrefrsh": 0,
    }
    assert sp.parse_nfsstat_rpc(fx("lkml-2006-nfsstat-client-v3-retrans.txt"))["retrans"] == 1187
    for text in ("Client rpc stats:\ncalls      retrans    authrefrsh\n", "Client nfs v3:\nnull\n0 0%\n"):
        with pytest.raises(ParseError):
            sp.parse_nfsstat_rpc(text)
