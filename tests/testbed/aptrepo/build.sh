#!/usr/bin/env bash
# Build the test bed's local apt repository of dummy packages (flat repository, no signature):
#   build.sh OUTDIR
# Packages: nvidia-driver-535 / -550, nvidia-fabricmanager-535 / -550, datacenter-gpu-manager.
# They ship only /etc/init.d scripts (fake daemons: a sleep loop with a pid file under /run) and
# /opt/gpuops-sim/<pkg>/version, so installing them on a test-bed node touches only that node's overlays.
# The driver packages record the installed version in /var/lib/gpuops-sim/driver-installed; the next
# (simulated) reboot makes it the loaded driver. Node sources.list: deb [trusted=yes] file:OUTDIR ./
set -euo pipefail
out=${1:?usage: build.sh OUTDIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

initscript() {  # $1 = service name, $2 = description
  # where the real daemon writes its pid file, and its executable: the node collector counts a daemon that runs as
  # root with that path (here as argv[0] of the bash loop, `exec -a`) and whose pid is in that file
  local pidfile daemon
  case $1 in
    nvidia-persistenced) pidfile=/run/nvidia-persistenced/nvidia-persistenced.pid daemon=/usr/bin/nvidia-persistenced ;;
    nvidia-fabricmanager) pidfile=/run/nvidia-fabricmanager/nv-fabricmanager.pid daemon=/usr/bin/nv-fabricmanager ;;
    nvidia-dcgm) pidfile=/run/nvhostengine.pid daemon=/usr/bin/nv-hostengine ;;
    *) pidfile=/run/$1.pid daemon=/usr/bin/$1 ;;
  esac
  cat <<SCRIPT
#!/bin/sh
### BEGIN INIT INFO
# Provides:          $1
# Required-Start:    \$local_fs
# Required-Stop:     \$local_fs
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: $2 (simulated)
### END INIT INFO
# gpuops-sim-daemon: a sleep loop with a pid file, standing in for the real daemon on test-bed nodes (root's,
# argv[0] the real daemon's path, the pid file where the real daemon writes it)
NAME=$1
PIDFILE=$pidfile
DAEMON=$daemon
# alive and not a zombie (PID 1 on the CI machine reaps late)
running() {
  [ -s "\$PIDFILE" ] || return 1
  grep -qs '^State:[[:space:]]*[^Z]' "/proc/\$(cat "\$PIDFILE")/status"
}
case "\$1" in
  start)
    running && exit 0
    mkdir -p "\$(dirname "\$PIDFILE")"
    start-stop-daemon --start --quiet --background --make-pidfile --pidfile "\$PIDFILE" \\
      --startas /bin/bash -- -c "exec -a \$DAEMON /bin/bash -c 'while :; do sleep 3600; done'"
    ;;
  stop)
    running && kill "\$(cat "\$PIDFILE")"
    rm -f "\$PIDFILE"
    ;;
  restart|force-reload)
    "\$0" stop
    "\$0" start
    ;;
  status)
    if running; then echo "\$NAME is running"; exit 0; fi
    echo "\$NAME is not running"; exit 3
    ;;
  *) echo "Usage: \$0 {start|stop|restart|status}" >&2; exit 2 ;;
esac
exit 0
SCRIPT
}

# pkg NAME VERSION SERVICE DESCRIPTION VIRTUAL [DRIVER_VERSION]
pkg() {
  local name=$1 version=$2 service=$3 desc=$4 virtual=$5 driver=${6:-}
  local d=$work/$name
  mkdir -p "$d/DEBIAN" "$d/etc/init.d" "$d/opt/gpuops-sim/$name"
  initscript "$service" "$desc" > "$d/etc/init.d/$service"
  chmod 755 "$d/etc/init.d/$service"
  echo "$version" > "$d/opt/gpuops-sim/$name/version"
  cat > "$d/DEBIAN/control" <<CONTROL
Package: $name
Version: $version
Architecture: all
Maintainer: gpuops test bed <gpuops@example.invalid>
Section: misc
Priority: optional
Provides: $virtual
Conflicts: $virtual
Replaces: $virtual
Description: $desc (gpuops test-bed dummy package)
 Installs only a fake init script and a version file.
CONTROL
  echo "/etc/init.d/$service" > "$d/DEBIAN/conffiles"
  {
    echo '#!/bin/sh'
    echo 'set -e'
    if [ -n "$driver" ]; then
      echo "mkdir -p /var/lib/gpuops-sim && echo $driver > /var/lib/gpuops-sim/driver-installed"
    fi
    echo "update-rc.d $service defaults >/dev/null 2>&1 || true"
  } > "$d/DEBIAN/postinst"
  {
    echo '#!/bin/sh'
    echo 'set -e'
    echo "[ \"\$1\" = purge ] && update-rc.d $service remove >/dev/null 2>&1 || true"
  } > "$d/DEBIAN/postrm"
  chmod 755 "$d/DEBIAN/postinst" "$d/DEBIAN/postrm"
  dpkg-deb --root-owner-group -Zgzip -z1 --build "$d" "$out/${name}_${version}_all.deb" >/dev/null
}

pkg nvidia-driver-535 535.161.08-0ubuntu1 nvidia-persistenced "NVIDIA driver metapackage 535" nvidia-driver 535.161.08 &
pkg nvidia-driver-550 550.54.15-0ubuntu1 nvidia-persistenced "NVIDIA driver metapackage 550" nvidia-driver 550.54.15 &
pkg nvidia-fabricmanager-535 535.161.08-1 nvidia-fabricmanager "NVIDIA Fabric Manager 535" nvidia-fabricmanager &
pkg nvidia-fabricmanager-550 550.54.15-1 nvidia-fabricmanager "NVIDIA Fabric Manager 550" nvidia-fabricmanager &
pkg datacenter-gpu-manager 1:3.3.5 nvidia-dcgm "NVIDIA Data Center GPU Manager" datacenter-gpu-manager &
wait
(cd "$out" && dpkg-scanpackages --multiversion . /dev/null 2>/dev/null > Packages)
n=$(grep -c '^Package:' "$out/Packages" || true)
[ "$n" -eq 5 ] || { echo "apt repository: only $n of 5 packages built" >&2; exit 1; }
echo "apt repository: $n packages in $out"
