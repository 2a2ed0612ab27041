# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# ruff: noqa: UP009, UP031 - the house header and %-formatting (Python 3.8 managed nodes) are intended
"""The ``gpu`` fact domain (docs/facts.md): NVML, ``nvidia-smi -q -x``, or a capture directory.

Live: NVML (pynvml) in a child with a timeout when importable and the driver answers; otherwise
``nvidia-smi -q -x`` (plus ``nvidia-smi nvlink -s``/``-e``). A timed-out NVML means a hung driver:
nvidia-smi is not tried then, so the whole collection stays within ``timeout`` plus a little.
Capture: ``nvidia-smi-q.xml`` else ``nvidia-smi-q.txt``, plus the NVLink files; capture.json's
per-file rc/stderr/timed_out are evidence too.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import time
from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import capture as _capture, nvml as _nvml
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import (
    imex as _imex_parser,
    nvlink as _nvlink,
    nvsmi_text as _nvsmi_text,
    nvsmi_xml as _nvsmi_xml,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, error_record
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, which

DOMAIN = "gpu"
XML_FILE = "nvidia-smi-q.xml"
TEXT_FILE = "nvidia-smi-q.txt"
NVLINK_S_FILE = "nvidia-smi-nvlink-s.txt"
NVLINK_E_FILE = "nvidia-smi-nvlink-e.txt"
#: IMEX in a capture (docs/capture.md): ``nvidia-imex-ctl -q`` and ``nvidia-imex-ctl -N -j``, each as printed
IMEX_DAEMON_FILE = "nvidia-imex-ctl-q.txt"
IMEX_DOMAIN_FILE = "nvidia-imex-ctl-N-j.txt"
#: Seconds left below which the optional NVLink commands are not started.
_MIN_NVLINK_BUDGET = 1.0
#: seconds a tool must have had before its kill counts as a hang (kind ``timeout``) rather than a part not seen
_MIN_HANG_EVIDENCE = 5.0


def _domain(result: Dict[str, Any]) -> Dict[str, Any]:
    """Only the keys of docs/facts.md, in order (``imex`` only where nvidia-imex-ctl is installed)."""
    out = {
        "source": result.get("source"),
        "driver_version": result.get("driver_version"),
        "cuda_version": result.get("cuda_version"),
        "count": result.get("count"),
        "gpus": result.get("gpus") or [],
        "errors": result.get("errors") or [],
    }
    if result.get("imex") is not None:
        out["imex"] = result["imex"]
    return out


#: seconds for each ``nvidia-imex-ctl`` query (DCGM treats a timeout as "unavailable")
IMEX_TIMEOUT = 5.0


def _imex(result: Dict[str, Any], binary: Optional[str] = None) -> None:
    """The IMEX daemon and domain state (GB200 / NVL72) where ``nvidia-imex-ctl`` is installed; ``imex`` stays None
    (not installed: nothing to judge) otherwise. A timeout or an unreadable answer is an error record."""
    exe = binary or which("nvidia-imex-ctl")
    if not exe:
        return
    state = _imex_parser.empty()
    for args, parse in ((["-q"], _imex_parser.parse_daemon), (["-N", "-j"], _imex_parser.parse_domain)):
        cmd = run_command([exe] + args, timeout=IMEX_TIMEOUT)
        source = "nvidia-imex-ctl " + " ".join(args)
        if cmd.timed_out or cmd.error:
            kind = "timeout" if cmd.timed_out else "tool_error"
            result["errors"].append(error_record(DOMAIN, kind, cmd.describe(), source, _imex_parser.PARSER))
            continue
        parse(cmd.stdout + ("\n" + cmd.stderr if _imex_parser.NOT_CONFIGURED in cmd.stderr else ""), state)
        if state["configured"] is False:
            break
    why = state.pop("error", None)
    if why and state["configured"] is not False:
        result["errors"].append(error_record(DOMAIN, "parse", why, "nvidia-imex-ctl", _imex_parser.PARSER))
    result["imex"] = state


def _parse_smi(text: str, parse: Any, source: str, errors: list) -> Dict[str, Any]:
    """Run one nvidia-smi parser; a ParseError becomes an error record (its partial result is kept)."""
    try:
        return parse(text, source)
    except ParseError as exc:
        errors.append(exc.to_error(DOMAIN))
        if isinstance(exc.partial, dict):
            return exc.partial
        return _nvsmi_xml.empty_result(source)


def _status_errors(status: Dict[str, Any], name: str, source: str) -> list:
    """capture.json per-file status -> error records (timed out, non-zero exit with stderr)."""
    errors = []
    if status.get("timed_out"):
        errors.append(error_record(DOMAIN, "timeout", "%s timed out when captured" % _capture.FILES[name], source))
    rc = status.get("rc")
    if isinstance(rc, int) and not isinstance(rc, bool) and rc != 0:
        stderr = (status.get("stderr") or "").strip()
        last = stderr.splitlines()[-1][:300] if stderr else ""
        errors.append(
            error_record(
                DOMAIN,
                "tool_error",
                "%s: exit %d%s" % (_capture.FILES[name], rc, (": " + last) if last else ""),
                source,
            )
        )
    return errors


def _drop_explained_exit(result: Dict[str, Any], tool_sources: Any) -> None:
    """nvidia-smi exits non-zero when it cannot read a GPU; that GPU is already an unreadable record
    (and the policy's gpu.missing), so the bare exit status is not a second, separate collector error."""
    if not any(g.get("readable") is False for g in result.get("gpus") or []):
        return
    result["errors"] = [
        e for e in result.get("errors") or [] if not (e.get("kind") == "tool_error" and e.get("source") in tool_sources)
    ]


def _merge_nvlink(result: Dict[str, Any], texts: Dict[str, Optional[str]]) -> None:
    parsed = []
    sources = []
    inactive = None
    for source, text in texts.items():
        if text is None or not text.strip():
            continue
        if _nvlink.all_inactive_without_header(text):
            # "NVML: Unable to retrieve NVLink information as all links are inactive" alone: evidence, not an
            # error; it is about the GPUs the other NVLink output does not list links for (below)
            inactive = text.strip().splitlines()[-1][:300]
            continue
        try:
            parsed.append(_nvlink.parse(text, source, result["errors"]))
            sources.append(source)
        except ParseError as exc:
            result["errors"].append(exc.to_error(DOMAIN))
    if parsed and not result.get("gpus") and not result.get("source"):
        # a partial capture: NVLink output without a GPU inventory names its GPUs itself (index, name, UUID)
        result["gpus"] = _nvlink.gpu_records(*parsed)
        result["count"] = len(result["gpus"]) or None
        result["source"] = ", ".join(sources) if result["gpus"] else None
    if parsed:
        notes = _nvlink.merge(result["gpus"], *parsed)
        if notes:
            msg = "%d NVLink GPU entr%s matched no GPU of this output (another node's file?): %s" % (
                len(notes),
                "y" if len(notes) == 1 else "ies",
                "; ".join(notes[:3]),
            )
            result["errors"].append(error_record(DOMAIN, "parse", msg, ", ".join(sources), _nvlink.PARSER))
    if inactive:
        for g in result.get("gpus") or []:
            if not (g.get("nvlink") or {}).get("links"):
                g["nvlink"] = {"links": [], "error": inactive}


def collect_capture(capture_dir: str) -> Dict[str, Any]:
    """The gpu domain from a capture directory (docs/capture.md)."""
    errors: list = []
    meta = _capture.meta_or_error(capture_dir, errors, DOMAIN)
    result = None
    for name, parse, stem in ((XML_FILE, _nvsmi_xml.parse, "xml"), (TEXT_FILE, _nvsmi_text.parse, "text")):
        source = "capture:" + name
        try:
            text = _capture.read(capture_dir, name)
        except ParseError as exc:
            errors.append(exc.to_error(DOMAIN))
            continue
        if text is None:
            continue
        status = _capture.file_status(meta, name)
        errors.extend(_status_errors(status, name, source))
        stderr = status.get("stderr") or ""
        if "Unable to determine" in stderr and "Unable to determine" not in text:
            text = stderr + "\n" + text
        if not text.strip():
            if not status.get("timed_out") and status.get("rc") in (None, 0):
                errors.append(error_record(DOMAIN, "parse", "empty file", source, "nvsmi_" + stem, 1))
            continue
        result = _parse_smi(text, parse, source, errors)
        result["source"] = source
        break
    if result is None:
        result = _nvsmi_xml.empty_result(None)
        why = _capture.file_status(meta, XML_FILE).get("error")
        if why and not errors:
            # the capture ran nvidia-smi and could not (not on PATH): missing evidence, as on a live node
            # (_collect_smi), never "no GPUs" (a capture that holds no GPU file and says nothing of it is a partial
            # capture: its other domains are read as they are)
            errors.append(error_record(DOMAIN, "missing", str(why), "capture:" + XML_FILE))
    nv_texts = {}
    for name in (NVLINK_S_FILE, NVLINK_E_FILE):
        try:
            text = _capture.read(capture_dir, name)
        except ParseError as exc:
            errors.append(exc.to_error(DOMAIN))
            continue
        status = _capture.file_status(meta, name)
        stderr = (status.get("stderr") or "").strip()
        if "NVLink" in stderr and stderr not in (text or ""):
            # "NVML: Unable to retrieve NVLink information ..." may have gone to stderr.
            text = (text or "") + "\n" + stderr
        nv_texts["capture:" + name] = text
    result["errors"] = errors + result["errors"]
    _drop_explained_exit(result, ("capture:" + XML_FILE, "capture:" + TEXT_FILE))
    _merge_nvlink(result, nv_texts)
    _imex_capture(capture_dir, meta, result)
    return _domain(result)


def _imex_capture(capture_dir: str, meta: Dict[str, Any], result: Dict[str, Any]) -> None:
    """IMEX from a capture's ``nvidia-imex-ctl`` files, read as the live :func:`_imex` reads the tool: ``imex`` only
    when the capture holds one of them with output (none: not captured, or not installed on the node)."""
    state = None
    for name, parse in ((IMEX_DAEMON_FILE, _imex_parser.parse_daemon), (IMEX_DOMAIN_FILE, _imex_parser.parse_domain)):
        source = "capture:" + name
        try:
            text = _capture.read(capture_dir, name)
        except ParseError as exc:
            result["errors"].append(exc.to_error(DOMAIN))
            continue
        status = _capture.file_status(meta, name)
        stderr = status.get("stderr") or ""
        if status.get("timed_out"):
            result["errors"].append(error_record(DOMAIN, "timeout", "nvidia-imex-ctl timed out", source, "imex"))
            continue
        if text is None or not (text.strip() or _imex_parser.NOT_CONFIGURED in stderr):
            continue  # not captured, or the tool was not there (capture.json says so): nothing to judge
        state = state if state is not None else _imex_parser.empty()
        parse(text + ("\n" + stderr if _imex_parser.NOT_CONFIGURED in stderr else ""), state)
        if state["configured"] is False:
            break
    if state is None:
        return
    why = state.pop("error", None)
    if why and state["configured"] is not False:
        result["errors"].append(error_record(DOMAIN, "parse", why, "capture:nvidia-imex-ctl", _imex_parser.PARSER))
    result["imex"] = state


def _collect_smi(nvidia_smi: str, deadline: float) -> Dict[str, Any]:
    errors: list = []
    binary = which(nvidia_smi) if "/" not in nvidia_smi else nvidia_smi
    if binary is None:
        res = _nvsmi_xml.empty_result(None)
        res["errors"].append(error_record(DOMAIN, "missing", "%s not found on PATH" % nvidia_smi, nvidia_smi))
        return res
    source = "nvidia-smi-xml"
    cmd = run_command([binary, "-q", "-x"], timeout=max(0.1, deadline - time.monotonic()))
    if cmd.timed_out:
        # Keep the GPUs printed before the hang (the XML parser keeps complete <gpu> elements).
        res = _parse_smi(cmd.stdout, _nvsmi_xml.parse, source, errors) if cmd.stdout.strip() else None
        res = res or _nvsmi_xml.empty_result(source)
        res["source"] = source
        res["errors"] = [error_record(DOMAIN, "timeout", cmd.describe(), source)] + errors + res["errors"]
        return res
    if cmd.error:
        res = _nvsmi_xml.empty_result(None)
        res["errors"].append(
            error_record(DOMAIN, "missing" if "cannot run" in cmd.error else "tool_error", cmd.describe(), source)
        )
        return res
    text = cmd.stdout
    if "Unable to determine" in cmd.stderr:
        text = cmd.stderr + "\n" + text
    if text.strip():
        res = _parse_smi(text, _nvsmi_xml.parse, source, errors)
    else:
        res = _nvsmi_xml.empty_result(source)
    res["source"] = source
    if cmd.rc != 0:
        errors.append(error_record(DOMAIN, "tool_error", cmd.describe(), source))
    res["errors"] = errors + res["errors"]
    _drop_explained_exit(res, (source,))
    if any(g["readable"] for g in res["gpus"]):
        nv_texts: Dict[str, Optional[str]] = {}
        for flag in ("-s", "-e"):
            left = deadline - time.monotonic()
            if left < _MIN_NVLINK_BUDGET:
                # not run: the domain's time went to -q -x (slow, but it answered): nothing seen, nothing hung
                res["errors"].append(
                    error_record(DOMAIN, "skipped", "nvidia-smi nvlink %s skipped: timeout budget spent" % flag, source)
                )
                break
            nv = run_command([binary, "nvlink", flag], timeout=left)
            if nv.timed_out:
                # a hang only when the tool had a hang's worth of time; killed by what the budget had left, it is
                # a part not seen (docs/checks.md collector.error: a skipped part is never a reboot)
                kind = "timeout" if left >= _MIN_HANG_EVIDENCE else "skipped"
                res["errors"].append(error_record(DOMAIN, kind, nv.describe(), "nvidia-smi nvlink %s" % flag))
                break
            if not nv.ok and not nv.stdout.strip():
                res["errors"].append(error_record(DOMAIN, "tool_error", nv.describe(), "nvidia-smi nvlink %s" % flag))
                continue
            # "NVML: Unable to retrieve NVLink information ..." may go to stderr.
            extra = "\n" + nv.stderr if "NVLink" in nv.stderr else ""
            nv_texts["nvidia-smi nvlink %s" % flag] = nv.stdout + extra
        _merge_nvlink(res, nv_texts)
    return res


def collect(
    capture_dir: Optional[str] = None,
    timeout: float = 30,
    use_nvml: bool = True,
    nvidia_smi: str = "nvidia-smi",
    pynvml_module: Any = None,
) -> Dict[str, Any]:
    """The ``gpu`` domain of docs/facts.md. Never raises: every failure is an error record."""
    try:
        if capture_dir:
            return collect_capture(capture_dir)
        deadline = time.monotonic() + float(timeout)
        nvml_errors = []
        if use_nvml:
            res = _nvml.collect(timeout=float(timeout), pynvml_module=pynvml_module)
            failure = res.pop("nvml_failure", None)
            if failure is None:
                _imex(res)
                return _domain(res)
            if failure.get("timed_out"):
                res["source"] = "nvml"
                res["errors"].append(
                    error_record(
                        DOMAIN, "timeout", "NVML timed out after %.1f s (driver hung?)" % float(timeout), "nvml"
                    )
                )
                return _domain(res)
            if pynvml_module is not None or "not installed" not in failure.get("error", ""):
                # NVML is there but failed (no driver, no library): say so, then try nvidia-smi.
                nvml_errors.append(error_record(DOMAIN, "tool_error", "NVML: %s" % failure.get("error"), "nvml"))
        res = _collect_smi(nvidia_smi, deadline)
        if nvml_errors and not res["gpus"]:
            res["errors"] = nvml_errors + res["errors"]
        _imex(res)
        return _domain(res)
    except Exception as exc:  # noqa: BLE001 - the collector boundary: a bug becomes an error record
        res = _nvsmi_xml.empty_result(None)
        res["errors"].append(error_record(DOMAIN, "internal", "%s: %s" % (type(exc).__name__, exc), None, "gpu"))
        return _domain(res)
