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

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
# running PIDFILE: alive and not a zombie (PID 1 on the CI machine reaps orphans late)
running() { alive "$1" && ! grep -q '^State:.Z' "/proc/$(cat "$1")/status" 2>/dev/null; }

write_conf() {  # $1 = node count
  local n=$1 last
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
AccountingStorageType=accounting_storage/none
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
  for t in scontrol sinfo squeue sbatch scancel srun sacct; do
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
  for f in "$S/slurmctld.pid" "$M/munged.pid"; do
    if alive "$f"; then kill "$(cat "$f")" 2>/dev/null || true; fi
  done
  return 0
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  ctld) ctld "${2:-}" ;;
  *) sed -n '2,14p' "$0" >&2; exit 2 ;;
esac
