# Shared pytest setup: make the collection importable as ansible_collections.gpuops.cluster.
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
_link = os.path.join(BUILD, "ansible_collections", "gpuops", "cluster")
if not os.path.exists(_link):
    os.makedirs(os.path.dirname(_link), exist_ok=True)
    os.symlink(os.path.join("..", "..", ".."), _link)
if BUILD not in sys.path:
    sys.path.insert(0, BUILD)

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
SAMPLES = os.path.normpath(os.path.join(ROOT, "..", "shared", "reference", "samples"))


# --- the store's test databases (docs/store.md): SQLite files and a real PostgreSQL -------------------------
import fcntl  # noqa: E402
import subprocess  # noqa: E402
import uuid  # noqa: E402

import pytest  # noqa: E402

PG_SH = os.path.join(ROOT, "tests", "testbed", "pg", "pg.sh")


def _pg_server_url() -> str:
    """The test PostgreSQL server: GPUOPS_TEST_PG_URL (set once per `make test` run by tests/testbed/pg/with-pg.sh),
    else the default throwaway server, started here when it is not running (left running for the next run;
    `bash tests/testbed/pg/pg.sh down` stops it)."""
    url = os.environ.get("GPUOPS_TEST_PG_URL")
    if url:
        return url
    with open("/tmp/gpuops-pg.lock", "a") as lock:  # two xdist workers must not both initdb
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(["bash", PG_SH, "up"], capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        pytest.fail("cannot start the test PostgreSQL server: %s" % (proc.stderr or proc.stdout).strip())
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def pg_server_url():
    return _pg_server_url()


@pytest.fixture
def pg_url(pg_server_url):
    """A fresh, empty PostgreSQL database for one test (dropped afterwards): its SQLAlchemy URL."""
    import sqlalchemy as sa  # pylint: disable=import-outside-toplevel

    name = "t_" + uuid.uuid4().hex[:16]
    admin = sa.create_engine(pg_server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql("CREATE DATABASE %s" % name)
    url = sa.engine.make_url(pg_server_url).set(database=name).render_as_string(hide_password=False)
    yield url
    with admin.connect() as conn:
        conn.exec_driver_sql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % name)
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_kw(request, tmp_path):
    """open_store() keyword arguments for each backend: the embedded SQLite under a state dir, and PostgreSQL."""
    if request.param == "sqlite":
        return {"state_dir": str(tmp_path / "state")}
    return {"db_url": request.getfixturevalue("pg_url")}
