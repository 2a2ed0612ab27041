# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""JSON from outside the controller, decoded within a depth and size budget (issue 35).

``json.loads`` recurses once per ``[``/``{``: a document nested a few thousand levels deep (a node's
``capture.json``, a tool's ``--json`` output, a Redfish body, a row read back from a store) raises
``RecursionError`` -- which is not a ``ValueError``, so the callers' ``except ValueError`` does not catch
it and one file aborts the whole run. Catching ``RecursionError`` is not a limit either: the interpreter's
limit is not ours, and a document just under it still costs a deep C stack.

:func:`loads` is ``json.loads`` that first measures the document: more than ``max_bytes`` (bytes, or
characters of a str: see :func:`_too_large`) or nesting deeper than ``max_depth`` raises
:class:`JsonBudgetError`, a ``ValueError`` that says what and why; invalid JSON raises what ``json.loads``
raises (``json.JSONDecodeError``, ``UnicodeDecodeError``: both ``ValueError``).

The nesting check is exact and linear: a document with at most ``max_depth`` brackets in all cannot be
nested deeper (no scan, the common case of a small document); otherwise :func:`depth` reduces the document
to its structure in C (``bytes.translate``, two regular expressions: brackets inside a string are not
nesting) and sums the running depth with built-ins (``itertools.accumulate``), no Python loop per character.
It costs about what ``json.loads`` costs on the same document (docs/performance.md).

Runs on managed nodes (Python 3.8+) and on the controller. Standard library only, no Ansible imports.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any, Optional, Union

#: Deepest nesting a document from outside may have. The collection's own documents (facts, a capture's
#: meta, Redfish resources, scheduler output) are under 20 levels.
DEFAULT_MAX_DEPTH = 64

#: Largest document (bytes; characters for a str), the capture reader's cap (_common.MAX_INPUT_BYTES).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_DEPTH", "JsonBudgetError", "depth", "load_file", "loads"]


class JsonBudgetError(ValueError):
    """A JSON document refused before it was decoded: too large, or nested too deep.

    A ``ValueError``, so a caller that already turns invalid JSON into an error turns this one too; the
    message names the document (``what``) and the budget it broke.
    """


#: The escapes that can hide a quote or a backslash (``\\\\``, ``\\"``), removed first: a backslash left after
#: that starts an escape of no consequence (``\\n``, ``\\u00e9``).
_ESCAPE = re.compile(rb'\\[\\"]')
#: Every byte but the structure (brackets, quotes): deleted by ``bytes.translate``, one pass in C.
_NOT_STRUCTURE = bytes(i for i in range(256) if i not in b'[]{}"')
#: What is left of a string once the rest is deleted: its quotes and the brackets in it (an unterminated one
#: runs to the end: the match never fails, never backtracks).
_STRING = re.compile(rb'"[^"]*"?')
_STEP = {0x5B: 1, 0x7B: 1, 0x5D: -1, 0x7D: -1}.__getitem__


def depth(text: Union[str, bytes, bytearray]) -> int:
    """The deepest nesting of ``[``/``{`` in the JSON ``text`` (brackets inside strings not counted); linear.

    As UTF-8 bytes: escaped quotes and backslashes removed, every byte but brackets and quotes deleted, the
    strings (now quotes around brackets) removed, and the running depth of what remains summed by built-ins.
    Exact for valid JSON, and for invalid JSON up to its first error (all the decoder ever reads)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    data = data.translate(None, _NOT_STRUCTURE)
    if b'"' in data:
        data = _STRING.sub(b"", data)
    return max(itertools.accumulate(map(_STEP, data), initial=0))


def _too_large(text: Union[str, bytes, bytearray], max_bytes: int) -> Optional[int]:
    """The size of ``text`` when it is over ``max_bytes``, else None.

    Bytes are counted as bytes; a str by its characters, and by its UTF-8 bytes only where that could
    make a difference (more than a quarter of the budget in characters), so the common case costs len().
    """
    n = len(text)
    if n > max_bytes:
        return n
    if isinstance(text, str) and n * 4 > max_bytes:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            return size
    return None


def check(
    text: Union[str, bytes, bytearray],
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_bytes: int = DEFAULT_MAX_BYTES,
    what: str = "JSON",
) -> str:
    """``text`` as a str, after the budget checks of :func:`loads` (raises what it raises, not decoding)."""
    size = _too_large(text, max_bytes)
    if size is not None:
        raise JsonBudgetError("%s refused: larger than %d bytes (%d)" % (what, max_bytes, size))
    if isinstance(text, (bytes, bytearray)):
        # what json.loads does with bytes: UTF-8/16/32 by the first bytes; invalid -> UnicodeDecodeError
        text = bytes(text).decode(json.detect_encoding(text), "surrogatepass")
    elif not isinstance(text, str):
        raise TypeError("%s: the JSON object must be str, bytes or bytearray, not %s" % (what, type(text).__name__))
    if text.count("[") + text.count("{") > max_depth:
        d = depth(text)
        if d > max_depth:
            raise JsonBudgetError("%s refused: nesting deeper than %d levels (%d)" % (what, max_depth, d))
    return text


def loads(
    text: Union[str, bytes, bytearray],
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_bytes: int = DEFAULT_MAX_BYTES,
    what: str = "JSON",
) -> Any:
    """``json.loads(text)`` within a budget: :class:`JsonBudgetError` when ``text`` is larger than
    ``max_bytes`` or nested deeper than ``max_depth``; ``json.JSONDecodeError``/``UnicodeDecodeError``
    (``ValueError``) when it is not JSON, as ``json.loads`` raises them."""
    text = check(text, max_depth=max_depth, max_bytes=max_bytes, what=what)
    try:
        return json.loads(text)
    except RecursionError:  # only with a max_depth above the interpreter's limit
        raise JsonBudgetError("%s refused: nesting deeper than the interpreter's recursion limit" % what) from None


def load_file(
    path: str,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_bytes: int = DEFAULT_MAX_BYTES,
    what: Optional[str] = None,
) -> Any:
    """:func:`loads` of the file at ``path``, read no further than ``max_bytes`` + 1 (``what``: the path).

    A plain ``open``: for a capture file use ``_files.read_capture_bytes`` and :func:`loads`, which
    refuse links and special files as well.
    """
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)
    return loads(data, max_depth=max_depth, max_bytes=max_bytes, what=what or path)
