# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every playbook checks before it does anything (pure; controller side; the action
``gpuops.cluster.start_checks`` gathers the inputs):

* unknown ``gpuops_*`` variables: names given as extra vars or set on hosts and groups that docs/inventory.md does
  not document (a misspelled ``gpuops_fail_on`` was ignored without a word), each with the
  nearest documented name; ``gpuops_strict_vars=true`` makes them fatal;
* the audit trail: a disruptive playbook refuses to start without the ``gpuops.cluster.audit`` callback, before
  any change, unless the operator opts out (``gpuops_allow_unaudited``, itself recorded).
"""

from __future__ import annotations

import difflib
import re
from typing import Dict, Iterable, List, Optional, Set, Tuple

#: A variable name of the collection (not ``__gpuops_*``, the playbooks' private facts).
_NAME = re.compile(r"(?<![A-Za-z0-9_])gpuops_[a-z0-9_]*[a-z0-9]\b")
#: A documented name in docs/inventory.md: in backticks, alone or as ``name=value`` / ``name: value``.
_DOC_NAME = re.compile(r"`(gpuops_[a-z0-9_]*[a-z0-9])(?=[`=:\s\[])")
#: Names that are facts or artifacts the collection sets itself and a user may pass back (AWX set_stats).
_SET_BY_THE_COLLECTION = ("gpuops_change_window",)

REFUSED_UNAUDITED = (
    "%s refused before any change: the audit callback gpuops.cluster.audit is not enabled. Run with "
    "ANSIBLE_CALLBACKS_ENABLED=gpuops.cluster.audit (and GPUOPS_STATE_DIR), or callbacks_enabled in ansible.cfg "
    "(docs/audit.md); -e gpuops_allow_unaudited=true runs without it and records the opt-out"
)


def documented_names(doc_text: str) -> Set[str]:
    """The ``gpuops_*`` names docs/inventory.md documents (in backticks)."""
    return set(_DOC_NAME.findall(doc_text)) | set(_SET_BY_THE_COLLECTION)


def is_collection_name(name: object) -> bool:
    return isinstance(name, str) and bool(_NAME.fullmatch(name))


def nearest(name: str, known: Iterable[str]) -> Optional[str]:
    """The documented name closest to ``name`` (difflib), or None when none is close."""
    match = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
    return match[0] if match else None


def unknown_variables(
    sources: Dict[str, Iterable[str]], known: Set[str], limit: int = 3
) -> List[Tuple[str, List[str], Optional[str]]]:
    """``[(name, where, nearest)]`` for every ``gpuops_*`` name in ``sources`` (``{where: names}``, e.g.
    ``{"extra vars": [...], "host gpu-node-01": [...]}``) that is not documented; ``where`` lists at most ``limit``
    places and then a count."""
    places: Dict[str, List[str]] = {}
    for where, names in sources.items():
        for name in names:
            if is_collection_name(name) and name not in known:
                places.setdefault(name, []).append(where)
    out = []
    for name in sorted(places):
        where = places[name]
        shown = where[:limit] + (["%d more" % (len(where) - limit)] if len(where) > limit else [])
        out.append((name, shown, nearest(name, known)))
    return out


def unknown_message(name: str, where: List[str], near: Optional[str]) -> str:
    hint = "did you mean %s?" % near if near else "no documented name is close (docs/inventory.md)"
    return "unknown variable %s (%s): %s" % (name, ", ".join(where), hint)


def audit_decision(disruptive: bool, audited: bool, allow_unaudited: bool, check_mode: bool) -> str:
    """``ok``, ``opt_out`` (run unaudited and record it), ``would_refuse`` (check mode) or ``refuse``."""
    if not disruptive or audited:
        return "ok"
    if allow_unaudited:
        return "opt_out"
    return "would_refuse" if check_mode else "refuse"
