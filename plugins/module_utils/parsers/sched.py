# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the cluster-level Slurm views: ``scontrol ping``, ``sdiag``, ``squeue``, ``sinfo``, ``sacct``.

Each parser takes the tool's output (text, or the decoded ``--json`` document) and returns plain data, or raises
``_common.ParseError`` for output it cannot read (empty, truncated before the first record, not JSON, JSON
without the expected list). The text parsers take an ``errors`` list: a malformed row costs that row (a ``parse``
entry there), never the file. Forms (docs/capture.md "Cluster capture directory", cluster-formats.md 1-4):

- ``scontrol ping``: ``Slurmctld(primary) at HOST is UP|DOWN`` per controller (18.08+: backup, backup1...), the
  17.11 one-line ``Slurmctld(primary/backup) at H1/H2 are UP/DOWN``, the root-only ``RESTORE SLURMCTLD`` banner,
  and ``--json`` (``pings[]``).
- ``sdiag``: the text report of Slurm 17.02-26.05 (with or without the ``(epoch)`` after the dates, the
  ``RPC queue enabled`` columns, the backfill WARNING title, 80-column cuts), and ``--json`` (23.02 plain
  numbers, 24.05+ ``{set, infinite, number}``).
- ``squeue``: ``--json`` (``job_state`` a string or a list) or any text form of ``slurm_cli.squeue``.
- ``sinfo``: every form of ``slurm_cli.sinfo`` (default, -N, -N -l, -R, -l, -h, -o/-O with a header, --json,
  the collection's ``-N -h -O`` format).
- ``sacct``: ``--json`` (``state.current`` a string or a list; steps folded) or every text form of
  ``slurm_cli.sacct`` (default fixed width, -p/-P with a header, -n with a declared format, the collection's).

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._common import MAX_LINE_CHARS, ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm_cli import (
    hostlist,
    sacct,
    sinfo,
    squeue,
    states,
)

SQUEUE_FORMAT = "%i|%P|%u|%T|%r|%V|%S|%D|%b|%N"
SINFO_FORMAT = "NodeList:|,Partition:|,StateLong:|,Gres:|,GresUsed:|,Reason:"
SACCT_FIELDS = "JobID,Partition,User,State,ExitCode,NodeList,Submit,Start,End"

_PING = re.compile(r"Slurmctld\(([A-Za-z0-9]+)\) at (\S+) is (UP|DOWN)")
_PING_OLD = re.compile(r"Slurmctld\(primary/backup\) at (\S+)/(\S+) are (UP|DOWN)/(UP|DOWN)")
_RPC_TYPE = re.compile(
    r"^\s*(\S+)\s*\(\s*([0-9]{1,18})\)\s+count:([0-9]{1,18})\s+ave_time:([0-9]{1,18})\s+total_time:([0-9]{1,18})"
)
_SDIAG_KEYS = {
    "Server thread count": "server_thread_count",
    "Agent queue size": "agent_queue_size",
    "Agent count": "agent_count",
    "Agent thread count": "agent_thread_count",
    "DBD Agent queue size": "dbd_agent_queue_size",
    "Jobs submitted": "jobs_submitted",
    "Jobs started": "jobs_started",
    "Jobs completed": "jobs_completed",
    "Jobs canceled": "jobs_canceled",
    "Jobs failed": "jobs_failed",
    "Jobs pending": "jobs_pending",
    "Jobs running": "jobs_running",
}
_SDIAG_SECTION = {
    "Main schedule statistics": "main",
    "Backfilling stats": "backfill",
}
_SDIAG_SUB = {
    "Last cycle": "last_cycle",
    "Max cycle": "max_cycle",
    "Total cycles": "total_cycles",
    "Mean cycle": "mean_cycle",
    "Mean depth cycle": "mean_depth_cycle",
    "Last queue length": "last_queue_length",
    "Total backfilled jobs (since last slurm start)": "backfilled_jobs",
    "Total backfilled jobs (since last stats cycle start)": "backfilled_jobs_since_cycle",
    "Last depth cycle": "last_depth_cycle",
    "Depth Mean": "mean_depth",
}


def _num(value: Any) -> Optional[float]:
    """A JSON number of any Slurm data_parser version: ``5``, or ``{"set": true, "number": 5}``; None if unset."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _epoch(value: Any) -> Optional[float]:
    """An epoch (0 = unset) from JSON, or from Slurm's text ``2026-12-03T08:44:01`` (taken as UTC)."""
    if isinstance(value, str):
        if value in ("", "Unknown", "None", "N/A"):
            return None
        dt = parse_time(value)
        return dt.timestamp() if dt else None
    n = _num(value)
    return n if n else None


def _state(value: Any) -> str:
    """A job state: ``"FAILED"``, ``["FAILED"]`` (23.02+) or ``{"current": ...}`` (sacct)."""
    if isinstance(value, dict):
        value = value.get("current")
    if isinstance(value, list):
        value = value[0] if value else ""
    return str(value or "").upper()


def gpus_of(tres: Any) -> int:
    """GPUs in a TRES/GRES string (``gres:gpu:4``, ``gres/gpu=4``, ``gpu:h100:8(IDX:0-7)``); 0 when none."""
    return sinfo.gpus_of(tres)


def _load_json(obj: Any, parser: str, source: Optional[str], key: str = "jobs") -> Dict[str, Any]:
    if isinstance(obj, (str, bytes)):
        try:
            obj = _safejson.loads(obj, what="%s JSON" % parser)
        except _safejson.JsonBudgetError as exc:  # nested too deep, too large: refused before decoding
            raise ParseError(str(exc), parser, source) from None
        except ValueError as exc:
            raise ParseError("not JSON (truncated?): %s" % exc, parser, source) from None
    if not isinstance(obj, dict) or not isinstance(obj.get(key), (list, dict)):
        raise ParseError("no '%s' in the document" % key, parser, source)
    return obj


def parse_ping(text: str, source: Optional[str] = None) -> List[Dict[str, Any]]:
    """``[{"role": "primary", "host": "tb-head", "state": "UP"}, ...]`` (roles: primary, backup, backup1...)."""
    if isinstance(text, str) and text.lstrip().startswith("{"):
        return parse_ping_json(text, source)
    out: List[Dict[str, Any]] = []
    for m in _PING_OLD.finditer(text or ""):
        out.append({"role": "primary", "host": m.group(1), "state": m.group(3)})
        out.append({"role": "backup", "host": m.group(2), "state": m.group(4)})
    if not out:
        out = [{"role": m.group(1), "host": m.group(2), "state": m.group(3)} for m in _PING.finditer(text or "")]
    if not out:
        raise ParseError("no 'Slurmctld(...) at HOST is UP|DOWN' line", "scontrol-ping", source)
    return out


def parse_ping_json(obj: Any, source: Optional[str] = None) -> List[Dict[str, Any]]:
    """``scontrol ping --json``: ``pings[]`` with ``hostname``, ``pinged`` ("UP"/"DOWN", deprecated 24.11) or
    ``responding`` (bool), ``mode`` (primary/backup) or ``primary`` (bool) [SL-src, SL-log]."""
    doc = _load_json(obj, "scontrol-ping", source, "pings")
    out = []
    for i, p in enumerate(doc["pings"] if isinstance(doc["pings"], list) else []):
        if not isinstance(p, dict):
            continue
        up = (
            p.get("responding") if isinstance(p.get("responding"), bool) else str(p.get("pinged") or "").upper() == "UP"
        )
        role = str(p.get("mode") or "").lower() or ("primary" if p.get("primary") or i == 0 else "backup")
        out.append({"role": role, "host": p.get("hostname"), "state": "UP" if up else "DOWN"})
    if not out:
        raise ParseError("no controller in 'pings'", "scontrol-ping", source)
    return out


def _sdiag_line(line: str, section: Optional[str], out: Dict[str, Any]) -> None:
    key, sep, value = line.partition(":")
    if not sep:
        return
    key, value = key.strip(), value.strip().split(" ", 1)[0]
    if not re.match(r"^-?[0-9]{1,18}$", value):  # ASCII digits a counter can hold (no 5000-digit int())
        return
    if section in ("main", "backfill") and key in _SDIAG_SUB:
        out[section][_SDIAG_SUB[key]] = int(value)
    elif section is None and key in _SDIAG_KEYS:
        out[_SDIAG_KEYS[key]] = int(value)


def _rpc_line(line: str, table: List[Dict[str, Any]], out: Dict[str, Any]) -> None:
    m = _RPC_TYPE.match(line)
    if m:
        table.append(
            {
                "name": m.group(1),
                "id": int(m.group(2)),
                "count": int(m.group(3)),
                "ave_time": int(m.group(4)),
                "total_time": int(m.group(5)),
            }
        )
    elif "count:" in line:
        out["truncated"] = True  # a cut RPC line: the table is partial


def parse_sdiag(text: str, source: Optional[str] = None) -> Dict[str, Any]:
    """Counters, main/backfill scheduler statistics (microseconds) and the RPC tables of ``sdiag``.

    ``rpc_types``/``rpc_users``: ``[{"name", "id", "count", "ave_time", "total_time"}]`` (times in microseconds).
    Raises ParseError without ``Server thread count`` (not sdiag output, or cut before it).
    """
    if isinstance(text, str) and text.lstrip().startswith("{"):
        return parse_sdiag_json(text, source)
    out: Dict[str, Any] = {"main": {}, "backfill": {}, "rpc_types": [], "rpc_users": [], "truncated": False}
    section: Optional[str] = None
    for line in (text or "").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("*"):
            continue
        if len(stripped) > MAX_LINE_CHARS:
            out["truncated"] = True  # no sdiag line is this long: skipped, never split into millions of words
            continue
        head = stripped.split(" (", 1)[0]
        if head in _SDIAG_SECTION:
            section = _SDIAG_SECTION[head]
            continue
        if stripped.startswith("Remote Procedure Call statistics by message type"):
            section = "rpc_types"
            continue
        if stripped.startswith("Remote Procedure Call statistics by user"):
            section = "rpc_users"
            continue
        if stripped.startswith("Pending RPC statistics"):
            section = "pending"
            continue
        if not line.startswith(("\t", " ")):
            section = None  # a top-level line ends the indented section before it
            _sdiag_line(stripped, None, out)
        elif section in ("rpc_types", "rpc_users"):
            _rpc_line(line, out[section], out)
        elif section in ("main", "backfill"):
            _sdiag_line(stripped, section, out)
    if "server_thread_count" not in out:
        raise ParseError("no 'Server thread count' (not sdiag output, or cut)", "sdiag", source)
    if "Remote Procedure Call statistics by user" not in (text or ""):
        out["truncated"] = True
    return out


_SDIAG_JSON = {
    "server_thread_count": "server_thread_count",
    "agent_queue_size": "agent_queue_size",
    "agent_count": "agent_count",
    "agent_thread_count": "agent_thread_count",
    "dbd_agent_queue_size": "dbd_agent_queue_size",
    "jobs_submitted": "jobs_submitted",
    "jobs_started": "jobs_started",
    "jobs_completed": "jobs_completed",
    "jobs_canceled": "jobs_canceled",
    "jobs_failed": "jobs_failed",
    "jobs_pending": "jobs_pending",
    "jobs_running": "jobs_running",
}


def parse_sdiag_json(obj: Any, source: Optional[str] = None) -> Dict[str, Any]:
    """``sdiag --json`` (23.02+): ``statistics`` counters and RPC tables; numbers plain (23.02) or
    ``{set, infinite, number}`` (24.05+) [RV sdiag.json, sdiag_2405.json]. The same shape as parse_sdiag."""
    doc = _load_json(obj, "sdiag-json", source, "statistics")
    st = doc["statistics"] if isinstance(doc["statistics"], dict) else {}
    out: Dict[str, Any] = {"main": {}, "backfill": {}, "rpc_types": [], "rpc_users": [], "truncated": False}
    for key, name in _SDIAG_JSON.items():
        n = _num(st.get(key))
        if n is not None:
            out[name] = int(n)
    if "server_thread_count" not in out:
        raise ParseError("no 'server_thread_count' in 'statistics'", "sdiag-json", source)
    for key, name in (("schedule_cycle_last", "last_cycle"), ("schedule_cycle_max", "max_cycle")):
        if _num(st.get(key)) is not None:
            out["main"][name] = int(_num(st.get(key)) or 0)
    for table_key, out_key, name_key in (
        ("rpcs_by_message_type", "rpc_types", "message_type"),
        ("rpcs_by_user", "rpc_users", "user"),
    ):
        rows = st.get(table_key)
        for r in rows if isinstance(rows, list) else []:
            if isinstance(r, dict):
                out[out_key].append(
                    {
                        "name": str(r.get(name_key) or r.get("type_id") or r.get("user_id") or "?"),
                        "id": int(_num(r.get("type_id") if "type_id" in r else r.get("user_id")) or 0),
                        "count": int(_num(r.get("count")) or 0),
                        "ave_time": int(_num(r.get("average_time")) or 0),
                        "total_time": int(_num(r.get("total_time")) or 0),
                    }
                )
    return out


def _hosts(value: Any) -> List[str]:
    """A node list; sacct's ``None assigned`` (a job that never ran) is none."""
    if not isinstance(value, str):
        return []
    try:
        return hostlist.expand(value)
    except hostlist.HostlistError:
        return []  # a node list Slurm never prints: no nodes rather than made-up ones


def _job(job_id: Any, **fields: Any) -> Dict[str, Any]:
    out = {"job_id": str(job_id)}
    out.update(fields)
    return out


def parse_squeue_json(obj: Any, source: Optional[str] = None) -> List[Dict[str, Any]]:
    """Pending and running jobs of ``squeue --json``: ``[{job_id, partition, user, state, reason, submit, start,
    node_count, gpus_per_node, gpus, nodes}]`` (times: epoch seconds or None)."""
    doc = _load_json(obj, "squeue-json", source)
    out = []
    for j in doc["jobs"]:
        if not isinstance(j, dict) or "job_id" not in j:
            raise ParseError("a job without job_id", "squeue-json", source)
        state = _state(j.get("job_state"))
        if state not in ("PENDING", "RUNNING"):
            continue
        count = int(_num(j.get("node_count")) or 1)
        per_node = gpus_of(j.get("tres_per_node"))
        per_job = gpus_of(j.get("tres_per_job"))
        if not per_node and per_job:
            per_node = -(-per_job // count)
        out.append(
            _job(
                j["job_id"],
                partition=str(j.get("partition") or ""),
                user=str(j.get("user_name") or j.get("user_id") or ""),
                state=state,
                reason=str(j.get("state_reason") or "None"),
                submit=_epoch(j.get("submit_time")),
                start=_epoch(j.get("start_time")) if state == "RUNNING" else None,
                node_count=count,
                gpus_per_node=per_node,
                gpus=per_job or per_node * count,
                nodes=_hosts(j.get("nodes")),
            )
        )
    return out


def parse_squeue_text(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """The same as :func:`parse_squeue_json` from any text form of ``slurm_cli.squeue`` (its own format, the
    default, ``-l``, ``-o``/``-O`` with a header)."""
    return squeue.parse(text, source, errors)


def parse_sinfo(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """One entry per node ``{name, partitions, state, flags, state_flags, gpus, gpus_alloc, reason, ...}`` from any
    form of ``slurm_cli.sinfo``; a node in several partitions appears once. ``state`` is the long state without
    its flag suffix (``*`` not responding, ``~`` powered off, ...), listed in ``flags``."""
    return sinfo.parse(text, source, errors)


def parse_sacct_json(obj: Any, source: Optional[str] = None) -> List[Dict[str, Any]]:
    """Finished and running jobs of ``sacct --json -X``: ``[{job_id, partition, user, state, exit_code, nodes,
    submit, start, end, restarts}]``."""
    doc = _load_json(obj, "sacct-json", source)
    out = []
    for j in doc["jobs"]:
        if not isinstance(j, dict) or "job_id" not in j:
            raise ParseError("a job without job_id", "sacct-json", source)
        t = j.get("time") if isinstance(j.get("time"), dict) else {}
        ec = j.get("exit_code") if isinstance(j.get("exit_code"), dict) else {}
        state = _state(j.get("state"))
        steps = []
        for st in j.get("steps") or []:
            if isinstance(st, dict):
                sid = st.get("step") if isinstance(st.get("step"), dict) else {}
                steps.append({"step": str(sid.get("name") or sid.get("id") or "?"), "state": _state(st.get("state"))})
        out.append(
            _job(
                j["job_id"],
                partition=str(j.get("partition") or ""),
                user=str(j.get("user") or ""),
                state=state,
                exit_code=int(_num(ec.get("return_code")) or 0),
                nodes=_hosts(j.get("nodes")),
                failed_node=str(j.get("failed_node") or "") or None,
                submit=_epoch(t.get("submission")),
                start=_epoch(t.get("start")),
                end=_epoch(t.get("end")),
                restarts=int(_num(j.get("restart_cnt")) or 0),
                cause=states.job_state(state)["cause"],
                cut=[],
                steps=steps,
            )
        )
    return out


def parse_sacct_text(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """The same as :func:`parse_sacct_json` from any text form of ``slurm_cli.sacct`` (steps folded into their
    job, cut values marked, ``cause`` node / user / admin / scheduler)."""
    return sacct.parse(text, source, errors)


def accounting_error(text: str) -> Optional[str]:
    """The reason sacct could not reach slurmdbd (``Problem talking to the database: ...``), else None."""
    for line in (text or "").splitlines():
        if "Problem talking to the database" in line or "Unable to contact slurmdbd" in line:
            return line.split("error: ", 1)[-1].strip()
    return None
