# -*- coding: utf-8 -*-
"""Inspection reports for the ledger tests: the report.json shape _report.build_report writes, kept small."""

from __future__ import annotations

import datetime
from typing import Any, Dict, Optional

T0 = datetime.datetime(2026, 10, 5, 8, 0, tzinfo=datetime.timezone.utc).timestamp()  # a Monday


def iso(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def finding(host: str, check: str = "gpu.xid", severity: str = "P1", code: str = "79", component: str = "gpu:0"):
    return {
        "check": check,
        "severity": severity,
        "component": component,
        "code": code,
        "message": "%s %s on %s" % (check, code, host),
        "action": "isolate",
        "host": host,
        "id": "%s:%s:%s:%s" % (host, check, component, code),
        "evidence": {"serial": "SN-%s" % host},
    }


def slurm(host: str, state: str = "IDLE", gpus: int = 8, partition: str = "batch", alloc: Optional[int] = None):
    raw = {"NodeName": host}
    if alloc is not None:
        raw["AllocTRES"] = "cpu=32,mem=100G,gres/gpu=%d" % alloc
    return {
        "nodes": [
            {
                "name": host,
                "state": state,
                "base_state": state.split("+", maxsplit=1)[0],
                "flags": state.split("+")[1:],
                "gres_gpus": gpus,
                "partitions": [partition],
                "raw": raw,
            }
        ]
    }


def report(at: float, nodes: Dict[str, Dict[str, Any]], cluster=None, platform=None) -> Dict[str, Any]:
    """nodes: host -> {status, findings, state (Slurm), alloc}; every node has 8 GPUs in partition batch."""
    out = {}
    for host, n in nodes.items():
        facts = {"hostname": host, "mode": "live", "slurm": slurm(host, n.get("state", "IDLE"), alloc=n.get("alloc"))}
        out[host] = {"status": n.get("status", "healthy"), "findings": n.get("findings", []), "facts": facts}
    rep = {
        "schema": "gpuops.report/v1",
        "generated_at": iso(at),
        "policy": {"version": "1", "hash": "abc"},
        "summary": {"nodes": len(out), "status": {}, "severity": {}, "cluster_findings": cluster or []},
        "nodes": out,
    }
    if platform is not None:
        rep["platform"] = platform
    return rep
