# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared facts builders for the health-check tests (test_checks*.py)."""

from __future__ import annotations

import copy

from ansible_collections.gpuops.cluster.plugins.plugin_utils import checks as C
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P

NOW = "2026-12-02T10:00:00Z"

HOST = "gpu-node-07"

BUS = ["00000000:%02X:00.0" % b for b in (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)]

PROFILE = {
    "gpu_model": "H100",
    "gpu_count": 8,
    "nvlinks_per_gpu": 18,
    "pcie_gen": 5,
    "pcie_width": 16,
    "ib_ports": ["mlx5_0/1", "mlx5_1/1"],
    "ib_rate_gbps": 400,
    "driver_version": "535.161.08",
    "mounts": ["/lustre"],
    "services": ["nvidia-persistenced", "nvidia-fabricmanager"],
    "nvswitch": True,
}


def merge(base, over):
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def gpu(index=0, **over):
    g = {
        "index": index,
        "readable": True,
        "error": None,
        "bus_id": BUS[index],
        "uuid": "GPU-%d" % index,
        "serial": "S%d" % index,
        "name": "NVIDIA H100 80GB HBM3",
        "vbios_version": "96.00.89.00.01",
        "driver_version": "535.161.08",
        "temperature": {"gpu_c": 33, "memory_c": 41, "slowdown_c": 87, "shutdown_c": 92, "max_operating_c": 85},
        "power": {"draw_w": 71.3, "limit_w": 700.0, "enforced_limit_w": 700.0, "default_limit_w": 700.0},
        "utilization": {"gpu_pct": 0, "memory_pct": 0},
        "ecc": {
            "mode_current": True,
            "volatile": {"corrected": 0, "uncorrected": 0},
            "aggregate": {"corrected": 0, "uncorrected": 0},
        },
        "retired_pages": {"supported": False, "sbe": None, "dbe": None, "pending": None},
        "remapped_rows": {
            "supported": True,
            "correctable": 0,
            "uncorrectable": 0,
            "pending": False,
            "failure": False,
            "histogram": {"max": 2560, "high": 0, "partial": 0, "low": 0, "none": 0},
        },
        "throttle": {"active": ["gpu_idle"]},
        "pcie": {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16, "replay_counter": 0},
        "nvlink": {
            "links": [
                {
                    "link": n,
                    "state": "up",
                    "speed_gbps": 26.562,
                    "errors": {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0},
                }
                for n in range(18)
            ]
        },
        "fabric": {"state": "Completed", "status": "Success"},
        "recovery_action": "none",
    }
    return merge(g, over)


def port(hca, **over):
    p = {
        "port": 1,
        "state": "ACTIVE",
        "phys_state": "LinkUp",
        "rate_gbps": 400.0,
        "link_layer": "InfiniBand",
        "sm_lid": 1,
        "counters": {"symbol_error": 0, "link_downed": 0, "port_rcv_errors": 0, "link_error_recovery": 0},
        "saturated": [],
    }
    return merge(p, over)


def facts(gpus=None, events=None, hcas=None, boot="b1", collected_at=None, ib_at=1764669600.0, **domains):
    f = {
        "schema": "gpuops.facts/v1",
        "hostname": HOST,
        "collected_at": collected_at,
        "gpu": {"source": "nvidia-smi-xml", "driver_version": "535.161.08", "count": None, "errors": []},
        "kernel": {"source": "journalctl", "boot_id": boot, "events": events or [], "errors": []},
        "ib": {
            "source": "sysfs",
            "collected_at": ib_at,
            "boot_id": boot,
            "errors": [],
            "hcas": hcas
            if hcas is not None
            else [
                {"name": "mlx5_%d" % i, "fw_version": "28.39.1002", "ports": [port("mlx5_%d" % i)]} for i in range(2)
            ],
        },
        "node": {
            "source": "live",
            "hostname": HOST,
            "boot_id": boot,
            "kernel": "6.1.0-18-amd64",
            "os": "Debian 12",
            "mounts": [{"path": "/lustre", "present": True, "responsive": True, "free_pct": 41.2}],
            "services": {
                "nvidia-persistenced": {"running": True},
                "nvidia-fabricmanager": {"running": True, "version": "535.161.08"},
            },
            "fabric_manager_version": "535.161.08",
            "errors": [],
        },
        "errors": [],
    }
    gl = gpus if gpus is not None else [gpu(i) for i in range(8)]
    f["gpu"]["gpus"] = gl
    f["gpu"]["count"] = len(gl)
    for k, v in domains.items():
        f[k] = merge(f.get(k) or {}, v) if isinstance(v, dict) else v
    return f


def run(f, profile=None, state=None, now=NOW, policy=None):
    if isinstance(f, dict) and "schema" in f and f.get("collected_at") is None:
        f = dict(f, collected_at=now)  # a live collection: the facts describe "now"
    return C.evaluate_node(f, profile, policy or P.DEFAULT_POLICY, state, now, HOST)


def only(findings, check, component=None, code=None):
    return [
        x
        for x in findings
        if x["check"] == check
        and (component is None or x["component"] == component)
        and (code is None or x["code"] == str(code))
    ]


def xid(code, index=0, ts="2026-12-02T09:50:00Z", pid="<unknown>", process="<unknown>", **kw):
    e = {
        "kind": "xid",
        "code": code,
        "bus_id": BUS[index],
        "gpu_index": index,
        "pid": pid,
        "process": process,
        "message": "msg",
        "timestamp": ts,
        "caused_by": None,
        "recovery_action": None,
        "raw": "NVRM: Xid %s" % code,
    }
    e.update(kw)
    return e
