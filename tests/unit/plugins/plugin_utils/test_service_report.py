"""The service report (docs/service-report.md): every figure on a small hand-built ledger whose answers are
worked out by hand below, on SQLite and PostgreSQL (store_kw); period parsing; escaping; deterministic SVG."""

from __future__ import annotations

import json
import os
import stat
import uuid

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _service_report as sr
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _service_report_render as render
from ansible_collections.gpuops.cluster.plugins.plugin_utils._db import open_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils._db import ledger_schema

H = 3600.0
D = 86400.0
S = 1790812800.0  # 2026-10-01T00:00:00Z
E = S + 31 * D  # 2026-11-01T00:00:00Z
HOSTILE_DOMAIN = "<script>{{ x }}$a$"  # domain is String(32)
HOSTILE = "<script>alert(1)</script> {{ lookup('pipe', 'id') }} $x^2$ | *bold* [l](http://x)"


def insert(store, table, rows):
    t = ledger_schema.tables().tables[table]
    with store.begin() as conn:
        conn.execute(t.insert(), rows)


def period_row(host, state, partition, gpus, start, end, status=None):
    return {
        "host": host,
        "state": state,
        "status": status or state,
        "partition": partition,
        "gpus": gpus,
        "started_at": start,
        "ended_at": end,
        "last_seen": end if end is not None else start,
    }


def incident(iid, host, sev, comp, domain, detected, *steps, fp=None):
    """An incident row; ``steps``: acknowledged_at, located_at, restored_at (missing: not yet)."""
    ack, located, restored = (tuple(steps) + (None, None, None))[:3]
    row = {
        "incident_id": iid,
        "fingerprint": fp,
        "host": host,
        "severity": sev,
        "domain": domain,
        "component": comp,
        "title": "%s on %s" % (comp, host),
        "source": "finding",
        "state": "open",
        "detected_at": detected,
        "acknowledged_at": ack,
        "located_at": located,
        "restored_at": restored,
    }
    return row


def build_ledger(store):
    """The hand-built month (October 2026, 744 hours); the expected figures are derived in each test."""
    insert(
        store,
        "node_periods",
        [
            # n1, 8 GPUs, partition a: up from before S to S+100h, down 10 h (2 h inside window w1), up to the end
            period_row("n1", "up", "a", 8, S - 10 * D, S + 100 * H),
            period_row("n1", "down", "a", 8, S + 100 * H, S + 110 * H, status="critical"),
            period_row("n1", "up", "a", 8, S + 110 * H, None),  # open: runs to min(E, now)
            # n2, 4 GPUs, partition b: unknown 24 h, down 24 h (12 h inside the union of w2 and w3), up past E
            period_row("n2", "unknown", "b", 4, S, S + 24 * H, status="error"),
            period_row("n2", "down", "b", 4, S + 24 * H, S + 48 * H),
            period_row("n2", "up", "b", 4, S + 48 * H, E + 5 * D),
            # n3, 8 GPUs: never observed in the period (unknown from before S to S+10d)
            period_row("n3", "unknown", "a", 8, S - 5 * D, S + 10 * D, status="error"),
            # n4: a period wholly before the report's period
            period_row("n4", "up", "a", 8, S - 20 * D, S - 10 * D),
        ],
    )
    insert(
        store,
        "maintenance_windows",
        [
            {
                "window_id": "w1",
                "name": "n1 firmware",
                "starts_at": S + 104 * H,
                "ends_at": S + 106 * H,
                "scope": {"hosts": ["n1"]},
            },
            {
                "window_id": "w2",
                "name": "partition b",
                "starts_at": S + 20 * H,
                "ends_at": S + 30 * H,
                "scope": {"partitions": ["b"]},
            },
            {
                "window_id": "w3",
                "name": "everything",
                "starts_at": S + 28 * H,
                "ends_at": S + 36 * H,
                "scope": {"all": True},
            },
            {
                "window_id": "w4",
                "name": "other host",
                "starts_at": S + 100 * H,
                "ends_at": S + 110 * H,
                "scope": {"hosts": ["n9"]},
            },
        ],
    )
    m = 60.0
    insert(
        store,
        "incidents",
        [
            # P0 all met (respond 15m, locate 4h, restore 2h)
            incident(
                "INC-20261005-0001",
                "n1",
                "P0",
                "gpu",
                "gpu",
                S + 100 * H,
                S + 100 * H + 10 * m,
                S + 103 * H,
                S + 101.5 * H,
                fp="n1|gpu.xid:0",
            ),
            # P0 respond breached (20 min)
            incident(
                "INC-20261009-0002",
                "n1",
                "P0",
                "gpu",
                "gpu",
                S + 200 * H,
                S + 200 * H + 20 * m,
                S + 201 * H,
                S + 201 * H,
                fp="n1|gpu.ecc:0",
            ),
            # P1 detected 2026-10-13 12:00; locate due next_day = 2026-10-15 00:00; located 04:00 -> breached
            incident(
                "INC-20261013-0003",
                "n2",
                "P1",
                "psu",
                "power",
                S + 300 * H,
                S + 300 * H + 10 * m,
                S + 340 * H,
                S + 320 * H,
                fp="n2|bmc.psu:1",
            ),
            # P1 restore breached (30 h > 24 h)
            incident(
                "INC-20261017-0004",
                "n2",
                "P1",
                "ib_link",
                "network",
                S + 400 * H,
                S + 400 * H + 5 * m,
                S + 401 * H,
                S + 430 * H,
            ),
            # P2 never acknowledged: respond due S+742h < E -> breached when evaluated at E
            incident("INC-20261031-0005", "n1", "P2", "nvlink", HOSTILE_DOMAIN, S + 740 * H),
            # P2 never acknowledged: due E+1.5h, still running at E (not a breach although now is later)
            incident("INC-20261031-0006", "n1", "P2", "nvlink", "gpu", S + 743.5 * H),
            # outside the period: before S, and exactly at E
            incident("INC-20260930-0007", "n2", "P0", "gpu", "gpu", S - H),
            incident("INC-20261101-0008", "n2", "P0", "gpu", "gpu", E),
        ],
    )
    insert(
        store,
        "finding_history",
        [
            {
                "fingerprint": "n1|gpu.xid:0",
                "host": "n1",
                "check_id": "gpu.xid",
                "severity": "P0",
                "component": "gpu",
                "part_serial": "GPU-SN-1",
                "first_seen": S + 100 * H,
                "last_seen": S + 101 * H,
            },
            {
                "fingerprint": "n1|gpu.ecc:0",
                "host": "n1",
                "check_id": "gpu.ecc",
                "severity": "P0",
                "component": "gpu",
                "part_serial": "GPU-SN-1",
                "first_seen": S + 200 * H,
                "last_seen": S + 201 * H,
            },
            {
                "fingerprint": "n2|bmc.psu:1",
                "host": "n2",
                "check_id": "bmc.psu",
                "severity": "P1",
                "component": "psu",
                "part_serial": "PSU-SN-9",
                "first_seen": S + 300 * H,
                "last_seen": S + 320 * H,
            },
        ],
    )
    insert(
        store,
        "reviews",
        [
            {
                "incident_id": "INC-20261005-0001",
                "cause": HOSTILE,
                "fix": "replaced GPU\nreseated riser",
                "change_ref": "policy v7",
                "checks": ["gpu.xid", "gpu.ecc"],
                "actor": "op",
                "at": S + 110 * H,
            },
            {
                "incident_id": "INC-20261009-0002",
                "cause": "ECC",
                "fix": "retired pages",
                "change_ref": "ovr-3",
                "checks": ["gpu.ecc"],
                "actor": "op",
                "at": S + 210 * H,
            },
        ],
    )
    samples = []
    for run, at, parts in (
        ("r1", S + H, {"a": (16, 10), "b": (4, 2)}),  # 12/20 = 0.6
        ("r2", S + 50 * H, {"a": (16, 14), "b": (4, 3)}),  # 17/20 = 0.85 (the peak)
        ("r0", S - H, {"a": (16, 16), "b": (4, 4)}),  # before S: 1.0, not counted
        ("r3", S + 60 * H, {"a": (16, 5), "b": (4, 2)}),  # 7/20 = 0.35
    ):
        samples += [
            {"run_id": run, "at": at, "partition": p, "gpus_total": t, "gpus_alloc": a} for p, (t, a) in parts.items()
        ]
    insert(store, "allocation_samples", samples)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def ledger_kw(request, tmp_path_factory):
    """open_store() arguments of a store holding the hand-built ledger, once per backend for the module."""
    if request.param == "sqlite":
        yield {"state_dir": str(tmp_path_factory.mktemp("state"))}
        return
    import sqlalchemy as sa  # pylint: disable=import-outside-toplevel

    server = request.getfixturevalue("pg_server_url")
    name = "t_" + uuid.uuid4().hex[:16]
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql("CREATE DATABASE %s" % name)
    yield {"db_url": sa.engine.make_url(server).set(database=name).render_as_string(hide_password=False)}
    with admin.connect() as conn:
        conn.exec_driver_sql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % name)
    admin.dispose()


@pytest.fixture(scope="module")
def ledger(ledger_kw):
    store = open_store(**ledger_kw)
    build_ledger(store)
    yield store
    store.close()


@pytest.fixture(scope="module")
def report(ledger):
    return sr.compute(ledger, sr.parse_period("2026-10", now=E), now=E + 10 * D)


@pytest.fixture(scope="module")
def sqlite_report(tmp_path_factory):
    """The same report from SQLite only, for the rendering tests (rendering does not depend on the backend)."""
    store = open_store(state_dir=str(tmp_path_factory.mktemp("render")))
    try:
        build_ledger(store)
        return sr.compute(store, sr.parse_period("2026-10", now=E), now=E + 10 * D)
    finally:
        store.close()


@pytest.fixture(scope="module")
def svgs(sqlite_report):
    return render.charts(sqlite_report)


# ---------------------------------------------------------------------------------------------- periods
@pytest.mark.parametrize(
    "text, start, end, label",
    [
        ("2026Q4", "2026-10-01T00:00:00Z", "2027-01-01T00:00:00Z", "2026Q4"),
        ("2026q1", "2026-01-01T00:00:00Z", "2026-04-01T00:00:00Z", "2026Q1"),
        ("2026-10-01/2026-12-31", "2026-10-01T00:00:00Z", "2027-01-01T00:00:00Z", "2026-10-01/2026-12-31"),
        ("2026-10-05/2026-10-05", "2026-10-05T00:00:00Z", "2026-10-06T00:00:00Z", "2026-10-05/2026-10-05"),
        ("2026-02", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-02"),
        (" 2026-12 ", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", "2026-12"),
    ],
)
def test_parse_period(text, start, end, label):
    p = sr.parse_period(text, now=E + 365 * D)
    assert (sr.iso(p["start"]), sr.iso(p["end"]), p["label"]) == (start, end, label)


@pytest.mark.parametrize(
    "text, message",
    [
        ("2026Q5", "not understood"),
        ("Q4", "not understood"),
        ("2026-13", "month must be 01..12"),
        ("2026-02-30/2026-03-01", "not a date"),
        ("2026-12-31/2026-10-01", "ends before it starts"),
        ("2026-10-01..2026-12-31", "not understood"),
        ("{{ 7*7 }}", "not understood"),
        ("", "must be text"),
        (None, "must be text"),
        ("2099Q1", "starts in the future"),
    ],
)
def test_parse_period_refuses_with_a_clear_message(text, message):
    with pytest.raises(sr.ServiceReportError, match=message.replace(".", r"\.")):
        sr.parse_period(text, now=E)


# ---------------------------------------------------------------------------------------------- figures
def test_availability_by_hand(report):
    a = report["availability"]
    # n1: up 100 h + (744 - 110) h = 734 h x 8; down 10 h, of which 2 h inside w1 (planned) and 8 h unplanned
    # n2: up (744 - 48) h x 4 (clipped at E); down 24 h: windows w2 u w3 = [20, 36) h covers [24, 36): 12 h planned
    # n3: only unknown, clipped at S: 240 h x 8; n4 is wholly before S
    up = 734 * 8 + 696 * 4
    unplanned = 8 * 8 + 12 * 4
    assert a["cluster"] == round(100.0 * up / (up + unplanned), 3)
    assert a["nodes"] == {
        "n1": round(100.0 * 734 * 8 / (734 * 8 + 64), 3),
        "n2": round(100.0 * 696 * 4 / (696 * 4 + 48), 3),
        "n3": None,  # never observed: null, not 0 or 100
    }
    assert a["partitions"] == {"a": a["nodes"]["n1"], "b": a["nodes"]["n2"]}
    assert a["up_gpu_hours"] == up
    assert a["unplanned_gpu_hours"] == unplanned
    assert a["planned_gpu_hours"] == 2 * 8 + 12 * 4
    assert a["unknown_gpu_hours"] == 24 * 4 + 240 * 8
    assert a["trend_bucket_s"] == D and len(a["trend"]) == 31
    day5 = a["trend"][4]  # 2026-10-05: n1 down 04:00-14:00 (06:00-08:00 planned): 8 h unplanned x 8 GPUs
    assert day5[0] == S + 4 * D
    assert day5[1] == round(100.0 * (24 * 8 + 24 * 4 - 10 * 8) / (24 * 8 + 24 * 4 - 10 * 8 + 64), 3)


def test_an_open_period_ends_at_now_when_now_is_inside_the_period(store_kw):
    store = open_store(**store_kw)
    try:
        insert(
            store, "node_periods", [period_row("x", "up", "a", 2, S, None), period_row("y", "down", "a", 2, S, None)]
        )
        rep = sr.compute(store, sr.parse_period("2026-10", now=S + D), now=S + 10 * H)
    finally:
        store.close()
    assert rep["availability"]["up_gpu_hours"] == 20.0
    assert rep["availability"]["unplanned_gpu_hours"] == 20.0
    assert rep["availability"]["cluster"] == 50.0


def test_sla_breaches_on_each_clock(report):
    s = report["sla"]
    assert s["incidents"] == 6
    assert s["breaches"] == ["INC-20261009-0002", "INC-20261013-0003", "INC-20261017-0004", "INC-20261031-0005"]
    clocks = {b["incident_id"]: b["clocks"] for b in s["breach_details"]}
    assert clocks == {
        "INC-20261009-0002": ["respond"],
        "INC-20261013-0003": ["locate"],
        "INC-20261017-0004": ["restore"],
        "INC-20261031-0005": ["respond"],
    }
    assert s["by_severity"] == {
        "P0": {"incidents": 2, "breached": 1, "compliance_pct": 50.0},
        "P1": {"incidents": 2, "breached": 2, "compliance_pct": 0.0},
        "P2": {"incidents": 2, "breached": 1, "compliance_pct": 50.0},
        "P3": {"incidents": 0, "breached": 0, "compliance_pct": None},
    }
    assert s["evaluated_at"] == "2026-11-01T00:00:00Z"  # min(E, now), not now
    assert report["incidents"]["by_severity"] == {"P0": 2, "P1": 2, "P2": 2, "P3": 0}
    assert report["incidents"]["by_domain"]["gpu"] == {"P0": 2, "P1": 0, "P2": 1, "P3": 0}


def test_policy_sla_targets_change_the_breaches(ledger):
    period = sr.parse_period("2026-10", now=E)
    policy = {"targets": {"P0": {"respond": "30m"}, "P1": {"restore": "48h"}}, "capacity_trigger": 0.9}
    rep = sr.compute(ledger, period, policy_sla=policy, now=E)
    assert rep["sla"]["breaches"] == ["INC-20261013-0003", "INC-20261031-0005"]
    assert rep["capacity"]["trigger"] == 0.9 and rep["capacity"]["above_trigger"] == 0


def test_capacity_peak_series_and_trigger(report):
    c = report["capacity"]
    assert c["peak_allocated_share"] == 0.85
    assert c["series"] == [[S + H, 0.6], [S + 50 * H, 0.85], [S + 60 * H, 0.35]]
    assert c["trigger"] == 0.7
    assert (c["above_trigger"], c["first_above_trigger"]) == (1, "2026-10-03T02:00:00Z")


def test_mttr_mtbf_per_component_class(report):
    # restored: gpu 1.5 h and 1 h; psu 20 h; ib_link 30 h; nvlink never restored
    assert report["mttr_h"] == {"gpu": 1.25, "ib_link": 30.0, "psu": 20.0}
    # MTBF = observed up node-hours / failures: n1 734 h + n2 696 h (n3 never up)
    assert report["mtbf_h"] == {"gpu": 715.0, "ib_link": 1430.0, "nvlink": 715.0, "psu": 1430.0}
    assert report["failures"] == {"gpu": 2, "ib_link": 1, "nvlink": 2, "psu": 1}
    assert report["mttr_trend"][0] == [S + 4 * D, 1.5]


def test_repeat_offenders_by_node_and_part_serial(report):
    ro = report["repeat_offenders"]
    assert [(n["host"], n["incidents"]) for n in ro["nodes"]] == [("n1", 4), ("n2", 2)]
    assert ro["serials"] == [
        {
            "serial": "GPU-SN-1",
            "incidents": 2,
            "incident_ids": ["INC-20261005-0001", "INC-20261009-0002"],
            "hosts": ["n1"],
        }
    ]


def test_reviews_and_checks_changed(report):
    assert [r["incident_id"] for r in report["reviews"]] == ["INC-20261005-0001", "INC-20261009-0002"]
    assert report["reviews"][0]["cause"] == HOSTILE
    assert report["reviews"][0]["checks"] == ["gpu.ecc", "gpu.xid"]
    assert report["checks_changed_by_reviews"] == ["gpu.ecc", "gpu.xid"]
    assert report["period"]["label"] == "2026-10" and report["schema"] == "gpuops.service_report/v1"


def test_an_empty_ledger_gives_null_figures_not_errors(store_kw, tmp_path):
    store = open_store(**store_kw)
    try:
        rep = sr.compute(store, sr.parse_period("2026Q4", now=E), now=E)
    finally:
        store.close()
    assert rep["availability"]["cluster"] is None and rep["capacity"]["peak_allocated_share"] is None
    assert rep["sla"]["breaches"] == [] and rep["reviews"] == []
    assert rep["availability"]["trend_bucket_s"] == 7 * D  # a quarter: weekly buckets
    paths = render.write(render.rendered(rep), str(tmp_path / "out"))
    assert "No incidents in the period" in open(paths["markdown"], encoding="utf-8").read()


# ---------------------------------------------------------------------------------------------- rendering
def test_files_are_private_and_hostile_text_stays_text(sqlite_report, svgs, tmp_path):
    report = sqlite_report
    texts = {
        "json": render.to_json(report),
        "markdown": render.to_markdown(report),
        "html": render.to_html(report, svgs),
    }
    paths = render.write(texts, str(tmp_path / "rep"))
    assert sorted(os.path.basename(p) for p in paths.values()) == [
        "service-report.html",
        "service-report.json",
        "service-report.md",
    ]
    for path in paths.values():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(str(tmp_path / "rep")).st_mode) == 0o700
    data = json.loads(open(paths["json"], encoding="utf-8").read())
    assert data["availability"]["cluster"] == report["availability"]["cluster"]
    html = open(paths["html"], encoding="utf-8").read()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "{{ lookup(&#39;pipe&#39;, &#39;id&#39;) }}" in html  # shown, never rendered
    assert html.count("<svg") == 5
    md = open(paths["markdown"], encoding="utf-8").read()
    assert "<script>" not in md and r"\<script\>alert(1)\</script\>" in md
    assert r"\[l\](http://x)" in md and r"\*bold\*" in md


def test_svg_is_deterministic_and_labels_are_literal(sqlite_report, svgs):
    first, second = svgs, render.charts(sqlite_report)
    assert first == second
    assert set(first) == {"availability", "incidents", "sla", "mttr", "capacity"}
    incidents = first["incidents"]
    assert "&lt;script&gt;" in incidents and "<script" not in incidents  # the hostile domain, escaped by the writer
    assert "<dc:date>" not in first["availability"]


def test_missing_matplotlib_is_a_clear_error(sqlite_report, monkeypatch):
    report = sqlite_report
    import builtins

    real = builtins.__import__

    def no_mpl(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    with pytest.raises(sr.ServiceReportError, match="service report charts need matplotlib"):
        render.to_html(report)
    assert "Service report 2026-10" in render.to_markdown(report)  # Markdown and JSON need no matplotlib
