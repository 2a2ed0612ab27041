#!/usr/bin/env bash
# with-pg.sh CMD...: run CMD with GPUOPS_TEST_PG_URL pointing at the test PostgreSQL server. When the variable is
# already set (tests/run-stages.sh starts one server for the whole `make test`), CMD runs as is; otherwise a server
# is started for CMD and stopped after it. Exit status: CMD's.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -n "${GPUOPS_TEST_PG_URL:-}" ]; then exec "$@"; fi
GPUOPS_TEST_PG_URL=$(bash "$HERE/pg.sh" up) || { echo "with-pg.sh: the test PostgreSQL did not start" >&2; exit 2; }
export GPUOPS_TEST_PG_URL
rc=0
"$@" || rc=$?
bash "$HERE/pg.sh" down
exit "$rc"
