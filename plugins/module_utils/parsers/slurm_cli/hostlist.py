# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm host lists, expanded the way Slurm's ``src/common/hostlist.c`` reads them.

``expand(text)`` -> the node names, in order (duplicates kept out). Rules (cluster-formats.md 1.5):

- the top level is split on commas (and whitespace) **outside** brackets: ``e05-[42,76],e22-13``;
- a bracket holds a comma list of ``N`` or ``lo-hi``; the width of a range is ``len(lo)``, so ``c[020-022]`` is
  c020..c022, ``[8-10]`` is 8, 9, 10 and ``[08-10]`` is 08, 09, 10;
- text may follow a bracket (``node[1-3]-ib``) and a name may hold several brackets (``rack[1-2]n[01-04]``):
  each is expanded in turn (Slurm prints one bracket per name; reading more costs nothing);
- refused with :class:`HostlistError` (a ParseError: a caller's per-line boundary records it): an unbalanced
  bracket, a negative or reversed range, a step (``[1-10/2]``, ClusterShell, not Slurm output), the legacy
  3-D box (``[123x456]``), and a list that would expand to more than ``limit`` names (a typo such as
  ``exe[1-100000000]`` is an error, not an out-of-memory).

``(null)``, ``None``, ``None assigned``, ``n/a`` and the empty string are no hosts. Pure; Python 3.8+.
"""

from __future__ import annotations

import re
from typing import List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

#: the most names one host list may expand to (Slurm's own MAX_PREFIX_CNT guard is 64K per prefix)
MAX_HOSTS = 65536
NO_HOSTS = frozenset(("", "(null)", "none", "none assigned", "n/a", "(none)"))

_RANGE = re.compile(r"^([0-9]{1,18})(?:-([0-9]{1,18}))?$")  # ASCII digits, as hostlist.c reads them


class HostlistError(ParseError):
    """A host list Slurm would not print (or one too large to expand)."""

    def __init__(self, message: str, text: str) -> None:
        super().__init__("host list %r: %s" % (text[:80], message), "hostlist")


def split_top(text: str) -> List[str]:
    """The top-level items of a host list: split on commas and whitespace outside brackets."""
    parts: List[str] = []
    depth = 0
    cur: List[str] = []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError("']' without '['", text)
        if depth == 0 and (ch == "," or ch.isspace()):
            if cur:
                parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise HostlistError("'[' without ']'", text)
    if cur:
        parts.append("".join(cur))
    return parts


def _bracket(body: str, whole: str) -> List[str]:
    values: List[str] = []
    for item in body.split(","):
        item = item.strip()
        m = _RANGE.match(item)
        if not m:
            raise HostlistError("bad range %r (Slurm prints N or lo-hi)" % item, whole)
        lo, hi = m.group(1), m.group(2)
        if hi is None:
            values.append(lo)
            continue
        if int(hi) < int(lo):
            raise HostlistError("reversed range %r" % item, whole)
        if int(hi) - int(lo) >= MAX_HOSTS:
            raise HostlistError("range %r is over %d names" % (item, MAX_HOSTS), whole)
        width = len(lo)
        values.extend(str(i).zfill(width) for i in range(int(lo), int(hi) + 1))
    return values


def _expand_one(item: str, whole: str, limit: int) -> List[str]:
    start = item.find("[")
    if start < 0:
        if "]" in item:
            raise HostlistError("']' without '['", whole)
        return [item]
    end = item.find("]", start)
    if end < 0:
        raise HostlistError("'[' without ']'", whole)
    head, body, tail = item[:start], item[start + 1 : end], item[end + 1 :]
    if "[" in body:
        raise HostlistError("nested brackets", whole)
    tails = _expand_one(tail, whole, limit) if tail else [""]
    values = _bracket(body, whole)
    if len(values) * len(tails) > limit:
        raise HostlistError("expands to more than %d names" % limit, whole)
    return [head + v + t for v in values for t in tails]


def expand(text: Optional[str], limit: int = MAX_HOSTS) -> List[str]:
    """The node names of a Slurm host list (see the module doc); raises HostlistError for one Slurm never prints."""
    if text is None:
        return []
    text = str(text).strip()
    if text.lower() in NO_HOSTS:
        return []
    out: List[str] = []
    seen = set()
    for item in split_top(text):
        for name in _expand_one(item, text, limit - len(out)):
            if name not in seen:
                seen.add(name)
                out.append(name)
        if len(out) > limit:
            raise HostlistError("expands to more than %d names" % limit, text)
    return out


def is_cut(text: str) -> bool:
    """True for a host list cut by a fixed-width column (``gpu[01-0+``, ``b22-[01-20,2+``): never expanded."""
    return text.endswith("+") or text.count("[") != text.count("]")
