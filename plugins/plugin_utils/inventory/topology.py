# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm's network topology as the inventory reads it: ``scontrol show topology`` output or a topology.conf file.

Formats (SchedMD/slurm ``src/plugins/topology/{tree,block}``, ``_print_topo_record``; ``doc/man/man5/topology.conf.5``):

* topology/tree, ``scontrol show topology``: one line per switch,
  ``SwitchName=s0 Level=0 LinkSpeed=1 Nodes=gpu[001-032]`` (``Switches=`` on upper levels, whose ``Nodes=`` lists
  every node below them);
* topology/block: ``BlockName=b1 BlockIndex=0 Nodes=gpu[001-018]``;
* topology.conf: the same keys without ``Level``/``LinkSpeed`` (``SwitchName=s0 Nodes=...``,
  ``SwitchName=s3 Switches=s[0-2]``, ``BlockName=...``), ``#`` comments, a trailing ``\\`` continues a line;
* no topology plugin: no record at all (an error line such as ``No topology information available``).

A node's leaf switch is the lowest-level switch whose ``Nodes=`` names it (in topology.conf: a switch that lists
nodes); its block, when Slurm uses topology/block, is its rack-scale domain. Pure: text in, dicts out.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm import tokenize
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm_cli import hostlist

PARSER = "slurm topology"
#: Switch and block names, full match (they become variable values and group names).
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_MAX_NODES = 200000


def _lines(text: str) -> List[str]:
    out: List[str] = []
    cur = ""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        if cur.strip():
            out.append(cur.strip())
        cur = ""
    if cur.strip():
        out.append(cur.strip())
    return out


def _hosts(value: Optional[str], source: Optional[str], lineno: int) -> List[str]:
    try:
        return hostlist.expand(value or "", limit=_MAX_NODES)
    except hostlist.HostlistError as exc:  # a list Slurm would not print, or one over _MAX_NODES names
        raise ParseError(str(exc), PARSER, source, lineno) from None


def parse_topology(text: str, source: Optional[str] = None) -> List[Dict[str, Any]]:
    """Records ``{kind: switch|block, name, level, nodes: [...], switches: [...]}``. No record at all is ``[]``
    (no topology plugin); a record with a bad name raises ParseError (the file is not what it claims to be)."""
    if not isinstance(text, str):
        raise ParseError("topology is not text", PARSER, source)
    out: List[Dict[str, Any]] = []
    for lineno, line in enumerate(_lines(text), 1):
        tokens = tokenize(line)
        kind = "switch" if "SwitchName" in tokens else "block" if "BlockName" in tokens else None
        if kind is None:
            continue
        name = tokens.get("SwitchName" if kind == "switch" else "BlockName", "").strip()
        if not NAME_RE.fullmatch(name):
            raise ParseError("bad %s name %r" % (kind, name[:60]), PARSER, source, lineno)
        level = tokens.get("Level")
        out.append(
            {
                "kind": kind,
                "name": name,
                "level": int(level) if level and level.isdigit() else None,
                "nodes": _hosts(tokens.get("Nodes"), source, lineno),
                "switches": _hosts(tokens.get("Switches"), source, lineno),
            }
        )
    return out


def placement(records: List[Dict[str, Any]]) -> Dict[str, Dict[str, str]]:
    """``{node: {"leaf": switch, "block": block}}`` (a key only when known)."""
    out: Dict[str, Dict[str, str]] = {}
    best: Dict[str, int] = {}
    for rec in records:
        if rec["kind"] == "block":
            for node in rec["nodes"]:
                out.setdefault(node, {}).setdefault("block", rec["name"])
            continue
        # topology.conf has no Level: a switch listing nodes is a leaf (level 0)
        level = rec["level"] if rec["level"] is not None else (0 if rec["nodes"] else 1)
        for node in rec["nodes"]:
            if node not in best or level < best[node]:
                best[node] = level
                out.setdefault(node, {})["leaf"] = rec["name"]
    return out
