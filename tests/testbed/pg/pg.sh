#!/usr/bin/env bash
# A throwaway PostgreSQL server (Debian's postgresql-15 binaries) for the store tests (docs/store.md).
#   pg.sh up     initdb (first time) and start on 127.0.0.1:$GPUOPS_PG_PORT; prints the URL
#   pg.sh url    the URL of the running server (exit 1 when none)
#   pg.sh down   stop it and remove its directory
# One server per run, shared by the unit and integration stages; each test makes its own database
# (tests/conftest.py pg_url fixture). Runs as the `postgres` user when started by root (PostgreSQL refuses
# root). Settings: GPUOPS_PG_DIR (default /tmp/gpuops-pg-<h>), GPUOPS_PG_PORT (default 55432 + <h> % 500), <h>
# derived from the checkout's path: two checkouts on one machine (a CI clone beside a developer's `make unit`)
# never share, or stop, each other's server.
set -euo pipefail
_h=$(cd "$(dirname "$0")/../../.." && pwd | tr -d '\n' | md5sum | cut -c1-4)
DIR=${GPUOPS_PG_DIR:-/tmp/gpuops-pg-$_h}
PORT=${GPUOPS_PG_PORT:-$((55432 + 0x$_h % 500))}
BIN=${GPUOPS_PG_BIN:-}
if [ -z "$BIN" ]; then for d in /usr/lib/postgresql/*/bin; do [ -x "$d/pg_ctl" ] && BIN=$d; done; fi
URL="postgresql+psycopg://postgres@127.0.0.1:$PORT/postgres"
[ -x "$BIN/pg_ctl" ] || { echo "pg.sh: PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 2; }
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
ready() { "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" -t 1; }

case "${1:-}" in
  up)
    if [ -f "$DIR/data/postmaster.pid" ] && ready; then echo "$URL"; exit 0; fi
    if [ ! -f "$DIR/data/PG_VERSION" ]; then
      rm -rf "$DIR"; mkdir -p "$DIR"
      [ "$(id -u)" = 0 ] && chown postgres: "$DIR"
      as_pg "$BIN/initdb" -D "$DIR/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
      cat >> "$DIR/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DIR'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
shared_buffers = 64MB
CONF
    fi
    as_pg "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 30 start >/dev/null \
      || { tail -20 "$DIR/server.log" >&2; exit 1; }
    echo "$URL"
    ;;
  url)
    ready && echo "$URL"
    ;;
  down)
    if [ -f "$DIR/data/postmaster.pid" ]; then as_pg "$BIN/pg_ctl" -D "$DIR/data" -m fast -w -t 30 stop >/dev/null || true; fi
    rm -rf "$DIR"
    ;;
  *) echo "usage: pg.sh up|url|down" >&2; exit 2 ;;
esac
