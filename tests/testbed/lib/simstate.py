"""Test-bed glue to the node simulator (tools/simnode) for testbed.sh and gpuops-sim-reboot.

    simstate.py init STATE HOSTNAME SYSFS_ROOT BOOT_ID_FILE   default state (boot id from the file) + IB sysfs
    simstate.py init-many NODES_DIR HOST...     the same for NODES_DIR/HOST/{state.json,sysfs,boot_id}
    simstate.py sysfs STATE SYSFS_ROOT          rewrite the IB sysfs tree from the (edited) state
    simstate.py boot STATE BOOT_ID [DRIVER]      record a new boot (fresh kernel log; DRIVER = installed driver
                                                 version, which the new boot loads)

Uses simnode (PYTHONPATH=<repo>/tools) when it is importable; otherwise writes a small placeholder state and
an 8-HCA sysfs tree so the test-bed plumbing still works.
"""

from __future__ import annotations

import json
import os
import sys
import time


def _simnode():
    """simnode.state when tools/simnode is importable (it is written in parallel; tolerate its absence)."""
    try:
        from simnode import state as sim  # noqa: PLC0415
    except ImportError:
        return None
    return sim if hasattr(sim, "default_state") else None


def _write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
    os.replace(tmp, path)


def placeholder_state(hostname):
    idx = int(hostname.rsplit("-", 1)[-1]) if hostname[-1:].isdigit() else 0
    return {
        "hostname": hostname,
        "placeholder": True,
        "driver_version": "535.161.08",
        "gpus": [{"index": i, "uuid": "GPU-%04x%04x-0000-0000-0000-000000000000" % (idx, i)} for i in range(8)],
        "hcas": [{"name": "mlx5_%d" % i, "state": "ACTIVE"} for i in range(8)],
        "kernel_log": [],
    }


def placeholder_sysfs(root, hostname):
    idx = int(hostname.rsplit("-", 1)[-1]) if hostname[-1:].isdigit() else 0
    base = os.path.join(root, "class", "infiniband")
    for k in range(8):
        hca = os.path.join(base, "mlx5_%d" % k)
        port = os.path.join(hca, "ports", "1")
        files = {
            "hca_type": "MT4129",
            "fw_ver": "28.39.1002",
            "board_id": "MT_0000000838",
            "node_type": "1: CA",
            "node_guid": "b83f:d203:00%02x:%04x" % (idx, k),
            "sys_image_guid": "b83f:d203:00%02x:%04x" % (idx, k),
            "node_desc": "%s mlx5_%d" % (hostname, k),
            "ports/1/state": "4: ACTIVE",
            "ports/1/phys_state": "5: LinkUp",
            "ports/1/rate": "400 Gb/sec (4X NDR)",
            "ports/1/link_layer": "InfiniBand",
            "ports/1/lid": "0x%x" % (idx * 16 + k + 1),
            "ports/1/sm_lid": "0x1",
        }
        for c in (
            "symbol_error",
            "link_downed",
            "link_error_recovery",
            "port_rcv_errors",
            "port_xmit_discards",
            "excessive_buffer_overrun_errors",
            "local_link_integrity_errors",
            "port_rcv_remote_physical_errors",
        ):
            files["ports/1/counters/" + c] = "0"
        for rel, value in files.items():
            path = os.path.join(hca, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(value + "\n")
        os.makedirs(os.path.join(port, "hw_counters"), exist_ok=True)


def init(state_path, hostname, sysfs_root, boot_id_file):
    """Default state for one node (its boot id taken from boot_id_file) and its IB sysfs tree.

    The tree is written under sysfs_root/sys (real layout: class/infiniband/<hca> symlinks into
    devices/pci.../infiniband/<hca>); node-init.sh makes /sys/class/infiniband a link to it.
    """
    sim = _simnode()
    state = sim.default_state(hostname) if sim is not None else placeholder_state(hostname)
    with open(boot_id_file, encoding="utf-8") as fh:
        state["boot_id"] = fh.read().strip()  # the node's /proc/sys/kernel/random/boot_id
    _write_json(state_path, state)
    write_sysfs(state_path, sysfs_root, state)


def write_sysfs(state_path, sysfs_root, state=None):
    """(Re)write the node's IB sysfs tree from its state file."""
    if state is None:
        with open(state_path, encoding="utf-8") as fh:
            state = json.load(fh)
    try:
        from simnode.render_misc import write_sysfs as sim_write_sysfs  # noqa: PLC0415
    except ImportError:
        placeholder_sysfs(os.path.join(sysfs_root, "sys"), state.get("hostname", "node"))
        return
    sim_write_sysfs(state, sysfs_root, links=True)


def init_many(nodes_dir, hosts):
    """init for several nodes in one process (python start-up dominates on a loaded 2-core CI machine)."""
    for host in hosts:
        nd = os.path.join(nodes_dir, host)
        init(os.path.join(nd, "state.json"), host, os.path.join(nd, "sysfs"), os.path.join(nd, "boot_id"))


def boot(state_path, boot_id, driver=""):
    sim = _simnode()
    if sim is not None and hasattr(sim, "new_boot"):
        sim.new_boot(state_path, boot_id, driver or None)
        return
    with open(state_path, encoding="utf-8") as fh:
        state = json.load(fh)
    now = time.time()
    driver = driver or state.get("driver_version") or ""
    state["boot_id"] = boot_id
    state["boot_time"] = now
    state["now"] = now
    if driver:
        state["driver_version"] = driver
        for gpu in state.get("gpus") or []:
            if isinstance(gpu, dict) and "driver_version" in gpu:
                gpu["driver_version"] = driver
    if sim is not None:
        fresh = sim.default_state(
            state.get("hostname", ""),
            gpus=len(state.get("gpus") or []) or 8,
            hcas=len(state.get("hcas") or []) or 8,
            driver=driver or sim.DEFAULT_DRIVER,
            boot_time=now,
        )
        state["kernel_log"] = fresh["kernel_log"]
    else:
        state["kernel_log"] = []
    _write_json(state_path, state)


def main(argv):
    if len(argv) == 5 and argv[0] == "init":
        init(*argv[1:])
    elif len(argv) >= 2 and argv[0] == "init-many":
        init_many(argv[1], argv[2:])
    elif len(argv) == 3 and argv[0] == "sysfs":
        write_sysfs(argv[1], argv[2])
    elif len(argv) in (3, 4) and argv[0] == "boot":
        boot(*argv[1:])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
