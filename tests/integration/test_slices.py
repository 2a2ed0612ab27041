# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A sliced inspection (docs/scale-out.md) with real ansible-playbook: two slices as AWX cuts them (round robin
over the inventory's host list, each run with --limit, concurrently), then the merge, against an unsliced run of
the same captured cluster. No test bed: capture directories only.

The dead leaf switch (all 8 nodes of one rack) is split 4 + 4 between the slices, and the correlation needs 5
nodes: the leaf P0 exists only when both slices' nodes are seen together.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from playbook_env import playbook_env
from test_inspect import REPO, VENV_BIN, generate

POLICY = {"correlation": {"min_nodes": 5}, "cluster": {"domain_down_min_nodes": 5}}


def _playbook(inventory: Path, *extra: str, limit: str = "") -> subprocess.Popen:
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(REPO / "playbooks" / "inspect.yml")]
    cmd += ["-e", json.dumps({"gpuops_policy_overrides": POLICY})]
    for e in extra:
        cmd += ["-e", e]
    if limit:  # the plays on the controller run on localhost: a limit must keep it (AWX cuts the inventory instead)
        cmd += ["--limit", limit + ",localhost"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=playbook_env(), cwd=str(REPO))


def _done(proc: subprocess.Popen, ok: bool = True) -> str:
    out, unused_err = proc.communicate(timeout=300)
    assert (proc.returncode == 0) is ok, out[-4000:]
    return out


def verdicts(report: dict) -> dict:
    """What must be identical: each node's status and findings (id, severity, action, cause), the cluster findings."""
    nodes = {
        host: (n["status"], sorted((f["id"], f["severity"], f.get("action"), f.get("cause")) for f in n["findings"]))
        for host, n in report["nodes"].items()
    }
    cluster = sorted(
        (f["id"], f["severity"], f.get("action"), json.dumps((f.get("evidence") or {}).get("hosts"), sort_keys=True))
        for f in report["summary"]["cluster_findings"]
    )
    return {"nodes": nodes, "cluster": cluster, "summary": {k: report["summary"][k] for k in ("status", "severity")}}


@pytest.fixture(scope="module")
def sim20(tmp_path_factory):
    out = generate(tmp_path_factory.mktemp("slices") / "sim", 20, faults="dead_leaf:1,xid79:1,ib_port_down:1")
    hosts = sorted(
        yaml.safe_load((out / "inventory" / "hosts.yml").read_text())["all"]["children"]["gpu_nodes"]["hosts"]
    )
    return out, hosts


def test_two_slices_and_the_merge_equal_an_unsliced_run(sim20, tmp_path, store_kw):
    """On the embedded store both slices and the merge share (one controller), and on PostgreSQL (gpuops_db_url:
    several controllers, AWX execution nodes)."""
    sim, hosts = sim20
    inv = sim / "inventory" / "hosts.yml"
    store = ["gpuops_state_dir=%s" % (tmp_path / "state")]
    if "db_url" in store_kw:
        store.append("gpuops_db_url=%s" % store_kw["db_url"])
    group = ["gpuops_slice_mode=slice", "gpuops_run_group=t-1", "gpuops_slice_count=2"] + store
    # AWX's slicing: round robin over the inventory's hosts; both slices at once
    slices = [hosts[k::2] for k in range(2)]
    procs = [_playbook(inv, *group, "gpuops_slice=%d" % (k + 1), limit=",".join(slices[k])) for k in range(2)]
    for proc in procs:
        assert "nodes written to the store" in _done(proc)
    merged_dir, plain_dir = tmp_path / "merged", tmp_path / "plain"
    out = _done(
        _playbook(
            inv,
            "gpuops_slice_mode=merge",
            "gpuops_run_group=t-1",
            "gpuops_expect_slices=2",
            *store,
            "gpuops_report_dir=%s" % merged_dir,
        )
    )
    assert "merged run group t-1: 20 nodes from 2 slices" in out
    _done(_playbook(inv, "gpuops_state_dir=%s" % (tmp_path / "plain-state"), "gpuops_report_dir=%s" % plain_dir))
    merged = json.loads((merged_dir / "report.json").read_text())
    plain = json.loads((plain_dir / "report.json").read_text())
    assert verdicts(merged) == verdicts(plain)
    assert merged["fleet_baseline"] == plain["fleet_baseline"]
    for name in ("report.md", "report.html", "gpuops.prom"):
        assert (merged_dir / name).stat().st_size > 0
    # the dead leaf: one P0 naming all 8 nodes, 4 from each slice (5 needed: no slice alone could see it)
    leaf = [f for f in merged["summary"]["cluster_findings"] if f["check"] == "cluster.leaf"]
    assert len(leaf) == 1, merged["summary"]["cluster_findings"]
    members = set(leaf[0]["evidence"]["hosts"])
    assert len(members) == 8 and all(len(members & set(s)) == 4 for s in slices)
    # a merge that needs a third slice is refused by name, and writes no report
    refused = _playbook(
        inv,
        "gpuops_slice_mode=merge",
        "gpuops_run_group=t-1",
        "gpuops_expect_slices=3",
        *store,
        "gpuops_report_dir=%s" % (tmp_path / "refused"),
    )
    assert "run group t-1: 2 of 3 slices written (1, 2); missing: 3" in _done(refused, ok=False)
    assert not (tmp_path / "refused").exists()
    assert all(
        f.get("cause") == leaf[0]["id"]
        for h in members
        for f in merged["nodes"][h]["findings"]
        if f["check"] == "ib.port_state"
    )
