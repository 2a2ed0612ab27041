# -*- coding: utf-8 -*-
"""A real policy hash (``sha256:`` and 64 hex digits, 71 characters) is stored whole by a slice and by a recorded
run, on SQLite and on PostgreSQL, also in a store whose columns were made 64 wide by an earlier release
(revisions 0005_slices_hash and 0006_ledger_hash). Before, PostgreSQL refused every slice ("value too long for
type character varying(64)") and the ledger cut the hash to 64 characters."""

from __future__ import annotations

import sqlalchemy as sa

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import slices as _slices
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger as _ledger
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import engine as db_engine
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store
from ledger_reports import T0, report
from store_revisions import upgrade_to

HASH = _policy.policy_hash({"thresholds": {"temperature": {"gpu_slowdown_margin_c": 5}}})


def _node():
    return {"status": "healthy", "findings": [], "domains": {}, "facts": {}, "policy_hash": HASH}


def _write_and_read_back(store):
    _slices.write_slice(store, "g-hash", 1, {"n1": _node()}, {"slice_count": 1, "policy_hash": HASH})
    nodes, info = _slices.load_group(store, "g-hash", expect_slices=1)
    rep = report(T0, {"n1": {"status": "healthy"}})
    rep["policy"]["hash"] = HASH
    run_id = _ledger.record_run(store, rep)["run_id"]
    with store.read() as conn:
        stored = conn.execute(sa.text("SELECT policy_hash FROM runs WHERE run_id = :r"), {"r": run_id}).scalar_one()
    return info["slices"][0]["policy_hash"], nodes["n1"]["policy_hash"], stored


def test_a_real_policy_hash_is_stored_whole(store_kw):
    assert len(HASH) == 71
    assert _write_and_read_back(open_store(**store_kw)) == (HASH, HASH, HASH)


def test_a_store_with_the_64_character_columns_is_widened_and_then_keeps_the_whole_hash(store_kw):
    def narrow(conn):  # the columns as the earlier release made them (SQLite does not enforce a width)
        if conn.dialect.name == "postgresql":
            for table in ("slice_runs", "runs"):
                conn.execute(sa.text("ALTER TABLE %s ALTER COLUMN policy_hash TYPE varchar(64)" % table))

    old = open_store(migrate_schema=False, **store_kw)
    script = db_engine._script()
    upgrade_to(old, "0002_ledger", "0003_state", "0004_slices", then=narrow)
    assert sorted(old.heads()) == ["0002_ledger", "0003_state", "0004_slices"]
    if old.engine.dialect.name == "postgresql":
        with old.read() as conn:
            widths = {t: sa.inspect(conn).get_columns(t) for t in ("slice_runs", "runs")}
        assert {t: [c["type"].length for c in cols if c["name"] == "policy_hash"] for t, cols in widths.items()} == {
            "slice_runs": [64],
            "runs": [64],
        }
    old.close()

    store = open_store(**store_kw)
    assert sorted(store.heads()) == sorted(script["heads"]) == ["0003_state", "0005_slices_hash", "0007_sla_clocks"]
    assert _write_and_read_back(store) == (HASH, HASH, HASH)
