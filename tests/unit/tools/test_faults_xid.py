"""tools/simnode/faults_xid.py: each fault, captured in the real tool formats and inspected by the collection,
gives exactly its answer-key entries (check, component, severity) and no other P0-P2 finding."""

from __future__ import annotations

import datetime
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect

REPO = Path(__file__).resolve().parents[3]
TOOLS = str(REPO / "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

from simnode import faults, faults_xid  # noqa: E402
from simnode.capture import capture  # noqa: E402
from simnode.state import default_state  # noqa: E402

NOW = datetime.datetime(2026, 12, 2, 10, 0, tzinfo=datetime.timezone.utc)
CLASS = "h100-sxm-8"
PROFILE = yaml.safe_load((REPO / "inventories" / "sim" / "group_vars" / "gpu_nodes.yml").read_text())[
    "gpuops_profiles"
][CLASS]
RANK = {"P0": 0, "P1": 1, "P2": 2, "P3": 3}
NAMES = sorted(n for n, f in faults.FAULTS.items() if f.fn.__module__ == faults_xid.__name__)


@pytest.fixture
def fastdir():
    d = tempfile.mkdtemp(prefix="faults-xid-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_the_module_is_registered():
    assert faults_xid in faults.CATALOGUE_MODULES
    assert {"xid74_sympathetic", "xid74_benign", "sram_threshold", "tlimit_slowdown", "xid144_ignore"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_fault_matches_its_answer_key(name, fastdir):
    state = default_state("gpu-node-01")
    res = faults.apply(state, name, random.Random(1))
    host = {"capture_dir": os.path.join(fastdir, "cur"), "node_class": CLASS}
    capture(state, host["capture_dir"])
    if res["previous"] is not None:
        host["previous_capture_dir"] = os.path.join(fastdir, "prev")
        capture(res["previous"], host["previous_capture_dir"])
    report = _inspect.inspect_nodes({"gpu-node-01": host}, profiles={CLASS: PROFILE}, now=NOW, include_facts=False)
    got = {}
    for f in report["nodes"]["gpu-node-01"]["findings"]:
        key = (f["check"], f["component"])
        if key not in got or RANK[f["severity"]] < RANK[got[key]]:
            got[key] = f["severity"]
    expected = {(e["check"], e["component"]): e["severity_hint"] for e in res["expect"]}
    assert {k: got.get(k) for k in expected} == expected
    alarms = {k: v for k, v in got.items() if k not in expected and v in ("P0", "P1", "P2")}
    assert alarms == {}
    if faults.FAULTS[name].benign:
        assert report["nodes"]["gpu-node-01"]["status"] == "healthy"
