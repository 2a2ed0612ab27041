# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# ruff: noqa: UP009, UP031 - the house header and %-formatting (Python 3.8 managed nodes) are intended
"""``nvidia-smi -q -x`` parser and the one GPU record normalizer of the ``gpu`` domain.

Every source (XML, ``nvidia-smi -q`` text, NVML) is first reduced to *fields*: a flat dict from the
nvidia-smi XML element path below ``<gpu>`` (``"temperature/gpu_temp"``) to the printed value (or a
Python value from NVML). :func:`record_from_fields` turns fields into the normalized record of
docs/facts.md (in ``_gpu_record``, re-exported here), so the three sources agree by construction.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    Records,
    clean,
    error_record,
    normalize_bus_id,
    to_int,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._gpu_record import (
    DOMAIN,
    RECOVERY_ACTIONS,
    THROTTLE_CONTAINERS,
    THROTTLE_NAMES,
    new_record,
    record_from_fields,
    recovery_action,
    unreadable_record,
)

#: the public names, some of them re-exported from the modules this one was split into
__all__ = [
    "DEVICE_ERROR_RE",
    "DOMAIN",
    "PARSER",
    "RECOVERY_ACTIONS",
    "THROTTLE_CONTAINERS",
    "THROTTLE_NAMES",
    "TOOL_ERROR_MARKERS",
    "empty_result",
    "fields_from_gpu_element",
    "finish",
    "new_record",
    "parse",
    "record_from_fields",
    "recovery_action",
    "scan_messages",
    "unreadable_record",
]

PARSER = "nvsmi_xml"
#: One-line driver errors printed instead of (or before) the output. Two spaces before "Reboot" are
#: real; "GPU0000:07:00.0" (no space) is real too.
DEVICE_ERROR_RE = re.compile(
    r"Unable to determine the device handle for (?:GPU|gpu)\s*"
    r"([0-9A-Fa-f]{0,8}:?[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}(?:\.[0-7])?)\s*:\s*(.*)$"
)
#: Whole-tool failures (no GPU can be read at all).
TOOL_ERROR_MARKERS = (
    "NVIDIA-SMI has failed",
    "Failed to initialize NVML",
    "No devices were found",
    "Driver/library version mismatch",
    "couldn't communicate with the NVIDIA driver",
    "Unable to determine the device handle",
    "Unknown Error",
    "GPU is lost",
    "NVML: ",
)

#: Subtrees of <gpu> that the record does not use (skipped for speed; processes are read apart).
_SKIP = frozenset(
    (
        "supported_clocks",
        "mig_devices",
        "processes",
        "accounted_processes",
        "applications_clocks",
        "default_applications_clocks",
        "deferred_clocks",
        "supported_gpu_target_temp",
        "encoder_stats",
        "fbc_stats",
        "bar1_memory_usage",
        "cc_protected_memory_usage",
        "inforom_version",
        "inforom_bbx_flush",
        "driver_model",
        "gpu_operation_mode",
        "ibmnpu",
        "platformInfo",
        "capabilities",
        "power_profiles",
    )
)


#: nvidia-smi nests at most 4 levels below <gpu>; deeper input is not nvidia-smi's and is cut off.
_MAX_DEPTH = 8


def _flatten(elem: Any, prefix: str, out: Dict[str, Any], depth: int = 0) -> None:
    if depth > _MAX_DEPTH:
        return
    for child in elem:
        tag = child.tag
        if not prefix and tag in _SKIP:
            continue
        if len(child):
            _flatten(child, prefix + tag + "/", out, depth + 1)
        else:
            out[prefix + tag] = child.text


def _processes(gpu: Any) -> List[Dict[str, Any]]:
    out = []
    procs = gpu.find("processes")
    if procs is None:
        return out
    for p in procs.iter("process_info"):
        out.append(
            {
                "pid": to_int(p.findtext("pid")),
                "name": clean(p.findtext("process_name")),
                "type": clean(p.findtext("type")),
                "used_mib": to_int(p.findtext("used_memory")),
            }
        )
    return out


def fields_from_gpu_element(gpu: Any) -> Dict[str, Any]:
    """Flat XML-path fields of one ``<gpu>`` element (the subtrees in _SKIP left out)."""
    out: Dict[str, Any] = {}
    _flatten(gpu, "", out)
    return out


def scan_messages(lines: List[str], source: Optional[str] = None) -> Dict[str, Any]:
    """Tool messages printed instead of output: unreadable GPUs and whole-tool errors.

    Returns ``{"unreadable": [(bus_id, message)], "tool_errors": [message]}``.
    """
    unreadable = []
    tool_errors = []
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        m = DEVICE_ERROR_RE.search(line)
        if m:
            unreadable.append((normalize_bus_id(m.group(1)), line))
            continue
        for marker in TOOL_ERROR_MARKERS:
            if marker in line:
                tool_errors.append(line[:500])
                break
    return {"unreadable": unreadable, "tool_errors": tool_errors}


def _strip_block(text: str, tag: str) -> str:
    """Remove every complete ``<tag>...</tag>`` block (the big supported_clocks lists) before parsing."""
    open_t, close_t = "<%s>" % tag, "</%s>" % tag
    if open_t not in text:
        return text
    parts = []
    pos = 0
    while True:
        i = text.find(open_t, pos)
        if i < 0:
            break
        j = text.find(close_t, i)
        if j < 0:
            break
        parts.append(text[pos:i])
        pos = j + len(close_t)
    parts.append(text[pos:])
    return "".join(parts)


def empty_result(source: Optional[str] = None) -> Dict[str, Any]:
    return {
        "source": source,
        "driver_version": None,
        "cuda_version": None,
        "timestamp": None,
        "count": None,
        "gpus": [],
        "errors": [],
    }


def finish(result: Dict[str, Any], messages: Dict[str, Any], source: Optional[str], parser: str) -> Dict[str, Any]:
    """Merge unreadable GPUs and tool errors into a parse result; assign indexes (PCI order)."""
    gpus = result["gpus"]
    known = {g["bus_id"] for g in gpus if g.get("bus_id")}
    for bus_id, msg in messages.get("unreadable", []):
        if bus_id is not None and bus_id in known:
            # The same GPU was also printed (partially): mark that record instead of adding one.
            for g in gpus:
                if g["bus_id"] == bus_id:
                    g["readable"] = False
                    g["error"] = msg
            continue
        gpus.append(unreadable_record(bus_id, msg))
        if bus_id is not None:
            known.add(bus_id)
    if any(not g["readable"] for g in gpus):
        gpus.sort(key=lambda g: (g["bus_id"] is None, g["bus_id"] or ""))
    # nvidia-smi numbers GPUs in PCI order. When it printed only error lines (it often aborts on the first GPU it
    # cannot read), the other GPUs are unknown and so is the position of the lost one: its index stays None
    # (the policy then names it by bus id) rather than a guess.
    enumerated = any(g["readable"] for g in gpus)
    for i, g in enumerate(gpus):
        g["index"] = i if enumerated else None
        if g["readable"] is False:
            result["errors"].append(
                error_record(DOMAIN, "unreadable", "GPU %s: %s" % (g["bus_id"] or "?", g["error"]), source, parser)
            )
        if g["driver_version"] is None:
            g["driver_version"] = result["driver_version"]
        if g["cuda_version"] is None:
            g["cuda_version"] = result["cuda_version"]
    for msg in messages.get("tool_errors", []):
        result["errors"].append(error_record(DOMAIN, "tool_error", msg, source, parser))
    if result["count"] is None and gpus:
        result["count"] = len(gpus)
    if result["count"] is None and any("No devices were found" in m for m in messages.get("tool_errors", [])):
        result["count"] = 0
    return result


#: Top-level elements of ``<nvidia_smi_log>`` kept in the result: result key and converter.
_TOP_LEVEL = {
    "driver_version": ("driver_version", clean),
    "cuda_version": ("cuda_version", clean),
    "attached_gpus": ("count", to_int),
    "timestamp": ("timestamp", clean),
}


def _whole_document(body: str) -> Any:
    """The root element of ``body`` when it is one well-formed XML document; else None."""
    try:
        return ET.fromstring(body)
    except ET.ParseError:
        return None


class _Pull:
    """Streams one ``<nvidia_smi_log>`` document: each ``<gpu>`` is normalized (and dropped) at its end tag."""

    def __init__(self, result: Dict[str, Any], source: Optional[str]) -> None:
        self.result = result
        self.source = source
        self.records = Records(PARSER, source, DOMAIN, result["errors"])
        self.root: Any = None
        self.depth = 0
        self.gpu_index = 0
        self.closing = False

    def run(self, body: str, chunk: int) -> None:
        # the common case, a whole document: one parse in C and a walk over the root's children, ~2x faster than
        # the stream below, whose events each cost a Python call; only a document that does not parse goes through
        # the stream (which keeps the complete GPUs before a cut)
        root = _whole_document(body)
        if root is not None:
            self.whole(root)
            return
        parser = ET.XMLPullParser(events=("start", "end"))
        for pos in range(0, len(body), chunk):
            parser.feed(body[pos : pos + chunk])
            for event, elem in parser.read_events():
                self.event(event, elem)
        self.closing = True
        parser.close()
        list(parser.read_events())

    def whole(self, root: Any) -> None:
        """The top-level elements of a parsed document, in document order (what the stream's end events give)."""
        if root.tag != "nvidia_smi_log":
            raise ParseError("root element is <%s>, not <nvidia_smi_log>" % root.tag, PARSER, self.source)
        self.root = root
        for elem in list(root):
            self.top_level(elem)

    def top_level(self, elem: Any) -> None:
        if elem.tag == "gpu":
            self.gpu(elem)
        elif elem.tag in _TOP_LEVEL:
            key, convert = _TOP_LEVEL[elem.tag]
            self.result[key] = convert(elem.text)

    def event(self, event: str, elem: Any) -> None:
        if event == "start":
            self.depth += 1
            if self.depth == 1:
                self.root = elem
                if elem.tag != "nvidia_smi_log":
                    raise ParseError("root element is <%s>, not <nvidia_smi_log>" % elem.tag, PARSER, self.source)
            return
        self.depth -= 1
        if self.depth == 1:
            self.top_level(elem)

    def gpu(self, elem: Any) -> None:
        with self.records.at(None):  # one GPU that cannot be normalized costs that GPU only
            fields = fields_from_gpu_element(elem)
            rec = record_from_fields(fields, index=self.gpu_index, bus_id=elem.get("id"), processes=_processes(elem))
            self.result["gpus"].append(rec)
        self.gpu_index += 1
        if self.root is not None:
            self.root.remove(elem)


def _document(text: str, start: int) -> Tuple[str, List[str], int]:
    """The XML document of ``text`` from ``start``, the lines around it, and the line it starts on."""
    outside: List[str] = text[:start].splitlines() if start > 0 else []
    end = text.rfind("</nvidia_smi_log>")
    body = text[start:]
    if end >= 0:
        tail = text[end + len("</nvidia_smi_log>") :]
        if tail.strip():
            outside.extend(tail.splitlines())
        body = text[start : end + len("</nvidia_smi_log>")]
    body = _strip_block(body, "supported_clocks")
    if "Unable to determine" in body:
        # An error line captured into the middle of the document (2>&1) is XML character data: find it.
        outside.extend(ln for ln in body.splitlines() if DEVICE_ERROR_RE.search(ln))
    return body, outside, text.count("\n", 0, start)


def _xml_error(exc: ET.ParseError, pull: _Pull, line_offset: int) -> ParseError:
    line = getattr(exc, "position", (None, None))[0]
    line = line + line_offset if line is not None else None
    what = "truncated" if pull.closing or "no element found" in str(exc) else "malformed"
    msg = "%s nvidia-smi XML after %d complete GPU(s): %s" % (what, len(pull.result["gpus"]), exc)
    return ParseError(msg, PARSER, pull.source, line)


def parse(text: str, source: Optional[str] = None, chunk: int = 1 << 16) -> Dict[str, Any]:
    """Parse ``nvidia-smi -q -x`` output into ``{source, driver_version, cuda_version, count, gpus, errors}``.

    Parsed incrementally: each ``<gpu>`` is normalized when its end tag arrives, so output cut
    inside the Nth GPU still yields the N-1 complete GPUs; the cut raises ParseError whose
    ``partial`` carries them. Error lines printed before/after the XML become unreadable GPUs or
    tool errors. Raises ParseError for input that is neither XML nor a known message.
    """
    result = empty_result(source)
    if not isinstance(text, str):
        raise ParseError("input is not text", PARSER, source)
    start = text.find("<?xml")
    if start < 0:
        start = text.find("<nvidia_smi_log")
    if start < 0:
        messages = scan_messages(text.splitlines(), source)
        if not messages["unreadable"] and not messages["tool_errors"]:
            if not text.strip():
                raise ParseError("empty output", PARSER, source, 1)
            raise ParseError("not nvidia-smi XML output: %r" % text.strip()[:120], PARSER, source, 1)
        return finish(result, messages, source, PARSER)
    body, outside, line_offset = _document(text, start)
    if not body.isascii():
        # a lone surrogate (text that was never UTF-8) would make the XML parser's encoder raise: replaced first
        body = body.encode("utf-8", "replace").decode("utf-8")
    if "<!ENTITY" in body:
        # nvidia-smi never declares entities; the XML parser would expand them (billion laughs: 10^9 copies,
        # refused by expat >= 2.4 only, and a managed node may have an older one): refused before parsing
        raise ParseError("refused: the document declares XML entities (<!ENTITY)", PARSER, source)
    messages = scan_messages(outside, source) if outside else {"unreadable": [], "tool_errors": []}
    pull = _Pull(result, source)
    error: Optional[ParseError] = None
    try:
        pull.run(body, chunk)
    except ET.ParseError as exc:
        error = _xml_error(exc, pull, line_offset)
    except ParseError as exc:
        error = exc
    if error is not None:
        error.partial = finish(result, messages, source, PARSER)
        raise error
    return finish(result, messages, source, PARSER)
