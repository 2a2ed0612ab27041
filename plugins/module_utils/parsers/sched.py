# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the cluster-level Slurm views: ``scontrol ping``, ``sdiag``, ``squeue``, ``sinfo``, ``sacct``.

Each parser takes the tool's output (text, or the decoded ``--json`` document) and returns plain data, or raises
``_common.ParseError`` for output it cannot read (empty, truncated before the first record, not JSON, JSON
without the expected list). Formats (docs/capture.md "Cluster capture directory"):

- ``scontrol ping``: ``Slurmctld(primary) at HOST is UP|DOWN`` per controller (backup, backup1...), or the
  older one-line ``Slurmctld(primary/backup) at H1/H2 are UP/DOWN``.
- ``sdiag``: the text report (Slurm 20.11-24.x); RPC tables by message type and by user.
- ``squeue --json`` (Slurm 21.08+: ``job_state`` a string in 22.05, a list from 23.02; times an integer or
  ``{"set", "infinite", "number"}`` from 23.11) or ``squeue -h -o '%i|%P|%u|%T|%r|%V|%S|%D|%b|%N'``.
- ``sinfo -N -h -O 'NodeList:|,Partition:|,StateLong:|,Gres:|,GresUsed:|,Reason:'``.
- ``sacct --json -a -X`` (``state.current`` a string or a list) or
  ``sacct -a -X -P -n -o JobID,Partition,User,State,ExitCode,NodeList,Submit,Start,End``.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils._slurm import expand_hostlist
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time

SQUEUE_FORMAT = "%i|%P|%u|%T|%r|%V|%S|%D|%b|%N"
SINFO_FORMAT = "NodeList:|,Partition:|,StateLong:|,Gres:|,GresUsed:|,Reason:"
SACCT_FIELDS = "JobID,Partition,User,State,ExitCode,NodeList,Submit,Start,End"

_PING = re.compile(r"Slurmctld\(([A-Za-z0-9]+)\) at (\S+) is (UP|DOWN)")
_PING_OLD = re.compile(r"Slurmctld\(primary/backup\) at (\S+)/(\S+) are (UP|DOWN)/(UP|DOWN)")
_GPU = re.compile(r"(?:^|[,/:])gpu(?::[A-Za-z0-9_.-]+)?[:=]([0-9]+)")
_RPC_TYPE = re.compile(r"^\s*(\S+)\s*\(\s*(\d+)\)\s+count:(\d+)\s+ave_time:(\d+)\s+total_time:(\d+)")
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
    if not isinstance(tres, str):
        return 0
    return sum(int(m.group(1)) for m in _GPU.finditer(tres.split("(")[0] if "(IDX" in tres else tres))


def _load_json(obj: Any, parser: str, source: Optional[str]) -> Dict[str, Any]:
    if isinstance(obj, (str, bytes)):
        try:
            obj = _safejson.loads(obj, what="%s JSON" % parser)
        except _safejson.JsonBudgetError as exc:  # nested too deep, too large: refused before decoding
            raise ParseError(str(exc), parser, source) from None
        except ValueError as exc:
            raise ParseError("not JSON (truncated?): %s" % exc, parser, source) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("jobs"), list):
        raise ParseError("no 'jobs' list in the document", parser, source)
    return obj


def parse_ping(text: str, source: Optional[str] = None) -> List[Dict[str, Any]]:
    """``[{"role": "primary", "host": "tb-head", "state": "UP"}, ...]`` (roles: primary, backup, backup1...)."""
    out: List[Dict[str, Any]] = []
    for m in _PING_OLD.finditer(text or ""):
        out.append({"role": "primary", "host": m.group(1), "state": m.group(3)})
        out.append({"role": "backup", "host": m.group(2), "state": m.group(4)})
    if not out:
        out = [{"role": m.group(1), "host": m.group(2), "state": m.group(3)} for m in _PING.finditer(text or "")]
    if not out:
        raise ParseError("no 'Slurmctld(...) at HOST is UP|DOWN' line", "scontrol-ping", source)
    return out


def _sdiag_line(line: str, section: Optional[str], out: Dict[str, Any]) -> None:
    key, sep, value = line.partition(":")
    if not sep:
        return
    key, value = key.strip(), value.strip().split(" ")[0]
    if not re.match(r"^-?\d+$", value):
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
    out: Dict[str, Any] = {"main": {}, "backfill": {}, "rpc_types": [], "rpc_users": [], "truncated": False}
    section: Optional[str] = None
    for line in (text or "").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("*"):
            continue
        head = stripped.split(" (")[0]
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


def _hosts(value: Any) -> List[str]:
    """A node list; sacct's ``None assigned`` (a job that never ran) is none."""
    if not isinstance(value, str) or value.strip() in ("", "None assigned", "(null)"):
        return []
    return expand_hostlist(value)


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


def parse_squeue_text(text: str, source: Optional[str] = None) -> List[Dict[str, Any]]:
    """The same as :func:`parse_squeue_json` from ``squeue -h -o SQUEUE_FORMAT`` (``|``-separated)."""
    out = []
    for n, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        f = line.split("|")
        if len(f) != 10 or not re.match(r"^[0-9_\[\]+-]+$", f[0]):
            raise ParseError("expected 10 '|'-separated fields (%s)" % SQUEUE_FORMAT, "squeue", source, n)
        state = f[3].upper()
        if state not in ("PENDING", "RUNNING"):
            continue
        count = int(f[7]) if f[7].isdigit() else 1
        per_node = gpus_of(f[8])
        out.append(
            _job(
                f[0],
                partition=f[1],
                user=f[2],
                state=state,
                reason=f[4] or "None",
                submit=_epoch(f[5]),
                start=_epoch(f[6]) if state == "RUNNING" else None,
                node_count=count,
                gpus_per_node=per_node,
                gpus=per_node * count,
                nodes=_hosts(f[9]),
            )
        )
    return out


def parse_sinfo(text: str, source: Optional[str] = None) -> List[Dict[str, Any]]:
    """``sinfo -N -h -O SINFO_FORMAT``: one entry per node ``{name, partitions, state, flags, gpus, gpus_alloc,
    reason}``; a node in several partitions appears once. ``state`` is the long state without its flag suffix
    (``*`` not responding, ``~`` powered off, ...), listed in ``flags``."""
    nodes: Dict[str, Dict[str, Any]] = {}
    for n, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        f = line.split("|")
        if len(f) < 6 or not f[0].strip():
            raise ParseError("expected 6 '|'-separated fields (%s)" % SINFO_FORMAT, "sinfo", source, n)
        name, part, state = f[0].strip(), f[1].strip().rstrip("*"), f[2].strip().lower()
        flags = [c for c in state if c in "*~#!%$@^-+"]
        reason = "|".join(f[5:]).strip()
        node = nodes.setdefault(
            name,
            {
                "name": name,
                "partitions": [],
                "state": state.rstrip("*~#!%$@^-+"),
                "flags": flags,
                "gpus": gpus_of(f[3]),
                "gpus_alloc": gpus_of(f[4]),
                "reason": None if reason in ("", "none", "(null)") else reason,
            },
        )
        if part and part not in node["partitions"]:
            node["partitions"].append(part)
    if not nodes:
        raise ParseError("no node lines", "sinfo", source)
    return list(nodes.values())


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
        out.append(
            _job(
                j["job_id"],
                partition=str(j.get("partition") or ""),
                user=str(j.get("user") or ""),
                state=_state(j.get("state")),
                exit_code=int(_num(ec.get("return_code")) or 0),
                nodes=_hosts(j.get("nodes")),
                submit=_epoch(t.get("submission")),
                start=_epoch(t.get("start")),
                end=_epoch(t.get("end")),
                restarts=int(_num(j.get("restart_cnt")) or 0),
            )
        )
    return out


def parse_sacct_text(text: str, source: Optional[str] = None) -> List[Dict[str, Any]]:
    """The same as :func:`parse_sacct_json` from ``sacct -a -X -P -n -o SACCT_FIELDS``."""
    out = []
    for n, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        f = line.split("|")
        if len(f) != 9 or not re.match(r"^[0-9_\[\]+.-]+$", f[0]):
            raise ParseError("expected 9 '|'-separated fields (%s)" % SACCT_FIELDS, "sacct", source, n)
        code = f[4].split(":")[0]
        out.append(
            _job(
                f[0],
                partition=f[1],
                user=f[2],
                state=f[3].split(" ")[0].upper(),
                exit_code=int(code) if code.isdigit() else 0,
                nodes=_hosts(f[5]),
                submit=_epoch(f[6]),
                start=_epoch(f[7]),
                end=_epoch(f[8]),
                restarts=0,
            )
        )
    return out


def accounting_error(text: str) -> Optional[str]:
    """The reason sacct could not reach slurmdbd (``Problem talking to the database: ...``), else None."""
    for line in (text or "").splitlines():
        if "Problem talking to the database" in line or "Unable to contact slurmdbd" in line:
            return line.split("error: ", 1)[-1].strip()
    return None
