# -*- coding: utf-8 -*-
"""A database made by the previous schema (revision 0001_base only) is upgraded by open_store to this
collection's heads, its data kept, and the ledger then works on it (issue 15), on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlalchemy as sa

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger as _ledger
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import engine as db_engine
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store
from ledger_reports import T0, finding, report
from store_revisions import upgrade_to


def test_an_old_database_is_upgraded_and_keeps_its_data(store_kw):
    old = open_store(migrate_schema=False, **store_kw)
    script = db_engine._script()
    upgrade_to(
        old,
        "0001_base",
        then=lambda conn: conn.execute(sa.text("INSERT INTO gpuops_store_info (key, value) VALUES ('site', 'lab-3')")),
    )
    assert old.heads() == ["0001_base"]
    with old.read() as conn:
        assert not sa.inspect(conn).has_table("incidents")
    old.close()

    store = open_store(**store_kw)
    assert store.heads() == script["heads"] and "0007_sla_clocks" in store.heads()
    with store.read() as conn:
        info = dict(conn.execute(sa.text("SELECT key, value FROM gpuops_store_info")).all())
    assert info["site"] == "lab-3" and info["schema"] == "gpuops.store/v1"
    out = _ledger.record_run(store, report(T0, {"a": {"status": "faulty", "findings": [finding("a")]}}))
    assert out["incidents_opened"] == ["INC-20261005-0001"]


def test_a_ledger_without_the_onsite_and_plan_clocks_gets_them(store_kw):
    """A ledger made before migration 0007 (issue 39's onsite/plan clocks): its incidents table gains the two columns,
    its incidents are kept, and the operator's onsite step works on it."""
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_incidents  # pylint: disable=import-outside-toplevel

    def drop(conn):  # the incidents table as the earlier release made it
        if conn.dialect.name == "sqlite":
            conn.execute(sa.text("ALTER TABLE incidents DROP COLUMN onsite_at"))
            conn.execute(sa.text("ALTER TABLE incidents DROP COLUMN planned_at"))
        else:
            conn.execute(sa.text("ALTER TABLE incidents DROP COLUMN onsite_at, DROP COLUMN planned_at"))

    old = open_store(migrate_schema=False, **store_kw)
    upgrade_to(old, "0002_ledger", "0003_state", "0004_slices", "0005_slices_hash", "0006_ledger_hash", then=drop)
    with old.read() as conn:
        assert "onsite_at" not in {c["name"] for c in sa.inspect(conn).get_columns("incidents")}
    old.close()
    store = open_store(**store_kw)
    with store.read() as conn:
        cols = {c["name"] for c in sa.inspect(conn).get_columns("incidents")}
    assert {"onsite_at", "planned_at"} <= cols
    (iid,) = _ledger.record_run(store, report(T0, {"a": {"status": "faulty", "findings": [finding("a")]}}))[
        "incidents_opened"
    ]
    ledger_incidents.apply_step(store, {"incident": iid, "step": "acknowledge", "by": "op", "now": T0 + 60})
    done = ledger_incidents.apply_step(store, {"incident": iid, "step": "onsite", "by": "op", "now": T0 + 3600})
    assert done["changed"] is True and done["incident"]["onsite_at"] == T0 + 3600
