# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/checks.md's table of every Xid and SXid code equals what the catalogues generate (issue 38)."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.gpuops.cluster.plugins.module_utils import _sxid_catalog, _xid_catalog
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import catalogue

DOC = Path(__file__).resolve().parents[4] / "docs" / "checks.md"


def _doc_table():
    text = DOC.read_text(encoding="utf-8")
    assert text.count(catalogue.TABLE_START) == 1 and text.count(catalogue.TABLE_END) == 1
    start = text.index(catalogue.TABLE_START)
    return text[start : text.index(catalogue.TABLE_END) + len(catalogue.TABLE_END)]


def test_the_table_in_the_doc_is_the_generated_one():
    assert _doc_table() == catalogue.xid_sxid_table(), "run: PYTHONPATH=build python3 tools/gen_xid_table.py"


def test_the_table_has_every_code_once():
    rows = [line for line in _doc_table().splitlines() if line.startswith("| ") and line[2].isdigit()]
    codes = [int(line.split("|")[1]) for line in rows]
    assert sorted(codes) == sorted(list(_xid_catalog.CATALOG) + list(_sxid_catalog.CODE_CLASS))
    # spot checks against the sources, not the code: NVIDIA's bucket for 79, the guide's class for 22003
    assert (
        "| 79 | ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS | RESTART_BM / CONTACT_SUPPORT | AHBG | P1 | `reboot` |"
        in _doc_table()
    )
    assert "| 22003 | fatal | P1 | `reboot` |" in _doc_table()
