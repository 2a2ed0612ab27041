#!/usr/bin/env bash
# `make test`: run every stage, print each stage's wall time, fail if any stage failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
stages=(ruff ansible-lint sanity docs-lint unit package integration molecule)
[ "$#" -gt 0 ] && stages=("$@")
failed=()
passed=0
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
