#!/usr/bin/env bash
# BMC emulators for the gpuops.cluster tests, on 127.0.0.1 only:
#   Redfish: sushy-tools fake driver + sushy_plus.py, HTTPS (self-signed cert made at start), basic auth and sessions
#   IPMI:    OpenIPMI ipmi_sim, RMCP+ (ipmitool -I lanplus -C 3), console for fault injection on PORT+1000
#
#   bmc.sh up       start both (idempotent: a running set is kept); prints the endpoints
#   bmc.sh down     stop both by PID and remove the work dir (idempotent)
#   bmc.sh status   exit 0 when both answer
#   bmc.sh env      print the endpoints as shell variables (source-able)
#   bmc.sh inject 'sensor_set_bit 0x20 0 6 1 1 1'   send one command to the ipmi_sim console
# Fault switches (README.md "Fault switches"):
#   bmc.sh freeze ipmi|redfish     SIGSTOP the emulator: the port accepts/queues, nothing answers (a hung BMC)
#   bmc.sh thaw ipmi|redfish       SIGCONT it
#   bmc.sh ipmi-refuse-power MSG   IPMI "chassis power off" fails (completion code error); `off` lifts it
#   bmc.sh redfish-switch JSON     POST /emulator/switches (refuse_power, stall, die_on_update); `clear` lifts all
#
# Env: BMC_WORK (state dir, default <repo>/build/bmc), BMC_REDFISH_PORT (8443), BMC_IPMI_PORT (9001),
#      BMC_USER (admin), BMC_PASSWORD (a test-only default), BMC_VENV (<repo>/build/venv-bmc, made by setup.sh),
#      BMC_TASK_POLLS (3: polls a SimpleUpdate task stays Running).
# Needs: python3, openssl, curl; Debian packages openipmi ipmitool (tests/testbed/deps.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
W=${BMC_WORK:-$ROOT/build/bmc}
RF_PORT=${BMC_REDFISH_PORT:-8443}
IPMI_PORT=${BMC_IPMI_PORT:-9001}
USER_=${BMC_USER:-admin}
PASS=${BMC_PASSWORD:-gpuops-Emul4ted-pw}
export BMC_WORK=$W BMC_REDFISH_PORT=$RF_PORT

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

redfish_ok() {
  curl -sk -o /dev/null -w '%{http_code}' -u "$USER_:$PASS" "https://127.0.0.1:$RF_PORT/redfish/v1/" 2>/dev/null | grep -q 200
}

ipmi_ok() {
  IPMI_PASSWORD=$PASS timeout 10 ipmitool -I lanplus -C 3 -H 127.0.0.1 -p "$IPMI_PORT" -U "$USER_" -E \
    chassis power status >/dev/null 2>&1
}

print_env() {
  cat <<EOF
BMC_WORK=$W
BMC_REDFISH_URL=https://127.0.0.1:$RF_PORT
BMC_REDFISH_PORT=$RF_PORT
BMC_IPMI_HOST=127.0.0.1
BMC_IPMI_PORT=$IPMI_PORT
BMC_IPMI_CONSOLE_PORT=$((IPMI_PORT + 1000))
BMC_USER=$USER_
BMC_CA=$W/bmc.crt
EOF
}

stop_pid() {  # stop_pid PIDFILE: TERM, then KILL the process group after 3 s
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

up_redfish() {
  alive "$W/sushy.pid" && redfish_ok && return 0
  stop_pid "$W/sushy.pid"
  local venv
  venv=$(bash "$HERE/setup.sh")
  rm -rf "$W/sushy-state" "$W/plus-state.json"
  mkdir -p "$W/sushy-state"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$W/bmc.key" -out "$W/bmc.crt" -days 30 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" >/dev/null 2>&1
  BMC_PASSWORD=$PASS BMC_USER=$USER_ "$venv/bin/python" - "$W/htpasswd" <<'PY'
import os, sys, bcrypt
pw = bcrypt.hashpw(os.environ["BMC_PASSWORD"].encode(), bcrypt.gensalt(rounds=4)).decode()
open(sys.argv[1], "w").write("%s:%s\n" % (os.environ["BMC_USER"], pw))
PY
  SUSHY_EMULATOR_CONFIG=$HERE/sushy-fake.conf setsid "$venv/bin/python" "$HERE/sushy_plus.py" --fake \
    --config "$HERE/sushy-fake.conf" -i 127.0.0.1 -p "$RF_PORT" \
    --ssl-certificate "$W/bmc.crt" --ssl-key "$W/bmc.key" </dev/null >"$W/sushy.log" 2>&1 &
  echo $! >"$W/sushy.pid"
  for _ in $(seq 150); do redfish_ok && return 0; alive "$W/sushy.pid" || break; sleep 0.1; done
  echo "bmc.sh: Redfish emulator did not come up; log:" >&2
  tail -20 "$W/sushy.log" >&2
  return 1
}

up_ipmi() {
  local d=$W/ipmi name=bmc1
  alive "$d/ipmi_sim.pid" && ipmi_ok && return 0
  stop_pid "$d/ipmi_sim.pid"
  rm -rf "$d"
  mkdir -p "$d/state/ipmi_sim/$name"   # ipmi_sim's persist dir is <state>/ipmi_sim/<name>/
  sdrcomp -8 -o "$d/state/ipmi_sim/$name/sdr.20.main" "$HERE/ipmi/bmc.sdrs"
  echo 1 >"$d/power"
  cat >"$d/lan.conf" <<EOC
name "$name"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 $IPMI_PORT
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcd$(printf %02x $((IPMI_PORT % 256)))
  endlan
  chassis_control "env IPMI_POWER_FILE=$d/power $HERE/ipmi/chassis-control.sh 0x20"
  user 2 true  "$USER_" "$PASS" admin 10 none md2 md5 straight
  console 127.0.0.1 $((IPMI_PORT + 1000))
EOC
  chmod 600 "$d/lan.conf"
  setsid ipmi_sim -c "$d/lan.conf" -f "$HERE/ipmi/bmc.emu" -s "$d/state" -n </dev/null >"$d/ipmi_sim.log" 2>&1 &
  echo $! >"$d/ipmi_sim.pid"
  for _ in $(seq 50); do
    if ipmi_ok; then
      # the SEL clock starts at 0 (entries from bmc.emu stay Pre-Init); later events get real times
      IPMI_PASSWORD=$PASS timeout 10 ipmitool -I lanplus -C 3 -H 127.0.0.1 -p "$IPMI_PORT" -U "$USER_" -E \
        sel time set "$(date -u +'%m/%d/%y %H:%M:%S')" >/dev/null 2>&1 || true
      return 0
    fi
    alive "$d/ipmi_sim.pid" || break
    sleep 0.1
  done
  echo "bmc.sh: ipmi_sim did not come up; log:" >&2
  tail -20 "$d/ipmi_sim.log" >&2
  return 1
}

signal_emulator() {  # signal_emulator STOP|CONT ipmi|redfish: the emulator's whole process group
  local f
  case $2 in
    ipmi) f=$W/ipmi/ipmi_sim.pid ;;
    redfish) f=$W/sushy.pid ;;
    *) echo "bmc.sh: freeze/thaw ipmi|redfish" >&2; exit 2 ;;
  esac
  alive "$f" || { echo "bmc.sh: $2 emulator not running" >&2; exit 1; }
  kill "-$1" -- "-$(cat "$f")" 2>/dev/null || kill "-$1" "$(cat "$f")"
}

redfish_switch() {  # redfish_switch JSON|clear
  local method=POST data=$1
  [ "$1" = clear ] && { method=DELETE; data='{}'; }
  curl -sk --fail-with-body -m 10 -u "$USER_:$PASS" -X "$method" -H 'Content-Type: application/json' \
    -d "$data" "https://127.0.0.1:$RF_PORT/emulator/switches"
  echo
}

inject() {  # one command on the ipmi_sim console
  python3 - "$((IPMI_PORT + 1000))" "$1" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
time.sleep(0.1)
s.sendall(sys.argv[2].encode() + b"\n")
time.sleep(0.3)
s.close()
PY
}

case "${1:-}" in
up)
  mkdir -p "$W"
  for t in ipmi_sim ipmitool sdrcomp openssl curl; do
    command -v "$t" >/dev/null || { echo "bmc.sh: $t not found (run tests/testbed/deps.sh)" >&2; exit 2; }
  done
  up_ipmi
  up_redfish
  print_env >"$W/endpoints.env"
  echo "redfish: https://127.0.0.1:$RF_PORT/redfish/v1  ipmi: 127.0.0.1:$IPMI_PORT (lanplus -C 3)  user: $USER_"
  ;;
down)
  stop_pid "$W/sushy.pid"
  stop_pid "$W/ipmi/ipmi_sim.pid"
  [ "${BMC_KEEP_WORK:-0}" = 1 ] || rm -rf "$W"   # BMC_KEEP_WORK=1 keeps logs and state for debugging
  ;;
status)
  rc=0
  if alive "$W/sushy.pid" && redfish_ok; then echo "redfish: up"; else echo "redfish: down"; rc=1; fi
  if alive "$W/ipmi/ipmi_sim.pid" && ipmi_ok; then echo "ipmi: up"; else echo "ipmi: down"; rc=1; fi
  exit $rc
  ;;
env) print_env ;;
inject) inject "${2:?command}" ;;
freeze) signal_emulator STOP "${2:?ipmi|redfish}" ;;
thaw) signal_emulator CONT "${2:?ipmi|redfish}" ;;
ipmi-refuse-power)
  if [ "${2:?MESSAGE|off}" = off ]; then rm -f "$W/ipmi/power.refuse"; else printf '%s\n' "$2" >"$W/ipmi/power.refuse"; fi ;;
redfish-switch) redfish_switch "${2:?JSON|clear}" ;;
*) sed -n '2,22p' "$0"; exit 1 ;;
esac
