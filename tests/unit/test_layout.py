# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The house's layout (issue 36, docs/architecture.md): rooms by domain, no flat hall, no import cycle.

- no folder of ``plugins/plugin_utils`` or ``plugins/module_utils`` holds more than 20 modules;
- every package there is named in docs/architecture.md, which says what lives in it;
- node-side code (module_utils) never imports controller code (plugin_utils);
- the imports between the collection's own modules (plugins/ and tools/) form no cycle.
"""

from __future__ import annotations

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = "ansible_collections.gpuops.cluster."
MAX_MODULES = 20


def _py_files(top):
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", "migrations"))
        for f in sorted(filenames):
            if f.endswith(".py"):
                yield os.path.join(dirpath, f)


def _packages(top):
    out = []
    for dirpath, dirnames, _files in os.walk(os.path.join(ROOT, top)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        out.append(os.path.relpath(dirpath, ROOT))
    return out


@pytest.mark.parametrize("top", ["plugins/plugin_utils", "plugins/module_utils"])
def test_no_flat_folder_over_twenty_modules(top):
    crowded = {}
    for pkg in _packages(top):
        mods = [f for f in os.listdir(os.path.join(ROOT, pkg)) if f.endswith(".py") and f != "__init__.py"]
        if len(mods) > MAX_MODULES:
            crowded[pkg] = len(mods)
    assert crowded == {}, crowded


def test_every_package_is_in_the_architecture_page():
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as fh:
        page = fh.read()
    missing = [
        pkg
        for top in ("plugins/plugin_utils", "plugins/module_utils")
        for pkg in _packages(top)
        if "migrations" not in pkg and "report_templates" not in pkg and "`%s/`" % pkg not in page
    ]
    assert missing == [], "docs/architecture.md does not describe: %s" % missing


def _module_name(path):
    rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
    if rel.endswith(".__init__"):
        rel = rel[: -len(".__init__")]
    return PREFIX + rel if rel.startswith("plugins.") else rel


def _imports(path, known=(), package=""):
    """The modules one file imports, at any depth of the file. ``from pkg import mod`` (a module in ``known``) is
    an import of ``pkg.mod``: the package's ``__init__`` runs first, but it is no edge of a cycle of its own."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or node.level):
            module = node.module or ""
            if node.level:  # relative: resolved against the file's own package
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if package else []
                module = ".".join([p for p in base if p] + ([module] if module else []))
            subs = {module + "." + a.name for a in node.names} & set(known)
            out.update(subs)
            if len(subs) < len(node.names):
                out.add(module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def _graph():
    files = list(_py_files("plugins")) + list(_py_files("tools"))
    mods = {}
    for path in files:
        name = _module_name(path)
        if name.startswith("tools."):
            name = name[len("tools.") :]
        mods[name] = path
    graph = {}
    for name, path in list(mods.items()):
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        graph[name] = sorted(m for m in _imports(path, mods, package) if m in mods and m != name)
    return graph


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif nxt not in index:
                index[nxt] = low[nxt] = counter[0]
                counter[0] += 1
                stack.append(nxt)
                on.add(nxt)
                work.append((nxt, iter(graph[nxt])))
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert _cycles({"a": ["b"], "b": []}) == []


def test_no_import_cycle_in_plugins_or_tools():
    cycles = _cycles(_graph())
    assert cycles == [], "import cycles: %s" % cycles


def test_node_code_never_imports_controller_code():
    bad = []
    for path in _py_files("plugins/module_utils"):
        for m in _imports(path):
            if re.match(r"ansible_collections\.gpuops\.cluster\.plugins\.(plugin_utils|action|filter|callback)", m):
                bad.append((os.path.relpath(path, ROOT), m))
    assert bad == [], bad
