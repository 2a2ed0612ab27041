#!/usr/bin/env bash
# Create the BMC emulator venv (build/venv-bmc) with sushy-tools. Idempotent: a working venv is kept.
#   tests/testbed/bmc/setup.sh            -> prints the venv path on stdout
# Env: BMC_VENV (default <repo>/build/venv-bmc), PYTHON (default python3), SUSHY_VERSION (2.2.0).
# The IPMI side needs the Debian packages openipmi and ipmitool (tests/testbed/deps.sh installs them).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
VENV=${BMC_VENV:-$ROOT/build/venv-bmc}
PY=${PYTHON:-python3}
SUSHY_VERSION=${SUSHY_VERSION:-2.2.0}

ok() { [ -f "$VENV/.stamp-$SUSHY_VERSION" ] && "$VENV/bin/python" -c "import sushy_tools.emulator.main, flask, bcrypt" 2>/dev/null; }

if ok; then echo "$VENV"; exit 0; fi
mkdir -p "$(dirname "$VENV")"
# one builder at a time (run-integration.sh and the pytest fixtures may both get here)
exec 9>"$VENV.lock"
flock -w 600 9
if ok; then echo "$VENV"; exit 0; fi
for attempt in 1 2; do
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  if "$VENV/bin/pip" install -q --disable-pip-version-check "sushy-tools==$SUSHY_VERSION" bcrypt >"$VENV/pip.log" 2>&1 \
     && touch "$VENV/.stamp-$SUSHY_VERSION" && ok; then
    echo "$VENV"
    exit 0
  fi
  echo "setup.sh: attempt $attempt to build $VENV failed:" >&2
  grep -v "is ignored" "$VENV/pip.log" | tail -20 >&2 || true
done
exit 1
