# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.xid_info (the Xid catalogue, with a site's overrides as the checks apply them) and
gpuops.cluster.findings_by (a result's, report's or list's findings grouped by severity, check, rack, host, action)."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.cluster.plugins.filter import findings_by as FB
from ansible_collections.gpuops.cluster.plugins.filter import isolation_targets as IT
from ansible_collections.gpuops.cluster.plugins.filter import xid_info as XI
from ansible_collections.gpuops.cluster.plugins.module_utils import _xid_catalog
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import report as _report
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import xid as xid_checks


# ------------------------------------------------------------------------------------------------- xid_info
def test_xid_79_is_the_catalogue_row():
    info = XI.xid_info(79)
    assert {k: v for k, v in info.items() if k != "rule"} == _xid_catalog.lookup(79)
    assert (info["name"], info["severity"], info["action"], info["category"]) == (
        "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS",
        "P1",
        "reboot",
        "pcie",
    )
    assert info["sources"]["nvidia"] == "RESTART_BM / CONTACT_SUPPORT" and info["sources"]["aws_suite"] == "REBOOT"
    assert info["rule"] == "xid_catalog[79] (NVIDIA: RESTART_BM)"


def test_xid_codes_as_strings_events_and_unknown():
    assert XI.xid_info(" 48 ") == XI.xid_info(48)
    assert XI.xid_info({"kind": "xid", "code": 13, "bus_id": "00000000:19:00.0"})["user_caused"] is True
    assert XI.xid_info({"kind": "fallen_off_bus", "code": None})["code"] == 79
    unknown = XI.xid_info(9999)
    assert (unknown["known"], unknown["code"], unknown["severity"], unknown["action"]) == (False, 9999, "P2", "monitor")
    assert XI.xid_info(63)["disagreements"].startswith("NVIDIA: IGNORE")


def test_xid_overrides_as_the_inspection_applies_them():
    over = {"xid": {"overrides": {"94": {"severity": "P1", "action": "isolate"}}}}
    info = XI.xid_info(94, policy_overrides=over)
    assert (info["severity"], info["action"]) == ("P1", "isolate")
    assert info["rule"] == "xid_catalog[94] (NVIDIA: RESTART_APP); policy xid.overrides[94]"
    # the checks' own row for the same policy
    from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import merge_policy

    row, notes = xid_checks.xid_row(merge_policy(None, over), 94)
    assert dict(row, rule="; ".join(notes)) == info
    assert XI.xid_info(79, policy_overrides=over)["rule"] == "xid_catalog[79] (NVIDIA: RESTART_BM)"


@pytest.mark.parametrize(
    ("value", "kw", "expect"),
    [
        ("abc", {}, "expects an Xid code"),
        (-1, {}, "expects an Xid code"),
        (True, {}, "expects an Xid code"),
        (None, {}, "expects an Xid code"),
        ({"kind": "aer"}, {}, "expects an Xid code"),
        (79, {"policy_overrides": {"xid": {"overrides": {"94": {"severity": "P9"}}}}}, "policy_overrides: "),
        (79, {"policy_overrides": {"no_such_key": 1}}, "unknown policy key 'no_such_key'"),
    ],
)
def test_xid_bad_input(value, kw, expect):
    with pytest.raises(AnsibleFilterError) as exc:
        XI.xid_info(value, **kw)
    assert str(exc.value).startswith("gpuops.cluster.xid_info: ") and expect in str(exc.value), str(exc.value)


# ---------------------------------------------------------------------------------------------- findings_by
def _f(host, check, severity, action="monitor", component="node", code=None):
    return {
        "host": host,
        "check": check,
        "severity": severity,
        "action": action,
        "component": component,
        "code": code,
        "message": "%s on %s" % (check, host),
        "id": "%s:%s:%s:%s" % (host, check, component, code),
    }


def report():
    nodes = {
        "gpu-node-07": {
            "status": "faulty",
            "rack": "r02",
            "findings": [
                _f("gpu-node-07", "gpu.xid", "P1", "isolate", "gpu3", "79"),
                _f("gpu-node-07", "gpu.temp", "P2"),
            ],
        },
        "gpu-node-01": {"status": "healthy", "rack": "r01", "findings": []},
        "gpu-node-02": {
            "status": "degraded",
            "rack": "r01",
            "findings": [_f("gpu-node-02", "ib.port", "P2", "monitor", "mlx5_2/1")],
        },
        "gpu-node-09": {"status": "healthy", "rack": None, "findings": [_f("gpu-node-09", "node.drift", "P3", "none")]},
    }
    cluster = [
        dict(_f(None, "cluster.rack_event", "P0", "monitor", "rack:r02"), host=None),
        dict(_f(None, "cluster.subnet_manager", "P0", "contact_vendor", "subnet_manager"), host=None),
    ]
    return _report.build_report("2026-12-02T10:00:00Z", nodes, cluster, "2026.12.0", "abc")


def test_by_severity_has_all_four_in_order():
    out = FB.findings_by(report())
    assert list(out) == ["P0", "P1", "P2", "P3"]
    assert [f["check"] for f in out["P0"]] == ["cluster.rack_event", "cluster.subnet_manager"]
    assert [(f["host"], f["check"]) for f in out["P2"]] == [("gpu-node-02", "ib.port"), ("gpu-node-07", "gpu.temp")]
    assert out["P1"][0] == report()["nodes"]["gpu-node-07"]["findings"][0]  # the finding as the report has it
    assert list(FB.findings_by(report(), cluster=False)["P0"]) == []
    assert FB.findings_by([]) == {"P0": [], "P1": [], "P2": [], "P3": []}


def test_by_rack_check_host_action():
    by_rack = FB.findings_by(report(), "rack")
    assert list(by_rack) == ["(cluster)", "(no rack)", "r01", "r02"]
    assert [f["check"] for f in by_rack["r02"]] == ["cluster.rack_event", "gpu.xid", "gpu.temp"]  # P0 first
    assert [f["host"] for f in by_rack["(no rack)"]] == ["gpu-node-09"]
    assert [f["check"] for f in by_rack["(cluster)"]] == ["cluster.subnet_manager"]
    by_check = FB.findings_by(report(), key="check", cluster=False)
    assert list(by_check) == ["gpu.temp", "gpu.xid", "ib.port", "node.drift"]
    assert list(FB.findings_by(report(), "host")) == ["(cluster)", "gpu-node-02", "gpu-node-07", "gpu-node-09"]
    assert [f["host"] for f in FB.findings_by(report(), "action")["isolate"]] == ["gpu-node-07"]


def test_report_json_text_result_and_list_inputs():
    rep = report()
    text = _report.to_json(rep)  # what lookup('file', 'report.json') gives a play
    assert FB.findings_by(text, "rack") == FB.findings_by(rep, "rack")
    result = {"summary": rep["summary"], "nodes": {h: dict(n, facts=None) for h, n in rep["nodes"].items()}}
    assert FB.findings_by(result, "check") == FB.findings_by(rep, "check")
    flat = [f for n in rep["nodes"].values() for f in n["findings"]]
    assert FB.findings_by(flat, "host") == FB.findings_by(rep, "host", cluster=False)
    assert list(FB.findings_by(flat, "rack")) == ["(no rack)"]  # a bare list has no racks
    assert list(FB.findings_by([dict(flat[0], rack="r9")], "rack")) == ["r9"]
    odd = FB.findings_by([dict(flat[0], severity="P7")])
    assert list(odd) == ["P0", "P1", "P2", "P3", "none"] and len(odd["none"]) == 1


def test_host_is_set_from_the_node():
    rep = {"nodes": {"n1": {"rack": "r1", "findings": [{"check": "gpu.xid", "severity": "P1"}]}}}
    assert FB.findings_by(rep)["P1"] == [{"check": "gpu.xid", "severity": "P1", "host": "n1"}]


@pytest.mark.parametrize(
    ("value", "kw", "expect"),
    [
        ("{not json", {}, "input text is not JSON"),
        ({"summary": {}}, {}, "with a 'nodes' mapping"),
        ({"nodes": {"a": []}}, {}, "node 'a' is not a mapping"),
        ({"nodes": {"a": {"findings": "x"}}}, {}, "node 'a''s findings is not a list"),
        ({"nodes": {}, "summary": {"cluster_findings": [1]}}, {}, "summary.cluster_findings is not a list"),
        ([{"check": "x"}, "y"], {}, "the input is not a list of findings"),
        ([], {"key": "colour"}, "key must be one of severity, check, rack, host, action"),
        ([], {"cluster": "maybe"}, "cluster must be a boolean"),
        (json.dumps([1]), {}, "the input is not a list of findings"),
    ],
)
def test_findings_by_bad_input(value, kw, expect):
    with pytest.raises(AnsibleFilterError) as exc:
        FB.findings_by(value, **kw)
    assert str(exc.value).startswith("gpuops.cluster.findings_by: ") and expect in str(exc.value), str(exc.value)


def test_filter_maps():
    assert XI.FilterModule().filters() == {"xid_info": XI.xid_info}
    assert FB.FilterModule().filters() == {"findings_by": FB.findings_by}


REAL = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "report", "sim16-report.json")


def test_a_real_report():
    with open(REAL, encoding="utf-8") as fh:
        text = fh.read()
    rep = json.loads(text)
    by_sev = FB.findings_by(text)
    assert {k: len(v) for k, v in by_sev.items()} == rep["summary"]["severity"]  # the report's own counts
    by_rack = FB.findings_by(text, "rack")
    assert list(by_rack) == ["(cluster)", "rack-01", "rack-02"]
    assert {f["host"] for f in by_rack["rack-02"]} == {"gpu-node-11", "gpu-node-16"}
    assert [f["check"] for f in by_rack["(cluster)"]] == ["cluster.capacity"]
    assert [(f["host"], f["check"]) for f in FB.findings_by(text, "action")["isolate"]] == [
        ("gpu-node-03", "gpu.xid"),
        ("gpu-node-11", "gpu.diag"),
    ]
    assert IT.isolation_targets(text)["nodes"] == ["gpu-node-03", "gpu-node-11"] == IT.isolation_targets(rep)["nodes"]
    with pytest.raises(AnsibleFilterError, match="input text is not JSON"):
        IT.isolation_targets(text[:-200])
