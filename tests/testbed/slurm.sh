#!/usr/bin/env bash
# Real Slurm (Debian slurm-wlm 22.05) on the test bed; called by testbed.sh up/down.
#
#   slurm.sh up      private munged, slurmctld in the hub netns (hostname tb-head), one slurmd per node,
#                    partition gpu (all nodes, default), GRES gpu:h100:8 on fake /dev nodes;
#                    host wrappers $GPUOPS_TB/bin/{scontrol,sinfo,squeue,sbatch,scancel,srun}
#   slurm.sh down    stop what `up` started (by pid file)
#   slurm.sh ctld stop|kill|start|freeze|thaw   fault switch: slurmctld stopped (SIGTERM, state saved) or killed
#                    (SIGKILL), started again (keeps the saved node states: drains, reasons), or frozen (SIGSTOP:
#                    the port accepts, nothing answers; scontrol fails after MessageTimeout) and thawed
#   slurm.sh dbd stop|start   fault switch: slurmdbd stopped / started again (accounting unreachable)
#
# Accounting is real (GPUOPS_TB_ACCOUNTING=0 turns it off): a private MariaDB (Debian's mariadb-server, datadir
# $GPUOPS_TB/mysql, TCP 127.0.0.1:3306 inside the hub netns only) and slurmdbd in the hub netns, started once per
# `up` by PID file (no systemd); the cluster is registered with sacctmgr before slurmctld starts, so sacct answers
# from the real slurmdbd.
#
# munged is private to the test bed (own key and socket under $GPUOPS_TB/munge, AuthInfo=socket=...):
# the host's munge key and daemon are never touched.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
S=$TB/slurm-state
M=$TB/munge
CONF=$TB/slurm/slurm.conf
DB=$TB/mysql

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
# running PIDFILE: alive and not a zombie (PID 1 on the CI machine reaps orphans late)
running() { alive "$1" && ! grep -q '^State:.Z' "/proc/$(cat "$1")/status" 2>/dev/null; }

write_conf() {  # $1 = node count
  local n=$1 last ACCT_TYPE=accounting_storage/none
  if accounting; then ACCT_TYPE=accounting_storage/slurmdbd; fi
  last=$(printf %02d "$n")
  cat > "$CONF" <<EOF
# Written by tests/testbed/slurm.sh
ClusterName=gpuops-tb
SlurmctldHost=tb-head($NET.1)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$M/munge.socket
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$S/ctld
SlurmdSpoolDir=$S/slurmd-%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd-%n.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=$ACCT_TYPE
AccountingStorageHost=tb-head
# with slurmdbd and munge: the munge socket for the accounting connection (the private one, as AuthInfo)
AccountingStoragePass=$M/munge.socket
JobCompType=jobcomp/none
MailProg=/bin/true
# nodes claim more hardware than the CI machine has; without this they go INVAL
SlurmdParameters=config_overrides
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=60
DefMemPerCPU=100
Waittime=0
MessageTimeout=5
JobRequeue=1
NodeName=gpu-node-[01-$last] NodeAddr=$NET.[11-$((10 + n))] CPUs=16 RealMemory=16000 Gres=gpu:h100:8 State=UNKNOWN
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  # gres/gpu needs File= on character devices (Count= alone registers 0 GPUs -> INVALID_REG);
  # slurmd only stat()s them, so major 195 without a driver is enough
  cat > "$TB/slurm/gres.conf" <<EOF
NodeName=gpu-node-[01-$last] Name=gpu Type=h100 File=$TB/fakedev/nvidia[0-7]
EOF
}

write_wrappers() {
  local t
  for t in scontrol sinfo squeue sbatch scancel srun sacct sdiag sacctmgr; do
    cat > "$TB/bin/$t" <<EOF
#!/bin/sh
# $t against the test bed's slurmctld (runs in the hub netns, the only place that reaches it)
SLURM_CONF=$CONF exec ip netns exec $HUB /usr/bin/$t "\$@"
EOF
    chmod 755 "$TB/bin/$t"
  done
}

up() {
  local nodes n node g idle
  nodes=$(node_names)
  [ -n "$nodes" ] || die "no test-bed nodes: run testbed.sh up first"
  n=$(echo "$nodes" | wc -l)
  mkdir -p "$TB/slurm" "$TB/bin" "$S/ctld" "$M" "$TB/fakedev"
  for node in $nodes; do mkdir -p "$S/slurmd-$node"; done
  for g in 0 1 2 3 4 5 6 7; do [ -e "$TB/fakedev/nvidia$g" ] || mknod "$TB/fakedev/nvidia$g" c 195 "$g"; done
  write_conf "$n"
  write_wrappers
  cp "$CONF" "$TB/slurm/gres.conf" "$S/" 2>/dev/null || true

  if ! alive "$M/munged.pid"; then
    chmod 700 "$M"
    [ -s "$M/munge.key" ] || { dd if=/dev/urandom of="$M/munge.key" bs=1024 count=1 status=none; chmod 600 "$M/munge.key"; }
    /usr/sbin/munged --force --key-file="$M/munge.key" --socket="$M/munge.socket" \
      --pid-file="$M/munged.pid" --log-file="$M/munged.log" --seed-file="$M/munged.seed" --num-threads=4
  fi
  if accounting; then start_dbd; fi
  start_ctld -c
  for node in $nodes; do
    touch "$(node_dir "$node")/slurmd.enabled"   # gpuops-sim-reboot restarts slurmd on such nodes
    in_node "$node" /usr/sbin/slurmd
  done
  for _ in $(seq 100); do
    idle=$("$TB/bin/sinfo" -h -N -o '%T' 2>/dev/null | grep -cx idle || true)
    [ "$idle" -eq "$n" ] && break
    sleep 0.1
  done
  "$TB/bin/sinfo" -N -o '%12N %8T %G' >&2
  [ "$idle" -eq "$n" ] || die "only $idle of $n slurm nodes are idle (logs: $S/*.log)"
}

accounting() { [ "${GPUOPS_TB_ACCOUNTING:-1}" = 1 ]; }

write_dbd_conf() {
  (umask 077; cat > "$TB/slurm/slurmdbd.conf" <<EOF
# Written by tests/testbed/slurm.sh
DbdHost=tb-head
DbdPort=6819
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$M/munge.socket
PidFile=$S/slurmdbd.pid
LogFile=$S/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=slurm
StoragePass=$(cat "$DB/pass")
StorageLoc=slurm_acct_db
EOF
  )
}

# a throw-away database: small files, no fsync (a bed lives minutes; speed of `up` matters, durability does not)
MARIADB_OPTS=(--no-defaults --user=root --skip-name-resolve --innodb-log-file-size=4M
  --innodb-data-file-path=ibdata1:4M:autoextend --innodb-buffer-pool-size=16M --innodb-flush-method=nosync
  --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 --performance-schema=OFF --skip-log-bin)

prep_db() {  # the empty database (testbed.sh runs this in the background while the nodes start)
  accounting || return 0
  mkdir -p "$DB"
  [ -s "$DB/pass" ] || (umask 077; od -An -tx8 -N16 /dev/urandom | tr -d ' \n' > "$DB/pass")
  if [ ! -d "$DB/data/mysql" ]; then
    mariadb-install-db "${MARIADB_OPTS[@]}" --datadir="$DB/data" --auth-root-authentication-method=normal \
      --skip-test-db >"$DB/install.log" 2>&1 || die "mariadb-install-db failed ($DB/install.log)"
  fi
}

start_mariadb() {  # a private MariaDB in the hub netns (its own loopback: beds never share a port)
  prep_db
  (umask 077; printf "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '%s';\nGRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';\n" \
    "$(cat "$DB/pass")" > "$DB/init.sql")
  ip netns exec "$HUB" setsid /usr/sbin/mariadbd "${MARIADB_OPTS[@]}" --datadir="$DB/data" \
    --bind-address=127.0.0.1 --port=3306 --socket="$DB/mysqld.sock" --pid-file="$DB/mariadbd.pid" \
    --log-error="$DB/mariadbd.log" --init-file="$DB/init.sql" </dev/null >/dev/null 2>&1 &
  for _ in $(seq 200); do
    if [ -S "$DB/mysqld.sock" ] && alive "$DB/mariadbd.pid"; then return 0; fi
    sleep 0.05
  done
  die "mariadbd did not start (log: $DB/mariadbd.log)"
}

run_dbd() {  # slurmdbd insists on gethostname() == DbdHost, as slurmctld does: hostname tb-head
  local end=$((SECONDS + 20))
  ip netns exec "$HUB" unshare --uts sh -c "hostname tb-head; SLURM_CONF=$CONF exec /usr/sbin/slurmdbd"
  while [ "$SECONDS" -lt "$end" ]; do
    if "$TB/bin/sacctmgr" -n -P list cluster format=cluster >/dev/null 2>&1; then return 0; fi
    sleep 0.05
  done
  die "slurmdbd did not answer (log: $S/slurmdbd.log)"
}

start_dbd() {  # MariaDB, slurmdbd and the cluster registered (before slurmctld starts)
  local t
  t=$(now_ms)
  start_mariadb
  log "mariadb up in $(elapsed "$t")"
  write_dbd_conf
  run_dbd
  log "slurmdbd up in $(elapsed "$t")"
  "$TB/bin/sacctmgr" -i add cluster gpuops-tb >/dev/null 2>&1 || true
  "$TB/bin/sacctmgr" -n -P list cluster format=cluster | grep -qx gpuops-tb || die "cluster not registered in slurmdbd"
}

dbd() {  # fault switch on slurmdbd: stop | start
  local f=$S/slurmdbd.pid pid
  accounting || die "accounting is off (GPUOPS_TB_ACCOUNTING=0)"
  case "$1" in
    stop)
      running "$f" || return 0
      pid=$(cat "$f")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 100); do
        if [ ! -r "/proc/$pid/status" ] || grep -q '^State:.Z' "/proc/$pid/status"; then break; fi
        sleep 0.05
      done ;;
    start) running "$f" || run_dbd ;;
    *) die "usage: slurm.sh dbd stop|start" ;;
  esac
}

start_ctld() {  # $1 = extra slurmctld flags (-c on first start: a clean state)
  # slurmctld insists on gethostname() == SlurmctldHost: own UTS namespace with hostname tb-head
  ip netns exec "$HUB" unshare --uts sh -c "hostname tb-head; SLURM_CONF=$CONF exec /usr/sbin/slurmctld $1"
}

ctld() {  # fault switch on slurmctld (tests/testbed/README.md "Fault switches")
  local f=$S/slurmctld.pid pid
  case "$1" in
    stop|kill)
      running "$f" || return 0
      pid=$(cat "$f")
      kill "-$([ "$1" = kill ] && echo KILL || echo TERM)" "$pid" 2>/dev/null || true
      kill -CONT "$pid" 2>/dev/null || true   # a frozen one must run to die of TERM
      for _ in $(seq 100); do
        if [ ! -r "/proc/$pid/status" ] || grep -q '^State:.Z' "/proc/$pid/status"; then break; fi
        sleep 0.05
      done ;;
    start)
      running "$f" && return 0
      start_ctld ""
      # answering, and every slurmd registered again (no node UNKNOWN: a RESUME would be refused)
      for _ in $(seq 200); do
        if "$TB/bin/scontrol" ping >/dev/null 2>&1 \
           && ! "$TB/bin/sinfo" -h -N -o '%T' 2>/dev/null | grep -q unknown; then return 0; fi
        sleep 0.1
      done
      die "slurmctld did not answer after start (log: $S/slurmctld.log)" ;;
    freeze) if running "$f"; then kill -STOP "$(cat "$f")"; fi ;;
    thaw) if running "$f"; then kill -CONT "$(cat "$f")"; fi ;;
    *) die "usage: slurm.sh ctld stop|kill|start|freeze|thaw" ;;
  esac
}

down() {
  local f
  # slurmd pid files hold pids of the nodes' own PID namespaces (meaningless here): slurmd dies with its
  # node (testbed.sh down kills each node's init). slurmctld and munged run in the host's PID namespace.
  for f in "$S/slurmctld.pid" "$S/slurmdbd.pid" "$DB/mariadbd.pid" "$M/munged.pid"; do
    if alive "$f"; then kill "$(cat "$f")" 2>/dev/null || true; fi
  done
  return 0
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  ctld) ctld "${2:-}" ;;
  dbd) dbd "${2:-}" ;;
  dbprep) prep_db ;;
  *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
