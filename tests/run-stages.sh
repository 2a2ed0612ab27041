#!/usr/bin/env bash
# `make test`: run every stage, print each stage's wall time, fail if any stage failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
stages=(ruff ansible-lint sanity docs-lint unit package integration molecule)
[ "$#" -gt 0 ] && stages=("$@")
failed=()
passed=0
# one PostgreSQL server for the whole run (the store tests of the unit and integration stages; docs/store.md)
if [ -z "${GPUOPS_TEST_PG_URL:-}" ]; then
  if GPUOPS_TEST_PG_URL=$(bash tests/testbed/pg/pg.sh up); then
    export GPUOPS_TEST_PG_URL
    trap 'bash tests/testbed/pg/pg.sh down' EXIT
  else
    echo "the test PostgreSQL server did not start (the store tests will fail)"
  fi
fi
t_all=$(date +%s)
for s in "${stages[@]}"; do
  t0=$(date +%s)
  echo "::stage $s"
  if make --no-print-directory "$s"; then
    passed=$((passed + 1)); r=ok
  else
    failed+=("$s"); r=FAILED
  fi
  echo "::stage $s: $r in $(( $(date +%s) - t0 )) s"
done
echo "::make test: $(( $(date +%s) - t_all )) s; failed stages: ${failed[*]:-none}"
echo "stages: ${passed} passed, ${#failed[@]} failed"
[ "${#failed[@]}" -eq 0 ]
