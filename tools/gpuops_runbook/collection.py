"""The one collection finder of the CLIs (gpuops-runbook, gpuops-audit): the collection's own Python, imported
from the collections path the playbooks use.

The hook shares code with the collection instead of copying it: the audit chain writer
(``plugins/plugin_utils/store/audit.py``), the private atomic writer (``plugins/module_utils/_files.py``) and the
time formatter (``plugins/module_utils/_timeutil.py``). They are found under ``$ANSIBLE_COLLECTIONS_PATH``, else
``<root>/build``, else Ansible's configured collections paths; when the collection is not there the hook fails with :class:`CollectionNotFound` (an OSError)
and writes nothing.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, List, Optional

PACKAGE = ("ansible_collections", "gpuops", "cluster", "plugins")


class CollectionNotFound(OSError):
    """gpuops.cluster is not on the collections path: the hook cannot use the collection's code."""


def _ansible_paths() -> List[str]:
    """Ansible's configured collections paths (ansible.cfg, defaults); none when ansible-core is not importable."""
    try:
        from ansible import constants
    except ImportError:
        return []
    return [os.path.expanduser(d) for d in (getattr(constants, "COLLECTIONS_PATHS", None) or [])]


def default_root() -> str:
    """The collection root: $GPUOPS_ROOT, else the checkout this package lives in, else the collection installed
    on $ANSIBLE_COLLECTIONS_PATH or Ansible's configured collections paths (pip-installed tools next to an
    `ansible-galaxy collection install`), else the cwd."""
    env = os.environ.get("GPUOPS_ROOT")
    if env:
        return env
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.path.isfile(os.path.join(here, "runbooks", "catalog.yml")):
        return here
    dirs = [d for d in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if d]
    for d in dirs + _ansible_paths():
        installed = os.path.join(d, *PACKAGE[:3])
        if os.path.isfile(os.path.join(installed, "runbooks", "catalog.yml")):
            return installed
    return os.getcwd()


def search_path(root: Optional[str] = None) -> List[str]:
    """Where the collection is looked for, in order: $ANSIBLE_COLLECTIONS_PATH, <root>/build (root defaults to
    catalog.default_root()), the collections directory holding root when root is an installed collection
    (.../ansible_collections/gpuops/cluster), Ansible's configured collections paths."""
    if root is None:
        root = default_root()
    dirs = [d for d in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if d]
    dirs.append(os.path.join(root, "build"))
    parts = os.path.normpath(os.path.abspath(root)).split(os.sep)
    if parts[-3:] == list(PACKAGE[:3]):  # root is an installed collection: the collections directory holding it
        dirs.append(os.sep.join(parts[:-3]) or os.sep)
    return dirs + [d for d in _ansible_paths() if d not in dirs]


def module(name: str, root: Optional[str] = None) -> Any:
    """``plugins.<name>`` of gpuops.cluster (e.g. ``plugin_utils.store.audit``), imported from the first directory of
    search_path(root) that holds it."""
    rel = os.path.join(*PACKAGE, *name.split(".")) + ".py"
    dirs = search_path(root)
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
    """The audit chain writer (plugins/plugin_utils/store/audit.py)."""
    return module("plugin_utils.store.audit", root)


def files(root: Optional[str] = None) -> Any:
    """The file helpers (plugins/module_utils/_files.py): private atomic writes, private directories."""
    return module("module_utils._files", root)


def timeutil(root: Optional[str] = None) -> Any:
    """The one time parser/formatter (plugins/module_utils/_timeutil.py)."""
    return module("module_utils._timeutil", root)
