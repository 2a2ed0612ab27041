# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runbook catalogue (runbooks/catalog.yml): load, check its shape, look entries up, and link a finding to
its runbook section.

One source for the catalogue's model: the inspection report (``_report``: a runbook id and link per finding)
and the ticket hook (``tools/gpuops_runbook/catalog.py`` imports this module from the collection) both read it
here. Controller side; PyYAML (an ansible-core dependency); no Ansible imports.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Dict, List, Optional, Tuple

import yaml

#: The collection root (this file is plugins/plugin_utils/_runbooks.py) and the catalogue it ships.
COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_CATALOG = os.path.join(COLLECTION_ROOT, "runbooks", "catalog.yml")

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


# ---------------------------------------------------------------------------------------------- finding -> runbook
#: The section with a runbook's exact commands.
RUN_SECTION = "Run"
#: The section a mapped finding's link opens: the runbook's "Preconditions" (what must hold before anything in
#: "Run" is done: e.g. "do NOT isolate a member of a cluster incident"), which the reader passes on the way to
#: "Run"; else "Run"; else its title. A link straight to "Run" skipped them (issue 41).
LINK_SECTIONS = ("Preconditions", RUN_SECTION)
#: Findings of a check the catalogue lists under `unmapped` (nothing to automate): runbooks/README.md's section.
UNMAPPED_SECTION = ("README.md", "Not automated (catalogue `unmapped`)")
#: Findings no entry handles and `unmapped` does not name: the README's "what to do first" section.
FALLBACK_SECTION = ("README.md", "At 3 a.m.: the order of things")

_HEADING = re.compile(r"(#{1,6})[ \t]+(.+?)[ \t#]*")  # always re.fullmatch
_FENCE = re.compile(r"[ ]{0,3}(```|~~~)")
_NOT_SLUG = re.compile(r"[^\w\- ]", re.UNICODE)


def slug(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub's rule) gives a heading: lower case, punctuation dropped except
    '-' and '_', spaces become '-'."""
    return _NOT_SLUG.sub("", heading.strip().lower()).replace(" ", "-")


def headings(text: str) -> List[Tuple[int, str]]:
    """ATX headings of a Markdown text as (level, text), in order; lines inside fenced code are not headings."""
    out: List[Tuple[int, str]] = []
    fence: Optional[str] = None
    for line in text.splitlines():
        m = _FENCE.match(line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        h = None if fence else _HEADING.fullmatch(line.rstrip())
        if h:
            out.append((len(h.group(1)), h.group(2)))
    return out


@functools.lru_cache(maxsize=128)
def anchors(path: str) -> Dict[str, str]:
    """Heading text -> anchor of one Markdown file (a repeated slug gets -1, -2 ... as GitHub does); the first
    heading is also under the key ''. A file that cannot be read has none."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return {}
    out: Dict[str, str] = {}
    used: Dict[str, int] = {}
    for _level, title in headings(text):
        base = slug(title)
        n = used.get(base, 0)
        used[base] = n + 1
        out.setdefault(title, base if n == 0 else "%s-%d" % (base, n))
        out.setdefault("", out[title])
    return out


def section_link(runbooks_dir: str, name: str, section: Any) -> str:
    """``runbooks/<name>#<anchor of section>`` (``section`` a heading, or a tuple of headings: the first the file
    has; the file's first heading when it has none of them; the bare file when it has no heading), relative to the
    collection root."""
    found = anchors(os.path.join(runbooks_dir, name))
    wanted = (section,) if isinstance(section, str) else tuple(section)
    anchor = next((found[s] for s in wanted if s in found), None) or found.get("")
    return "runbooks/%s#%s" % (name, anchor) if anchor else "runbooks/%s" % name


@functools.lru_cache(maxsize=8)
def load_cached(path: str) -> Dict[str, Any]:
    """load(path), read once per process (the report links every finding through it). Do not modify it."""
    return load(path)


def finding_runbook(data: Dict[str, Any], finding: Dict[str, Any], runbooks_dir: str) -> Dict[str, Optional[str]]:
    """``{runbook, runbook_link}`` of one finding: the catalogue entry's id (None when no entry handles it) and
    the link to the section to read (the entry's runbook "Preconditions" section, before its "Run"; README "Not
    automated" for a check the catalogue lists as `unmapped`; README "At 3 a.m." otherwise)."""
    check = str(finding.get("check") or "")
    code = finding.get("code")
    entry = by_finding(data, check, None if code is None else str(code))
    if entry is not None:
        return {"runbook": entry["id"], "runbook_link": section_link(runbooks_dir, entry["runbook"], LINK_SECTIONS)}
    name, section = UNMAPPED_SECTION if check in (data.get("unmapped") or {}) else FALLBACK_SECTION
    return {"runbook": None, "runbook_link": section_link(runbooks_dir, name, section)}
