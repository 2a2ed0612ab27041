# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A simulated cluster's YAML inventory (``tools/simcluster/generate.py``) read back as plain variables, for the
unit tests that drive the inspection pipeline without ansible-core's inventory."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Tuple

import yaml


def _load(path: Path) -> Dict[str, Any]:
    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


def gpu_nodes(sim: Path) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Any], Dict[str, Any]]:
    """(each GPU node's own variables by host, the ``gpu_nodes`` group's variables, ``all``'s variables)."""
    inv = Path(sim) / "inventory"
    hosts = _load(inv / "hosts.yml")["all"]["children"]["gpu_nodes"]["hosts"]
    return hosts, _load(inv / "group_vars" / "gpu_nodes.yml"), _load(inv / "group_vars" / "all.yml")
