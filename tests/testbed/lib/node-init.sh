#!/usr/bin/env bash
# Body of a node's holder process: PID 1 of the node's own PID namespace. Started by testbed.sh as
#   ip netns exec <ns> unshare --uts --mount --pid --fork --mount-proc --propagation private node-init.sh DIR HOST
# It sets the hostname, builds the node's private view of the file system, starts sshd, writes <node>/ready
# and becomes a reaper (python3) that holds the namespaces. testbed.sh records its host pid in holder.pid
# (the handle every later `nsenter` uses). Nothing here is visible from the CI host: all mounts live in this
# private mount namespace, and the node's /proc shows only the node's own processes.
set -euo pipefail
nd=$1 name=$2
: "${TB:?}" "${REPO:?}"
LIB=$(cd "$(dirname "$0")" && pwd)

hostname "$name"

# 1. A private tmpfs holds every writable layer, so writes made "on the node" never reach the host disk.
mount -t tmpfs -o mode=755,size=1g "gpuops-rw-$name" "$nd/rw"

# 2. Copy-on-write overlays over everything a role may change: packages (dpkg/apt state, /usr, /etc/apt),
#    services (/etc/init.d, /etc/rc?.d), logs (/var/log), /var/lib/gpuops, /opt, root's home.
for d in etc var usr opt root srv; do
  mkdir -p "$nd/rw/$d/upper" "$nd/rw/$d/work"
  mount -t overlay "gpuops-$d" -o "lowerdir=/$d,upperdir=$nd/rw/$d/upper,workdir=$nd/rw/$d/work" "/$d"
done
# root's shell start-up files are the node's own: the host's (pyenv init) would run `pyenv rehash` in every ssh
# session, and a session cut by a simulated reboot leaves its lock behind so that every later ssh hangs
for f in .bashrc .profile .bash_profile; do printf '# gpuops test-bed node\n' > "/root/$f"; done
# /run is per boot: a fresh tmpfs (the test bed's munged socket lives under $TB, see slurm.sh)
mount -t tmpfs -o mode=755 "gpuops-run-$name" /run
mkdir -p /run/sshd /run/lock /run/gpuops-sim

# 3. /sys/class: a tmpfs with every real class bound back, plus the simulated infiniband tree.
mkdir -p "$nd/rw/realclass"
mount --bind /sys/class "$nd/rw/realclass"
mount -t tmpfs -o mode=755 "gpuops-class-$name" /sys/class
for e in "$nd"/rw/realclass/*; do
  b=${e##*/}
  [ "$b" = infiniband ] && continue
  mkdir -p "/sys/class/$b"
  mount --bind "$e" "/sys/class/$b"
done
umount -l "$nd/rw/realclass"
# The simulator writes the real layout under $nd/sysfs/sys (class/infiniband/<hca> -> ../../devices/pci.../
# infiniband/<hca>, with device/ and subsystem links). A link (not a bind) keeps those relative links resolving
# inside that tree and survives the simulator rewriting the directory (simstate.py sysfs after a fault).
ln -sfn "$nd/sysfs/sys/class/infiniband" /sys/class/infiniband
# `ip netns exec` remounted /sys, dropping the cgroup mounts (slurmd refuses to start without them):
# mount the host's hierarchies again (testbed.sh saved them from the host's /proc/1/mounts; this /proc is ours)
if ! mountpoint -q /sys/fs/cgroup; then
  while read -r fstype target opts; do
    mkdir -p "$target"
    mount -t "$fstype" -o "$opts" "$fstype" "$target"
  done < "$TB/cgroup-mounts"
fi

# 4. Per-node boot id: a regular file bound over the proc file (rotated in place by gpuops-sim-reboot).
mount --bind "$nd/boot_id" /proc/sys/kernel/random/boot_id

# 5. Name resolution, Slurm configuration, apt sources (only the local dummy-package repository).
mount --bind "$TB/hosts" /etc/hosts
echo "$name" > /etc/hostname
mkdir -p /etc/slurm
mount --bind "$TB/slurm" /etc/slurm
rm -f /etc/apt/sources.list.d/* /etc/apt/sources.list
echo "deb [trusted=yes] file:$TB/aptrepo ./" > /etc/apt/sources.list.d/gpuops-sim.list
cat > /etc/apt/apt.conf.d/99gpuops-sim <<APT
Acquire::Languages "none";
APT::Install-Recommends "false";
Dpkg::Use-Pty "false";
APT
mkdir -p /var/lib/gpuops /var/log/gpuops-sim

# 6. Simulated tools: tiny wrappers around tools/simnode with this node's state file.
mkdir -p /usr/local/bin /usr/local/sbin
for t in nvidia-smi ibstat ipmitool dcgmi all_reduce_perf dmesg journalctl; do
  cat > "/usr/local/bin/$t" <<WRAP
#!/bin/sh
PYTHONPATH=$REPO/tools exec /usr/bin/python3 -m simnode --state $nd/state.json $t "\$@"
WRAP
  chmod 755 "/usr/local/bin/$t"
done
install -m 755 "$LIB/gpuops-sim-reboot" /usr/local/sbin/gpuops-sim-reboot
printf 'TB=%q\nREPO=%q\nLIB=%q\nND=%q\nNODE=%q\n' "$TB" "$REPO" "$LIB" "$nd" "$name" > /etc/gpuops-sim.env

# 7. sshd (key auth only, root), then hold the namespaces as a reaping init (orphans are reaped at once:
#    no zombies that still answer `kill -0`; SIGTERM from the host ends the node).
/usr/sbin/sshd -f "$nd/sshd_config"
echo ready > "$nd/ready"
exec /usr/bin/python3 -c '
import os, signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(1)
'

