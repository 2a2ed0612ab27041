"""infiniband-sysfs.txt: the InfiniBand sysfs attributes of a capture as one listing (issue 17: one file a node
instead of ~300). The listing must read exactly like the tree it replaces, and a hostile or broken one must be
named in an error, never trusted and never a traceback."""

from __future__ import annotations

import os
import random
import shutil

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import ib as _ib, ib_sysfs as _ib_sysfs
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.ib import MAX_COUNTERS, MAX_HCAS, MAX_PORTS
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.normpath(os.path.join(HERE, "..", "..", "..", "fixtures"))
GPUD_TREE = os.path.join(FIX, "sysfs-infiniband", "gpud-h100-8x-cx7-tree")
GPUD_FLAT = os.path.join(FIX, "sysfs-infiniband", "gpud-h100-8x-cx7-flat.txt")
LISTING = "infiniband-sysfs.txt"
IBSTAT = os.path.join(FIX, "ibstat", "gpud-h100-cx7-ib-all-active-bf3.txt")


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _cap(tmp_path, name="cap", listing=None, tree=None, files=None):
    cap = tmp_path / name
    cap.mkdir()
    if listing is not None:
        (cap / LISTING).write_bytes(listing if isinstance(listing, bytes) else listing.encode("utf-8"))
    if tree:
        shutil.copytree(tree, str(cap / "sys" / "class" / "infiniband"))
    for fname, text in (files or {}).items():
        (cap / fname).write_text(text)
    return str(cap)


def _kinds(out):
    return [(e["kind"], e.get("parser")) for e in out["errors"]]


def test_the_real_listing_reads_like_the_real_tree_of_the_same_node(tmp_path):
    """gpud's test data holds one H100 node's sysfs both ways: a capture with either gives the same HCAs."""
    from_tree = _ib.collect(capture_dir=_cap(tmp_path, "tree", tree=GPUD_TREE))
    from_listing = _ib.collect(capture_dir=_cap(tmp_path, "flat", listing=_read(GPUD_FLAT)))
    assert from_listing["errors"] == [] and from_tree["errors"] == []
    assert from_listing["source"] == from_tree["source"] == "capture:sysfs"
    assert from_listing["hcas"] == from_tree["hcas"]
    assert len(from_listing["hcas"]) == 9  # mlx5_0..7 and mlx5_bond_0
    mlx5_1 = next(h for h in from_listing["hcas"] if h["name"] == "mlx5_1")
    assert mlx5_1["ports"][0]["counters"]["link_downed"] == 255  # the flapped link is seen through the listing


def test_a_listing_in_any_order_with_absolute_or_relative_paths_reads_the_same(tmp_path):
    lines = _read(GPUD_FLAT).splitlines()
    random.Random(17).shuffle(lines)
    prefixed = ["/sys/class/infiniband/" + ln[2:] if i % 2 else ln[2:] for i, ln in enumerate(lines)]
    want = _ib.collect(capture_dir=_cap(tmp_path, "a", listing=_read(GPUD_FLAT)))
    got = _ib.collect(capture_dir=_cap(tmp_path, "b", listing="\n".join(prefixed) + "\n"))
    assert got["errors"] == [] and got["hcas"] == want["hcas"]


def test_grep_r_extras_are_skipped_and_only_the_allowlist_is_read(tmp_path):
    """``grep -r .`` in the class directory also prints uevent, gid_attrs, pkeys and multi-line files: skipped,
    like the tree reader never opens them; unsafe names and paths leaving the HCA are never keys."""
    extra = [
        "./mlx5_0/uevent:NAME=mlx5_0",
        "./mlx5_0/uevent:DEVTYPE=ib",  # a multi-line file: two lines of one path, outside the allowlist
        "./mlx5_0/ports/1/gid_attrs/ndevs/0:ib0",
        "./mlx5_0/ports/1/pkeys/0:0xffff",
        "./../etc/passwd:root:x:0:0",
        "./mlx5_0/ports/../../fw_ver:99.99.9999",
        "./mlx5_0/ports/²/state:4: ACTIVE",
        "./mlx5 0/fw_ver:1.2.3",
        "./mlx5_0/ports/1/counters/bad name:5",
    ]
    text = _read(GPUD_FLAT) + "\n".join(extra) + "\n"
    snap = _ib.snapshot_flat(text, LISTING, [])
    assert snap == _ib.parse_sysfs_flat(_read(GPUD_FLAT))
    assert not any("uevent" in k or "gid_attrs" in k or "pkeys" in k or ".." in k for k in snap)
    out = _ib.collect(capture_dir=_cap(tmp_path, listing=text))
    assert out["errors"] == [] and [h["fw_version"] for h in out["hcas"]][0] == "28.41.1000"


def test_a_listing_cut_short_drops_its_last_line_and_says_so(tmp_path):
    text = _read(GPUD_FLAT)
    cut = text[
        : text.index("./mlx5_1/ports/1/counters/link_downed:255") + len("./mlx5_1/ports/1/counters/link_downed:25")
    ]
    out = _ib.collect(capture_dir=_cap(tmp_path, listing=cut))
    assert ("parse", "sysfs_flat") in _kinds(out)
    assert any("without a newline" in e["message"] for e in out["errors"])
    mlx5_1 = next(h for h in out["hcas"] if h["name"] == "mlx5_1")
    assert "link_downed" not in mlx5_1["ports"][0]["counters"]  # never the truncated 25 for 255


def test_an_attribute_listed_twice_with_two_values_keeps_the_first_and_is_an_error(tmp_path):
    text = _read(GPUD_FLAT) + "./mlx5_1/ports/1/counters/link_downed:0\n./mlx5_0/fw_ver:28.41.1000\n"
    out = _ib.collect(capture_dir=_cap(tmp_path, listing=text))
    assert _kinds(out) == [("parse", "sysfs_flat")]  # the identical fw_ver line is no conflict
    assert "listed twice" in out["errors"][0]["message"] and out["errors"][0]["line"] == 487
    mlx5_1 = next(h for h in out["hcas"] if h["name"] == "mlx5_1")
    assert mlx5_1["ports"][0]["counters"]["link_downed"] == 255
    with pytest.raises(ParseError) as exc:  # without an error list: raised, the mapping as partial
        _ib.parse_sysfs_flat(text)
    assert exc.value.partial["mlx5_1/ports/1/counters/link_downed"] == "255"


@pytest.mark.parametrize(
    "listing",
    [b"\x00\x01\x02 binary junk\n", b"not a listing at all\n", b"<html>proxy error</html>\n"],
    ids=["binary", "prose", "html"],
)
def test_a_listing_that_is_not_one_is_an_error_and_ibstat_is_still_read(tmp_path, listing):
    ibstat = _read(IBSTAT)
    out = _ib.collect(capture_dir=_cap(tmp_path, listing=listing, files={"ibstat.txt": ibstat}))
    assert out["source"] == "capture:ibstat.txt" and out["hcas"]
    assert any(e["parser"] == "sysfs_flat" and e["kind"] == "parse" for e in out["errors"])
    alone = _ib.collect(capture_dir=_cap(tmp_path, "alone", listing=listing))
    assert alone["hcas"] == [] and any(e["parser"] == "sysfs_flat" for e in alone["errors"])


def test_a_listing_that_is_a_link_a_fifo_or_too_big_is_refused_by_name(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("./mlx5_0/fw_ver:1.0.0\n")
    link = _cap(tmp_path, "link")
    os.symlink(str(secret), os.path.join(link, LISTING))
    fifo = _cap(tmp_path, "fifo")
    os.mkfifo(os.path.join(fifo, LISTING))
    big = _cap(tmp_path, "big", listing="./mlx5_0/node_desc:" + "x" * (65 << 20) + "\n")
    for cap in (link, fifo, big):
        out = _ib.collect(capture_dir=cap)
        assert out["hcas"] == [] and out["errors"], cap
        assert out["errors"][0]["kind"] == "unreadable" and LISTING in out["errors"][0]["message"]


def test_the_tree_is_read_first_when_a_capture_holds_both(tmp_path):
    other = _read(GPUD_FLAT).replace("28.41.1000", "20.31.1014")
    out = _ib.collect(capture_dir=_cap(tmp_path, listing=other, tree=GPUD_TREE))
    assert out["hcas"] == _ib.collect(capture_dir=_cap(tmp_path, "tree", tree=GPUD_TREE))["hcas"]
    assert "20.31.1014" not in {h["fw_version"] for h in out["hcas"]}


def test_the_caps_of_the_tree_reader_hold_for_a_listing(tmp_path):
    """MAX_HCAS, MAX_PORTS and MAX_COUNTERS: a listing is cut where the tree reader stops reading, so both forms
    of one oversized node give the same records."""
    root = tmp_path / "root" / "sys" / "class" / "infiniband"
    for h in range(MAX_HCAS + 3):
        (root / ("mlx5_%d" % h)).mkdir(parents=True)
        (root / ("mlx5_%d" % h) / "fw_ver").write_text("1.%d\n" % h)
    port_base = root / "mlx5_0" / "ports"
    for p in range(1, MAX_PORTS + 6):
        (port_base / str(p)).mkdir(parents=True)
        (port_base / str(p) / "state").write_text("4: ACTIVE\n")
    counters = port_base / "1" / "counters"
    counters.mkdir()
    for c in range(MAX_COUNTERS + 9):
        (counters / ("c%04d" % c)).write_text("%d\n" % c)
    tree_snap, errors = _ib_sysfs.snapshot_sysfs(str(root), confine=True)
    assert errors == []
    listing = _ib_sysfs.flat_text(tree_snap)
    uncapped = listing + "".join("./mlx5_%d/fw_ver:1.%d\n" % (h, h) for h in range(MAX_HCAS, MAX_HCAS + 3))
    uncapped += "".join("./mlx5_0/ports/%d/state:4: ACTIVE\n" % p for p in range(MAX_PORTS + 1, MAX_PORTS + 6))
    uncapped += "".join("./mlx5_0/ports/1/counters/c%04d:%d\n" % (c, c) for c in range(MAX_COUNTERS, MAX_COUNTERS + 9))
    snap = _ib.snapshot_flat(uncapped, LISTING, [])
    assert snap == tree_snap
    assert len({k.split("/")[0] for k in snap}) == MAX_HCAS
    assert sum(1 for k in snap if k.startswith("mlx5_0/ports/1/counters/")) == MAX_COUNTERS


def test_capture_writes_the_listing_the_reader_reads_back_equal(tmp_path):
    """capture_sysfs on the real tree, then the capture read offline: the records of the live read."""
    live_root = tmp_path / "live"
    shutil.copytree(GPUD_TREE, str(live_root / "sys" / "class" / "infiniband"))
    dest = str(tmp_path / "cap")
    res = _ib.capture_sysfs(str(live_root), dest, timeout=None)
    assert res["errors"] == [] and res["file"] == LISTING and len(res["hcas"]) == 9
    assert os.listdir(dest) == [LISTING]
    live = _ib.read_sysfs_class(str(live_root / "sys" / "class" / "infiniband"))[0]
    assert _ib.collect(capture_dir=dest)["hcas"] == live
