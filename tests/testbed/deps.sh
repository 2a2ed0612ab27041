#!/usr/bin/env bash
# Debian packages the test suite needs (CI runs as root on Debian 12, no systemd: nothing is started here).
set -euo pipefail
pkgs=(openssh-server slurmctld slurmd slurm-client munge openipmi ipmitool netcat-openbsd openssl curl
      prometheus chromium chromium-driver shellcheck iproute2 util-linux dpkg-dev python3-apt procps
      openjdk-17-jre-headless prometheus-alertmanager
      mariadb-server slurmdbd)  # issue 19: real Slurm accounting on the test bed (slurm.sh starts both per bed)
pkgs+=(bindfs fio)  # issue 19 storage: a FUSE mount that hangs for real (test_storage_collect.py), the probe's fio
pkgs+=(prometheus-node-exporter)  # issue 40: the real-time chain's node metrics (tests/testbed/realtime.sh)
pkgs+=(postgresql-15)  # issue 15/17: the store tests run against a real PostgreSQL (tests/testbed/pg/pg.sh)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "deps: ${#pkgs[@]} packages present"
