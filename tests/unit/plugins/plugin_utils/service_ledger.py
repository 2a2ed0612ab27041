"""A small hand-built service ledger (one month, four nodes, eight incidents) inserted straight into the ledger
tables; the figures it must give are worked out by hand in test_service_report.py."""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_schema

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


def incident(iid, host, sev, comp, domain, detected, *steps, fp=None, **clocks):
    """An incident row; ``steps``: acknowledged_at, located_at, restored_at (missing: not yet); ``clocks``:
    ``onsite`` and ``planned``, the on-site and plan clocks' steps."""
    ack, located, restored = (tuple(steps) + (None, None, None))[:3]
    onsite, planned = clocks.pop("onsite", None), clocks.pop("planned", None)
    assert not clocks, clocks
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
        "onsite_at": onsite,
        "planned_at": planned,
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
            # P0 all met (the terms: respond 15m, on site 4h, located 2h)
            incident(
                "INC-20261005-0001",
                "n1",
                "P0",
                "gpu",
                "gpu",
                S + 100 * H,
                S + 100 * H + 10 * m,
                S + 101.5 * H,
                S + 101.5 * H,
                fp="n1|gpu.xid:0",
                onsite=S + 103 * H,
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
                onsite=S + 202 * H,
            ),
            # P1 detected Tuesday 2026-10-13 12:00; on site due the end of the next working day (Wednesday) =
            # 2026-10-15 00:00; on site Thursday 04:00 -> breached
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
                onsite=S + 340 * H,
            ),
            # P1 restore breached (30 h > 24 h); detected Saturday 2026-10-17 16:00, on site Sunday 02:00: met (due
            # the end of Monday 2026-10-19)
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
                onsite=S + 410 * H,
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
