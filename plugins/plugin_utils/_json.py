# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compact, sorted JSON text of the controller's large documents (issue 17): a node's facts, its state file,
the entries of report.json.

:func:`dumps` is ``json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)``, made with orjson when
the controller has it (5x faster on a node's 65 KB of facts: ~0.7 ms a node of the offline inspection's parse,
docs/performance.md). The text decodes to the same value and is ASCII with sorted keys; the bytes are the same
but for one thing: a float below 1e-4 is ``0.00001`` where ``json`` writes ``1e-05`` (both are the shortest text
that reads back as the same float). orjson is optional (``requirements.txt``): without it, or for anything it
does not write as ``json`` does, the standard library writes the text:

- text that is not ASCII (``json`` escapes it as ``\\uXXXX``, orjson writes UTF-8);
- what orjson refuses: an integer beyond 64 bits, a key that is not a string, a lone surrogate, nesting deeper
  than 254 levels;
- a datetime or a dataclass goes to ``default=str``, as with ``json`` (orjson would write its own form).

One difference is left: a float that is not finite (NaN, infinity) is ``null`` with orjson, ``NaN`` with
``json`` (not JSON at all). The collectors never produce one (``_common.num_unit`` refuses them).

Decoding: :func:`loads` is ``json.loads``, except for text orjson wrote (:func:`dumps_exact` says so), which
orjson reads back exactly, 2.5x faster. orjson would read any other text's integer beyond 64 bits as a float,
silently: such text is only ever read by the standard library.
"""

from __future__ import annotations

import json
from typing import Any, Tuple

try:
    import orjson
except ImportError:  # optional: the standard library does the same, slower
    orjson = None

_OPTIONS = 0
if orjson is not None:
    _OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def _stdlib(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def _dumps(obj: Any) -> Tuple[bytes, bool]:
    if orjson is not None:
        try:
            data = orjson.dumps(obj, default=str, option=_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError: the standard library decides (and raises what it raises)
            data = None
        if data is not None and data.isascii():
            return data, True
    return _stdlib(obj).encode("ascii"), False


def dumps_bytes(obj: Any) -> bytes:
    """``obj`` as compact JSON with sorted keys (``default=str``), ASCII bytes: see the module's doc."""
    return _dumps(obj)[0]


def dumps_exact(obj: Any) -> Tuple[str, bool]:
    """:func:`dumps`, and whether orjson wrote it (then ``loads(text, exact=True)`` may read it with orjson)."""
    data, exact = _dumps(obj)
    return data.decode("ascii"), exact


def loads(text: Any, exact: bool = False) -> Any:
    """``json.loads(text)``; with orjson when ``exact`` (the text is :func:`dumps_exact`'s with exact True)."""
    if exact and orjson is not None:
        return orjson.loads(text if type(text) in (str, bytes) else str(text))  # orjson refuses a str subclass
    return json.loads(text)


def dumps(obj: Any) -> str:
    """:func:`dumps_bytes` as text."""
    if orjson is None:
        return _stdlib(obj)
    return dumps_bytes(obj).decode("ascii")
