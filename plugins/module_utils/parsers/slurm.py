# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``scontrol show node`` / ``scontrol show job`` (text, and ``show node --json``).

``parse_show_node(text)`` returns node dicts of the ``slurm`` domain (docs/facts.md); records start with
``NodeName=`` (multi-line with 3-space indented continuation lines, or ``-o`` one line per record) and
are separated by blank lines or lines of spaces. Values may contain spaces (``OS=Linux 5.15 #1 SMP ...``,
``Reason=memory issues? [root@2019-01-29T10:42:12]``): a token ends where the next `` Key=`` starts,
and ``Reason``/``Comment``/``Extra`` run on until a key scontrol is known to print.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, Records, error_record, parse_int
from ansible_collections.gpuops.cluster.plugins.module_utils._files import read_text
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, which
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, parse_time

PARSER = "scontrol"
DOMAIN = "slurm"
CAPTURE_FILE = "scontrol-show-node.txt"

_KEY = re.compile(r"(?:(?<=\s)|^)([A-Za-z][A-Za-z0-9_:/]*)=")
_GREEDY = frozenset(("Reason", "Comment", "Extra"))
#: Keys scontrol prints (nodes and jobs): only these end a greedy value such as Reason.
KNOWN_KEYS = frozenset(
    """
    NodeName Arch CoresPerSocket CPUAlloc CPUEfctv CPUErr CPUTot CPULoad AvailableFeatures ActiveFeatures Gres
    GresDrain GresUsed NodeAddr NodeHostName Version OS RealMemory AllocMem FreeMem Sockets Boards MemSpecLimit
    State ThreadsPerCore TmpDisk Weight Owner MCS_label Partitions BootTime SlurmdStartTime LastBusyTime
    ResumeAfterTime CfgTRES AllocTRES CapWatts CurrentWatts AveWatts LowestJoules ConsumedJoules
    ExtSensorsJoules ExtSensorsWatts ExtSensorsTemp Reason Comment Extra InstanceId InstanceType Topology Port
    NextState ReservationName Features CoreSpecCount CPUSpecList MemSpecLimit Alias
    JobId ArrayJobId ArrayTaskId JobName UserId GroupId MCS_label Priority Nice Account QOS JobState Dependency
    Requeue Restarts BatchFlag Reboot ExitCode DerivedExitCode RunTime TimeLimit TimeMin SubmitTime
    EligibleTime AccrueTime StartTime EndTime Deadline SuspendTime SecsPreSuspend LastSchedEval Scheduler
    Partition AllocNode:Sid ReqNodeList ExcNodeList NodeList BatchHost NumNodes NumCPUs NumTasks CPUs/Task
    ReqB:S:C:T TRES Socks/Node NtasksPerN:B:S:C CoreSpec MinCPUsNode MinMemoryNode MinMemoryCPU MinTmpDiskNode
    OverSubscribe Contiguous Licenses Network Command WorkDir StdErr StdIn StdOut Power TresPerNode
    TresPerJob MailUser MailType CpusPerTres MemPerTres
    """.split()
)

_REASON = re.compile(r"^(.*?)\s*\[([^@\]]*)@([^\]]*)\]\s*$")
_GRES_GPU = re.compile(r"(?:^|,)gpu(?::[^:,()]+)?:([0-9]+)")


def _none(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    v = value.strip()
    if v.lower() in ("", "(null)", "n/a", "none", "unknown", "n/s"):
        return None
    return v


def tokenize(line: str) -> Dict[str, str]:
    """``Key=Value`` pairs of one line; values may contain spaces."""
    marks = [(m.start(), m.end(), m.group(1)) for m in _KEY.finditer(line)]
    out: Dict[str, str] = {}
    i = 0
    while i < len(marks):
        start, vstart, key = marks[i]
        j = i + 1
        if key in _GREEDY:
            while j < len(marks) and marks[j][2] not in KNOWN_KEYS:
                j += 1
        end = marks[j][0] if j < len(marks) else len(line)
        if key not in out:
            out[key] = line[vstart:end].strip()
        i = j
    return out


def _records(text: str, first_key: str) -> List[List[str]]:
    records: List[List[str]] = []
    cur: Optional[List[str]] = None
    for raw in text.splitlines():
        if not raw.strip():
            cur = None
            continue
        if raw.lstrip().startswith(first_key + "="):
            cur = [raw]
            records.append(cur)
        elif cur is not None and raw[:1].isspace():
            cur.append(raw)
    return records


def split_state(state: Optional[str]) -> Dict[str, Any]:
    """``IDLE+DRAIN`` -> base IDLE, flags [DRAIN]; a trailing ``*`` means NOT_RESPONDING."""
    if not state:
        return {"base_state": None, "flags": []}
    s = state.strip().upper()
    flags: List[str] = []
    parts = [p for p in s.split("+") if p]
    if not parts:
        return {"base_state": None, "flags": []}
    base = parts[0]
    for suffix, flag in (("*", "NOT_RESPONDING"), ("~", "POWERED_DOWN"), ("#", "POWERING_UP"), ("%", "POWERING_DOWN")):
        if base.endswith(suffix):
            base = base[:-1]
            flags.append(flag)
    for p in parts[1:]:
        if p not in flags:
            flags.append(p)
    return {"base_state": base or None, "flags": flags}


def split_reason(reason: Optional[str]) -> Dict[str, Optional[str]]:
    r = _none(reason)
    if r is None:
        return {"reason": None, "reason_user": None, "reason_time": None}
    m = _REASON.match(r)
    if not m:
        return {"reason": r, "reason_user": None, "reason_time": None}
    return {"reason": m.group(1).strip() or None, "reason_user": m.group(2) or None, "reason_time": m.group(3) or None}


def gres_gpus(gres: Optional[str]) -> Optional[int]:
    """GPU count from a Gres string (``gpu:h100:8(S:0-1)``, ``gpu:8``, ``gpu:quadro:1(S:0),vmem:2G``)."""
    if not gres:
        return None
    total = 0
    found = False
    for m in _GRES_GPU.finditer(re.sub(r"\([^)]*\)", "", gres)):
        total += parse_int(m.group(1))
        found = True
    return total if found else None


def _node(raw: Dict[str, str]) -> Dict[str, Any]:
    state = _none(raw.get("State"))
    gres = _none(raw.get("Gres"))
    parts = _none(raw.get("Partitions"))
    node = {
        "name": _none(raw.get("NodeName")),
        "state": state,
        "gres": gres,
        "gres_gpus": gres_gpus(gres),
        "partitions": [p.strip() for p in parts.split(",") if p.strip()] if parts else [],
        "boot_time": _none(raw.get("BootTime")),
        "slurmd_start_time": _none(raw.get("SlurmdStartTime")),
        "raw": raw,
    }
    node.update(split_state(state))
    node.update(split_reason(raw.get("Reason")))
    return node


def parse_show_node(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """Nodes of ``scontrol show node`` output. Raises ParseError when there is no ``NodeName=`` record
    (an error message such as ``Node x not found`` or ``slurm_load_node error: ...``). A malformed node
    record is a ``parse`` entry in ``errors`` and the other nodes are kept; without an ``errors`` list it
    raises ParseError with the nodes as ``partial``."""
    if not isinstance(text, str):
        raise ParseError("scontrol output is not text", PARSER, source)
    records = Records(PARSER, source, DOMAIN, errors)
    nodes: List[Dict[str, Any]] = []
    for rec in _records(text, "NodeName"):
        with records.at(None):
            raw: Dict[str, str] = {}
            for line in rec:
                for k, v in tokenize(line.strip()).items():
                    raw.setdefault(k, v)
            nodes.append(_node(raw))
    if not nodes and records.count:
        return records.finish(nodes)
    if not nodes:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ParseError("no NodeName= record%s" % (": " + first[:200] if first else ""), PARSER, source, 1)
    return records.finish(nodes)


def _int(value: Optional[str]) -> Optional[int]:
    v = _none(value)
    if v is None:
        return None
    m = re.match(r"^([0-9]+)", v)
    return parse_int(m.group(1)) if m else None


def parse_show_job(text: str, source: Optional[str] = None) -> List[Dict[str, Any]]:
    """Jobs of ``scontrol show job`` output: job_id, name, user, state, reason, partition, node_list,
    requeue (bool), batch_flag (bool), num_nodes, raw. An empty result is a list, not an error
    (``No jobs in the system``); an error message raises ParseError."""
    if not isinstance(text, str):
        raise ParseError("scontrol output is not text", PARSER, source)
    jobs = []
    for rec in _records(text, "JobId"):
        raw: Dict[str, str] = {}
        for line in rec:
            for k, v in tokenize(line.strip()).items():
                raw.setdefault(k, v)
        requeue, batch = _int(raw.get("Requeue")), _int(raw.get("BatchFlag"))
        jobs.append(
            {
                "job_id": _int(raw.get("JobId")),
                "name": _none(raw.get("JobName")),
                "user": _none(re.sub(r"\([0-9]+\)$", "", raw.get("UserId", ""))),
                "state": _none(raw.get("JobState")),
                "reason": _none(raw.get("Reason")),
                "partition": _none(raw.get("Partition")),
                "node_list": _none(raw.get("NodeList")),
                "requeue": None if requeue is None else requeue != 0,
                "batch_flag": None if batch is None else batch != 0,
                "num_nodes": _int(raw.get("NumNodes")),
                "raw": raw,
            }
        )
    if not jobs:
        stripped = text.strip()
        if stripped and not stripped.lower().startswith("no jobs"):
            raise ParseError("no JobId= record: %s" % stripped.splitlines()[0][:200], PARSER, source, 1)
    return jobs


def _epoch_iso(value: Any) -> Optional[str]:
    if isinstance(value, dict):  # Slurm 23.02+: {"set": true, "infinite": false, "number": N}
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return iso_z(parse_time(value))


_BASE_STATES = ("IDLE", "ALLOCATED", "ALLOC", "MIXED", "DOWN", "FUTURE", "UNKNOWN", "ERROR")


def parse_json_nodes(obj: Any, source: Optional[str] = None) -> List[Dict[str, Any]]:
    """Nodes of ``scontrol show node --json`` (Slurm 22.05+: ``state`` a string plus ``state_flags``, or a
    list of words in newer releases)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("nodes"), list):
        raise ParseError("no 'nodes' list in scontrol JSON", PARSER, source)
    nodes = []
    for n in obj["nodes"]:
        if not isinstance(n, dict):
            continue
        st = n.get("state")
        words = [str(w).upper() for w in (st if isinstance(st, list) else [st] if st else [])]
        words += [str(w).upper() for w in n.get("state_flags") or [] if str(w).upper() not in words]
        base = next((w for w in words if w in _BASE_STATES), words[0] if words else None)
        flags = [w for w in words if w != base]
        gres = _none(n.get("gres")) if isinstance(n.get("gres"), str) else None
        parts = n.get("partitions")
        reason = _none(n.get("reason")) if isinstance(n.get("reason"), str) else None
        nodes.append(
            {
                "name": n.get("name"),
                "state": "+".join(([base] if base else []) + flags) or None,
                "base_state": base,
                "flags": flags,
                "reason": reason,
                "reason_user": _none(n.get("reason_set_by_user"))
                if isinstance(n.get("reason_set_by_user"), str)
                else None,
                "reason_time": _epoch_iso(n.get("reason_changed_at")),
                "gres": gres,
                "gres_gpus": gres_gpus(gres),
                "partitions": [str(p) for p in parts] if isinstance(parts, list) else [],
                "boot_time": _epoch_iso(n.get("boot_time")),
                "slurmd_start_time": _epoch_iso(n.get("slurmd_start_time")),
                "raw": n,
            }
        )
    return nodes


def collect(capture_dir: Optional[str] = None, node: Optional[str] = None, timeout: float = 10) -> Dict[str, Any]:
    """The ``slurm`` domain: ``capture_dir/scontrol-show-node.txt`` or ``scontrol show node [node]`` live.

    No scontrol on the node (not a Slurm node) gives source null and no error.
    """
    result: Dict[str, Any] = {"source": None, "nodes": [], "errors": []}
    if capture_dir:
        path = os.path.join(capture_dir, CAPTURE_FILE)
        try:
            text = read_text(path)
        except ParseError as exc:
            result["source"] = "capture:" + CAPTURE_FILE
            result["errors"].append(exc.to_error(DOMAIN))
            return result
        if text is None:
            return result
        result["source"] = "capture:" + CAPTURE_FILE
        origin = path
    else:
        exe = which("scontrol")
        if not exe:
            return result
        result["source"] = "scontrol"
        res = run_command([exe, "show", "node"] + ([node] if node else []), timeout=timeout)
        if not res.ok:
            kind = "timeout" if res.timed_out else "tool_error"
            result["errors"].append(error_record(DOMAIN, kind, res.describe(), "scontrol"))
            return result
        text, origin = res.stdout, "scontrol"
    try:
        result["nodes"] = parse_show_node(text, origin, result["errors"])
    except ParseError as exc:
        result["errors"].append(exc.to_error(DOMAIN, "tool_error" if text.strip() else "parse"))
    return result
