#!/usr/bin/env bash
# The real-time path on the test bed (issue 40), every daemon real:
#   node: gpuops.cluster.health_check installed by its role, run by the node's slurmd (HealthCheckProgram)
#         + prometheus-node-exporter (textfile + infiniband collectors) inside each node's namespaces
#   hub:  prometheus (the collection's generated rules), prometheus-alertmanager (the collection's routing),
#         ansible-rulebook (the collection's rulebook) running the real playbooks against the bed
#   leak: a Redfish BMC emulator (tests/testbed/bmc) inside the hub netns, serving the first node's system;
#         the rulebook's leak watch (gpuops.cluster.redfish_leak) polls its LeakDetectors and runs the real
#         leak_response.yml, which powers that system off on the emulator (GPUOPS_RT_BMC=0: no emulator)
#   realtime.sh up     after testbed.sh up (it starts its own BMC emulator in the hub); idempotent: down first
#   realtime.sh down   stops what `up` started, by the pids it recorded; the bed stays
#   realtime.sh status
# Settings (environment): GPUOPS_RT_HC_INTERVAL (HealthCheckInterval, default 5), GPUOPS_RT_SCRAPE (scrape
# interval, default 1s), GPUOPS_RT_CALL_TIMEOUT (health_check_call_timeout, default 5), GPUOPS_RT_LEAK_INTERVAL
# (the leak watch's Redfish poll, default 2 s), GPUOPS_RT_IB_DOWN_RUNS (health_check_ib_down_runs, default 3).
# Everything lives in $GPUOPS_TB/realtime (logs, pids, configs, TSDB, state dir).
# Every wait is on a condition with a deadline; nothing sleeps a fixed time.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
RT=$TB/realtime
HC_INTERVAL=${GPUOPS_RT_HC_INTERVAL:-5}
SCRAPE=${GPUOPS_RT_SCRAPE:-1s}
# the bed's nvidia-smi/ibstat are Python processes (~0.3 s each, seconds on a loaded 2-core box): with the role's
# default 2 s call timeout a loaded bed drains healthy nodes for collector.error (P1 reboot; seen on this bed)
CALL_TIMEOUT=${GPUOPS_RT_CALL_TIMEOUT:-5}
EDA_PORT=5000
LEAK_INTERVAL=${GPUOPS_RT_LEAK_INTERVAL:-2}
IB_DOWN_RUNS=${GPUOPS_RT_IB_DOWN_RUNS:-3}
RT_BMC=${GPUOPS_RT_BMC:-1}
# the emulator's test-only account (tests/testbed/bmc/bmc.sh defaults); it listens on the hub's own loopback
BMC_USER_="admin"
BMC_PASS_=gpuops-Emul4ted-pw
BMC_SYSTEM=00000000-0000-0000-0000-000000000001
EDA_BIN=${GPUOPS_EDA_BIN:-$REPO/build/venv-eda/bin}
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
TEXTFILE=/var/lib/node_exporter/textfile_collector
NE_PID=/run/gpuops-rt-node-exporter.pid  # node-local pid file (inside the node's PID namespace)

# wait_until SECONDS WHAT CMD...: poll CMD every 0.2 s until it succeeds; fail with WHAT after SECONDS
wait_until() {
  local secs=$1 what=$2 t
  shift 2
  t=$(now_ms)
  until "$@" >/dev/null 2>&1; do
    [ $(($(now_ms) - t)) -lt $((secs * 1000)) ] || die "timed out after ${secs}s waiting for $what"
    sleep 0.2  # the poll period, not a wait for something
  done
}
http_ok() { in_hub curl -fsS -o /dev/null --max-time 2 "$1"; }
hub_start() {  # hub_start NAME CMD...: a daemon in the hub netns, its host pid in $RT/NAME.pid
  local name=$1
  shift
  SLURM_CONF=$TB/slurm/slurm.conf setsid ip netns exec "$HUB" "$@" >"$RT/$name.log" 2>&1 </dev/null &
  echo $! >"$RT/$name.pid"
}

playbook() {
  ANSIBLE_PIPELINING=True ANSIBLE_CONFIG=$REPO/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$REPO/build \
    "$REPO/.venv/bin/ansible-playbook" -i "$TB/inventory.yml" "$@"
}

up() {
  local t name i ip targets=""
  t=$(now_ms)
  [ -s "$TB/inventory.yml" ] || die "no test bed at $TB (testbed.sh up first)"
  down_daemons
  mkdir -p "$RT/state" "$RT/tsdb" "$RT/am"
  # 1. the health check, by its role, under each node's slurmd (HealthCheckInterval in the bed's slurm.conf)
  playbook "$REPO/playbooks/health_check.yml" -e gpuops_targets=gpu_nodes -e gpuops_allow_target_patterns=true -e health_check_state=present \
    -e "health_check_interval=$HC_INTERVAL" -e "health_check_call_timeout=$CALL_TIMEOUT" \
    -e "health_check_ib_down_runs=$IB_DOWN_RUNS" \
    -e health_check_collect_timeout=8 >"$RT/health_check-install.log" 2>&1 \
    || die "health_check role failed: $(tail -20 "$RT/health_check-install.log")"
  # 2. node_exporter in every node (its own netns: listens on the node's address)
  for name in $(node_names); do
    ip=$(cat "$(node_dir "$name")/ip")
    in_node "$name" sh -c "mkdir -p $TEXTFILE; setsid prometheus-node-exporter --web.listen-address=$ip:9100 \
      --collector.disable-defaults --collector.textfile --collector.textfile.directory=$TEXTFILE \
      --collector.infiniband --path.sysfs=/sys >'$RT/node-exporter-$name.log' 2>&1 </dev/null & echo \$! >$NE_PID"
    targets="$targets
      - targets: ['$ip:9100']
        labels: {node: $name}"
  done
  # 3. prometheus with the generated rules, alerting to the local Alertmanager
  cat >"$RT/prometheus.yml" <<EOF
# written by tests/testbed/realtime.sh
global: {scrape_interval: $SCRAPE, scrape_timeout: $SCRAPE, evaluation_interval: $SCRAPE}
rule_files: ['$REPO/extensions/prometheus/gpuops-rules.yml']
alerting:
  alertmanagers: [{static_configs: [{targets: ['127.0.0.1:9093']}]}]
scrape_configs:
  - job_name: node
    honor_labels: true
    static_configs:$targets
EOF
  promtool check config "$RT/prometheus.yml" >"$RT/promtool.log" 2>&1 || die "promtool: $(cat "$RT/promtool.log")"
  hub_start prometheus prometheus --config.file="$RT/prometheus.yml" --storage.tsdb.path="$RT/tsdb" \
    --web.listen-address=127.0.0.1:9090
  # 4. alertmanager with the collection's routing, its EDA receiver pointed at the local rulebook; the people's
  #    receivers (example.invalid) at a closed local port: nothing is looked up or sent off the bed
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$RT/eda-token"
  chmod 600 "$RT/eda-token"
  sed -e "s#http://127.0.0.1:5000/endpoint#http://127.0.0.1:$EDA_PORT/endpoint#" \
    -e "s#/etc/alertmanager/gpuops-eda-token#$RT/eda-token#" \
    -e "s#http://[a-z]*\.example\.invalid/#http://127.0.0.1:9/#" \
    "$REPO/extensions/prometheus/alertmanager.yml" >"$RT/alertmanager.yml"
  amtool check-config "$RT/alertmanager.yml" >"$RT/amtool.log" 2>&1 || die "amtool: $(cat "$RT/amtool.log")"
  hub_start alertmanager prometheus-alertmanager --config.file="$RT/alertmanager.yml" --storage.path="$RT/am" \
    --web.listen-address=127.0.0.1:9093 --cluster.listen-address= --log.level=debug
  # 5. the leak path: a Redfish emulator in the hub netns (where the rulebook and its playbooks run), the first
  #    node's system on it; the leak watch's targets file and an inventory overlay with the node's BMC and leak
  #    domain (the playbook reads the BMC with these credentials, never with anything from the event)
  local inv=$TB/inventory.yml first targets=""
  first=$(node_names | head -1)
  if [ "$RT_BMC" != 0 ]; then
    in_hub env BMC_WORK="$RT/bmc" BMC_REDFISH_PORT=8443 BMC_IPMI_PORT=9001 BMC_USER="$BMC_USER_" BMC_PASSWORD="$BMC_PASS_" \
      bash "$HERE/bmc/bmc.sh" up \
      >"$RT/bmc-up.log" 2>&1 || die "bmc emulator: $(tail -20 "$RT/bmc-up.log")"
    (umask 077 && printf '%s\n' "$BMC_PASS_" >"$RT/bmc-password")
    printf '{"targets": [{"node": "%s", "bmc": "https://127.0.0.1:8443", "system": "%s", "validate_certs": false}]}\n' \
      "$first" "$BMC_SYSTEM" >"$RT/leak-targets.json"
    targets=$RT/leak-targets.json
    mkdir -p "$RT/inventory"
    ln -sfn "$TB/inventory.yml" "$RT/inventory/10-bed.yml"
    (umask 077 && printf '%s\n' "# written by tests/testbed/realtime.sh: the first node's BMC (the hub's emulator), leak domain" \
      "all:" "  hosts:" "    $first:" "      gpuops_bmc_address: 127.0.0.1" "      gpuops_bmc_port: 8443" \
      "      gpuops_bmc_protocol: redfish" "      gpuops_bmc_system_id: \"$BMC_SYSTEM\"" \
      "      gpuops_bmc_user: $BMC_USER_" "      gpuops_bmc_password: $BMC_PASS_" \
      "      gpuops_bmc_validate_certs: false" "      gpuops_leak_domain: cdu-rt" >"$RT/inventory/20-bmc.yml")
    inv=$RT/inventory
  fi
  # 6. ansible-rulebook with the collection's rulebook, from the repo root (run_playbook paths are relative)
  [ -x "$EDA_BIN/ansible-rulebook" ] || die "no ansible-rulebook in $EDA_BIN (tests/testbed/eda-setup.sh)"
  (
    cd "$REPO"
    export GPUOPS_EDA_PORT=$EDA_PORT GPUOPS_EDA_TOKEN
    GPUOPS_EDA_TOKEN=$(cat "$RT/eda-token")
    # ansible-runner runs the `ansible-playbook` it finds first: the collection's venv (its requirements: the
    # store's SQLAlchemy...), not ansible-rulebook's own
    export PATH=$REPO/.venv/bin:$EDA_BIN:$PATH ANSIBLE_COLLECTIONS_PATH=$REPO/build ANSIBLE_CONFIG=$REPO/ansible.cfg
    export ANSIBLE_PIPELINING=True ANSIBLE_CALLBACKS_ENABLED=gpuops.cluster.audit GPUOPS_STATE_DIR=$RT/state
    export GPUOPS_TB=$TB GPUOPS_LEAK_TARGETS=$targets GPUOPS_LEAK_INTERVAL=$LEAK_INTERVAL
    export GPUOPS_BMC_USER=$BMC_USER_ GPUOPS_BMC_PASSWORD_FILE=$RT/bmc-password GPUOPS_BMC_VALIDATE_CERTS=false
    unset VIRTUAL_ENV PYTHONPATH
    hub_start rulebook "$EDA_BIN/ansible-rulebook" --rulebook extensions/eda/rulebooks/gpuops.yml \
      -i "$inv" -v --env-vars \
      GPUOPS_EDA_PORT,GPUOPS_EDA_TOKEN,GPUOPS_LEAK_TARGETS,GPUOPS_LEAK_INTERVAL,GPUOPS_BMC_USER,GPUOPS_BMC_PASSWORD_FILE,GPUOPS_BMC_VALIDATE_CERTS
  )
  wait_until 30 "prometheus ready" http_ok http://127.0.0.1:9090/-/ready
  wait_until 30 "alertmanager ready" http_ok http://127.0.0.1:9093/-/ready
  wait_until 60 "ansible-rulebook listening" in_hub bash -c "exec 3<>/dev/tcp/127.0.0.1/$EDA_PORT"
  for i in $(node_names); do
    ip=$(cat "$(node_dir "$i")/ip")
    wait_until 20 "node_exporter on $i" http_ok "http://$ip:9100/metrics"
  done
  wait_until 30 "every node target up" sh -c "ip netns exec '$HUB' curl -fsS --max-time 2 \
    'http://127.0.0.1:9090/api/v1/query?query=count(up%7Bjob%3D%22node%22%7D%3D%3D1)' | grep -q '\"$(node_names | wc -l)\"\\]'"
  log "realtime chain up in $(elapsed "$t"): HealthCheckInterval=$HC_INTERVAL scrape=$SCRAPE" \
    "ib_down_runs=$IB_DOWN_RUNS leak poll=${LEAK_INTERVAL}s, logs in $RT"
}

down_daemons() {
  local name pid
  for name in rulebook alertmanager prometheus; do
    [ -s "$RT/$name.pid" ] || continue
    pid=$(cat "$RT/$name.pid")
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    wait_until 20 "$name (pid $pid) to stop" sh -c "! [ -d /proc/$pid ] || grep -q '^State:.Z' /proc/$pid/status"
    rm -f "$RT/$name.pid"
  done
  if [ -d "$RT/bmc" ]; then
    in_hub env BMC_WORK="$RT/bmc" BMC_REDFISH_PORT=8443 BMC_IPMI_PORT=9001 bash "$HERE/bmc/bmc.sh" down >/dev/null 2>&1 \
      || log "bmc emulator stop failed"
  fi
  for name in $(node_names); do
    [ -s "$(node_dir "$name")/holder.pid" ] || continue
    in_node "$name" sh -c "[ -s $NE_PID ] && kill \$(cat $NE_PID) 2>/dev/null; rm -f $NE_PID" || true
  done
}

down() {
  [ -d "$RT" ] || return 0
  down_daemons
  if [ -s "$TB/inventory.yml" ]; then
    playbook "$REPO/playbooks/health_check.yml" -e gpuops_targets=gpu_nodes -e gpuops_allow_target_patterns=true -e health_check_state=absent \
      >"$RT/health_check-remove.log" 2>&1 || log "health_check removal failed (see $RT/health_check-remove.log)"
  fi
  log "realtime chain down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status)
    for name in prometheus alertmanager rulebook; do
      printf '%s %s\n' "$name" "$( [ -s "$RT/$name.pid" ] && cat "$RT/$name.pid" || echo -)"
    done ;;
  *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
