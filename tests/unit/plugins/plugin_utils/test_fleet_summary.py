"""The fleet checkup of the inspection report (report.json fleet_summary, report.md, report.html): versions and
their spread, hardware per class, and with a store the open incidents and the recurring faults of the period."""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import (
    fleet_summary as _fleet_summary,
    report as _report,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store

from service_ledger import E, S, build_ledger, insert  # noqa: E402


def facts(driver, model, gpus, fw, kernel="6.8.0-45-generic"):
    return {
        "gpu": {
            "driver_version": driver,
            "cuda_version": "12.4",
            "gpus": [{"index": i, "name": model, "vbios_version": "96.00.89.00.01"} for i in range(gpus)],
        },
        "ib": {"hcas": [{"name": "mlx5_%d" % i, "ca_type": "MT4129", "fw_version": fw} for i in range(2)]},
        "node": {"kernel": kernel},
        "bmc": {"mc": {"firmware_revision": "1.10"}},
    }


NODES = {
    "n1": {"status": "healthy", "findings": [], "facts": facts("550.54.15", "NVIDIA H100 80GB HBM3", 8, "28.39.1002")},
    "n2": {"status": "healthy", "findings": [], "facts": facts("550.54.15", "NVIDIA H100 80GB HBM3", 8, "28.39.1002")},
    "n3": {
        "status": "degraded",
        "findings": [{"check": "gpu.xid", "severity": "P2", "id": "x"}],
        "facts": facts("535.161.08", "<script>alert(1)</script>", 4, "28.41.1000"),
    },
    "n4": {"status": "unreachable", "findings": [], "facts": {"unreachable": True}},
}


def test_versions_spread_and_hardware_counts():
    report = _report.build_report("2026-10-31T12:00:00Z", NODES, [], "1", include_facts=False)
    fs = report["fleet_summary"]
    assert "facts" not in report["nodes"]["n1"]  # the summary read them anyway
    drv = fs["versions"]["driver"]
    assert drv["values"] == {"535.161.08": 1, "550.54.15": 2} and drv["distinct"] == 2
    assert (drv["majority"], drv["majority_nodes"], drv["nodes_reporting"], drv["outliers"]) == ("550.54.15", 2, 3, ["n3"])
    assert fs["versions"]["hca_firmware"]["outliers"] == ["n3"]
    assert fs["versions"]["cuda"]["distinct"] == 1 and fs["versions"]["cuda"]["outliers"] == []
    assert fs["versions"]["ofed"] == {"values": {}, "distinct": 0, "majority": None, "nodes_reporting": 0, "outliers": []}
    hw = fs["hardware"]
    assert hw["gpu_models"]["NVIDIA H100 80GB HBM3"] == {"nodes": 2, "gpus": 16}
    assert hw["gpu_models"]["unknown"] == {"nodes": 1, "gpus": 0}  # the unreachable node
    assert hw["gpus"] == 20 and hw["hcas"] == {"MT4129": 6} and hw["nodes"] == 4
    assert fs["faults_source"] == "report" and "open_incidents" not in fs
    assert fs["top_faults"] == [{"check": "gpu.xid", "occurrences": 1, "hosts": 1, "severity": "P2"}]


def test_markdown_and_html_show_it_escaped():
    report = _report.build_report("2026-10-31T12:00:00Z", NODES, [], "1")
    md = _report.to_markdown(report)
    assert "## Fleet checkup" in md and "| driver | 550.54.15 | 2/3 | 2 | n3 |" in md
    assert r"\<script\>alert(1)\</script\>" in md and "<script>" not in md
    html = _report.to_html(report)
    assert 'id="fleet-checkup"' in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert '<tr data-version="ofed">' not in html  # not collected: no row


def test_with_a_store_open_incidents_and_recurring_faults_of_the_period(store_kw):
    store = open_store(**store_kw)
    try:
        build_ledger(store)
        insert(store, "finding_history", [
            {"fingerprint": "n%d|gpu.xid:3" % i, "host": "n%d" % i, "check_id": "gpu.xid", "severity": "P1",
             "first_seen": S + i * 3600.0, "last_seen": S + i * 7200.0} for i in (2, 3)
        ] + [{"fingerprint": "n9|old", "host": "n9", "check_id": "old.check", "severity": "P0",
              "first_seen": S - 90 * 86400.0, "last_seen": S - 80 * 86400.0, "cleared_at": S - 80 * 86400.0}])  # fmt: skip
        report = _report.build_report("2026-10-31T12:00:00Z", NODES, [], "1")
        section = _fleet_summary.store_section(report, store, {"start": S, "end": E, "label": "2026-10"})
        default = _fleet_summary.fleet_summary(report, store)  # the 30 days before the report
    finally:
        store.close()
    assert section["open_incidents"]["total"] == 8
    assert section["open_incidents"]["by_severity"] == {"P0": 4, "P1": 2, "P2": 2}
    assert section["open_incidents"]["oldest"][0]["severity"] == "P0"
    top = section["top_faults"]
    assert top[0] == {"check": "gpu.xid", "occurrences": 3, "hosts": 3, "severity": "P0"}
    assert "old.check" not in [f["check"] for f in top]  # cleared before the period
    assert section["faults_source"] == "store" and section["faults_period"]["label"] == "2026-10"
    assert default["faults_period"]["label"] == "last 30 days" and default["versions"]["driver"]["distinct"] == 2
    report["fleet_summary"].update(section)
    assert "Top recurring faults (finding history, 2026-10)" in _report.to_markdown(report)
