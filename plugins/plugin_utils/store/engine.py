# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Engine, transactions, database locks and migrations of the store (see ``_db/__init__.py``)."""

from __future__ import annotations

import contextlib
import os
import re
import threading
import zlib
from typing import Any, Dict, Iterator, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._files import ensure_private_dir, open_private

try:
    import sqlalchemy as sa
    from sqlalchemy import event, exc as sa_exc
    from sqlalchemy.engine import make_url

    HAS_SQLALCHEMY = True
except ImportError:  # the sanity import test and controllers without the requirements
    sa = None
    HAS_SQLALCHEMY = False

DB_FILE = "gpuops.db"
MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")
_SCHEMES = {"sqlite": "sqlite", "postgresql": "postgresql+psycopg", "postgres": "postgresql+psycopg"}
_DRIVER = re.compile(r"^(sqlite|postgresql|postgres)(\+(psycopg|psycopg2|pysqlite))?$")
_LOCK_NAME = re.compile(r"^[A-Za-z0-9_.@:/+-]{1,200}$")
_SCRIPT: Dict[str, Any] = {}
_SCRIPT_LOCK = threading.Lock()


class StoreError(Exception):
    """The store cannot be used: missing driver, bad URL, unreachable server, corrupt file, newer schema."""


def _need_sqlalchemy() -> None:
    if not HAS_SQLALCHEMY:
        raise StoreError(
            "the gpuops store needs SQLAlchemy 2 and Alembic on the controller "
            "(pip install -r requirements.txt of the collection; PostgreSQL also needs psycopg)"
        )


def store_url(state_dir: Optional[str] = None, db_url: Optional[str] = None) -> str:
    """The SQLAlchemy URL of the store: ``db_url`` (gpuops_db_url) when given, else the SQLite file under
    ``state_dir`` (created 0700 when missing). Raises StoreError for an unusable URL or neither setting."""
    _need_sqlalchemy()
    if db_url:
        if not isinstance(db_url, str) or "\n" in db_url:
            raise StoreError("gpuops_db_url must be one line of text")
        try:
            url = make_url(db_url)
        except Exception as exc:  # sqlalchemy raises ArgumentError and ValueError for junk
            raise StoreError("gpuops_db_url is not a database URL: %s" % exc) from None
        if not _DRIVER.match(url.drivername):
            raise StoreError("gpuops_db_url: unsupported database %r (postgresql or sqlite)" % url.drivername)
        if url.drivername in ("postgresql", "postgres"):
            url = url.set(drivername=_SCHEMES[url.drivername])
        return url.render_as_string(hide_password=False)
    if not state_dir or not isinstance(state_dir, str):
        raise StoreError("the store needs gpuops_state_dir (embedded SQLite) or gpuops_db_url (PostgreSQL)")
    state_dir = os.path.abspath(state_dir)
    try:
        ensure_private_dir(state_dir)
    except OSError as exc:
        raise StoreError("cannot create the state directory %s: %s" % (state_dir, exc)) from None
    return "sqlite:///" + os.path.join(state_dir, DB_FILE)


def _safe(url: str) -> str:
    """The URL for messages: the password masked."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # pragma: no cover - only for messages
        return "<database URL>"


def _sqlite_setup(engine: Any) -> None:
    """pysqlite's own transaction handling off; WAL, a busy timeout and foreign keys on every connection;
    write transactions start with BEGIN IMMEDIATE (the database's write lock, taken up front)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, record: Any) -> None:  # pylint: disable=unused-argument
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA busy_timeout = 30000")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get("gpuops_read") else "BEGIN IMMEDIATE")


def _lock_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for ``name`` (the same on every controller)."""
    high = zlib.crc32(b"gpuops:" + name.encode("utf-8"))
    low = zlib.crc32(name.encode("utf-8")[::-1])
    key = (high << 32) | low
    return key - (1 << 64) if key >= (1 << 63) else key


class Store:
    """An open store: ``begin(lock=...)`` for one write transaction, ``read()`` for a snapshot."""

    def __init__(self, engine: Any, url: str) -> None:
        self.engine = engine
        self.url = _safe(url)
        self.dialect = engine.dialect.name  # "sqlite" or "postgresql"

    @contextlib.contextmanager
    def begin(self, lock: Optional[str] = None) -> Iterator[Any]:
        """One write transaction (committed on success, rolled back on any error). ``lock``: a named database
        lock held until the transaction ends (PostgreSQL ``pg_advisory_xact_lock``; SQLite's write lock, taken
        by BEGIN IMMEDIATE, already serializes writers), so read-decide-write under it is atomic across
        processes and controllers."""
        if lock is not None and not (isinstance(lock, str) and _LOCK_NAME.match(lock)):
            raise StoreError("invalid lock name %r" % (lock,))
        try:
            with self.engine.begin() as conn:
                if lock and self.dialect == "postgresql":
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _lock_key(lock)})
                yield conn
        except sa_exc.SQLAlchemyError as exc:
            raise _store_error(exc, self.url) from None

    @contextlib.contextmanager
    def read(self) -> Iterator[Any]:
        """A read transaction (never takes the write lock); rolled back at the end."""
        try:
            with self.engine.connect() as conn:
                conn = conn.execution_options(gpuops_read=True)
                with conn.begin():
                    yield conn
        except sa_exc.SQLAlchemyError as exc:
            raise _store_error(exc, self.url) from None

    def heads(self) -> List[str]:
        """The schema revisions applied (Alembic's version table; several when areas have their own branch)."""
        with self.read() as conn:
            if not sa.inspect(conn).has_table("alembic_version"):
                return []
            return sorted(r[0] for r in conn.execute(sa.text("SELECT version_num FROM alembic_version")))

    def close(self) -> None:
        self.engine.dispose()


def _store_error(exc: Exception, url: str) -> StoreError:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    first = text[0] if text else exc.__class__.__name__
    low = first.lower()
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return StoreError(
            "the store %s is corrupt (%s): nothing was written; move the file aside or restore it from the "
            "backup (docs/store.md)" % (url, first)
        )
    if isinstance(exc, sa_exc.OperationalError) and ("connect" in low or "connection" in low):
        return StoreError("cannot reach the store %s: %s" % (url, first))
    return StoreError("store %s: %s" % (url, first))


def _script() -> Dict[str, Any]:
    """The migration scripts' revisions and heads, read once per process."""
    with _SCRIPT_LOCK:
        if not _SCRIPT:
            from alembic.config import Config  # pylint: disable=import-outside-toplevel
            from alembic.script import ScriptDirectory  # pylint: disable=import-outside-toplevel

            cfg = Config()
            cfg.set_main_option("script_location", MIGRATIONS_DIR)
            script = ScriptDirectory.from_config(cfg)
            _SCRIPT.update(
                cfg=cfg, known={rev.revision for rev in script.walk_revisions()}, heads=sorted(script.get_heads())
            )
        return _SCRIPT


def migrate(store: Store) -> List[str]:
    """Bring the schema to this collection's heads (Alembic ``upgrade heads``), under a database lock so that
    two controllers starting at once migrate once. A database whose schema is newer than this collection
    (a revision it does not know) is refused. Returns the heads."""
    from alembic import command  # pylint: disable=import-outside-toplevel

    script = _script()
    current = store.heads()
    unknown = [rev for rev in current if rev not in script["known"]]
    if unknown:
        raise StoreError(
            "the store %s has schema revision(s) %s that this collection does not know: it was written by a newer "
            "gpuops.cluster; upgrade the collection on this controller" % (store.url, ", ".join(unknown))
        )
    if current == script["heads"]:
        return current
    with store.begin(lock="gpuops-migrate") as conn:
        script["cfg"].attributes["connection"] = conn
        try:
            command.upgrade(script["cfg"], "heads")
        finally:
            script["cfg"].attributes.pop("connection", None)
    return store.heads()


def _create_sqlite_file(url: str) -> None:
    path = make_url(url).database
    if path and path != ":memory:" and not os.path.exists(path):
        os.close(open_private(path, os.O_RDWR | os.O_CREAT))  # 0600 whatever the umask; -wal/-shm inherit it


def _store_json(text: Any) -> Any:
    """A JSON column's value as read back: ``_safejson.loads`` (JsonBudgetError, a ValueError, when over budget)."""
    return _safejson.loads(text, what="a JSON column of the store")


def open_store(
    state_dir: Optional[str] = None, db_url: Optional[str] = None, migrate_schema: bool = True, timeout: int = 10
) -> Store:
    """Open the store (``store_url``), check that it answers, and migrate it to this collection's schema.
    Raises StoreError with the reason (never a traceback) when it cannot be used."""
    url = store_url(state_dir, db_url)
    # JSON columns read back through the depth and size budget (issue 35): a row nested 100,000 deep is a
    # ValueError naming it, never a RecursionError out of the driver
    kwargs: Dict[str, Any] = {"future": True, "json_deserializer": _store_json}
    if url.startswith("sqlite"):
        _create_sqlite_file(url)
        kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
    else:
        kwargs["connect_args"] = {"connect_timeout": timeout}
        kwargs["pool_pre_ping"] = True
    try:
        engine = sa.create_engine(url, **kwargs)
    except Exception as exc:  # a driver that is not installed (psycopg) or a bad option
        raise StoreError("cannot open the store %s: %s" % (_safe(url), exc)) from None
    if url.startswith("sqlite"):
        _sqlite_setup(engine)
    store = Store(engine, url)
    if migrate_schema:
        migrate(store)
    else:
        store.heads()  # connectivity and corruption check
    return store
