# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel log events: NVIDIA Xid/SXid, fallen off the bus, PCIe AER, mlx5 link/power, MCE and EDAC.

``parse_kernel_log(text)`` is the pure parser (in ``_kernel_log``, re-exported here: the ``kernel`` domain's events,
docs/facts.md);
``collect()`` reads ``journalctl -k -o short-iso`` (live), ``dmesg --time-format=iso`` (fallback)
or ``capture_dir/kernel.log``.

Accepted line prefixes (formats.md 4.1): ``[ 1843.308145]`` (dmesg, not placeable: timestamp null),
``[Sun Feb 23 16:24:18 2025]`` (dmesg -T / --ctime), ``2024-11-15T12:02:03,470068+00:00``
(dmesg --time-format=iso), ``kern  :warn  : <time>`` (dmesg -x), ``2026-12-02T09:58:01+0000 host
kernel:`` (journalctl -o short-iso), ``Feb 14 05:03:41 host kernel:`` (journalctl/syslog; the year is
inferred from a reference time; localized month names such as Polish ``kwi`` are understood), ``kernel:``
alone or nothing.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import datetime
import os
import re
from typing import Any, Dict, List, Optional, Sequence

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import capture as _capture
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, error_record, normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.module_utils._files import read_text
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, which
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.kernel_log import (
    DEFAULT_MAX_EVENTS,
    DOMAIN,
    KINDS,
    MAX_RAW,
    PARSER,
    parse_kernel_log,
    split_time,
)

#: the public names, some of them re-exported from the modules this one was split into
__all__ = [
    "DEFAULT_MAX_EVENTS",
    "DOMAIN",
    "KINDS",
    "MAX_RAW",
    "PARSER",
    "collect",
    "filter_since",
    "live_boot_id",
    "map_gpus",
    "parse_kernel_log",
    "probed_gpus",
    "split_time",
]


#: keyword options collect() takes through ``**capture`` (``_collect`` passes them on by this list)
CONNECTION_KEYS = ("ref",)


def map_gpus(events: List[Dict[str, Any]], gpus: Optional[Sequence[Dict[str, Any]]]) -> None:
    """Set ``gpu_index`` on events whose bus id matches one of ``gpus`` ([{index, bus_id}]), in place."""
    if not gpus:
        return
    full: Dict[str, Any] = {}
    short: Dict[str, Any] = {}
    for g in gpus:
        if not isinstance(g, dict):
            continue
        bus = normalize_bus_id(g.get("bus_id"))
        if bus is None or g.get("index") is None:
            continue
        full[bus] = g.get("index")
        short.setdefault(bus[:-2], g.get("index"))
    for ev in events:
        bus = ev.get("bus_id")
        if not bus or ev.get("kind") not in ("xid", "fallen_off_bus", "aer"):
            continue
        if bus in full:
            ev["gpu_index"] = full[bus]
        elif ev["kind"] != "aer" and bus[:-2] in short:
            ev["gpu_index"] = short[bus[:-2]]


def filter_since(events: List[Dict[str, Any]], since: Any) -> List[Dict[str, Any]]:
    """Drop events placed before ``since`` (an ISO time); events without a timestamp are kept.

    When one side has no UTC offset, wall-clock times are compared.
    """
    bound = parse_time(since, assume_utc=False)
    if bound is None:
        return events
    out = []
    for ev in events:
        t = parse_time(ev.get("timestamp"), assume_utc=False)
        if t is not None:
            a, b = t, bound
            if (a.tzinfo is None) != (b.tzinfo is None):
                a, b = a.replace(tzinfo=None), b.replace(tzinfo=None)
            if a < b:
                continue
        out.append(ev)
    return out


#: The driver's line for each GPU it brings up: ``NVRM: GPU at PCI:0000:19:00: GPU-f7b9f45f-...`` (real kernel logs:
#: /work/shared/reference/samples/xid-kmsg/). Always re.search.
_PROBE = re.compile(r"NVRM: GPU at (?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?): GPU-\S+")


def probed_gpus(text: Any) -> List[str]:
    """The bus ids (nvidia-smi's long form) of the GPUs the driver brought up in this log, sorted in PCI order:
    what places a GPU nvidia-smi cannot read among its siblings (docs/facts.md ``kernel.gpus_probed``)."""
    if not isinstance(text, str):
        return []
    found = {normalize_bus_id(m.group(1)) for m in _PROBE.finditer(text)}
    return sorted(b for b in found if b)


def _empty(source: Optional[str], since: Any, boot_id: Optional[str]) -> Dict[str, Any]:
    return {"source": source, "boot_id": boot_id, "since": since, "events": [], "events_dropped": 0, "errors": []}


def _finish(
    result: Dict[str, Any],
    text: str,
    src: str,
    ref: Optional[datetime.datetime],
    gpus: Any,
    max_events: int,
    filter_by_since: bool,
) -> None:
    """Parse ``text`` into ``result``: events after ``result["since"]`` (when asked), mapped to GPUs, capped."""
    probed = probed_gpus(text)
    if probed:
        result["gpus_probed"] = probed
    try:
        events = parse_kernel_log(text, src, ref, result["errors"])
    except ParseError as exc:
        result["errors"].append(exc.to_error(DOMAIN))
        return
    if filter_by_since:
        events = filter_since(events, result["since"])
    map_gpus(events, gpus)
    if max_events and len(events) > max_events:
        result["events_dropped"] = len(events) - max_events
        events = events[-max_events:]
    result["events"] = events


def _capture_boot_id(capture_dir: str, meta: Dict[str, Any]) -> Optional[str]:
    if isinstance(meta.get("boot_id"), str) and meta["boot_id"].strip():
        return meta["boot_id"].strip()
    try:
        text = read_text(os.path.join(capture_dir, "node.json"))
        data = _safejson.loads(text, what="node.json") if text else None
    except (ParseError, ValueError):
        return None
    if isinstance(data, dict) and isinstance(data.get("boot_id"), str):
        return data["boot_id"].strip() or None
    return None


def _find(exe: str) -> Optional[str]:
    if os.path.isabs(exe):
        return exe if os.access(exe, os.X_OK) else None
    return which(exe)


def live_boot_id() -> Optional[str]:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii", errors="replace") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def collect(
    capture_dir: Optional[str] = None,
    since: Optional[str] = None,
    gpus: Optional[Sequence[Dict[str, Any]]] = None,
    timeout: float = 30.0,
    max_events: int = DEFAULT_MAX_EVENTS,
    journalctl: str = "journalctl",
    dmesg: str = "dmesg",
    **capture: Any,
) -> Dict[str, Any]:
    """The ``kernel`` domain of docs/facts.md, from the live node or from ``capture_dir/kernel.log``.

    ``ref=`` (capture only, keyword): the evidence time of a capture without ``captured_at`` (``_evidence_time``),
    against which year-less syslog stamps resolve; without either, the file's modification time."""
    unknown = set(capture) - set(CONNECTION_KEYS)
    if unknown:
        raise TypeError("collect(): unexpected keyword argument(s) %s" % ", ".join(sorted(unknown)))
    if capture_dir:
        return _collect_capture(capture_dir, since, gpus, max_events, capture.get("ref"))
    result = _empty(None, since, live_boot_id())
    ref = datetime.datetime.now()
    jpath = _find(journalctl)
    if jpath:
        # -k implies -b: the current boot only.
        argv = [jpath, "-k", "-o", "short-iso", "--no-pager", "-q"]
        if since:
            argv += ["--since", str(since)]
        res = run_command(argv, timeout=timeout)
        if res.ok:
            result["source"] = "journalctl"
            _finish(result, res.stdout, "journalctl", ref, gpus, max_events, False)
            return result
        kind = "timeout" if res.timed_out else "tool_error"
        result["errors"].append(error_record(DOMAIN, kind, res.describe(), "journalctl"))
    dpath = _find(dmesg)
    if not dpath:
        result["errors"].append(error_record(DOMAIN, "missing", "neither journalctl nor dmesg could be run", None))
        return result
    res = run_command([dpath, "--time-format=iso"], timeout=timeout)
    if not res.ok:
        kind = "timeout" if res.timed_out else "tool_error"
        result["errors"].append(error_record(DOMAIN, kind, res.describe(), "dmesg"))
        return result
    # journalctl failed but dmesg worked: its error is noise only when nothing was lost.
    result["errors"] = [e for e in result["errors"] if e["kind"] == "timeout"]
    result["source"] = "dmesg"
    _finish(result, res.stdout, "dmesg", ref, gpus, max_events, True)
    return result


def _collect_capture(
    capture_dir: str, since: Any, gpus: Optional[Sequence[Dict[str, Any]]], max_events: int, ref_time: Any = None
) -> Dict[str, Any]:
    errors: List[Dict[str, Any]] = []
    meta = _capture.meta_or_error(capture_dir, errors, DOMAIN)
    result = _empty(None, since, _capture_boot_id(capture_dir, meta))
    result["errors"] = errors
    path = os.path.join(capture_dir, "kernel.log")
    try:
        text = read_text(path)
    except ParseError as exc:
        result["source"] = "capture:kernel.log"
        result["errors"].append(exc.to_error(DOMAIN))
        return result
    status = meta.get("files", {}).get("kernel.log") if isinstance(meta.get("files"), dict) else None
    if isinstance(status, dict):
        if status.get("timed_out"):
            result["errors"].append(error_record(DOMAIN, "timeout", "kernel log capture timed out", "kernel.log"))
        elif status.get("rc") not in (None, 0):
            msg = "kernel log capture exited %s: %s" % (status.get("rc"), str(status.get("stderr") or "")[-300:])
            result["errors"].append(error_record(DOMAIN, "tool_error", msg.strip(), "kernel.log"))
    if text is None:
        return result
    result["source"] = "capture:kernel.log"
    ref = parse_time(meta.get("captured_at"), assume_utc=False) or _naive_utc(parse_time(ref_time)) or _mtime(path)
    _finish(result, text, path, ref, gpus, max_events, True)
    return result


def _naive_utc(t: Optional[datetime.datetime]) -> Optional[datetime.datetime]:
    """An aware time as the naive UTC wall clock ``split_time`` compares syslog stamps with."""
    return t.astimezone(datetime.timezone.utc).replace(tzinfo=None) if t is not None else None


def _mtime(path: str) -> Optional[datetime.datetime]:
    try:
        return datetime.datetime.fromtimestamp(os.path.getmtime(path))
    except (OSError, ValueError, OverflowError):
        return None
