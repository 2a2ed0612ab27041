# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Simulated parallel-storage captures for a cluster capture directory (docs/storage.md, docs/simulation.md).

``write_storage(capture_dir, faults, rng)`` writes a healthy Lustre filesystem (``lfs-df.txt``, ``lfs-df-i.txt``,
``lfs-check-servers.txt``, ``lctl-health_check.txt``) and an NFS home (``mounts.txt``, ``nfsstat.txt``) in the
real output formats (tests/fixtures/storage/), plus a GPFS filesystem (``mmhealth.txt``, ``mmlsdisk-<fs>.txt``,
``mmdf-<fs>.txt``, ``-Y`` format) when a GPFS fault asks for one, and returns the answer-key entries (check,
component, code, severity_hint, fault) that ``check_storage`` must produce. ``STORAGE_FAULTS`` lists the faults.
"""

from __future__ import annotations

import os
import random
from typing import Any, Dict, List, Optional, Sequence

STORAGE_FAULTS = ("ost_full", "nsd_failed", "inodes_low", "lustre_server_down")
#: The names tools/simcluster/platform.py looks up: every storage fault, ``--faults default`` (make demo shows a
#: storage finding) and ``--faults all`` (the four coexist: each names a different target).
FAULTS = STORAGE_FAULTS
DEFAULT_FAULTS = ("ost_full",)
ALL_FAULTS = STORAGE_FAULTS

FS = "scratch"
MOUNT = "/lustre/scratch"
OSTS = 8
TIB = 1024**4
GPFS_FS = "ess"


def _human(nbytes: float) -> str:
    for unit in ("", "K", "M", "G", "T", "P"):
        if nbytes < 1024 or unit == "P":
            return ("%.1f%s" % (nbytes, unit)) if unit else "%d" % nbytes
        nbytes /= 1024.0
    return "%d" % nbytes  # pragma: no cover


def _row(uuid: str, total: float, used: float, pct: int, mount: str, human: bool) -> str:
    avail = max(total - used, 0)
    fmt = _human if human else (lambda v: "%d" % v)
    return "%-20s %12s %12s %12s %3d%% %s" % (uuid, fmt(total), fmt(used), fmt(avail), pct, mount)


def _lfs_df(pcts: Sequence[int], mdt_pct: int, totals: Sequence[float], inodes: bool) -> str:
    head = (
        "UUID                      Inodes       IUsed       IFree IUse% Mounted on"
        if inodes
        else ("UUID                       bytes        Used   Available Use% Mounted on")
    )
    lines = [head]
    mdt_total = 2_000_000_000 if inodes else 4 * TIB
    lines.append(
        _row("%s-MDT0000_UUID" % FS, mdt_total, mdt_total * mdt_pct / 100.0, mdt_pct, "%s[MDT:0]" % MOUNT, not inodes)
    )
    for i, (pct, total) in enumerate(zip(pcts, totals)):
        lines.append(
            _row("%s-OST%04x_UUID" % (FS, i), total, total * pct / 100.0, pct, "%s[OST:%d]" % (MOUNT, i), not inodes)
        )
    if inodes:  # Lustre: filesystem inodes are the MDT's
        tot, used, pct = mdt_total, mdt_total * mdt_pct / 100.0, mdt_pct
    else:
        tot = sum(totals)
        used = sum(t * p / 100.0 for t, p in zip(totals, pcts))
        pct = int(round(100.0 * used / tot))
    lines.append("")
    lines.append(_row("filesystem_summary:", tot, used, pct, MOUNT, not inodes))
    lines.append("")
    return "\n".join(lines)


def _check_servers(down: Optional[int]) -> str:
    suffix = "ffff8c4d0cd43800"
    lines = ["MGC10.11.0.2@o2ib active.", "%s-MDT0000-mdc-%s active." % (FS, suffix)]
    for i in range(OSTS):
        name = "%s-OST%04x-osc-%s" % (FS, i, suffix)
        if i == down:
            lines.append("lfs check: error: check '%s': Resource temporarily unavailable (11)" % name)
        else:
            lines.append("%s active." % name)
    return "\n".join(lines) + "\n"


def _gpfs(capture_dir: str, failed: Optional[str]) -> None:
    host = "ess-io1.example.com"
    health = [
        "mmhealth:State:HEADER:version:reserved:reserved:node:component:entityname:entitytype:status:laststatuschange:",
        "mmhealth:State:0:1:::%s:NODE:%s:NODE:HEALTHY:2026-12-01 08%%3A00%%3A00.000000 UTC:" % (host, host),
        "mmhealth:State:0:1:::%s:GPFS:%s:NODE:HEALTHY:2026-12-01 08%%3A00%%3A00.000000 UTC:" % (host, host),
        "mmhealth:State:0:1:::%s:FILESYSTEM:%s:FILESYSTEM:HEALTHY:2026-12-01 08%%3A00%%3A00.000000 UTC:"
        % (host, GPFS_FS),
    ]
    disks = [
        "mmlsdisk::HEADER:version:reserved:reserved:nsdName:driverType:sectorSize:failureGroup:metadata:data:"
        "status:availability:diskID:storagePool:remarks:numQuorumDisks:readQuorumValue:writeQuorumValue:"
        "diskSizeKB:diskUID:thinDiskType:"
    ]
    df = [
        "mmdf:nsd:HEADER:version:reserved:reserved:nsdName:storagePool:diskSize:failureGroup:metadata:data:"
        "freeBlocks:freeBlocksPct:freeFragments:freeFragmentsPct:diskAvailableForAlloc:",
        "mmdf:fsTotal:HEADER:version:reserved:reserved:fsSize:freeBlocks:freeBlocksPct:freeFragments:freeFragmentsPct:",
        "mmdf:inode:HEADER:version:reserved:reserved:usedInodes:freeInodes:allocatedInodes:maxInodes:",
    ]
    size = 2227566542848
    for i in range(1, 5):
        name = "RG%03dVS%03d" % (i, i + 2)
        avail = "down" if name == failed else "up"
        disks.append(
            "mmlsdisk::0:1:::%s:nsd:512:%d:no:yes:ready:%s:%d:data::3:2:2:%d:C0A82D155E83D2%02X::"
            % (name, 1 + i % 2, avail, i, size, 0x30 + i)
        )
        df.append("mmdf:nsd:0:1:::%s:data:%d:%d:No:Yes:%d:50:1000:0::" % (name, size, 1 + i % 2, size // 2))
    df.append("mmdf:fsTotal:0:1:::%d:%d:50:4000:0:" % (4 * size, 2 * size))
    df.append("mmdf:inode:0:1:::430741822:484301506:915043328:1332164000:")
    for name, lines in (("mmhealth.txt", health), ("mmlsdisk-%s.txt" % GPFS_FS, disks), ("mmdf-%s.txt" % GPFS_FS, df)):
        _write(capture_dir, name, "\n".join(lines) + "\n")


def _write(capture_dir: str, name: str, text: str) -> None:
    path = os.path.join(capture_dir, name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, 0o600)


def _expect(check: str, component: str, code: str, severity: str, fault: str, note: str) -> Dict[str, Any]:
    return {
        "check": check,
        "component": component,
        "code": code,
        "severity_hint": severity,
        "fault": fault,
        "hosts": [],
        "note": note,
    }


def write_storage(
    capture_dir: str, faults: Sequence[str] = (), rng: Optional[random.Random] = None
) -> List[Dict[str, Any]]:
    """Write the storage files of a cluster capture into ``capture_dir``; return the expected findings.

    ``faults``: fault names; those in STORAGE_FAULTS are injected, the others (scheduler, node faults) are not
    this simulator's and are ignored (platform.py validates names against FAULTS).
    """
    faults = [f for f in faults if f in STORAGE_FAULTS]  # the others belong to other simulators (scheduler, nodes)
    rng = rng or random.Random(0)
    os.makedirs(capture_dir, exist_ok=True)
    expected: List[Dict[str, Any]] = []
    pcts = [rng.randint(40, 70) for _i in range(OSTS)]
    ipcts = [rng.randint(5, 30) for _i in range(OSTS)]
    totals = [float(64 * TIB)] * OSTS
    mdt_ipct = rng.randint(10, 40)
    full = down = None
    if "ost_full" in faults:
        full = rng.randrange(OSTS)
        pcts[full] = 97
        expected.append(
            _expect(
                "storage.capacity",
                "storage:%s/%s-OST%04x" % (FS, FS, full),
                "space",
                "P1",
                "ost_full",
                "OST %d at 97%% space (P1 at 90%%)" % full,
            )
        )
    if "inodes_low" in faults:
        mdt_ipct = 93
        for comp in ("storage:%s/%s-MDT0000" % (FS, FS), "storage:%s" % FS):
            expected.append(
                _expect(
                    "storage.capacity",
                    comp,
                    "inodes",
                    "P1",
                    "inodes_low",
                    "MDT inodes 93%% used: the filesystem's inodes are the MDT's (P1 at 90%%)",
                )
            )
    if "lustre_server_down" in faults:
        down = rng.choice([i for i in range(OSTS) if i != full])
        expected.append(
            _expect(
                "storage.health",
                "storage:server:%s-OST%04x" % (FS, down),
                "down",
                "P1",
                "lustre_server_down",
                "lfs check servers: OST %d does not answer" % down,
            )
        )
    _write(capture_dir, "lfs-df.txt", _lfs_df(pcts, rng.randint(5, 30), totals, inodes=False))
    _write(capture_dir, "lfs-df-i.txt", _lfs_df(ipcts, mdt_ipct, [100_000_000.0] * OSTS, inodes=True))
    _write(capture_dir, "lfs-check-servers.txt", _check_servers(down))
    _write(capture_dir, "lctl-health_check.txt", "health_check=healthy\n")
    _write(
        capture_dir,
        "mounts.txt",
        "10.11.0.2@o2ib:/%s %s lustre rw,flock,lazystatfs,encrypt 0 0\n"
        "nfs01:/export/home /home nfs4 rw,relatime,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,"
        "proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.11.0.21,local_lock=none,addr=10.11.0.5 0 0\n"
        % (FS, MOUNT),
    )
    _write(
        capture_dir,
        "nfsstat.txt",
        "/home from nfs01:/export/home\n Flags:\trw,relatime,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,"
        "hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.11.0.21,local_lock=none,addr=10.11.0.5\n",
    )
    if "nsd_failed" in faults:
        idx = rng.randint(1, 4)
        failed = "RG%03dVS%03d" % (idx, idx + 2)
        _gpfs(capture_dir, failed)
        expected.append(
            _expect(
                "storage.health",
                "storage:%s/%s" % (GPFS_FS, failed),
                "ready/down",
                "P1",
                "nsd_failed",
                "mmlsdisk: NSD %s availability down" % failed,
            )
        )
    return expected
