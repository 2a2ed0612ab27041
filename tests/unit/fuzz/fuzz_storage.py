# -*- coding: utf-8 -*-
"""Issue 37: the storage fuzz targets (fuzz_targets.py) and generated variants of ``lfs df`` and ``mmhealth -Y``
as printed: column widths, units (-h powers of 1024, -H lower-case k, 1K-blocks, inodes), both summary spellings, a
prompt line, ``-v`` flags, ``inactive device`` and strerror lines, HEADER fields in any order with extra fields
(../shared/reference/cluster-formats.md 5.1 and 6). Seeded: the same variants on every run."""

from __future__ import annotations

import random
from typing import Any, Callable, Dict, List

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import storage as _storage
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import storage_gpfs as _storage_gpfs

_HEADS = {"kib": "1K-blocks", "h": "bytes", "H": "bytes", "i": "Inodes"}


def _val(rng: random.Random, mode: str, x: int) -> str:
    if mode == "h":
        return "%.1f%s" % (x / 10.0, rng.choice("KMGTP"))
    if mode == "H":
        return "%.1fk" % (x / 10.0)
    return "%d" % x


def lfs_df_variants(n: int = 12, seed: int = 37) -> List[str]:
    rng = random.Random(seed)
    out = []
    for _k in range(n):
        mode = rng.choice(sorted(_HEADS))
        pad = " " * rng.randint(1, 10)
        lines = ["$ lfs df -v"] if rng.random() < 0.3 else []
        lines.append("UUID%s%s%sUsed%sAvailable Use%% Mounted on" % (pad, _HEADS[mode], pad, pad))
        fs = rng.choice(["scratch", "myth", "fs_1"])
        for i in range(rng.randint(1, 10)):
            kind, idx = ("MDT", 0) if i == 0 else ("OST", i - 1)
            uuid = "%s-%s%04x_UUID" % (fs, kind, idx)
            roll = rng.random()
            if roll < 0.1:
                lines.append("%s%s: inactive device" % (uuid, " " * rng.randint(0, 12)))
                continue
            if roll < 0.15:
                lines.append("%s : %s" % (uuid, rng.choice(["Resource temporarily unavailable", "Input/output error"])))
                continue
            total, pct = rng.randint(100, 10**9), rng.randint(0, 100)
            cols = [_val(rng, mode, v) for v in (total, total * pct // 100, total - total * pct // 100)]
            gap = " " * rng.randint(1, 14)
            flags = " " + rng.choice(["D", "DR", "N", "S", "I", "f", "f(0100)"]) if rng.random() < 0.2 else ""
            lines.append("%s%s%s %d%% /%s[%s:%d]%s" % (uuid, gap, gap.join(cols), pct, fs, kind, idx, flags))
        spelling = rng.choice(["filesystem_summary:", "filesystem summary:"])
        sizes = (_val(rng, mode, 10**9), _val(rng, mode, 5 * 10**8), _val(rng, mode, 5 * 10**8))
        lines += ["", "%s %s %s %s 50%% /%s" % ((spelling,) + sizes + (fs,)), ""]
        out.append("\n".join(lines) + "\n")
    return out


_FIELDS = ["node", "component", "entityname", "entitytype", "status", "laststatuschange"]


def mmhealth_variants(n: int = 8, seed: int = 37) -> List[str]:
    rng = random.Random(seed)
    out = []
    for _k in range(n):
        order = list(_FIELDS)
        rng.shuffle(order)
        rows = ["mmhealth:State:HEADER:version:reserved:reserved:%s:" % ":".join(order)]
        rows.append(
            "mmhealth:Event:HEADER:version:reserved:reserved:node:component:entityname:entitytype:event:arguments:"
            "activesince:identifier:ishidden:"
        )
        for i in range(rng.randint(1, 6)):
            node = "n%d.example.com" % i
            rec = {"node": node, "component": rng.choice(["GPFS", "NETWORK", "FILESYSTEM", "NODE"]),
                   "entityname": node, "entitytype": "NODE",
                   "status": rng.choice(["HEALTHY", "TIPS", "DEGRADED", "FAILED", "DEPEND"]),
                   "laststatuschange": "2026-01-01 10%3A00%3A00.000 UTC"}  # fmt: skip
            extra = ":".join(rng.choice(["x", "", "a%3Ab"]) for _e in range(rng.randint(0, 3)))
            rows.append("mmhealth:State:0:1:::%s:%s" % (":".join(rec[f] for f in order), extra))
            if rng.random() < 0.5:
                rows.append(
                    "mmhealth:Event:0:1:::%s:GPFS:%s:NODE:cluster_connections_down:10.0.0.%d,1,1:2026-01-01 10%%3A00"
                    "%%3A00 UTC:10.0.0.%d:no:Connection to cluster node 10.0.0.%d has all 1 connection(s) down. "
                    "(Maximum 1).:STATE_CHANGE:WARNING:" % (node, node, i, i, i)
                )
        out.append("\n".join(rows) + "\n")
    return out


def targets(target: Callable[..., Any], samples: Callable[..., List[str]], count: Callable[[Any], int]) -> List[Any]:
    """The storage targets, built with fuzz_targets' ``Target`` and ``samples`` (no import cycle)."""

    def n_targets(r: Any) -> int:
        return sum(len(fs["targets"]) for fs in r)

    def n_mmhealth(r: Dict[str, Any]) -> int:
        return len(r["states"]) + len(r["events"]) + len(r["summary"])

    return [
        target(
            "lfs_df",
            samples("storage", pattern="*lfs-df*") + lfs_df_variants(),
            lambda t, e: _storage.parse_lfs_df(t, "fuzz", e),
            n_targets,
        ),
        target(
            "lfs_check",
            samples("storage", pattern="*lfs-check*"),
            lambda t, e: _storage.parse_lfs_check(t, "fuzz", e),
            count,
        ),
        target(
            "health_check",
            samples("storage", pattern="*health_check*"),
            lambda t, e: _storage.parse_health_check(t, "fuzz", e),
            lambda r: 1,
        ),
        target(
            "lctl_dl", samples("storage", pattern="*lctl-dl*"), lambda t, e: _storage.parse_lctl_dl(t, "fuzz", e), count
        ),
        target(
            "mmhealth",
            samples("storage", pattern="*mmhealth*") + mmhealth_variants(),
            lambda t, e: _storage_gpfs.parse_mmhealth(t, "fuzz", e),
            n_mmhealth,
        ),
        target(
            "mmlsdisk",
            samples("storage", pattern="*mmlsdisk*"),
            lambda t, e: _storage_gpfs.parse_mmlsdisk(t, "fuzz", e),
            count,
        ),
        target(
            "mmdf",
            samples("storage", pattern="*mmdf*"),
            lambda t, e: _storage_gpfs.parse_mmdf(t, "fuzz", e),
            lambda r: len(r["nsds"]),
        ),
        target(
            "nfsstat_m",
            samples("storage", pattern="*nfsstat-m*"),
            lambda t, e: _storage.parse_nfsstat_m(t, "fuzz", e),
            count,
        ),
    ]
