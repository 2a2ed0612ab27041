# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side entry of plugins/plugin_utils/_leak.py for the gpuops.cluster.leak_response role.

``leak_cli.py <assess|finish|detect>`` reads one JSON request on stdin and
prints the JSON answer (exit 0), or {"failed": true, "msg": ...} (exit 2). Collection roles cannot ship modules,
so the role runs this with ansible_playbook_python.
"""

from __future__ import annotations

import os
import sys


def _import_path() -> None:
    # <root>/ansible_collections/gpuops/cluster/roles/leak_response/files/leak_cli.py
    root = os.path.abspath(__file__)
    for _level in range(7):
        root = os.path.dirname(root)
    if root not in sys.path:
        sys.path.insert(0, root)


if __name__ == "__main__":
    _import_path()
    from ansible_collections.gpuops.cluster.plugins.plugin_utils._leak import main

    sys.exit(main())
