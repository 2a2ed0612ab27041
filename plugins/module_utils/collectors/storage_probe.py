# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The opt-in, time-bounded storage throughput and metadata probe (docs/storage.md "Throughput probe").

``run_probe({"path", "bytes", "timeout_s", "meta_files", "baseline", "baseline_file", "record_baseline"}, errors)`` writes ``bytes`` into a private
temporary directory under ``path`` (``fio`` when it is installed, else a small built-in writer that ends with
``fsync``), then creates, stats and removes up to ``meta_files`` empty files (metadata operations per second),
and removes the directory. Everything that touches the filesystem runs in a child that is killed and abandoned
after ``timeout_s`` (``_runner``): a hung filesystem costs the timeout and is reported, never a hung play.
The result carries the baseline (the caller's ``baseline``, else the one stored in ``baseline_file``) so that the
check compares (``storage.throughput``); ``record_baseline: true`` stores this result as the new baseline (a
write: never in check mode, the caller decides).

Runs on managed nodes (Python 3.8+). Stdlib only, no Ansible imports.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, error_record
from ansible_collections.gpuops.cluster.plugins.module_utils._files import (
    ensure_private_dir,
    read_text,
    write_private_atomic,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, run_in_child, which

DOMAIN = "storage"
MIB = 1024 * 1024
DEFAULT_BYTES = 16 * MIB
MAX_BYTES = 1024 * MIB
DEFAULT_TIMEOUT = 3.0
MAX_TIMEOUT = 120.0
DEFAULT_META_FILES = 200
PREFIX = ".gpuops-storage-probe-"


def _write(directory: str, nbytes: int, budget: float) -> Dict[str, Any]:
    """Write up to ``nbytes`` (1 MiB random chunks, so compression cannot fake it) and fsync, within ``budget``."""
    chunk = os.urandom(min(MIB, max(nbytes, 1)))
    start = time.monotonic()
    fd = os.open(os.path.join(directory, "data"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    written = 0
    try:
        while written < nbytes and time.monotonic() - start < budget:
            written += os.write(fd, chunk[: min(len(chunk), nbytes - written)])
        os.fsync(fd)
    finally:
        os.close(fd)
    secs = max(time.monotonic() - start, 1e-6)
    return {"write_bytes": written, "write_s": round(secs, 4), "write_mib_s": round(written / MIB / secs, 2)}


def _meta(directory: str, nfiles: int, budget: float) -> Dict[str, Any]:
    """Create, stat and unlink up to ``nfiles`` empty files within ``budget``: metadata operations per second."""
    start = time.monotonic()
    ops = 0
    for i in range(nfiles):
        if time.monotonic() - start >= budget:
            break
        name = os.path.join(directory, "m%06d" % i)
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.stat(name)
        os.unlink(name)
        ops += 3
    secs = max(time.monotonic() - start, 1e-6)
    return {"meta_ops": ops, "meta_s": round(secs, 4), "meta_ops_s": round(ops / secs, 1)}


def _builtin(path: str, nbytes: int, nfiles: int, budget: float) -> Dict[str, Any]:
    """In the child: private temp dir, write + fsync, metadata ops, always removed."""
    directory = tempfile.mkdtemp(prefix=PREFIX, dir=path)
    try:
        out = _write(directory, nbytes, budget * 0.6)
        out.update(_meta(directory, nfiles, budget * 0.3))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    out["tool"] = "builtin"
    return out


def _mkdtemp(path: str) -> str:
    return tempfile.mkdtemp(prefix=PREFIX, dir=path)


def _fio_and_meta(directory: str, nfiles: int, budget: float) -> Dict[str, Any]:
    try:
        return _meta(directory, nfiles, budget)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def parse_fio_write(text: str) -> Optional[Dict[str, Any]]:
    """``fio --output-format=json``: ``{write_bytes, write_s, write_mib_s}`` of the first job, or None."""
    try:
        data = _safejson.loads(text[text.find("{") :], what="fio JSON") if "{" in text else None
        job = data["jobs"][0]["write"]
        secs = float(job["runtime"]) / 1000.0
        nbytes = int(job["io_bytes"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    rate = float(job.get("bw") or 0) / 1024.0 if secs <= 0 else nbytes / MIB / secs
    return {"write_bytes": nbytes, "write_s": round(secs, 4), "write_mib_s": round(rate, 2)}


def _fio(fio: str, path: str, nbytes: int, nfiles: int, timeout: float, errors: List[Dict[str, Any]]):
    made = run_in_child(_mkdtemp, (path,), timeout * 0.2)
    if not made.get("ok"):
        return None, "timeout" if made.get("timed_out") else "tool_error", str(made.get("error"))
    directory = made["value"]
    argv = [
        fio,
        "--name=gpuops-probe",
        "--directory=%s" % directory,
        "--rw=write",
        "--bs=1M",
        "--size=%d" % nbytes,
        "--end_fsync=1",
        "--ioengine=psync",
        "--output-format=json",
        "--runtime=%d" % max(1, int(timeout * 0.5)),
        "--time_based=0",
    ]
    res = run_command(argv, timeout=timeout * 0.6)
    out = parse_fio_write(res.stdout) if res.ok else None
    rest = run_in_child(_fio_and_meta, (directory, nfiles, timeout * 0.15), timeout * 0.2)
    if out is None:
        errors.append(error_record(DOMAIN, "timeout" if res.timed_out else "tool_error", res.describe(), "fio"))
        return None, None, None
    if rest.get("ok"):
        out.update(rest["value"])
    out["tool"] = "fio"
    return out, None, None


def _spec(spec: Dict[str, Any]) -> tuple:
    path = spec.get("path")
    nbytes = int(spec.get("bytes") or DEFAULT_BYTES)
    timeout = float(spec.get("timeout_s") or DEFAULT_TIMEOUT)
    nfiles = int(spec.get("meta_files") or DEFAULT_META_FILES)
    if not isinstance(path, str) or not os.path.isabs(path):
        raise ValueError("probe.path must be an absolute directory path")
    if not 0 < nbytes <= MAX_BYTES or not 0 < timeout <= MAX_TIMEOUT or not 0 < nfiles <= 100000:
        raise ValueError(
            "probe.bytes must be in (0, %d], probe.timeout_s in (0, %d], probe.meta_files in (0, 100000]"
            % (MAX_BYTES, MAX_TIMEOUT)
        )
    return path, nbytes, timeout, nfiles


def run_probe(spec: Dict[str, Any], errors: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """Run the probe (see the module docstring). Returns ``{path, tool, write_mib_s, write_bytes, write_s,
    meta_ops_s, meta_ops, meta_s, timeout_s, baseline}`` or None (and an error entry) when it could not run."""
    try:
        path, nbytes, timeout, nfiles = _spec(spec)
    except (TypeError, ValueError) as exc:
        errors.append(error_record(DOMAIN, "tool_error", "storage probe not run: %s" % exc, "probe"))
        return None
    start = time.monotonic()
    fio = which("fio") if spec.get("tool", "auto") in ("auto", "fio") else None
    if fio:
        out, kind, msg = _fio(fio, path, nbytes, nfiles, timeout, errors)
    else:
        res = run_in_child(_builtin, (path, nbytes, nfiles, timeout * 0.9), timeout)
        out = res.get("value") if res.get("ok") else None
        kind = "timeout" if res.get("timed_out") else "tool_error"
        msg = res.get("error")
    if out is None:
        if kind:
            why = (
                "did not finish within %.1f s (a hung or very slow filesystem)" % timeout if kind == "timeout" else msg
            )
            errors.append(error_record(DOMAIN, kind, "storage probe on %s: %s" % (path, why), "probe"))
        return None
    out.update(path=path, timeout_s=timeout, elapsed_s=round(time.monotonic() - start, 3))
    base = spec.get("baseline")
    out["baseline"] = base if isinstance(base, dict) else None
    bfile = spec.get("baseline_file")
    if isinstance(bfile, str) and bfile:
        if out["baseline"] is None:
            out["baseline"] = load_baseline(bfile, errors)
        if spec.get("record_baseline") is True:
            record_baseline(bfile, out, errors)
    return out


#: What a stored baseline keeps of a probe result.
BASELINE_KEYS = ("write_mib_s", "meta_ops_s", "tool", "path", "write_bytes")


def load_baseline(path: str, errors: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The baseline stored at ``path`` (JSON written by record_baseline); None when absent, an error entry
    (and None) when it is unreadable or not a baseline."""
    try:
        text = read_text(path, max_bytes=64 * 1024)
        if text is None:
            return None
        data = _safejson.loads(text, what="storage baseline")
        if not isinstance(data, dict) or not any(
            isinstance(data.get(k), (int, float)) and not isinstance(data.get(k), bool)
            for k in ("write_mib_s", "meta_ops_s")
        ):
            raise ValueError("no write_mib_s or meta_ops_s number")
    except ParseError as exc:
        errors.append(exc.to_error(DOMAIN, "unreadable"))
        return None
    except ValueError as exc:
        errors.append(error_record(DOMAIN, "parse", "storage probe baseline %s: %s" % (path, exc), path))
        return None
    return {k: data.get(k) for k in BASELINE_KEYS + ("recorded_at",) if k in data}


def record_baseline(path: str, result: Dict[str, Any], errors: List[Dict[str, Any]]) -> bool:
    """Store ``result`` as the baseline at ``path`` (private, atomic). Never in check mode: the caller decides."""
    data = {k: result.get(k) for k in BASELINE_KEYS}
    data["recorded_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        ensure_private_dir(os.path.dirname(os.path.abspath(path)))
        write_private_atomic(path, json.dumps(data, sort_keys=True) + "\n")
    except OSError as exc:
        errors.append(error_record(DOMAIN, "tool_error", "cannot store the probe baseline %s: %s" % (path, exc), path))
        return False
    return True
