# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""extensions/prometheus/alertmanager.yml with the real amtool (check-config, config routes test) and the real
Alertmanager (inhibition: started on 127.0.0.1 with a private storage dir, alerts posted through its API).
amtool and prometheus-alertmanager come with Debian's prometheus-alertmanager package (tests/testbed/deps.sh);
without them these tests skip, and fail under CI=true."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest
import yaml

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _runbooks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import prom_rules as _prom_rules
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import merge_policy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "extensions", "prometheus", "alertmanager.yml")


def tool(name):
    exe = shutil.which(name)
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail("%s not installed (tests/testbed/deps.sh: prometheus-alertmanager)" % name)
        pytest.skip("%s not installed" % name)
    return exe


def routes(labels):
    """The receivers amtool routes an alert with these labels to, in order."""
    args = [tool("amtool"), "config", "routes", "test", "--config.file=" + CONFIG]
    proc = subprocess.run(
        args + ["%s=%s" % kv for kv in sorted(labels.items())], check=False, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().split(",")


def test_amtool_check_config():
    proc = subprocess.run(
        [tool("amtool"), "check-config", CONFIG], check=False, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout and "3 inhibit rules" in proc.stdout


@pytest.mark.parametrize(
    "labels, want",
    [
        (
            {"alertname": "GpuXid79", "severity": "P1", "scope": "node", "runbook": "gpu_fell_off_bus"},
            "gpuops-eda,major",
        ),
        ({"alertname": "GpuopsClusterP0", "severity": "P0", "scope": "cluster", "runbook": "none"}, "major"),
        (
            {"alertname": "IbPortErrors", "severity": "P2", "scope": "node", "runbook": "inspect"},
            "gpuops-eda,significant",
        ),
        ({"alertname": "GpuopsInspectionStale", "severity": "P3", "scope": "cluster", "runbook": "none"}, "general"),
        (
            {"alertname": "GpuopsCoolantLeak", "severity": "P1", "scope": "node", "runbook": "coolant_leak"},
            "gpuops-eda,major",
        ),
        ({"alertname": "SomethingElse", "severity": "P2"}, "significant"),  # not ours: people only
        ({"alertname": "NoSeverity"}, "general"),
    ],
)
def test_routes(labels, want):
    assert ",".join(routes(labels)) == want


def test_every_generated_alert_reaches_eda_and_its_level():
    level = {"P0": "major", "P1": "major", "P2": "significant", "P3": "general"}
    doc = _prom_rules.build(merge_policy(None, {}), _runbooks.load(_runbooks.DEFAULT_CATALOG))
    for group in doc["groups"]:
        for rule in group["rules"]:
            labels = dict(rule["labels"], alertname=rule["alert"], node="gpu-node-01")
            labels.setdefault("severity", "P1")  # finding-based alerts carry the finding's P0-P2
            want = ["gpuops-eda"] if labels["scope"] == "node" else []
            assert routes(labels) == want + [level[labels["severity"]]], rule["alert"]


def test_grouping_by_cluster_domain():
    with open(CONFIG, encoding="utf-8") as fh:
        route = yaml.safe_load(fh)["route"]
    assert {"cluster", "rack", "leaf", "power_domain"} <= set(route["group_by"])
    eda = route["routes"][0]
    assert eda["receiver"] == "gpuops-eda" and eda["continue"] is True and eda["group_by"] == ["alertname"]
    # leak_response acts on one source node: one payload per node
    assert eda["routes"][0]["group_by"] == ["alertname", "node"]


# ------------------------------------------------------------------------ inhibition, with the real Alertmanager
def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(url, data=None):
    req = urllib.request.Request(
        url, None if data is None else json.dumps(data).encode(), method="POST" if data else "GET"
    )
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read() or b"null")


@pytest.fixture(scope="module")
def alertmanager(tmp_path_factory):
    exe = tool("prometheus-alertmanager")
    work = tmp_path_factory.mktemp("am")
    port = _free_port()
    log = open(work / "am.log", "w")
    proc = subprocess.Popen(
        [
            exe,
            "--config.file=" + CONFIG,
            "--storage.path=%s" % work,
            "--web.listen-address=127.0.0.1:%d" % port,
            "--cluster.listen-address=",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = "http://127.0.0.1:%d/api/v2" % port
    deadline = time.monotonic() + 30
    while True:
        try:
            _api(base + "/status")
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("alertmanager did not start: %s" % (work / "am.log").read_text()[-2000:])
            time.sleep(0.2)
    yield base
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def _alert(name, **labels):
    return {"labels": dict(labels, alertname=name), "annotations": {}}


def _states(base):
    """alertname/node -> (state, inhibitedBy count)."""
    out = {}
    for a in _api(base + "/alerts?active=true&inhibited=true&silenced=true&unprocessed=true"):
        key = "%s/%s/%s" % (a["labels"]["alertname"], a["labels"].get("cluster", ""), a["labels"].get("node", ""))
        out[key] = a["status"]["state"]
    return out


def test_inhibition(alertmanager):
    node = {"scope": "node", "domain": "gpu", "severity": "P1"}
    _api(
        alertmanager + "/alerts",
        [
            # cluster c1 has a P0: its node alerts are silenced, except the leak response
            _alert("GpuopsClusterP0", cluster="c1", scope="cluster", domain="cluster", severity="P0", runbook="none"),
            _alert("GpuXid79", cluster="c1", node="a1", runbook="gpu_fell_off_bus", **node),
            _alert(
                "GpuopsCoolantLeak",
                cluster="c1",
                node="a2",
                runbook="coolant_leak",
                scope="node",
                domain="bmc",
                severity="P1",
            ),
            # cluster c2: no P0; b1 is down -> its GPU alert is silenced, its neighbour's is not
            _alert(
                "GpuNodeDown",
                cluster="c2",
                node="b1",
                scope="node",
                domain="node",
                severity="P1",
                runbook="node_unreachable",
            ),
            _alert("GpuXid79", cluster="c2", node="b1", runbook="gpu_fell_off_bus", **node),
            _alert("GpuXid79", cluster="c2", node="b2", runbook="gpu_fell_off_bus", **node),
        ],
    )
    want = {
        "GpuopsClusterP0/c1/": "active",
        "GpuXid79/c1/a1": "suppressed",
        "GpuopsCoolantLeak/c1/a2": "active",
        "GpuNodeDown/c2/b1": "active",
        "GpuXid79/c2/b1": "suppressed",
        "GpuXid79/c2/b2": "active",
    }
    deadline = time.monotonic() + 10
    while _states(alertmanager) != want and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _states(alertmanager) == want
