#!/usr/bin/env bash
# Create the BMC emulator venv (build/venv-bmc) with sushy-tools. Idempotent: a complete venv is kept.
#   tests/testbed/bmc/setup.sh            -> prints the venv path
# Env: BMC_VENV (default <repo>/build/venv-bmc), PYTHON (default python3).
# The IPMI side needs the Debian packages openipmi and ipmitool (tests/testbed/deps.sh installs them).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
VENV=${BMC_VENV:-$ROOT/build/venv-bmc}
PY=${PYTHON:-python3}
SUSHY_VERSION=${SUSHY_VERSION:-2.2.0}
if [ -f "$VENV/.stamp-$SUSHY_VERSION" ] && "$VENV/bin/python" -c "import sushy_tools, flask" 2>/dev/null; then
  echo "$VENV"
  exit 0
fi
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check "sushy-tools==$SUSHY_VERSION" 2>&1 \
  | { grep -v -e "is ignored" -e "^$" || true; } >&2
"$VENV/bin/python" -c "import sushy_tools, flask" >/dev/null
touch "$VENV/.stamp-$SUSHY_VERSION"
echo "$VENV"
