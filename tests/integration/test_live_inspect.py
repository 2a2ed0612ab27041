# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Live nodes of the test bed: capture == live facts, and a live inspection finds an injected fault."""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "build"))

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import collect as _collect  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import report_files as _files  # noqa: E402
from simnode import faults  # noqa: E402

DOMAINS = ["gpu", "kernel", "ib", "bmc", "slurm", "node"]


def _strip(facts, domain):
    d = dict(facts.get(domain) or {})
    for k in ("source", "collected_at", "errors", "since", "events_dropped"):
        d.pop(k, None)
    return d


def test_capture_gives_the_same_facts_as_the_live_node(testbed, tmp_path):
    hosts = testbed.nodes[:2]
    proc = testbed.playbook(
        str(REPO / "playbooks" / "collect.yml"),
        "-e",  # the nodes as gpuops_targets: a --limit without localhost is refused (playbooks/limit_guard.yml)
        "gpuops_targets=%s" % ",".join(hosts),
        "-e",
        "gpuops_capture_root=%s" % (tmp_path / "cap"),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # parsed on the node (not the default since issue 36): the node's own collectors against the capture's files
    live = testbed.adhoc(
        ",".join(hosts), "gpuops.cluster.collect_info", {"timeout": 20, "domains": DOMAINS, "parse_on": "node"}
    )
    for host in hosts:
        assert not live[host].get("failed"), live[host]
        lf = live[host]["facts"]
        (capdir,) = list((tmp_path / "cap" / host).iterdir())
        names = {p.name for p in capdir.iterdir()}
        assert {
            "nvidia-smi-q.xml",
            "kernel.log",
            "ibstat.txt",
            "ipmitool-sdr.txt",
            "capture.json",
            "node.json",
        } <= names
        assert "infiniband-sysfs.txt" in names and not (capdir / "sys").exists()  # one listing, not ~300 files
        meta = json.loads((capdir / "capture.json").read_text())
        assert meta["hostname"] == host and meta["files"]["nvidia-smi-q.xml"]["rc"] == 0
        cf = _collect.collect_all(capture_dir=str(capdir), domains=DOMAINS)
        assert lf["hostname"] == cf["hostname"] == host
        assert cf["gpu"]["source"] == "capture:nvidia-smi-q.xml" and cf["ib"]["source"].startswith("capture:")
        # GPU, InfiniBand, BMC and kernel facts are identical live and from the capture
        assert len(lf["gpu"]["gpus"]) == 8
        assert _strip(lf, "gpu") == _strip(cf, "gpu")
        assert len(lf["ib"]["hcas"]) == 8
        assert lf["ib"]["hcas"] == cf["ib"]["hcas"]
        assert lf["ib"]["boot_id"] == cf["ib"]["boot_id"] == testbed.boot_id(host)
        assert lf["bmc"]["sensors"] == cf["bmc"]["sensors"] and lf["bmc"]["sel"] == cf["bmc"]["sel"]
        assert lf["bmc"]["sensors"]
        assert lf["kernel"]["events"] == cf["kernel"]["events"]
        assert [(n["name"], n["state"]) for n in lf["slurm"]["nodes"]] == [
            (n["name"], n["state"]) for n in cf["slurm"]["nodes"]
        ]
        assert lf["node"]["boot_id"] == cf["node"]["boot_id"]


def test_live_inspection_finds_an_injected_fault(testbed, tmp_path):
    sick = testbed.nodes[2]
    with testbed.edit_state(sick) as state:
        state["now"] = time.time()  # the simulator's clock: log the fault as happening minutes ago, in this boot
        faults.apply(state, "xid79", random.Random(1), gpu=2)
    report_dir = tmp_path / "report"
    proc = testbed.playbook(str(REPO / "playbooks" / "inspect.yml"), "-e", "gpuops_report_dir=%s" % report_dir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((report_dir / "report.json").read_text())
    assert set(report["nodes"]) == set(testbed.nodes)
    assert all(n["mode"] == "live" for n in report["nodes"].values())
    node = report["nodes"][sick]
    assert node["status"] == "faulty"
    checks = {(f["check"], f["component"]) for f in node["findings"]}
    bus = testbed.load_state(sick)["gpus"][2]["bus_id"]
    assert ("gpu.xid", "gpu:%s" % bus) in checks and ("gpu.missing", "gpu:%s" % bus) in checks
    for host, n in report["nodes"].items():
        if host != sick:
            assert not [f for f in n["findings"] if f["severity"] in ("P0", "P1")], (host, n["findings"])


def _verdicts(report):
    return {
        host: (n["status"], sorted((f["check"], f["component"], f["severity"], f["action"]) for f in n["findings"]))
        for host, n in report["nodes"].items()
    }


def test_parsing_on_the_controller_gives_the_node_parses_verdicts(testbed, tmp_path):
    """gpuops_parse_on=controller (the default: the node runs the tools, the controller parses), by the shell
    capture (the default: one sh command over SSH, no Python on the node) and by the Python capture module, and
    =node (the parsers run on the node) judge every node alike, a faulty one included."""
    sick = testbed.nodes[1]
    with testbed.edit_state(sick) as state:
        state["now"] = time.time()
        faults.apply(state, "xid79", random.Random(2), gpu=5)
    reports = {}
    for name, where, via in (
        ("node", "node", "shell"),
        ("controller", "controller", "shell"),
        ("python", "controller", "python"),
    ):
        report_dir = tmp_path / name
        proc = testbed.playbook(
            str(REPO / "playbooks" / "inspect.yml"),
            "-e",
            "gpuops_report_dir=%s" % report_dir,
            "-e",
            "gpuops_parse_on=%s" % where,
            "-e",
            "gpuops_capture_via=%s" % via,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        reports[name] = _files.load_report(str(report_dir))  # the facts from facts.json.gz beside it (issue 41)
    node, ctrl = reports["node"], reports["controller"]
    assert _verdicts(node) == _verdicts(ctrl) == _verdicts(reports["python"])
    assert ctrl["nodes"][sick]["status"] == "faulty"
    for host in testbed.nodes:
        facts = ctrl["nodes"][host]["facts"]
        assert facts["mode"] == "live" and facts["parsed_on"] == "controller" and facts["hostname"] == host
        assert "parsed_on" not in node["nodes"][host]["facts"]
        # the same domain states; a reason names its source as the collector saw it (capture:<file> / the tool)
        states = {
            where: {d: v["state"] for d, v in r["nodes"][host]["domains"].items()} for where, r in reports.items()
        }
        assert states["controller"] == states["node"] == states["python"]
