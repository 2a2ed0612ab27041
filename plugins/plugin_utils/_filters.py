# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The glue between the Jinja filters (``plugins/filter/``) and the node-side parsers (``plugins/module_utils``).

Each ``*_domain`` function turns raw tool output into the dict the fact module returns for that domain
(docs/facts.md), through the collectors' own functions, so a filter and a module cannot disagree: a malformed
record or a truncation is a ``parse`` entry in ``errors`` next to what was parsed, as the modules report it.
:func:`finish` then applies a filter's ``strict`` option: a ``parse`` (or ``internal``) entry raises
AnsibleFilterError with the parser's own message (parser, source:line, message) and how much was parsed. What
the tool itself reported (a GPU the driver cannot read, ``No devices were found``, ``ibpanic``, a dcgmi error) is
evidence, not broken input: it stays in ``errors`` either way.

Controller side: Ansible imports are allowed here.
"""

from __future__ import annotations

import datetime
import json
from typing import Any, Callable, Dict, List, Optional

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    bmc as _bmc,
    dcgm as _dcgm,
    gpu as _gpu,
    ib as _ib,
    kernel_events as _kernel_events,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import (
    ib as _ib_parse,
    nvlink as _nvlink,
    nvsmi_text as _nvsmi_text,
    nvsmi_xml as _nvsmi_xml,
    slurm as _slurm_parse,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._common import MAX_INPUT_BYTES, ParseError, error_record
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import plain

#: Error kinds that mean "this input could not be parsed" (strict filters raise on them).
BROKEN_KINDS = ("parse", "internal")


def fail(name: str, message: str) -> AnsibleFilterError:
    """The error a filter raises: its FQCN first, then what is wrong."""
    return AnsibleFilterError("gpuops.cluster.%s: %s" % (name, message))


def text_arg(name: str, value: Any, what: str) -> str:
    """The filter's input as text, or a clear error (a registered result instead of its stdout, None, ...)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        hint = " (pass its .stdout)" if isinstance(value, dict) and "stdout" in value else ""
        raise fail(name, "expects the text of %s, got %s%s" % (what, type(value).__name__, hint))
    if len(value) > MAX_INPUT_BYTES:
        raise fail(name, "input of %d characters is over the %d limit" % (len(value), MAX_INPUT_BYTES))
    return value


def str_option(name: str, option: str, value: Any) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    raise fail(name, "%s must be a string, got %s" % (option, type(value).__name__))


def bool_option(name: str, option: str, value: Any) -> bool:
    try:
        return boolean(value, strict=True)
    except TypeError as exc:
        raise fail(name, "%s must be a boolean: %s" % (option, exc)) from None


def int_option(name: str, option: str, value: Any, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise fail(name, "%s must be an integer, got %r" % (option, value))
    try:
        number = int(value)
    except ValueError:
        raise fail(name, "%s must be an integer, got %r" % (option, value)) from None
    if number < minimum:
        raise fail(name, "%s must be %d or more, got %d" % (option, minimum, number))
    return number


def time_option(name: str, option: str, value: Any) -> Optional[datetime.datetime]:
    """An ISO time option (None when not given); a value that is not a time is an error, never ignored."""
    if value is None:
        return None
    parsed = parse_time(value, assume_utc=False) if isinstance(value, str) else None
    if parsed is None:
        raise fail(name, "%s is not an ISO time: %r" % (option, value))
    return parsed


def document(name: str, data: Any) -> Any:
    """A JSON document given as text (``lookup('file', 'report.json')``) parsed; anything else as plain data."""
    if isinstance(data, (str, bytes)):
        try:
            return _safejson.loads(data, what="the document")
        except ValueError as exc:  # not JSON, or nested too deep / too large (_safejson)
            raise fail(name, "input text is not JSON (a report.json document): %s" % exc) from None
    return plain(data)


def _empty_input(result: Dict[str, Any], domain: str, parser: str, label: str) -> Dict[str, Any]:
    result["errors"].append(error_record(domain, "parse", "empty input: no output to parse", label, parser, 1))
    return result


def finish(name: str, result: Dict[str, Any], strict: bool, parsed: str) -> Dict[str, Any]:
    """``result`` itself, unless ``strict`` and the input could not be parsed (then AnsibleFilterError).

    ``parsed`` names the key whose length says how much was parsed besides the error (``gpus``, ``events``...).
    """
    if not strict:
        return result
    broken = [e for e in result.get("errors") or [] if e.get("kind") in BROKEN_KINDS]
    if not broken:
        return result
    first = broken[0]
    where = first.get("source") or "<input>"
    if first.get("line") is not None:
        where = "%s:%s" % (where, first["line"])
    msg = "%s: %s: %s" % (first.get("parser") or first.get("domain") or "parser", where, first.get("message"))
    if len(broken) > 1:
        msg += " (and %d more parse error%s)" % (len(broken) - 1, "" if len(broken) == 2 else "s")
    count = len(result.get(parsed) or [])
    msg += " (partial result: %d in '%s'; strict=false returns it with the error in 'errors')" % (count, parsed)
    raise fail(name, msg)


# ------------------------------------------------------------------------------------------- the gpu domain
def looks_like_xml(text: str) -> bool:
    """``nvidia-smi -q -x`` output (else ``nvidia-smi -q`` text)."""
    return "<?xml" in text or "<nvidia_smi_log" in text


def gpu_domain(text: str, source: Optional[str], nvlink: Optional[str] = None) -> Dict[str, Any]:
    """The ``gpu`` domain from ``nvidia-smi -q -x`` or ``nvidia-smi -q`` output (which is detected), optionally
    with ``nvidia-smi nvlink -s``/``-e`` output merged in, as gpu_info builds it."""
    xml = looks_like_xml(text)
    label = source or ("nvidia-smi-xml" if xml else "nvidia-smi-text")
    errors: List[Dict[str, Any]] = []
    result = _gpu._parse_smi(text, _nvsmi_xml.parse if xml else _nvsmi_text.parse, label, errors)
    result["source"] = label
    result["errors"] = errors + result["errors"]
    if nvlink is not None:
        _gpu._merge_nvlink(result, {"nvidia-smi nvlink": nvlink})
    return _gpu._domain(result)


def nvlink_domain(text: str, source: Optional[str]) -> Dict[str, Any]:
    """``nvidia-smi nvlink -s``/``-e`` (or ``dcgmi nvlink -e``) output: ``{source, gpus, errors}``, each GPU
    ``{index, name, uuid, nvlink: {links, error}}`` (``nvlink`` as in gpu_info's GPU records)."""
    label = source or "nvidia-smi nvlink"
    result: Dict[str, Any] = {"source": label, "gpus": [], "errors": []}
    if not text.strip():
        return _empty_input(result, _nvlink.DOMAIN, _nvlink.PARSER, label)
    try:
        parsed = _nvlink.parse(text, label, result["errors"])
    except ParseError as exc:
        result["errors"].append(exc.to_error(_nvlink.DOMAIN))
        parsed = exc.partial if isinstance(exc.partial, dict) else {}
    result["gpus"] = [{"index": i, "name": g["name"], "uuid": g["uuid"]} for i, g in sorted(parsed.items())]
    _nvlink.merge(result["gpus"], parsed)  # by index: every entry matches its own stub
    return result


# ------------------------------------------------------------------------------------------ the kernel domain
def kernel_domain(
    text: str,
    source: Optional[str],
    since: Optional[str],
    gpus: Any,
    max_events: int,
    ref_time: Optional[datetime.datetime],
) -> Dict[str, Any]:
    """The ``kernel`` domain from dmesg / journalctl / syslog text, as kernel_events_info builds it."""
    label = source or "kernel-log"
    result = _kernel_events._empty(label, since, None)
    ref = ref_time or datetime.datetime.now()
    _kernel_events._finish(result, text, label, ref, gpus, max_events, since is not None)
    return result


# ---------------------------------------------------------------------------------------------- the ib domain
def is_ibstatus(text: str) -> bool:
    return any(_ib_parse._IBSTATUS_RE.match(line) for line in text.splitlines())


def ib_domain(text: str, source: Optional[str]) -> Dict[str, Any]:
    """The ``ib`` domain from ``ibstat`` (or ``ibstatus``) output, as infiniband_info builds it."""
    ibstatus = is_ibstatus(text) and not any(_ib_parse._CA_RE.match(line) for line in text.splitlines())
    label = source or ("ibstatus" if ibstatus else "ibstat")
    out = _ib._result(label)
    if not text.strip():
        return _empty_input(out, _ib.DOMAIN, "ibstatus" if ibstatus else "ibstat", label)
    if ibstatus:
        try:
            out["hcas"] = _ib_parse.parse_ibstatus(text, label, out["errors"])
        except ParseError as exc:
            out["errors"].append(exc.to_error(_ib.DOMAIN))
    else:
        _ib._ibstat_into(out, text, "", label)
    return out


# --------------------------------------------------------------------------------------------- the bmc domain
def bmc_listing(text: str, source: Optional[str], key: str, parser: str) -> Dict[str, Any]:
    """One ipmitool listing (``key``: ``sensors`` or ``sel``) as bmc_info parses it: ``{source, <key>, errors}``."""
    label = source or parser.replace("_", "-")
    result: Dict[str, Any] = {"source": label, key: [], "errors": []}
    if not text.strip():
        return _empty_input(result, _bmc.DOMAIN, parser, label)
    _bmc._apply(result, key, text, label)
    return result


# ------------------------------------------------------------------------------------------- the slurm domain
def slurm_domain(value: Any, source: Optional[str]) -> Dict[str, Any]:
    """``scontrol show node`` output (multi-line or ``-o``), or its ``--json`` form (text or parsed):
    ``{source, nodes, errors}`` as the ``slurm`` domain of collect_info."""
    label = source or "scontrol"
    result: Dict[str, Any] = {"source": label, "nodes": [], "errors": []}
    domain, parser = _slurm_parse.DOMAIN, _slurm_parse.PARSER
    try:
        if isinstance(value, str) and value.lstrip().startswith("{"):
            try:
                value = _safejson.loads(value, what="scontrol JSON")
            except ValueError as exc:  # not JSON, or nested too deep / too large (_safejson)
                raise ParseError("invalid scontrol JSON: %s" % exc, parser, label) from None
        if isinstance(value, dict):
            result["nodes"] = _slurm_parse.parse_json_nodes(value, label)
        elif not value.strip():
            return _empty_input(result, domain, parser, label)
        else:
            result["nodes"] = _slurm_parse.parse_show_node(value, label, result["errors"])
    except ParseError as exc:
        result["errors"].append(exc.to_error(domain))
        if isinstance(exc.partial, list):
            result["nodes"] = exc.partial
    return result


# -------------------------------------------------------------------------------------------- the dcgm domain
def dcgm_domain(value: Any, source: Optional[str]) -> Dict[str, Any]:
    """``dcgmi diag`` text or ``dcgmi diag -j`` JSON (text or parsed), as dcgm_diag_info builds the domain."""
    label = source or "dcgmi"
    text = json.dumps(value) if isinstance(value, dict) else value
    if not text.strip():
        return _empty_input(_dcgm._result(label, None), _dcgm.DOMAIN, _dcgm.PARSER, label)
    return _dcgm.from_text(text, label, None)


def run(name: str, build: Callable[[], Dict[str, Any]], strict: Any, parsed: str) -> Dict[str, Any]:
    """Build a domain and apply ``strict``; a parser bug becomes a clear filter error, never a traceback."""
    strict = bool_option(name, "strict", strict)
    try:
        result = build()
    except AnsibleFilterError:
        raise
    except Exception as exc:  # noqa: BLE001 - the filter boundary: a parser bug is reported, not a traceback
        raise fail(name, "internal error while parsing: %s: %s" % (type(exc).__name__, exc)) from exc
    return finish(name, result, strict, parsed)


def text_or_mapping(name: str, data: Any, what: str) -> Any:
    """A filter's input that may be a mapping (a JSON document already loaded) or the text of ``what``."""
    if isinstance(data, dict) or hasattr(data, "items"):
        return plain(data)
    return text_arg(name, data, what)


def parse_filter(
    name: str, value: Any, source: Any, strict: Any, domain: Callable[[Any, Optional[str]], Dict[str, Any]], parsed: str
) -> Dict[str, Any]:
    """The rest of a parser filter once its input is read: its ``source`` option, then ``domain(value, source)``
    under :func:`run` (``parsed``: the key that counts what was read)."""
    src = str_option(name, "source", source)
    return run(name, lambda: domain(value, src), strict, parsed)
