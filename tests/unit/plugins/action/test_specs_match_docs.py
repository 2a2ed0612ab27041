# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every controller step's ARGUMENT_SPEC agrees with the documentation of its module stub (issue 36).

The action plugin validates with ``ARGUMENT_SPEC``; ``ansible-doc`` shows the stub's ``DOCUMENTATION``. They are
written in two places, so this test is what keeps them one contract: the same option names, types, element
types, choices, defaults, ``required`` and nested ``options``. The documentation is the oracle a user reads.
"""

from __future__ import annotations

import ast
import copy
import glob
import importlib
import os
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
ACTIONS = sorted(
    os.path.splitext(os.path.basename(p))[0]
    for p in glob.glob(os.path.join(ROOT, "plugins", "action", "*.py"))
    if not p.endswith("__init__.py")
)


def _doc(name):
    """The DOCUMENTATION YAML of ``plugins/modules/<name>.py`` (read from the file, the module is not imported)."""
    with open(os.path.join(ROOT, "plugins", "modules", name + ".py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DOCUMENTATION" for t in node.targets):
            try:
                return yaml.safe_load(node.value.value)
            except yaml.YAMLError as exc:
                raise AssertionError("plugins/modules/%s.py: DOCUMENTATION is not YAML: %s" % (name, exc)) from exc
    raise AssertionError("plugins/modules/%s.py has no DOCUMENTATION" % name)


def _norm(opt):
    """The comparable part of one option, Ansible's defaults applied (type str, not required, no default)."""
    out = {"type": opt.get("type", "str"), "required": bool(opt.get("required", False))}
    for key in ("elements", "aliases"):
        if opt.get(key) is not None:
            out[key] = opt[key]
    if opt.get("choices") is not None:
        out["choices"] = sorted(str(c) for c in opt["choices"])
    if opt.get("default") is not None:  # an empty {} or [] default is a default too: documented as such
        out["default"] = opt["default"]
    sub = opt.get("options") or opt.get("suboptions")  # the spec says options, the documentation suboptions
    if sub:
        out["options"] = {k: _norm(v or {}) for k, v in sub.items()}
    return out


def differences(spec, doc, where=""):
    """Every disagreement between an argument spec and a documented ``options`` block, both ways, suboptions
    included: ``["<where>option: ..."]``; empty when they are one contract."""
    out = []
    for name in sorted(set(spec) - set(doc)):
        out.append("%s%s: in ARGUMENT_SPEC, not documented" % (where, name))
    for name in sorted(set(doc) - set(spec)):
        out.append("%s%s: documented, not in ARGUMENT_SPEC" % (where, name))
    for name in sorted(set(spec) & set(doc)):
        mine, theirs = _norm(spec[name] or {}), _norm(doc[name] or {})
        for key in sorted((set(mine) | set(theirs)) - {"options"}):
            if mine.get(key) != theirs.get(key):
                out.append(
                    "%s%s: %s is %r in ARGUMENT_SPEC, %r documented"
                    % (where, name, key, mine.get(key), theirs.get(key))
                )
        sub_spec = (spec[name] or {}).get("options") or {}
        sub_doc = (doc[name] or {}).get("suboptions") or (doc[name] or {}).get("options") or {}
        if sub_spec or sub_doc:
            out += differences(sub_spec, sub_doc, "%s%s." % (where, name))
    return out


def _spec_of(name):
    mod = importlib.import_module("ansible_collections.gpuops.cluster.plugins.action." + name)
    return getattr(mod.ActionModule, "ARGUMENT_SPEC", None)


@pytest.mark.parametrize("name", ACTIONS)
def test_action_spec_matches_its_documentation(name):
    spec = _spec_of(name)
    if not spec:
        pytest.skip("%s is not a ControllerAction with an ARGUMENT_SPEC" % name)
    doc = _doc(name).get("options") or {}
    assert differences(spec, doc) == [], "plugins/action/%s.py and plugins/modules/%s.py disagree" % (name, name)


#: actions that run a module on the node (they need its connection): not ControllerActions, no ARGUMENT_SPEC
ON_THE_NODE = ["capture", "collect_info"]


def test_only_the_known_actions_validate_by_hand():
    """Every controller step is a ControllerAction with an ARGUMENT_SPEC (so the test above sees it); the actions
    without one are named, so a new one cannot slip in."""
    without = [name for name in ACTIONS if not _spec_of(name)]
    assert without == ON_THE_NODE, without


#: a documented option block and the spec that agrees with it (written by hand, from Ansible's argument-spec and
#: documentation formats: the spec nests ``options``, the documentation ``suboptions``)
DOC = {
    "name": {"description": "x", "type": "str", "required": True},
    "mode": {"description": "x", "type": "str", "choices": ["a", "b"], "default": "a"},
    "extra": {"description": "x", "type": "dict", "default": {}},
    "hosts": {"description": "x", "type": "list", "elements": "str", "default": []},
    "slice": {"description": "x", "type": "dict", "suboptions": {"count": {"description": "x", "type": "int"}}},
    "note": {"description": "x"},
}
SPEC = {
    "name": {"type": "str", "required": True},
    "mode": {"type": "str", "choices": ["b", "a"], "default": "a"},
    "extra": {"type": "dict", "default": {}},
    "hosts": {"type": "list", "elements": "str", "default": []},
    "slice": {"type": "dict", "options": {"count": {"type": "int"}}},
    "note": {"type": "str", "no_log": False},
}


def test_the_comparison_accepts_an_agreeing_pair():
    assert differences(SPEC, DOC) == []


@pytest.mark.parametrize(
    "change, expected",
    [
        # an undocumented option (the drift once found: inspect_cluster's platform_var)
        (lambda s, d: s.update(platform_var={"type": "str"}), ["platform_var: in ARGUMENT_SPEC, not documented"]),
        (lambda s, d: s.pop("note"), ["note: documented, not in ARGUMENT_SPEC"]),
        (lambda s, d: d["mode"].update(default="b"), ["mode: default is 'a' in ARGUMENT_SPEC, 'b' documented"]),
        (
            lambda s, d: d["mode"].update(choices=["a", "b", "c"]),
            ["mode: choices is ['a', 'b'] in ARGUMENT_SPEC, ['a', 'b', 'c'] documented"],
        ),
        (lambda s, d: d["name"].pop("required"), ["name: required is True in ARGUMENT_SPEC, False documented"]),
        (lambda s, d: d["extra"].pop("default"), ["extra: default is {} in ARGUMENT_SPEC, None documented"]),
        (
            lambda s, d: s["hosts"].update(elements="int"),
            ["hosts: elements is 'int' in ARGUMENT_SPEC, 'str' documented"],
        ),
        (lambda s, d: d["note"].update(type="path"), ["note: type is 'str' in ARGUMENT_SPEC, 'path' documented"]),
        (
            lambda s, d: d["slice"]["suboptions"].update(group={"type": "str"}),
            ["slice.group: documented, not in ARGUMENT_SPEC"],
        ),
        (
            lambda s, d: s["slice"]["options"]["count"].update(default=1),
            ["slice.count: default is 1 in ARGUMENT_SPEC, None documented"],
        ),
    ],
)
def test_the_comparison_sees_each_drift(change, expected):
    spec, doc = copy.deepcopy(SPEC), copy.deepcopy(DOC)
    change(spec, doc)
    assert differences(spec, doc) == expected


def test_an_unreadable_documentation_is_named(tmp_path, monkeypatch):
    (tmp_path / "plugins" / "modules").mkdir(parents=True)
    (tmp_path / "plugins" / "modules" / "broken.py").write_text('DOCUMENTATION = """\noptions:\n  a: b: c\n"""\n')
    monkeypatch.setattr(sys.modules[__name__], "ROOT", str(tmp_path))
    with pytest.raises(AssertionError, match="plugins/modules/broken.py: DOCUMENTATION is not YAML"):
        _doc("broken")
