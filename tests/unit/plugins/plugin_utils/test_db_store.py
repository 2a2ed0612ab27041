# -*- coding: utf-8 -*-
"""The store foundation (plugin_utils/store, docs/store.md) on both backends: embedded SQLite and a real PostgreSQL."""

from __future__ import annotations

import multiprocessing
import os
import stat

import pytest
import sqlalchemy as sa

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import StoreError, open_store, store_url
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import engine as db_engine


def test_a_new_store_is_migrated_to_the_collections_heads(store_kw):
    store = open_store(**store_kw)
    heads = store.heads()
    assert "0001_base" in heads or heads  # every branch starts from 0001_base
    assert heads == db_engine._script()["heads"]
    with store.read() as conn:
        info = dict(conn.execute(sa.text("SELECT key, value FROM gpuops_store_info")).all())
    assert info["schema"] == "gpuops.store/v1"
    # a second open changes nothing (no second migration, same heads)
    assert open_store(**store_kw).heads() == heads


def test_the_embedded_store_is_private(tmp_path):
    old = os.umask(0o022)
    try:
        open_store(state_dir=str(tmp_path / "state")).close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "state").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "state" / "gpuops.db").st_mode) == 0o600


def test_a_failed_transaction_loses_nothing_already_committed(store_kw):
    store = open_store(**store_kw)
    with store.begin() as conn:
        conn.execute(sa.text("INSERT INTO gpuops_store_info (key, value) VALUES ('kept', '1')"))
    with pytest.raises(StoreError):
        with store.begin() as conn:
            conn.execute(sa.text("INSERT INTO gpuops_store_info (key, value) VALUES ('lost', '1')"))
            conn.execute(sa.text("INSERT INTO gpuops_store_info (key, value) VALUES ('kept', 'duplicate')"))
    with store.read() as conn:
        keys = {r[0] for r in conn.execute(sa.text("SELECT key FROM gpuops_store_info"))}
    assert "kept" in keys and "lost" not in keys


def test_a_corrupt_sqlite_file_is_a_clear_error_and_is_left_as_it_was(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    db = state / "gpuops.db"
    db.write_bytes(b"this is not a database, it is a text file someone copied over it\n" * 20)
    before = db.read_bytes()
    with pytest.raises(StoreError, match="corrupt"):
        open_store(state_dir=str(state))
    assert db.read_bytes() == before


def test_an_unreachable_postgresql_is_a_clear_error():
    with pytest.raises(StoreError, match="cannot reach the store") as err:
        open_store(db_url="postgresql://gpuops:s3cret@127.0.0.1:1/gpuops", timeout=2)
    assert "s3cret" not in str(err.value)  # the password never reaches a message


@pytest.mark.parametrize(
    "url, message",
    [
        ("mysql://root@db/gpuops", "unsupported database"),
        ("not a url", "not a database URL"),
        ("postgresql://db/x\n{{ lookup('pipe', 'id') }}", "one line"),
    ],
)
def test_bad_database_urls_are_refused(url, message):
    with pytest.raises(StoreError, match=message):
        store_url(db_url=url)


def test_neither_a_state_dir_nor_a_url_is_an_error():
    with pytest.raises(StoreError, match="gpuops_state_dir"):
        store_url()


def test_a_schema_from_a_newer_collection_is_refused(store_kw):
    store = open_store(**store_kw)
    with store.begin() as conn:
        conn.execute(sa.text("INSERT INTO alembic_version (version_num) VALUES ('9999_from_the_future')"))
    with pytest.raises(StoreError, match="newer"):
        open_store(**store_kw)


def test_bad_lock_names_are_refused(tmp_path):
    store = open_store(state_dir=str(tmp_path))
    with pytest.raises(StoreError, match="invalid lock name"):
        with store.begin(lock="x'; DROP TABLE y; --"):
            pass


def _count_under_lock(kw, rounds):
    store = open_store(**kw)
    for _round in range(rounds):
        with store.begin(lock="counter") as conn:
            value = conn.execute(sa.text("SELECT value FROM gpuops_store_info WHERE key = 'n'")).scalar_one()
            conn.execute(sa.text("UPDATE gpuops_store_info SET value = :v WHERE key = 'n'"), {"v": str(int(value) + 1)})
    store.close()


def test_the_named_lock_serializes_read_modify_write_across_processes(store_kw):
    store = open_store(**store_kw)
    with store.begin() as conn:
        conn.execute(sa.text("INSERT INTO gpuops_store_info (key, value) VALUES ('n', '0')"))
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_count_under_lock, args=(store_kw, 25)) for _proc in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    with store.read() as conn:
        assert conn.execute(sa.text("SELECT value FROM gpuops_store_info WHERE key = 'n'")).scalar_one() == "100"
