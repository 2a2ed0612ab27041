# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``squeue`` text in the forms operators capture it (cluster-formats.md section 4).

Accepted (``FORMS``): the default (``JOBID PARTITION NAME USER ST TIME NODES NODELIST(REASON)``), ``-l`` (after its
date line; ``STATE``, ``TIME_LIMI``), ``-s``-like and any ``-o '%...'``/``-O`` output with its header (whitespace
aligned or ``|``-delimited: the column names decide meaning), and the collection's own headerless
``-h -o '%i|%P|%u|%T|%r|%V|%S|%D|%b|%N'``. ``NODELIST(REASON)`` holds a node list for a running job and a
parenthesised reason (with spaces and commas) for a pending one. ``--json`` is read by ``sched``.

``parse(text, source, errors)`` -> pending and running jobs ``[{job_id, partition, user, state, reason, submit,
start, node_count, gpus_per_node, gpus, nodes}]`` (the shape of ``sched.parse_squeue_json``). Pure; Python 3.8+.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Set

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, Records
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm_cli import hostlist, states, table
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm_cli.sinfo import gpus_of

PARSER = "squeue"
DOMAIN = "scheduler"
OWN_FORMAT = "%i|%P|%u|%T|%r|%V|%S|%D|%b|%N"
FORMS = "squeue, squeue -l, squeue -o/-O with its header, squeue --json, squeue -h -o '%s'" % OWN_FORMAT
COLUMNS = {
    "JOBID": "job_id",
    "PARTITION": "partition",
    "USER": "user",
    "ST": "state",
    "STATE": "state",
    "REASON": "reason",
    "NODELIST(REASON)": "nodelist_reason",
    "NODELIST": "nodes",
    "NODES": "node_count",
    "SUBMIT_TIME": "submit",
    "START_TIME": "start",
    "TRES_PER_NODE": "tres_per_node",
}
_DATE = re.compile(r"^[A-Za-z]{3} [A-Za-z]{3} +\d{1,2} \d\d:\d\d:\d\d \d{4}$")


def _epoch(value: Optional[str]) -> Optional[float]:
    v = (value or "").strip()
    if v in ("", "Unknown", "None", "N/A"):
        return None
    dt = parse_time(v)
    return dt.timestamp() if dt else None


def _job(row: Dict[str, str]) -> Optional[Dict[str, Any]]:
    job_id = (row.get("job_id") or "").strip()
    if not re.match(r"^[0-9][0-9_\[\]%,+-]*$", job_id):
        raise ParseError("not a job id: %r" % job_id[:40], PARSER)
    state = states.job_state(row.get("state"))["state"]
    if state not in ("PENDING", "RUNNING"):
        return None
    reason = row.get("reason") or ""
    nodes_text = row.get("nodes") or ""
    both = (row.get("nodelist_reason") or "").strip()
    if both.startswith("(") and both.endswith(")"):
        reason = reason or both[1:-1]
    elif both:
        nodes_text = nodes_text or both
    count = row.get("node_count") or ""
    n = int(count) if re.match(r"^[0-9]{1,9}$", count) else 1
    per_node = gpus_of(row.get("tres_per_node"))
    return {
        "job_id": job_id,
        "partition": (row.get("partition") or "").rstrip("*"),
        "user": row.get("user") or "",
        "state": state,
        "reason": reason or "None",
        "submit": _epoch(row.get("submit")),
        "start": _epoch(row.get("start")) if state == "RUNNING" else None,
        "node_count": n,
        "gpus_per_node": per_node,
        "gpus": per_node * n,
        "nodes": [] if nodes_text.startswith("(") else hostlist.expand(nodes_text),
    }


def _meaning(row: Dict[str, str]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for col, v in row.items():
        key = COLUMNS.get(col)
        if key and key not in out:
            out[key] = v
    return out


def parse(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """Pending and running jobs of any accepted squeue text; ParseError when the form cannot be read."""
    lines = table.text_lines(text, PARSER, source)
    if lines and table.is_command(lines[0][1], "squeue"):
        lines = lines[1:]  # the command pasted above its output
    if lines and _DATE.match(lines[0][1].strip()):
        lines = lines[1:]
    if not lines:
        return []
    table.check_first_line(lines, PARSER, source)
    first = lines[0][1]
    words = table.norm(first).replace("|", " ").split()
    reader: Any
    if "JOBID" in words:
        if "|" in first:
            reader = table.Delimited(first, "|", "REASON")
        else:
            reader = table.Aligned(first, ("NODELIST(REASON)", "REASON"))
        body = lines[1:]
    elif len(first.split("|")) == 10 and states.job_state(first.split("|")[3])["state"] in states.JOB_STATES:
        reader = table.Delimited(
            "JOBID|PARTITION|USER|STATE|REASON|SUBMIT_TIME|START_TIME|NODES|TRES_PER_NODE|NODELIST", "|"
        )
        body = lines
    else:
        raise ParseError(
            "a headerless squeue format that cannot be decoded; readable forms: %s" % FORMS, PARSER, source, lines[0][0]
        )
    out: List[Dict[str, Any]] = []
    records = Records(PARSER, source, DOMAIN, errors)

    def keep(row: Dict[str, str], _cut: Set[str]) -> None:
        job = _job(_meaning(row))
        if job is not None:
            out.append(job)

    table.read_rows(records, body, reader, keep)
    return records.finish(out)
