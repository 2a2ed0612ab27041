# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What was not seen: the one rule for a file missing from a partial cluster capture (docs/findings.md
"What was not seen").

A cluster capture holds whatever the operator had at hand. A file that is not there makes the part it would have
given ``unknown``: :func:`not_captured` records it in the domain's facts (``unseen``: ``[{file, part, state,
message}]``), and :func:`domain_state` gives the domain's ``state`` (``ok`` / ``partial`` / ``unknown``) that the
report shows. It is never a collector error, so never a finding: a file that is there and cannot be read or parsed
stays a ``collector.error`` (``_common.error_record``). Shared by the scheduler and the storage collectors.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable

UNKNOWN = "unknown"


def not_captured(part: Dict[str, Any], name: str, what: str) -> Dict[str, Any]:
    """Record in ``part["unseen"]`` that the capture has no ``name`` (which would have given ``what``); returns the
    record. ``part`` is the domain's facts dict (the scheduler's, the storage's)."""
    rec = {
        "file": name,
        "part": what,
        "state": UNKNOWN,
        "message": "%s is not in the capture: %s unknown" % (name, what),
    }
    part.setdefault("unseen", []).append(rec)
    return rec


def domain_state(part: Dict[str, Any], read: Iterable[str]) -> str:
    """``ok`` (every part read), ``partial`` (some parts unseen or unreadable, some read) or ``unknown`` (nothing
    read). ``read``: the keys of ``part`` that hold a reading when not None."""
    got = [k for k in read if part.get(k) is not None]
    if not got:
        return UNKNOWN
    if part.get("unseen") or part.get("errors"):
        return "partial"
    return "ok"
