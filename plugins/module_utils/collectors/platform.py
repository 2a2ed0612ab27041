# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster-level platform facts (the scheduler, and parallel storage where ``_storage`` is installed).

``collect_platform(capture_dir=None, run=None, options=None)`` reads the cluster capture directory
(docs/capture.md "Cluster capture directory") or runs the Slurm client commands live, each bounded by the
hang-proof runner, and returns ``{"schema", "mode", "collected_at", "scheduler": {...} | None,
"storage": {...} | None, "errors": [...]}``. Nothing here raises for bad input: a file or command that cannot be
read becomes an error record (``_common.error_record``, domain ``scheduler``), and the checks turn the part it
would have filled into ``unknown``, never into a healthy reading. A file that a partial cluster capture does not
hold is no error: ``unseen.not_captured`` records that part as unknown in ``scheduler["unseen"]`` and
``scheduler["state"]`` says ``ok``/``partial``/``unknown`` (docs/findings.md "What was not seen").

Scheduler facts: ``controllers`` (scontrol ping), ``sdiag``, ``jobs`` (pending and running, squeue),
``nodes`` (sinfo), ``history`` (sacct over ``history_hours``), ``accounting`` (``{"state": up|down|unknown,
"message"}``). Runs on the scheduler host (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import sched as P
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, error_record
from ansible_collections.gpuops.cluster.plugins.module_utils._files import read_text
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, which
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.unseen import domain_state, not_captured

try:  # parallel storage: written by the storage slice; the scheduler works without it
    from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import storage as _storage  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on the branch
    _storage = None  # type: ignore[assignment]

SCHEMA = "gpuops.platform/v1"
DOMAIN = "scheduler"
#: capture file -> what it holds (docs/capture.md)
CAPTURE_FILES = {
    "ping": "scontrol-ping.txt",
    "sdiag": "sdiag.txt",
    "squeue_json": "squeue.json",
    "squeue": "squeue.txt",
    "sinfo": "sinfo.txt",
    "sinfo_json": "sinfo.json",
    "sacct_json": "sacct.json",
    "sacct": "sacct.txt",
}
DEFAULTS = {"timeout": 15.0, "history_hours": 24, "bin_dir": None, "scheduler": True, "storage": True}

Runner = Callable[..., Any]


def _options(options: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    opt = dict(DEFAULTS)
    opt.update({k: v for k, v in (options or {}).items() if v is not None})
    return opt


def _empty_scheduler(source: str) -> Dict[str, Any]:
    return {
        "source": source,
        "controllers": None,
        "sdiag": None,
        "jobs": None,
        "nodes": None,
        "history": None,
        "history_format": None,
        "accounting": {"state": "unknown", "message": "not read"},
        "errors": [],
        "unseen": [],
        "state": "unknown",
    }


#: the facts of the scheduler part that hold a reading when not None
READINGS = ("controllers", "sdiag", "jobs", "nodes", "history")
#: the text parsers that take an ``errors`` list (one bad row costs that row)
_ROWWISE = (P.parse_sinfo, P.parse_squeue_text, P.parse_sacct_text)


def _parse(sched: Dict[str, Any], key: str, func: Callable[..., Any], text: str, source: str) -> None:
    try:
        sched[key] = func(text, source, sched["errors"]) if func in _ROWWISE else func(text, source)
    except ParseError as exc:
        sched["errors"].append(exc.to_error(DOMAIN))


def _read(capture_dir: str, name: str, sched: Dict[str, Any]) -> Optional[str]:
    try:
        return read_text(os.path.join(capture_dir, name))
    except ParseError as exc:
        sched["errors"].append(exc.to_error(DOMAIN))
        return None


def _history(sched: Dict[str, Any], text: Optional[str], fmt: str, source: str) -> None:
    """sacct output, or its complaint that slurmdbd cannot be reached (accounting down: not a parse error)."""
    if text is None:
        return
    why = P.accounting_error(text)
    if why:
        sched["accounting"] = {"state": "down", "message": why}
        return
    func = P.parse_sacct_json if fmt == "json" else P.parse_sacct_text
    _parse(sched, "history", func, text, source)
    if sched["history"] is not None:
        sched["history_format"] = fmt
        sched["accounting"] = {"state": "up", "message": "sacct answered (%d jobs)" % len(sched["history"])}


_WHAT = {
    "ping": "the controllers (scheduler.controller)",
    "sdiag": "slurmctld's load (scheduler.rpc)",
    "sinfo": "the node states (scheduler.nodes)",
    "squeue": "the queue (scheduler.queue, scheduler.fragmentation)",
    "sacct": "the job history and accounting (scheduler.job_failures, scheduler.accounting)",
}


def scheduler_from_capture(capture_dir: str) -> Optional[Dict[str, Any]]:
    """The scheduler facts of a cluster capture directory; None when it holds no scheduler file at all."""
    present = {k: n for k, n in CAPTURE_FILES.items() if os.path.lexists(os.path.join(capture_dir, n))}
    if not present:
        return None
    sched = _empty_scheduler("capture:" + capture_dir)
    for key, func, wanted in (
        ("controllers", P.parse_ping, "ping"),
        ("sdiag", P.parse_sdiag, "sdiag"),
        ("nodes", P.parse_sinfo, "sinfo"),
    ):
        if wanted == "sinfo" and "sinfo_json" in present:
            wanted = "sinfo_json"  # sinfo --json: .json wins over .txt, as for squeue and sacct
        if wanted not in present:
            not_captured(sched, CAPTURE_FILES[wanted], _WHAT[wanted])
            continue
        text = _read(capture_dir, CAPTURE_FILES[wanted], sched)
        if text is not None:
            _parse(sched, key, func, text, CAPTURE_FILES[wanted])
    if "squeue_json" in present or "squeue" in present:
        name = "squeue_json" if "squeue_json" in present else "squeue"
        text = _read(capture_dir, CAPTURE_FILES[name], sched)
        if text is not None:
            func = P.parse_squeue_json if name == "squeue_json" else P.parse_squeue_text
            _parse(sched, "jobs", func, text, CAPTURE_FILES[name])
    else:
        not_captured(sched, "squeue.json / squeue.txt", _WHAT["squeue"])
    if "sacct_json" in present or "sacct" in present:
        name = "sacct_json" if "sacct_json" in present else "sacct"
        _history(
            sched,
            _read(capture_dir, CAPTURE_FILES[name], sched),
            "json" if name == "sacct_json" else "text",
            CAPTURE_FILES[name],
        )
    else:
        sched["accounting"] = {"state": "unknown", "message": "no sacct.json / sacct.txt in the capture"}
        not_captured(sched, "sacct.json / sacct.txt", _WHAT["sacct"])
    sched["state"] = domain_state(sched, READINGS)
    return sched


def _tool(name: str, bin_dir: Optional[str]) -> Optional[str]:
    if bin_dir:
        path = os.path.join(bin_dir, name)
        return path if os.access(path, os.X_OK) else None
    return which(name)


def _run(run: Runner, argv: List[str], timeout: float) -> Tuple[bool, str, Any]:
    res = run(argv, timeout=timeout)
    return bool(res.ok), res.stdout + ("\n" + res.stderr if res.stderr else ""), res


def _fail(sched: Dict[str, Any], res: Any, source: str) -> None:
    kind = "timeout" if getattr(res, "timed_out", False) else "tool_error"
    sched["errors"].append(error_record(DOMAIN, kind, res.describe(), source))


def _live_json(sched, run, exe, argvs, timeout, key, funcs) -> None:
    """``--json`` where the Slurm version has it (``argvs[0]``), the text form (``argvs[1]``) otherwise."""
    argv_json, argv_text = argvs
    ok, out, res = _run(run, [exe] + argv_json, timeout)
    if ok:
        try:
            sched[key] = funcs[0](res.stdout, os.path.basename(exe) + " --json")
            return
        except ParseError:
            pass  # an old Slurm prints its usage or nothing: the text form below
    if getattr(res, "timed_out", False):
        _fail(sched, res, exe)
        return
    ok, out, res = _run(run, [exe] + argv_text, timeout)
    if not ok:
        _fail(sched, res, exe)
        return
    _parse(sched, key, funcs[1], res.stdout, os.path.basename(exe))


def scheduler_live(run: Runner, opt: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """Run the Slurm client commands (scontrol ping first: with every controller down nothing else is asked)."""
    scontrol = _tool("scontrol", opt["bin_dir"])
    if not scontrol:
        return None
    sched = _empty_scheduler("live")
    timeout = float(opt["timeout"])
    ok, out, res = _run(run, [scontrol, "ping"], timeout)
    if getattr(res, "timed_out", False):
        sched["controllers"] = [{"role": "primary", "host": None, "state": "UNRESPONSIVE"}]
        sched["errors"].append(error_record(DOMAIN, "timeout", res.describe(), "scontrol ping"))
        return sched
    _parse(sched, "controllers", P.parse_ping, out, "scontrol ping")
    if sched["controllers"] and not any(c["state"] == "UP" for c in sched["controllers"]):
        sched["accounting"] = {"state": "unknown", "message": "not asked: no controller is up"}
        return sched
    _commands(sched, run, opt, timeout)
    return sched


def _commands(sched: Dict[str, Any], run: Runner, opt: Dict[str, Any], timeout: float) -> None:
    for name, key, func, args in (
        ("sdiag", "sdiag", P.parse_sdiag, []),
        ("sinfo", "nodes", P.parse_sinfo, ["-N", "-h", "-O", P.SINFO_FORMAT]),
    ):
        exe = _tool(name, opt["bin_dir"])
        if not exe:
            sched["errors"].append(error_record(DOMAIN, "missing", "%s not found" % name, name))
            continue
        ok, out, res = _run(run, [exe] + args, timeout)
        if ok:
            _parse(sched, key, func, res.stdout, name)
        else:
            _fail(sched, res, name)
    squeue = _tool("squeue", opt["bin_dir"])
    if squeue:
        _live_json(
            sched,
            run,
            squeue,
            (["--json", "-t", "PENDING,RUNNING"], ["-h", "-t", "PENDING,RUNNING", "-o", P.SQUEUE_FORMAT]),
            timeout,
            "jobs",
            (P.parse_squeue_json, P.parse_squeue_text),
        )
    sacct = _tool("sacct", opt["bin_dir"])
    if not sacct:
        sched["accounting"] = {"state": "unknown", "message": "sacct not found"}
        return
    window = ["-a", "-X", "-S", "now-%dhours" % int(opt["history_hours"])]
    ok, out, res = _run(run, [sacct, "--json"] + window, timeout)
    if ok and out.lstrip().startswith("{"):
        _history(sched, res.stdout, "json", "sacct --json")
        if sched["history"] is not None or sched["accounting"]["state"] == "down":
            return
    ok, out, res = _run(run, [sacct] + window + ["-P", "-n", "-o", P.SACCT_FIELDS], timeout)
    if P.accounting_error(out):
        _history(sched, out, "text", "sacct")
    elif not ok:
        _fail(sched, res, "sacct")
    else:
        _history(sched, res.stdout, "text", "sacct")


def _storage_facts(capture_dir: Optional[str], run: Runner, opt: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    if _storage is None or not opt["storage"]:
        return None
    return _storage.collect_storage(capture_dir=capture_dir, run=run, options=opt.get("storage_options"))


def collect_platform(
    capture_dir: Optional[str] = None, run: Optional[Runner] = None, options: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]:
    """The platform facts (see the module docstring). ``run`` defaults to the hang-proof ``run_command``;
    ``options``: timeout (s per command), history_hours (sacct window), bin_dir (where the Slurm tools are),
    scheduler / storage (bool: collect that part), storage_options (passed to ``_storage.collect_storage``)."""
    opt = _options(options)
    run = run or run_command
    out: Dict[str, Any] = {
        "schema": SCHEMA,
        "mode": "capture" if capture_dir else "live",
        "collected_at": time.time(),
        "scheduler": None,
        "storage": None,
        "errors": [],
    }
    if capture_dir and not os.path.isdir(capture_dir):
        out["errors"].append(
            error_record(DOMAIN, "missing", "cluster capture directory %s does not exist" % capture_dir, capture_dir)
        )
        return out
    if opt["scheduler"]:
        out["scheduler"] = scheduler_from_capture(capture_dir) if capture_dir else scheduler_live(run, opt)
        if capture_dir:
            meta = _read_meta(capture_dir)
            if meta:
                out["collected_at"] = meta
        if out["scheduler"]:
            out["scheduler"]["state"] = domain_state(out["scheduler"], READINGS)
            out["errors"] += out["scheduler"]["errors"]
    try:
        out["storage"] = _storage_facts(capture_dir, run, opt)
    except Exception as exc:  # noqa: BLE001 - another slice's collector must never stop the scheduler's
        out["errors"].append(error_record("storage", "internal", "storage collector failed: %s" % exc))
    if isinstance(out["storage"], dict):
        out["errors"] += [e for e in out["storage"].get("errors") or [] if isinstance(e, dict)]
    return out


def _read_meta(capture_dir: str) -> Optional[float]:
    """``captured_at`` (epoch) from the capture's ``platform-meta.json``, when present."""
    try:
        text = read_text(os.path.join(capture_dir, "platform-meta.json"))
        value = _safejson.loads(text, what="platform-meta.json")["captured_at"] if text else None
    except (ParseError, ValueError, KeyError, TypeError):
        return None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
