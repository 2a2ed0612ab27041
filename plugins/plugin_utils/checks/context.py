# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared context of the checks: ``Ctx`` (the findings of one node) and the fact accessors."""

from __future__ import annotations

import datetime
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import severity_rank


def as_str(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def as_num(value: Any) -> Optional[float]:
    t = type(value)
    if t is int or t is float:  # the common case (~800 calls a node): decoded JSON numbers
        return float(value)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def as_dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


class RateWindow(NamedTuple):
    """A counter reading window: the previous reading of the component, the one being built (checks write
    their counters into it) and the seconds between the two (None: no usable previous reading)."""

    prev: Dict[str, Any]
    cur: Dict[str, Any]
    interval: Optional[float]


_EXTRA = frozenset(("evidence", "bus_id", "serial", "raised_at"))


class Ctx:
    """Collects findings for one node, with side data (bus id, serial, time) for the state."""

    def __init__(self, host: str, policy: Dict[str, Any], now: datetime.datetime) -> None:
        self.host = host
        self.policy = policy
        self.now = now
        # the time the facts describe (collected_at; a capture analysed later): kernel-event/SEL windows and
        # escalation windows are relative to it. respond_by and first_seen use ``now``.
        self.ref = now
        self.findings: Dict[str, Dict[str, Any]] = {}
        self.meta: Dict[str, Dict[str, Any]] = {}

    def add(
        self,
        check: str,
        severity: str,
        component: str,
        code: Any,
        message: str,
        action: str,
        rule: str,
        **extra: Any,
    ) -> Dict[str, Any]:
        """Add one finding (a finding with the same id is kept when it is at least as severe).

        ``extra``: ``evidence`` (dict), and what the state remembers about the component: ``bus_id`` and
        ``serial`` (a GPU: escalation counts per serial, resets and replacements clear by them) and
        ``raised_at`` (the time of the event that raised it).
        """
        unknown = set(extra) - _EXTRA
        if unknown:
            raise TypeError("Ctx.add: unknown argument(s) %s" % ", ".join(sorted(unknown)))
        evidence = extra.get("evidence")
        code_s = as_str(code)
        fid = "%s:%s:%s:%s" % (self.host, check, component, code_s if code_s is not None else "")
        finding = {
            "check": check,
            "severity": severity,
            "component": component,
            "code": code_s,
            "message": message,
            "action": action,
            "rule": rule,
            "respond_by": None,
            "evidence": evidence or {},
            "host": self.host,
            "cause": None,
            "id": fid,
        }
        old = self.findings.get(fid)
        if old is not None and severity_rank(old["severity"]) <= severity_rank(severity):
            return old
        self.findings[fid] = finding
        self.meta[fid] = {k: extra.get(k) for k in ("bus_id", "serial", "raised_at")}
        return finding

    def for_gpu(self, gpu: Dict[str, Any], suffix: str = "", serial: bool = True):
        """An ``add`` for findings about ``gpu``: the component (``gpu_comp`` + ``suffix``, e.g. ``/nvlink3``),
        its bus id and (with ``serial``) its serial filled in when a finding is added (checks bind it for
        every GPU, most of which have nothing to report). The returned function takes ``(check, severity,
        code, message, action, rule, evidence=None)``."""

        def add(check: str, severity: str, code: Any, message: str, action: str, rule: str, evidence=None):
            where = {"bus_id": normalize_bus_id(gpu.get("bus_id"))}
            if serial:
                where["serial"] = as_str(gpu.get("serial"))
            comp = gpu_comp(gpu) + suffix
            return self.add(check, severity, comp, code, message, action, rule, evidence=evidence, **where)

        return add


# ------------------------------------------------------------------------------------------- helpers


def gpu_comp(gpu: Dict[str, Any]) -> str:
    idx = gpu.get("index")
    # an index placed by PCI order (a GPU nvidia-smi could not read) names the GPU in labels; the component stays
    # the bus-id form it has always had, so the finding's id does not change with what the kernel log holds
    if isinstance(idx, int) and not isinstance(idx, bool) and gpu.get("index_source") != "pci_order":
        return "gpu%d" % idx
    bus = normalize_bus_id(gpu.get("bus_id"))
    return "gpu:%s" % bus if bus else "gpu"


def gpu_label(gpu: Dict[str, Any]) -> str:
    idx = gpu.get("index")
    return "GPU %s (%s)" % ("?" if idx is None else idx, gpu.get("bus_id") or "bus id unknown")


def gpu_list(facts: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [g for g in as_list(as_dict(facts.get("gpu")).get("gpus")) if isinstance(g, dict)]


def gpu_by_bus(facts: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    out = {}
    for g in gpu_list(facts):
        bus = normalize_bus_id(g.get("bus_id"))
        if bus:
            out[bus] = g
    return out


def boot_id_of(facts: Dict[str, Any]) -> Optional[str]:
    for dom in ("node", "kernel", "ib"):
        b = as_dict(facts.get(dom)).get("boot_id")
        if b:
            return str(b)
    return None


def boot_time_of(facts: Dict[str, Any], host: str) -> Optional[datetime.datetime]:
    """Optional: node.boot_time / kernel.boot_time (not in facts v1), else Slurm's BootTime of this node."""
    for dom in ("node", "kernel"):
        t = parse_time(as_dict(facts.get(dom)).get("boot_time"))
        if t:
            return t
    n = slurm_node(facts, host)
    if n:
        return parse_time(n.get("boot_time"))
    return None


def collected_epoch(facts: Dict[str, Any], domain: Optional[Dict[str, Any]] = None) -> Optional[float]:
    if domain is not None:
        v = domain.get("collected_at")
        t = parse_time(v)
        if t:
            return t.timestamp()
    t = parse_time(facts.get("collected_at"))
    return t.timestamp() if t else None


def slurm_node(facts: Dict[str, Any], host: str) -> Optional[Dict[str, Any]]:
    names = {host, as_str(facts.get("hostname")), as_str(as_dict(facts.get("node")).get("hostname"))}
    names |= {n.split(".")[0] for n in list(names) if n}
    records = [n for n in as_list(as_dict(facts.get("slurm")).get("nodes")) if isinstance(n, dict)]
    for n in records:
        if as_str(n.get("name")) in names:
            return n
    if len(records) == 1 and facts.get("mode") == "capture":
        # a host's capture holds its own record, whatever NodeName Slurm gives it (scheduler notes the name)
        return records[0]
    return None


def slurm_record_name(facts: Dict[str, Any], host: str) -> Optional[str]:
    """The NodeName of the record :func:`slurm_node` takes as ``host``'s when it is another name (a capture's
    single record), else None."""
    n = slurm_node(facts, host) if isinstance(facts, dict) else None
    name = as_str(n.get("name")) if n else None
    if name is None or name in (host, host.split(".", maxsplit=1)[0]):
        return None
    return name


def sev_action(table: Dict[str, Any], key: Any) -> Optional[Tuple[str, str]]:
    if not isinstance(key, (str, int)) or isinstance(key, bool):
        return None
    row = table.get(key) if isinstance(table, dict) else None
    if not isinstance(row, dict):
        return None
    return row.get("severity", "P2"), row.get("action", "monitor")


def rate_base(prev: Dict[str, Any], boot_id: Optional[str], t: Optional[float]) -> Optional[float]:
    """Seconds since a usable previous reading (same boot), or None (start a new baseline)."""
    if not prev or t is None:
        return None
    pt = prev.get("collected_at")
    if not isinstance(pt, (int, float)) or t <= pt:
        return None
    if boot_id and prev.get("boot_id") and prev.get("boot_id") != boot_id:
        return None
    return t - pt
