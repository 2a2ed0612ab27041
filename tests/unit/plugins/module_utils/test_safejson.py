# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_safejson: JSON from outside within a depth and size budget (issue 35, observation 1).

``json.loads('[' * 100000 + ']' * 100000)`` raises RecursionError, which no ``except ValueError`` catches:
:func:`_safejson.loads` refuses it with a JsonBudgetError (a ValueError) naming the budget, before decoding.
"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson as S

DEEP = 100000
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def test_stdlib_recursion_is_the_bug():
    """The premise: the standard library does not refuse it as a ValueError."""
    with pytest.raises(RecursionError):
        json.loads("[" * DEEP + "]" * DEEP)


@pytest.mark.parametrize(
    "doc",
    [
        "[" * DEEP + "]" * DEEP,
        '{"a":' * DEEP + "1" + "}" * DEEP,
        '[{"a":' * (DEEP // 2) + "1" + "}]" * (DEEP // 2),
        "[" * DEEP,  # unterminated: still refused for its depth, not a RecursionError
        '{"capture":' + "[" * DEEP + "]" * DEEP + "}",
    ],
    ids=["arrays", "objects", "mixed", "unterminated", "deep-inside-object"],
)
def test_deep_refused(doc):
    with pytest.raises(S.JsonBudgetError, match="nesting deeper than 64 levels") as exc:
        S.loads(doc, what="capture.json")
    assert isinstance(exc.value, ValueError)
    assert "capture.json" in str(exc.value)


def test_deep_bytes_refused():
    with pytest.raises(S.JsonBudgetError, match="nesting deeper"):
        S.loads(b"[" * DEEP + b"]" * DEEP)


def test_depth_limit_exact():
    ok = "[" * 64 + "]" * 64
    assert S.loads(ok) == json.loads(ok)
    with pytest.raises(S.JsonBudgetError, match=r"deeper than 64 levels \(65\)"):
        S.loads("[" * 65 + "]" * 65)
    assert S.loads("[" * 3 + "]" * 3, max_depth=3) == [[[]]]
    with pytest.raises(S.JsonBudgetError):
        S.loads("[" * 4 + "]" * 4, max_depth=3)


def test_many_brackets_shallow_accepted():
    """Many brackets but no depth: the scan runs (count over the limit) and lets it through."""
    doc = json.dumps([[i, {"k": [i]}] for i in range(5000)])
    assert S.loads(doc) == json.loads(doc)


def test_brackets_inside_strings_not_counted():
    s = "[" * DEEP + "{" * 10 + '\\"' + "[" * 10
    doc = json.dumps({"msg": s, "list": [s, {"x": s}]})
    assert S.loads(doc) == json.loads(doc)
    assert S.depth(doc) == 3


def test_escaped_quote_does_not_end_string():
    doc = '["\\"' + "[" * 200 + '", 1]'
    assert S.loads(doc) == json.loads(doc)
    doc = '["\\\\", ' + "[" * 100 + "]" * 100 + "]"  # an escaped backslash, then the string ends
    with pytest.raises(S.JsonBudgetError):
        S.loads(doc)


def test_unterminated_string_is_invalid_json_not_deep():
    doc = '["' + "[" * 1000
    with pytest.raises(ValueError) as exc:
        S.loads(doc)
    assert not isinstance(exc.value, S.JsonBudgetError)


def test_size_cap():
    with pytest.raises(S.JsonBudgetError, match="larger than 100 bytes"):
        S.loads("[" + "1," * 60 + "1]", max_bytes=100, what="node.json")
    with pytest.raises(S.JsonBudgetError, match="larger than 100 bytes"):
        S.loads(b'"' + b"x" * 100 + b'"', max_bytes=100)
    # a str is counted in UTF-8 bytes when it could matter
    with pytest.raises(S.JsonBudgetError, match="larger than 100 bytes"):
        S.loads('"' + "\u00e9" * 60 + '"', max_bytes=100)
    assert S.loads('"' + "x" * 50 + '"', max_bytes=100) == "x" * 50


def test_bytes_input():
    assert S.loads(b'{"a": [1, 2, "\xc3\xa9"]}') == {"a": [1, 2, "\u00e9"]}
    assert S.loads(bytearray(b"[1]")) == [1]
    assert S.loads('{"a": 1}'.encode("utf-16")) == {"a": 1}  # json.loads detects UTF-16 too


def test_invalid_utf8_is_value_error():
    with pytest.raises(ValueError) as exc:
        S.loads(b'{"a": "\xff\xfe\xfa"}')
    assert not isinstance(exc.value, S.JsonBudgetError)


@pytest.mark.parametrize("doc", ["", "{", "[1,]", "nul", '{"a" 1}', "]]]]"])
def test_invalid_json_is_json_decode_error(doc):
    with pytest.raises(json.JSONDecodeError):
        S.loads(doc)


def test_not_text_is_type_error():
    with pytest.raises(TypeError):
        S.loads(None)


def test_normal_documents_unchanged():
    docs = [
        "null",
        "1",
        '"x"',
        "[]",
        "{}",
        '{"a": [1, 2.5, true, false, null, "s"], "b": {"c": {"d": []}}}',
        json.dumps({"nested": [[[[["deep but fine"]]]]], "unicode": "\u2603", "esc": 'a\\"b[{'}),
    ]
    for root, _dirs, files in os.walk(os.path.join(REPO, "tests", "fixtures")):
        for name in files:
            if name.endswith(".json") and len(docs) < 200:
                with open(os.path.join(root, name), "rb") as fh:
                    data = fh.read()
                try:
                    json.loads(data)
                except ValueError:
                    continue
                docs.append(data)
    for doc in docs:
        assert S.loads(doc) == json.loads(doc)


def test_load_file(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"a": 1}')
    assert S.load_file(str(p)) == {"a": 1}
    p.write_text("[" * DEEP + "]" * DEEP)
    with pytest.raises(S.JsonBudgetError, match=str(p)):
        S.load_file(str(p))
    p.write_text("[" + "0," * 100 + "0]")
    with pytest.raises(S.JsonBudgetError, match="larger than 50 bytes"):
        S.load_file(str(p), max_bytes=50)


def _reference_depth(text):
    """The nesting of a JSON text by the book: one character at a time, strings and escapes tracked."""
    depth = best = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            best = max(best, depth)
        elif c in "]}":
            depth -= 1
    return best


def test_depth_matches_the_reference_on_random_documents():
    import random

    rng = random.Random(35)
    atoms = ["x[", "]}\\", '"', "\\\\", 'a"b', "[[", "\u00e9]", "\ud800]", "\\u005b", 1, None, 2.5, '\\\\\\"']

    def value(d):
        r = rng.random()
        if d > 70 or r < 0.3:
            return rng.choice(atoms)
        if r < 0.65:
            return [value(d + 1) for _i in range(rng.randint(0, 3))]
        return {rng.choice(["k[", "{k", '\\"]', "\\"]) + str(i): value(d + 1) for i in range(rng.randint(0, 3))}

    seen = set()
    for _round in range(1000):
        doc = json.dumps(value(0), ensure_ascii=rng.random() < 0.5)
        want = _reference_depth(doc)
        seen.add(want > 64)
        assert S.depth(doc) == want, doc
        assert S.depth(doc.encode("utf-8", "surrogatepass")) == want
    assert seen == {True, False}
