# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test oracle for runbook links (``runbooks/<file>.md#<anchor>``): the file exists and the anchor is a heading
as a real CommonMark parser (markdown-it-py) reads the file - independent of plugin_utils/_runbooks' scanner."""

from __future__ import annotations

import os
import re

from markdown_it import MarkdownIt

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _runbooks

ROOT = _runbooks.COLLECTION_ROOT


def github_anchors(path):
    """The anchors GitHub gives the headings of a Markdown file, from markdown-it-py's token stream (an
    independent oracle: it knows fenced code, setext headings, inline markup)."""
    tokens = MarkdownIt("commonmark").parse(open(path, encoding="utf-8").read())
    out, used = set(), {}
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open":
            continue
        text = "".join(c.content for c in tokens[i + 1].children if c.type in ("text", "code_inline"))
        base = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        out.add(base if base not in used else "%s-%d" % (base, used[base]))
        used[base] = used.get(base, 0) + 1
    return out


def assert_resolves(link):
    path, _sep, anchor = link.partition("#")
    assert path.startswith("runbooks/") and path.endswith(".md"), link
    target = os.path.join(ROOT, path)
    assert os.path.isfile(target), "%s: no such runbook" % link
    assert anchor and anchor in github_anchors(target), "%s: no heading with that anchor" % link
