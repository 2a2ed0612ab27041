#!/usr/bin/env bash
# gpuops.cluster multi-node test bed: simulated GPU nodes in network namespaces, with sshd and real Slurm.
#
#   testbed.sh up [N]            N nodes gpu-node-01..N (default 8) + Slurm; `up` tears down a previous bed first
#   testbed.sh down              stop everything by PID, delete the namespaces and the state dir
#   testbed.sh status            what is up
#   testbed.sh node HOST CMD...  run CMD "on" a node (its netns, hostname and mount namespace)
#   testbed.sh hub CMD...        run CMD in the hub netns (where slurmctld lives; reaches every node)
#   testbed.sh revive HOST       restart sshd/slurmd on a node left down by a `no_return` reboot
# Fault switches (README.md "Fault switches"):
#   testbed.sh slurmctld stop|kill|start|freeze|thaw   slurmctld down / killed / back / hung
#   testbed.sh slurmdbd stop|start     slurmdbd (accounting) down / back
#   testbed.sh cut HOST          take the node's link down (unreachable: ssh and slurmd both lose it)
#   testbed.sh mend HOST         bring it back up
#
# State dir: $GPUOPS_TB (default /tmp/gpuops-tb). Layout, fault injection and traps: tests/testbed/README.md.
# Nothing is created in the root network namespace; every write a test makes on a node lands in that
# node's private overlays (tmpfs), never on the CI host.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"

write_sshd_config() {  # $1 = node dir, $2 = ip
  cat > "$1/sshd_config" <<EOF
Port 22
ListenAddress $2
HostKey $1/ssh_host_ed25519_key
PidFile $1/sshd.pid
AuthorizedKeysFile $TB/ssh/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
UseDNS no
MaxStartups 100:30:200
MaxSessions 100
Subsystem sftp /usr/lib/openssh/sftp-server
LogLevel ERROR
EOF
}

start_node() {  # $1 = index
  local i=$1 name ns ip nd
  name=$(node_name "$i"); ns=$(node_ns "$i"); ip=$(node_ip "$i"); nd=$(node_dir "$name")
  echo "$ns" > "$nd/netns"
  echo "$ip" > "$nd/ip"
  ip -n "$HUB" link add "v$i" type veth peer name eth0 netns "$ns"
  ip -n "$HUB" link set "v$i" master "$BRIDGE" up
  ip -n "$ns" addr add "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  # default route to the hub (fills ansible_default_ipv4); the hub has no uplink and ip_forward=0
  ip -n "$ns" route add default via "$NET.1"
  ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$nd/ssh_host_ed25519_key"
  write_sshd_config "$nd" "$ip"
  setsid ip netns exec "$ns" unshare --uts --mount --pid --fork --mount-proc --propagation private \
    "$LIB/node-init.sh" "$nd" "$name" </dev/null >"$nd/init.log" 2>&1 &
  echo "$!" > "$nd/unshare.pid"
}

# host pid of a node's PID 1 (the child of `unshare --fork`), once node-init reported ready
record_holder() {  # $1 = node dir
  local upid child
  [ -s "$1/ready" ] || return 1
  upid=$(cat "$1/unshare.pid")
  child=$(cat "/proc/$upid/task/$upid/children" 2>/dev/null || true)
  child=${child%% *}
  [ -n "$child" ] || return 1
  echo "$child" > "$1/holder.pid"
}

write_inventory() {  # $1 = node count
  local n=$1 i name rack
  {
    echo "# Written by tests/testbed/testbed.sh up; usable from the host (ssh goes through the hub netns)."
    echo "all:"
    echo "  vars:"
    echo "    ansible_user: root"
    echo "    ansible_ssh_private_key_file: $TB/ssh/id_ed25519"
    echo "    ansible_ssh_common_args: >-"
    echo "      -o ProxyCommand=\"ip netns exec $HUB nc -q0 %h %p\""
    echo "      -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
    echo "      -o ServerAliveInterval=2 -o ServerAliveCountMax=3"
    echo "    ansible_control_path_dir: $TB/cp   # ssh ControlMaster sockets per bed (several beds share 10.200.0.x)"
    echo "    gpuops_slurm_controller:"
    echo "      host: slurm_head"
    echo "      name: tb-head"
    echo "      address: $NET.1"
    echo "      scontrol_path: $TB/bin/scontrol"
    echo "      partition: gpu"
    echo "    gpuops_testbed_dir: $TB"
    echo "  children:"
    echo "    gpu_nodes:"
    echo "      vars:"
    echo "        ansible_python_interpreter: /usr/bin/python3"
    echo "        gpuops_reboot_command: /usr/local/sbin/gpuops-sim-reboot"
    echo "        gpuops_boot_time_command: cat /proc/sys/kernel/random/boot_id"
    echo "      hosts:"
    for i in $(seq 1 "$n"); do
      name=$(node_name "$i"); rack=$(( (i - 1) / 4 + 1 ))
      echo "        $name:"
      echo "          ansible_host: $(node_ip "$i")"
      echo "          gpuops_rack: rack-$rack"
      echo "          gpuops_leaf_switch: leaf-$rack"
      echo "          gpuops_power_domain: pdu-$rack"
      echo "          gpuops_state_file: $(node_dir "$name")/state.json"
    done
    echo "    slurm_controllers:"
    echo "      hosts:"
    echo "        slurm_head:"
    echo "          ansible_connection: local"
    echo "          ansible_python_interpreter: \"{{ ansible_playbook_python }}\""
    echo "          gpuops_scontrol_path: $TB/bin/scontrol"
  } > "$TB/inventory.yml"
}

up() {
  local n=${1:-${GPUOPS_TB_NODES:-8}} t0 t i name nd pending aptpid dbpid=""
  if ! [[ $n =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 80 ]; then die "node count must be 1..80, got '$n'"; fi
  t0=$(now_ms)
  if [ -n "$(our_netns)" ] || [ -e "$TB" ]; then down; fi
  t=$(now_ms)
  mkdir -p "$TB/ssh" "$TB/nodes" "$TB/slurm" "$TB/bin"
  bash "$TBDIR/aptrepo/build.sh" "$TB/aptrepo" >/dev/null &
  aptpid=$!
  if [ "${GPUOPS_TB_SLURM:-1}" = 1 ]; then bash "$HERE/slurm.sh" dbprep & dbpid=$!; fi  # MariaDB's files, meanwhile
  ssh-keygen -q -t ed25519 -N '' -C gpuops-testbed -f "$TB/ssh/id_ed25519"
  cp "$TB/ssh/id_ed25519.pub" "$TB/ssh/authorized_keys"
  # cgroup hierarchies to re-mount in every node (v1, hybrid or v2, as the host has them)
  awk '$2 ~ "^/sys/fs/cgroup" && $3 ~ /^(tmpfs|cgroup|cgroup2)$/ {print $3, $2, $4}' /proc/1/mounts > "$TB/cgroup-mounts"
  printf '127.0.0.1 localhost\n%s.1 tb-head tb-hub\n' "$NET" > "$TB/hosts"
  for i in $(seq 1 "$n"); do printf '%s %s\n' "$(node_ip "$i")" "$(node_name "$i")" >> "$TB/hosts"; done
  ip netns add "$HUB"
  ip -n "$HUB" link set lo up
  ip -n "$HUB" link add "$BRIDGE" type bridge
  ip -n "$HUB" addr add "$NET.1/24" dev "$BRIDGE"
  ip -n "$HUB" link set "$BRIDGE" up
  ip netns exec "$HUB" sysctl -q -w net.ipv4.ip_forward=0
  mkdir -p "/etc/netns/$HUB"
  cp "$TB/hosts" "/etc/netns/$HUB/hosts"   # `ip netns exec` binds it over /etc/hosts
  wait "$aptpid" || die "building the apt repository failed"
  local -a pids=() hosts=()
  for i in $(seq 1 "$n"); do
    name=$(node_name "$i"); hosts+=("$name")
    mkdir -p "$(node_dir "$name")/rw" "$(node_dir "$name")/sysfs"
    cat /proc/sys/kernel/random/uuid > "$(node_dir "$name")/boot_id"
  done
  # simulator state + IB sysfs for all nodes in one python process, while the namespaces are built
  PYTHONPATH=$REPO/tools python3 "$LIB/simstate.py" init-many "$TB/nodes" "${hosts[@]}" &
  local simpid=$!
  # netns creation is serialised (parallel `ip netns add` races on /run/netns); the rest runs per node in parallel
  for i in $(seq 1 "$n"); do ip netns add "$(node_ns "$i")"; done
  for i in $(seq 1 "$n"); do start_node "$i" & pids+=("$!"); done
  write_inventory "$n"
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || die "setting up $(node_name $((i + 1))) failed"; done
  wait "$simpid" || die "writing the simulator state failed"
  # every node writes <node>/ready once its mounts and sshd are in place
  for _ in $(seq 600); do
    pending=0
    for i in $(seq 1 "$n"); do
      nd=$(node_dir "$(node_name "$i")")
      [ -s "$nd/holder.pid" ] || record_holder "$nd" || pending=$((pending + 1))
    done
    [ "$pending" -eq 0 ] && break
    sleep 0.05
  done
  for i in $(seq 1 "$n"); do
    name=$(node_name "$i")
    [ -s "$(node_dir "$name")/holder.pid" ] || { cat "$(node_dir "$name")/init.log" >&2; die "$name did not start"; }
  done
  log "nodes up: $n in $(elapsed "$t")"
  if [ "${GPUOPS_TB_SLURM:-1}" = 1 ]; then
    t=$(now_ms)
    if [ -n "$dbpid" ]; then wait "$dbpid" || die "preparing the accounting database failed"; fi
    bash "$HERE/slurm.sh" up
    log "slurm up in $(elapsed "$t")"
  fi
  log "test bed up in $(elapsed "$t0"): inventory $TB/inventory.yml, scontrol $TB/bin/scontrol"
}

down() {
  local t ns pid left
  t=$(now_ms)
  if [ -f "$HERE/slurm.sh" ]; then bash "$HERE/slurm.sh" down || true; fi
  for ns in $(our_netns); do
    for pid in $(ip netns pids "$ns"); do kill "$pid" 2>/dev/null || true; done
  done
  for _ in $(seq 20); do
    left=""
    for ns in $(our_netns); do left+=$(ip netns pids "$ns"); done
    [ -z "$left" ] && break
    sleep 0.05
  done
  for ns in $(our_netns); do
    for pid in $(ip netns pids "$ns"); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns"
  done
  rm -rf "/etc/netns/$HUB" "$TB"
  log "test bed down in $(elapsed "$t")"
}

status() {
  local name pid nd
  echo "state dir: $TB"
  echo "netns: $(our_netns | tr '\n' ' ')"
  for name in $(node_names); do
    nd=$(node_dir "$name")
    pid=$(cat "$nd/holder.pid" 2>/dev/null || echo -)
    if [ "$pid" != - ] && kill -0 "$pid" 2>/dev/null; then
      echo "$name $(cat "$nd/ip") holder=$pid boot_id=$(cat "$nd/boot_id")"
    else
      echo "$name DOWN"
    fi
  done
  if [ -x "$TB/bin/sinfo" ]; then "$TB/bin/sinfo" -N -o '%N %T %E' || true; fi
}

link() {  # link up|down HOST: the node's veth end in the hub (its only link)
  local i
  [ -d "$(node_dir "$2")" ] || die "no node $2"
  i=$((10#${2##*-}))
  ip -n "$HUB" link set "v$i" "$1"
}

revive() {  # $1 = host: start sshd / slurmd where they are not running (after a `no_return` reboot)
  local nd
  nd=$(node_dir "$1")
  rm -f "$nd/no_return"
  in_node "$1" sh -c "pgrep -x sshd >/dev/null || /usr/sbin/sshd -f '$nd/sshd_config'
    if [ -e '$nd/slurmd.enabled' ]; then pgrep -x slurmd >/dev/null || /usr/sbin/slurmd; fi"
}

case "${1:-}" in
  up) up "${2:-}" ;;
  revive) [ $# -eq 2 ] || die "usage: testbed.sh revive HOST"; revive "$2" ;;
  down) down ;;
  status) status ;;
  slurmctld) [ $# -eq 2 ] || die "usage: testbed.sh slurmctld stop|kill|start|freeze|thaw"; bash "$HERE/slurm.sh" ctld "$2" ;;
  slurmdbd) [ $# -eq 2 ] || die "usage: testbed.sh slurmdbd stop|start"; bash "$HERE/slurm.sh" dbd "$2" ;;
  cut) [ $# -eq 2 ] || die "usage: testbed.sh cut HOST"; link down "$2" ;;
  mend) [ $# -eq 2 ] || die "usage: testbed.sh mend HOST"; link up "$2" ;;
  node) [ $# -ge 3 ] || die "usage: testbed.sh node HOST CMD..."; shift; n=$1; shift; in_node "$n" "$@" ;;
  hub) [ $# -ge 2 ] || die "usage: testbed.sh hub CMD..."; shift
       SLURM_CONF=$TB/slurm/slurm.conf exec ip netns exec "$HUB" "$@" ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac
