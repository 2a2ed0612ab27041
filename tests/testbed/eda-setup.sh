#!/usr/bin/env bash
# Event-Driven Ansible for the tests: ansible-rulebook in its own venv build/venv-eda (idempotent).
#   bash tests/testbed/eda-setup.sh          -> prints the venv's bin dir on the last line
# ansible-rulebook needs a Java 17 JDK (drools): JAVA_HOME defaults to /usr/lib/jvm/java-17-openjdk-amd64
# (Debian: apt-get install openjdk-17-jre-headless). The collection venv cannot hold it: ansible-rulebook pins
# its own ansible-runner/ansible-core ranges. The rulebook's source is this collection's gpuops.cluster.alertmanager
# (extensions/eda/plugins/event_source, aiohttp from this venv): no ansible.eda collection needed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${GPUOPS_EDA_VENV:-$ROOT/build/venv-eda}
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
if [ ! -x "$JAVA_HOME/bin/java" ]; then
  echo "eda-setup: no Java at JAVA_HOME=$JAVA_HOME (apt-get install openjdk-17-jre-headless)" >&2
  exit 1
fi
if [ -x "$VENV/bin/ansible-rulebook" ] && JAVA_HOME=$JAVA_HOME "$VENV/bin/ansible-rulebook" --version >/dev/null 2>&1; then
  echo "eda-setup: $VENV already has $("$VENV/bin/ansible-rulebook" --version 2>/dev/null | head -1)"
else
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check ansible-rulebook ansible-core aiohttp 2>&1 \
    | { grep -v "is ignored: it is neither" || true; }
  JAVA_HOME=$JAVA_HOME "$VENV/bin/ansible-rulebook" --version | head -1
fi
echo "$VENV/bin"
