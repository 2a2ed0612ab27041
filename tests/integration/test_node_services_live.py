# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 35 on the test bed: the fake fabric manager (the bed's apt package, no systemd) reads as running through
the node module and the shell capture; once stopped, ``nobody``'s copy of ``sleep`` named ``nv-fabricmanager``
(with the pid file pointing at it) does not bring it back; and a node whose shell-capture answer is over
``capture_max_bytes`` is a collector.error while every other node is inspected."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FM = "nvidia-fabricmanager"
PIDFILE = "/run/nvidia-fabricmanager/nv-fabricmanager.pid"


def _services(testbed, host):
    """The fabric manager's record by the node module (Python on the node) and by the shell capture."""
    live = testbed.module(host, "gpuops.cluster.node_info", {"services": [FM], "timeout": 10})
    shell = testbed.module(
        host,
        "gpuops.cluster.collect_info",
        {"parse_on": "controller", "capture_via": "shell", "domains": ["node"], "services": [FM], "timeout": 10},
    )
    assert not live.get("failed") and not shell.get("failed"), (live, shell)
    return live["node"]["services"][FM], shell["facts"]["node"]["services"][FM]


@pytest.fixture(scope="module")
def fm_node(testbed):
    host = testbed.nodes[6]
    script = (
        "apt-get -qq update >/dev/null 2>&1 && apt-get install -qq -y nvidia-fabricmanager-535 >/dev/null 2>&1"
        " && /etc/init.d/nvidia-fabricmanager start"
    )
    testbed.on_node(host, "sh", "-c", script, timeout=120)
    try:
        yield host
    finally:
        testbed.on_node(host, "sh", "-c", "pkill -u 65534 -x nv-fabricmanage; rm -rf /run/gpuops-h3", check=False)
        testbed.on_node(host, "sh", "-c", "/etc/init.d/nvidia-fabricmanager stop; apt-get -qq purge -y"
                        " nvidia-fabricmanager-535 >/dev/null 2>&1", check=False, timeout=120)  # fmt: skip


def test_the_bed_fabric_manager_runs_and_nobodys_sleep_does_not_replace_it(testbed, fm_node):
    host = fm_node
    pid = int(testbed.on_node(host, "cat", PIDFILE).stdout)
    for rec in _services(testbed, host):
        assert (rec["running"], rec["pid"], rec["method"]) == (True, pid, "pidfile"), rec
    testbed.on_node(host, "/etc/init.d/nvidia-fabricmanager", "stop")
    # nobody's renamed sleep, and the pid file pointing at it
    testbed.on_node(
        host,
        "sh",
        "-c",
        "mkdir -p /run/gpuops-h3 && cp /bin/sleep /run/gpuops-h3/nv-fabricmanager && chmod -R 755 /run/gpuops-h3"
        " && mkdir -p /run/nvidia-fabricmanager && (setsid setpriv --reuid 65534 --regid 65534 --clear-groups"
        " /run/gpuops-h3/nv-fabricmanager 600 </dev/null >/dev/null 2>&1 & echo $! > %s)" % PIDFILE,
    )
    fake = int(testbed.on_node(host, "cat", PIDFILE).stdout)
    testbed.wait_for(
        lambda: testbed.on_node(host, "cat", "/proc/%d/comm" % fake, check=False).stdout.strip() == "nv-fabricmanage",
        timeout=10,
        what="nobody's nv-fabricmanager running",
    )
    for rec in _services(testbed, host):
        assert (rec["running"], rec["pid"]) == (False, None), rec
        assert "pid %d runs as uid 65534" % fake in rec["detail"], rec


def test_a_node_over_the_capture_cap_is_a_collector_error_and_the_others_complete(testbed, tmp_path):
    small = testbed.nodes[5]
    extra = tmp_path / "cap.yml"
    extra.write_text(json.dumps({"all": {"hosts": {small: {"gpuops_capture_max_bytes": 4096}}}}))
    report_dir = tmp_path / "report"
    proc = testbed.playbook(
        str(REPO / "playbooks" / "inspect.yml"),
        "-i",
        str(extra),
        "-e",
        "gpuops_report_dir=%s" % report_dir,
        "-e",
        "gpuops_parse_on=controller",
        "-e",
        "gpuops_capture_via=shell",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((report_dir / "report.json").read_text())
    # the nodes' facts are in facts.json.gz beside report.json (issue 41): gzip of {"nodes": {host: facts}}
    side = json.loads(gzip.decompress((report_dir / report["facts_file"]["path"]).read_bytes()))["nodes"]
    for host, node in report["nodes"].items():
        node["facts"] = side[host]
    assert set(report["nodes"]) == set(testbed.nodes)
    errors = [f for f in report["nodes"][small]["findings"] if f["check"] == "collector.error"]
    assert errors and "capture_max_bytes (4096 bytes)" in json.dumps(errors), report["nodes"][small]["findings"]
    for host, node in report["nodes"].items():
        if host != small:
            assert node["facts"]["parsed_on"] == "controller" and node["facts"]["hostname"] == host
            assert not [f for f in node["findings"] if f["check"] == "collector.error"], (host, node["findings"])
