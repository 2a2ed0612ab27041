# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the cluster platform facts of an inspection come from (issue 19), for ``inspect_cluster``.

Inventory variables (read from the targets' host variables, normally set for ``all``):
``gpuops_cluster_capture_dir`` (a cluster capture directory, read on the controller; relative paths are relative to
the inventory directory), else ``gpuops_scheduler_host`` and ``gpuops_storage_probe_host`` (hosts on which the
inspect playbook ran ``gpuops.cluster.platform_info`` once and registered ``__inspect_platform``). A host that
was not reached is a collector error of the platform (unknown), never a scheduler finding.

Pure Python over plain data; runs on the controller.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import error_record
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.platform import SCHEMA, collect_platform


def _first(hostvars: Any, targets: List[str], key: str) -> Optional[str]:
    for host in targets:
        hv = hostvars.get(host) or {}
        value = hv.get(key)
        if value not in (None, ""):
            return str(value)
    return None


def platform_hosts(hostvars: Any, targets: List[str], capture_path: Callable[..., Any]) -> Dict[str, Any]:
    """``{"capture_dir", "scheduler", "storage", "hosts"}``: ``hosts`` are those to run platform_info on (none
    with a cluster capture directory)."""
    capture = None
    for host in targets:
        capture = capture_path(hostvars.get(host) or {}, "gpuops_cluster_capture_dir")
        if capture:
            break
    sched = _first(hostvars, targets, "gpuops_scheduler_host")
    storage = _first(hostvars, targets, "gpuops_storage_probe_host")
    hosts: List[str] = []
    if not capture:
        hosts = [h for h in (sched, storage) if h]
        hosts = sorted(set(hosts), key=hosts.index)
    return {"capture_dir": capture, "scheduler": sched, "storage": storage, "hosts": hosts}


def _registered(hostvars: Any, host: str, var: str) -> Dict[str, Any]:
    """The platform facts a host registered, or facts carrying the error of why there are none."""
    reg = (hostvars.get(host) or {}).get(var)
    if isinstance(reg, dict) and isinstance(reg.get("platform"), dict) and not reg.get("unreachable"):
        return dict(reg["platform"])
    why = "no result"
    if isinstance(reg, dict):
        why = str(reg.get("msg") or ("unreachable" if reg.get("unreachable") else "failed"))
    return {
        "schema": SCHEMA,
        "mode": "live",
        "scheduler": None,
        "storage": None,
        "errors": [error_record("platform", "tool_error", "platform_info on %s: %s" % (host, why), host)],
    }


def platform_facts(
    hostvars: Any,
    targets: List[str],
    capture_path: Callable[..., Any],
    var: str = "__inspect_platform",
    plan: Optional[Dict[str, Any]] = None,
) -> Optional[Dict[str, Any]]:
    """The inspection's platform facts; None when no platform source is configured. ``plan``: what
    :func:`platform_hosts` gave the plan of this run (else worked out here: it may read every target's variables)."""
    plan = plan if plan is not None else platform_hosts(hostvars, targets, capture_path)
    if plan["capture_dir"]:
        return collect_platform(capture_dir=plan["capture_dir"])
    if not plan["hosts"]:
        return None
    out: Dict[str, Any] = {"schema": SCHEMA, "mode": "live", "scheduler": None, "storage": None, "errors": []}
    if plan["scheduler"]:
        got = _registered(hostvars, plan["scheduler"], var)
        out.update(scheduler=got.get("scheduler"), collected_at=got.get("collected_at"))
        out["errors"] += [e for e in got.get("errors") or [] if not plan["storage"] or e.get("domain") != "storage"]
        if not plan["storage"]:
            out["storage"] = got.get("storage")
    if plan["storage"]:
        got = _registered(hostvars, plan["storage"], var)
        out["storage"] = got.get("storage")
        out["errors"] += [e for e in got.get("errors") or [] if e.get("domain") != "scheduler"]
        out.setdefault("collected_at", got.get("collected_at"))
    return out
