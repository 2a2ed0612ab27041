"""tools/simcluster/history.py (issue 15): the simulated quarter, its answer key, the loader and the scorer."""

from __future__ import annotations

import datetime
import json
import os
import random
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TOOLS = os.path.join(ROOT, "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

from simcluster import history as H  # noqa: E402
from simcluster import history_key as K  # noqa: E402
from simcluster import history_load as L  # noqa: E402
from simcluster import score_history as SH  # noqa: E402
from simcluster.generate import hostnames  # noqa: E402

HOUR, DAY = 3600.0, 86400.0
S = datetime.datetime(2026, 10, 1, tzinfo=datetime.timezone.utc).timestamp()  # a Thursday
E = S + 7 * DAY


def _files(d: str) -> dict:
    out = {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as fh:
            out[name] = fh.read()
    return out


# ---------------------------------------------------------------------------------------------- generation


def test_same_seed_same_files_other_seed_other_files(tmp_path):
    hosts = hostnames(16)
    keys = [H.write_history(hosts, str(tmp_path / n), 14, S, seed) for n, seed in (("a", 7), ("b", 7), ("c", 8))]
    a, b, c = (_files(str(tmp_path / n / "history")) for n in "abc")
    assert set(a) == {t + ".jsonl" for t in H.TABLES} | {"manifest.json"}
    assert a == b and keys[0] == keys[1]
    assert a["node_periods.jsonl"] != c["node_periods.jsonl"] and a["incidents.jsonl"] != c["incidents.jsonl"]


@pytest.fixture(scope="module")
def quarter():
    """The demo's quarter: 64 nodes, 90 days, drawn in memory."""
    return H.draw(hostnames(64), S, 90, 7)


def test_quarter_has_every_severity_and_every_clock_breached(quarter):
    meta = quarter["meta"]
    key = K.sla(quarter["incidents"], meta["start"], meta["end"])
    inside = [i for i in quarter["incidents"] if meta["start"] <= i["detected_at"] < meta["end"]]
    assert {i["severity"] for i in inside} == {"P0", "P1", "P2", "P3"}
    assert set(key["breached_clocks"]) == {"respond", "onsite", "locate", "restore", "plan"}
    assert 0 < len(key["breaches"]) < len(inside)
    reviewed = {r["incident_id"] for r in quarter["reviews"]}
    assert reviewed == {i["incident_id"] for i in quarter["incidents"] if i["severity"] in ("P0", "P1")}
    assert {c["action"] for c in quarter["changes"]} >= {"isolate", "resume", "gpu_reset", "replace"}
    assert any(i["source"] == "ticket" for i in inside) and quarter["tickets"]


def test_quarter_periods_tile_the_history_and_the_load_peaks_above_the_trigger(quarter):
    meta = quarter["meta"]
    by_host: dict = {}
    for p in quarter["node_periods"]:
        by_host.setdefault(p["host"], []).append(p)
    assert len(by_host) == 64
    for rows in by_host.values():
        assert rows[0]["started_at"] == meta["history_start"] and rows[-1]["ended_at"] == meta["end"]
        assert all(x["ended_at"] == y["started_at"] for x, y in zip(rows, rows[1:]))
        assert all(x["state"] != y["state"] or x["reason"] != y["reason"] for x, y in zip(rows, rows[1:]))
    av = K.availability(quarter["node_periods"], quarter["maintenance_windows"], meta["start"], meta["end"])
    assert av["planned_gpu_hours"] > 0 and av["unplanned_gpu_hours"] > 0 and av["unknown_gpu_hours"] > 0
    assert 95 < av["cluster"] < 100
    scopes = {next(iter(w["scope"])) for w in quarter["maintenance_windows"]}
    assert scopes == {"all", "hosts", "partitions"}
    cap = K.capacity(quarter["allocation_samples"], meta["start"], meta["end"])
    assert 0.7 < cap["peak_allocated_share"] < 1.0 and cap["runs"] == 90 * 6


def test_generate_py_history_days_adds_the_key_section(tmp_path):
    out = str(tmp_path / "sim")
    proc = subprocess.run(
        [sys.executable, os.path.join(TOOLS, "simcluster", "generate.py"), "--nodes", "4", "--out", out,
         "--faults", "none", "--jobs", "1", "--history-days", "7", "--history-start", "2026-07-01"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(out, "answer_key.json")) as fh:
        hist = json.load(fh)["history"]
    with open(os.path.join(out, "history", "manifest.json")) as fh:
        manifest = json.load(fh)
    assert manifest["schema"] == "gpuops.sim_history/v1" and manifest["nodes"] == 4
    assert hist["days"] == 7 and hist["period"] == "2026-07-01/2026-07-07" == manifest["period"]
    assert set(hist["availability"]["nodes"]) == set(hostnames(4))
    assert {"cluster", "nodes"} <= set(hist["availability"]) and {"breaches", "incidents"} <= set(hist["sla"])
    assert "peak_allocated_share" in hist["capacity"]


def test_period_label():
    q4 = datetime.datetime(2026, 10, 1, tzinfo=datetime.timezone.utc).timestamp()
    jan = datetime.datetime(2027, 1, 1, tzinfo=datetime.timezone.utc).timestamp()
    assert H.period_label(q4, jan) == "2026Q4"
    assert H.period_label(q4, q4 + 90 * DAY) == "2026-10-01/2026-12-29"


# ---------------------------------------------------------------------------------------------- the key, by hand


def _period(host, state, a, b, gpus=8, part="a"):
    return {"host": host, "state": state, "partition": part, "gpus": gpus, "started_at": S + a, "ended_at": S + b}


def _inc(iid, sev, detected, ack=None, loc=None, rest=None, **steps):
    """An incident row; ``steps``: onsite, planned (the on-site and plan clocks' step times)."""
    return {"incident_id": iid, "severity": sev, "detected_at": detected, "acknowledged_at": ack,
            "located_at": loc, "restored_at": rest, "onsite_at": steps.get("onsite"),
            "planned_at": steps.get("planned")}  # fmt: skip


def _t(day, hour=0, minute=0):
    """2026-10-DAY HH:MM UTC."""
    return datetime.datetime(2026, 10, day, hour, minute, tzinfo=datetime.timezone.utc).timestamp()


HAND = {
    "node_periods": [
        # n1, 8 GPUs: 4 h of unplanned downtime
        _period("n1", "up", -DAY, DAY), _period("n1", "down", DAY, DAY + 4 * HOUR), _period("n1", "up", DAY + 4 * HOUR, 7 * DAY),
        # n2, 4 GPUs: 6 h down, 4 h of it inside its host window; then 18 h unreachable
        _period("n2", "up", 0, 2 * DAY, gpus=4), _period("n2", "down", 2 * DAY, 2 * DAY + 6 * HOUR, gpus=4),
        _period("n2", "unknown", 2 * DAY + 6 * HOUR, 3 * DAY, gpus=4), _period("n2", "up", 3 * DAY, 7 * DAY, gpus=4),
        # n3, 8 GPUs, partition b: 27 h down, 26 h inside the partition window and the cluster window that follows it
        _period("n3", "up", 0, 5 * DAY, part="b"), _period("n3", "down", 5 * DAY, 6 * DAY + 3 * HOUR, part="b"),
        _period("n3", "up", 6 * DAY + 3 * HOUR, 8 * DAY, part="b"),
    ],
    "maintenance_windows": [
        {"window_id": "w1", "starts_at": S + 2 * DAY, "ends_at": S + 2 * DAY + 4 * HOUR, "scope": {"hosts": ["n2"]}},
        {"window_id": "w2", "starts_at": S + 5 * DAY, "ends_at": S + 6 * DAY, "scope": {"partitions": ["b"]}},
        {"window_id": "w3", "starts_at": S + 6 * DAY, "ends_at": S + 6 * DAY + 2 * HOUR, "scope": {"all": True}},
        {"window_id": "w4", "starts_at": S + DAY, "ends_at": S + 2 * DAY, "scope": {"hosts": ["n3"]}},  # n1 not covered
    ],
    "incidents": [
        # the service terms: P0 respond 15m, on site 4h, located 2h; P1 respond 30m, on site by the end of the next
        # working day, restored 24h; P2 respond 2h, plan 3 working days; P3 respond 1 working day. 2026-10-02 is a Friday.
        _inc("A", "P0", _t(2), _t(2, 0, 10), _t(2, 3), _t(2, 4), onsite=_t(2, 1)),  # located after 3 h > 2 h: breached
        _inc("B", "P1", _t(2, 20), _t(2, 20, 20), _t(3, 23), _t(3, 19), onsite=_t(5, 23)),  # on site Monday: met
        _inc("C", "P1", _t(2, 20), _t(2, 20, 20), _t(3, 23), _t(3, 19), onsite=_t(6, 0, 30)),  # Tuesday 00:30: breached
        _inc("D", "P2", _t(2, 12), _t(2, 13), planned=_t(7, 11)),  # 3 business days from Fri 12:00 = Wed 12:00
        _inc("E", "P2", _t(3, 10), _t(3, 11), planned=_t(7, 23)),  # a Saturday start counts from Monday: due Thu 00:00
        _inc("F", "P3", _t(2, 17), _t(5, 16)),  # 1 business day from Fri 17:00 = Mon 17:00
        _inc("G", "P3", _t(3, 12), _t(6, 0, 10)),  # Saturday: Monday 00:00 + 1 bd = Tue 00:00: breached
        _inc("H", "P1", S - 12 * HOUR, S + 5 * DAY),  # detected before the period: not counted
        _inc("I", "P0", E - HOUR),  # not acknowledged, due 45 min before the end: breached
        _inc("J", "P2", E - HOUR),  # not acknowledged, due after the end: still running
    ],
    "allocation_samples": [
        {"run_id": "r1", "at": S + HOUR, "partition": "a", "gpus_total": 12, "gpus_alloc": 10},
        {"run_id": "r1", "at": S + HOUR, "partition": "b", "gpus_total": 8, "gpus_alloc": 2},
        {"run_id": "r2", "at": S + 2 * DAY, "partition": "a", "gpus_total": 12, "gpus_alloc": 11},
        {"run_id": "r2", "at": S + 2 * DAY, "partition": "b", "gpus_total": 8, "gpus_alloc": 6},
        {"run_id": "r3", "at": S - HOUR, "partition": "a", "gpus_total": 12, "gpus_alloc": 12},  # before the period
        {"run_id": "r4", "at": E, "partition": "a", "gpus_total": 12, "gpus_alloc": 12},  # the end is exclusive
        {"run_id": "r5", "at": S + 3 * DAY, "partition": "a", "gpus_total": 12, "gpus_alloc": 9},
        {"run_id": "r5", "at": S + 3 * DAY, "partition": "b", "gpus_total": 8, "gpus_alloc": 7},
    ],
}  # fmt: skip


def _minute_count(rows: dict) -> dict:
    """The second, tiny calculation: walk every minute of the period and classify it."""
    acc: dict = {}
    for m in range(int((E - S) // 60)):
        t = S + m * 60 + 30
        for p in rows["node_periods"]:
            if p["started_at"] <= t < p["ended_at"]:
                a = acc.setdefault(p["host"], {"up": 0, "unplanned": 0, "planned": 0, "unknown": 0, "g": p["gpus"]})
                if p["state"] != "down":
                    a[p["state"]] += 1
                    continue
                hit = any(
                    w["starts_at"] <= t < w["ends_at"]
                    and (w["scope"].get("all") or p["host"] in w["scope"].get("hosts", ())
                         or p["partition"] in w["scope"].get("partitions", ()))
                    for w in rows["maintenance_windows"]
                )  # fmt: skip
                a["planned" if hit else "unplanned"] += 1
    return acc


def test_hand_history_key_known_answers():
    key = K.compute(HAND, S, E)
    av = key["availability"]
    assert av["nodes"] == {"n1": 97.619, "n2": 98.630, "n3": 99.296}
    assert av["cluster"] == 98.433  # GPU-weighted: 3016 / 3064 (unweighted would be 98.465)
    assert av["partitions"] == {"a": round(100 * (164 * 8 + 144 * 4) / (168 * 8 + 146 * 4), 3), "b": 99.296}
    assert (av["planned_gpu_hours"], av["unplanned_gpu_hours"], av["unknown_gpu_hours"]) == (224.0, 48.0, 72.0)
    assert key["sla"]["breaches"] == ["A", "C", "G", "I"]
    assert key["sla"]["incidents"] == 9
    assert key["sla"]["breached_clocks"] == {"onsite": 1, "locate": 1, "respond": 2}
    assert key["capacity"] == {"peak_allocated_share": 0.85, "runs": 3}


def test_hand_history_key_equals_a_minute_by_minute_count():
    key = K.compute(HAND, S, E)["availability"]
    acc = _minute_count(HAND)
    for host, a in acc.items():
        assert key["nodes"][host] == round(100.0 * a["up"] / (a["up"] + a["unplanned"]), 3)
    up = sum(a["up"] * a["g"] for a in acc.values())
    unplanned = sum(a["unplanned"] * a["g"] for a in acc.values())
    assert key["cluster"] == round(100.0 * up / (up + unplanned), 3)
    assert key["planned_gpu_hours"] == sum(a["planned"] * a["g"] for a in acc.values()) / 60.0


def test_due_times_agree_with_the_collections_sla_module():
    """Two implementations of the contract's targets (the key never imports _sla; this test compares them)."""
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import sla as _sla

    rng = random.Random(5)
    for _n in range(3000):
        start = float(round(rng.uniform(S - 10 * DAY, S + 100 * DAY)))
        for target in ("15m", "30m", "2h", "4h", "24h", "next_day", "next_business_day", "1bd", "3bd", "2d", "0.5bd"):
            assert K.due_at(start, target) == _sla.due(start, target), (start, target)
    for sev, clocks in K.TARGETS.items():
        assert {c: v for c, v in _sla.targets_for(sev).items() if v} == clocks


def test_quarter_breaches_agree_with_the_collections_sla_module(quarter):
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.service import sla as _sla

    end = quarter["meta"]["end"]
    for inc in quarter["incidents"]:
        assert K.breached_clocks(inc, end) == _sla.breached(inc, now=end), inc["incident_id"]


# ---------------------------------------------------------------------------------------------- the loader


@pytest.fixture(scope="module")
def small_history(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("hist"))
    H.write_history(hostnames(8), out, 7, S, 3)
    return os.path.join(out, "history")


def _counts(store) -> dict:
    import sqlalchemy as sa

    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_schema

    meta = ledger_schema.tables()
    with store.read() as conn:
        return {t: conn.execute(sa.select(sa.func.count()).select_from(meta.tables[t])).scalar() for t in H.TABLES}


def _jsonl_counts(hdir: str) -> dict:
    out = {}
    for t in H.TABLES:
        with open(os.path.join(hdir, t + ".jsonl")) as fh:
            out[t] = sum(1 for _line in fh)
    return out


def test_load_row_counts_and_refuses_a_second_load(store_kw, small_history):
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store

    store = open_store(**store_kw)
    try:
        counts = H.load_history(store, small_history)
        want = _jsonl_counts(small_history)
        assert counts == want and _counts(store) == want and want["node_periods"] > 8
        with pytest.raises(L.HistoryError, match="already loaded .*refusing to load it twice"):
            H.load_history(store, small_history)
        assert _counts(store) == want
        import sqlalchemy as sa

        with store.read() as conn:
            row = conn.execute(sa.text("SELECT scope FROM maintenance_windows ORDER BY starts_at")).first()
        assert isinstance(row[0], dict) or json.loads(row[0])
    finally:
        store.close()


def test_truncated_line_names_file_and_line_and_loads_nothing(store_kw, small_history, tmp_path):
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store

    bad = str(tmp_path / "history")
    shutil.copytree(small_history, bad)
    path = os.path.join(bad, "incidents.jsonl")
    with open(path) as fh:
        lines = fh.readlines()
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
    with open(path, "w") as fh:
        fh.writelines(lines)
    store = open_store(**store_kw)
    try:
        with pytest.raises(L.HistoryError, match=r"history/incidents.jsonl line 3: not a complete JSON object"):
            H.load_history(store, bad)
        assert set(_counts(store).values()) == {0}
    finally:
        store.close()


def test_load_cli_bad_input_is_one_clear_line(tmp_path, small_history):
    bad = str(tmp_path / "history")
    shutil.copytree(small_history, bad)
    with open(os.path.join(bad, "runs.jsonl")) as fh:
        lineno = sum(1 for _line in fh) + 1
    with open(os.path.join(bad, "runs.jsonl"), "a") as fh:
        fh.write('{"run_id": "x", "kind": "history", "started_at": 1.0, "colour": "red"}\n')
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "build"))
    proc = subprocess.run(
        [sys.executable, os.path.join(TOOLS, "simcluster", "history.py"), "load", "--state-dir", str(tmp_path / "st"), bad],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "history/runs.jsonl line %d: unknown column(s) ['colour']" % lineno in proc.stderr


def test_manifest_count_mismatch_is_refused(tmp_path, small_history):
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_schema

    bad = str(tmp_path / "history")
    shutil.copytree(small_history, bad)
    path = os.path.join(bad, "changes.jsonl")
    with open(path) as fh:
        lines = fh.readlines()
    with open(path, "w") as fh:
        fh.writelines(lines[:-1])  # cut at a line boundary: only the manifest can tell
    with pytest.raises(
        L.HistoryError, match="changes.jsonl: %d rows but the manifest says %d" % (len(lines) - 1, len(lines))
    ):
        L.read_history(bad, ledger_schema)


# ---------------------------------------------------------------------------------------------- the scorer


KEY = {"history": {"availability": {"cluster": 99.5, "nodes": {"n1": 99.0, "n2": 100.0}},
                   "sla": {"breaches": ["INC-1", "INC-2"], "incidents": 5},
                   "capacity": {"peak_allocated_share": 0.8123}}}  # fmt: skip


def _report(av=99.54, breaches=("INC-2", "INC-1"), cap=0.81234, nodes=None):
    return {"schema": "gpuops.service_report/v1", "availability": {"cluster": av, "nodes": nodes or {"n1": 99.01}},
            "sla": {"breaches": list(breaches), "incidents": 5}, "capacity": {"peak_allocated_share": cap}}  # fmt: skip


def _score(tmp_path, report, key=None):
    rp, kp = tmp_path / "service-report.json", tmp_path / "answer_key.json"
    rp.write_text(json.dumps(report) if not isinstance(report, str) else report)
    kp.write_text(json.dumps(KEY if key is None else key))
    return subprocess.run(
        [sys.executable, os.path.join(TOOLS, "simcluster", "score_history.py"), str(rp), str(kp)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_score_pass(tmp_path):
    proc = _score(tmp_path, _report())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "difference 0.040 pp  PASS" in proc.stdout and "missing 0  extra 0  PASS" in proc.stdout
    assert "capacity peak report 0.8123  key 0.8123  PASS" in proc.stdout
    assert "1 compared, 0 beyond 0.05 pp" in proc.stdout and "1 absent" in proc.stdout


@pytest.mark.parametrize(
    "report,needle",
    [
        (_report(av=99.44), "difference 0.060 pp  FAIL"),
        (_report(breaches=["INC-1"]), "missing: INC-2"),
        (_report(breaches=["INC-1", "INC-2", "INC-9"]), "extra: INC-9"),
        (_report(cap=0.8124), "capacity peak report 0.8124  key 0.8123  FAIL"),
    ],
)
def test_score_mismatch_fails(tmp_path, report, needle):
    proc = _score(tmp_path, report)
    assert proc.returncode == 1 and needle in proc.stdout and "history score: FAIL" in proc.stdout


@pytest.mark.parametrize(
    "report,needle",
    [
        ('{"availability": {"cluster": 99.5}', "cannot read a JSON document"),
        ({"availability": {"cluster": 99.5}}, "the report has no sla.breaches"),
        (_report(av="99.5"), "report availability.cluster is not a number"),
    ],
)
def test_score_bad_input_exit_2(tmp_path, report, needle):
    proc = _score(tmp_path, report)
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr


def test_score_function_direct():
    lines, ok = SH.score(_report(), KEY)
    assert ok and lines[0].startswith("availability")


def test_database_error_part_way_names_the_tables_loaded(tmp_path, small_history):
    import sqlalchemy as sa

    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import StoreError, open_store

    with open(os.path.join(small_history, "tickets.jsonl")) as fh:
        first = json.loads(fh.readline())
    store = open_store(state_dir=str(tmp_path / "st"))
    try:
        with store.begin() as conn:  # a ticket of the same id already received by the hook
            conn.execute(
                sa.text("INSERT INTO tickets (ticket_id, received_at) VALUES (:t, 1.0)"), {"t": first["ticket_id"]}
            )
        with pytest.raises(StoreError, match=r"\(loading tickets; tables already loaded: runs, maintenance_windows, "):
            H.load_history(store, small_history)
        counts = _counts(store)
        assert counts["tickets"] == 1 and counts["allocation_samples"] == 0 and counts["runs"] > 0
    finally:
        store.close()
