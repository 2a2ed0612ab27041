"""The runbook catalogue (runbooks/catalog.yml): load, check its shape, and look entries up.

The model lives in the collection (``plugins/plugin_utils/_runbooks.py``, which the inspection report also uses
to link each finding to its runbook): this module hands its names through, imported from the collection the
first time one is used (``collection.module``: the collection the catalogue belongs to first, then the
collections path); without the collection they raise :class:`gpuops_runbook.collection.CollectionNotFound`.
Only ``default_root`` (where the collection is) and the ``load`` that finds the code beside the catalogue are here.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from gpuops_runbook import collection

#: The names this module hands through from the collection's plugin_utils/_runbooks.py.
SHARED = (
    "CHANGE_CLASSES",
    "ENTRY_KEYS",
    "TICKET_SOURCES",
    "RESERVED_VARS",
    "CatalogError",
    "validate",
    "entries",
    "by_id",
    "by_finding",
    "by_alert",
    "mapped_checks",
    "finding_runbook",
)
_IMPL: List[Any] = []  # the collection's _runbooks module, once found


def _impl(root: Optional[str] = None) -> Any:
    if not _IMPL:
        _IMPL.append(collection.module("plugin_utils._runbooks", root or default_root()))
    return _IMPL[0]


def __getattr__(name: str) -> Any:
    """PEP 562: the shared names come from the collection's _runbooks module (imported once, on first use)."""
    if name not in SHARED:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    return getattr(_impl(), name)


def load(path: str) -> Dict[str, Any]:
    """Read and check the catalogue at ``path``; CatalogError with every problem found. The collection's code is
    looked for first in the checkout or collection the catalogue belongs to (``<root>/runbooks/catalog.yml``)."""
    try:
        impl = _impl(os.path.dirname(os.path.dirname(os.path.abspath(path))))
    except collection.CollectionNotFound as exc:
        raise collection.CollectionNotFound("cannot read the runbook catalogue %s: %s" % (path, exc)) from exc
    return impl.load(path)


def default_root() -> str:
    """The collection root (``collection.default_root``)."""
    return collection.default_root()
