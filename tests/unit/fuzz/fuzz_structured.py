# -*- coding: utf-8 -*-
"""Nesting, size and encoding mutations for every JSON and XML input (issue 35, "What to build").

``fuzz_targets.mutate`` changes lines and numbers; a structured document is also attacked through its shape:
``[`` x 100,000 (which made ``json.loads`` raise RecursionError, out of every ``except ValueError``), an element
nested 100,000 deep, a billion-laughs or external-entity DOCTYPE, a document grown to the campaign's size cap,
lone surrogates, a byte-order mark, an encoding declaration that lies. :func:`mutate_structure` applies one such
mutation to a JSON or XML text; fuzz_targets applies it to a third of the inputs of every JSON/XML target (the
op list chooses, so the seeded tests stay derandomized). The contract stays: only ParseError escapes a parser.
"""

from __future__ import annotations

import re
from typing import List, Sequence, Tuple

#: How deep a nesting mutation goes: just over the budget (64), past the interpreter's recursion limit, far past.
DEPTHS = (65, 1500, 100000)
#: How large a size mutation grows a document (the campaign cuts inputs at 1 MiB: run_fuzz.MAX_INPUT_CHARS).
SIZES = (64 * 1024, 900 * 1024)

#: Text that breaks an encoding: lone surrogates (raw and as JSON escapes), a BOM, invalid UTF-8 as it reaches a
#: parser (replacement characters, surrogateescape), NUL, an overlong sequence, bidi override, a private-use char.
ENCODINGS = (
    "\ud800",
    "\udfff",
    "\\ud800",
    "\\udc00\\ud800",
    "\ufeff",
    "\ufffd\ufffd",
    "\udcc3\udca9",
    "\x00",
    "\xc0\xaf",
    "\u202e",
    "\U0010ffff",
    "\\u0000",
)

N_STRUCT = 8

_XML_DEEP = "<a>%s</a>"
_BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [\n <!ENTITY lol "lol">\n'
    + "".join(' <!ENTITY lol%d "%s">\n' % (i, ("&lol%d;" % (i - 1) if i > 1 else "&lol;") * 10) for i in range(1, 10))
    + "]>\n"
)
_EXTERNAL = '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
_LYING_DECL = '<?xml version="1.0" encoding="UTF-16"?>\n'


def _strip_decl(text: str) -> str:
    """An XML text without its declaration and DOCTYPE lines (a mutation puts its own in front)."""
    lines = text.splitlines(True)
    while lines and lines[0].lstrip().startswith(("<?xml", "<!DOCTYPE")):
        lines.pop(0)
    return "".join(lines)


def _insert_at_value(text: str, pos: int, piece: str) -> str:
    """``piece`` as a new first element of one of the document's arrays (valid JSON stays valid), or the document
    wrapped in an array with it when there is none."""
    marks = [m.end() for m in re.finditer(r"\[", text[:200000])]
    if not marks:
        return "[" + piece + "," + text + "]"
    i = marks[pos % len(marks)]
    return text[:i] + piece + ("" if text[i:].lstrip().startswith("]") else ",") + text[i:]


def mutate_json_structure(text: str, op: int, a: int, b: int) -> str:
    n = DEPTHS[b % len(DEPTHS)]
    op %= N_STRUCT
    if op == 0:  # a value nested n deep, balanced: valid JSON
        return _insert_at_value(text, a, "[" * n + "]" * n)
    if op == 1:  # the whole document wrapped n deep in objects and arrays
        return '{"a":[' * (n // 2) + text + "]}" * (n // 2)
    if op == 2:  # brackets opened and never closed
        return _insert_at_value(text, a, "[{" * (n // 2) if b & 1 else "[" * n)
    if op == 3:  # brackets inside a string: not nesting
        return _insert_at_value(text, a, '"' + "[" * n + '"')
    if op == 4:  # grown to a size: a long string, or many elements
        size = SIZES[b % len(SIZES)]
        piece = '"' + "x" * size + '"' if a & 1 else "[" + ",".join(["0"] * (size // 2)) + "]"
        return _insert_at_value(text, a, piece)
    if op == 5:  # an encoding break somewhere
        i = a % (len(text) + 1)
        return text[:i] + ENCODINGS[b % len(ENCODINGS)] + text[i:]
    if op == 6:  # a BOM, or the whole text as it reads when UTF-16 is taken for Latin-1
        return "\ufeff" + text if b & 1 else text.encode("utf-16").decode("latin-1")
    # a number with thousands of digits (int() refuses over 4,300)
    return _insert_at_value(text, a, "1" * (5000 + b % 20000))


def mutate_xml_structure(text: str, op: int, a: int, b: int) -> str:
    n = DEPTHS[b % len(DEPTHS)]
    op %= N_STRUCT
    body = _strip_decl(text)
    inside = body.find("<gpu ")
    at = inside if inside >= 0 else a % (len(body) + 1)
    if op == 0:  # an element nested n deep inside the document, balanced
        return body[:at] + "<a>" * n + "</a>" * n + body[at:]
    if op == 1:  # opened and never closed
        return body[:at] + "<a>" * n + body[at:]
    if op == 2:  # billion laughs: an entity that expands to 10^9 "lol"
        return _BILLION_LAUGHS + body.replace("<product_name>", "<product_name>&lol9;", 1)
    if op == 3:  # an external entity: never read
        return _EXTERNAL + body.replace("<product_name>", "<product_name>&xxe;", 1)
    if op == 4:  # grown to a size: a long text node, or many elements
        size = SIZES[b % len(SIZES)]
        piece = "<x>" + "y" * size + "</x>" if a & 1 else "<x/>" * (size // 4)
        return body[:at] + piece + body[at:]
    if op == 5:  # an encoding break somewhere
        i = a % (len(body) + 1)
        return body[:i] + ENCODINGS[b % len(ENCODINGS)] + body[i:]
    if op == 6:  # a declaration that lies about the encoding, or a BOM
        return (_LYING_DECL + body) if b & 1 else "\ufeff" + text
    # many attributes on one element
    return body[:at] + "<x " + " ".join('a%d="1"' % i for i in range(2000 + b % 5000)) + "/>" + body[at:]


def structural(kind: str, text: str, ops: Sequence[Tuple[int, int, int]]) -> str:
    """``text`` with one nesting/size/encoding mutation when the ops say so (a third of them), else as it is."""
    if not ops:
        return text
    op, a, b = ops[-1]
    if (a ^ b) % 3:
        return text
    if kind == "json":
        return mutate_json_structure(text, op + (b >> 3), a, b >> 1)
    if kind == "xml":
        return mutate_xml_structure(text, op + (b >> 3), a, b >> 1)
    return text


def every_mutation(kind: str, text: str) -> List[str]:
    """One input per structural mutation and depth/size (the unit tests try each at least once)."""
    fn = mutate_json_structure if kind == "json" else mutate_xml_structure
    return [fn(text, op, a, k) for op in range(N_STRUCT) for k in range(6) for a in (7, 1000003)]
