# -*- coding: utf-8 -*-
"""Seeded, short fuzzing of every parser (issue 12: parsers lose at most a line).

Part of ``make test`` (derandomized: the same inputs on every run, a few hundred per parser); the long
campaign is ``make fuzz`` (tests/fuzz/run_fuzz.py). Inputs are mutated real samples (fuzz_targets.py).
"""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_structured as fs  # noqa: E402
import fuzz_targets as ft  # noqa: E402

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError  # noqa: E402

TARGETS = ft.by_name()
EXAMPLES = int(os.environ.get("GPUOPS_FUZZ_EXAMPLES", "200"))
OPS = st.lists(
    st.tuples(st.integers(0, ft.N_OPS - 1), st.integers(0, 1 << 30), st.integers(0, 1 << 30)),
    min_size=1,
    max_size=5,
)
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _parse(target, text):
    """Run the target; only ParseError may come out. Returns (result or None, errors, exception or None)."""
    errors = []
    try:
        return target.run(text, errors), errors, None
    except ParseError as exc:
        return None, errors, exc


def test_every_target_has_samples():
    assert len(TARGETS) >= 17
    for name, target in TARGETS.items():
        assert target.inputs, name
        for text in target.inputs:
            _parse(target, text)  # every real sample parses without an exception other than ParseError


#: Parsers whose samples are large (a 120,000-line kernel log): fewer examples keep the unit stage short.
_FEWER = {"kernel_log": 4}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_only_parse_error_escapes(name):
    target = TARGETS[name]

    @settings(FUZZ, max_examples=max(10, EXAMPLES // _FEWER.get(name, 1)))
    @given(data=st.data())
    def run(data):
        base = data.draw(st.sampled_from(target.inputs), label="sample")
        text = target.apply(base, data.draw(OPS, label="ops"))
        result, errors, exc = _parse(target, text)
        if isinstance(result, dict) and isinstance(result.get("errors"), list):
            errors = errors + result["errors"]
        for e in errors:
            assert e["kind"] in ("parse", "tool_error", "unreadable"), e
            assert e["line"] is None or isinstance(e["line"], int)
        if exc is not None:
            assert isinstance(exc.message, str) and exc.message

    run()


#: Targets whose records are counted over a list/dict that a trailing broken line cannot merge into.
_SURVIVAL = sorted(
    n
    for n, t in TARGETS.items()
    if t.kind == "text" and t.structure != "json" and n not in ("node", "ipmi_mc_info", "ipmi_sel_info")
)  # a JSON document with a broken line appended is no JSON at all: a whole-input error, by design


@pytest.mark.parametrize("name", _SURVIVAL)
@settings(FUZZ, max_examples=max(20, EXAMPLES // 4))
@given(data=st.data())
def test_a_broken_line_next_to_valid_records_costs_no_valid_record(name, data):
    """A sample plus one mutated copy of one of its lines still yields every record of the sample."""
    target = TARGETS[name]
    base = data.draw(st.sampled_from(target.inputs), label="sample")
    lines = base.splitlines()
    if not lines:
        return
    before, _e, exc = _parse(target, base)
    want = target.count(before) if exc is None else ft.partial_count(target, exc)
    if want is None:
        return  # the sample itself is a whole-input error (no partial result): nothing to keep
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    broken = ft.mutate(lines[i], data.draw(OPS, label="ops")).replace("\n", " ").replace("\r", " ")
    after, _errors, exc = _parse(target, base.rstrip("\n") + "\n" + broken + "\n")
    got = target.count(after) if exc is None else ft.partial_count(target, exc)
    assert got is not None and got >= want, (name, i, broken[:200])


#: JSON and XML targets: each nesting/size/encoding mutation (fuzz_structured) at every depth and size, once.
_STRUCTURED = sorted(n for n, t in TARGETS.items() if t.structure)


@pytest.mark.parametrize("name", _STRUCTURED)
def test_nesting_size_and_encoding_mutations_only_raise_parse_error(name):
    """Issue 35: ``[`` x 100,000, ``<a>`` x 100,000, billion laughs, an external entity, 900 KiB, lone surrogates,
    a BOM, a lying encoding declaration: only ParseError (or a result with error entries) comes out."""
    target = TARGETS[name]
    assert len(_STRUCTURED) >= 7
    for base in target.inputs[:2]:
        for text in fs.every_mutation(target.structure, base):
            result, errors, exc = _parse(target, text)
            if isinstance(result, dict) and isinstance(result.get("errors"), list):
                errors = errors + result["errors"]
            for e in errors:
                assert e["kind"] in ("parse", "tool_error", "unreadable"), (e, text[:200])
            if exc is not None:
                assert isinstance(exc.message, str) and exc.message
