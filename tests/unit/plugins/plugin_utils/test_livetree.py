# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A live node's evidence parsed on the controller (_livetree.py): the same facts as the capture directory it
is, marked live; and the node's answer treated as data from outside (names, sizes, packing), refused with one
collect error and every domain unknown, never a file outside the temporary directory, never a traceback."""

from __future__ import annotations

import base64
import json
import os
import zlib

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils import _evidence_time
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    collect as _collect,
    livecapture as _livecapture,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils import checks as _checks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import (
    livetree as _livetree,
    pipeline as _inspect,
)

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
CAPTURES = os.path.join(REPO, "inventories", "sim", ".sim", "captures")


def _tree(host="gpu-node-01"):
    return _livecapture.read_tree(os.path.join(CAPTURES, host))


def _comparable(facts, capture_dir=None):
    skip = {"mode", "capture_dir", "parsed_on", "evidence_time_source", "timings"}
    text = json.dumps({k: v for k, v in facts.items() if k not in skip}, sort_keys=True)
    # an error record names the file; read from a directory, with the directory's path in front
    return json.loads(text.replace(capture_dir + os.sep, "") if capture_dir else text)


@pytest.mark.parametrize("host", sorted(os.listdir(CAPTURES)))
def test_the_tree_reads_as_the_capture_directory_it_is_marked_live(host):
    tree = _tree(host)
    domains = list(_collect.DEFAULT_LIVE_DOMAINS) + ["dcgm"]  # the capture holds dcgmi-diag.txt
    from_dir = _collect.collect_all(capture_dir=os.path.join(CAPTURES, host), domains=domains)
    live = _livetree.parse_packed(_livecapture.pack(tree))
    assert live["mode"] == "live" and live["capture_dir"] is None and live["parsed_on"] == "controller"
    assert live["evidence_time_source"] == _evidence_time.SOURCE_LIVE
    assert live["evidence_time"] == json.loads(tree["capture.json"])["captured_at"]
    assert _comparable(live) == _comparable(from_dir, os.path.join(CAPTURES, host))
    assert live["gpu"]["count"] >= 1 and live["ib"]["hcas"]  # something was read (not a pair of empty results)


def test_the_domains_the_node_was_asked_for_are_the_domains_read():
    tree = _tree()
    meta = json.loads(tree["capture.json"])
    meta["domains"] = ["gpu", "ib"]
    tree["capture.json"] = json.dumps(meta)
    live = _livetree.parse_tree(tree)
    assert "gpu" in live and "ib" in live
    assert not {"kernel", "bmc", "slurm", "node", "dcgm"} & set(live)
    # a domain not asked for is "not collected" (unknown), never "ok" for want of evidence
    states = _checks.domain_states(live, {}, {})
    assert states["bmc"]["state"] == "unknown" and states["bmc"]["reason"] == "not collected"


def test_a_whole_capture_without_dcgm_reads_the_live_domains():
    tree = _tree()
    del tree["dcgmi-diag.txt"]
    live = _livetree.parse_tree(tree)
    assert set(_collect.DEFAULT_LIVE_DOMAINS) <= set(live) and "dcgm" not in live


@pytest.mark.parametrize(
    "tree, why",
    [
        (["capture.json"], "not a mapping"),
        ("text", "not a mapping"),
        ({"../escape": "x", "capture.json": "{}"}, "not a plain capture file name"),
        ({"a/b": "x", "capture.json": "{}"}, "not a plain capture file name"),
        ({".hidden": "x", "capture.json": "{}"}, "not a plain capture file name"),
        ({"a..b": "x", "capture.json": "{}"}, "not a plain capture file name"),
        ({"": "x", "capture.json": "{}"}, "not a plain capture file name"),
        ({"-rf": "x", "capture.json": "{}"}, "not a plain capture file name"),
        ({"x" * 129: "x", "capture.json": "{}"}, "not a plain capture file name"),
        ({"nul\x00.txt": "x", "capture.json": "{}"}, "not a plain capture file name"),
        ({"kernel.log": b"bytes", "capture.json": "{}"}, "not text"),
        ({"kernel.log": {"nested": 1}, "capture.json": "{}"}, "not text"),
        ({"kernel.log": "x"}, "no capture.json"),
        ({"f%03d.txt" % i: "" for i in range(_livetree.MAX_FILES + 1)}, "files (at most"),
    ],
)
def test_an_answer_that_is_not_a_capture_is_refused(tmp_path, tree, why):
    facts = _livetree.parse_tree(tree, tmp_root=str(tmp_path))
    [err] = facts["errors"]
    assert err["domain"] == "collect" and why in err["message"]
    assert not set(_collect.ALL_DOMAINS) & set(facts)  # nothing read: every domain unknown
    assert os.listdir(str(tmp_path)) == []  # nothing written, nothing left


def test_interface_names_of_the_optics_files_are_plain_names(tmp_path):
    tree = {"ethtool-S-eth0:1.txt": "NIC statistics:\n", "mlxlink-mlx5_0.txt": "", "capture.json": "{}"}
    assert _livetree.check_tree(tree) is None


def test_an_answer_over_the_size_limit_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(_livetree, "MAX_BYTES", 1000)
    facts = _livetree.parse_tree({"kernel.log": "x" * 1001, "capture.json": "{}"}, tmp_root=str(tmp_path))
    assert "more than 1000 bytes" in facts["errors"][0]["message"]


def _pack_raw(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data)).decode("ascii")


@pytest.mark.parametrize(
    "packed, why",
    [
        (None, "not a string"),
        ({"tree": 1}, "not a string"),
        ("not base64 at all!", "not a packed capture"),
        ("é", "not a packed capture"),
        (base64.b64encode(b"plain, not zlib").decode(), "not a packed capture"),
        (base64.b64encode(zlib.compress(b'{"capture.json": "{}"}')[:-6]).decode(), "cut short"),
        (_pack_raw(b"\xff\xfe not utf-8"), "not JSON"),
        (_pack_raw(b"{not json"), "not JSON"),
        (_pack_raw(b'["a list"]'), "not a mapping"),
    ],
)
def test_a_packed_answer_that_cannot_be_read_is_refused(packed, why):
    facts = _livetree.parse_packed(packed)
    [err] = facts["errors"]
    assert why in err["message"], err["message"]
    assert facts["mode"] == "live" and not set(_collect.ALL_DOMAINS) & set(facts)


def test_a_compression_bomb_is_never_inflated_whole(monkeypatch):
    monkeypatch.setattr(_livetree, "MAX_BYTES", 10_000)
    bomb = _pack_raw(json.dumps({"kernel.log": "A" * 5_000_000, "capture.json": "{}"}).encode())
    assert len(bomb) < 20_000
    with pytest.raises(ValueError, match="more than 10000 bytes once inflated"):
        _livetree.unpack(bomb)


def test_error_records_name_the_file_not_the_temporary_directory(tmp_path):
    tree = _tree()
    tree["nvidia-smi-q.xml"] = tree["nvidia-smi-q.xml"][: len(tree["nvidia-smi-q.xml"]) // 3]  # cut mid-document
    facts = _livetree.parse_tree(tree, tmp_root=str(tmp_path))
    assert facts["gpu"]["errors"]
    text = json.dumps(facts)
    assert str(tmp_path) not in text and "gpuops-live-" not in text
    assert os.listdir(str(tmp_path)) == []


def test_inspect_judges_a_refused_answer_as_error_never_as_a_fault(tmp_path):
    hosts = {
        "gpu-node-01": {"evidence": _livecapture.pack(_tree()), "profile": None},
        "gpu-node-02": {"evidence": "garbage!", "profile": None},
    }
    report = _inspect.inspect_nodes(hosts, state_dir=str(tmp_path / "state"))
    good, bad = report["nodes"]["gpu-node-01"], report["nodes"]["gpu-node-02"]
    assert good["mode"] == "live" and good["status"] in ("healthy", "degraded", "faulty")
    assert bad["status"] == "error"
    assert {f["check"] for f in bad["findings"]} == {"collector.error"}
    assert not any(f.get("action") in ("isolate", "reset", "replace", "reseat", "drain") for f in bad["findings"])
