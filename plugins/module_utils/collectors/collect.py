# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One consolidated collection per node: every fact domain in one call (docs/facts.md, aggregate).

Used by the ``gpuops.cluster.collect_info`` module on live nodes and, in-process on the controller, by the
inspection's offline path for capture directories (no module fork per host). No Ansible imports.
"""

from __future__ import annotations

import inspect
import os
import socket
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from ansible_collections.gpuops.cluster.plugins.module_utils import _evidence_time
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import capture as _capture
from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    error_record,
    internal_error,
    normalize_bus_id,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow_iso

SCHEMA = "gpuops.facts/v1"

ALL_DOMAINS = ("gpu", "kernel", "ib", "bmc", "dcgm", "slurm", "node")
#: what a live inspection collects by default (dcgm diag is burn-in work, not inspection)
DEFAULT_LIVE_DOMAINS = ("gpu", "kernel", "ib", "bmc", "slurm", "node")


def _import_domain(domain: str) -> Any:
    """The module_utils module holding ``domain``'s collect(), imported on first use.

    Function-level imports on purpose: AnsiballZ bundles every module_utils import it finds anywhere in the
    source (nested ones included), so collect_info still ships every collector, while Python loads only the
    requested domains' parsers (a node run pays the start-up of what it collects, docs/performance.md).
    """
    if domain == "gpu":
        from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import gpu as module
    elif domain == "kernel":
        from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import kernel_events as module
    elif domain == "ib":
        from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import ib as module
    elif domain == "bmc":
        from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import bmc as module
    elif domain == "dcgm":
        from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import dcgm as module
    elif domain == "slurm":
        from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import slurm as module
    elif domain == "node":
        from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import node as module
    else:
        raise KeyError(domain)
    return module


class _DomainModules(dict):
    """domain -> module_utils module holding its collect(), filled on first use (see :func:`_import_domain`)."""

    def __missing__(self, domain: str) -> Any:
        module = _import_domain(domain)
        self[domain] = module
        return module


#: domain -> module_utils module holding its collect() (lazy: an entry is imported when first read)
DOMAIN_MODULES: Dict[str, Any] = _DomainModules()
#: the module attributes this module had while it imported every collector up front (``_collect._bmc``)
_DOMAIN_ATTRS = {
    "_gpu": "gpu",
    "_kernel_events": "kernel",
    "_ib": "ib",
    "_bmc": "bmc",
    "_dcgm": "dcgm",
    "_slurm_parse": "slurm",
    "_node": "node",
}


def __getattr__(name: str) -> Any:
    if name in _DOMAIN_ATTRS:
        return DOMAIN_MODULES[_DOMAIN_ATTRS[name]]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


_cache: Dict[str, Callable[..., Dict[str, Any]]] = {}
_params: Dict[str, Sequence[str]] = {}


def _collector(domain: str) -> Callable[..., Dict[str, Any]]:
    fn = _cache.get(domain)
    if fn is None:
        fn = DOMAIN_MODULES[domain].collect
        _cache[domain] = fn
        try:
            named = tuple(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            named = ()
        # keyword options a collector takes through **kwargs (bmc: its connection) are listed next to it
        _params[domain] = named + tuple(getattr(DOMAIN_MODULES[domain], "CONNECTION_KEYS", ()))
    return fn


def collector_spec(timeout: float = 30, **options: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The argument spec of a ``*_info`` module: ``capture_dir`` and ``timeout`` (doc fragment ``common``) + options."""
    spec: Dict[str, Dict[str, Any]] = {
        "capture_dir": {"type": "path"},
        "timeout": {"type": "float", "default": timeout},
    }
    spec.update(options)
    return spec


def pick(params: Dict[str, Any], *names: str, **values: Any) -> Dict[str, Any]:
    """The keyword arguments of a collector: module ``params`` by ``names``, plus computed ``values``."""
    kwargs = {name: params[name] for name in names}
    kwargs.update(values)
    return kwargs


def boundary(
    domain: str, fn: Callable[..., Any], empty: Optional[Dict[str, Any]] = None, **kwargs: Any
) -> Dict[str, Any]:
    """The collector error boundary: ``fn(**kwargs)``, or, when it raises, ``empty`` with an error record.

    Every ``*_info`` module and :func:`collect_all` call collectors through here, so a bug in a collector is a
    ``collector.error`` finding (kind ``internal``, naming ``domain``), never a traceback.
    """
    try:
        result = fn(**kwargs)
        if not isinstance(result, dict):
            raise TypeError("collect() returned %s" % type(result).__name__)
        result.setdefault("errors", [])
        return result
    except ParseError as exc:
        error = exc.to_error(domain)
    except Exception as exc:  # noqa: BLE001 - the module boundary: report, never raise
        error = internal_error(domain, exc)
    result = dict(empty or {})
    result.update(source=None, errors=[error])
    return result


def _call(domain: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """Run one domain's collect() through :func:`boundary`, with the keyword arguments it accepts."""
    try:
        fn = _collector(domain)
    except Exception as exc:  # noqa: BLE001 - the module boundary: report, never raise
        return {"source": None, "errors": [internal_error(domain, exc)]}
    accepted = _params.get(domain) or ()
    return boundary(domain, fn, **{k: v for k, v in kwargs.items() if k in accepted and v is not None})


def collect_all(
    capture_dir: Optional[str] = None,
    domains: Optional[Sequence[str]] = None,
    timeout: float = 30.0,
    options: Optional[Dict[str, Dict[str, Any]]] = None,
) -> Dict[str, Any]:
    """Collect every requested domain, live or from ``capture_dir``.

    ``options`` holds per-domain keyword arguments for that domain's collect() (unknown ones are ignored),
    e.g. ``{"node": {"mounts": ["/lustre"]}, "bmc": {"mode": "inband"}, "kernel": {"since": "..."}}``.
    """
    options = options or {}
    wanted = list(domains) if domains else list(DEFAULT_LIVE_DOMAINS if not capture_dir else ALL_DOMAINS)
    unknown = [d for d in wanted if d not in ALL_DOMAINS and d not in DOMAIN_MODULES]
    facts: Dict[str, Any] = {
        "schema": SCHEMA,
        "collected_at": utcnow_iso(),
        "mode": "capture" if capture_dir else "live",
        "capture_dir": capture_dir,
        "hostname": None,
        "errors": [],
    }
    meta: Dict[str, Any] = {}
    facts["evidence_time"], facts["evidence_time_source"] = facts["collected_at"], _evidence_time.SOURCE_LIVE
    if capture_dir:
        if not os.path.isdir(capture_dir):
            # nothing can be read: every domain stays absent (unknown), never "0 GPUs" (docs/findings.md)
            what = "is not a directory" if os.path.lexists(capture_dir) else "does not exist"
            facts["errors"].append(
                error_record("capture", "missing", "capture directory %s" % what, source=capture_dir)
            )
            # not a live collection: the time is the inspection's, and the label says which directory was missing
            facts["evidence_time_source"] = "%s: capture directory %s %s" % (
                _evidence_time.SOURCE_NONE_READ,
                capture_dir,
                what,
            )
            return facts
        meta = _capture.meta_or_error(capture_dir, facts["errors"], "capture")
        facts["hostname"] = meta.get("hostname")
        if meta.get("captured_at"):
            facts["collected_at"] = meta["captured_at"]
    else:
        facts["hostname"] = socket.gethostname()
    for d in unknown:
        facts["errors"].append(error_record("collect", "internal", "unknown domain %r" % d))
    timings: Dict[str, float] = {}
    order = [d for d in ALL_DOMAINS if d in wanted]
    dated = bool(capture_dir) and bool(meta.get("captured_at"))
    if capture_dir and not dated and "kernel" in order:
        # no capture time: read the dated evidence first, so that year-less syslog stamps resolve against it
        order = [d for d in order if d != "kernel"] + ["kernel"]
    for domain in order:
        kwargs: Dict[str, Any] = {"capture_dir": capture_dir, "timeout": timeout}
        kwargs.update(options.get(domain) or {})
        if domain == "kernel" and "gpus" not in kwargs and isinstance(facts.get("gpu"), dict):
            kwargs["gpus"] = [
                {"index": g.get("index"), "bus_id": g.get("bus_id")} for g in facts["gpu"].get("gpus") or []
            ]
        if domain == "kernel" and capture_dir and not dated:
            kwargs.setdefault("ref", _evidence_time.newest(_candidates(facts, capture_dir, ("kernel",)))[0])
        if domain == "slurm" and "node" not in kwargs:
            kwargs["node"] = facts["hostname"]
        t0 = time.perf_counter()
        result = _call(domain, kwargs)
        timings[domain] = round(time.perf_counter() - t0, 4)
        facts[domain] = result
    for domain in (d for d in ALL_DOMAINS if d in facts):
        facts[domain] = facts.pop(domain)  # the documented domain order, whatever order they were read in
        facts["errors"].extend(e for e in facts[domain].get("errors") or [] if isinstance(e, dict))
    if capture_dir:
        facts["evidence_time"], facts["evidence_time_source"] = _evidence_time.resolve(
            meta, _candidates(facts, capture_dir)
        )
        facts["collected_at"] = facts["evidence_time"]
    if capture_dir and not any(isinstance(facts.get(d), dict) and facts[d].get("source") for d in wanted):
        # a directory without evidence (a wrong path one level up, an empty attachment): say so once
        facts["errors"].append(
            error_record(
                "capture", "missing", "no evidence file of docs/capture.md in the capture directory", capture_dir
            )
        )
    _indexes_from_pci_order(facts)
    if not facts["hostname"]:
        facts["hostname"] = (facts.get("node") or {}).get("hostname")
    facts["timings"] = timings
    return facts


def _candidates(facts: Dict[str, Any], capture_dir: str, skip: Sequence[str] = ()) -> List[Any]:
    """The dated evidence of a capture (``_evidence_time.fact_times`` + the nvidia-smi headers)."""
    return list(_evidence_time.fact_times(facts, tuple(skip))) + list(_evidence_time.header_times(capture_dir))


def required_sources_missing(facts: Dict[str, Any], required: List[str]) -> List[str]:
    """Domains in ``required`` that produced no data at all (source null)."""
    return [d for d in required if not (facts.get(d) or {}).get("source")]


def _indexes_from_pci_order(facts: Dict[str, Any]) -> None:
    """Give a GPU nvidia-smi could not enumerate (index None: it printed only "Unable to determine the device
    handle for GPU <bus>") the index its bus id has: nvidia-smi numbers a node's GPUs in PCI bus order, and the
    driver's probe lines (``kernel.gpus_probed``) list every GPU of the node. Only when every GPU whose index is
    known sits at that position in the order (else the order is not nvidia-smi's, and the index stays None);
    such a GPU is marked ``index_source: pci_order``."""
    gpus = [g for g in ((facts.get("gpu") or {}).get("gpus") or []) if isinstance(g, dict)]
    unknown = [g for g in gpus if g.get("index") is None and normalize_bus_id(g.get("bus_id"))]
    probed = (facts.get("kernel") or {}).get("gpus_probed") if isinstance(facts.get("kernel"), dict) else None
    if not unknown or not isinstance(probed, list):
        return
    order = sorted({b for b in (normalize_bus_id(x) for x in probed) if b})
    position = {bus: i for i, bus in enumerate(order)}
    for g in gpus:
        idx = g.get("index")
        if idx is not None and position.get(normalize_bus_id(g.get("bus_id"))) != idx:
            return
    if len(gpus) > len(order) or any(normalize_bus_id(g.get("bus_id")) not in position for g in unknown):
        return  # a GPU nvidia-smi names that the driver's lines do not: the order is incomplete
    for g in unknown:
        g["index"] = position[normalize_bus_id(g.get("bus_id"))]
        g["index_source"] = "pci_order"
