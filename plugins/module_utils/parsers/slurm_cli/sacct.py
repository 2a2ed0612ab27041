# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``sacct`` text in the forms operators capture it (cluster-formats.md section 2), read into one job list.

Accepted (``FORMS``): the default fixed-width table (a header, a dashes row; any column set and widths, ``-o
JobID%20``); ``-p``/``-P`` (or ``--delimiter=|``) with a header (any column set: the column names decide
meaning); ``-n`` with its format declared on a first line that is the command itself (``$ sacct -P -n -o
JobID,State,NodeList`` or ``# sacct ... --format=...``); and the collection's own headerless
``-P -n -o JobID,Partition,User,State,ExitCode,NodeList,Submit,Start,End``. ``--json`` is read by ``sched``.

A value that fixed width cut (its last character replaced by ``+``, ``OUT_OF_ME+``, ``35021740.ba+``,
``gpu[01-0+``) is reported as cut (``cut``: the meanings cut) and never read past what it shows: a cut state is
the one documented state its prefix names, a cut host list is no node list, a cut step id still names its job.
Steps (``123.batch``, ``123.extern``, ``123.0``) are folded into their job (``steps``: ``[{step, state}]``); the
job row decides the job's state. Each job says who caused its end (``cause``: node / user / admin / scheduler,
states.job_state): NODE_FAIL is never counted with a user's FAILED or OUT_OF_MEMORY.

``parse(text, source, errors)`` -> ``[{job_id, partition, user, state, exit_code, signal, nodes, failed_node,
submit, start, end, restarts, cause, cut, steps}]``; ``nodes`` None when the output has no NodeList column
(unknown, not "none"). One bad row costs that row (a ``parse`` entry in ``errors``). Pure; Python 3.8+.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, Records
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm_cli import hostlist, states, table

PARSER = "sacct"
DOMAIN = "scheduler"
OWN_FIELDS = "JobID,Partition,User,State,ExitCode,NodeList,Submit,Start,End"
FORMS = (
    "sacct (default fixed width, any -o columns and widths), sacct -p/-P with a header, sacct -n with its "
    "command line (-o/--format) as the first line, sacct --json, sacct -P -n -o %s" % OWN_FIELDS
)
COLUMNS = {
    "JOBID": "job_id",
    "JOBIDRAW": "job_id_raw",
    "STATE": "state",
    "EXITCODE": "exit_code",
    "NODELIST": "nodes",
    "PARTITION": "partition",
    "USER": "user",
    "SUBMIT": "submit",
    "START": "start",
    "END": "end",
    "FAILEDNODE": "failed_node",
    "JOBNAME": "name",
    "ACCOUNT": "account",
}
_DECLARED = re.compile(r"(?:^|\s)(?:-o|--format)(?:=|\s+)['\"]?([A-Za-z0-9%,_.:-]+)")
_JOBID = re.compile(r"^(\d+(?:_(?:\d+|\[[^\]]*\]?)?)?)(?:\.(.*))?$")
_DASHES = re.compile(r"^[-\s]+$")


def _declared(line: str) -> Optional[List[str]]:
    """The column names of a command line ``sacct ... -o A,B%20,C`` (width suffixes dropped)."""
    if "sacct" not in line:
        return None
    m = _DECLARED.search(line)
    if not m:
        return None
    return [table.norm(f.split("%")[0]) for f in m.group(1).split(",") if f.split("%")[0]]


def _epoch(value: Optional[str]) -> Optional[float]:
    v = (value or "").strip()
    if v in ("", "Unknown", "None", "N/A") or v.endswith("+"):
        return None
    dt = parse_time(v)
    return dt.timestamp() if dt else None


class _Jobs:
    def __init__(self, has_nodes: bool) -> None:
        self.by_id: Dict[str, Dict[str, Any]] = {}
        self.has_nodes = has_nodes

    def _new(self, job_id: str) -> Dict[str, Any]:
        job = {
            "job_id": job_id,
            "partition": "",
            "user": "",
            "state": "",
            "exit_code": 0,
            "signal": 0,
            "nodes": [] if self.has_nodes else None,
            "failed_node": None,
            "submit": None,
            "start": None,
            "end": None,
            "restarts": 0,
            "cause": None,
            "cut": [],
            "steps": [],
            "from_steps": True,
        }
        self.by_id[job_id] = job
        return job

    def add(self, row: Dict[str, str], cut_cols: Any) -> None:
        cut = set(cut_cols)
        raw = (row.get("job_id") or row.get("job_id_raw") or "").strip()
        if not raw:
            raise ParseError("no JobID", PARSER)
        if "job_id" in cut:
            raw = raw[:-1]
            if "." not in raw and "_" not in raw:
                raise ParseError("job id cut before its end (%s+): widen JobID (-o JobID%%20) or use -P" % raw, PARSER)
        m = _JOBID.match(raw)
        if not m:
            raise ParseError("not a job id: %r" % raw[:40], PARSER)
        job_id, step = m.group(1), m.group(2)
        if "job_id" in cut and step is None:
            job_id += "+"  # an array id cut inside its index (53601970_[0+): the job, never a made-up id
        st = states.job_state(row.get("state"), "state" in cut)
        nodes: Optional[List[str]] = None
        if "nodes" in row:
            text = row.get("nodes") or ""
            nodes = [] if "nodes" in cut else hostlist.expand(text)
        job = self.by_id.get(job_id) or self._new(job_id)
        if step is not None:
            job["steps"].append({"step": step + ("+" if "job_id" in cut else ""), "state": st["state"]})
            if job["from_steps"] and (not job["state"] or job["state"] == "COMPLETED"):
                job.update(state=st["state"], cause=st["cause"])
            if nodes and not job["nodes"]:
                job["nodes"] = nodes
            return
        code = states.exit_code(row.get("exit_code"))
        job.update(
            partition=row.get("partition") or "",
            user=row.get("user") or "",
            state=st["state"],
            cause=st["cause"],
            from_steps=False,
            submit=_epoch(row.get("submit")),
            start=_epoch(row.get("start")),
            end=_epoch(row.get("end")),
            failed_node=(row.get("failed_node") or "").strip() or None,
            cut=sorted(cut),
        )
        if st["by"] is not None:
            job["cancelled_by"] = st["by"]
        if code:
            job["exit_code"], job["signal"] = code
        if nodes is not None:
            job["nodes"] = nodes
        if "nodes" in cut:
            job["nodes_cut"] = True


def column(name: str) -> Optional[str]:
    """The meaning of a header name; a name the column width cut (``Sta+``) when its prefix names one column."""
    if name in COLUMNS:
        return COLUMNS[name]
    if name.endswith("+"):
        keys = [k for k in COLUMNS if k.startswith(name[:-1])]
        return COLUMNS[keys[0]] if len(keys) == 1 else None
    return None


def _meaning(row: Dict[str, str]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for col, v in row.items():
        key = column(col)
        if key and key not in out:
            out[key] = v
    return out


def refused(what: str, source: Optional[str], line: Optional[int] = None) -> ParseError:
    return ParseError("%s; readable forms: %s" % (what, FORMS), PARSER, source, line)


def _reader(lines: List[Any], source: Optional[str]) -> Any:
    """(reader, body lines, column names) for the table these lines hold."""
    first = lines[0][1]
    declared = _declared(first)
    if not declared and table.is_command(first, "sacct") and len(lines) > 1:
        return _reader(lines[1:], source)  # the command pasted above its output, declaring no format
    if declared:
        rest = lines[1:]
        if not rest:
            return None, [], declared
        if "JOBID" in table.norm(rest[0][1]).replace("|", " ").split():
            lines = rest  # a command line above a header: the header decides
        else:
            head = "|".join(declared)
            if "|" in rest[0][1]:
                return table.Delimited(head, "|"), rest, declared
            return _Split(declared), rest, declared
    first = lines[0][1]
    words = table.norm(first).replace("|", " ").split()
    if len(lines) > 1 and _DASHES.match(lines[1][1]) and "|" not in first:
        try:  # a header over a dashes row: the default table, whatever its columns (a cut name read by its prefix)
            reader = table.Fixed(first, lines[1][1])
        except ValueError as exc:
            raise ParseError(str(exc), PARSER, source, lines[1][0]) from None
        return reader, lines[2:], reader.cols
    if "JOBID" in words or "JOBIDRAW" in words:
        if "|" in first:
            reader = table.Delimited(first, "|")
            return reader, lines[1:], reader.cols
        aligned = table.Aligned(first)
        return aligned, lines[1:], aligned.cols
    f = first.split("|")
    if len(f) == 9 and states.job_state(f[3])["state"] in states.JOB_STATES:  # the collection's own format
        cols = [table.norm(c) for c in OWN_FIELDS.split(",")]
        return table.Delimited("|".join(cols), "|"), lines, cols
    raise refused(
        "a headerless sacct format that cannot be decoded (no header row, no declared -o/--format line)",
        source,
        lines[0][0],
    )


class _Split:
    """``-n`` without a delimiter and a declared format: whitespace-separated values, one per declared column."""

    def __init__(self, cols: List[str]) -> None:
        self.cols = cols

    def row(self, line: str) -> Any:
        vals = line.split()
        if len(vals) != len(self.cols):
            raise ValueError("%d values for the %d declared columns" % (len(vals), len(self.cols)))
        return dict(zip(self.cols, vals)), set()


def parse(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """The jobs of any accepted sacct text (see the module doc). Raises ParseError when nothing can be read."""
    lines = table.text_lines(text, PARSER, source)
    if not lines:
        return []  # no job in the window: an answer, not an error
    table.check_first_line(lines, PARSER, source)
    reader, body, cols = _reader(lines, source)
    jobs = _Jobs(any(column(c) == "nodes" for c in cols))
    records = Records(PARSER, source, DOMAIN, errors)
    table.read_rows(
        records, body, reader, lambda row, cut: jobs.add(_meaning(row), {column(c) for c in cut if column(c)})
    )
    out = list(jobs.by_id.values())
    for job in out:
        if not job.pop("from_steps"):
            continue
        job["state_from_steps"] = True  # no allocation row: the first failing step's state stands for the job
    return records.finish(out)
