#!/bin/sh
# ipmi_sim chassis_control helper: stateful power in $IPMI_POWER_FILE (1 = on, 0 = off); every call is
# appended to $IPMI_POWER_FILE.log (tests check which power actions a play sent)
# Fault switch: while $IPMI_POWER_FILE.refuse exists (bmc.sh ipmi-refuse-power MESSAGE), "set power 0" fails
# (ipmi_sim answers the Chassis Control command with an error completion code) and the power stays on.
#   chassis-control.sh <mc> get power|boot ...   /   <mc> set power 0|1 reset 1 boot pxe ...
f=${IPMI_POWER_FILE:?IPMI_POWER_FILE not set}
echo "$(date +%T) $*" >> "$f.log"
[ -f "$f" ] || echo 1 > "$f"
shift   # mc address
op=$1; shift
case $op in
  get) for p in "$@"; do
         case $p in power) echo "power:$(cat "$f")";; boot) echo "boot:default";; *) echo "Invalid parameter: $p"; exit 1;; esac
       done ;;
  set) if [ -e "$f.refuse" ] && [ "${1:-}" = power ] && [ "${2:-}" = 0 ]; then
         echo "$(date +%T) refused: $(cat "$f.refuse")" >> "$f.log"; exit 1
       fi
       while [ -n "${1:-}" ]; do p=$1; v=${2:-}; shift 2 || shift $#
         case $p in power) echo "$v" > "$f";; reset|boot|identify|shutdown) ;; *) echo "Invalid parameter: $p"; exit 1;; esac
       done ;;
  *) exit 1 ;;
esac
