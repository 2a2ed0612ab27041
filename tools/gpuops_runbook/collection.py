"""The collection's own Python, imported by the hook from the collections path the playbooks use.

The hook shares code with the collection instead of copying it: the audit chain writer
(``plugins/plugin_utils/_audit.py``), the private atomic writer (``plugins/module_utils/_common.py``) and the
time formatter (``plugins/module_utils/_timeutil.py``). They are found under ``$ANSIBLE_COLLECTIONS_PATH``, else
``<root>/build``; when the collection is not there the hook fails with :class:`CollectionNotFound` (an OSError)
and writes nothing.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Optional

PACKAGE = ("ansible_collections", "gpuops", "cluster", "plugins")


class CollectionNotFound(OSError):
    """gpuops.cluster is not on the collections path: the hook cannot use the collection's code."""


def module(name: str, root: Optional[str] = None) -> Any:
    """``plugins.<name>`` of gpuops.cluster (e.g. ``plugin_utils._audit``), imported from the collections path
    ($ANSIBLE_COLLECTIONS_PATH, else <root>/build; root defaults to catalog.default_root())."""
    if root is None:
        from gpuops_runbook import catalog

        root = catalog.default_root()
    rel = os.path.join(*PACKAGE, *name.split(".")) + ".py"
    dirs = [d for d in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if d]
    dirs.append(os.path.join(root, "build"))
    found = next((d for d in dirs if os.path.isfile(os.path.join(d, rel))), None)
    if found is None:
        raise CollectionNotFound(
            "cannot find the gpuops.cluster collection's %s under %s: set ANSIBLE_COLLECTIONS_PATH to the "
            "directory that holds ansible_collections/gpuops/cluster" % (rel, ", ".join(dirs))
        )
    if found not in sys.path:
        sys.path.insert(0, found)
    return importlib.import_module(".".join(PACKAGE + (name,)))


def audit(root: Optional[str] = None) -> Any:
    """The audit chain writer (plugins/plugin_utils/_audit.py)."""
    return module("plugin_utils._audit", root)


def common(root: Optional[str] = None) -> Any:
    """The node-side helpers (plugins/module_utils/_common.py): private atomic writes, private directories."""
    return module("module_utils._common", root)


def timeutil(root: Optional[str] = None) -> Any:
    """The one time parser/formatter (plugins/module_utils/_timeutil.py)."""
    return module("module_utils._timeutil", root)
