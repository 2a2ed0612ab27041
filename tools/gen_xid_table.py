#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write the Xid/SXid table of docs/checks.md from the catalogues (``checks.catalogue.xid_sxid_table``).

PYTHONPATH=build python3 tools/gen_xid_table.py            # rewrite docs/checks.md in place
PYTHONPATH=build python3 tools/gen_xid_table.py --check    # exit 1 when the doc differs from the data
"""

from __future__ import annotations

import os
import sys

from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import catalogue

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "checks.md")


def replace_table(text: str, table: str) -> str:
    """``text`` with the generated table swapped in (between its markers); ValueError when the markers are not
    there exactly once."""
    if text.count(catalogue.TABLE_START) != 1 or text.count(catalogue.TABLE_END) != 1:
        raise ValueError("docs/checks.md must hold the table markers exactly once")
    head, rest = text.split(catalogue.TABLE_START, 1)
    _old, tail = rest.split(catalogue.TABLE_END, 1)
    return head + table + tail


def main(argv) -> int:
    with open(DOC, encoding="utf-8") as fh:
        text = fh.read()
    new = replace_table(text, catalogue.xid_sxid_table())
    if "--check" in argv:
        return 0 if new == text else 1
    if new != text:
        with open(DOC, "w", encoding="utf-8") as fh:
            fh.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
