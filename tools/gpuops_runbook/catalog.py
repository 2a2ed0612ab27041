"""The runbook catalogue (runbooks/catalog.yml): load, check its shape, and look entries up."""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional

import yaml

CHANGE_CLASSES = ("corrective", "planned", "read_only")
ENTRY_KEYS = {
    "id": str,
    "title": str,
    "runbook": str,
    "playbook": str,
    "checks": list,
    "codes": list,
    "alerts": list,
    "ticket_vars": dict,
    "extra_vars": dict,
    "allowed_vars": list,
    "approval_required": bool,
    "change_class": str,
    "disruptive": bool,
}
_ID = re.compile(r"[a-z][a-z0-9_]*")  # always re.fullmatch
_CHECK = re.compile(r"[a-z]+\.[a-z_]+")


class CatalogError(ValueError):
    """The catalogue file is missing or malformed."""


def load(path: str) -> Dict[str, Any]:
    """Read and check the catalogue; raise CatalogError with every problem found."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except OSError as exc:
        raise CatalogError("cannot read the runbook catalogue %s: %s" % (path, exc))
    except yaml.YAMLError as exc:
        raise CatalogError("runbook catalogue %s is not valid YAML: %s" % (path, exc))
    problems = validate(data)
    if problems:
        raise CatalogError("runbook catalogue %s: %s" % (path, "; ".join(problems)))
    return data


def _shape_problems(e: Dict[str, Any], where: str, seen: set) -> List[str]:
    """Key types, the id (pattern, unique) and the change class of one entry."""
    problems = [
        "%s: `%s` must be a %s" % (where, key, typ.__name__)
        for key, typ in ENTRY_KEYS.items()
        if not isinstance(e.get(key), typ)
    ]
    if isinstance(e.get("id"), str):
        if not _ID.fullmatch(e["id"]):
            problems.append("%s: id must match %s" % (where, _ID.pattern))
        if e["id"] in seen:
            problems.append("%s: duplicate id" % where)
        seen.add(e["id"])
    if e.get("change_class") not in CHANGE_CLASSES:
        problems.append("%s: change_class must be one of %s" % (where, ", ".join(CHANGE_CLASSES)))
    return problems


def _finding_problems(e: Dict[str, Any], where: str) -> List[str]:
    """`checks` are '<domain>.<check>' names, `codes` '<check>:<code>' strings."""
    problems = [
        "%s: bad check %r" % (where, check)
        for check in e.get("checks") or []
        if not isinstance(check, str) or not _CHECK.fullmatch(check)
    ]
    problems += [
        "%s: codes are '<check>:<code>' strings, got %r" % (where, code)
        for code in e.get("codes") or []
        if not isinstance(code, str) or ":" not in code or not _CHECK.fullmatch(code.split(":", 1)[0])
    ]
    return problems


def _vars_problems(e: Dict[str, Any], where: str) -> List[str]:
    """ticket_vars take a known source and never a reserved name; extra_vars never set a reserved name."""
    problems: List[str] = []
    tv = e.get("ticket_vars")
    for var, src in tv.items() if isinstance(tv, dict) else ():
        if src not in TICKET_SOURCES:
            problems.append("%s: ticket_vars.%s must be one of %s" % (where, var, ", ".join(TICKET_SOURCES)))
        if var in RESERVED_VARS:
            problems.append("%s: ticket_vars may not name %s" % (where, var))
    ev = e.get("extra_vars")
    if isinstance(ev, dict) and any(k in RESERVED_VARS for k in ev):
        problems.append("%s: extra_vars may not set %s" % (where, ", ".join(sorted(RESERVED_VARS))))
    return problems


def validate(data: Any) -> List[str]:
    """Shape problems of a catalogue document (empty list = fine). Files are checked by the tests."""
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        return ["top level must be a mapping with an `entries` list"]
    problems: List[str] = []
    seen: set = set()
    for i, e in enumerate(data["entries"]):
        if not isinstance(e, dict):
            problems.append("entries[%d] is not a mapping" % i)
            continue
        where = "entry %s" % e.get("id", i)
        problems += _shape_problems(e, where, seen)
        problems += _finding_problems(e, where)
        problems += _vars_problems(e, where)
    unmapped = data.get("unmapped", {})
    if not isinstance(unmapped, dict) or not all(isinstance(v, str) and v.strip() for v in unmapped.values()):
        problems.append("`unmapped` must map a check to a non-empty reason")
    return problems


#: What a ticket_vars entry may take from the ticket.
TICKET_SOURCES = ("nodes", "node", "ticket", "requester")

#: Set by the hook itself; neither the catalogue nor a payload may set them.
RESERVED_VARS = frozenset(
    ("gpuops_ticket", "gpuops_targets", "gpuops_nodes", "gpuops_runbook", "gpuops_requester", "gpuops_approval")
)


def entries(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    return list(data.get("entries") or [])


def by_id(data: Dict[str, Any], entry_id: str) -> Optional[Dict[str, Any]]:
    for e in entries(data):
        if e.get("id") == entry_id:
            return e
    return None


def by_finding(data: Dict[str, Any], check: str, code: Any = None) -> Optional[Dict[str, Any]]:
    """The entry for a finding: an exact '<check>:<code>' match first, then the check alone."""
    if code is not None:
        key = "%s:%s" % (check, code)
        for e in entries(data):
            if key in (e.get("codes") or []):
                return e
    for e in entries(data):
        if check in (e.get("checks") or []):
            return e
    return None


def by_alert(data: Dict[str, Any], alertname: str) -> Optional[Dict[str, Any]]:
    for e in entries(data):
        if alertname in (e.get("alerts") or []):
            return e
    return None


def mapped_checks(data: Dict[str, Any]) -> Dict[str, List[str]]:
    """check -> entry ids that handle it (via `checks` or a code of `codes`)."""
    out: Dict[str, List[str]] = {}
    for e in entries(data):
        for check in list(e.get("checks") or []) + [c.split(":", 1)[0] for c in e.get("codes") or []]:
            ids = out.setdefault(check, [])
            if e["id"] not in ids:
                ids.append(e["id"])
    return out


def default_root() -> str:
    """The collection root: $GPUOPS_ROOT, else the checkout this package lives in, else the collection installed
    on $ANSIBLE_COLLECTIONS_PATH or Ansible's configured collections paths (pip-installed tools next to an
    `ansible-galaxy collection install`), else the cwd."""
    env = os.environ.get("GPUOPS_ROOT")
    if env:
        return env
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.path.isfile(os.path.join(here, "runbooks", "catalog.yml")):
        return here
    from gpuops_runbook import collection

    dirs = [d for d in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if d]
    for d in dirs + collection._ansible_paths():
        installed = os.path.join(d, *collection.PACKAGE[:3])
        if os.path.isfile(os.path.join(installed, "runbooks", "catalog.yml")):
            return installed
    return os.getcwd()
