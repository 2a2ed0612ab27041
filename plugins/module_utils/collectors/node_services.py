# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The services of the ``node`` domain (docs/facts.md): is each one running, and on what evidence.

A service is running only when its own record says so, never because some process carries its name:

1. systemd runs the node (``/run/systemd/system``) and knows one of the service's units (``LoadState`` is not
   ``not-found``): ``systemctl show``'s ``ActiveState`` decides, ``active``/``reloading`` = running (``MainPID`` is
   the pid), anything else (``failed``, ``inactive``, ``activating`` = a restart loop) = not running, whatever
   processes exist.
2. Otherwise (no systemd, systemd could not be asked, or no unit of that name is installed) the init system's own
   record: a pid file of the service whose pid is alive and is the daemon (below).
3. Else a process whose ``/proc/<pid>/comm`` is the daemon's name and that is the daemon.

"Is the daemon": every uid of ``/proc/<pid>/status`` (real, effective, saved, filesystem) is root's, or the service
account the service runs as (``users``, looked up in ``/etc/passwd``), and its executable is one of the expected
paths (``executables``): ``/proc/<pid>/exe`` (`` (deleted)`` after a package upgrade allowed), else ``argv[0]`` of a
process that passed the owner check (a root process is trusted; its command line is only read then, so that no
user's process can hold the collector on a blocked ``cmdline`` read). ``nobody`` running a copy of ``sleep`` named
``nv-fabricmanager`` is never evidence, in the live collector (the root HealthCheckProgram) or through the shell
capture (``plugin_utils/inspect/shcapture.ReplayIO`` answers the same calls from what the node sent).

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import error_record, to_int
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.node import parse_proc_status, parse_show

DOMAIN = "node"
#: where a daemon's executable may live when a service names none (``/bin`` and ``/sbin``: nodes without merged /usr)
SYSTEM_BIN_DIRS = ("/usr/bin", "/usr/sbin", "/bin", "/sbin")


def executables_of(processes: Iterable[str]) -> List[str]:
    """The expected executable paths of daemons named ``processes``: each name in each of :data:`SYSTEM_BIN_DIRS`."""
    return [d + "/" + p for p in processes for d in SYSTEM_BIN_DIRS if p and "/" not in p]


#: Services checked when the caller does not name any: unit names, process names (/proc/<pid>/comm), pid files,
#: the daemon's executable paths and the accounts it may run as. ``nv-hostengine`` is the DCGM host engine behind
#: the ``nvidia-dcgm`` unit; ``nvidia-persistenced`` drops to its own account (``--user nvidia-persistenced``).
KNOWN_SERVICES: Dict[str, Dict[str, List[str]]] = {
    "nvidia-persistenced": {
        "units": ["nvidia-persistenced"],
        "processes": ["nvidia-persistenced"],
        "pidfiles": [
            "/run/nvidia-persistenced/nvidia-persistenced.pid",
            "/var/run/nvidia-persistenced/nvidia-persistenced.pid",
        ],
        "executables": executables_of(["nvidia-persistenced"]),
        "users": ["root", "nvidia-persistenced"],
    },
    "nvidia-fabricmanager": {
        "units": ["nvidia-fabricmanager"],
        "processes": ["nv-fabricmanager"],
        "pidfiles": [
            "/run/nvidia-fabricmanager/nv-fabricmanager.pid",
            "/var/run/nvidia-fabricmanager/nv-fabricmanager.pid",
        ],
        "executables": executables_of(["nv-fabricmanager"]),
        "users": ["root"],
    },
    "nvidia-dcgm": {
        "units": ["nvidia-dcgm", "dcgm"],
        "processes": ["nv-hostengine"],
        "pidfiles": ["/run/nvhostengine.pid", "/var/run/nvhostengine.pid"],
        "executables": executables_of(["nv-hostengine"]),
        "users": ["root"],
    },
}
ALIASES = {"nv-hostengine": "nvidia-dcgm", "dcgm": "nvidia-dcgm", "nv-fabricmanager": "nvidia-fabricmanager"}
DEFAULT_SERVICES = ("nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm")
FABRIC_MANAGER = "nvidia-fabricmanager"
#: /proc/<pid>/comm holds at most 15 characters.
COMM_LEN = 15
#: ``systemctl show`` properties read per unit (parse_show)
SHOW_PROPERTIES = "Id,LoadState,ActiveState,SubState,MainPID"
RUNNING_STATES = ("active", "reloading")
#: a pid file's pid: digits, no sign, no leading zero (the shell capture reads it by the same rule)
PID = re.compile(r"[1-9][0-9]{0,9}")
#: an account name as ``users`` may give it (it goes into the node's shell script as a quoted pattern)
USER = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")
#: how many rejected processes a record names
MAX_REJECTED = 3
_KEYS = (
    ("units", "unit"),
    ("processes", "process"),
    ("pidfiles", "pidfile"),
    ("executables", "executable"),
    ("users", "user"),
)


def service_spec(item: Any) -> Optional[Tuple[str, Dict[str, List[str]]]]:
    """(name, spec) of a service named by the caller: a name (a known service, or units/process = the name) or
    ``{name, unit(s), process(es), pidfile(s), executable(s), user(s)}``; None for anything else."""
    if isinstance(item, dict):
        name = item.get("name")
        if not isinstance(name, str) or not name:
            return None
        base = KNOWN_SERVICES.get(ALIASES.get(name, name), {})
        spec: Dict[str, List[str]] = {}
        for key, single in _KEYS:
            val = item.get(key, item.get(single))
            if isinstance(val, str):
                val = [val]
            if isinstance(val, list):
                spec[key] = [v for v in val if isinstance(v, str) and v]
            elif key == "executables" and ("processes" in item or "process" in item):
                spec[key] = executables_of(spec["processes"])  # the daemon named here, not the known one
            elif key in base:
                spec[key] = list(base[key])
            else:
                spec[key] = {"units": [name], "processes": [name], "executables": executables_of([name])}.get(
                    key, ["root"] if key == "users" else []
                )
        return ALIASES.get(name, name), spec
    if isinstance(item, str) and item:
        name = ALIASES.get(item, item)
        known = KNOWN_SERVICES.get(name)
        if known is None:
            known = {
                "units": [item],
                "processes": [item],
                "pidfiles": [],
                "executables": executables_of([item]),
                "users": ["root"],
            }
        return name, {k: list(v) for k, v in known.items()}
    return None


# ---------------------------------------------------------------------------------------------------------------
# Live reads (LiveIO's process calls; ReplayIO answers them from a node's shell capture)
# ---------------------------------------------------------------------------------------------------------------


def _read_small(path: str, limit: int = 64 * 1024) -> Optional[bytes]:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit)
    except OSError:
        return None


def process_table(root: str) -> Optional[Dict[str, List[int]]]:
    """comm -> pids (ascending) from ``<root>/proc/*/comm``; None when /proc cannot be listed."""
    proc = os.path.join(root, "proc")
    try:
        pids = sorted((int(p) for p in os.listdir(proc) if p.isdigit() and p.isascii()), key=int)
    except OSError:
        return None
    out: Dict[str, List[int]] = {}
    for pid in pids:
        data = _read_small(os.path.join(proc, str(pid), "comm"), 64)
        if data is None:
            continue
        out.setdefault(data.decode("utf-8", errors="replace").rstrip("\n"), []).append(pid)
    return out


def process_status(root: str, pid: int) -> Optional[Dict[str, Any]]:
    """``{uids, state}`` of ``/proc/<pid>/status`` (parse_proc_status), None when there is no such process."""
    data = _read_small(os.path.join(root, "proc", str(pid), "status"))
    return None if data is None else parse_proc_status(data.decode("utf-8", errors="replace"))


def process_exe(root: str, pid: int) -> Optional[str]:
    """The target of ``/proc/<pid>/exe``, None when it cannot be read (another user's process, a kernel thread)."""
    try:
        return os.readlink(os.path.join(root, "proc", str(pid), "exe"))
    except OSError:
        return None


def process_argv0(root: str, pid: int) -> Optional[str]:
    """``argv[0]`` of ``/proc/<pid>/cmdline`` (up to its first NUL or line end), None when unreadable."""
    data = _read_small(os.path.join(root, "proc", str(pid), "cmdline"), 4096)
    if data is None:
        return None
    return data.split(b"\0", 1)[0].split(b"\n", 1)[0].decode("utf-8", errors="replace")


def user_uid(root: str, name: str) -> Optional[int]:
    """The uid of account ``name`` in ``<root>/etc/passwd`` (root is 0 everywhere); None when it has none."""
    if name == "root":
        return 0
    data = _read_small(os.path.join(root, "etc", "passwd"), 1024 * 1024)
    for line in (data or b"").decode("utf-8", errors="replace").split("\n"):
        fields = line.split(":")
        if len(fields) >= 3 and fields[0] == name:
            return to_int(fields[2])
    return None


# ---------------------------------------------------------------------------------------------------------------
# The decision
# ---------------------------------------------------------------------------------------------------------------


def _is_daemon(io: Any, root: str, pid: int, spec: Dict[str, List[str]], allowed: Set[int]) -> Tuple[bool, str]:
    """Whether process ``pid`` is the service's daemon (see the module's doc), and why not."""
    st = io.process_status(root, pid)
    if st is None:
        return False, "pid %d is not running" % pid
    if st.get("state") in ("Z", "X"):
        return False, "pid %d has exited (zombie)" % pid
    uids = st.get("uids")
    if not uids or any(u not in allowed for u in uids):
        return False, "pid %d runs as uid %s, not as %s" % (
            pid,
            "/".join(str(u) for u in uids) if uids else "unknown",
            " or ".join(spec["users"]) or "root",
        )
    exe = io.process_exe(root, pid)
    path = exe[: -len(" (deleted)")] if exe and exe.endswith(" (deleted)") else exe
    if path in spec["executables"]:
        return True, ""
    argv0 = io.process_argv0(root, pid)
    if argv0 in spec["executables"]:
        return True, ""
    return False, "pid %d runs %s, not %s" % (
        pid,
        exe or argv0 or "an executable that cannot be read",
        " or ".join(spec["executables"][:2]) or "a known executable",
    )


def _allowed_uids(io: Any, root: str, spec: Dict[str, List[str]], cache: Dict[str, Optional[int]]) -> Set[int]:
    allowed = {0} if "root" in spec["users"] else set()
    for name in spec["users"]:
        if name not in cache:
            cache[name] = io.user_uid(root, name)
        uid = cache[name]
        if uid is not None:
            allowed.add(uid)
    return allowed


def _pidfile_pid(text: Optional[str]) -> Optional[int]:
    first = (text or "").split("\n", 1)[0].strip(" \t")
    return int(first) if PID.fullmatch(first) else None


def _by_processes(
    io: Any, root: str, spec: Dict[str, List[str]], rec: Dict[str, Any], table: Any, users: Dict[str, Optional[int]]
) -> None:
    """``rec`` from the init system's record (pid files), else the process table; only the daemon counts."""
    allowed = _allowed_uids(io, root, spec, users)
    rejected: List[str] = []
    for pf in spec["pidfiles"]:
        text = io.read(root, pf)
        if text is None:
            continue
        pid = _pidfile_pid(text)
        if pid is None:
            rejected.append("pid file %s holds no pid" % pf)
            continue
        ok, why = _is_daemon(io, root, pid, spec, allowed)
        if ok:
            rec.update(running=True, pid=pid, method="pidfile")
            return
        rejected.append("pid file %s: %s" % (pf, why))
    procs = table()
    if procs is not None:
        rec["method"] = "proc"
        for name in spec["processes"]:
            for pid in procs.get(name[:COMM_LEN], []):
                ok, why = _is_daemon(io, root, pid, spec, allowed)
                if ok:
                    rec.update(running=True, pid=pid)
                    return
                rejected.append("%s: %s" % (name[:COMM_LEN], why))
        rec["running"] = False
    elif spec["pidfiles"]:
        rec.update(running=False, method="pidfile")
    if rejected:
        more = len(rejected) - MAX_REJECTED
        rec["detail"] = (
            "not the daemon: " + "; ".join(rejected[:MAX_REJECTED]) + (" (+%d more)" % more if more > 0 else "")
        )


def _systemd_states(
    specs: List[Tuple[str, Dict[str, List[str]]]], root: str, timeout: float, errors: List[Dict[str, Any]], io: Any
) -> Tuple[bool, Dict[str, Dict[str, str]]]:
    """(systemd was asked and answered, ``{unit: properties}``)."""
    systemctl = io.which("systemctl")
    if not (systemctl and io.isdir(os.path.join(root, "run", "systemd", "system"))):
        return False, {}
    units = list(dict.fromkeys(u for _name, spec in specs for u in spec["units"]))
    if not units:
        return False, {}
    res = io.run([systemctl, "show", "-p", SHOW_PROPERTIES, "--", *units], timeout)
    if res.timed_out or res.error or res.rc != 0:
        kind = "timeout" if res.timed_out else "tool_error"
        errors.append(error_record(DOMAIN, kind, res.describe(), source="systemctl show"))
        return False, {}
    states = parse_show(res.stdout, units)
    if states is None:
        msg = "systemctl show answered for another number of units than the %d asked" % len(units)
        errors.append(error_record(DOMAIN, "parse", msg, source="systemctl show"))
        return False, {}
    return True, states


def check_services(
    services: Iterable[Any], root: str, timeout: float, errors: List[Dict[str, Any]], io: Any
) -> Dict[str, Dict[str, Any]]:
    """``{name: {running, unit_state, pid, method, detail}}`` (see the module's doc). ``method``: ``systemctl``,
    ``pidfile``, ``proc``, or None when nothing could be read (``running`` None); ``detail``: why a unit or a
    process did not count, else None."""
    specs = [s for s in (service_spec(i) for i in services) if s is not None]
    if not specs:
        return {}
    asked, states = _systemd_states(specs, root, timeout, errors, io)
    cache: Dict[str, Any] = {}
    users: Dict[str, Optional[int]] = {}

    def table() -> Optional[Dict[str, List[int]]]:
        if "procs" not in cache:
            cache["procs"] = io.process_table(root)
        return cache["procs"]

    out: Dict[str, Dict[str, Any]] = {}
    for name, spec in specs:
        rec: Dict[str, Any] = {"running": None, "unit_state": None, "pid": None, "method": None, "detail": None}
        known = [
            (u, states[u]) for u in spec["units"] if states.get(u, {}).get("LoadState", "not-found") != "not-found"
        ]
        if known:
            active = next(((u, s) for u, s in known if s.get("ActiveState") in RUNNING_STATES), None)
            unit, props = active or known[0]
            rec.update(method="systemctl", unit_state=props.get("ActiveState") or None, running=active is not None)
            if active:
                pid = to_int(props.get("MainPID"))
                rec["pid"] = pid if pid else None
            else:
                rec["detail"] = "systemd: unit %s is %s (%s, %s); no process counts while systemd knows the unit" % (
                    unit,
                    props.get("ActiveState") or "in no state",
                    props.get("SubState") or "-",
                    props.get("LoadState") or "-",
                )
        else:
            if asked:
                rec["unit_state"] = "not-found"
            _by_processes(io, root, spec, rec, table, users)
        out[name] = rec
    return out
