#!/usr/bin/env bash
# `make molecule`: run each scenario (`molecule test -s NAME`), time it, keep its output in
# build/molecule/NAME.log, and end with one line per scenario. A failed scenario's last lines are printed again
# at the very end, so the tail of a CI log names the scenario and the step that failed.
#   run-molecule.sh MOLECULE_BIN SCENARIO...      exit status 0 when every scenario passed
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../.." || exit 1
molecule=$1
shift
logs=build/molecule
mkdir -p "$logs"
chmod 0700 "$logs"
# the backup signing key of the scenarios that back up (upgrade, backup): the build dir's, never the operator's
# ~/.config/gpuops/backup.key (docs/backup.md "Signed snapshots")
export GPUOPS_BACKUP_KEY_FILE=${GPUOPS_BACKUP_KEY_FILE:-$PWD/build/test-backup-key/backup.key}
declare -a summary=() failed=()
for s in "$@"; do
  case $s in
    *[!a-z0-9_]* | '') echo "run-molecule: not a scenario name: '$s'" >&2; exit 2 ;;
  esac
  t0=$(date +%s)
  # the scenarios bring up their own test bed: never the one an outer run exported
  env -u GPUOPS_TB -u GPUOPS_TB_PREFIX "$molecule" test -s "$s" 2>&1 | tee "$logs/$s.log"
  rc=${PIPESTATUS[0]}
  dt=$(( $(date +%s) - t0 ))
  if [ "$rc" -eq 0 ]; then
    summary+=("$(printf '%-14s ok      %4s s' "$s" "$dt")")
  else
    summary+=("$(printf '%-14s FAILED  %4s s  rc=%s  log: %s' "$s" "$dt" "$rc" "$logs/$s.log")")
    failed+=("$s")
  fi
done
for s in "${failed[@]}"; do
  plain="$logs/$s.plain.log"
  sed -e 's/\x1b\[[0-9;]*m//g' "$logs/$s.log" | grep -v -E '^[[:space:]│]*$' > "$plain"
  echo "==== molecule scenario $s failed: its first errors (colours removed; whole log: $logs/$s.log) ===="
  # a failing task is followed by molecule's cleanup and destroy: show the first errors with what led to them
  grep -n -m 3 -E 'fatal:|FAILED!|ERROR|Executed: Failed|Traceback|failed=[1-9]' "$plain" | cut -d: -f1 |
    while read -r n; do
      echo "---- line $n ----"
      sed -n "$(( n > 25 ? n - 25 : 1 )),$(( n + 10 ))p" "$plain"
    done
  echo "==== molecule scenario $s: the last 25 lines ===="
  tail -n 25 "$plain"
done
echo "---- molecule scenarios ----"
printf '%s\n' "${summary[@]}"
[ "${#failed[@]}" -eq 0 ]
