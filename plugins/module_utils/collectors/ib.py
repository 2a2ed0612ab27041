# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""InfiniBand / RoCE facts: sysfs, ``ibstat`` and ``ibstatus`` parsers and the ``ib`` domain collector.

Sources, best first: sysfs (``/sys/class/infiniband/<hca>/...``: the only source with error counters),
``ibstat`` text, ``ibstatus`` text. A capture directory may hold the allowlisted sysfs attributes as one listing
(``infiniband-sysfs.txt``, written by :func:`capture_sysfs`) or as a copy of the subtree (``sys/class/infiniband/...``,
a hand-made capture or one from an older release: read first when present), and/or ``ibstat.txt``.

Real sysfs is not a plain tree: ``/sys/class/infiniband/mlx5_0`` is a link into ``/sys/devices/...`` whose
``device`` and ``subsystem`` links lead back up (a loop for any recursive walk). This module never walks:
it lists the class directory, then reads fixed attribute paths below each HCA (``ports/<n>/counters/*``
is the deepest), opens every file non-blocking and reads only regular files. Attributes that cannot be
read (some ``hw_counters`` answer ``EINVAL``) are skipped.

The pure text side (records, ``ibstat``/``ibstatus``, counter deltas) lives in ``_ib_parse``, the sysfs reader in
``_ib_sysfs``; this module is the collector and re-exports both modules' public names.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    capture as _capture,
    ib_optics as _ib_optics,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    clean,
    error_record,
    internal_error,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.ib import (
    DOMAIN,
    compare,
    find_ibpanic,
    guid_from_gid,
    norm_guid,
    norm_phys_state,
    norm_state,
    parse_ibstat,
    parse_ibstatus,
    parse_rate,
    saturated,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.ib_sysfs import (
    capture_sysfs,
    hcas_from_snapshot,
    parse_sysfs_flat,
    read_attr,
    read_sysfs_class,
    snapshot_flat,
)

from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, run_in_child, which
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time

#: the public names, some of them re-exported from the modules this one was split into
__all__ = [
    "DOMAIN",
    "capture_sysfs",
    "collect",
    "compare",
    "guid_from_gid",
    "hcas_from_snapshot",
    "norm_guid",
    "norm_phys_state",
    "norm_state",
    "parse_ibstat",
    "parse_ibstatus",
    "parse_rate",
    "parse_sysfs_flat",
    "read_sysfs_class",
    "saturated",
    "snapshot_flat",
]

# ---------------------------------------------------------------------------------------------------------------
# Collector
# ---------------------------------------------------------------------------------------------------------------


def _result(source: Optional[str] = None) -> Dict[str, Any]:
    return {"source": source, "collected_at": None, "boot_id": None, "hcas": [], "errors": []}


def _epoch(value: Any) -> Optional[float]:
    """``collected_at`` as epoch seconds: a number as it is, a time string through ``_timeutil.parse_time``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    dt = parse_time(value) if isinstance(value, str) else None
    return dt.timestamp() if dt is not None else None


def _ibstat_into(out: Dict[str, Any], text: str, stderr: str, source: str) -> None:
    """Parse ibstat text into ``out``, keeping partial results and reporting ibpanic / truncation."""
    try:
        out["hcas"] = parse_ibstat(text, source, out["errors"])
    except ParseError as exc:
        out["hcas"] = exc.partial or []
        out["errors"].append(exc.to_error(DOMAIN))
    panic = find_ibpanic(text)
    where = source
    if panic is None and stderr:
        panic = find_ibpanic(stderr)
        where = source + " (stderr)"
    if panic is not None:
        msg = f"{panic[1]} ({len(out['hcas'])} HCA(s) listed before it are kept)"
        out["errors"].append(error_record(DOMAIN, "tool_error", msg, source=where, parser="ibstat", line=panic[0]))


def _sysfs_listing_into(out: Dict[str, Any], capture_dir: str) -> bool:
    """``infiniband-sysfs.txt`` (the listing ``capture`` writes) into ``out``; True when it gave HCA records. Its
    errors are kept either way: a refused or garbled listing is named even when ``ibstat.txt`` is read next."""
    name = _capture.SYSFS_IB_FLAT
    try:
        text = _capture.read(capture_dir, name)
    except ParseError as exc:
        out["errors"].append(exc.to_error(DOMAIN, "unreadable"))
        return False
    if text is None:
        return False
    try:
        hcas = hcas_from_snapshot(snapshot_flat(text, name, out["errors"]), name, out["errors"])
    except ParseError as exc:
        out["errors"].append(exc.to_error(DOMAIN))
        return False
    out.update(source="capture:sysfs", hcas=hcas)  # ibstat.txt, when there is one, is read next if it gave none
    return bool(hcas)


def _collect_capture(capture_dir: str) -> Dict[str, Any]:
    out = _result()
    meta = _capture.meta_or_error(capture_dir, out["errors"], DOMAIN)
    out["collected_at"] = _epoch(meta.get("captured_at", meta.get("collected_at")))
    out["boot_id"] = clean(meta.get("boot_id")) if isinstance(meta.get("boot_id"), str) else None
    if out["boot_id"] is None:
        try:
            node = _safejson.loads(_capture.read(capture_dir, "node.json") or "{}", what="node.json")
            if isinstance(node, dict) and isinstance(node.get("boot_id"), str):
                out["boot_id"] = clean(node["boot_id"])
        except (ParseError, ValueError):
            pass  # node.json is node_info's to report
    try:  # sys/class/infiniband must be real directories of the capture: a link out of it is refused
        class_dir = _capture.subdir(capture_dir, _capture.SYSFS_IB)
    except ParseError as exc:
        class_dir = None
        out["errors"].append(exc.to_error(DOMAIN))
    have_ibstat = os.path.lexists(_capture.path(capture_dir, "ibstat.txt"))  # a link too: refused by name below
    if class_dir is not None:
        hcas, errors = read_sysfs_class(class_dir, confine=True)
        if hcas or not have_ibstat:
            out.update(source="capture:sysfs", hcas=hcas)
            out["errors"].extend(errors)
            return out
    elif _sysfs_listing_into(out, capture_dir):
        return out
    for name, parser in (("ibstat.txt", "ibstat"), ("ibstatus.txt", "ibstatus")):
        try:
            text = _capture.read(capture_dir, name)
        except ParseError as exc:
            out["source"] = "capture:" + name
            out["errors"].append(exc.to_error(DOMAIN, "unreadable"))
            return out
        if text is None:
            continue
        out["source"] = "capture:" + name
        status = _capture.file_status(meta, name)
        stderr = status.get("stderr") if isinstance(status.get("stderr"), str) else ""
        if parser == "ibstat":
            _ibstat_into(out, text, stderr, name)
        else:
            try:
                out["hcas"] = parse_ibstatus(text, name, out["errors"])
            except ParseError as exc:
                out["errors"].append(exc.to_error(DOMAIN))
        if status.get("timed_out"):
            out["errors"].append(error_record(DOMAIN, "timeout", f"{parser} timed out when captured", name))
        elif (
            isinstance(status.get("rc"), int)
            and status["rc"] != 0
            and not any(e["kind"] == "tool_error" for e in out["errors"])
        ):
            last = stderr.strip().splitlines()[-1][:300] if stderr.strip() else ""
            msg = f"{parser} exited {status['rc']}" + ((": " + last) if last else "")
            out["errors"].append(error_record(DOMAIN, "tool_error", msg, source=name))
        return out
    return out


def _collect_live(sysfs_root: str, timeout: float, ibstat_path: str) -> Dict[str, Any]:
    out = _result()
    start = time.monotonic()
    out["collected_at"] = time.time()
    boot = read_attr(os.path.join(sysfs_root, "proc", "sys", "kernel", "random", "boot_id"))
    out["boot_id"] = clean(boot)
    class_dir = os.path.join(sysfs_root, _capture.SYSFS_IB)
    if os.path.isdir(class_dir):
        # sysfs counters are PMA queries answered by the HCA firmware: a wedged HCA can block a read
        res = run_in_child(read_sysfs_class, (class_dir,), timeout)
        if res.get("ok"):
            hcas, errors = res["value"]
            out["errors"].extend(errors)
            if hcas:
                out.update(source="sysfs", hcas=hcas)
                return out
        else:
            kind = "timeout" if res.get("timed_out") else "internal"
            out["errors"].append(error_record(DOMAIN, kind, f"reading {class_dir}: {res.get('error')}", "sysfs"))
    if os.sep in ibstat_path:
        exe = ibstat_path if os.access(ibstat_path, os.X_OK) else None
    else:
        exe = which(ibstat_path)
    if not exe:
        if not os.path.isdir(class_dir):
            out["source"] = None  # no IB stack on this node: not an error, the policy knows what to expect
        return out
    remaining = max(1.0, timeout - (time.monotonic() - start))
    res = run_command([exe], timeout=remaining)
    out["source"] = "ibstat"
    if res.timed_out:
        out["errors"].append(error_record(DOMAIN, "timeout", res.describe(), source="ibstat"))
    elif res.error:
        out["errors"].append(error_record(DOMAIN, "missing", res.describe(), source="ibstat"))
        return out
    _ibstat_into(out, res.stdout, res.stderr, "ibstat")
    if res.rc not in (0, None) and not any(e["kind"] == "tool_error" for e in out["errors"]):
        out["errors"].append(error_record(DOMAIN, "tool_error", res.describe(), source="ibstat"))
    return out


def collect(
    capture_dir: Optional[str] = None,
    sysfs_root: str = "/",
    timeout: float = 30,
    ibstat_path: str = "ibstat",
) -> Dict[str, Any]:
    """The ``ib`` domain of docs/facts.md, from ``capture_dir`` or the live node (sysfs, then ibstat)."""
    try:
        if capture_dir:
            out = _collect_capture(capture_dir)
            _ib_optics.collect_capture(capture_dir, out)  # mlxlink-<hca>.txt, ethtool-m/-S-<if>.txt
            return out
        start = time.monotonic()
        out = _collect_live(sysfs_root or "/", float(timeout), ibstat_path or "ibstat")
        _ib_optics.collect_live(out, sysfs_root or "/", start + float(timeout))  # mlxlink / ethtool, bounded
        return out
    except Exception as exc:  # noqa: BLE001 - collector boundary: report, never raise
        out = _result()
        out["errors"].append(internal_error(DOMAIN, exc))
        return out
