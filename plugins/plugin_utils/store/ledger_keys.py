# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What names a fault in the ledger (docs/service.md "One fault, one incident"), shared by the inspection's
``record_run`` (``ledger``) and the real-time entry ``record_realtime`` (``ledger_incidents``), so that one fault
seen by an alert and by an inspection has one fingerprint and one component class.

- :func:`fingerprint`: ``<host>|<finding id>`` (a node finding's id is ``host:check:component:code``, the checks'
  ``Ctx.add``; a cluster finding's ``cluster:check:component:code``).
- :func:`component_class`: the contract's component classes from a check id.
- :func:`windows_in_force`: the ledger's maintenance windows covering hosts at a time (the real-time path does not
  act in them).
- :func:`realtime_event`: one real-time event (an alert, a health-check drain) validated field by field: full-match
  patterns, no guessing; ``RealtimeError`` says which field and why.

Pure controller code, no Ansible imports.
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Any, Dict, Optional, Set

from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import Ctx

COMPONENTS = ("gpu", "hbm", "nvlink", "ib_link", "psu", "fan", "node", "storage", "scheduler", "other")
_PREFIX = (
    (("gpu.ecc", "gpu.retired_pages", "gpu.row_remap", "gpu.hbm"), "hbm"),
    (("gpu.nvlink", "gpu.fabric", "nvswitch.", "node.fabric_manager"), "nvlink"),
    (("gpu.",), "gpu"),
    (("ib.", "cluster.subnet_manager"), "ib_link"),
    (("storage.", "node.mounts"), "storage"),
    (("scheduler.", "cluster.capacity"), "scheduler"),
    (("node.", "collector.", "cluster.unknown"), "node"),
)

#: RFC 1123 host names (plus "_", which inventories use); the EDA source's pattern (fully matched)
HOSTNAME = re.compile(
    r"(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)*"
)
#: check ids as docs/checks.md writes them: gpu.xid, ib.port_state, bmc.leak
CHECK_ID = re.compile(r"[a-z][a-z0-9_]{0,31}(?:\.[a-z0-9_]{1,63}){1,3}")
#: a finding's component as the checks write it (gpu:0, ib:mlx5_0/1, psu:PSU1, GPU-<uuid>, 0000:3b:00.0)
COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,127}")
CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,63}")
SOURCE = re.compile(r"[a-z][a-z0-9_]{0,15}")
RUNBOOK = re.compile(r"[a-z][a-z0-9_]{0,63}")
SEVERITIES = ("P0", "P1", "P2", "P3")
TEXT_MAX = 4000
EVENT_KEYS = (
    "host",
    "check_id",
    "component",
    "code",
    "severity",
    "detected_at",
    "source",
    "summary",
    "runbook",
    "suppress",
)
_REQUIRED = ("host", "check_id", "severity", "detected_at", "source", "summary")


class RealtimeError(ValueError):
    """A real-time event that is not one (a missing or malformed field): refused, never guessed."""


def component_class(check_id: Any, component: Any = None) -> str:
    """The component class of a finding (contract: gpu hbm nvlink ib_link psu fan node storage scheduler other)
    from its check id; a BMC finding is ``psu`` or ``fan`` when its component says so, else ``node``."""
    check = str(check_id or "")
    if check.startswith("bmc."):
        comp = str(component or "").lower()
        if "psu" in comp or "power_supply" in comp or "powersupply" in comp:
            return "psu"
        if "fan" in comp:
            return "fan"
        return "node"
    for prefixes, cls in _PREFIX:
        if check.startswith(prefixes):
            return cls
    return "other"


def fingerprint(host: str, f: Dict[str, Any]) -> str:
    """The ledger's key of one finding: its host and its id (``check:component:code`` when it has none)."""
    fid = str(f.get("id") or "%s:%s:%s" % (f.get("check"), f.get("component"), f.get("code")))
    return ("%s|%s" % (host, fid))[:512]


def windows_in_force(conn: Any, mw: Any, hosts: Set[str], at: float) -> Dict[str, str]:
    """host -> "maintenance window <name>" for each of ``hosts`` a ``maintenance_windows`` row (``mw``) in force at
    ``at`` covers (scope ``all`` or its ``hosts``)."""
    out: Dict[str, str] = {}
    q = mw.select().with_only_columns(mw.c.name, mw.c.scope).where(mw.c.starts_at <= at, mw.c.ends_at > at)
    for r in conn.execute(q.order_by(mw.c.starts_at, mw.c.window_id)):
        scope = r.scope if isinstance(r.scope, dict) else {}
        for h in sorted(hosts if scope.get("all") else set(scope.get("hosts") or []) & hosts):
            out.setdefault(h, "maintenance window %s" % r.name)
    return out


def _match(event: Dict[str, Any], key: str, pattern: re.Pattern[str], what: str) -> Optional[str]:
    value = event.get(key)
    if value is None and key not in _REQUIRED:
        return None
    if not isinstance(value, str) or not value.isascii() or not pattern.fullmatch(value):
        raise RealtimeError("%s %r is not %s" % (key, value, what))
    return value


def realtime_event(event: Any) -> Dict[str, Any]:
    """The validated event plus its ``finding`` (as an inspection's check would write it: same id) and
    ``fingerprint``. ``detected_at``: epoch seconds (int or float, finite, > 0). Unknown keys are refused."""
    if not isinstance(event, dict):
        raise RealtimeError("an event is a mapping, not %s" % type(event).__name__)
    unknown = sorted(str(k) for k in event if k not in EVENT_KEYS)
    if unknown:
        raise RealtimeError("unknown field(s) %s (one of %s)" % (", ".join(unknown), ", ".join(EVENT_KEYS)))
    missing = [k for k in _REQUIRED if event.get(k) is None]
    if missing:
        raise RealtimeError("missing field(s) %s" % ", ".join(missing))
    out: Dict[str, Any] = {
        "host": _match(event, "host", HOSTNAME, "a host name"),
        "check_id": _match(event, "check_id", CHECK_ID, "a check id such as gpu.xid"),
        "component": _match(event, "component", COMPONENT, "a component such as gpu:0"),
        "code": _match(event, "code", CODE, "a finding code"),
        "source": _match(event, "source", SOURCE, "a source name such as alertmanager"),
        "runbook": _match(event, "runbook", RUNBOOK, "a runbook catalogue id"),
    }
    if out["host"].lower() in ("all", "ungrouped", "localhost", "cluster"):
        raise RealtimeError("host %r names no node" % out["host"])
    if event["severity"] not in SEVERITIES:
        raise RealtimeError("severity %r is not one of %s" % (event["severity"], ", ".join(SEVERITIES)))
    out["severity"] = event["severity"]
    when = event["detected_at"]
    if isinstance(when, bool) or not isinstance(when, (int, float)) or not math.isfinite(when) or when <= 0:
        raise RealtimeError("detected_at %r is not epoch seconds" % (when,))
    out["detected_at"] = float(when)
    for key in ("summary", "suppress"):
        value = event.get(key)
        if key == "suppress" and value is False:  # a response no window holds back (a coolant leak)
            out[key] = False
            continue
        if value is not None and (not isinstance(value, str) or len(value) > TEXT_MAX):
            raise RealtimeError("%s must be text of at most %d characters" % (key, TEXT_MAX))
        out[key] = value if key == "summary" else (value or None)
    now = datetime.datetime.fromtimestamp(out["detected_at"], tz=datetime.timezone.utc)
    found = Ctx(out["host"], {}, now).add(
        out["check_id"],
        out["severity"],
        out["component"] or "",
        out["code"],
        out["summary"],
        "none",
        "real-time event from %s" % out["source"],
    )
    out["finding"] = found
    out["fingerprint"] = fingerprint(out["host"], found)
    out["component_class"] = component_class(out["check_id"], out["component"])
    return out
