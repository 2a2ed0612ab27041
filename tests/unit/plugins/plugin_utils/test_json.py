# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_json.dumps is json.dumps(sort_keys=True, separators=(",", ":"), default=str), with or without orjson: the same
value, ASCII, sorted, and the same bytes but for the form of floats below 1e-4. The facts cache, the state files and
report.json must not depend on what the controller has installed."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import random
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import collect_all
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _json
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import facts_cache as _facts_cache
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as _state

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "tools"))

from simnode import faults as F  # noqa: E402
from simnode.capture import capture  # noqa: E402
from simnode.state import default_state  # noqa: E402


def _stdlib(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


@pytest.fixture(params=["orjson", "stdlib"])
def codec(request, monkeypatch):
    if request.param == "orjson":
        if _json.orjson is None:
            pytest.skip("orjson is not installed")
    else:
        monkeypatch.setattr(_json, "orjson", None)
    return request.param


@dataclasses.dataclass
class _Point:
    x: int


class _Thing:
    def __str__(self):
        return "a thing"


EDGE_CASES = [
    {"b": 1, "a": [1, 2.5, None, True, False], "c": {"z": "x", "y": ""}},
    {"big": 2**64 - 1, "neg": -(2**63), "over": 2**64, "under": -(2**63) - 1, "huge": 10**40},
    {"floats": [0.1, 1e16, 1e-4, 1.5, -0.0, 123456789.123, 1.7976931348623157e308, 0.30000000000000004]},
    {"text": "caf\u00e9 \u2103 \U0001f525", "ctl": "a\tb\nc\x00\x1f\x7f", "quote": 'say "hi" \\ /'},
    {"\u00e9t\u00e9": 1, "ete": 2},  # a non-ASCII key: json's escapes, json's order
    {"tuple": (1, "a"), "set": {3}, "when": datetime.datetime(2026, 12, 7, 10, 0, tzinfo=datetime.timezone.utc)},
    {"date": datetime.date(2026, 12, 7), "point": _Point(3), "thing": _Thing()},
    {"raw": _facts_cache.RawFacts('{"x":1}'), "nested": [[[[{"k": [1]}]]]]},
    {_facts_cache.RawFacts("key"): 1, "a": 2},  # a str subclass as a key (ansible-core's tagged strings): orjson refuses
    [],
    {},
    "plain",
    7,
]


@pytest.mark.parametrize("obj", EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_the_bytes_of_the_standard_library(codec, obj):
    assert _json.dumps(obj) == _stdlib(obj)
    assert _json.dumps_bytes(obj) == _stdlib(obj).encode("ascii")


def test_what_neither_can_write_fails_as_the_standard_library_fails(codec):
    with pytest.raises(TypeError):
        _json.dumps({1: "a", "b": 2})  # mixed keys cannot be sorted
    deep = json.loads("[" * 300 + "]" * 300)  # deeper than orjson's 254 levels: written by the standard library
    assert _json.dumps(deep) == _stdlib(deep)


def test_a_node_facts_and_its_state_are_the_same_bytes(codec, tmp_path):
    node = "gpu-node-07"
    state = default_state(node, seed=7)
    F.apply(state, "xid48", random.Random(1), gpu=2)
    capture(state, str(tmp_path / "capture"))
    facts = collect_all(capture_dir=str(tmp_path / "capture"))
    assert len(facts["gpu"]["gpus"]) == 8 and facts["ib"]["hcas"] and facts["kernel"]["events"]
    assert _facts_cache.to_raw(facts) == _stdlib(facts)
    state = {"host": node, "gpu": {"0": {"ecc": 1, "seen": "2026-12-07T10:00:00Z"}}, "ib": {"mlx5_0/1": [1, 2]}}
    assert _state.state_text(state) == _stdlib(state)


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_trees = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=25,
)


def test_small_floats_read_back_the_same(codec):
    obj = {"f": [1e-05, 1e-07, 2.5e-5, 5e-324, -3.3e-300]}
    text = _json.dumps(obj)
    assert text.isascii() and json.loads(text) == obj
    assert codec == "orjson" or text == _stdlib(obj)


@settings(max_examples=300, deadline=None)
@given(json_trees)
def test_any_json_tree(obj):
    text = _json.dumps(obj)
    assert text.isascii()
    assert json.loads(text) == json.loads(_stdlib(obj))
    if "e-" not in _stdlib(obj):  # no float below 1e-4 in it: the same bytes
        assert text == _stdlib(obj)


def test_facts_orjson_wrote_are_read_back_by_orjson_the_others_by_the_standard_library(codec, tmp_path, monkeypatch):
    facts = {"gpu": {"gpus": [{"index": 0, "ecc": 2**64 - 1, "temp": 41.5}]}, "hostname": "gpu-node-07"}
    raw = _facts_cache.to_raw(facts)
    assert isinstance(raw, _facts_cache.RawFacts)
    assert isinstance(raw, _facts_cache.ExactRawFacts) is (codec == "orjson")
    assert _facts_cache.facts_of(raw) == facts
    # an integer beyond 64 bits: orjson cannot write it, and would read it back as a float: the standard library
    # writes it and reads it, exactly
    big = dict(facts, counter=2**64 + 1)
    raw_big = _facts_cache.to_raw(big)
    assert isinstance(raw_big, _facts_cache.RawFacts) and not isinstance(raw_big, _facts_cache.ExactRawFacts)
    back = _facts_cache.facts_of(raw_big)
    assert back["counter"] == 2**64 + 1 and not isinstance(back["counter"], float)
    calls = []
    if codec == "orjson":
        real = _json.orjson.loads
        monkeypatch.setattr(_json.orjson, "loads", lambda text: calls.append(len(text)) or real(text))
    # the cache keeps which decoder may read an entry
    cache = _facts_cache.FactsCache(str(tmp_path))
    cap = tmp_path / "cap"
    cap.mkdir()
    fp = _facts_cache.capture_fingerprint(str(cap))
    cache.put("a", str(cap), fp, raw)
    cache.put("b", str(cap), fp, raw_big)
    got_a, got_b = cache.get("a", str(cap), fp), cache.get("b", str(cap), fp)
    assert isinstance(got_a, _facts_cache.ExactRawFacts) is (codec == "orjson")
    assert isinstance(got_b, _facts_cache.RawFacts) and not isinstance(got_b, _facts_cache.ExactRawFacts)
    assert _facts_cache.facts_of(got_a) == facts and _facts_cache.facts_of(got_b)["counter"] == 2**64 + 1
    assert calls == ([len(got_a)] if codec == "orjson" else [])
