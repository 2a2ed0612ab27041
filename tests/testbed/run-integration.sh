#!/usr/bin/env bash
# `make integration`: bring the test bed up once (nodes + Slurm, and the BMC emulators when
# tests/testbed/bmc/bmc.sh exists and GPUOPS_TB_BMC is not 0), run the integration tests, always tear
# everything down.
#   run-integration.sh [pytest args]      exit status = pytest's
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
cd "$REPO"
# the backup signing key of the tests that back up: the build dir's, never the operator's ~/.config/gpuops/backup.key
export GPUOPS_BACKUP_KEY_FILE=${GPUOPS_BACKUP_KEY_FILE:-$REPO/build/test-backup-key/backup.key}
export GPUOPS_TB=$TB

declare -a STAGES=()
stage() {  # stage NAME CMD...: run and record the wall time
  local name=$1 t rc=0
  shift
  t=$(now_ms)
  echo "::stage $name"
  "$@" || rc=$?
  STAGES+=("$(printf '%-10s %8s  rc=%s' "$name" "$(elapsed "$t")" "$rc")")
  return "$rc"
}
# shellcheck disable=SC2317  # invoked from the EXIT trap
report() {
  echo "---- integration stage times ----"
  printf '%s\n' "${STAGES[@]}"
}
# shellcheck disable=SC2317  # the EXIT trap
teardown() {
  set +e
  if [ -f "$HERE/bmc/bmc.sh" ] && [ "${GPUOPS_TB_BMC:-1}" != 0 ]; then stage bmc-down bash "$HERE/bmc/bmc.sh" down; fi
  stage down bash "$HERE/testbed.sh" down
  STAGES+=("$(printf '%-10s %8s' total "$(elapsed "$T0")")")
  report
}

T0=$(now_ms)
trap teardown EXIT
# the collection must resolve as gpuops.cluster (normally done by `make setup`)
if [ ! -e build/ansible_collections/gpuops/cluster ]; then
  mkdir -p build/ansible_collections/gpuops
  ln -sfn ../../.. build/ansible_collections/gpuops/cluster
fi
stage up bash "$HERE/testbed.sh" up "${GPUOPS_TB_NODES:-8}"
if [ -f "$HERE/bmc/bmc.sh" ] && [ "${GPUOPS_TB_BMC:-1}" != 0 ]; then stage bmc-up bash "$HERE/bmc/bmc.sh" up; fi
if [ -f "$HERE/eda-setup.sh" ]; then stage eda-setup bash "$HERE/eda-setup.sh"; fi
rc=0
# pytest args that name tests under tests/integration narrow the run to them; otherwise run the whole directory
targets=(tests/integration)
for a in "$@"; do case $a in tests/integration/*) targets=(); break ;; esac; done
stage pytest .venv/bin/pytest "${targets[@]}" -p no:cacheprovider --durations=20 "$@" || rc=$?
exit "$rc"
