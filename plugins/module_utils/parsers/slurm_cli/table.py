# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The three table shapes of the Slurm client tools, read by their header (the column names decide meaning).

- ``delimited``: ``-p``/``-P``/``--delimiter`` (sacct) or ``-o '%N|%T'`` (sinfo, squeue) with a header row;
  sacct ``-p`` ends every row with the delimiter, ``-P`` does not [SL-src print_fields.c].
- ``fixed``: sacct's default: a header, a row of dashes giving each column's width, values cut to that width with
  their last character replaced by ``+`` [SL-src print_fields_str]. A cut value is reported as cut.
- ``aligned``: sinfo/squeue built-in and ``%.N`` formats: a header whose words sit over their values (left- or
  right-justified, no dashes, sinfo cuts silently). A row with as many words as the header maps one to one; a row
  with more words gives the extra ones to the one column that may hold spaces (a reason); a row with fewer is
  placed by where its words overlap the header's words (an empty column, e.g. sinfo's ``n/a`` row).

Each reader's ``row(line)`` gives ``({COLUMN: value}, cut_columns)`` or raises ValueError for that row (the
caller's per-line boundary records it). Pure; Python 3.8+.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import MAX_LINE_CHARS, ParseError, Records

_WORD = re.compile(r"\S+")


def text_lines(text: Any, tool: str, source: Optional[str]) -> List[Tuple[int, str]]:
    """The non-blank lines of a tool's output with their line numbers; ParseError when the output is not text."""
    if not isinstance(text, str):
        raise ParseError("%s output is not text" % tool, tool, source)
    return [(n, ln.rstrip("\r\n")) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]


def check_first_line(lines: List[Tuple[int, str]], tool: str, source: Optional[str]) -> None:
    """ParseError when the first line is longer than any line of the tool's output can be (not its output)."""
    if len(lines[0][1]) > MAX_LINE_CHARS:
        raise ParseError(
            "first line of %d characters: not %s output" % (len(lines[0][1]), tool), tool, source, lines[0][0]
        )


def read_rows(
    records: Records,
    body: List[Tuple[int, str]],
    reader: Any,
    use: Callable[[Dict[str, str], Set[str]], None],
) -> None:
    """``use(row, cut_columns)`` for each row of ``body`` read by ``reader``, each inside ``records``' per-line
    boundary: a line too long is recorded and skipped, a row the reader refuses is a ParseError at its line."""
    for n, line in body:
        with records.at(n):
            if records.too_long(line, n):
                continue
            try:
                row, cut = reader.row(line)
            except ValueError as exc:
                raise ParseError(str(exc), records.parser, records.source, n) from None
            use(row, cut)


def is_command(line: str, tool: str) -> bool:
    """True for a line that is the command itself, as pasted above its output (``$ sinfo``, ``[root@h ~]# sacct
    -a``, ``# squeue -l``, ``/usr/bin/sinfo -N``)."""
    return bool(re.match(r"^\s*(?:[^\n]{0,80}?[$#>]\s+)?(?:\S*/)?%s(?:\s|$)" % re.escape(tool), line))


def norm(name: str) -> str:
    """A column name as compared: upper case, no surrounding blanks."""
    return name.strip().upper()


class Delimited:
    """A delimited table whose header is ``header`` (``-p``'s trailing delimiter allowed)."""

    def __init__(self, header: str, delim: str, spacey: Optional[str] = None) -> None:
        self.delim, self.spacey = delim, spacey
        self.cols = [norm(c) for c in header.split(delim)]
        self.trailing = len(self.cols) > 1 and self.cols[-1] == ""
        if self.trailing:
            self.cols = self.cols[:-1]

    def row(self, line: str) -> Tuple[Dict[str, str], Set[str]]:
        cols, delim = self.cols, self.delim
        vals = line.split(delim)
        if self.trailing and len(vals) > 1 and vals[-1].strip() == "":
            vals = vals[:-1]
        if len(vals) > len(cols) and self.spacey in cols:
            i = cols.index(self.spacey)
            extra = len(vals) - len(cols)
            vals = vals[:i] + [delim.join(vals[i : i + extra + 1])] + vals[i + extra + 1 :]
        if len(vals) != len(cols):
            raise ValueError("%d '%s'-separated fields under a header of %d" % (len(vals), delim, len(cols)))
        return {c: v.strip() for c, v in zip(cols, vals)}, set()


def dash_spans(dashes: str) -> List[Tuple[int, int]]:
    """``[(start, end)]`` of each run of dashes (sacct's second header row)."""
    return [(m.start(), m.end()) for m in re.finditer(r"-+", dashes)]


class Fixed:
    """A fixed-width table with a dashes row; a value filling its column and ending in ``+`` is cut."""

    def __init__(self, header: str, dashes: str) -> None:
        self.spans = dash_spans(dashes)
        self.cols = [norm(header[s:e]) for s, e in self.spans]
        if not self.cols or "" in self.cols or len(set(self.cols)) != len(self.cols):
            raise ValueError("the header does not sit over the dashes")

    def row(self, line: str) -> Tuple[Dict[str, str], Set[str]]:
        row: Dict[str, str] = {}
        cut: Set[str] = set()
        last = len(self.spans) - 1
        for i, ((s, e), col) in enumerate(zip(self.spans, self.cols)):
            value = (line[s:] if i == last else line[s:e]).strip()
            if i < last and line[e : e + 1].strip():
                raise ValueError("column %s runs past its dashes (not this table's row)" % col)
            if value.endswith("+") and len(value) >= e - s:
                cut.add(col)
            row[col] = value
        return row, cut


def _words(line: str) -> List[Tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group(0)) for m in _WORD.finditer(line)]


def _overlap(a: Tuple[int, int], b: Tuple[int, int]) -> int:
    return min(a[1], b[1]) - max(a[0], b[0])


class Aligned:
    """A whitespace-aligned table under ``header`` (see the module doc)."""

    def __init__(self, header: str, spacey: Sequence[str] = ()) -> None:
        self.heads = _words(header)
        self.cols = [norm(w) for _start, _end, w in self.heads]
        self.wide = [c for c in self.cols if c in spacey]

    def row(self, line: str) -> Tuple[Dict[str, str], Set[str]]:
        cols, heads = self.cols, self.heads
        words = _words(line)
        if len(words) == len(cols):
            return {c: w for c, (_start, _end, w) in zip(cols, words)}, set()
        if len(words) > len(cols) and self.wide:
            i = cols.index(self.wide[0])
            extra = len(words) - len(cols)
            mid = words[i : i + extra + 1]
            vals = [w for _start, _end, w in words[:i]] + [line[mid[0][0] : mid[-1][1]]]
            vals += [w for _start, _end, w in words[i + extra + 1 :]]
            return dict(zip(cols, vals)), set()
        if len(words) > len(cols):
            raise ValueError("%d words under a header of %d columns" % (len(words), len(cols)))
        row = {c: "" for c in cols}
        used: Set[int] = set()
        for s, e, w in words:
            best = max(range(len(heads)), key=lambda k: (_overlap((s, e), heads[k][:2]), -k))
            if _overlap((s, e), heads[best][:2]) <= 0 or best in used:
                raise ValueError("a value %r sits under no column of the header" % w)
            used.add(best)
            row[cols[best]] = w
        return row, set()
