# shellcheck shell=bash
# Shared settings and helpers for tests/testbed/*.sh (sourced, not executed).
# Everything the test bed creates lives in $TB (default /tmp/gpuops-tb, override with GPUOPS_TB),
# in network namespaces named ${P}-hub / ${P}-nXX, and in the mount namespaces those hold.

TB=${GPUOPS_TB:-/tmp/gpuops-tb}
# netns prefix: gpuops for the default state dir; for another GPUOPS_TB a prefix derived from its path, so two
# beds never share (and tear down) each other's namespaces unless GPUOPS_TB_PREFIX says so
if [ -n "${GPUOPS_TB_PREFIX:-}" ]; then
  P=$GPUOPS_TB_PREFIX
elif [ "$TB" = /tmp/gpuops-tb ]; then
  P=gpuops
else
  P=g$(printf %s "$TB" | md5sum | cut -c1-6)
fi
NET=${GPUOPS_TB_NET:-10.200.0}
# the BMC emulators (bmc/bmc.sh): the default bed keeps 8443/9001 and <repo>/build/bmc; another bed gets its own
# ports and state dir (<bed>-bmc, beside it: testbed.sh down removes the bed) derived from its path, so two
# beds (two checkouts, or a CI run beside a developer's bed) never answer for, inject faults into or tear down each other's emulators
if [ "$TB" != /tmp/gpuops-tb ]; then
  _bmc_h=$(( 0x$(printf %s "$TB" | md5sum | cut -c1-4) % 900 ))
  export BMC_WORK=${BMC_WORK:-$TB-bmc} BMC_REDFISH_PORT=${BMC_REDFISH_PORT:-$((30000 + _bmc_h))}
  export BMC_IPMI_PORT=${BMC_IPMI_PORT:-$((31000 + _bmc_h))}  # its console listens on +1000: 32000-32899
  unset _bmc_h
fi
HUB=${P}-hub
BRIDGE=${P}br0
LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TBDIR=$(dirname "$LIB")
REPO=$(cd "$TBDIR/../.." && pwd)
export TB P NET HUB BRIDGE REPO

log() { printf '[testbed %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# monotonic milliseconds, for stage timings
now_ms() { local s; s=$(cat /proc/uptime); s=${s%% *}; echo $(( ${s%.*} * 1000 + 10#${s#*.} * 10 )); }
# elapsed <start_ms>: "1.23 s"
elapsed() { local d=$(( $(now_ms) - $1 )); printf '%d.%02d s' $((d / 1000)) $(((d % 1000) / 10)); }

node_name() { printf 'gpu-node-%02d' "$1"; }
node_ns() { printf '%s-n%02d' "$P" "$1"; }
node_ip() { printf '%s.%d' "$NET" $((10 + $1)); }
node_names() { [ -d "$TB/nodes" ] && ls "$TB/nodes"; }
node_dir() { printf '%s/nodes/%s' "$TB" "$1"; }
holder_pid() {
  local f pid
  f="$(node_dir "$1")/holder.pid"
  [ -s "$f" ] || die "node $1 is not up (no $f)"
  pid=$(cat "$f")
  kill -0 "$pid" 2>/dev/null || die "node $1: holder $pid is gone"
  echo "$pid"
}
# run a command inside a node: its netns, hostname (UTS), mount and PID namespaces
in_node() { local n=$1; shift; nsenter -t "$(holder_pid "$n")" -u -m -n -p -- "$@"; }
in_hub() { ip netns exec "$HUB" "$@"; }
our_netns() { ip netns list | awk '{print $1}' | grep -E "^${P}-(hub|n[0-9]+)$" || true; }
