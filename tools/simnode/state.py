"""The per-node simulation STATE: one JSON document per node (docs/simulation.md).

Stdlib only. Nothing here knows about the collection's parsers or policy.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import random
import tempfile
import time

SCHEMA = "gpuops.simnode/v1"

#: Real HGX H100 8-GPU PCI bus ids (the 8x H100 535.161.08 sample).
H100_BUS_IDS = ["19", "3B", "4C", "5D", "9B", "BB", "CB", "DB"]
#: ConnectX-7 HCAs next to them (one per GPU, PCI switch neighbours).
HCA_BUS_IDS = ["1a", "3c", "4d", "5e", "9c", "bc", "cc", "dc"]
#: Root ports the HCAs hang off (sysfs tree: pci0000:<rp>/0000:<rp>:01.0/0000:<bus>:00.0).
HCA_ROOT = ["17", "38", "49", "5a", "97", "b7", "c7", "d7"]

DEFAULT_DRIVER = "535.161.08"
DEFAULT_CUDA = "12.2"
#: Start of the simulated boot (epoch seconds) and the capture time.
DEFAULT_BOOT = 1796191200.0  # 2026-12-02T06:00:00Z
DEFAULT_NOW = 1796205600.0  # 2026-12-02T10:00:00Z

IB_COUNTERS = [
    "VL15_dropped",
    "excessive_buffer_overrun_errors",
    "link_downed",
    "link_error_recovery",
    "local_link_integrity_errors",
    "multicast_rcv_packets",
    "multicast_xmit_packets",
    "port_rcv_constraint_errors",
    "port_rcv_data",
    "port_rcv_errors",
    "port_rcv_packets",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors",
    "port_xmit_data",
    "port_xmit_discards",
    "port_xmit_packets",
    "port_xmit_wait",
    "symbol_error",
    "unicast_rcv_packets",
    "unicast_xmit_packets",
]
IB_HW_COUNTERS = [
    "duplicate_request",
    "implied_nak_seq_err",
    "lifespan",
    "local_ack_timeout_err",
    "out_of_buffer",
    "out_of_sequence",
    "packet_seq_err",
    "req_cqe_error",
    "req_cqe_flush_error",
    "req_remote_access_errors",
    "req_remote_invalid_request",
    "resp_cqe_error",
    "resp_cqe_flush_error",
    "resp_local_length_error",
    "resp_remote_access_errors",
    "rnr_nak_retry_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
    "rx_atomic_requests",
    "rx_dct_connect",
    "rx_icrc_encapsulated",
    "rx_read_requests",
    "rx_write_requests",
]


def _hexid(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _uuid(rng: random.Random) -> str:
    h = _hexid(rng, 32)
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def seed_for(hostname: str, seed: int = 0) -> int:
    return int(hashlib.sha256(("%s/%s" % (seed, hostname)).encode()).hexdigest()[:12], 16)


def default_gpu(index: int, rng: random.Random, driver: str) -> dict:
    bus = H100_BUS_IDS[index % len(H100_BUS_IDS)]
    return {
        "index": index,
        "bus_id": "00000000:%s:00.0" % bus,
        "name": "NVIDIA H100 80GB HBM3",
        "serial": "16501240%05d" % rng.randrange(100000),
        "uuid": "GPU-" + _uuid(rng),
        "vbios": "96.00.74.00.0D",
        "module_id": index + 1,
        "temp_c": rng.randint(28, 36),
        "mem_temp_c": rng.randint(36, 42),
        "power_draw_w": round(rng.uniform(66.0, 74.0), 2),
        "power_limit_w": 700.0,
        "util_pct": 0,
        "mem_util_pct": 0,
        "mem_used_mib": 0,
        "pstate": "P0",
        "clocks": {"graphics_mhz": 345, "sm_mhz": 345, "memory_mhz": 2619, "video_mhz": 765},
        "throttle": [],  # normalized names that are Active (gpu_idle is added at idle automatically)
        "ecc": {
            "volatile": {"sram_corr": 0, "sram_unc": 0, "dram_corr": 0, "dram_unc": 0},
            "aggregate": {"sram_corr": 0, "sram_unc": 0, "dram_corr": 0, "dram_unc": 0},
        },
        "remap": {
            "corr": 0,
            "unc": 0,
            "pending": False,
            "failure": False,
            "histogram": {"max": 2560, "high": 0, "partial": 0, "low": 0, "none": 0},
        },
        "pcie": {"gen_cur": 5, "gen_max": 5, "width_cur": 16, "width_max": 16, "replay": rng.randint(0, 9)},
        "nvlinks": [
            {"link": i, "up": True, "speed": "26.562", "replay": 0, "recovery": 0, "crc": 0} for i in range(18)
        ],
        "fabric": {"state": "Completed", "status": "Success"},
        "recovery_action": "none",  # none | gpu_reset | node_reboot | drain_p2p | drain_and_reset
        "lost": False,
        "processes": [],  # {pid, name, type, used_mib}
    }


def default_hca(index: int, rng: random.Random) -> dict:
    guid = "0x946dae0300" + _hexid(rng, 6)
    counters = dict.fromkeys(IB_COUNTERS, 0)
    counters.update(
        {
            "port_rcv_data": rng.randint(10**12, 10**14),
            "port_xmit_data": rng.randint(10**12, 10**14),
            "port_rcv_packets": rng.randint(10**9, 10**11),
            "port_xmit_packets": rng.randint(10**9, 10**11),
            "port_xmit_wait": rng.randint(10**6, 10**9),
        }
    )
    counters["unicast_rcv_packets"] = counters["port_rcv_packets"]
    counters["unicast_xmit_packets"] = counters["port_xmit_packets"]
    hw = dict.fromkeys(IB_HW_COUNTERS, 0)
    hw.update(
        {"lifespan": 12, "rx_write_requests": rng.randint(10**6, 10**9), "rx_read_requests": rng.randint(10**5, 10**7)}
    )
    return {
        "name": "mlx5_%d" % index,
        "ca_type": "MT4129",
        "fw_ver": "28.39.1002",
        "board_id": "MT_0000000838",
        "node_guid": guid,
        "pci": "0000:%s:00.0" % HCA_BUS_IDS[index % len(HCA_BUS_IDS)],
        "root": HCA_ROOT[index % len(HCA_ROOT)],
        "ports": [
            {
                "port": 1,
                "state": "ACTIVE",  # DOWN | INIT | ARMED | ACTIVE
                "phys_state": "LinkUp",  # Sleep | Polling | Disabled | LinkUp | LinkErrorRecovery
                "rate_gbps": 400,
                "width": "4X",
                "speed": "NDR",
                "link_layer": "InfiniBand",
                "lid": rng.randint(2, 4000),
                "sm_lid": 1,
                "port_guid": guid,
                "capability_mask": "0xa751e848",
                "counters": counters,
                "hw_counters": hw,
            }
        ],
    }


def default_bmc(rng: random.Random) -> dict:
    def sensor(name, num, entity, reading, status="ok", kind="threshold"):
        return {"name": name, "number": num, "entity": entity, "status": status, "reading": reading, "kind": kind}

    sensors = [
        sensor("Inlet Temp", "04h", "7.1", "%d degrees C" % rng.randint(20, 25)),
        sensor("Exhaust Temp", "01h", "7.1", "%d degrees C" % rng.randint(34, 40)),
        sensor("CPU1 Temp", "0Eh", "3.1", "%d degrees C" % rng.randint(40, 50)),
        sensor("CPU2 Temp", "0Fh", "3.2", "%d degrees C" % rng.randint(40, 50)),
    ]
    for i in range(1, 7):
        sensors.append(
            sensor("FAN%d" % i, "%02Xh" % (0x30 + 2 * i), "29.%d" % i, "%d RPM" % (rng.randint(70, 80) * 100))
        )
    for i in (1, 2, 3, 4):
        sensors.append(
            sensor("PSU%d Status" % i, "%02Xh" % (0x5F + i), "10.%d" % i, "Presence detected", kind="discrete")
        )
    sensors.append(sensor("PSU Redundancy", "75h", "7.1", "Fully Redundant", kind="discrete"))
    sensors.append(sensor("Leak Detect", "A0h", "7.1", "State Deasserted", kind="discrete"))
    sensors.append(sensor("SEL", "72h", "7.1", "No Reading", status="ns", kind="discrete"))
    sensors.append(sensor("PCIe Slot1", "90h", "7.1", "Disabled", status="ns", kind="discrete"))
    fru = [
        {
            "id": 0,
            "desc": "Builtin FRU Device",
            "fields": [
                ("Chassis Type", "Rack Mount Chassis"),
                ("Chassis Part Number", "CSE-GP801TS-R000NP"),
                ("Chassis Serial", "C8010MN%06d" % rng.randrange(10**6)),
                ("Board Mfg Date", "Mon Mar  4 08:00:00 2024 UTC"),
                ("Board Mfg", "Supermicro"),
                ("Board Product", "X13DEG-OAD"),
                ("Board Serial", "OM24%06d" % rng.randrange(10**6)),
                ("Board Part Number", "X13DEG-OAD"),
                ("Product Manufacturer", "Supermicro"),
                ("Product Name", "SYS-821GE-TNHR"),
                ("Product Part Number", "SYS-821GE-TNHR"),
                ("Product Serial", "S4%08d" % rng.randrange(10**8)),
            ],
        }
    ]
    for i in (1, 2, 3, 4):
        fru.append(
            {
                "id": i,
                "desc": "PSU%d" % i,
                "fields": [
                    ("Product Manufacturer", "SUPERMICRO"),
                    ("Product Name", "PWS-3K04G-2R"),
                    ("Product Part Number", "PWS-3K04G-2R"),
                    ("Product Version", "1.0"),
                    ("Product Serial", "P3K04GR%08d" % rng.randrange(10**8)),
                ],
            }
        )
    return {
        "sensors": sensors,
        "sel": [
            # time: epoch or None (Pre-Init); sensor: "<Sensor Type> <SDR name>"
            {
                "time": DEFAULT_BOOT - 86400 * 30,
                "sensor": "Event Logging Disabled SEL",
                "event": "Log area reset/cleared",
                "direction": "Asserted",
            },
            {
                "time": DEFAULT_BOOT + 2,
                "sensor": "System Event #0x83",
                "event": "Timestamp Clock Sync",
                "direction": "Asserted",
            },
            {
                "time": DEFAULT_BOOT + 3,
                "sensor": "System Event #0x83",
                "event": "Timestamp Clock Sync",
                "direction": "Asserted",
            },
        ],
        "fru": fru,
        "mc": {
            "device_id": "32",
            "firmware": "1.02",
            "manufacturer_id": "10876",
            "manufacturer": "Super Micro Computer Inc.",
            "product_id": "6929 (0x1b11)",
            "product": "Unknown (0x1B11)",
        },
    }


def default_state(
    hostname: str, seed: int = 0, gpus: int = 8, hcas: int = 8, driver: str = DEFAULT_DRIVER, **kw
) -> dict:
    """A healthy 8x H100 80GB HBM3 SXM node (HGX, NVSwitch, 8x ConnectX-7 NDR)."""
    rng = random.Random(seed_for(hostname, seed))
    boot = kw.get("boot_time", DEFAULT_BOOT)
    now = kw.get("now", DEFAULT_NOW)
    gpu_list = [default_gpu(i, rng, driver) for i in range(gpus)]
    kernel_log = [
        {"time": boot + 2.329368, "msg": "nvidia: loading out-of-tree module taints kernel."},
        {
            "time": boot + 3.112045,
            "msg": "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  %s  Tue Mar 19 22:08:01 UTC 2024" % driver,
        },
    ]
    for h in range(hcas):
        kernel_log.append(
            {
                "time": boot + 4.0 + h * 0.01,
                "msg": "mlx5_core 0000:%s:00.0: firmware version: 28.39.1002" % HCA_BUS_IDS[h % len(HCA_BUS_IDS)],
            }
        )
    for g in gpu_list:
        kernel_log.append(
            {
                "time": boot + 20.0 + g["index"] * 0.01,
                "msg": "NVRM: GPU at PCI:%s: %s" % (g["bus_id"][4:-2].lower(), g["uuid"]),
            }
        )
    state = {
        "schema": SCHEMA,
        "hostname": hostname,
        "boot_id": _uuid(rng),
        "boot_time": boot,
        "now": now,
        "kernel": "6.1.0-18-amd64",
        "os": "Debian GNU/Linux 12 (bookworm)",
        "memory_mib": 2063852,
        "driver_version": driver,
        "cuda_version": kw.get("cuda_version", DEFAULT_CUDA),
        "gpus": gpu_list,
        "gpu_count_expected": gpus,
        "nvswitch": True,
        "fabric_manager": {"installed": True, "running": True, "version": driver},
        "kernel_log": kernel_log,
        "hcas": [default_hca(i, rng) for i in range(hcas)],
        "bmc": default_bmc(rng),
        "dcgm": {"version": "3.3.3", "level": 2, "fail_gpus": {}, "hang": False, "hang_seconds": 3600},
        "nccl": {"busbw_gbps": round(rng.uniform(470.0, 485.0), 2), "gpus": gpus},
        "mounts": [
            {"path": "/home", "fstype": "nfs4", "state": "ok", "free_pct": round(rng.uniform(30, 60), 1)},
            {"path": "/lustre", "fstype": "lustre", "state": "ok", "free_pct": round(rng.uniform(30, 60), 1)},
        ],
        "services": {
            "nvidia-persistenced": {"running": True},
            "nvidia-dcgm": {"running": True},
            "nvidia-fabricmanager": {"running": True},
        },
        "slurm": {
            "state": "IDLE",
            "reason": None,
            "reason_user": None,
            "reason_time": None,
            "partitions": ["gpu"],
            "gres": "gpu:h100:%d" % gpus,
            "cpus": 224,
            "real_memory": 2000000,
            "version": "23.11.4",
        },
        "faults": [],
    }
    return state


def load(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def save(state: dict, path: str) -> None:
    """Atomic write (tmp file + rename) so a concurrent reader never sees half a file."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".simnode-", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(state, fh, indent=1, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def locked(path: str):
    """Exclusive lock on <path>.lock for a read-modify-write of the state file."""
    import fcntl

    with open(path + ".lock", "a") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lk, fcntl.LOCK_UN)


def clone(state: dict) -> dict:
    return copy.deepcopy(state)


def now_iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def reboot(state: dict, boot_id: str | None = None, driver: str | None = None, now: float | None = None) -> dict:
    """What a reboot does to a node (in place): new boot id and time, a fresh kernel log, GPUs re-enumerated.

    Cleared: lost GPUs come back, pending row remaps are activated (pending -> No), recovery actions, volatile
    ECC, NVLink and IB error counters (the drivers reload), processes. Kept: aggregate ECC, remapped rows,
    remap failures, NVLinks/ports that are physically down, BMC SEL, mounts, Slurm state. `driver`: the driver
    now loaded (an upgrade); the fabric manager follows when it was at the old driver's version.
    """
    rng = random.Random(seed_for(state["hostname"], int(now or time.time())))
    now = time.time() if now is None else now
    old_driver = state.get("driver_version")
    if driver:
        state["driver_version"] = driver
        fm = state.get("fabric_manager") or {}
        if fm.get("version") == old_driver:
            fm["version"] = driver
    fresh = default_state(
        state["hostname"],
        gpus=len(state["gpus"]),
        hcas=len(state["hcas"]),
        driver=state["driver_version"],
        boot_time=now,
        now=now,
    )
    state["boot_id"] = boot_id or _uuid(rng)
    state["boot_time"] = now
    state["now"] = now
    state["kernel_log"] = fresh["kernel_log"]
    for g in state["gpus"]:
        g["lost"] = False
        g["remap"]["pending"] = False
        g["recovery_action"] = "none"
        g["processes"] = []
        g["util_pct"] = g["mem_util_pct"] = g["mem_used_mib"] = 0
        for k in g["ecc"]["volatile"]:
            g["ecc"]["volatile"][k] = 0
        for lk in g.get("nvlinks") or []:
            lk.update({"replay": 0, "recovery": 0, "crc": 0})
    for h in state["hcas"]:
        for p in h["ports"]:
            for k in p["counters"]:
                p["counters"][k] = 0
            for k in p["hw_counters"]:
                p["hw_counters"][k] = 0
    state["dcgm"]["hang"] = False
    return state


def new_boot(path: str, boot_id: str | None = None, driver: str | None = None) -> dict:
    """reboot() applied to a state file under its lock (the test bed's gpuops-sim-reboot)."""
    with locked(path):
        state = load(path)
        reboot(state, boot_id, driver)
        save(state, path)
    return state
